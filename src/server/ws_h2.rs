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
