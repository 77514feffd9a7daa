//! Learning on the CPU, the reference (docs/plasticity.md): after the firing of burst `t`, the
//! weights of plastic synapses change by FEAGI's window-coincidence rule and associative mappings
//! grow synapses between neurons that fired together; both take effect from burst `t + 1`.
//!
//! A synapse changes only when its source or its target fired within its rule's window. The rows
//! of the recently fired sources get the whole rule at once. A synapse whose source was silent can
//! only be depressed, once per burst in which its target was active: that is counted at the target
//! (a u16 per neuron and window) and paid when the synapse is next visited (each synapse keeps the
//! count it was last brought up to date at), so no pass reads synapses at random by target. A
//! source's row is always up to date when it propagates (it fired, so it was just visited), and a
//! sweep brings every synapse up to date within [`SWEEP_BURSTS`] bursts, which bounds the counts.
//! Weights live in the synapses' codes ([`crate::connectome::plastic`]), so propagation needs no
//! change. The rows of the sources that fired in the burst learned from are the next burst's to
//! propagate: the update hands each to a [`Scatter`] once it is up to date, while it is in cache,
//! so that the backend reads it once for both.
//!
//! Associative pairs are a bit table per mapping, the same in every shard: growth is a function of
//! the whole brain's firing and of the pairs already grown, so every shard grows the same pairs and
//! keeps the weights of those onto its own neurons.

use std::ops::Range;

use multiversion::multiversion;
use rayon::prelude::*;

mod state;

use crate::connectome::plastic::Decoded;
use crate::connectome::{Codes, Part, Plastic};
use crate::memory::prefetch;
use crate::model::plasticity::{window_mask, History, Switch};

/// Takes the rows of the sources that fired, once up to date (see the module's comment).
pub trait Scatter {
    /// A row: its targets (relative to its part) and codes.
    fn row<C: Copy + Into<u32>>(&mut self, targets: &[u32], codes: &[C]);
    /// A synapse of a row already taken changed code (associative growth).
    fn changed(&mut self, target: u32, was: u32, now: u32);
}

/// The learning state of one engine.
pub struct Learner {
    plastic: Plastic,
    groups: Vec<GroupRule>,
    /// Firing history of every neuron of the brain.
    history: Vec<History>,
    /// Neurons that fired within the longest window, ascending, with their histories (read
    /// here, in order, rather than at random by the update).
    active: Vec<(u32, History)>,
    /// Scratch: the active neurons of each chunk of a record; the neurons that fired, as bits.
    listed: Vec<Vec<(u32, History)>>,
    fired: Vec<u64>,
    longest: History,
    /// Per plastic mapping: which pairs exist (associative mappings; empty otherwise).
    exists: Vec<Vec<u64>>,
    /// Per plastic mapping: synapses grown, and pairs refused at `max_synapses`.
    pub grown: Vec<u64>,
    /// Per plastic mapping: pairs refused at `max_synapses`.
    pub refused: Vec<u64>,
    /// Deferred depression: the distinct (mask, window) of the rules, and per one, per neuron:
    /// the bursts in which it was active within that window (from the window on; a u16 count in
    /// the high half), whether it was active in the last window ([`ANY`]), in all of it ([`ALL`]).
    slots: Vec<(History, u64)>,
    status: Vec<Vec<u32>>,
    /// Scratch: the neurons of a growth pass.
    all_a: Vec<u32>,
    all_b: Vec<u32>,
    /// The pairs the last growth created: (plastic mapping, source, target).
    created: Vec<(u32, u32, u32)>,
    /// Which bursts' firing is learned from (`backend.learning`).
    pub switch: Switch,
}

/// A learner's state, as a device keeps it (see [`Learner::state_mut`]).
pub struct LearnState<'a> {
    /// Every neuron's firing history (bit `i`: fired `i` bursts ago).
    pub history: &'a mut [History],
    /// Per window: every neuron's status (see `Learner::status`).
    pub status: &'a mut [Vec<u32>],
    /// Per plastic mapping: its pair table (u64 words; empty for a mapping not associative).
    pub tables: &'a mut [Vec<u64>],
    /// Per plastic mapping: synapses grown, pairs refused.
    pub grown: &'a mut [u64],
    /// Per plastic mapping: pairs refused.
    pub refused: &'a mut [u64],
}

/// A part's rows and range, borrowed beside its codes.
struct LearnRows<'a> {
    base: u32,
    row_ptr: &'a [u64],
    targets: &'a [u32],
}

/// A source's row being updated: the source, its history, its part's first neuron.
struct Row {
    s: u32,
    hs: History,
    base: u32,
}

/// A code's storage width.
trait Code: Copy {
    fn get(self) -> u32;
    fn make(c: u32) -> Self;
}

impl Code for u16 {
    #[inline(always)]
    fn get(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn make(c: u32) -> u16 {
        c as u16
    }
}

impl Code for u32 {
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
    #[inline(always)]
    fn make(c: u32) -> u32 {
        c
    }
}

/// A group's rule, where the update reads it.
#[derive(Clone, Copy, Debug)]
struct GroupRule {
    mask: History,
    window: u64,
    ltp: u8,
    ltd: u8,
    associative: bool,
    /// Its plastic mapping.
    mapping: u32,
    /// Its deferred-depression counts (index into `Learner::slots`).
    slot: usize,
}

/// Neurons per task when recording a burst.
const RECORD_CHUNK: usize = 1 << 16;

/// Rows prefetched this many ahead, their pointers this many. (Prefetching the targets' status
/// as well measured slower: its random lines compete with the rows' for the miss buffers.)
const PREFETCH_AHEAD: usize = 8;
const PREFETCH_POINTERS: usize = 16;

/// Every synapse is brought up to date at least once in this many bursts (well below 2^16).
pub const SWEEP_BURSTS: usize = 1 << 15;

/// A target's status bits (see `Learner::status`).
const ANY: u32 = 1;
const ALL: u32 = 2;

/// The count in a status word.
#[inline(always)]
fn count(status: u32) -> u16 {
    (status >> 16) as u16
}

/// A depression of `ltd` owed `n` times.
#[inline(always)]
fn debt(n: u16, ltd: u8) -> u8 {
    (n as u32 * ltd as u32).min(255) as u8
}

/// One part's deferred depressions (see the module's comment): per synapse, the target's count
/// when it was last brought up to date.
#[derive(Default)]
pub struct Deferred {
    stamps: Vec<u16>,
    /// Scratch: a row's targets' status.
    scratch: Vec<u32>,
}

impl Deferred {
    /// The deferred depression of `part`: every synapse up to date.
    pub fn of(part: &Part) -> Deferred {
        // on huge pages, and written now: a page of zeros read first and written later costs a
        // copy-on-write fault (and a TLB flush on every core) inside a burst
        Deferred::from_stamps(crate::memory::zeroed(part.targets.len()))
    }

    /// The stamps a device kept (one per synapse of the part).
    pub fn from_stamps(stamps: Vec<u16>) -> Deferred {
        Deferred { stamps, scratch: Vec::new() }
    }

    /// Up to date everywhere (after a restore, which resets the counts).
    pub fn reset(&mut self) {
        self.stamps.fill(0);
    }

    /// Bytes it takes.
    pub fn bytes(&self) -> u64 {
        self.stamps.len() as u64 * 2
    }
}

impl Learner {
    /// A learner of the plastic mappings `plastic` over `neurons` neurons, nothing learned yet.
    pub fn new(plastic: Plastic, neurons: u32) -> Learner {
        let exists =
            plastic.mappings.iter().map(|m| m.associative.as_ref().map_or(Vec::new(), |a| vec![0; a.pairs().div_ceil(64)])).collect();
        let n = plastic.mappings.len();
        let mut slots = Vec::new();
        let groups = plastic
            .group_mapping
            .iter()
            .map(|&pm| {
                let m = &plastic.mappings[pm as usize];
                let (rule, associative) = (m.rule, m.associative.is_some());
                let (mask, window) = (rule.mask(), rule.window as u64);
                let slot = slots.iter().position(|&w| w == (mask, window)).unwrap_or_else(|| {
                    slots.push((mask, window));
                    slots.len() - 1
                });
                GroupRule { mask, window, ltp: rule.ltp, ltd: rule.ltd, associative, mapping: pm, slot }
            })
            .collect();
        let mut grown = vec![0; n];
        let mut exists: Vec<Vec<u64>> = exists;
        for (pm, m) in plastic.mappings.iter().enumerate() {
            let Some(a) = &m.associative else { continue };
            for &(s, d) in &a.grown {
                let i = a.pair(s, d);
                exists[pm][i / 64] |= 1 << (i % 64);
                grown[pm] += 1;
            }
        }
        Learner {
            groups,
            longest: window_mask(plastic.max_window()),
            plastic,
            history: vec![0; neurons as usize],
            active: Vec::new(),
            exists,
            grown,
            refused: vec![0; n],
            status: vec![vec![0; neurons as usize]; slots.len()],
            listed: Vec::new(),
            fired: Vec::new(),
            slots,
            all_a: Vec::new(),
            all_b: Vec::new(),
            created: Vec::new(),
            switch: Switch::default(),
        }
    }

    /// The state a device keeps of its own (the GPU backend).
    pub fn state_mut(&mut self) -> LearnState<'_> {
        LearnState {
            history: &mut self.history,
            status: &mut self.status,
            tables: &mut self.exists,
            grown: &mut self.grown,
            refused: &mut self.refused,
        }
    }

    /// The window of each status slot, and the slot of each plastic mapping.
    pub fn slots(&self) -> (Vec<u32>, Vec<u32>) {
        let windows = self.slots.iter().map(|&(_, w)| w as u32).collect();
        let mut of_mapping = vec![0; self.plastic.mappings.len()];
        for g in &self.groups {
            of_mapping[g.mapping as usize] = g.slot as u32;
        }
        (windows, of_mapping)
    }

    /// Shift burst `t`'s firing (`spikes`: every neuron of the brain that fired, any order) into
    /// the histories, count it into the deferred depressions (a neuron active within a window
    /// depresses the synapses onto it whose source was silent in that window), and list the
    /// neurons active within the longest window: one pass over the neurons, the firing read from a
    /// bit set.
    pub fn record(&mut self, t: u64, spikes: &[u32]) {
        let n = self.history.len();
        self.fired.resize(n.div_ceil(64), 0);
        for &s in spikes {
            self.fired[s as usize / 64] |= 1 << (s % 64);
        }
        let (longest, fired) = (self.longest, &self.fired[..]);
        // learning off: the histories go on, nothing is counted (no synapse owes)
        let learns = self.switch.learns(t);
        let window = |&(mask, window): &(History, u64)| Window { mask, counting: t >= window && learns };
        self.listed.resize_with(n.div_ceil(RECORD_CHUNK), Vec::new);
        let chunks = self.history.par_chunks_mut(RECORD_CHUNK).zip(self.listed.par_iter_mut()).enumerate();
        let (first, more) = self.status.split_first_mut().map_or((None, &mut [][..]), |(a, b)| (Some(a), b));
        match first {
            Some(status) => chunks.zip(status.par_chunks_mut(RECORD_CHUNK)).for_each(|((c, (history, list)), status)| {
                record_chunk(c * RECORD_CHUNK, history, fired, longest, list, Some((status, window(&self.slots[0]))))
            }),
            None => chunks.for_each(|(c, (history, list))| record_chunk(c * RECORD_CHUNK, history, fired, longest, list, None)),
        }
        for &s in spikes {
            self.fired[s as usize / 64] = 0;
        }
        // the statuses of further windows (brains whose rules have several)
        let history = &self.history;
        for (status, slot) in more.iter_mut().zip(&self.slots[1..]) {
            let w = window(slot);
            status.par_chunks_mut(RECORD_CHUNK).zip(history.par_chunks(RECORD_CHUNK)).for_each(|(status, history)| {
                status.iter_mut().zip(history).for_each(|(st, &h)| *st = w.status(*st, h));
            });
        }
        self.active.clear();
        self.listed.iter().for_each(|c| self.active.extend_from_slice(c));
    }

    #[inline(always)]
    fn exists(&self, mapping: usize, s: u32, d: u32) -> bool {
        match &self.plastic.mappings[mapping].associative {
            None => true,
            Some(a) => {
                let i = a.pair(s, d);
                self.exists[mapping][i / 64] >> (i % 64) & 1 != 0
            }
        }
    }

    /// Burst `t`'s update of the synapses of `part` (recorded up to burst `t`), each row of a
    /// source that fired in burst `t` handed to `fired` once up to date, then a share of the sweep
    /// that keeps every deferral short (all of it when learning stops after this update).
    pub fn update(&self, t: u64, part: &mut Part, deferred: &mut Deferred, fired: &mut impl Scatter) {
        let Part { targets_range, row_ptr, targets, codes } = part;
        let view = LearnRows { base: targets_range.start, row_ptr, targets };
        match codes {
            Codes::U16(c) => update_codes(self, t, &view, c, deferred, fired),
            Codes::U32(c) => update_codes(self, t, &view, c, deferred, fired),
        }
    }

    /// The rule on the synapses of one row (a source active within the longest window).
    #[inline(always)]
    fn update_row<C: Code>(&self, t: u64, row: &Row, codes: &mut [C], targets: &[u32], stamps: &mut [u16], scratch: &mut Vec<u32>) {
        let (code_base, base, hs) = (self.plastic.base, row.base, row.hs);
        // most rows hold one mapping's synapses: then the rule is the same for all, and the loop
        // runs without branches on the targets' status, gathered first (the check has no early
        // exit, so that it is vectorized)
        let first = codes.first().map_or(u32::MAX, |c| c.get().wrapping_sub(code_base) >> 8);
        let one = self
            .groups
            .get(first as usize)
            .filter(|g| !g.associative && codes.iter().fold(true, |same, c| same & (c.get().wrapping_sub(code_base) >> 8 == first)));
        if let Some(g) = one {
            let sm = hs & g.mask;
            if sm == 0 || t < g.window {
                return;
            }
            let (all, ltp, ltd, head) = ((sm == g.mask) as u32, g.ltp, g.ltd, code_base + (first << 8));
            // (a slice, so that its bounds stay in registers while the scratch is written)
            let status: &[u32] = &self.status[g.slot];
            scratch.resize(targets.len(), 0);
            for (st, &d) in scratch.iter_mut().zip(targets) {
                *st = status[(d + base) as usize];
            }
            for ((code, stamp), &st) in codes.iter_mut().zip(stamps.iter_mut()).zip(scratch.iter()) {
                let owed = count(st).wrapping_sub(*stamp).wrapping_sub((st & ANY) as u16);
                let weight = (code.get() - head) as u8;
                let weight = weight.saturating_sub(debt(owed, ltd));
                let w = if all & st >> 1 != 0 { weight.saturating_add(ltp) } else { weight.saturating_sub(ltd) };
                *code = C::make(head + w as u32);
                *stamp = count(st);
            }
            return;
        }
        for ((code, &target), stamp) in codes.iter_mut().zip(targets).zip(stamps.iter_mut()) {
            let Some(c) = code.get().checked_sub(code_base) else { continue };
            let (group, weight) = (c >> 8, c as u8);
            let g = &self.groups[group as usize];
            // a silent source's synapses wait (their depressions are counted at the target)
            let sm = hs & g.mask;
            if sm == 0 || t < g.window {
                continue;
            }
            let d = target + base;
            let st = self.status[g.slot][d as usize];
            // the bursts before this one in which the target alone was active
            let owed = count(st).wrapping_sub(*stamp).wrapping_sub((st & ANY) as u16);
            *stamp = count(st);
            let weight = weight.saturating_sub(debt(owed, g.ltd));
            let w = if sm == g.mask && st & ALL != 0 {
                // an associative pair that does not exist grows instead (see `grow`)
                if g.associative && !self.exists(g.mapping as usize, row.s, d) {
                    continue;
                }
                weight.saturating_add(g.ltp)
            } else {
                weight.saturating_sub(g.ltd)
            };
            *code = C::make(code_base + (group << 8) + w as u32);
        }
    }

    /// Burst `t`'s growth, after [`Learner::record`]: every associative pair whose two neurons
    /// fired in every burst of the window and that does not exist yet is created with weight
    /// `Δ+`, in ascending (source, target) order up to the mapping's `max_synapses`. Every shard
    /// records every pair as existing; [`Learner::apply_growth`], after [`Learner::update`], then
    /// gives the pairs onto a part's neurons their weight (whatever the update, which sees them
    /// existing, did to them: the part's pieces update on their own, with no step between).
    pub fn grow(&mut self, t: u64) {
        let Learner { plastic, history, exists, grown, refused, all_a, all_b, created, .. } = self;
        created.clear();
        for (pm, m) in plastic.mappings.iter().enumerate() {
            let Some(a) = &m.associative else { continue };
            if m.rule.ltp == 0 || t < m.rule.window as u64 {
                continue;
            }
            let full = m.rule.mask();
            let all = |r: &Range<u32>, out: &mut Vec<u32>| {
                out.clear();
                out.extend(r.clone().filter(|&n| history[n as usize] & full == full));
            };
            all(&a.sources, all_a);
            all(&a.targets, all_b);
            for &s in all_a.iter() {
                for &d in all_b.iter() {
                    let i = a.pair(s, d);
                    if s == d || exists[pm][i / 64] >> (i % 64) & 1 != 0 {
                        continue;
                    }
                    if grown[pm] >= a.max_synapses {
                        if refused[pm] == 0 {
                            tracing::warn!(
                                "mapping #{}: associative memory is full ({} synapses, its max_synapses); pairs beyond are \
                                 not created (counted in `inspect`)",
                                m.index,
                                a.max_synapses
                            );
                        }
                        refused[pm] += 1;
                        continue;
                    }
                    exists[pm][i / 64] |= 1 << (i % 64);
                    grown[pm] += 1;
                    created.push((pm as u32, s, d));
                }
            }
        }
    }

    /// Give the pairs the last [`Learner::grow`] created onto `part`'s neurons their weight `Δ+`.
    /// The pairs are up to date from this burst on (the burst's depression is not theirs). Their
    /// sources fired in the burst learned from, so their rows went to `fired` already: it is told
    /// of each change.
    pub fn apply_growth(&self, part: &mut Part, deferred: &mut Deferred, fired: &mut impl Scatter) {
        let own = part.targets_range.clone();
        for &(pm, s, d) in self.created.iter().filter(|c| own.contains(&c.2)) {
            let (w, rel) = (self.plastic.mappings[pm as usize].rule.ltp, d - own.start);
            if let Some((i, group, was)) = set_pair(&self.plastic, part, pm as usize, s, d, w) {
                deferred.stamps[i] = count(self.status[self.groups[group as usize].slot][d as usize]);
                fired.changed(rel, was, part.codes.get(i));
            }
        }
    }
}

/// [`Learner::update`] on a part's codes, compiled as well for the wider vector units of x86-64-v3
/// CPUs (AVX2), picked at run time: a plastic burst measured ~7% faster with them (the rule's
/// loop over a row was bound by SSE2's 16-bit unpacking; docs/plasticity.md).
#[multiversion(targets("x86_64+avx+avx2+bmi1+bmi2+fma+lzcnt+popcnt"))]
fn update_codes<C: Code + Into<u32>, S: Scatter>(
    l: &Learner,
    t: u64,
    part: &LearnRows<'_>,
    codes: &mut [C],
    deferred: &mut Deferred,
    fired: &mut S,
) {
    let (code_base, base, groups, status) = (l.plastic.base, part.base, &l.groups[..], &l.status[..]);
    let stamps = &mut deferred.stamps;
    let row = |s: u32| part.row_ptr[s as usize] as usize..part.row_ptr[s as usize + 1] as usize;
    for (k, &(s, hs)) in l.active.iter().enumerate() {
        if let Some(&(far, _)) = l.active.get(k + PREFETCH_POINTERS) {
            prefetch(part.row_ptr.as_ptr().wrapping_add(far as usize), 16);
        }
        if let Some(&(next, _)) = l.active.get(k + PREFETCH_AHEAD) {
            let r = row(next);
            prefetch(part.targets.as_ptr().wrapping_add(r.start), r.len() * 4);
            prefetch(codes.as_ptr().wrapping_add(r.start), r.len() * std::mem::size_of::<C>());
            prefetch(stamps.as_ptr().wrapping_add(r.start), r.len() * 2);
        }
        let r = row(s);
        let row = Row { s, hs, base };
        l.update_row(t, &row, &mut codes[r.clone()], &part.targets[r.clone()], &mut stamps[r.clone()], &mut deferred.scratch);
        if row.hs & 1 != 0 {
            fired.row(&part.targets[r.clone()], &codes[r]);
        }
    }
    // the sweep: every synapse is brought up to date at least once in SWEEP_BURSTS bursts, so
    // that no deferral outgrows its u16 count
    let n = codes.len();
    let chunk = n.div_ceil(SWEEP_BURSTS);
    let (from, to) = if l.switch.settles(t) {
        (0, n)
    } else {
        let from = (t as usize % SWEEP_BURSTS * chunk).min(n);
        (from, (from + chunk).min(n))
    };
    for i in from..to {
        let Some(c) = codes[i].get().checked_sub(code_base) else { continue };
        let g = &groups[(c >> 8) as usize];
        let now = count(status[g.slot][(part.targets[i] + base) as usize]);
        let owed = now.wrapping_sub(stamps[i]);
        if owed != 0 {
            stamps[i] = now;
            codes[i] = C::make(code_base + (c & !0xff) + (c as u8).saturating_sub(debt(owed, g.ltd)) as u32);
        }
    }
}

/// A window's status words in one burst's record (see `Learner::status`).
#[derive(Clone, Copy)]
struct Window {
    mask: History,
    /// The burst is past the window: activity counts.
    counting: bool,
}

impl Window {
    /// A neuron's status word, given its history with this burst in.
    #[inline(always)]
    fn status(self, st: u32, h: History) -> u32 {
        let (any, all) = (h & self.mask != 0, h & self.mask == self.mask);
        (st & !0xffff).wrapping_add(((any & self.counting) as u32) << 16) | (all as u32) << 1 | any as u32
    }
}

/// One chunk of [`Learner::record`], its first neuron `at` (a multiple of 64): the bit of
/// `fired` shifted into each history, the active neurons listed, the statuses of one window.
#[multiversion(targets("x86_64+avx+avx2+bmi1+bmi2+fma+lzcnt+popcnt"))]
fn record_chunk(
    at: usize,
    history: &mut [History],
    fired: &[u64],
    longest: History,
    list: &mut Vec<(u32, History)>,
    status: Option<(&mut [u32], Window)>,
) {
    list.clear();
    // 64 neurons a word of the bit set; the active ones found as the bits of a word
    for (b, (history, &word)) in history.chunks_mut(64).zip(&fired[at / 64..]).enumerate() {
        history.iter_mut().enumerate().for_each(|(j, h)| *h = (*h << 1 | (word >> j) as u32 & 1) & longest);
        let mut active = history.iter().enumerate().fold(0u64, |m, (j, &h)| m | ((h != 0) as u64) << j);
        while active != 0 {
            let j = active.trailing_zeros() as usize;
            active &= active - 1;
            list.push(((at + b * 64 + j) as u32, history[j]));
        }
    }
    if let Some((status, w)) = status {
        status.iter_mut().zip(history.iter()).for_each(|(st, &h)| *st = w.status(*st, h));
    }
}

/// Give the (absent) pair `s -> d` of plastic mapping `pm` in `part` its first weight: its index,
/// group and former code.
fn set_pair(p: &Plastic, part: &mut Part, pm: usize, s: u32, d: u32, w: u8) -> Option<(usize, u32, u32)> {
    let rel = d - part.targets_range.start;
    let row = part.row(s);
    let from = row.start + part.targets[row.clone()].partition_point(|&t| t < rel);
    for i in from..row.end {
        if part.targets[i] != rel {
            break;
        }
        let was = part.codes.get(i);
        if let Some(Decoded { group, .. }) = p.decode(was) {
            if p.group_mapping[group as usize] as usize == pm {
                part.codes.set(i, p.encode(group, w));
                return Some((i, group, was));
            }
        }
    }
    None
}
