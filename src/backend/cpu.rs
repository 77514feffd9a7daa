//! The CPU backend, the reference. The connectome is split into one part per thread by target
//! range; every thread accumulates the last burst's spikes onto its own targets (no atomics), then
//! steps its own neurons, then the fired lists are joined in id order.

use rayon::prelude::*;

use super::{Backend, BackendError, BackendInfo, BurstOutput, Readback};
use crate::brain::Brain;
use crate::connectome::{Codes, Part};
use crate::model::neuron::excited;
use crate::model::{fixed, step, AreaParams, Injection, NeuronState, FLAG_GRADIENT, FLAG_MP_ACC, FLAG_NEVER_FIRE, FLAG_POWER, LEAK_LINEAR};

/// The piece of one area that a shard owns.
struct Segment {
    area: usize,
    range: std::ops::Range<u32>,
    /// Takes the fast path (see [`is_simple`]).
    simple: bool,
}

struct Shard {
    conn: Part,
    segments: Vec<Segment>,
    potential: Vec<i64>,
    refractory: Vec<u16>,
    consecutive: Vec<u16>,
    /// Input gathered for the coming burst (injection + synapses), in LSBs.
    input: Vec<i64>,
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    /// Scratch: synapse ranges of the spiking rows.
    rows: Vec<(usize, usize)>,
}

impl Shard {
    fn new(conn: Part, params: &[AreaParams]) -> Shard {
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
        Shard {
            conn,
            segments,
            potential: vec![0; n],
            refractory: vec![0; n],
            consecutive: vec![0; n],
            input: vec![0; n],
            fired: Vec::new(),
            fired_v: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn propagate(&mut self, spikes: &[u32], table: &[i32]) {
        match &self.conn.codes {
            Codes::U16(codes) => accumulate(&mut self.input, &self.conn, codes, table, spikes, &mut self.rows),
            Codes::U32(codes) => accumulate(&mut self.input, &self.conn, codes, table, spikes, &mut self.rows),
        }
    }

    fn step_all(&mut self, params: &[AreaParams], t: u64) {
        self.fired.clear();
        self.fired_v.clear();
        let base = self.conn.targets_range.start;
        for seg in &self.segments {
            let p = &params[seg.area];
            let drive = if p.flags & FLAG_POWER != 0 { fixed::ONE } else { 0 };
            let (lo, hi) = ((seg.range.start - base) as usize, (seg.range.end - base) as usize);
            if seg.simple {
                // No refractory period, fire limit or snooze, and no countdown pending: the
                // refractory and consecutive-fire state only changes on a fire.
                let neurons = self.potential[lo..hi].iter_mut().zip(&mut self.input[lo..hi]);
                for (j, (v, input)) in neurons.enumerate() {
                    let n = seg.range.start + j as u32;
                    let total = std::mem::take(input).wrapping_add(drive);
                    if let Some(at_fire) = step_simple(p, v, total, n, t) {
                        let c = &mut self.consecutive[lo + j];
                        *c = c.saturating_add(1);
                        self.fired.push(n);
                        self.fired_v.push(at_fire);
                    }
                }
                continue;
            }
            let neurons = self.potential[lo..hi]
                .iter_mut()
                .zip(&mut self.refractory[lo..hi])
                .zip(&mut self.consecutive[lo..hi])
                .zip(&mut self.input[lo..hi]);
            let gradient = p.flags & FLAG_GRADIENT != 0;
            for (j, (((v, rc), cfc), input)) in neurons.enumerate() {
                let n = seg.range.start + j as u32;
                let threshold = if gradient { p.threshold_of(n - p.first) } else { p.threshold };
                let total = std::mem::take(input).wrapping_add(drive);
                if let Some(at_fire) = step(p, threshold, v, rc, cfc, total, n, t) {
                    self.fired.push(n);
                    self.fired_v.push(at_fire);
                }
            }
        }
    }

    /// Mark which segments may take the fast path: simple parameters and no countdown pending.
    fn classify(&mut self, params: &[AreaParams]) {
        let base = self.conn.targets_range.start;
        for seg in &mut self.segments {
            let (lo, hi) = ((seg.range.start - base) as usize, (seg.range.end - base) as usize);
            seg.simple = is_simple(&params[seg.area]) && self.refractory[lo..hi].iter().all(|&r| r == 0);
        }
    }
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

/// Hint the CPU to fetch the cache lines of `bytes` bytes from `ptr` (no effect elsewhere).
#[inline(always)]
fn prefetch<T>(ptr: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = ptr as *const i8;
        let mut off = 0;
        while off < bytes {
            // SAFETY: prefetch is a hint; it never faults, whatever the address.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off))
            };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ptr, bytes);
}

/// How many rows ahead the propagation prefetches.
const PREFETCH_ROWS: usize = 4;

/// Add the contributions of every synapse of the spiking sources onto their targets. Rows are
/// scattered through memory, so their bounds are gathered first (independent loads that overlap)
/// and each row is prefetched a few rows ahead.
fn accumulate<C: Copy + Into<u32>>(
    input: &mut [i64],
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
        for (&t, &c) in conn.targets[a..b].iter().zip(&codes[a..b]) {
            let slot = &mut input[t as usize];
            *slot = slot.wrapping_add(table[c.into() as usize] as i64);
        }
    }
}

/// The reference backend.
pub struct CpuBackend {
    params: Vec<AreaParams>,
    neurons: u32,
    shards: Vec<Shard>,
    contributions: Vec<i32>,
    bytes_per_synapse: f64,
    burst: u64,
    /// Every neuron fired in the last burst, ascending, with its potential at fire.
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    readback: Readback,
    out: Vec<u32>,
    out_v: Vec<i64>,
}

impl CpuBackend {
    /// Take a built brain; its connectome's parts become the threads' shards.
    pub fn new(brain: Brain, readback: Readback) -> CpuBackend {
        let params = brain.layout.params.clone();
        let bytes_per_synapse = brain.connectome.bytes_per_synapse();
        let shards = brain.connectome.parts.into_iter().map(|p| Shard::new(p, &params)).collect();
        CpuBackend {
            params,
            neurons: brain.layout.neurons,
            shards,
            bytes_per_synapse,
            contributions: brain.connectome.contributions,
            burst: 0,
            fired: Vec::new(),
            fired_v: Vec::new(),
            readback,
            out: Vec::new(),
            out_v: Vec::new(),
        }
    }

    fn shard_of(&self, n: u32) -> usize {
        self.shards.partition_point(|s| s.conn.targets_range.end <= n)
    }
}

impl Backend for CpuBackend {
    fn info(&self) -> BackendInfo {
        let bytes: u64 = self.shards.iter().map(|s| s.conn.bytes() + s.potential.len() as u64 * (8 + 2 + 2 + 8)).sum();
        BackendInfo {
            backend: "cpu".into(),
            device: format!("{} threads, {} shards", rayon::current_num_threads(), self.shards.len()),
            memory_bytes: bytes,
            bytes_per_synapse: self.bytes_per_synapse,
        }
    }

    fn burst(&mut self, injection: &[Injection]) -> Result<BurstOutput<'_>, BackendError> {
        for inj in injection {
            if inj.neuron >= self.neurons {
                return Err(BackendError::InjectionOutOfRange { neuron: inj.neuron, neurons: self.neurons });
            }
        }
        for inj in injection {
            let s = self.shard_of(inj.neuron);
            let shard = &mut self.shards[s];
            let slot = &mut shard.input[(inj.neuron - shard.conn.targets_range.start) as usize];
            *slot = slot.wrapping_add(inj.potential.0);
        }
        let t = self.burst + 1;
        let spikes = &self.fired;
        let params = &self.params;
        let table = &self.contributions;
        self.shards.par_iter_mut().for_each(|shard| {
            shard.propagate(spikes, table);
            shard.step_all(params, t);
        });
        self.burst = t;
        self.fired.clear();
        self.fired_v.clear();
        for s in &self.shards {
            self.fired.extend_from_slice(&s.fired);
            self.fired_v.extend_from_slice(&s.fired_v);
        }
        let (fired, potentials) = match &self.readback {
            Readback::All => (&self.fired[..], &self.fired_v[..]),
            Readback::Ranges(_) => {
                self.out.clear();
                self.out_v.clear();
                for (&n, &v) in self.fired.iter().zip(&self.fired_v) {
                    if self.readback.contains(n) {
                        self.out.push(n);
                        self.out_v.push(v);
                    }
                }
                (&self.out[..], &self.out_v[..])
            }
        };
        Ok(BurstOutput { burst: t, fired, potentials, fired_total: self.fired.len() as u64 })
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = NeuronState { burst: self.burst, fired: self.fired.clone(), ..Default::default() };
        for s in &self.shards {
            st.potential.extend_from_slice(&s.potential);
            st.refractory.extend_from_slice(&s.refractory);
            st.consecutive.extend_from_slice(&s.consecutive);
        }
        Ok(st)
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        let n = self.neurons as usize;
        for len in [st.potential.len(), st.refractory.len(), st.consecutive.len()] {
            if len != n {
                return Err(BackendError::StateMismatch { got: len, expected: n });
            }
        }
        if let Some(&bad) = st.fired.iter().find(|&&f| f >= self.neurons) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: self.neurons });
        }
        for s in &mut self.shards {
            let r = s.conn.targets_range.start as usize..s.conn.targets_range.end as usize;
            s.potential.copy_from_slice(&st.potential[r.clone()]);
            s.refractory.copy_from_slice(&st.refractory[r.clone()]);
            s.consecutive.copy_from_slice(&st.consecutive[r]);
            s.input.iter_mut().for_each(|x| *x = 0);
            s.classify(&self.params);
        }
        self.burst = st.burst;
        self.fired = st.fired.clone();
        self.fired_v = vec![0; st.fired.len()];
        Ok(())
    }
}
