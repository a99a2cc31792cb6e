//! The VPN of seed 001's comparison as people run one: Debian's OpenVPN
//! (`--pep openvpn`) between the client and the server, beside our own
//! unencrypted IP-in-UDP tunnel (`--pep vpn`, [`crate::vpn`]). Same device
//! name, inner addresses, MTU and port as ours, so the rest of the lab
//! (the server's address inside the tunnel) is the same.
//!
//! OpenVPN runs in point-to-point static-key mode (one shared key, no TLS
//! handshake: the tunnel is up as soon as both ends are, as ours is) with
//! AES-256-CBC and HMAC-SHA256, over UDP. OpenVPN 2.6 calls static-key mode
//! deprecated (it has no forward secrecy; 2.7 wants
//! `--allow-deprecated-insecure-static-crypto`); what matters here is what the encryption and the
//! encapsulation do to the path, which static-key mode does as TLS mode
//! would after its handshake. Per packet it adds 20 (IP) + 8 (UDP) + 4
//! (packet ID) + 32 (HMAC) + 16 (IV) bytes and pads to the cipher's
//! 16-byte blocks.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::{PepError, Result};
use crate::vpn::{inner_v4, inner_v6, DEVICE, MTU};

/// How long OpenVPN may take to bring its device up.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// Writes a new static key to `path` (`openvpn --genkey secret`).
pub fn genkey(path: &Path) -> Result<()> {
    let o = Command::new("openvpn").args(["--genkey", "secret"]).arg(path).output().map_err(|e| PepError::Precondition(format!("openvpn: {e} (Debian: apt-get install openvpn)")))?;
    if !o.status.success() {
        return Err(PepError::Command { cmd: format!("openvpn --genkey secret {}", path.display()), stderr: String::from_utf8_lossy(&o.stderr).trim().to_string() });
    }
    Ok(())
}

/// The command line of one end (1: client, 2: server).
pub fn args(end: u8, peer: SocketAddr, port: u16, key: &Path) -> Vec<String> {
    let other = 3 - end;
    let mut a: Vec<String> = vec!["--dev", DEVICE, "--dev-type", "tun", "--proto"].into_iter().map(String::from).collect();
    a.push(if peer.is_ipv4() { "udp4".into() } else { "udp6".into() });
    a.extend(["--lport".into(), port.to_string(), "--remote".into(), peer.ip().to_string(), peer.port().to_string()]);
    a.extend(["--secret".into(), key.display().to_string()]);
    a.extend(["--cipher", "AES-256-CBC", "--auth", "SHA256"].map(String::from));
    a.extend(["--ifconfig".into(), inner_v4(end), inner_v4(other)]);
    a.extend(["--ifconfig-ipv6".into(), format!("{}/64", inner_v6(end)), inner_v6(other)]);
    a.extend(["--tun-mtu".into(), MTU.to_string()]);
    // Quiet, in the foreground, nothing kept between runs; ping the peer
    // so a restarted end is found again.
    a.extend(["--verb", "3", "--mute-replay-warnings", "--ping", "10", "--script-security", "0"].map(String::from));
    a
}

/// Runs OpenVPN until `stop`; `ready` once its tunnel device is up.
pub fn run(end: u8, peer: SocketAddr, port: u16, key: &Path, stop: &AtomicBool, ready: impl FnOnce()) -> Result<()> {
    let mut child = Command::new("openvpn")
        .args(args(end, peer, port, key))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| PepError::Precondition(format!("openvpn: {e} (Debian: apt-get install openvpn)")))?;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    // OpenVPN's log, passed on to our standard error; its last lines say
    // why when it stops early.
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(std::result::Result::ok) {
            eprintln!("openvpn: {line}");
            let _ = tx.send(line);
        }
    });
    let mut ready = Some(ready);
    let mut last = String::new();
    let started = std::time::Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            let _ = child.wait();
            return Ok(());
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                // Static-key mode completes its initialisation only once
                // the peer answers, and the peer starts after this end is
                // ready: ready once the device is up and the socket bound
                // to the peer (the line after both).
                if line.contains("link remote:") {
                    if let Some(r) = ready.take() {
                        r();
                    }
                }
                last = line;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if ready.is_some() && started.elapsed() > READY_WITHIN {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(PepError::Command { cmd: "openvpn".into(), stderr: format!("not up within {} s: {last}", READY_WITHIN.as_secs()) });
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let st = child.wait()?;
                return Err(PepError::Command { cmd: "openvpn".into(), stderr: format!("exited ({st}): {last}") });
            }
        }
    }
}
