//! gRPC server reflection: the descriptors of a service asked of the server itself, once,
//! before a run whose `--data` JSON has no `--proto-set` to be encoded through. One
//! bidirectional stream of `grpc.reflection.v1.ServerReflection/ServerReflectionInfo`
//! (`v1alpha` when the server answers UNIMPLEMENTED for v1): a request for the file that
//! defines the service, then one for each file it imports that has not come yet, until every
//! dependency is known; the files make a [`DescriptorPool`]. The reflection messages are the
//! few fields of `reflection.proto` that this uses, written out with prost's derive.

use super::{code_name, frame, Status};
use crate::engine::connect::Connector;
use crate::engine::http2::crate_link::{h2_error, CrateLink};
use crate::engine::http2::{not_h2_error, HeaderFields};
use crate::engine::request::RequestTemplate;
use crate::engine::EngineError;
use crate::model::Timestamps;
use crate::plan::RunPlan;
use bytes::Bytes;
use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::DescriptorPool;
use std::collections::BTreeMap;
use std::time::Instant;

/// The reflection services, newest first.
pub const SERVICES: [&str; 2] = [
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// UNIMPLEMENTED: the server has no such method.
const UNIMPLEMENTED: u32 = 12;
/// NOT_FOUND, in a reflection error response: no such symbol or file.
const NOT_FOUND: i32 = 5;

/// `ServerReflectionRequest`: one of its questions is set.
#[derive(Clone, PartialEq, prost::Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(string, optional, tag = "3")]
    file_by_filename: Option<String>,
    #[prost(string, optional, tag = "4")]
    file_containing_symbol: Option<String>,
    #[prost(string, optional, tag = "7")]
    list_services: Option<String>,
}

/// `ServerReflectionResponse`: the answer to one request.
#[derive(Clone, PartialEq, prost::Message)]
struct ReflectionResponse {
    #[prost(message, optional, tag = "4")]
    file_descriptor_response: Option<FileDescriptorResponse>,
    #[prost(message, optional, tag = "6")]
    list_services_response: Option<ListServiceResponse>,
    #[prost(message, optional, tag = "7")]
    error_response: Option<ErrorResponse>,
}

/// Serialized `FileDescriptorProto`s: the file asked for, and possibly some it imports.
#[derive(Clone, PartialEq, prost::Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// Why the server's reflection gave no descriptors.
#[derive(Debug)]
pub enum ReflectError {
    /// The connection failed (its cause names the fix when it has one).
    Connect(EngineError),
    /// The server offers neither reflection service (UNIMPLEMENTED for both).
    Unsupported,
    /// The server's reflection does not know the service; the services it does know.
    UnknownService {
        /// The server's message.
        detail: String,
        /// The services its reflection lists.
        known: Vec<String>,
    },
    /// Anything else: an error status, an answer that cannot be used, no answer in time.
    Failed(String),
}

/// The descriptors of `service` (and of every file they need), asked of `plan`'s server
/// within `plan.timeout`. `plan` is a gRPC plan: its target, TLS and headers are used.
pub fn descriptors(plan: &RunPlan, service: &str) -> Result<DescriptorPool, ReflectError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReflectError::Failed(format!("cannot start a runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        match tokio::time::timeout(plan.timeout, ask(plan, service)).await {
            Ok(result) => result,
            Err(_) => Err(ReflectError::Failed(format!(
                "no answer within --timeout {:?}",
                plan.timeout
            ))),
        }
    })
}

/// How one reflection service answered.
enum Answer {
    Files(Vec<FileDescriptorProto>),
    /// The call ended with this status (UNIMPLEMENTED: the service is not there).
    Status(u32, String),
}

async fn ask(plan: &RunPlan, service: &str) -> Result<DescriptorPool, ReflectError> {
    let connector = Connector::new(plan, &[b"h2"]).map_err(|e| ReflectError::Failed(e.0))?;
    let link = CrateLink::default();
    let now = Instant::now();
    let mut stamps = Timestamps::new(now, now);
    link.sender(&connector, &mut stamps)
        .await
        .map_err(ReflectError::Connect)?;
    for reflection in SERVICES {
        let mut p = plan.clone();
        p.body.clear();
        p.target.path_and_query = format!("/{reflection}/ServerReflectionInfo");
        // The calls' deadline is not the question's (`--timeout` bounds that).
        p.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("grpc-timeout"));
        let head = RequestTemplate::http2(&p)
            .map_err(|e| ReflectError::Failed(e.0))?
            .head();
        let sender = link
            .sender(&connector, &mut stamps)
            .await
            .map_err(ReflectError::Connect)?;
        let answer = match files(sender, head, service, plan.max_body_bytes).await {
            // An HTTP/1.x server on an h2c URL: the stream fails on its answer.
            Err(ReflectError::Connect(_)) if link.not_h2() => {
                Err(ReflectError::Connect(not_h2_error()))
            }
            other => other,
        };
        match answer? {
            Answer::Files(files) => {
                let mut pool = DescriptorPool::new();
                pool.add_file_descriptor_protos(files).map_err(|e| {
                    ReflectError::Failed(format!("the server's descriptors do not resolve: {e}"))
                })?;
                return Ok(pool);
            }
            Answer::Status(UNIMPLEMENTED, _) => continue,
            Answer::Status(code, message) => {
                return Err(ReflectError::Failed(format!(
                    "{reflection} answered {}: {message}",
                    code_name(code)
                )))
            }
        }
    }
    Err(ReflectError::Unsupported)
}

/// One reflection call: the file of `service`, then those of its missing imports, asked in
/// turn on the same stream.
async fn files(
    sender: h2::client::SendRequest<Bytes>,
    head: http::Request<()>,
    service: &str,
    max_bytes: u64,
) -> Result<Answer, ReflectError> {
    let h2 = |e: h2::Error| ReflectError::Connect(h2_error(&e, "gRPC reflection"));
    let mut sender = sender.ready().await.map_err(h2)?;
    let (response, send) = sender.send_request(head, false).map_err(h2)?;
    let mut call = Call {
        send,
        body: None,
        buffer: Vec::new(),
        max_bytes,
    };
    call.send(ReflectionRequest {
        file_containing_symbol: Some(service.into()),
        ..Default::default()
    })?;
    let response = response.await.map_err(h2)?;
    let http = response.status().as_u16();
    let mut status = Status::default();
    status.read(response.headers().fields());
    if status.code.is_some() || http != 200 {
        // A trailers-only answer: the call ended before any message.
        let code = status.finish(http);
        return Ok(Answer::Status(code, status.message));
    }
    call.body = Some(response.into_body());
    let mut got: BTreeMap<String, FileDescriptorProto> = BTreeMap::new();
    let mut next = None;
    loop {
        let answer = match call.receive().await? {
            Ok(answer) => answer,
            Err(status) => return Ok(status),
        };
        if let Some(e) = answer.error_response {
            return Err(refused(&mut call, next.as_deref(), service, e).await);
        }
        add_files(&mut got, answer.file_descriptor_response)?;
        let Some(file) = missing_import(&got) else {
            break;
        };
        if next.as_ref() == Some(&file) {
            return Err(ReflectError::Failed(format!(
                "asked for the file '{file}', the server answered without it"
            )));
        }
        call.send(ReflectionRequest {
            file_by_filename: Some(file.clone()),
            ..Default::default()
        })?;
        next = Some(file);
    }
    // Half-close: the server ends the call.
    let _ = call.send.send_data(Bytes::new(), true);
    Ok(Answer::Files(got.into_values().collect()))
}

/// The error a server's refusal means: of the service asked for (`next`: `None`; one it does
/// not know lists those it does), or of the file `next`.
async fn refused(
    call: &mut Call,
    next: Option<&str>,
    service: &str,
    e: ErrorResponse,
) -> ReflectError {
    match (next, e.error_code) {
        (None, NOT_FOUND) => ReflectError::UnknownService {
            detail: e.error_message,
            known: call.services().await,
        },
        (None, _) => ReflectError::Failed(format!(
            "asked for '{service}': {}: {}",
            code_name(e.error_code as u32),
            e.error_message
        )),
        (Some(file), _) => ReflectError::Failed(format!(
            "asked for the file '{file}': {}: {}",
            code_name(e.error_code as u32),
            e.error_message
        )),
    }
}

/// The files of an answer, decoded into `got` by name.
fn add_files(
    got: &mut BTreeMap<String, FileDescriptorProto>,
    answer: Option<FileDescriptorResponse>,
) -> Result<(), ReflectError> {
    for bytes in answer.map(|f| f.file_descriptor_proto).unwrap_or_default() {
        let file = FileDescriptorProto::decode(bytes.as_slice()).map_err(|e| {
            ReflectError::Failed(format!("a file descriptor that does not decode: {e}"))
        })?;
        got.insert(file.name().to_string(), file);
    }
    Ok(())
}

/// A file that one of `got` imports and that has not come (the first by name).
fn missing_import(got: &BTreeMap<String, FileDescriptorProto>) -> Option<String> {
    got.values()
        .flat_map(|f| f.dependency.iter())
        .find(|d| !got.contains_key(*d))
        .cloned()
}

/// The open reflection stream: requests out, length-prefixed responses in.
struct Call {
    send: h2::SendStream<Bytes>,
    body: Option<h2::RecvStream>,
    /// Response bytes read and not yet taken as a message.
    buffer: Vec<u8>,
    max_bytes: u64,
}

impl Call {
    fn send(&mut self, request: ReflectionRequest) -> Result<(), ReflectError> {
        let bytes = Bytes::from(frame(&request.encode_to_vec()));
        self.send
            .send_data(bytes, false)
            .map_err(|e| ReflectError::Connect(h2_error(&e, "gRPC reflection")))
    }

    /// The next response message, or the call's final status when it ended without one.
    async fn receive(&mut self) -> Result<Result<ReflectionResponse, Answer>, ReflectError> {
        let Some(body) = self.body.as_mut() else {
            return Err(ReflectError::Failed("no response stream".into()));
        };
        loop {
            if let Some(message) = take_message(&mut self.buffer, self.max_bytes)? {
                return ReflectionResponse::decode(message.as_slice())
                    .map(Ok)
                    .map_err(|e| {
                        ReflectError::Failed(format!(
                            "a reflection answer that does not decode: {e}"
                        ))
                    });
            }
            match body.data().await {
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    self.buffer.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return Err(ReflectError::Connect(h2_error(&e, "gRPC reflection"))),
                None => {
                    let mut status = Status::default();
                    if let Ok(Some(trailers)) = body.trailers().await {
                        status.read(trailers.fields());
                    }
                    let code = status.finish(200);
                    return Ok(Err(Answer::Status(code, status.message)));
                }
            }
        }
    }

    /// The services the server's reflection lists (none when it does not answer).
    async fn services(&mut self) -> Vec<String> {
        let asked = self.send(ReflectionRequest {
            list_services: Some(String::new()),
            ..Default::default()
        });
        match (asked, self.receive().await) {
            (Ok(()), Ok(Ok(answer))) => answer
                .list_services_response
                .map(|l| l.service.into_iter().map(|s| s.name).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// The first whole message in `buffer`, taken out of it; `None` until one has arrived.
fn take_message(buffer: &mut Vec<u8>, max_bytes: u64) -> Result<Option<Vec<u8>>, ReflectError> {
    if buffer.len() < 5 {
        return Ok(None);
    }
    if buffer[0] != 0 {
        return Err(ReflectError::Failed(
            "a compressed reflection answer (reqlife asks for none)".into(),
        ));
    }
    let len = u32::from_be_bytes([buffer[1], buffer[2], buffer[3], buffer[4]]) as usize;
    if len as u64 > max_bytes {
        return Err(ReflectError::Failed(format!(
            "a reflection answer of {len} bytes, over --max-body"
        )));
    }
    if buffer.len() < 5 + len {
        return Ok(None);
    }
    let message = buffer[5..5 + len].to_vec();
    buffer.drain(..5 + len);
    Ok(Some(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_encode_as_reflection_proto_does() {
        // file_containing_symbol is field 4 (a string): tag 0x22
        let r = ReflectionRequest {
            file_containing_symbol: Some("a.B".into()),
            ..Default::default()
        };
        assert_eq!(r.encode_to_vec(), b"\x22\x03a.B");
        // list_services is field 7, sent even when empty
        let r = ReflectionRequest {
            list_services: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(r.encode_to_vec(), b"\x3a\x00");
    }

    #[test]
    fn imports_are_asked_for_until_every_file_has_come() {
        let file = |name: &str, deps: &[&str]| FileDescriptorProto {
            name: Some(name.into()),
            dependency: deps.iter().map(|d| d.to_string()).collect(),
            ..Default::default()
        };
        let mut got = BTreeMap::new();
        got.insert(
            "a.proto".to_string(),
            file("a.proto", &["b.proto", "c.proto"]),
        );
        // (the file that comes next, what is still missing after it)
        let rows = [
            (file("b.proto", &["c.proto"]), Some("c.proto")),
            (file("c.proto", &["d.proto"]), Some("d.proto")),
            (file("d.proto", &[]), None),
        ];
        assert_eq!(missing_import(&got).as_deref(), Some("b.proto"));
        for (next, missing) in rows {
            got.insert(next.name().to_string(), next);
            assert_eq!(missing_import(&got).as_deref(), missing);
        }
        // The files resolve into one pool in any order.
        let mut pool = DescriptorPool::new();
        pool.add_file_descriptor_protos(got.into_values().rev())
            .unwrap();
        assert_eq!(pool.files().len(), 4);
    }

    #[test]
    fn messages_are_taken_whole() {
        let mut buffer = frame(b"ab");
        buffer.extend_from_slice(&frame(b"cde")[..4]);
        assert_eq!(
            take_message(&mut buffer, 100).unwrap(),
            Some(b"ab".to_vec())
        );
        // the second has not all arrived
        assert_eq!(take_message(&mut buffer, 100).unwrap(), None);
        buffer.extend_from_slice(&frame(b"cde")[4..]);
        assert_eq!(
            take_message(&mut buffer, 100).unwrap(),
            Some(b"cde".to_vec())
        );
        assert!(buffer.is_empty());
        // over the limit, or compressed: refused
        let mut big = frame(&[0; 10]);
        assert!(take_message(&mut big, 9).is_err());
        let mut compressed = frame(b"x");
        compressed[0] = 1;
        assert!(take_message(&mut compressed, 100).is_err());
    }
}
