//! [`CpuEngine`]: one shard of the reference backend, its neurons cut into pieces, one per thread;
//! every thread accumulates the last burst's spikes onto its own targets (no atomics), then steps
//! its own neurons; the fired lists are joined in id order.

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use super::learn::learn_piece;
use super::procedural::Regen;
use crate::backend::learn::{Deferred, Learner};
use crate::backend::shard::ShardEngine;
use crate::backend::{BackendError, BackendInfo};
use crate::connectome::{Codes, Part, Plastic, Procedural};
use crate::memory::{self, prefetch};
use crate::model::neuron::excited;
use crate::model::{
    fixed, step, AreaParams, InjectionSlice, NeuronState, FLAG_GRADIENT, FLAG_MP_ACC, FLAG_NEVER_FIRE, FLAG_POWER, LEAK_LINEAR,
};

/// An input accumulator element: `i32` when it provably cannot overflow, else `i64`.
pub(super) trait Acc: Copy + Default + Send + Sync {
    fn plus(self, c: i32) -> Self;
    fn wide(self) -> i64;
}

impl Acc for i32 {
    #[inline(always)]
    fn plus(self, c: i32) -> i32 {
        self.wrapping_add(c)
    }
    #[inline(always)]
    fn wide(self) -> i64 {
        self as i64
    }
}

impl Acc for i64 {
    #[inline(always)]
    fn plus(self, c: i32) -> i64 {
        self.wrapping_add(c as i64)
    }
    #[inline(always)]
    fn wide(self) -> i64 {
        self
    }
}

/// Synaptic input gathered for the coming burst, in LSBs.
pub(super) enum PieceInput {
    Narrow(Vec<i32>),
    Wide(Vec<i64>),
}

/// The piece of one area that a shard owns.
struct Segment {
    area: usize,
    range: Range<u32>,
    /// Takes the fast path (see [`is_simple`]).
    simple: bool,
}

/// One thread's neurons, and the synapses onto them.
pub(super) struct Piece {
    pub(super) conn: Part,
    /// Learning's deferred depressions (a brain with plasticity only).
    pub(super) deferred: Deferred,
    pub(super) input: PieceInput,
    /// The learning put the last burst's rows into `input` already (see `learn.rs`).
    pub(super) fused: bool,
    /// Scratch: synapse ranges of the spiking rows.
    rows: Vec<(usize, usize)>,
    state: PieceState,
}

/// The neurons of a shard.
struct PieceState {
    /// Global id of the first neuron.
    base: u32,
    segments: Vec<Segment>,
    potential: Vec<i64>,
    refractory: Vec<u16>,
    consecutive: Vec<u16>,
    fired: Vec<u32>,
    fired_v: Vec<i64>,
}

impl Piece {
    /// `bounds`: the largest magnitude each code can take (see [`Plastic::bounds`]); `learns`: the
    /// brain has plasticity; `procedural`: it has procedural synapses (whose input has no bound
    /// worked out: the input is wide).
    fn new(conn: Part, params: &[AreaParams], bounds: &[i32], learns: bool, procedural: bool) -> Piece {
        let n = conn.targets_range.len();
        let segments = params
            .iter()
            .enumerate()
            .filter_map(|(a, p)| {
                let lo = p.first.max(conn.targets_range.start);
                let hi = (p.first + p.count).min(conn.targets_range.end);
                (lo < hi).then_some(Segment { area: a, range: lo..hi, simple: is_simple(p) })
            })
            .collect();
        let input = if !procedural && max_input(&conn, bounds) <= i32::MAX as u64 {
            PieceInput::Narrow(memory::zeroed(n))
        } else {
            PieceInput::Wide(memory::zeroed(n))
        };
        let deferred = if learns { Deferred::of(&conn) } else { Deferred::default() };
        let state = PieceState {
            base: conn.targets_range.start,
            segments,
            potential: memory::zeroed(n),
            refractory: memory::zeroed(n),
            consecutive: memory::zeroed(n),
            fired: Vec::new(),
            fired_v: Vec::new(),
        };
        Piece { conn, deferred, input, fused: false, rows: Vec::new(), state }
    }

    /// Propagate the last burst's spikes (the stored synapses, then piece `me`'s procedural ones
    /// from `regen`), then step every neuron; `injection` is sorted and within this shard's range.
    #[allow(clippy::too_many_arguments)]
    fn burst(
        &mut self,
        spikes: &[u32],
        table: &[i32],
        injection: InjectionSlice<'_>,
        params: &[AreaParams],
        t: u64,
        regen: &Regen,
        me: usize,
    ) {
        let spikes = if std::mem::take(&mut self.fused) { &[][..] } else { spikes };
        match &mut self.input {
            PieceInput::Narrow(input) => {
                propagate(input, &self.conn, table, spikes, &mut self.rows);
                self.state.step_all(input, params, t, injection);
            }
            PieceInput::Wide(input) => {
                propagate(input, &self.conn, table, spikes, &mut self.rows);
                // (a brain with procedural synapses always has wide input: see `Piece::new`)
                regen.add(me, input);
                self.state.step_all(input, params, t, injection);
            }
        }
    }
}

impl PieceState {
    fn step_all<A: Acc>(&mut self, input: &mut [A], params: &[AreaParams], t: u64, injection: InjectionSlice<'_>) {
        self.fired.clear();
        self.fired_v.clear();
        let mut inj = injection.iter().peekable();
        for seg in &self.segments {
            let p = &params[seg.area];
            let drive = if p.flags & FLAG_POWER != 0 { fixed::ONE } else { 0 };
            let (lo, hi) = ((seg.range.start - self.base) as usize, (seg.range.end - self.base) as usize);
            // Everything injected into neuron n, in order of n.
            let mut injected = |n: u32| {
                let mut sum = 0i64;
                while let Some(i) = inj.next_if(|i| i.neuron == n) {
                    sum = sum.wrapping_add(i.potential.0);
                }
                sum
            };
            if seg.simple {
                // No refractory period, fire limit or snooze, and no countdown pending: the
                // refractory and consecutive-fire state only changes on a fire.
                let neurons = self.potential[lo..hi].iter_mut().zip(&mut input[lo..hi]);
                for (j, (v, acc)) in neurons.enumerate() {
                    let n = seg.range.start + j as u32;
                    let total = std::mem::take(acc).wide().wrapping_add(drive).wrapping_add(injected(n));
                    if let Some(at_fire) = step_simple(p, v, total, n, t) {
                        let c = &mut self.consecutive[lo + j];
                        *c = c.saturating_add(1);
                        self.fired.push(n);
                        self.fired_v.push(at_fire);
                    }
                }
                continue;
            }
            let gradient = p.flags & FLAG_GRADIENT != 0;
            let neurons = self.potential[lo..hi]
                .iter_mut()
                .zip(&mut self.refractory[lo..hi])
                .zip(&mut self.consecutive[lo..hi])
                .zip(&mut input[lo..hi]);
            for (j, (((v, rc), cfc), acc)) in neurons.enumerate() {
                let n = seg.range.start + j as u32;
                let threshold = if gradient { p.threshold_of(n - p.first) } else { p.threshold };
                let total = std::mem::take(acc).wide().wrapping_add(drive).wrapping_add(injected(n));
                if let Some(at_fire) = step(p, threshold, v, rc, cfc, total, n, t) {
                    self.fired.push(n);
                    self.fired_v.push(at_fire);
                }
            }
        }
    }

    /// Mark which segments may take the fast path: simple parameters and no countdown pending.
    fn classify(&mut self, params: &[AreaParams]) {
        for seg in &mut self.segments {
            let (lo, hi) = ((seg.range.start - self.base) as usize, (seg.range.end - self.base) as usize);
            seg.simple = is_simple(&params[seg.area]) && self.refractory[lo..hi].iter().all(|&r| r == 0);
        }
    }
}

impl PieceInput {
    fn clear(&mut self) {
        match self {
            PieceInput::Narrow(v) => v.fill(0),
            PieceInput::Wide(v) => v.fill(0),
        }
    }
}

/// The largest sum of `|contribution|` over the incoming synapses of any target of `part`.
pub(crate) fn max_input(part: &Part, table: &[i32]) -> u64 {
    let mut sums = vec![0u64; part.targets_range.len()];
    for (i, &t) in part.targets.iter().enumerate() {
        sums[t as usize] += table[part.codes.get(i) as usize].unsigned_abs() as u64;
    }
    sums.into_iter().max().unwrap_or(0)
}

/// Areas whose neurons never become refractory and have no fire limit or threshold gradient.
fn is_simple(p: &AreaParams) -> bool {
    p.refractory == 0 && p.snooze == 0 && p.fire_limit == 0 && p.flags & (FLAG_GRADIENT | FLAG_NEVER_FIRE) == 0
}

/// [`step`] for a neuron of a simple area (see [`is_simple`]) whose refractory countdown is 0:
/// the same result, without touching the countdown or the consecutive-fire count (the caller
/// increments the latter on a fire).
#[inline(always)]
fn step_simple(p: &AreaParams, v: &mut i64, input: i64, n: u32, t: u64) -> Option<i64> {
    let start = if p.flags & FLAG_MP_ACC != 0 { *v } else { 0 };
    let x = fixed::clamp_potential(start + fixed::clamp_potential(input));
    if x >= p.threshold && (p.threshold_limit == 0 || x <= p.threshold_limit) && excited(p, n, t) {
        *v = 0;
        return Some(x);
    }
    *v = if p.leak_kind == LEAK_LINEAR { fixed::apply_linear_leak(x, p.leak_linear) } else { fixed::apply_fraction_leak(x, p.leak_keep) };
    None
}

/// How many rows ahead the propagation prefetches.
const PREFETCH_ROWS: usize = 4;

fn propagate<A: Acc>(input: &mut [A], conn: &Part, table: &[i32], spikes: &[u32], rows: &mut Vec<(usize, usize)>) {
    match &conn.codes {
        Codes::U16(codes) => accumulate(input, conn, codes, table, spikes, rows),
        Codes::U32(codes) => accumulate(input, conn, codes, table, spikes, rows),
    }
}

/// Add the contributions of every synapse of the spiking sources onto their targets. Rows are
/// scattered through memory, so their bounds are gathered first (independent loads that overlap)
/// and each row is prefetched a few rows ahead.
fn accumulate<A: Acc, C: Copy + Into<u32>>(
    input: &mut [A],
    conn: &Part,
    codes: &[C],
    table: &[i32],
    spikes: &[u32],
    rows: &mut Vec<(usize, usize)>,
) {
    rows.clear();
    rows.extend(spikes.iter().map(|&s| {
        let r = conn.row(s);
        (r.start, r.end)
    }));
    for i in 0..rows.len() {
        if let Some(&(a, b)) = rows.get(i + PREFETCH_ROWS) {
            prefetch(conn.targets.as_ptr().wrapping_add(a), (b - a) * 4);
            prefetch(codes.as_ptr().wrapping_add(a), (b - a) * std::mem::size_of::<C>());
        }
        let (a, b) = rows[i];
        add_row(input, table, &conn.targets[a..b], &codes[a..b]);
    }
}

/// Add one row's contributions onto its targets.
#[inline(always)]
pub(super) fn add_row<A: Acc, C: Copy + Into<u32>>(input: &mut [A], table: &[i32], targets: &[u32], codes: &[C]) {
    for (&t, &c) in targets.iter().zip(codes) {
        let slot = &mut input[t as usize];
        *slot = slot.plus(table[c.into() as usize]);
    }
}

/// One shard of the reference backend: its neurons cut into pieces, one per thread.
pub struct CpuEngine {
    params: Vec<AreaParams>,
    range: Range<u32>,
    pieces: Vec<Piece>,
    contributions: Vec<i32>,
    learner: Option<Learner>,
    regen: Regen,
    /// The learning from the last burst is done (see [`ShardEngine::learn_ahead`]).
    ahead: bool,
    bytes_per_synapse: f64,
    /// Own neurons fired in the last burst, ascending, with their potentials at fire.
    fired: Vec<u32>,
    fired_v: Vec<i64>,
}

impl CpuEngine {
    /// An engine over `parts` (contiguous target ranges, ascending) of a connectome of `neurons`
    /// neurons, learning when `plastic` is given, drawing `procedural` synapses again.
    pub fn new(
        parts: Vec<Part>,
        params: Vec<AreaParams>,
        contributions: Vec<i32>,
        plastic: Option<Plastic>,
        procedural: Option<Arc<Procedural>>,
        neurons: u32,
    ) -> CpuEngine {
        let range = parts.first().map_or(0, |p| p.targets_range.start)..parts.last().map_or(0, |p| p.targets_range.end);
        let synapses: u64 = parts.iter().map(|p| p.synapses()).sum();
        let learns = plastic.is_some();
        let bounds = plastic.as_ref().map_or_else(|| contributions.clone(), |p| p.bounds(&contributions));
        let drawn = procedural.is_some();
        let pieces: Vec<Piece> = parts.into_par_iter().map(|p| Piece::new(p, &params, &bounds, learns, drawn)).collect();
        let starts = pieces.iter().map(|p| p.conn.targets_range.start).collect();
        let regen = Regen::new(procedural, range.clone(), starts);
        let bytes: u64 = pieces.iter().map(|p| p.conn.bytes() + p.deferred.bytes()).sum::<u64>() + contributions.len() as u64 * 4;
        let bytes_per_synapse = if synapses == 0 { 0.0 } else { bytes as f64 / synapses as f64 };
        let learner = plastic.map(|p| Learner::new(p, neurons));
        CpuEngine {
            params,
            range,
            pieces,
            contributions,
            learner,
            regen,
            ahead: false,
            bytes_per_synapse,
            fired: Vec::new(),
            fired_v: Vec::new(),
        }
    }

    /// Learning after burst `t - 1`, whose firing is `spikes` (docs/plasticity.md), but for the
    /// pieces' updates ([`learn_piece`]): the record and the growth. Whether the pieces update.
    fn learn(&mut self, t: u64, spikes: &[u32]) -> bool {
        let Some(learner) = &mut self.learner else { return false };
        if std::mem::take(&mut self.ahead) {
            return false;
        }
        learner.record(t.saturating_sub(1), spikes);
        if t < 2 || !learner.switch.learns(t - 1) {
            return false;
        }
        learner.grow(t - 1);
        true
    }

    /// The learner's counts per plastic mapping: synapses grown and pairs refused.
    pub fn growth(&self) -> Option<(&[u64], &[u64])> {
        self.learner.as_ref().map(|l| (&l.grown[..], &l.refused[..]))
    }
}

impl ShardEngine for CpuEngine {
    fn range(&self) -> Range<u32> {
        self.range.clone()
    }

    fn info(&self) -> BackendInfo {
        let bytes: u64 = self
            .pieces
            .iter()
            .map(|s| s.conn.bytes() + s.deferred.bytes() + s.state.potential.len() as u64 * crate::model::neuron::STATE_BYTES_PER_NEURON)
            .sum();
        BackendInfo {
            backend: "cpu".into(),
            device: format!("{} threads, {} pieces", rayon::current_num_threads(), self.pieces.len()),
            memory_bytes: bytes,
            bytes_per_synapse: self.bytes_per_synapse,
        }
    }

    fn burst(&mut self, t: u64, spikes: &[u32], input: InjectionSlice<'_>) -> Result<(), BackendError> {
        let learns = self.learn(t, spikes);
        self.regen.draw(spikes);
        let (table, params, regen, learner) = (&self.contributions, &self.params, &self.regen, self.learner.as_ref());
        let run = |(me, shard): (usize, &mut Piece)| {
            if let Some(l) = learner.filter(|_| learns) {
                learn_piece(l, t, shard, table);
            }
            let share = input.within(shard.conn.targets_range.clone());
            shard.burst(spikes, table, share, params, t, regen, me);
        };
        if self.pieces.len() == 1 {
            run((0, &mut self.pieces[0]));
        } else {
            self.pieces.par_iter_mut().enumerate().for_each(run);
        }
        self.fired.clear();
        self.fired_v.clear();
        for s in &self.pieces {
            self.fired.extend_from_slice(&s.state.fired);
            self.fired_v.extend_from_slice(&s.state.fired_v);
        }
        Ok(())
    }

    fn fired(&self) -> (&[u32], &[i64]) {
        (&self.fired, &self.fired_v)
    }

    fn set_learning(&mut self, on: bool, last: u64) -> Result<(), BackendError> {
        if let Some(l) = &mut self.learner {
            l.switch.set(on, last);
        }
        Ok(())
    }

    fn learn_ahead(&mut self, t: u64, spikes: &[u32]) {
        if self.learner.is_some() && !self.ahead {
            if let (true, Some(l)) = (self.learn(t, spikes), &self.learner) {
                let table = &self.contributions[..];
                self.pieces.par_iter_mut().for_each(|p| learn_piece(l, t, p, table));
            }
            self.ahead = true;
        }
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = NeuronState { fired: self.fired.clone(), ..Default::default() };
        for s in &self.pieces {
            st.potential.extend_from_slice(&s.state.potential);
            st.refractory.extend_from_slice(&s.state.refractory);
            st.consecutive.extend_from_slice(&s.state.consecutive);
        }
        if let Some(l) = &self.learner {
            st.learned = l.snapshot(&self.pieces.iter().map(|p| (&p.conn, &p.deferred)).collect::<Vec<_>>());
            st.learned.ahead = self.ahead;
        }
        Ok(st)
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        crate::backend::shard::check_lengths(st, self.range.len())?;
        for s in &mut self.pieces {
            let r = (s.conn.targets_range.start - self.range.start) as usize..(s.conn.targets_range.end - self.range.start) as usize;
            s.state.potential.copy_from_slice(&st.potential[r.clone()]);
            s.state.refractory.copy_from_slice(&st.refractory[r.clone()]);
            s.state.consecutive.copy_from_slice(&st.consecutive[r]);
            s.input.clear();
            s.fused = false;
            s.state.classify(&self.params);
        }
        if let Some(l) = &mut self.learner {
            let mut parts: Vec<_> = self.pieces.iter_mut().map(|p| (&mut p.conn, &mut p.deferred)).collect();
            l.restore(&st.learned, &mut parts).map_err(|e| BackendError::Device(format!("cannot restore what the brain learned: {e}")))?;
            self.ahead = st.learned.ahead;
        }
        self.fired.clear();
        self.fired_v.clear();
        Ok(())
    }
}
