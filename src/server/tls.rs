//! TLS for the embedded target: a self-signed certificate made with rcgen for `localhost`,
//! `127.0.0.1` and `::1` (the addresses as IP SANs), or a certificate chain and key read from
//! PEM files; ALPN offers `h2` and `http/1.1`. The ring provider, as everywhere in reqlife.

use super::ServerError;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The TLS configuration and, for a self-signed certificate, its PEM (to be trusted by
/// clients).
pub fn self_signed() -> Result<(Arc<rustls::ServerConfig>, String), ServerError> {
    let names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    let ck = rcgen::generate_simple_self_signed(names)
        .map_err(|e| ServerError::SelfSigned(e.to_string()))?;
    let pem = ck.cert.pem();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der())
        .map_err(|e| ServerError::SelfSigned(e.to_string()))?;
    let config = server_config(vec![cert], key).map_err(ServerError::SelfSigned)?;
    Ok((config, pem))
}

/// The TLS configuration for a certificate chain and key in PEM files.
pub fn from_files(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, ServerError> {
    let read = |path: &Path, what: &'static str| {
        std::fs::read(path).map_err(|error| ServerError::ReadFile {
            what,
            path: path.to_path_buf(),
            error,
        })
    };
    let invalid = |path: &Path, what: &'static str| {
        let path = path.to_path_buf();
        move |error| ServerError::InvalidPem { what, path, error }
    };

    let cert_pem = read(cert, "certificate")?;
    let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid(cert, "certificate"))?;
    if certs.is_empty() {
        return Err(ServerError::NoCertificate(cert.to_path_buf()));
    }
    let key_pem = read(key, "key")?;
    let key_der = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(invalid(key, "key"))?
        .ok_or_else(|| ServerError::NoPrivateKey(key.to_path_buf()))?;
    server_config(certs, key_der).map_err(|reason| ServerError::CertificateKey {
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        reason,
    })
}

/// A rustls server configuration (ring, TLS 1.2 and 1.3, ALPN h2 then http/1.1; HTTP/3 takes
/// a copy with ALPN h3).
fn server_config(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
