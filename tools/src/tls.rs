//! Test certificates: a throwaway CA (`TestCa`) that issues leaf identities for loopback
//! virtual hosts, expired leaves for failure tests, and plain self-signed identities (those need
//! the `tls` feature, for rcgen).
//! The HTTP server (`http_server`) turns a `TlsIdentity` into a rustls `ServerConfig`.

use std::io;
#[cfg(feature = "tls")]
use std::path::Path;
use std::sync::Arc;

#[cfg(feature = "tls")]
use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate chain (leaf first) and its PKCS#8 private key, both DER.
#[derive(Clone, Debug)]
pub struct TlsIdentity {
    pub cert_chain_der: Vec<Vec<u8>>,
    pub key_der: Vec<u8>,
}

impl TlsIdentity {
    /// A rustls server config (ring provider, TLS 1.2 and 1.3) serving this identity.
    pub fn server_config(&self) -> io::Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs: Vec<CertificateDer<'static>> = self
            .cert_chain_der
            .iter()
            .map(|der| CertificateDer::from(der.clone()))
            .collect();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(io::Error::other)?;
        Ok(Arc::new(config))
    }
}

/// A throwaway certificate authority for one test run.
#[cfg(feature = "tls")]
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

#[cfg(feature = "tls")]
impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "tls")]
impl TestCa {
    pub fn new() -> TestCa {
        // Key generation and signing with fixed, valid parameters cannot fail.
        let key = KeyPair::generate().expect("ring key generation");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("no SAN to reject");
        params
            .distinguished_name
            .push(DnType::CommonName, "spinneret test CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("self-signing a valid CA");
        TestCa { cert, key }
    }

    pub fn ca_pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA certificate, DER (for a rustls `RootCertStore`).
    pub fn ca_der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    pub fn write_ca_pem(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.ca_pem())
    }

    /// A leaf valid from 1975 to 4096 for `names` (DNS names or IP literals).
    pub fn issue(&self, names: &[&str]) -> TlsIdentity {
        self.issue_with(names, false)
    }

    /// A leaf that expired in 2001.
    pub fn issue_expired(&self, names: &[&str]) -> TlsIdentity {
        self.issue_with(names, true)
    }

    fn issue_with(&self, names: &[&str], expired: bool) -> TlsIdentity {
        let key = KeyPair::generate().expect("ring key generation");
        let mut params = leaf_params(names);
        if expired {
            params.not_before = date_time_ymd(2000, 1, 1);
            params.not_after = date_time_ymd(2001, 1, 1);
        }
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("signing a valid leaf");
        TlsIdentity {
            cert_chain_der: vec![cert.der().to_vec(), self.ca_der()],
            key_der: key.serialize_der(),
        }
    }
}

/// A self-signed leaf for `names`: any verifying client must reject it.
#[cfg(feature = "tls")]
pub fn self_signed(names: &[&str]) -> TlsIdentity {
    let key = KeyPair::generate().expect("ring key generation");
    let cert = leaf_params(names)
        .self_signed(&key)
        .expect("self-signing a valid leaf");
    TlsIdentity {
        cert_chain_der: vec![cert.der().to_vec()],
        key_der: key.serialize_der(),
    }
}

#[cfg(feature = "tls")]
fn leaf_params(names: &[&str]) -> CertificateParams {
    let sans: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    // Test names are caller-chosen host names or IP literals; a bad one is a test bug.
    let mut params = CertificateParams::new(sans).expect("valid test host names");
    params
        .distinguished_name
        .push(DnType::CommonName, names.first().copied().unwrap_or("test"));
    params
}
