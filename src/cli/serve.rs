//! The flags of the embedded target: `reqlife serve`'s, checked into a [`ServeCommand`], and
//! how its `/kv` store starts (for `serve`, and `run` with no URL: a [`TargetChoice`]).

use super::{addr_arg, count_arg};
use crate::server::{ServerConfig, ServerTls};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Flags of `reqlife serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on: HOST:PORT, or a bare PORT (on 127.0.0.1).
    #[arg(long = "addr", default_value = "127.0.0.1:8080", value_parser = addr_arg)]
    pub addr: SocketAddr,

    /// Serve HTTPS (a self-signed certificate unless --cert/--key are given).
    #[arg(long = "tls")]
    pub tls: bool,

    /// Certificate chain (PEM) for --tls.
    #[arg(long = "cert", requires = "key")]
    pub cert: Option<PathBuf>,

    /// Private key (PEM) for --tls.
    #[arg(long = "key", requires = "cert")]
    pub key: Option<PathBuf>,

    /// Serve HTTP/3 too, on the UDP port of the same number (TLS on: self-signed unless
    /// --cert/--key are given).
    #[arg(long = "http3")]
    pub http3: bool,

    /// How the embedded target's `/kv` store starts.
    #[command(flatten)]
    pub kv: KvArgs,

    /// Serve the fault-injecting target instead: servers that close early, answer garbage,
    /// lie about lengths, drip, stall or reset, over HTTP/1.1, and HTTP/2 ones that send
    /// GOAWAY, reset streams, flood SETTINGS or never open their window.
    #[arg(long = "faults")]
    pub faults: bool,
}

/// How the embedded target's `/kv` store starts (for `serve`, and `run` with no URL).
#[derive(Debug, Clone, Args)]
pub struct KvArgs {
    /// Fill the embedded target's /kv store with keys 1..=N before serving [default: 0].
    #[arg(help_heading = "Embedded target", long = "kv-preload", value_parser = count_arg)]
    pub kv_preload: Option<u64>,

    /// Bytes of each preloaded value (e.g. 100, 4k).
    #[arg(help_heading = "Embedded target", long = "value-size", default_value = "100", value_parser = count_arg)]
    pub value_size: u64,
}

impl KvArgs {
    /// Checks that the store is filled only where there is one: the embedded target's, when
    /// a run names no URL.
    pub fn check(&self, url: Option<&str>) -> Result<(), super::plan::PlanError> {
        if url.is_some() && self.kv_preload.is_some() {
            return super::error::err(
                "--kv-preload fills the embedded target's store: drop it, or drop the URL",
            );
        }
        Ok(())
    }
}

/// Where a command sends its requests: the URL given, or the embedded target, which `app`
/// starts in-process on a free loopback port (its `route` then the URL).
#[derive(Debug, Clone)]
pub enum TargetChoice {
    /// The user's URL.
    Url(String),
    /// The embedded target, served as configured.
    Embedded(ServerConfig),
}

impl TargetChoice {
    /// `url`, or the embedded target with `kv`'s store (serving HTTP/3 too with `http3`, over
    /// TLS with a self-signed certificate); `--kv-preload` with a URL is refused.
    pub fn of(
        url: Option<&str>,
        kv: &KvArgs,
        http3: bool,
    ) -> Result<TargetChoice, super::plan::PlanError> {
        kv.check(url)?;
        Ok(match url {
            Some(u) => TargetChoice::Url(u.to_string()),
            None => TargetChoice::Embedded(ServerConfig {
                kv_preload: kv.kv_preload.unwrap_or(0),
                kv_value_bytes: kv.value_size as usize,
                http3,
                ..ServerConfig::new(
                    SocketAddr::from(([127, 0, 0, 1], 0)),
                    crate::server::ServerTls::None,
                )
            }),
        })
    }
}

/// `reqlife serve`'s flags, checked: the fault target on its address, or the embedded
/// target as configured.
#[derive(Debug, Clone)]
pub enum ServeCommand {
    /// `--faults`: the fault-injecting target on this address.
    Faults(SocketAddr),
    /// The embedded target.
    Serve(ServerConfig),
}

impl ServeArgs {
    /// The command of the flags: `--faults` refuses the flags of the embedded target.
    pub fn command(&self) -> Result<ServeCommand, super::plan::PlanError> {
        if self.faults {
            if self.tls || self.http3 || self.cert.is_some() || self.kv.kv_preload.is_some() {
                return super::error::err(
                    "--faults serves plain HTTP without a store: drop --tls, --http3, --cert and --kv-preload",
                );
            }
            return Ok(ServeCommand::Faults(self.addr));
        }
        let tls = match (&self.cert, &self.key, self.tls) {
            (Some(cert), Some(key), _) => ServerTls::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            (_, _, true) => ServerTls::SelfSigned,
            _ if self.http3 => ServerTls::SelfSigned,
            _ => ServerTls::None,
        };
        Ok(ServeCommand::Serve(ServerConfig {
            kv_preload: self.kv.kv_preload.unwrap_or(0),
            kv_value_bytes: self.kv.value_size as usize,
            http3: self.http3,
            ..ServerConfig::new(self.addr, tls)
        }))
    }
}
