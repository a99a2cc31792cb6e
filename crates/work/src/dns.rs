//! DNS: timed lookups (hickory-proto builds and reads the messages; the
//! socket and the clock are ours), the small authoritative server of the
//! flight reflector and of `workload serve` (every A/AAAA question answered
//! with one address, so a lab has names to look up), and the `dns`
//! workload: every name looked up twice back to back, as seed 000 §5.1
//! did with the Alexa top 100 through the aircraft's resolver.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// The outcome of one lookup.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    pub ms: Option<f64>,
    pub answers: Vec<String>,
    pub rcode: Option<String>,
    pub error: Option<String>,
}

/// Looks `name` up (A) at `server`, waiting at most `timeout`.
pub async fn lookup(server: SocketAddr, name: &str, timeout: Duration) -> Lookup {
    let fail = |e: String| Lookup { ms: None, answers: vec![], rcode: None, error: Some(e) };
    let qname = match Name::from_ascii(name) {
        Ok(n) => n,
        Err(e) => return fail(format!("{name:?} is not a DNS name: {e}")),
    };
    let mut msg = Message::query();
    msg.metadata.recursion_desired = true;
    msg.add_query(Query::query(qname, RecordType::A));
    let id = msg.metadata.id;
    let bytes = match msg.to_vec() {
        Ok(b) => b,
        Err(e) => return fail(e.to_string()),
    };
    let bind = SocketAddr::new(if server.is_ipv6() { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) }, 0);
    let sock = match tokio::net::UdpSocket::bind(bind).await {
        Ok(s) => s,
        Err(e) => return fail(e.to_string()),
    };
    let t0 = Instant::now();
    if let Err(e) = sock.send_to(&bytes, server).await {
        return fail(e.to_string());
    }
    let mut buf = [0u8; 4096];
    let got = tokio::time::timeout(timeout, async {
        loop {
            let (n, from) = sock.recv_from(&mut buf).await?;
            if from != server {
                continue;
            }
            if let Ok(m) = Message::from_vec(&buf[..n]) {
                if m.metadata.id == id && m.metadata.message_type == MessageType::Response {
                    return Ok::<_, std::io::Error>(m);
                }
            }
        }
    })
    .await;
    match got {
        Ok(Ok(m)) => {
            let answers = m.answers.iter().filter_map(|r| r.data.ip_addr()).map(|a| a.to_string()).collect();
            Lookup { ms: Some(t0.elapsed().as_secs_f64() * 1e3), answers, rcode: Some(m.metadata.response_code.to_string()), error: None }
        }
        Ok(Err(e)) => fail(e.to_string()),
        Err(_) => fail(format!("no answer in {} ms", timeout.as_millis())),
    }
}

/// How long a resolver may keep an answer of ours, s.
pub const TTL_S: u32 = 300;

/// The answer of the authoritative server to `query`: every A (AAAA) name
/// resolves to `v4` (`v6`) with a TTL of [`TTL_S`]; anything else gets an
/// empty answer. Nothing for what is not a query.
pub fn answer(query: &[u8], v4: Option<std::net::Ipv4Addr>, v6: Option<std::net::Ipv6Addr>) -> Option<Vec<u8>> {
    let q = Message::from_vec(query).ok()?;
    if q.metadata.message_type != MessageType::Query || q.metadata.op_code != OpCode::Query {
        return None;
    }
    let mut r = Message::response(q.metadata.id, OpCode::Query);
    r.metadata.authoritative = true;
    r.metadata.recursion_desired = q.metadata.recursion_desired;
    r.metadata.response_code = ResponseCode::NoError;
    for question in q.queries.iter().take(1) {
        r.add_query(question.clone());
        let data = match (question.query_type(), v4, v6) {
            (RecordType::A, Some(a), _) => Some(RData::A(a.into())),
            (RecordType::AAAA, _, Some(a)) => Some(RData::AAAA(a.into())),
            _ => None,
        };
        if let Some(d) = data {
            r.add_answer(Record::from_rdata(question.name().clone(), TTL_S, d));
        }
    }
    r.to_vec().ok()
}

/// Serves [`answer`] on `socket` until it fails.
pub async fn serve(socket: tokio::net::UdpSocket, v4: Option<std::net::Ipv4Addr>, v6: Option<std::net::Ipv6Addr>) -> std::io::Result<()> {
    let mut buf = [0u8; 4096];
    loop {
        let (n, from) = socket.recv_from(&mut buf).await?;
        if let Some(reply) = answer(&buf[..n], v4, v6) {
            let _ = socket.try_send_to(&reply, from);
        }
    }
}

/// What `workload serve` answers for every name: an address in our range
/// where nothing listens (the lookups are what is measured).
pub const WORKLOAD_ANSWER: Ipv4Addr = Ipv4Addr::new(198, 18, 255, 254);

/// The names the `dns` workload looks up: `count` distinct names under
/// `.test`, like a list of popular sites.
pub fn names(count: u32) -> Vec<String> {
    (1..=count).map(|k| format!("site{k}.test")).collect()
}

/// What the `dns` workload measured: for each round and name, the first
/// and the second (back-to-back) lookup, ms; `None` where no answer came
/// within the timeout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DnsResult {
    pub resolver: String,
    pub names: u32,
    pub rounds: u32,
    pub first_ms: Vec<Option<f64>>,
    pub second_ms: Vec<Option<f64>>,
}

/// The `dns` workload: `rounds` rounds `interval` apart; in each, every
/// name of [`names`] looked up at `resolver` twice, one right after the
/// other.
pub async fn run(resolver: SocketAddr, count: u32, rounds: u32, interval: Duration, timeout: Duration) -> DnsResult {
    let names = names(count);
    let mut out = DnsResult { resolver: resolver.to_string(), names: count, rounds, ..DnsResult::default() };
    let start = Instant::now();
    for round in 0..rounds {
        tokio::time::sleep_until((start + interval * round).into()).await;
        for name in &names {
            out.first_ms.push(lookup(resolver, name, timeout).await.ms);
            out.second_ms.push(lookup(resolver, name, timeout).await.ms);
        }
    }
    out
}

/// Points this process's `/etc/resolv.conf` (and so its children's: a
/// browser's) at `resolver`, by a bind mount in this process's own mount
/// namespace — the one `ip netns exec` gives a lab's programs. Refused in
/// the host's mount namespace, where it would change every program's.
pub fn use_resolver(resolver: IpAddr) -> std::io::Result<()> {
    // Only where `ip netns exec` put us: in a lab's network namespace (an
    // aerolink `al-…` one) and in a mount namespace of our own.
    let in_lab = named_netns().is_some_and(|n| n.starts_with("al-"));
    if !in_lab || std::fs::read_link("/proc/self/ns/mnt")? == outermost_mount_ns()? {
        return Err(std::io::Error::other("this process is not in a lab's own namespaces (it would change the host's /etc/resolv.conf): run it in a lab (aerolink run, exec or an experiment)"));
    }
    let path = std::env::temp_dir().join(format!("aerolink-resolv-{}.conf", std::process::id()));
    std::fs::write(&path, format!("# aerolink: this load's resolver\nnameserver {resolver}\noptions timeout:5 attempts:2\n"))?;
    let c = |p: &std::path::Path| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).map_err(std::io::Error::other);
    let (src, dst) = (c(&path)?, c(std::path::Path::new("/etc/resolv.conf"))?);
    // SAFETY: two valid C strings; a bind mount takes no type or data.
    let rc = unsafe { libc::mount(src.as_ptr(), dst.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The name of the network namespace this process is in, if it is a
/// named one (`/run/netns/NAME`, as `ip netns identify` finds it).
fn named_netns() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self/ns/net").ok()?;
    std::fs::read_dir("/run/netns").ok()?.flatten().find_map(|e| {
        let m = std::fs::metadata(e.path()).ok()?;
        (m.ino() == me.ino() && m.dev() == me.dev()).then(|| e.file_name().to_string_lossy().into_owned())
    })
}

/// The mount namespace of this process's most distant ancestor whose
/// namespace can be read (init's may not be, in a container): the host's,
/// as far as this process can tell.
fn outermost_mount_ns() -> std::io::Result<std::path::PathBuf> {
    let mut ns = std::fs::read_link("/proc/self/ns/mnt")?;
    let mut pid = std::process::id();
    while pid > 1 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // The parent's pid follows the command's closing parenthesis and the state.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse().ok()).unwrap_or(1);
        match std::fs::read_link(format!("/proc/{ppid}/ns/mnt")) {
            Ok(n) => ns = n,
            Err(_) => break,
        }
        pid = ppid;
    }
    Ok(ns)
}

/// The first `nameserver` of resolv.conf text (the resolver DHCP gave).
pub fn system_resolver(resolv_conf: &str) -> Option<IpAddr> {
    resolv_conf.lines().filter_map(|l| l.trim().strip_prefix("nameserver")).filter_map(|a| a.trim().split('%').next()?.parse().ok()).next()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real exchange on loopback: our server answers, the agent's lookup
    /// reads it.
    #[tokio::test]
    async fn a_lookup_gets_the_servers_answer() {
        let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let server = tokio::spawn(serve(sock, Some("198.18.0.2".parse().unwrap()), None));
        let l = lookup(addr, "news.test", Duration::from_secs(5)).await;
        assert_eq!(l.answers, vec!["198.18.0.2".to_string()], "{l:?}");
        assert_eq!(l.rcode.as_deref(), Some("No Error"));
        assert!(l.ms.is_some() && l.error.is_none());
        server.abort();
        // Nobody answering is a timeout, reported, not an error thrown.
        let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let l = lookup(silent.local_addr().unwrap(), "news.test", Duration::from_millis(200)).await;
        assert!(l.ms.is_none() && l.error.as_deref().unwrap().contains("no answer"), "{l:?}");
        assert!(answer(b"garbage", None, None).is_none());
    }

    #[test]
    fn the_system_resolver_is_the_first_nameserver() {
        assert_eq!(system_resolver("# x\nsearch lan\nnameserver 198.18.0.53\nnameserver 198.18.0.54\n"), Some("198.18.0.53".parse().unwrap()));
        assert_eq!(system_resolver("nameserver fe80::1%eth0\n"), Some("fe80::1".parse().unwrap()));
        assert_eq!(system_resolver(""), None);
    }
}
