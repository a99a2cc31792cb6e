//! The UDP probe's wire format and the reflector that answers it.
//!
//! A probe is [`REQUEST_LEN`] bytes: magic, the agent's session, a sequence
//! number and the agent's send time. The reflector answers with the same
//! three, its own receive time, which of the session's last 64 sequence
//! numbers it has received (so the agent can tell a lost request from a lost
//! reply, irtt's idea), whether its clock is synchronised, and the address it
//! saw the probe come from (the agent's public address) and a token for that
//! address. A reply is never longer than the request, and the reflector
//! answers nothing that is not a well-formed message.
//!
//! Packet trains measure the bottleneck's rate by dispersion (packets sent
//! back to back leave the bottleneck one serialisation time apart): down,
//! the agent asks for a train (with the token, so a reflector sends trains
//! only to an address that has proved it receives there, at most one a
//! second per session); up, the agent sends one and the reflector
//! acknowledges each packet with its receive time (acks are smaller than
//! the packets).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The reflector's UDP port (irtt's).
pub const PORT: u16 = 2112;
const REQ_MAGIC: &[u8; 4] = b"ALP1";
const REP_MAGIC: &[u8; 4] = b"ALR1";
/// Requests are padded to this length so that a reply is never larger.
pub const REQUEST_LEN: usize = 80;
const REPLY_LEN: usize = 4 + 8 * 6 + 1 + 16 + 2 + 8 + 1;
/// A reply before the turnaround byte (it reads as a turnaround of 0).
const REPLY_LEN_V1: usize = REPLY_LEN - 1;
/// The unit of [`Reply::turnaround_us`] on the wire, and its largest value.
const TURNAROUND_UNIT_US: u64 = 100;
pub const MAX_TURNAROUND_US: u64 = 255 * TURNAROUND_UNIT_US;
// A reply is never larger than its request: the reflector amplifies nothing.
const _: () = assert!(REPLY_LEN <= REQUEST_LEN);
const TRAIN_REQ_MAGIC: &[u8; 4] = b"ALD1";
const TRAIN_DOWN_MAGIC: &[u8; 4] = b"ALE1";
const TRAIN_UP_MAGIC: &[u8; 4] = b"ALT1";
const TRAIN_ACK_MAGIC: &[u8; 4] = b"ALA1";
const ACK_LEN: usize = 4 + 8 * 3 + 4;
/// The most packets in a train, and their sizes (UDP payload bytes).
pub const MAX_TRAIN: u32 = 64;
pub const MIN_TRAIN_SIZE: u32 = 64;
pub const MAX_TRAIN_SIZE: u32 = 1472;
/// A session gets at most one down train per this many nanoseconds.
const TRAIN_SPACING_NS: u64 = 1_000_000_000;
/// Sessions a reflector remembers at once (the oldest is forgotten).
const MAX_SESSIONS: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub session: u64,
    pub seq: u64,
    pub sent_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub session: u64,
    pub seq: u64,
    pub sent_ns: u64,
    /// The reflector's clock when the request arrived (the kernel's
    /// receive stamp, `stamp`).
    pub recv_ns: u64,
    /// How long after that the reply left, µs, in steps of 100 µs up to
    /// [`MAX_TURNAROUND_US`] (one byte): the reflector's own wake-up, which
    /// belongs to neither direction. Set by [`set_turnaround`] as the reply
    /// is sent.
    pub turnaround_us: u64,
    /// The highest sequence number the reflector has received, and bit i
    /// set when it has received `rx_max - i` (i < 64).
    pub rx_max: u64,
    pub rx_bitmap: u64,
    /// The reflector's kernel clock is synchronised (adjtimex).
    pub synced: bool,
    /// Where the request came from, as the reflector saw it.
    pub from: SocketAddr,
    /// Proof that the agent receives at `from` (for train requests).
    pub token: u64,
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

impl Request {
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[..4].copy_from_slice(REQ_MAGIC);
        b[4..12].copy_from_slice(&self.session.to_be_bytes());
        b[12..20].copy_from_slice(&self.seq.to_be_bytes());
        b[20..28].copy_from_slice(&self.sent_ns.to_be_bytes());
        b
    }

    /// A well-formed request, or nothing (short, long, wrong magic).
    pub fn decode(b: &[u8]) -> Option<Request> {
        if b.len() != REQUEST_LEN || &b[..4] != REQ_MAGIC {
            return None;
        }
        Some(Request { session: u64_at(b, 4), seq: u64_at(b, 12), sent_ns: u64_at(b, 20) })
    }
}

impl Reply {
    pub fn encode(&self) -> [u8; REPLY_LEN] {
        let mut b = [0u8; REPLY_LEN];
        b[..4].copy_from_slice(REP_MAGIC);
        for (i, v) in [self.session, self.seq, self.sent_ns, self.recv_ns, self.rx_max, self.rx_bitmap].iter().enumerate() {
            b[4 + 8 * i..12 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        b[52] = self.synced as u8;
        let ip = match self.from.ip() {
            IpAddr::V4(a) => a.to_ipv6_mapped(),
            IpAddr::V6(a) => a,
        };
        b[53..69].copy_from_slice(&ip.octets());
        b[69..71].copy_from_slice(&self.from.port().to_be_bytes());
        b[71..79].copy_from_slice(&self.token.to_be_bytes());
        b[79] = turnaround_byte(self.turnaround_us);
        b
    }

    pub fn decode(b: &[u8]) -> Option<Reply> {
        if !(b.len() == REPLY_LEN || b.len() == REPLY_LEN_V1) || &b[..4] != REP_MAGIC {
            return None;
        }
        let ip = Ipv6Addr::from(<[u8; 16]>::try_from(&b[53..69]).expect("16 bytes"));
        let ip = ip.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(ip));
        Some(Reply {
            session: u64_at(b, 4),
            seq: u64_at(b, 12),
            sent_ns: u64_at(b, 20),
            recv_ns: u64_at(b, 28),
            rx_max: u64_at(b, 36),
            rx_bitmap: u64_at(b, 44),
            synced: b[52] != 0,
            from: SocketAddr::new(ip, u16::from_be_bytes([b[69], b[70]])),
            token: u64_at(b, 71),
            turnaround_us: b.get(79).map_or(0, |t| *t as u64 * TURNAROUND_UNIT_US),
        })
    }

    /// Whether the reflector had received request `seq` when it sent this
    /// reply; `None` when `seq` is outside the window it reports.
    pub fn received(&self, seq: u64) -> Option<bool> {
        if seq > self.rx_max {
            return None;
        }
        let back = self.rx_max - seq;
        (back < 64).then(|| self.rx_bitmap >> back & 1 == 1)
    }
}

/// A request for a down train: `count` packets of `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrainRequest {
    pub session: u64,
    pub train: u64,
    pub count: u32,
    pub size: u32,
    pub token: u64,
}

impl TrainRequest {
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[..4].copy_from_slice(TRAIN_REQ_MAGIC);
        b[4..12].copy_from_slice(&self.session.to_be_bytes());
        b[12..20].copy_from_slice(&self.train.to_be_bytes());
        b[20..24].copy_from_slice(&self.count.to_be_bytes());
        b[24..28].copy_from_slice(&self.size.to_be_bytes());
        b[28..36].copy_from_slice(&self.token.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<TrainRequest> {
        if b.len() != REQUEST_LEN || &b[..4] != TRAIN_REQ_MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Some(TrainRequest { session: u64_at(b, 4), train: u64_at(b, 12), count: u32_at(20), size: u32_at(24), token: u64_at(b, 28) })
    }
}

/// One packet of a train (either direction): which train, which packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrainPacket {
    pub session: u64,
    pub train: u64,
    pub idx: u32,
}

impl TrainPacket {
    /// A packet of `size` bytes; `up` for the agent's, else the reflector's.
    pub fn encode(&self, size: u32, up: bool) -> Vec<u8> {
        let mut b = vec![0u8; size.clamp(MIN_TRAIN_SIZE, MAX_TRAIN_SIZE) as usize];
        b[..4].copy_from_slice(if up { TRAIN_UP_MAGIC } else { TRAIN_DOWN_MAGIC });
        b[4..12].copy_from_slice(&self.session.to_be_bytes());
        b[12..20].copy_from_slice(&self.train.to_be_bytes());
        b[20..24].copy_from_slice(&self.idx.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8], up: bool) -> Option<TrainPacket> {
        let magic = if up { TRAIN_UP_MAGIC } else { TRAIN_DOWN_MAGIC };
        if b.len() < MIN_TRAIN_SIZE as usize || b.len() > MAX_TRAIN_SIZE as usize || &b[..4] != magic {
            return None;
        }
        Some(TrainPacket { session: u64_at(b, 4), train: u64_at(b, 12), idx: u32::from_be_bytes(b[20..24].try_into().expect("4 bytes")) })
    }
}

/// The reflector's acknowledgement of an up-train packet, with its receive
/// time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrainAck {
    pub session: u64,
    pub train: u64,
    pub idx: u32,
    pub recv_ns: u64,
}

impl TrainAck {
    pub fn encode(&self) -> [u8; ACK_LEN] {
        let mut b = [0u8; ACK_LEN];
        b[..4].copy_from_slice(TRAIN_ACK_MAGIC);
        b[4..12].copy_from_slice(&self.session.to_be_bytes());
        b[12..20].copy_from_slice(&self.train.to_be_bytes());
        b[20..28].copy_from_slice(&self.recv_ns.to_be_bytes());
        b[28..32].copy_from_slice(&self.idx.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Option<TrainAck> {
        if b.len() != ACK_LEN || &b[..4] != TRAIN_ACK_MAGIC {
            return None;
        }
        Some(TrainAck { session: u64_at(b, 4), train: u64_at(b, 12), recv_ns: u64_at(b, 20), idx: u32::from_be_bytes(b[28..32].try_into().expect("4 bytes")) })
    }
}

/// What the reflector remembers of one session.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    max: u64,
    bitmap: u64,
    last_used: u64,
    last_train_ns: u64,
}

impl Seen {
    fn mark(&mut self, seq: u64) {
        if self.bitmap == 0 {
            (self.max, self.bitmap) = (seq, 1);
        } else if seq > self.max {
            let shift = seq - self.max;
            self.bitmap = if shift >= 64 { 0 } else { self.bitmap << shift } | 1;
            self.max = seq;
        } else if self.max - seq < 64 {
            self.bitmap |= 1 << (self.max - seq);
        }
    }
}

/// The reflector's state: sessions by id, bounded, and the key of its
/// address tokens.
pub struct Reflector {
    sessions: HashMap<u64, Seen>,
    tick: u64,
    key: std::collections::hash_map::RandomState,
}

impl Default for Reflector {
    fn default() -> Self {
        Reflector { sessions: HashMap::new(), tick: 0, key: std::collections::hash_map::RandomState::new() }
    }
}

impl Reflector {
    /// A keyed hash (SipHash with the reflector's random key) of the
    /// address and session: only who receives at `from` learns it.
    fn token(&self, from: IpAddr, session: u64) -> u64 {
        use std::hash::BuildHasher;
        self.key.hash_one((from, session))
    }

    /// What to send back for a datagram from `from` (nothing for anything
    /// that is not a well-formed message, or a train not allowed now).
    pub fn respond(&mut self, datagram: &[u8], from: SocketAddr, now_ns: u64, synced: bool) -> Vec<Vec<u8>> {
        if let Some(r) = self.answer(datagram, from, now_ns, synced) {
            return vec![r.to_vec()];
        }
        if let Some(p) = TrainPacket::decode(datagram, true) {
            return vec![TrainAck { session: p.session, train: p.train, idx: p.idx, recv_ns: now_ns }.encode().to_vec()];
        }
        if let Some(t) = TrainRequest::decode(datagram) {
            let valid = t.token == self.token(from.ip(), t.session) && (1..=MAX_TRAIN).contains(&t.count) && (MIN_TRAIN_SIZE..=MAX_TRAIN_SIZE).contains(&t.size);
            let Some(seen) = self.sessions.get_mut(&t.session).filter(|_| valid) else { return vec![] };
            if seen.last_train_ns != 0 && now_ns.saturating_sub(seen.last_train_ns) < TRAIN_SPACING_NS {
                return vec![];
            }
            seen.last_train_ns = now_ns;
            return (0..t.count).map(|idx| TrainPacket { session: t.session, train: t.train, idx }.encode(t.size, false)).collect();
        }
        vec![]
    }

    /// The reply to a probe from `from`, or nothing for anything that is
    /// not a probe.
    pub fn answer(&mut self, datagram: &[u8], from: SocketAddr, now_ns: u64, synced: bool) -> Option<[u8; REPLY_LEN]> {
        let req = Request::decode(datagram)?;
        let token = self.token(from.ip(), req.session);
        self.tick += 1;
        if !self.sessions.contains_key(&req.session) && self.sessions.len() >= MAX_SESSIONS {
            if let Some(oldest) = self.sessions.iter().min_by_key(|(_, s)| s.last_used).map(|(k, _)| *k) {
                self.sessions.remove(&oldest);
            }
        }
        let seen = self.sessions.entry(req.session).or_default();
        seen.mark(req.seq);
        seen.last_used = self.tick;
        Some(Reply { session: req.session, seq: req.seq, sent_ns: req.sent_ns, recv_ns: now_ns, rx_max: seen.max, rx_bitmap: seen.bitmap, synced, from, token, turnaround_us: 0 }.encode())
    }
}

fn turnaround_byte(us: u64) -> u8 {
    ((us + TURNAROUND_UNIT_US / 2) / TURNAROUND_UNIT_US).min(255) as u8
}

/// Writes the turnaround (µs) into an encoded reply about to be sent; any
/// other datagram is left as it is.
pub fn set_turnaround(datagram: &mut [u8], us: u64) {
    if datagram.len() == REPLY_LEN && &datagram[..4] == REP_MAGIC {
        datagram[79] = turnaround_byte(us);
    }
}

/// Answers probes on `socket` until it fails.
pub async fn serve(socket: tokio::net::UdpSocket) -> std::io::Result<()> {
    let mut state = Reflector::default();
    let mut buf = [0u8; 2048];
    // A request's receive time is when it reached the socket (the kernel's
    // stamp); the reply says how long after that it left, so that this
    // task's late wake-up on a busy machine counts in neither direction.
    super::stamp::enable(&socket)?;
    loop {
        let (n, from, at) = super::stamp::recv_from(&socket, &mut buf).await?;
        let synced = super::record::clock_state().synced;
        for mut reply in state.respond(&buf[..n], from, at, synced) {
            set_turnaround(&mut reply, aerolink_work::clock::now_ns().saturating_sub(at) / 1000);
            // A reply that cannot be sent now is a lost reply: the agent
            // counts it. (A train's packets go out back to back.)
            let _ = socket.send_to(&reply, from).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_round_trip_and_a_reply_is_never_larger() {
        let r = Request { session: 7, seq: 1 << 40, sent_ns: 123_456_789 };
        assert_eq!(Request::decode(&r.encode()), Some(r));
        for from in ["198.18.0.1:40000", "[2001:2::1]:9"] {
            let rep = Reply { session: 1, seq: 2, sent_ns: 3, recv_ns: 4, rx_max: 5, rx_bitmap: 6, synced: true, from: from.parse().unwrap(), token: 7, turnaround_us: 300 };
            assert_eq!(Reply::decode(&rep.encode()), Some(rep));
        }
    }

    /// The turnaround travels in one byte of 100 µs steps (rounded, capped
    /// at 25.5 ms), is written into a reply as it is sent and into nothing
    /// else, and a reply of a reflector without it reads as 0.
    #[test]
    fn the_turnaround_byte_rounds_caps_and_is_absent_from_old_replies() {
        let rep = Reply { session: 1, seq: 2, sent_ns: 3, recv_ns: 4, rx_max: 5, rx_bitmap: 6, synced: false, from: "198.18.0.1:9".parse().unwrap(), token: 7, turnaround_us: 0 };
        for (us, read) in [(0, 0), (49, 0), (50, 100), (1_234, 1_200), (25_500, 25_500), (10_000_000, MAX_TURNAROUND_US)] {
            let mut b = rep.encode().to_vec();
            set_turnaround(&mut b, us);
            assert_eq!(Reply::decode(&b).unwrap().turnaround_us, read, "{us} µs");
        }
        let old = &rep.encode()[..REPLY_LEN_V1];
        assert_eq!(Reply::decode(old), Some(rep));
        let mut ack = TrainAck { session: 1, train: 2, idx: 3, recv_ns: 4 }.encode().to_vec();
        let before = ack.clone();
        set_turnaround(&mut ack, 5_000);
        assert_eq!(ack, before);
    }

    #[test]
    fn the_reflector_answers_only_probes() {
        let mut r = Reflector::default();
        let from: SocketAddr = "198.18.0.1:1".parse().unwrap();
        assert!(r.answer(b"", from, 0, false).is_none());
        assert!(r.answer(&[0u8; REQUEST_LEN], from, 0, false).is_none());
        let mut req = Request { session: 1, seq: 0, sent_ns: 0 }.encode().to_vec();
        req.push(0);
        assert!(r.answer(&req, from, 0, false).is_none(), "a longer datagram is not a probe");
    }

    #[test]
    fn trains_go_only_to_an_address_that_proved_it_receives_there_once_a_second() {
        let mut r = Reflector::default();
        let me: SocketAddr = "198.18.0.1:5000".parse().unwrap();
        let other: SocketAddr = "198.18.0.9:5000".parse().unwrap();
        let reply = Reply::decode(&r.answer(&Request { session: 3, seq: 0, sent_ns: 0 }.encode(), me, 0, false).unwrap()).unwrap();
        let ask = |token, count, size| TrainRequest { session: 3, train: 1, count, size, token }.encode();
        // A forged token, a spoofed source, too many or too big: nothing.
        assert!(r.respond(&ask(reply.token ^ 1, 8, 1200), me, 1, false).is_empty());
        assert!(r.respond(&ask(reply.token, 8, 1200), other, 1, false).is_empty());
        assert!(r.respond(&ask(reply.token, MAX_TRAIN + 1, 1200), me, 1, false).is_empty());
        assert!(r.respond(&ask(reply.token, 8, MAX_TRAIN_SIZE + 1), me, 1, false).is_empty());
        let train = r.respond(&ask(reply.token, 8, 1200), me, 10, false);
        assert_eq!(train.len(), 8);
        assert!(train.iter().enumerate().all(|(i, p)| p.len() == 1200 && TrainPacket::decode(p, false) == Some(TrainPacket { session: 3, train: 1, idx: i as u32 })));
        assert!(r.respond(&ask(reply.token, 8, 1200), me, 10 + TRAIN_SPACING_NS / 2, false).is_empty(), "a second train within a second");
        assert_eq!(r.respond(&ask(reply.token, 8, 1200), me, 10 + TRAIN_SPACING_NS, false).len(), 8);
        // An up-train packet is acknowledged with a smaller datagram.
        let up = TrainPacket { session: 3, train: 2, idx: 5 }.encode(200, true);
        let ack = r.respond(&up, me, 42, false);
        assert_eq!(ack.len(), 1);
        assert!(ack[0].len() < up.len());
        assert_eq!(TrainAck::decode(&ack[0]), Some(TrainAck { session: 3, train: 2, idx: 5, recv_ns: 42 }));
    }

    #[test]
    fn the_bitmap_tells_which_requests_arrived() {
        let mut r = Reflector::default();
        let from: SocketAddr = "198.18.0.1:1".parse().unwrap();
        let mut last = None;
        // Requests 2 and 5 never arrive; 7 arrives late, after 8.
        for seq in [0u64, 1, 3, 4, 6, 8, 7] {
            last = r.answer(&Request { session: 9, seq, sent_ns: 0 }.encode(), from, 0, false);
        }
        let rep = Reply::decode(&last.unwrap()).unwrap();
        assert_eq!(rep.rx_max, 8);
        let got: Vec<Option<bool>> = (0..=9).map(|s| rep.received(s)).collect();
        let t = Some(true);
        let f = Some(false);
        assert_eq!(got, vec![t, t, f, t, t, f, t, t, t, None]);
        // A jump of more than 64 forgets the old window.
        let rep = Reply::decode(&r.answer(&Request { session: 9, seq: 200, sent_ns: 0 }.encode(), from, 0, false).unwrap()).unwrap();
        assert_eq!((rep.received(200), rep.received(199), rep.received(8)), (t, f, None));
    }
}
