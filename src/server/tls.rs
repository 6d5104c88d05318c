//! TLS for the embedded target: a self-signed certificate made with rcgen for `localhost`,
//! `127.0.0.1` and `::1`, or a certificate chain and key read from PEM files; ALPN offers
//! `h2` and `http/1.1`. The ring provider, as everywhere in reqlife.

use super::ServerError;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The acceptor and, for a self-signed certificate, its PEM (to be trusted by clients).
pub fn self_signed() -> Result<(tokio_rustls::TlsAcceptor, String), ServerError> {
    let names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    let ck = rcgen::generate_simple_self_signed(names)
        .map_err(|e| ServerError::Tls(format!("cannot make a self-signed certificate: {e}")))?;
    let pem = ck.cert.pem();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der())
        .map_err(|e| ServerError::Tls(format!("self-signed key: {e}")))?;
    Ok((acceptor(vec![cert], key)?, pem))
}

/// The acceptor for a certificate chain and key in PEM files.
pub fn from_files(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, ServerError> {
    let read = |p: &Path, what: &str| {
        std::fs::read(p).map_err(|e| {
            ServerError::Tls(format!("cannot read {what} file '{}': {e}", p.display()))
        })
    };
    let cert_pem = read(cert, "certificate")?;
    let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            ServerError::Tls(format!(
                "invalid certificate file '{}': {e}",
                cert.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(ServerError::Tls(format!(
            "no certificate found in '{}' (expected PEM -----BEGIN CERTIFICATE-----)",
            cert.display()
        )));
    }
    let key_pem = read(key, "key")?;
    let key_der = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| ServerError::Tls(format!("invalid key file '{}': {e}", key.display())))?
        .ok_or_else(|| {
            ServerError::Tls(format!(
                "no private key found in '{}' (expected PEM PKCS#8, PKCS#1 or SEC1)",
                key.display()
            ))
        })?;
    acceptor(certs, key_der)
}

fn acceptor(
    certs: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<tokio_rustls::TlsAcceptor, ServerError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(format!("certificate and key do not fit: {e}")))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
