//! The embedded target's WebSocket routes over HTTP/2 (RFC 8441): the target's HTTP/2 offers the
//! extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL), and a `CONNECT` with
//! `:protocol websocket` on a WebSocket route is answered `200` (with
//! `sec-websocket-version: 13`; RFC 8441 has no key and no accept), its stream then served as
//! an upgraded HTTP/1.1 connection is ([`super::ws::serve`]): hyper hands the stream's DATA over
//! as a byte stream. A CONNECT without version 13 is answered `400` naming it.

use super::routes::Body;
use super::ws::WsRoute;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use std::sync::Arc;

/// Whether `req` is an extended CONNECT for a WebSocket (HTTP/2, `:protocol websocket`).
pub(super) fn wants_websocket<B>(req: &Request<B>) -> bool {
    req.version() == http::Version::HTTP_2
        && req.method() == http::Method::CONNECT
        && req
            .extensions()
            .get::<hyper::ext::Protocol>()
            .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
}

/// The answer to an extended CONNECT on `route`: `200` (and the stream served by a task of its
/// own once hyper hands it over, `slot` held until it ends), or a `400` naming what is missing.
pub(super) fn accept<T: Send + Sync + 'static>(
    mut req: Request<hyper::body::Incoming>,
    route: WsRoute,
    slot: Arc<T>,
) -> Response<Body> {
    let version = req.headers().get(http::header::SEC_WEBSOCKET_VERSION);
    if version.map(|v| v.as_bytes()) != Some(b"13") {
        let why = "a WebSocket CONNECT (RFC 8441) needs sec-websocket-version: 13\n";
        let mut res = Response::new(Body::Full(Some(Bytes::from(why))));
        *res.status_mut() = StatusCode::BAD_REQUEST;
        return res;
    }
    let upgraded = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        if let Ok(io) = upgraded.await {
            super::ws::serve(hyper_util::rt::TokioIo::new(io), route).await;
        }
        drop(slot);
    });
    let mut res = Response::new(Body::Full(None));
    res.headers_mut().insert(
        http::header::SEC_WEBSOCKET_VERSION,
        HeaderValue::from_static("13"),
    );
    res
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use std::time::Duration;

    /// An extended CONNECT to `path` with `version` (none when `None`) on `h2`: the status,
    /// and the stream both ways.
    async fn connect(
        h2: &mut h2::client::SendRequest<Bytes>,
        path: &str,
        version: Option<&'static str>,
    ) -> (u16, h2::SendStream<Bytes>, h2::RecvStream) {
        let mut req = http::Request::new(());
        *req.method_mut() = http::Method::CONNECT;
        *req.uri_mut() = format!("http://x{path}").parse().unwrap();
        if let Some(v) = version {
            let v = http::HeaderValue::from_static(v);
            req.headers_mut().insert("sec-websocket-version", v);
        }
        req.extensions_mut()
            .insert(h2::ext::Protocol::from_static("websocket"));
        let (response, send) = h2.send_request(req, false).unwrap();
        let response = response.await.unwrap();
        let status = response.status().as_u16();
        (status, send, response.into_body())
    }

    #[tokio::test]
    async fn the_target_offers_the_extended_connect_and_echoes_on_its_stream() {
        let server = super::super::spawn(super::super::ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            super::super::ServerTls::None,
        ))
        .unwrap();
        let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let (h2, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let mut h2 = h2.ready().await.unwrap();
        // The server's SETTINGS enable it once they came (within the bound).
        for _ in 0..500 {
            if h2.is_extended_connect_protocol_enabled() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(h2.is_extended_connect_protocol_enabled());
        assert_eq!(connect(&mut h2, "/ws", None).await.0, 400);
        assert_eq!(connect(&mut h2, "/nothing", Some("13")).await.0, 404);
        let (status, mut send, mut recv) = connect(&mut h2, "/ws", Some("13")).await;
        assert_eq!(status, 200);
        // A masked text frame "hi" (mask 0): the same message back, unmasked.
        let frame = Bytes::from_static(b"\x81\x82\0\0\0\0hi");
        send.send_data(frame, false).unwrap();
        let mut got = Vec::new();
        while got.len() < 4 {
            let data = tokio::time::timeout(Duration::from_secs(5), recv.data())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let _ = recv.flow_control().release_capacity(data.len());
            got.extend_from_slice(&data);
        }
        assert_eq!(got, b"\x81\x02hi");
    }
}
