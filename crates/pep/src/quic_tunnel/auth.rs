//! The tunnel's pre-shared key: its file format, the HMAC proofs bound to
//! the TLS session's exporter, and the stateless-reset and connection-ID
//! keys derived from it.

use std::sync::Arc;

use ring::hmac;

use super::EXPORT_LABEL;
use crate::error::{PepError, Result};

/// Length of the air half's first destination connection ID (QUIC's
/// largest).
pub(crate) const INITIAL_DCID_LEN: usize = 20;
/// How far from the ground's clock an Initial's time may be.
pub(crate) const INITIAL_DCID_AGE: std::time::Duration = std::time::Duration::from_secs(300);

/// A pre-shared key: at least 16 bytes, written as hex in a file.
#[derive(Clone)]
pub struct Psk(Vec<u8>);

impl Psk {
    pub fn parse(text: &str) -> Result<Psk, String> {
        let t = text.trim();
        let bytes = (0..t.len()).step_by(2).map(|i| t.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect::<Option<Vec<u8>>>();
        match bytes {
            Some(b) if t.len().is_multiple_of(2) && b.len() >= 16 => Ok(Psk(b)),
            _ => Err("expected at least 16 bytes written as hex (make one with `aerolink pep keygen`)".into()),
        }
    }

    /// 32 random bytes as hex.
    pub fn generate() -> String {
        use ring::rand::SecureRandom;
        let mut b = [0u8; 32];
        ring::rand::SystemRandom::new().fill(&mut b).expect("the system's random source");
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    pub(crate) fn key(&self, purpose: &[u8]) -> hmac::Key {
        let k = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(&k, purpose).as_ref())
    }

    /// What a half signs: who it is, and 32 bytes exported from this very
    /// TLS session.
    fn message(who: &[u8], conn: &quinn::Connection) -> Option<Vec<u8>> {
        let mut e = [0u8; 32];
        conn.export_keying_material(&mut e, EXPORT_LABEL, b"").ok()?;
        Some([who, &e].concat())
    }

    pub(crate) fn proof(&self, who: &[u8], conn: &quinn::Connection) -> Result<hmac::Tag> {
        let msg = Self::message(who, conn).ok_or(PepError::Export)?;
        Ok(hmac::sign(&self.key(b"auth"), &msg))
    }

    pub(crate) fn verify(&self, who: &[u8], conn: &quinn::Connection, tag: &[u8]) -> bool {
        Self::message(who, conn).is_some_and(|msg| hmac::verify(&self.key(b"auth"), &msg, tag).is_ok())
    }

    /// The air half's first destination connection ID, which the ground
    /// half checks before it answers anything: when (4 bytes, Unix
    /// seconds), a random nonce (8) and a MAC of both keyed from the PSK
    /// (8). Without the key there is no ID the ground answers (WireGuard's
    /// idea: a gateway that does not authenticate a packet says nothing).
    pub(crate) fn initial_dcid(&self, unix_s: u64) -> quinn::ConnectionId {
        use ring::rand::SecureRandom;
        let mut id = [0u8; INITIAL_DCID_LEN];
        id[..4].copy_from_slice(&(unix_s as u32).to_be_bytes());
        ring::rand::SystemRandom::new().fill(&mut id[4..12]).expect("the system's random source");
        let tag = hmac::sign(&self.key(b"initial dcid"), &id[..12]);
        id[12..].copy_from_slice(&tag.as_ref()[..8]);
        quinn::ConnectionId::new(&id)
    }

    /// Whether an Initial's destination connection ID is one of ours, made
    /// within [`INITIAL_DCID_AGE`] of `unix_s` (either way: the halves'
    /// clocks may differ by that much).
    pub fn check_initial_dcid(&self, id: &[u8], unix_s: u64) -> Result<(), &'static str> {
        if id.len() != INITIAL_DCID_LEN {
            return Err("not keyed with our key (connection ID length)");
        }
        let tag = hmac::sign(&self.key(b"initial dcid"), &id[..12]);
        // Compared in constant time: every byte, whatever the first differs.
        if tag.as_ref()[..8].iter().zip(&id[12..]).fold(0u8, |d, (a, b)| d | (a ^ b)) != 0 {
            return Err("not keyed with our key");
        }
        let t = u32::from_be_bytes(id[..4].try_into().expect("4 bytes")) as i64;
        if (t - unix_s as u32 as i64).abs() > INITIAL_DCID_AGE.as_secs() as i64 {
            return Err("keyed with our key but too old or from the future (a replay, or the clocks differ)");
        }
        Ok(())
    }

    /// The key of the connection IDs the halves issue (they carry a check).
    pub(crate) fn cid_key(&self) -> u64 {
        u64::from_be_bytes(hmac::sign(&self.key(b"connection ids"), b"").as_ref()[..8].try_into().expect("8 bytes"))
    }

    pub(crate) fn endpoint_config(&self) -> quinn::EndpointConfig {
        let mut c = quinn::EndpointConfig::new(Arc::new(self.key(b"stateless reset")));
        // Connection IDs carry a check keyed from the PSK too: a restarted
        // ground gateway must recognise its predecessor's IDs as its own to
        // answer them with a stateless reset (it drops foreign ones).
        let cid_key = self.cid_key();
        c.cid_generator(move || Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key)));
        // Both ends are ours: a packet without QUIC's fixed bit is garbage.
        c.grease_quic_bit(false);
        // What the peer may send us: up to the tunnel's largest datagram
        // (quinn's default, 1472 B, would cap the peer's path MTU
        // discovery).
        c.max_udp_payload_size(super::MAX_DATAGRAM).expect("a payload size within QUIC's limits");
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex_of_at_least_16_bytes() {
        assert!(Psk::parse(&Psk::generate()).is_ok());
        assert_eq!(Psk::parse("00112233445566778899aabbccddeeff\n").map(|p| p.0.len()), Ok(16));
        assert!(Psk::parse("00112233445566778899aabbccddee").is_err(), "15 bytes");
        assert!(Psk::parse("00112233445566778899aabbccddeeff0").is_err(), "odd length");
        assert!(Psk::parse("zz112233445566778899aabbccddeeff").is_err(), "not hex");
        assert_ne!(Psk::generate(), Psk::generate());
    }
}
