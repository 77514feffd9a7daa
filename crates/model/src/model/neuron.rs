//! The per-neuron step of one burst: the reference every backend reproduces (steps 2-7 of
//! burst-model.md; step 1, gathering the input, is the backend's job).

use super::fixed::{self, clamp_potential};
use super::rng::pcg_hash;
use super::{AreaParams, FLAG_MP_ACC, FLAG_NEVER_FIRE, LEAK_LINEAR};

/// Bytes of state per neuron in the backends: potential (8), input accumulator (8), refractory
/// countdown (2), consecutive-fire count (2).
pub const STATE_BYTES_PER_NEURON: u64 = 20;

/// The state of every neuron, in id order: what a checkpoint saves and a parity check compares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeuronState {
    /// Number of the last burst run (0 before the first).
    pub burst: u64,
    /// Membrane potentials, in LSBs of [`super::fixed`].
    pub potential: Vec<i64>,
    /// Refractory countdowns.
    pub refractory: Vec<u16>,
    /// Consecutive-fire counts.
    pub consecutive: Vec<u16>,
    /// Neurons that fired in the last burst (sorted): their spikes arrive in the next one.
    pub fired: Vec<u32>,
    /// What plastic mappings learned (empty for a brain without plasticity).
    pub learned: super::plasticity::Learned,
}

impl NeuronState {
    /// The state of `neurons` neurons before the first burst: all at rest.
    pub fn new(neurons: usize) -> Self {
        NeuronState {
            burst: 0,
            potential: vec![0; neurons],
            refractory: vec![0; neurons],
            consecutive: vec![0; neurons],
            fired: Vec::new(),
            learned: Default::default(),
        }
    }
}

/// The excitability draw of step 5: `rand(n, t) < excitability`.
#[inline(always)]
pub fn excited(p: &AreaParams, n: u32, t: u64) -> bool {
    p.excitability > u32::MAX as u64 || (pcg_hash(n, t) as u64) < p.excitability
}

/// Steps 2-7 of burst `t` for neuron `n` of an area with parameters `p` and threshold `threshold`
/// (gradient applied), given its whole input `input` (injection + synapses + power) in LSBs.
/// Returns the potential at fire when the neuron fires.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn step(p: &AreaParams, threshold: i64, v: &mut i64, rc: &mut u16, cfc: &mut u16, input: i64, n: u32, t: u64) -> Option<i64> {
    // 2. no charge accumulation: the potential starts from 0 every burst
    if p.flags & FLAG_MP_ACC == 0 {
        *v = 0;
    }
    // 3. refractory: count down, release the fire limit when the countdown ends, drop the input
    if *rc > 0 {
        *rc -= 1;
        if *rc == 0 && p.fire_limit > 0 && *cfc as u32 >= p.fire_limit {
            *cfc = 0;
        }
        return None;
    }
    // 4. integrate
    *v = clamp_potential(*v + clamp_potential(input));
    // 5. the firing window
    let window = *v >= threshold && (p.threshold_limit == 0 || *v <= p.threshold_limit) && p.flags & FLAG_NEVER_FIRE == 0;
    if window {
        if p.fire_limit > 0 && *cfc as u32 >= p.fire_limit {
            *cfc = 0;
            return None;
        }
        if excited(p, n, t) {
            // 6. fire
            let at_fire = *v;
            *v = 0;
            *cfc = cfc.saturating_add(1);
            let snooze = if p.fire_limit > 0 && *cfc as u32 >= p.fire_limit { p.snooze } else { 0 };
            *rc = (p.refractory + snooze) as u16;
            return Some(at_fire);
        }
    }
    // 7. no fire
    if p.fire_limit > 0 {
        *cfc = 0;
    }
    *v = if p.leak_kind == LEAK_LINEAR { fixed::apply_linear_leak(*v, p.leak_linear) } else { fixed::apply_fraction_leak(*v, p.leak_keep) };
    None
}
