//! The stream header: which destination a tunnelled TCP connection goes
//! to (`[1][family 4|6][address][port, big-endian]`).

use std::net::{IpAddr, SocketAddr};
use crate::error::{PepError, Result};

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

pub(crate) async fn read_dest(r: &mut quinn::RecvStream) -> Result<SocketAddr> {
    let mut head = [0u8; 2];
    r.read_exact(&mut head).await?;
    if head[0] != 1 {
        return Err(PepError::Header("unknown version"));
    }
    let ip = match head[1] {
        4 => {
            let mut a = [0u8; 4];
            r.read_exact(&mut a).await?;
            IpAddr::from(a)
        }
        6 => {
            let mut a = [0u8; 16];
            r.read_exact(&mut a).await?;
            IpAddr::from(a)
        }
        _ => return Err(PepError::Header("unknown address family")),
    };
    let mut p = [0u8; 2];
    r.read_exact(&mut p).await?;
    Ok(SocketAddr::new(ip, u16::from_be_bytes(p)))
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
        }
    }
}
