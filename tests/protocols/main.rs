//! Requests by protocol against real and embedded servers: HTTP/2, HTTP/3, gRPC, Thrift, streamed
//! responses, compression, kept connections, nginx/nghttpd/h2load and Server-Timing.
//! One test binary of several former ones (`tests/protocols/NAME.rs` was `tests/NAME.rs`): they
//! share the helpers and the setup, and the crate is linked once for them. Each module is the
//! test file it was (`cargo test --test protocols http2::` runs that module's tests alone).

#[path = "../common/mod.rs"]
mod common;

mod compressed;
mod events;
mod expect;
mod grpc;
mod http2;
mod http3;
mod keepalive;
mod pipeline;
mod real_servers;
mod server_timing;
mod thrift;
mod trace;
mod websocket;
mod websocket_deflate;
mod websocket_h2;
mod websocket_pipeline;
mod websocket_servers;
mod wire_offsets;
