//! The stream header: which destination a tunnelled TCP connection goes
//! to (`[1][family 4|6][address][port, big-endian]`).

use crate::error::{PepError, Result};
use std::net::{IpAddr, SocketAddr};

pub(crate) fn encode_dest(d: SocketAddr) -> Vec<u8> {
    let mut v = vec![1u8];
    match d.ip() {
        IpAddr::V4(a) => {
            v.push(4);
            v.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            v.push(6);
            v.extend_from_slice(&a.octets());
        }
    }
    v.extend_from_slice(&d.port().to_be_bytes());
    v
}

/// Reads a stream's header: its first two bytes say how long the rest is.
pub(crate) async fn read_dest(r: &mut quinn::RecvStream) -> Result<SocketAddr> {
    let mut head = vec![0u8; 2];
    r.read_exact(&mut head).await?;
    let len = header_len(&head).map_err(PepError::Header)?;
    head.resize(len, 0);
    r.read_exact(&mut head[2..]).await?;
    match decode_dest(&head).map_err(PepError::Header)? {
        Some((d, _)) => Ok(d),
        None => Err(PepError::Header("short header")),
    }
}

/// A header's whole length, from its first two bytes.
fn header_len(b: &[u8]) -> std::result::Result<usize, &'static str> {
    if b.first() != Some(&1) {
        return Err("unknown version");
    }
    match b.get(1) {
        Some(4) => Ok(2 + 4 + 2),
        Some(6) => Ok(2 + 16 + 2),
        _ => Err("unknown address family"),
    }
}

/// A stream header from the start of `b`: the destination and the bytes it
/// took, `None` while `b` is too short, an error for a header that cannot
/// be one of ours.
pub fn decode_dest(b: &[u8]) -> std::result::Result<Option<(SocketAddr, usize)>, &'static str> {
    if b.len() < 2 {
        return Ok(None);
    }
    let len = header_len(b)?;
    let Some(h) = b.get(..len) else { return Ok(None) };
    let ip = match h[1] {
        4 => IpAddr::from(<[u8; 4]>::try_from(&h[2..6]).expect("4 bytes")),
        _ => IpAddr::from(<[u8; 16]>::try_from(&h[2..18]).expect("16 bytes")),
    };
    Ok(Some((SocketAddr::new(ip, u16::from_be_bytes([h[len - 2], h[len - 1]])), len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_encoded_with_family_and_port() {
        for d in ["198.18.2.2:443", "[2001:2:0:2::2]:5201"] {
            let d: SocketAddr = d.parse().unwrap();
            let enc = encode_dest(d);
            assert_eq!(enc[0], 1);
            assert_eq!(enc[1], if d.is_ipv4() { 4 } else { 6 });
            assert_eq!(u16::from_be_bytes([enc[enc.len() - 2], enc[enc.len() - 1]]), d.port());
            assert_eq!(decode_dest(&enc), Ok(Some((d, enc.len()))));
            assert_eq!(decode_dest(&enc[..enc.len() - 1]), Ok(None));
        }
        assert_eq!(decode_dest(&[2, 4]), Err("unknown version"));
        assert_eq!(decode_dest(&[1, 5, 0, 0]), Err("unknown address family"));
    }
}
