//! What a shard has received: the Zenoh callbacks decode every message straight into a slot of
//! its burst (no thread hop, no allocation once the buffers have grown); the burst thread waits on
//! a condition variable until the burst it needs is complete, a peer is lost, a directive arrives
//! or the timeout passes.
//!
//! Slots form a ring of [`RING`] bursts from `base` (the burst being gathered): a peer is at most
//! one burst ahead (it needs this shard's spikes to go further). A message beyond the ring, or
//! older than a peer's resends, is counted and dropped (`stray`): it stops nothing by itself. Only
//! when the peers' spikes do not come in time does a message far ahead say that this shard fell
//! behind (the others went on without it: `ahead`), so a forged one cannot stop a shard.
//!
//! Trust: a message is taken only as its key's shard's (spikes inside that shard's neurons, input
//! for this shard only from the io shard's keys) and a directive only as the io shard's (`from`,
//! and a membership that holds the io shard and no shard beyond the cluster); Zenoh's access
//! control (config/zenoh/cluster_mtls.json5: each shard its own certificate, allowed only its own
//! keys) makes the key the sender's identity.

use std::ops::Range;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::wire::{self, DataKind, Directive, Keys};
use crate::model::Injection;

pub const RING: usize = 4;
/// Bursts before `base` whose messages peers may still send (a shard resends its last two bursts'
/// while it waits); an older one is stray.
const RESENT: u64 = 2;
/// Messages of a future epoch kept until the directive that opens it (a rejoining shard sees
/// the old epoch's traffic first; those are dropped first).
const PENDING_MAX: usize = 256;
/// ... and at most this many bytes of them.
const PENDING_BYTES: usize = 64 << 20;

#[derive(Default)]
struct EpochSlot {
    burst: u64,
    /// Shards whose spikes of `burst` are here.
    have: u64,
    spikes: Vec<Vec<u32>>,
    input: Vec<Injection>,
    has_input: bool,
}

struct Pending {
    epoch: u32,
    burst: u64,
    key: String,
    bytes: Vec<u8>,
}

/// The state behind the lock.
pub struct Inbox {
    me: usize,
    ranges: Vec<Range<u32>>,
    keys: Keys,
    epoch: u32,
    base: u64,
    slots: Vec<EpochSlot>,
    pending: Vec<Pending>,
    /// The newest directive seen (any epoch).
    pub directive: Option<Directive>,
    /// Shards whose member token is present.
    pub alive: u64,
    /// Shards whose token was present at some time since the epoch began: a token that goes is
    /// a loss; one never seen yet (a peer's link still coming up) is not.
    pub seen: u64,
    /// Shards whose token appeared (again) since the io shard last looked.
    pub appeared: u64,
    /// Each shard's present token key and the checkpoint burst it advertises.
    tokens: Vec<Option<(String, u64)>>,
    /// When each shard's token went (None: present, or never seen).
    gone_at: Vec<Option<Instant>>,
    /// A peer's message far beyond `base` in this epoch: (shard, burst).
    pub ahead: Option<(usize, u64)>,
    /// Messages that could not be decoded, and the first error.
    pub malformed: u64,
    pub first_error: Option<String>,
    /// Well-formed messages of this epoch for a burst outside the window (beyond the ring, or
    /// older than the peers' resends): dropped.
    pub stray: u64,
    /// Directives that cannot be the io shard's (another sender, a membership without the io
    /// shard or with shards beyond the cluster): dropped.
    pub forged: u64,
    /// The io shard, the only one whose directives count.
    io: usize,
}

/// The inbox and its condition variable.
pub struct SharedInbox {
    inbox: Mutex<Inbox>,
    changed: Condvar,
}

impl SharedInbox {
    /// The inbox of shard `me` of the shards owning `ranges`, `io` the io shard.
    pub fn new(me: usize, io: usize, ranges: Vec<Range<u32>>, keys: Keys) -> SharedInbox {
        let n = ranges.len();
        let slots = (0..RING).map(|_| EpochSlot { spikes: vec![Vec::new(); n], ..Default::default() }).collect();
        let inbox = Inbox {
            me,
            ranges,
            keys,
            epoch: 0,
            base: 0,
            slots,
            pending: Vec::new(),
            directive: None,
            alive: 0,
            seen: 0,
            appeared: 0,
            tokens: vec![None; n],
            gone_at: vec![None; n],
            ahead: None,
            malformed: 0,
            first_error: None,
            stray: 0,
            forged: 0,
            io,
        };
        SharedInbox { inbox: Mutex::new(inbox), changed: Condvar::new() }
    }

    pub fn lock(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until notified or `deadline`; false when the deadline has passed.
    pub fn wait<'a>(&self, guard: MutexGuard<'a, Inbox>, deadline: Instant) -> (MutexGuard<'a, Inbox>, bool) {
        let now = Instant::now();
        if now >= deadline {
            return (guard, false);
        }
        let (g, _) = self.changed.wait_timeout(guard, deadline - now).unwrap_or_else(|p| p.into_inner());
        (g, Instant::now() < deadline)
    }

    /// A data sample (spikes or input) from Zenoh.
    pub fn on_data(&self, key: &str, bytes: &[u8]) {
        let mut g = self.lock();
        if let Err(e) = g.accept(key, bytes, true) {
            g.malformed += 1;
            if g.malformed <= 10 {
                tracing::warn!("dropped a malformed message: {e}");
            }
            g.first_error.get_or_insert(e.to_string());
        }
        drop(g);
        self.changed.notify_all();
    }

    /// A directive on the control key.
    pub fn on_control(&self, key: &str, bytes: &[u8]) {
        let mut g = self.lock();
        match Directive::decode(key, bytes) {
            Ok(d) => {
                let (io, n) = (g.io, g.ranges.len());
                let beyond = if n >= 64 { 0 } else { d.members >> n };
                if d.from != io || d.members & (1 << io) == 0 || beyond != 0 {
                    g.forged += 1;
                    if g.forged <= 10 {
                        tracing::warn!(
                            "dropped a directive that is not the io shard's: from shard {}, members {} (the io shard is {io} of {n})",
                            d.from,
                            wire::list(d.members)
                        );
                    }
                } else if g.directive.is_none_or(|old| d.epoch > old.epoch) {
                    g.directive = Some(d);
                }
            }
            Err(e) => {
                g.malformed += 1;
                tracing::warn!("dropped a malformed directive: {e}");
            }
        }
        drop(g);
        self.changed.notify_all();
    }

    /// A member token appeared (`put`) or went away.
    pub fn on_token(&self, key: &str, put: bool) {
        tracing::debug!("member token {key}: {}", if put { "declared" } else { "gone" });
        let mut g = self.lock();
        match g.keys.parse_member(key) {
            Ok((k, ckpt)) if k < g.tokens.len() => {
                let bit = 1u64 << k;
                if put {
                    if g.tokens[k].as_ref().is_none_or(|(old, _)| old != key) {
                        g.tokens[k] = Some((key.to_string(), ckpt));
                        g.gone_at[k] = None;
                        g.alive |= bit;
                        g.seen |= bit;
                        g.appeared |= bit;
                    }
                } else if g.tokens[k].as_ref().is_some_and(|(old, _)| old == key) {
                    g.tokens[k] = None;
                    g.gone_at[k] = Some(Instant::now());
                    g.alive &= !bit;
                }
            }
            Ok((k, _)) => tracing::warn!("member token {key}: shard {k} is not in this cluster"),
            Err(e) => tracing::warn!("{e}"),
        }
        drop(g);
        self.changed.notify_all();
    }
}

impl Inbox {
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The checkpoint burst that shard `k`'s token advertises.
    pub fn checkpoint_of(&self, k: usize) -> Option<u64> {
        self.tokens.get(k).and_then(|t| t.as_ref().map(|(_, c)| *c))
    }

    /// Shards whose token has been gone for at least `grace` at `now`, and the earliest time
    /// at which another one will have been (None: no token is within its grace).
    pub fn gone_for(&self, grace: Duration, now: Instant) -> (u64, Option<Instant>) {
        let mut lost = 0;
        let mut next: Option<Instant> = None;
        for (k, at) in self.gone_at.iter().enumerate() {
            if self.alive & (1 << k) != 0 {
                continue;
            }
            match at {
                Some(at) if *at + grace > now => next = Some(next.map_or(*at + grace, |n| n.min(*at + grace))),
                _ => lost |= 1 << k,
            }
        }
        (lost, next)
    }

    fn slot(&mut self, burst: u64) -> Option<&mut EpochSlot> {
        if burst < self.base || burst >= self.base + RING as u64 {
            return None;
        }
        let s = &mut self.slots[(burst % RING as u64) as usize];
        debug_assert_eq!(s.burst, burst);
        Some(s)
    }

    fn accept(&mut self, key: &str, bytes: &[u8], may_pend: bool) -> Result<(), wire::WireError> {
        let (topic, burst, shard) = self.keys.parse_data(key)?;
        if shard >= self.ranges.len() {
            return Err(wire::WireError { key: key.into(), message: format!("shard {shard} is not in this cluster") });
        }
        let h = wire::decode_header(key, bytes, topic, burst, shard)?;
        if h.epoch < self.epoch {
            return Ok(());
        }
        if h.epoch > self.epoch {
            if may_pend {
                self.pend(Pending { epoch: h.epoch, burst, key: key.to_string(), bytes: bytes.to_vec() });
            }
            return Ok(());
        }
        if burst >= self.base + RING as u64 {
            // evidence that this shard is behind, taken only if the peers fall silent
            self.ahead = Some((shard, burst));
            self.stray += 1;
            return Ok(());
        }
        if burst + RESENT < self.base {
            self.stray += 1;
            return Ok(());
        }
        let (me, range) = (self.me, self.ranges[shard].clone());
        let own = self.ranges[me].clone();
        let Some(slot) = self.slot(burst) else { return Ok(()) };
        match topic {
            DataKind::Spikes => {
                if shard == me || slot.have & (1 << shard) != 0 {
                    return Ok(());
                }
                slot.spikes[shard].clear();
                wire::decode_spikes(key, bytes, &h, &range, &mut slot.spikes[shard])?;
                slot.have |= 1 << shard;
            }
            DataKind::Input => {
                if shard != me || slot.has_input {
                    return Ok(());
                }
                slot.input.clear();
                wire::decode_input(key, bytes, &h, &own, &mut slot.input)?;
                slot.has_input = true;
            }
        }
        Ok(())
    }

    /// Keep `p` for its epoch's directive, the oldest kept dropped first to stay within
    /// [`PENDING_MAX`] messages and [`PENDING_BYTES`] bytes.
    fn pend(&mut self, p: Pending) {
        if p.bytes.len() > PENDING_BYTES {
            self.stray += 1;
            return;
        }
        let bytes = |pending: &[Pending]| pending.iter().map(|q| q.bytes.len()).sum::<usize>();
        while !self.pending.is_empty() && (self.pending.len() >= PENDING_MAX || bytes(&self.pending) + p.bytes.len() > PENDING_BYTES) {
            let oldest = (0..self.pending.len()).min_by_key(|&i| (self.pending[i].epoch, self.pending[i].burst)).unwrap_or(0);
            self.pending.swap_remove(oldest);
        }
        self.pending.push(p);
    }

    /// Start epoch `epoch` at burst `base`: empty slots, then the kept messages of that epoch.
    pub fn rebase(&mut self, epoch: u32, base: u64) {
        self.epoch = epoch;
        self.base = base;
        self.ahead = None;
        self.seen = self.alive;
        for b in base..base + RING as u64 {
            let s = &mut self.slots[(b % RING as u64) as usize];
            s.burst = b;
            s.have = 0;
            s.has_input = false;
        }
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            if p.epoch == epoch {
                if let Err(e) = self.accept(&p.key, &p.bytes, false) {
                    self.malformed += 1;
                    tracing::warn!("dropped a malformed message: {e}");
                }
            } else if p.epoch > epoch {
                self.pending.push(p);
            }
        }
    }

    /// Shards of `members` (other than this one) whose spikes of `burst` are missing.
    pub fn missing(&self, burst: u64, members: u64) -> u64 {
        let have = if burst >= self.base && burst < self.base + RING as u64 { self.slots[(burst % RING as u64) as usize].have } else { 0 };
        members & !(1 << self.me) & !have
    }

    pub fn has_input(&self, burst: u64) -> bool {
        burst >= self.base && burst < self.base + RING as u64 && self.slots[(burst % RING as u64) as usize].has_input
    }

    /// Move the input of `burst` into `input` (the buffers are swapped, not copied; empty when
    /// none came).
    pub fn take_input(&mut self, burst: u64, input: &mut Vec<Injection>) {
        input.clear();
        if self.has_input(burst) {
            let j = (burst % RING as u64) as usize;
            std::mem::swap(&mut self.slots[j].input, input);
            self.slots[j].has_input = false;
        }
    }

    /// Move the spikes of `burst` of `members` into `out` (shard `k`'s ids in `out[k]`; the
    /// buffers are swapped, not copied); then drop the slot of `burst` and open the one of
    /// `burst + RING`.
    pub fn take(&mut self, burst: u64, members: u64, out: &mut [Vec<u32>]) {
        assert_eq!(burst, self.base, "bursts are taken in order");
        let i = (burst % RING as u64) as usize;
        for k in wire::shards_of(members & self.slots[i].have) {
            std::mem::swap(&mut self.slots[i].spikes[k], &mut out[k]);
        }
        let s = &mut self.slots[i];
        s.burst = burst + RING as u64;
        s.have = 0;
        s.has_input = false;
        self.base = burst + 1;
        // the peers are with this shard: what claimed otherwise was not them
        self.ahead = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Potential;

    fn spikes(keys: &Keys, shard: usize, epoch: u32, burst: u64, ids: &[u32]) -> (String, Vec<u8>) {
        let mut k = String::new();
        keys.data(DataKind::Spikes, burst, shard, &mut k);
        let mut b = Vec::new();
        wire::encode_spikes(&mut b, shard, epoch, burst, ids);
        (k, b)
    }

    fn shared() -> (SharedInbox, Keys) {
        let keys = Keys::new("t");
        (SharedInbox::new(1, 0, vec![0..10, 10..20, 20..30], keys.clone()), keys)
    }

    #[test]
    fn slots_fill_and_rotate() {
        let (s, keys) = shared();
        s.lock().rebase(1, 5);
        let (k, b) = spikes(&keys, 0, 1, 5, &[1, 2]);
        s.on_data(&k, &b);
        let (k, b) = spikes(&keys, 2, 1, 6, &[25]); // a peer one burst ahead
        s.on_data(&k, &b);
        let (k, b) = spikes(&keys, 2, 1, 5, &[21]);
        s.on_data(&k, &b);
        let (k, b) = spikes(&keys, 0, 0, 5, &[3]); // an old epoch: ignored
        s.on_data(&k, &b);
        let mut key = String::new();
        keys.data(DataKind::Input, 6, 1, &mut key);
        let mut ib = Vec::new();
        wire::encode_input(&mut ib, 1, 1, 6, [Injection { neuron: 12, potential: Potential(7) }].into_iter());
        s.on_data(&key, &ib);
        let mut g = s.lock();
        assert_eq!(g.missing(5, 0b111), 0);
        assert_eq!(g.missing(6, 0b111), 0b001);
        assert!(g.has_input(6));
        let mut out = vec![Vec::new(); 3];
        let mut input = Vec::new();
        g.take(5, 0b111, &mut out);
        g.take_input(6, &mut input);
        assert_eq!(out, vec![vec![1, 2], vec![], vec![21]]);
        assert_eq!(input, vec![Injection { neuron: 12, potential: Potential(7) }]);
        assert_eq!(g.missing(6, 0b111), 0b001);
        g.take(6, 0b101, &mut out);
        g.take_input(7, &mut input);
        assert_eq!(out[2], vec![25]);
        assert!(input.is_empty());
        assert_eq!(g.malformed, 0);
    }

    #[test]
    fn future_epochs_wait_for_their_directive_and_far_bursts_mean_behind() {
        let (s, keys) = shared();
        s.lock().rebase(1, 0);
        let (k, b) = spikes(&keys, 0, 2, 300, &[4]);
        s.on_data(&k, &b);
        assert_eq!(s.lock().missing(300, 0b101), 0b101);
        s.lock().rebase(2, 300);
        assert_eq!(s.lock().missing(300, 0b101), 0b100);
        let (k, b) = spikes(&keys, 2, 2, 310, &[24]);
        s.on_data(&k, &b);
        assert_eq!(s.lock().ahead, Some((2, 310)));
        let g = s.lock();
        assert_eq!((g.stray, g.malformed), (1, 0), "counted and dropped, not malformed");
        drop(g);
        // the peers' spikes come after all: the claim is forgotten
        for shard in [0, 2] {
            let (k, b) = spikes(&keys, shard, 2, 300, &[]);
            s.on_data(&k, &b);
        }
        s.lock().take(300, 0b101, &mut vec![Vec::new(); 3]);
        assert_eq!(s.lock().ahead, None);
        // a peer's resend of the last bursts is fine; a burst long past is stray
        let (k, b) = spikes(&keys, 0, 2, 299, &[4]);
        s.on_data(&k, &b);
        assert_eq!(s.lock().stray, 1);
        let (k, b) = spikes(&keys, 0, 2, 5, &[4]);
        s.on_data(&k, &b);
        assert_eq!(s.lock().stray, 2);
    }

    #[test]
    fn only_the_io_shards_directives_count() {
        let (s, _) = shared();
        s.lock().rebase(1, 0);
        let d = |from, members| Directive { from, epoch: 2, resume: 0, members, last: 0 }.encode();
        s.on_control("c", &d(2, 0b110)); // another shard: not the io shard (0)
        s.on_control("c", &d(0, 0b110)); // a membership without the io shard
        s.on_control("c", &d(0, 0b1111)); // a shard beyond the cluster's three
        let g = s.lock();
        assert_eq!((g.forged, g.directive), (3, None));
        drop(g);
        s.on_control("c", &d(0, 0b101));
        assert_eq!(s.lock().directive.map(|d| d.members), Some(0b101));
    }

    #[test]
    fn bad_messages_are_counted_and_tokens_tracked() {
        let (s, keys) = shared();
        s.lock().rebase(1, 0);
        let (k, b) = spikes(&keys, 0, 1, 0, &[15]); // outside shard 0's range
        s.on_data(&k, &b);
        s.on_data("neuroburst/t/spikes/0/9", &b);
        s.on_data("neuroburst/t/spikes/0/0", &b[..3]);
        assert_eq!(s.lock().malformed, 3);
        assert!(s.lock().first_error.as_ref().unwrap().contains("neuroburst/t/spikes/0/0"));
        let view = |s: &SharedInbox| {
            let g = s.lock();
            (g.alive, g.seen, g.checkpoint_of(2))
        };
        s.on_token(&keys.member(2, 100, "z1"), true);
        assert_eq!(view(&s), (0b100, 0b100, Some(100)));
        s.on_token(&keys.member(2, 200, "z2"), true); // a restarted shard 2
        s.on_token(&keys.member(2, 100, "z1"), false); // the old token's late removal: ignored
        assert_eq!(view(&s), (0b100, 0b100, Some(200)));
        s.lock().appeared = 0;
        s.on_token(&keys.member(2, 200, "z3"), true); // restarted again, same checkpoint
        assert_eq!(s.lock().appeared, 0b100, "a new session's token is a new arrival");
        s.on_token(&keys.member(2, 200, "z2"), false);
        assert_eq!(view(&s), (0b100, 0b100, Some(200)));
        s.on_token(&keys.member(2, 200, "z3"), false);
        assert_eq!(view(&s), (0, 0b100, None), "gone after seen: a loss");
        s.lock().rebase(2, 0);
        assert_eq!(view(&s).1, 0, "a new epoch forgets tokens that are gone");
        s.on_control("c", &Directive { from: 0, epoch: 2, resume: 0, members: 7, last: 0 }.encode());
        s.on_control("c", &Directive { from: 0, epoch: 1, resume: 0, members: 7, last: 0 }.encode());
        assert_eq!(s.lock().directive.unwrap().epoch, 2);
    }

    #[test]
    fn a_token_that_goes_counts_as_lost_only_after_the_grace() {
        let (s, keys) = shared();
        s.lock().rebase(1, 0);
        let grace = Duration::from_millis(250);
        s.on_token(&keys.member(2, 0, "old"), true);
        let t0 = Instant::now();
        s.on_token(&keys.member(2, 0, "old"), false); // a restarted shard's old token goes first ...
        let (lost, recheck) = s.lock().gone_for(grace, t0);
        assert_eq!(lost & 0b100, 0, "within the grace");
        assert!(recheck.is_some_and(|r| r > t0));
        assert_eq!(s.lock().gone_for(grace, t0 + 2 * grace).0 & 0b100, 0b100, "gone for longer: lost");
        s.on_token(&keys.member(2, 200, "new"), true); // ... and its new one comes just after
        let (lost, recheck) = s.lock().gone_for(grace, t0 + 2 * grace);
        assert_eq!((lost & 0b100, recheck), (0, None), "back: not lost");
    }
}
