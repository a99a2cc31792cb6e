//! The link's queue when passengers share it fairly (`share = "fair"`):
//! one queue per user ([`Meta::user`]) served by deficit round robin, one
//! full-size packet's worth of bytes per user per round, so each busy user
//! gets an equal share of the rate whatever its packet sizes or how many
//! connections it opens. When the link's buffer (`queue`) is full, the
//! longest user queue loses its last packet (the arrival, if its own
//! queue is the longest): a user who floods the buffer cannot starve the
//! others of it.

use std::collections::{BTreeMap, VecDeque};

use crate::packet::Meta;

/// Bytes a user may send per round: one 1500-byte packet.
pub const QUANTUM: u64 = 1500;

#[derive(Default)]
pub struct FairQueue {
    /// Each user's packets, oldest first (only users with some).
    queues: BTreeMap<u32, VecDeque<Meta>>,
    bytes: BTreeMap<u32, u64>,
    /// Users with packets, in round-robin order.
    active: VecDeque<u32>,
    deficit: BTreeMap<u32, u64>,
    /// The user whose head goes next, once chosen (it stays chosen until
    /// popped, so the link plans and sends the same packet).
    next: Option<u32>,
    len: usize,
}

impl FairQueue {
    pub fn push(&mut self, m: Meta) {
        let q = self.queues.entry(m.user).or_default();
        if q.is_empty() {
            self.active.push_back(m.user);
        }
        q.push_back(m);
        *self.bytes.entry(m.user).or_default() += m.len as u64;
        self.len += 1;
    }

    /// The packet that goes next (chosen now if not yet).
    pub fn peek(&mut self) -> Option<&Meta> {
        if self.next.is_none() {
            // Each turn adds a quantum to the front user's deficit, so a
            // packet of at most 64 KB is chosen within 44 turns of it.
            loop {
                let u = *self.active.front()?;
                let need = self.queues[&u].front().map_or(0, |m| m.len as u64);
                let d = self.deficit.entry(u).or_default();
                if *d >= need {
                    self.next = Some(u);
                    break;
                }
                *d += QUANTUM;
                self.active.rotate_left(1);
            }
        }
        self.next.and_then(|u| self.queues.get(&u)).and_then(|q| q.front())
    }

    /// Takes the packet [`peek`](Self::peek) chose.
    pub fn pop(&mut self) -> Option<Meta> {
        self.peek()?;
        let u = self.next.take()?;
        let q = self.queues.get_mut(&u)?;
        let m = q.pop_front()?;
        self.len -= 1;
        *self.bytes.entry(u).or_default() -= m.len as u64;
        let d = self.deficit.entry(u).or_default();
        *d = d.saturating_sub(m.len as u64);
        if q.is_empty() {
            // An idle user keeps no credit (DRR).
            self.queues.remove(&u);
            self.bytes.remove(&u);
            self.deficit.remove(&u);
            self.active.retain(|&x| x != u);
        }
        Some(m)
    }

    /// Makes room: the last packet of the longest queue (by bytes), unless
    /// that is `arriving`'s own queue or only the packet chosen to go next.
    pub fn evict_for(&mut self, arriving: u32) -> Option<Meta> {
        let (&u, _) = self.bytes.iter().max_by_key(|(&u, &b)| (b, std::cmp::Reverse(u)))?;
        let mine = self.bytes.get(&arriving).copied().unwrap_or(0);
        if u == arriving || self.bytes[&u] <= mine {
            return None;
        }
        let q = self.queues.get_mut(&u)?;
        if q.len() == 1 && self.next == Some(u) {
            return None;
        }
        let m = q.pop_back()?;
        self.len -= 1;
        *self.bytes.entry(u).or_default() -= m.len as u64;
        Some(m)
    }

    /// Empties the queue (a cut), oldest first per user.
    pub fn drain(&mut self) -> Vec<Meta> {
        let out = std::mem::take(&mut self.queues).into_values().flatten().collect();
        *self = FairQueue::default();
        out
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use crate::time::Instant;

    fn pkt(id: u64, user: u32, len: u32) -> Meta {
        let mut m = Packet::new(id, len, Instant::ZERO, ()).meta;
        m.user = user;
        m
    }

    #[test]
    fn busy_users_get_equal_bytes_whatever_their_packet_sizes() {
        let mut q = FairQueue::default();
        // User 1 sends 1500-byte packets, user 2 sends 500-byte ones,
        // user 3 only two packets.
        for i in 0..100 {
            q.push(pkt(i, 1, 1500));
            q.push(pkt(1000 + i, 2, 500));
            q.push(pkt(1000 + i, 2, 500));
            q.push(pkt(1000 + i, 2, 500));
        }
        q.push(pkt(5000, 3, 1500));
        q.push(pkt(5001, 3, 1500));
        let mut sent: BTreeMap<u32, u64> = BTreeMap::new();
        for _ in 0..100 {
            let m = q.pop().expect("packets left");
            *sent.entry(m.user).or_default() += m.len as u64;
        }
        assert_eq!(sent[&3], 3000, "the light user is served in full");
        let (a, b) = (sent[&1] as f64, sent[&2] as f64);
        assert!((a / b - 1.0).abs() < 0.05, "user 1 {a} B, user 2 {b} B");
    }

    #[test]
    fn a_full_buffer_takes_from_the_longest_queue() {
        let mut q = FairQueue::default();
        for i in 0..10 {
            q.push(pkt(i, 1, 1000));
        }
        q.push(pkt(10, 2, 1000));
        assert_eq!(q.peek().map(|m| m.user), Some(1));
        let out = q.evict_for(2).expect("user 1's queue is the longest");
        assert_eq!((out.user, out.id), (1, 9), "its last packet");
        assert!(q.evict_for(1).is_none(), "a flooding user loses its own arrival");
        assert_eq!(q.len(), 10);
        let mut one = FairQueue::default();
        one.push(pkt(0, 4, 1000));
        one.peek();
        assert!(one.evict_for(5).is_none(), "never the packet chosen to go next");
    }
}
