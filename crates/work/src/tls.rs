//! TLS for the workloads: certificates made on demand for whatever name a
//! client asks for (SNI), all signed with one lab key, and clients that
//! accept them without verification.
//!
//! The workloads measure transports over emulated links inside namespaces
//! aerolink built; there is no third party to authenticate, and skipping
//! verification costs nothing the handshake would not cost anyway (the
//! round trips and bytes are the same). A real browser cannot skip it: it
//! is told to trust the lab key by its SPKI hash ([`spki_sha256_base64`],
//! Chromium's `--ignore-certificate-errors-spki-list`), so nothing is
//! installed system-wide. The key is in the source tree on purpose (as
//! WprGo's is): it only ever signs certificates for servers inside a lab.
//!
//! Every client and server config here (HTTP/1.1 and /2 over TLS, HTTP/3
//! and the QUIC tunnel, both ends) writes its session keys to the file
//! `SSLKEYLOGFILE` names, in the NSS key log format, when it is set, so
//! Wireshark or `tshark -o tls.keylog_file:FILE` decrypts a capture of a
//! run (Chromium honours the same variable itself).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::error::Result;

pub const SERVER_NAME: &str = "aerolink.test";

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The lab key (P-256, PKCS#8) that signs every server certificate.
const LAB_KEY: &[u8] = include_bytes!("lab-ca-key.der");

fn lab_key() -> rcgen::KeyPair {
    rcgen::KeyPair::try_from(LAB_KEY).expect("the lab key in the source tree parses")
}

/// Base64 of the SHA-256 of the lab key's SubjectPublicKeyInfo: what
/// Chromium's `--ignore-certificate-errors-spki-list` takes.
pub fn spki_sha256_base64() -> String {
    use base64::Engine;
    use rcgen::PublicKeyData;
    let spki = lab_key().subject_public_key_info();
    base64::engine::general_purpose::STANDARD.encode(ring::digest::digest(&ring::digest::SHA256, &spki))
}

/// Certificates by server name, made on first use.
#[derive(Debug)]
struct ByName {
    key: rcgen::KeyPair,
    signer: Arc<dyn rustls::sign::SigningKey>,
    made: Mutex<HashMap<String, Arc<rustls::sign::CertifiedKey>>>,
}

impl ByName {
    fn new() -> Result<ByName> {
        let key = lab_key();
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let signer = provider().key_provider.load_private_key(der)?;
        Ok(ByName { key, signer, made: Mutex::new(HashMap::new()) })
    }

    fn cert(&self, name: &str) -> Option<Arc<rustls::sign::CertifiedKey>> {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = made.get(name) {
            return Some(c.clone());
        }
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).ok()?;
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&self.key).ok()?;
        let ck = Arc::new(rustls::sign::CertifiedKey::new(vec![CertificateDer::from(cert.der().to_vec())], self.signer.clone()));
        made.insert(name.to_string(), ck.clone());
        Some(ck)
    }
}

impl rustls::server::ResolvesServerCert for ByName {
    fn resolve(&self, hello: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.cert(hello.server_name().unwrap_or(SERVER_NAME))
    }
}

/// A server config for `alpn` protocols: a certificate for each name asked
/// for, signed by the lab key (each origin of a replayed page gets its own,
/// so a browser does not pool connections across origins). With `resume`
/// it keeps sessions (1024, in memory) and sends one ticket per handshake,
/// so a client's later connection resumes without a certificate — within
/// the server's life, which is one run.
pub fn server_config(alpn: &[&[u8]], resume: bool) -> Result<rustls::ServerConfig> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider()).with_protocol_versions(&[&rustls::version::TLS13])?.with_no_client_auth().with_cert_resolver(Arc::new(ByName::new()?));
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    // Each run is a first visit; resumption within a run only when asked.
    if resume {
        cfg.session_storage = rustls::server::ServerSessionMemoryCache::new(1024);
        cfg.send_tls13_tickets = 1;
    } else {
        cfg.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        cfg.send_tls13_tickets = 0;
    }
    cfg.max_fragment_size = Some(4096);
    cfg.key_log = Arc::new(rustls::KeyLogFile::new());
    Ok(cfg)
}

/// A client config that offers `alpn` and accepts the server's certificate;
/// with `resume` its connections resume the sessions of earlier ones (as
/// a browser's do), else each makes a full handshake.
pub fn client_config(alpn: &[&[u8]], resume: bool) -> Result<rustls::ClientConfig> {
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider())))
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    if !resume {
        cfg.resumption = rustls::client::Resumption::disabled();
    }
    cfg.key_log = Arc::new(rustls::KeyLogFile::new());
    Ok(cfg)
}

pub fn server_name() -> ServerName<'static> {
    ServerName::try_from(SERVER_NAME).expect("a valid DNS name")
}

#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, _: &[u8], _: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_key_signs_a_certificate_per_name_and_has_one_spki_hash() {
        let by = ByName::new().unwrap();
        let a = by.cert("www.news.test").unwrap();
        assert!(Arc::ptr_eq(&a, &by.cert("www.news.test").unwrap()), "made once");
        assert_ne!(a.cert[0], by.cert("img.news.test").unwrap().cert[0]);
        let h = spki_sha256_base64();
        assert_eq!((h.len(), h.clone()), (44, spki_sha256_base64()));
        server_config(&[b"h2"], false).unwrap();
    }

    /// Two connections one after another with the same configs: how the
    /// second one's handshake went.
    async fn second_handshake(resume: bool) -> rustls::HandshakeKind {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let server = tokio_rustls::TlsAcceptor::from(Arc::new(server_config(&[b"http/1.1"], resume).unwrap()));
        let client = tokio_rustls::TlsConnector::from(Arc::new(client_config(&[b"http/1.1"], resume).unwrap()));
        let mut kind = None;
        for _ in 0..2 {
            let (c, s) = tokio::io::duplex(64 << 10);
            let server = server.clone();
            let served = tokio::spawn(async move {
                let mut s = server.accept(s).await.unwrap();
                s.write_all(b"x").await.unwrap();
                s.flush().await.unwrap();
                let mut end = Vec::new();
                let _ = s.read_to_end(&mut end).await;
            });
            let mut c = client.connect(server_name(), c).await.unwrap();
            // The ticket comes after the handshake, before the first byte.
            let mut b = [0u8; 1];
            c.read_exact(&mut b).await.unwrap();
            kind = c.get_ref().1.handshake_kind();
            c.shutdown().await.unwrap();
            drop(c);
            served.await.unwrap();
        }
        kind.unwrap()
    }

    #[tokio::test]
    async fn a_second_connection_resumes_only_when_asked() {
        assert_eq!(second_handshake(true).await, rustls::HandshakeKind::Resumed);
        assert_eq!(second_handshake(false).await, rustls::HandshakeKind::Full);
    }
}
