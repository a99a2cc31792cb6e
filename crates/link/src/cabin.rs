//! Passengers behind one aircraft link: a cap per user (seed 000's Row 44
//! held each passenger to at most 100 kbit/s). Profile key `per_user`, in
//! `[link]`, `[up]` or `[down]`: `per_user = "100 kbit/s"`, or
//! `per_user = { rate = "100 kbit/s", queue = "30 packets" }`.
//!
//! A user is the passenger's address: the driver stamps each packet's
//! [`Meta::user`] (the pumps use the source address of what goes up and
//! the destination of what comes down). Each user has a queue of its own
//! (drop-tail, `queue`, 30 packets by default) served at `rate`, no burst
//! allowance: a user's packets leave this stage no faster than the cap,
//! then share the link's own queue and rate (`rate`, `queue`) first come,
//! first served. One user alone is the single-terminal case; a profile
//! without `per_user` builds no such stage.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::packet::{Drop, DropReason, Meta};
use crate::profile::keys::{only_keys, RawKeys};
use crate::profile::{DirectionSpec, Loader, ProfileError};
use crate::queue::{DropTail, QueueLimit};
use crate::registry::StageKind;
use crate::stage::{Stage, StageContext};
use crate::time::{Duration, Instant};
use crate::units::{self, Rate, Size};

/// The cap each user gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerUserSpec {
    pub rate_bps: f64,
    pub queue: QueueLimit,
}

/// The default per-user queue.
pub const DEFAULT_QUEUE: QueueLimit = QueueLimit::Packets(30);

struct User {
    queue: VecDeque<Meta>,
    accounting: DropTail,
    /// When this user's previous packet left.
    free_at: Instant,
    /// When the head leaves, once planned.
    head_end: Option<Instant>,
}

/// The stage: one rate-capped queue per user.
pub struct PerUser {
    spec: PerUserSpec,
    users: BTreeMap<u32, User>,
    /// Planned departures of each user's head, earliest first.
    due: BTreeSet<(Instant, u32)>,
    packets: usize,
}

impl PerUser {
    pub fn new(spec: PerUserSpec) -> Self {
        PerUser { spec, users: BTreeMap::new(), due: BTreeSet::new(), packets: 0 }
    }

    fn tx_time(&self, bytes: u32) -> Duration {
        Duration(((bytes as u64 * 8) as f64 * 1e9 / self.spec.rate_bps).ceil() as u64)
    }

    /// Plans the departure of `user`'s head, if it has one.
    fn plan(&mut self, user: u32) {
        let Some(u) = self.users.get(&user) else { return };
        let Some(head) = u.queue.front() else { return };
        let end = head.due.max(u.free_at) + self.tx_time(head.len);
        if let Some(u) = self.users.get_mut(&user) {
            u.head_end = Some(end);
        }
        self.due.insert((end, user));
    }
}

impl Stage for PerUser {
    fn name(&self) -> &'static str {
        "per_user"
    }

    fn enqueue(&mut self, at: Instant, mut pkt: Meta, drops: &mut Vec<Drop>) {
        pkt.due = at;
        let limit = self.spec.queue;
        let u = self.users.entry(pkt.user).or_insert_with(|| User { queue: VecDeque::new(), accounting: DropTail::new(limit), free_at: Instant::ZERO, head_end: None });
        if !u.accounting.admit(pkt.len) {
            drops.push(Drop { meta: pkt, at, reason: DropReason::Queue });
            return;
        }
        u.queue.push_back(pkt);
        self.packets += 1;
        if u.head_end.is_none() {
            self.plan(pkt.user);
        }
    }

    fn next_wakeup(&self) -> Option<Instant> {
        self.due.first().map(|d| d.0)
    }

    /// The next packet whose user's cap lets it go by `now`, in order of
    /// departure (ties by user), with `due` = that departure.
    fn dequeue(&mut self, now: Instant, _drops: &mut Vec<Drop>) -> Option<Meta> {
        let &(end, user) = self.due.first().filter(|d| d.0 <= now)?;
        self.due.remove(&(end, user));
        let u = self.users.get_mut(&user).expect("a planned user exists");
        let mut p = u.queue.pop_front().expect("a planned user has a head");
        u.accounting.release(p.len);
        u.free_at = end;
        u.head_end = None;
        self.packets -= 1;
        if !u.queue.is_empty() {
            self.plan(user);
        }
        p.due = end;
        Some(p)
    }

    fn is_aggregate_safe(&self) -> bool {
        false
    }

    fn backlog_bytes(&self) -> u64 {
        self.users.values().map(|u| u.accounting.bytes()).sum()
    }

    fn in_flight(&self) -> usize {
        self.packets
    }

    fn cut(&mut self, at: Instant, drops: &mut Vec<Drop>) {
        for (_, u) in std::mem::take(&mut self.users) {
            for p in u.queue {
                drops.push(Drop { meta: p, at, reason: DropReason::Outage });
            }
        }
        self.due.clear();
        self.packets = 0;
    }
}

/// The per-user cap in the stage registry: key `per_user`.
pub struct Kind;

pub static KIND: Kind = Kind;

const HELP: &str = "a rate per passenger like \"100 kbit/s\", or { rate = \"100 kbit/s\", queue? = \"30 packets\" }";

impl StageKind for Kind {
    fn name(&self) -> &'static str {
        "per_user"
    }
    fn keys(&self) -> &'static [&'static str] {
        &["per_user"]
    }
    fn parse(&self, raw: &RawKeys, _load: Loader<'_>, d: &mut DirectionSpec) -> Result<(), ProfileError> {
        let Some(r) = raw.get("per_user") else { return Ok(()) };
        // parse_rate refuses 0 and below.
        let rate = |s: &str, key: &str| -> Result<f64, ProfileError> { Ok(units::parse_rate(s).map_err(|m| r.err(format!("{key}expected {m}")))?.bits_per_sec) };
        let spec = match &r.value {
            toml::Value::String(s) => PerUserSpec { rate_bps: rate(s, "")?, queue: DEFAULT_QUEUE },
            toml::Value::Table(t) => {
                only_keys(r, t, &["rate", "queue"])?;
                let Some(s) = t.get("rate").and_then(|v| v.as_str()) else { return Err(r.err(format!("rate: expected {HELP}"))) };
                let queue = match t.get("queue") {
                    None => DEFAULT_QUEUE,
                    Some(v) => {
                        let q = v.as_str().ok_or_else(|| r.err(format!("queue: expected {} in quotes", units::SIZE_HELP)))?;
                        match units::parse_size(q).map_err(|m| r.err(format!("queue: expected {m}")))? {
                            Size::Bytes(0) | Size::Packets(0) => return Err(r.err("queue: a queue must hold at least one packet")),
                            size => size.into(),
                        }
                    }
                };
                PerUserSpec { rate_bps: rate(s, "rate: ")?, queue }
            }
            _ => return Err(r.err(format!("expected {HELP}"))),
        };
        d.described.insert("per_user".into(), format!("{} each, queue {}", Rate::from_bps(spec.rate_bps), spec.queue));
        d.per_user = Some(spec);
        Ok(())
    }
    fn build(&self, spec: &DirectionSpec, _ctx: &StageContext) -> Option<Box<dyn Stage>> {
        spec.per_user.map(|s| Box::new(PerUser::new(s)) as Box<dyn Stage>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    fn pipeline(rate: &str, link_rate: &str) -> Pipeline<()> {
        let text = format!("[down]\nper_user = \"{rate}\"\nrate = \"{link_rate}\"\nqueue = \"1000 packets\"\n");
        let p = crate::Profile::parse(&text, "t.toml", &[], &mut |_| Err("no files".into())).expect("a profile");
        Pipeline::new(&p.down, Duration::ZERO, 1, 0)
    }

    /// Bytes each user got by `until`, sending `per_user` packets of 1000 B
    /// each at time 0.
    fn delivered(p: &mut Pipeline<()>, users: &[u32], per_user: usize, until: Instant) -> BTreeMap<u32, u64> {
        for _ in 0..per_user {
            for &u in users {
                p.enqueue_for(Instant::ZERO, 1000, u, ());
            }
        }
        let mut got = BTreeMap::new();
        let mut t = Instant::ZERO;
        while t <= until {
            while let Some(pkt) = p.dequeue(t) {
                if pkt.meta.due <= until {
                    *got.entry(pkt.meta.user).or_insert(0) += pkt.meta.len as u64;
                }
            }
            t = t + Duration::from_millis(1);
        }
        got
    }

    #[test]
    fn each_user_is_held_to_the_cap_and_the_link_shares_the_rest() {
        // 100 kbit/s each over a 1 Mbit/s link: three users get 100 kbit/s
        // each (12.5 KB/s), not the link's rate.
        let mut p = pipeline("100 kbit/s", "1 Mbit/s");
        let got = delivered(&mut p, &[1, 2, 3], 25, Instant(2_000_000_000));
        for u in [1, 2, 3] {
            // 100 kbit/s for 2 s = 25 000 B, one packet's rounding.
            let b = got[&u];
            assert!((24_000..=25_000).contains(&b), "user {u}: {b} B in 2 s");
        }
    }

    #[test]
    fn a_full_user_queue_drops_only_that_users_packets() {
        let mut p = pipeline("100 kbit/s", "10 Mbit/s");
        for _ in 0..40 {
            p.enqueue_for(Instant::ZERO, 1000, 7, ());
        }
        p.enqueue_for(Instant::ZERO, 1000, 8, ());
        let drops: Vec<_> = p.take_drops().collect();
        assert_eq!(drops.len(), 10, "30 of user 7's 40 packets queued");
        assert!(drops.iter().all(|d| d.meta.user == 7 && d.reason == DropReason::Queue));
    }

    /// The order in which users' packets leave a 1 Mbit/s link that
    /// user 1 floods with 50 packets just before user 2 sends 5.
    fn departures(share: &str) -> Vec<u32> {
        let text = format!("[down]\nrate = \"1 Mbit/s\"\nqueue = \"100 packets\"\nshare = \"{share}\"\n");
        let prof = crate::Profile::parse(&text, "t.toml", &[], &mut |_| Err("no files".into())).expect("a profile");
        let mut p: Pipeline<()> = Pipeline::new(&prof.down, Duration::ZERO, 1, 0);
        for _ in 0..50 {
            p.enqueue_for(Instant::ZERO, 1000, 1, ());
        }
        for _ in 0..5 {
            p.enqueue_for(Instant::ZERO, 1000, 2, ());
        }
        let mut out = Vec::new();
        while let Some(pkt) = p.dequeue(Instant(10_000_000_000)) {
            out.push(pkt.meta.user);
        }
        out
    }

    #[test]
    fn fair_sharing_serves_a_light_passenger_beside_a_heavy_one() {
        let fifo = departures("fifo");
        assert_eq!(fifo.len(), 55);
        assert_eq!(fifo.iter().position(|&u| u == 2), Some(50), "first come, first served: after the flood");
        let fair = departures("fair");
        assert_eq!(fair.len(), 55);
        let last_of_2 = fair.iter().rposition(|&u| u == 2).expect("user 2's packets left");
        // Equal bytes per round (1500 B each): user 2's five go within
        // the first dozen departures, not after fifty.
        assert!(last_of_2 <= 12, "in turn with the flood: {fair:?}");
    }

    #[test]
    fn bad_values_are_one_clear_line() {
        for (v, want) in
            [("\"0 kbit/s\"", "greater than zero"), ("{ queue = \"3 packets\" }", "rate: expected"), ("{ rate = \"1 Mbit/s\", burst = 1 }", "unknown key"), ("7", "expected a rate per passenger")]
        {
            let text = format!("[down]\nper_user = {v}\n");
            let e = crate::Profile::parse(&text, "t.toml", &[], &mut |_| Err("no files".into())).expect_err(v).to_string();
            assert!(e.contains("t.toml") && e.contains("per_user") && e.contains(want), "{v}: {e}");
        }
        let e = crate::Profile::parse("[up]\nshare = \"round-robin\"\n", "t.toml", &[], &mut |_| Err("no files".into())).expect_err("share").to_string();
        assert!(e.contains("up.share") && e.contains("\"fair\""), "{e}");
    }
}
