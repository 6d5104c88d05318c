//! A request's path read into its route: each prefix's argument checked, a bad one answered
//! with what was expected.

use super::{MAX_BYTES, MAX_DELAY_MS, MAX_TEXT_BYTES};
use crate::server::events::{events_route, EventSpec};
use crate::server::ws::{self, WsRoute};
use http::StatusCode;
use std::time::Duration;

/// What a route decided, before the response is built.
pub(in crate::server) enum Route {
    Hello,
    Delay(Duration),
    Echo,
    Status(StatusCode),
    Bytes(u64),
    Text(usize),
    Kv(String),
    Serial(Duration),
    Drift(Duration),
    Random(Duration),
    Stall(Duration),
    Events(EventSpec),
    WebSocket(WsRoute),
    BadRequest(String),
    NotFound,
}

/// A route of a path's argument (what follows its prefix).
type Parse = fn(&str) -> Route;

/// The routes with an argument, by the prefix of their path, in the order they are tried.
const PREFIXED: &[(&str, Parse)] = &[
    ("/delay/", delay),
    ("/status/", status),
    ("/kv/", kv),
    ("/serial/", serial),
    ("/drift/", drift),
    ("/random/", random),
    ("/sse/", sse),
    ("/chunks/", chunks),
    ("/stall/", stall),
    ("/text/", text),
    ("/bytes/", bytes),
    ("/ws/delay/", ws::delay_route),
    ("/ws/push/", ws::push_route),
];

/// The route for a path; every method is accepted on every route.
pub(in crate::server) fn route_of(path: &str) -> Route {
    match path {
        "/" => Route::Hello,
        "/echo" => Route::Echo,
        "/ws" => Route::WebSocket(WsRoute::Echo),
        _ => PREFIXED
            .iter()
            .find_map(|(prefix, route)| path.strip_prefix(prefix).map(route))
            .unwrap_or(Route::NotFound),
    }
}

/// `/delay/{ms}`.
fn delay(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if (0.0..=MAX_DELAY_MS).contains(&ms) => {
            Route::Delay(Duration::from_secs_f64(ms / 1000.0))
        }
        _ => Route::BadRequest(format!(
            "bad delay '{v}': expected /delay/{{ms}} with ms a number from 0 to {MAX_DELAY_MS}\n"
        )),
    }
}

/// `/status/{code}`.
fn status(v: &str) -> Route {
    match v.parse::<u16>().ok().filter(|c| (200..=599).contains(c)) {
        Some(code) => match StatusCode::from_u16(code) {
            Ok(s) => Route::Status(s),
            Err(_) => Route::BadRequest(format!("bad status '{v}'\n")),
        },
        None => Route::BadRequest(format!(
            "bad status '{v}': expected /status/{{code}} with code from 200 to 599\n"
        )),
    }
}

/// `/kv/{key}`.
fn kv(key: &str) -> Route {
    if key.is_empty() || key.len() > crate::server::kv::MAX_KEY_BYTES {
        Route::BadRequest(format!(
            "bad key: expected /kv/{{key}} with a key of 1 to {} bytes\n",
            crate::server::kv::MAX_KEY_BYTES
        ))
    } else {
        Route::Kv(key.to_string())
    }
}

/// `/serial/{ms}`.
fn serial(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if ms > 0.0 && ms <= MAX_DELAY_MS => {
            Route::Serial(Duration::from_secs_f64(ms / 1000.0))
        }
        _ => Route::BadRequest(format!(
            "bad service time '{v}': expected /serial/{{ms}} with ms a number above 0, at most {MAX_DELAY_MS}\n"
        )),
    }
}

/// `/drift/{ms}`.
fn drift(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if (0.0..=MAX_DELAY_MS / 4.0).contains(&ms) => {
            Route::Drift(Duration::from_secs_f64(ms / 1000.0))
        }
        _ => Route::BadRequest(format!(
            "bad drift '{v}': expected /drift/{{ms}} with ms a number from 0 to {}\n",
            MAX_DELAY_MS / 4.0
        )),
    }
}

/// `/sse/{n}/{gap_ms}[/{jitter_ms}]`.
fn sse(v: &str) -> Route {
    events_route(true, v)
}

/// `/chunks/{n}/{gap_ms}[/{jitter_ms}]`.
fn chunks(v: &str) -> Route {
    events_route(false, v)
}

/// `/stall/{ms}`.
fn stall(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if (0.0..=MAX_DELAY_MS).contains(&ms) => {
            Route::Stall(Duration::from_secs_f64(ms / 1000.0))
        }
        _ => Route::BadRequest(format!(
            "bad stall '{v}': expected /stall/{{ms}} with ms a number from 0 to {MAX_DELAY_MS}\n"
        )),
    }
}

/// `/text/{n}`.
fn text(v: &str) -> Route {
    match v.parse::<usize>().ok().filter(|n| *n <= MAX_TEXT_BYTES) {
        Some(n) => Route::Text(n),
        None => Route::BadRequest(format!(
            "bad size '{v}': expected /text/{{n}} with n from 0 to {MAX_TEXT_BYTES}\n"
        )),
    }
}

/// `/bytes/{n}`.
fn bytes(v: &str) -> Route {
    match v.parse::<u64>().ok().filter(|n| *n <= MAX_BYTES) {
        Some(n) => Route::Bytes(n),
        None => Route::BadRequest(format!(
            "bad size '{v}': expected /bytes/{{n}} with n from 0 to {MAX_BYTES}\n"
        )),
    }
}

/// `/random/{ms}`: the mean of the exponential delay.
fn random(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if ms > 0.0 && ms <= MAX_DELAY_MS / 20.0 => {
            Route::Random(Duration::from_secs_f64(ms / 1000.0))
        }
        _ => Route::BadRequest(format!(
            "bad mean '{v}': expected /random/{{ms}} with ms a number above 0, at most {}\n",
            MAX_DELAY_MS / 20.0
        )),
    }
}
