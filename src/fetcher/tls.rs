//! TLS: the rustls client configuration and what TLS failures mean for a fetch.
//!
//! Certificates are verified fully (webpki roots, plus `--ca-file` anchors); there is no
//! "insecure" switch and a TLS failure is an outcome, never a fallback to plain text. The
//! per-connection byte shuffling between a socket and `rustls::ClientConnection` lives in
//! `fetcher::conn`; this module only builds configuration and classifies errors, and draws DNS
//! query IDs from the CSPRNG ([`crate::codec::secure_random`]).

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::ClientConfig;

use crate::codec::secure_random;
use crate::ReturnCode;

/// Why a TLS client configuration could not be built.
#[derive(Debug)]
pub enum TlsConfigError {
    /// The `--ca-file` could not be read or held no usable certificate.
    CaFile(String),
    /// rustls refused the configuration.
    Rustls(rustls::Error),
}

impl fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsConfigError::CaFile(why) => write!(f, "{why}"),
            TlsConfigError::Rustls(e) => write!(f, "TLS configuration: {e}"),
        }
    }
}

impl std::error::Error for TlsConfigError {}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the client configuration: webpki roots plus every certificate in `ca_pem` (the
/// contents of `--ca-file`; the app reads the file, so this layer touches no files).
pub fn client_config(ca_pem: Option<&[u8]>) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(pem) = ca_pem {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .map_err(|e| TlsConfigError::CaFile(e.to_string()))?;
        if certs.is_empty() {
            return Err(TlsConfigError::CaFile("no PEM certificate found".into()));
        }
        for cert in certs {
            roots
                .add(cert)
                .map_err(|e| TlsConfigError::CaFile(e.to_string()))?;
        }
    }
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsConfigError::Rustls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// `config` with a TLS session cache of `sessions` entries (rustls keeps 256 by default), so
/// a connection that must be reopened to a host resumes its session instead of a full
/// handshake.
pub fn with_session_cache(config: &Arc<ClientConfig>, sessions: usize) -> Arc<ClientConfig> {
    let mut c = ClientConfig::clone(config);
    c.resumption = rustls::client::Resumption::in_memory_sessions(sessions.max(1));
    Arc::new(c)
}

/// The outcome a rustls error gives the fetch it ended.
pub fn classify(err: &rustls::Error, handshaking: bool) -> ReturnCode {
    match err {
        rustls::Error::InvalidCertificate(_) => ReturnCode::TlsCertificate,
        _ if handshaking => ReturnCode::TlsHandshake,
        _ => ReturnCode::HttpReceive,
    }
}

/// Random 16-bit DNS query IDs, drawn from the CSPRNG in batches.
pub struct SecureIds {
    buf: [u8; 256],
    pos: usize,
    fallback: u64,
}

impl SecureIds {
    pub fn new() -> SecureIds {
        SecureIds {
            buf: [0; 256],
            pos: 256,
            fallback: 0x9e37_79b9_7f4a_7c15,
        }
    }

    pub fn next_id(&mut self) -> u16 {
        if self.pos + 2 > self.buf.len() {
            if !secure_random(&mut self.buf) {
                // The OS refused randomness: IDs stay unpredictable enough to avoid accidental
                // collisions (splitmix64 over the clock), though not against an active spoofer.
                self.fallback = self.fallback.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = self.fallback
                    ^ std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map(|d| d.as_nanos() as u64)
                        .unwrap_or(0);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                return (z ^ (z >> 31)) as u16;
            }
            self.pos = 0;
        }
        let id = u16::from_le_bytes([self.buf[self.pos], self.buf[self.pos + 1]]);
        self.pos += 2;
        id
    }
}

impl Default for SecureIds {
    fn default() -> Self {
        SecureIds::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_with_webpki_roots() {
        assert!(client_config(None).is_ok());
    }

    #[test]
    fn bad_ca_file_is_a_clear_error() {
        let err = client_config(Some(b"not a certificate\n")).unwrap_err();
        assert!(err.to_string().contains("no PEM certificate"), "{err}");
        let torn = b"-----BEGIN CERTIFICATE-----\nMIIB\n";
        assert!(matches!(
            client_config(Some(torn)),
            Err(TlsConfigError::CaFile(_))
        ));
    }

    #[test]
    fn certificate_errors_are_their_own_outcome() {
        let cert = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert_eq!(classify(&cert, true), ReturnCode::TlsCertificate);
        let other = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        assert_eq!(classify(&other, true), ReturnCode::TlsHandshake);
        assert_eq!(classify(&other, false), ReturnCode::HttpReceive);
    }

    #[test]
    fn secure_ids_vary() {
        let mut ids = SecureIds::new();
        let drawn: std::collections::HashSet<u16> = (0..1000).map(|_| ids.next_id()).collect();
        // 1000 draws from 65536 values: a fixed or short-cycle generator would give far fewer.
        assert!(drawn.len() > 950, "{}", drawn.len());
    }
}
