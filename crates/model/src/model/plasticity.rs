//! FEAGI's plasticity rule in integers (docs/plasticity.md): a window-coincidence Hebbian update
//! of 8-bit weights after every burst, and the coincidence that grows an associative synapse.
//! Pure functions of the rule and the two neurons' firing histories, so that every backend that
//! keeps the same histories computes the same weights.

/// The longest window a history holds (bits of a `u32`).
pub const MAX_WINDOW: u32 = 32;

/// The window of a FEAGI rule that gives none (7-element rules): 2 bursts.
pub const DEFAULT_WINDOW: u32 = 2;

/// The largest associative mapping (|source| × |destination| pairs): its possible synapses are
/// stored densely (docs/plasticity.md).
pub const MAX_ASSOCIATIVE_PAIRS: u64 = 1 << 26;

/// The most synapses an associative mapping grows when its genome sets no `max_synapses`.
pub const DEFAULT_MAX_SYNAPSES: u64 = 1_000_000;

/// A neuron's recent firing: bit `i` set = it fired `i` bursts ago (bit 0: the latest burst). A
/// learner keeps the bursts of its brain's longest window only, so a neuron silent for that long
/// has a history of 0 (and a record need only visit the neurons that have one).
pub type History = u32;

/// Shift in one burst's firing.
#[inline(always)]
pub fn record(h: History, fired: bool) -> History {
    (h << 1) | fired as u32
}

/// The learned state of a brain: every neuron's firing history and every existing plastic
/// synapse with its weight. Independent of how a backend stores or shards its synapses, so a
/// checkpoint moves between backends and shard counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Learned {
    /// Whether the learning from the last burst run is in (`history` holds its firing, the
    /// weights its update): a backend learns from a burst as the next one starts, or ahead of it
    /// (the GPU, and the CPU before a snapshot). A restored state that is ahead is not learned
    /// from again.
    pub ahead: bool,
    /// Firing history of every neuron, the bursts of the brain's longest window (empty: the brain
    /// has no plastic mapping).
    pub history: Vec<History>,
    /// Every existing synapse of a plastic mapping, ascending by (source, target, mapping); an
    /// associative mapping's pairs only once grown. A shard of a brain spread over processes holds
    /// the synapses onto its own neurons.
    pub synapses: Vec<LearnedSynapse>,
    /// Every pair an associative mapping grew, in the whole brain, ascending by (mapping, source,
    /// target): every shard knows them all, as every shard decides growth alike.
    pub grown: Vec<GrownPair>,
}

/// A pair an associative mapping grew.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GrownPair {
    /// Index of its mapping in the genome.
    pub mapping: u32,
    /// The source neuron.
    pub source: u32,
    /// The target neuron.
    pub target: u32,
}

/// One plastic synapse and its weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LearnedSynapse {
    /// The source neuron.
    pub source: u32,
    /// The target neuron.
    pub target: u32,
    /// Index of its mapping in the genome.
    pub mapping: u32,
    /// Its weight now.
    pub weight: u8,
}

impl Learned {
    /// Whether nothing has been learned.
    pub fn is_empty(&self) -> bool {
        self.history.is_empty() && self.synapses.is_empty() && self.grown.is_empty()
    }
}

/// A mapping's rule: `Δ+`, `Δ-` and the window `W` in bursts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `Δ+`: potentiation's step.
    pub ltp: u8,
    /// `Δ-`: depression's step.
    pub ltd: u8,
    /// `W`: the window in bursts.
    pub window: u32,
}

/// What one synapse's update does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The weight stays.
    Unchanged,
    /// The weight grows by `Δ+` (saturating).
    Potentiate,
    /// The weight shrinks by `Δ-` (saturating).
    Depress,
}

impl Rule {
    /// The bits of a history that the window covers.
    #[inline(always)]
    pub fn mask(&self) -> History {
        window_mask(self.window)
    }
}

/// The bits of a history that a window of `w` bursts covers.
#[inline(always)]
pub fn window_mask(w: u32) -> History {
    if w >= MAX_WINDOW {
        u32::MAX
    } else {
        (1 << w) - 1
    }
}

/// A step `constant × multiplier` beyond this is refused as an overflow (the weights span 0..255).
pub const OVERFLOW: f64 = 1.0e6;

impl Rule {
    /// What burst `t`'s update (bursts numbered from 1) does to a synapse whose source and
    /// target have these histories: nothing before `t = W`; nothing when neither fired in the
    /// window; potentiation when both fired in every burst of it; depression otherwise.
    #[inline(always)]
    pub fn change(&self, t: u64, source: History, target: History) -> Change {
        let m = self.mask();
        let (s, d) = (source & m, target & m);
        if t < self.window as u64 || (s == 0 && d == 0) {
            Change::Unchanged
        } else if s == m && d == m {
            Change::Potentiate
        } else {
            Change::Depress
        }
    }

    /// The weight after burst `t`'s update.
    #[inline(always)]
    pub fn update(&self, t: u64, w: u8, source: History, target: History) -> u8 {
        match self.change(t, source, target) {
            Change::Unchanged => w,
            Change::Potentiate => w.saturating_add(self.ltp),
            Change::Depress => w.saturating_sub(self.ltd),
        }
    }

    /// Whether an associative mapping grows a synapse between a source and a target that have
    /// none, after burst `t` (both fired in every burst of the window, `Δ+ > 0`, not a self-pair);
    /// its weight is `Δ+`.
    #[inline(always)]
    pub fn grows(&self, t: u64, source: (u32, History), target: (u32, History)) -> bool {
        let m = self.mask();
        self.ltp > 0 && t >= self.window as u64 && source.0 != target.0 && source.1 & m == m && target.1 & m == m
    }
}

/// Whether a brain learns from each burst's firing, switched while it runs (`backend.learning`,
/// docs/plasticity.md). Off, no weight changes and no synapse grows, but the histories go on
/// recording the firing, so that learning switched back on sees true windows at once.
///
/// A switch asked for after burst `t` takes effect with the learning from burst `t + 2`'s firing:
/// the learning from burst `t + 1`'s may be under way already (a GPU runs it right after the
/// burst). When it switches off, the learning from burst `t + 1`'s firing is the last, and pays
/// every depression deferred until then, so that the weights stand frozen as a snapshot reports
/// them. Before the first burst a switch holds from the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// Whether the learning from the firing of bursts before `from` is on.
    pub before: bool,
    /// The first burst whose firing is learned from as `after` says.
    pub from: u64,
    /// Whether the learning from the firing of bursts from `from` on is on.
    pub after: bool,
}

impl Default for Switch {
    fn default() -> Switch {
        Switch { before: true, from: 0, after: true }
    }
}

impl Switch {
    /// Whether the brain learns from burst `t`'s firing.
    #[inline(always)]
    pub fn learns(&self, t: u64) -> bool {
        if t < self.from {
            self.before
        } else {
            self.after
        }
    }

    /// Whether the learning from burst `t`'s firing is the last before learning stops: it brings
    /// every synapse up to date.
    #[inline(always)]
    pub fn settles(&self, t: u64) -> bool {
        self.learns(t) && !self.learns(t + 1)
    }

    /// Switch to `on` after burst `last` (0: before the first burst, from the start).
    pub fn set(&mut self, on: bool, last: u64) {
        *self = if last == 0 {
            Switch { before: on, from: 0, after: on }
        } else {
            Switch { before: self.learns(last + 1), from: last + 2, after: on }
        };
    }

    /// One word for a device: `from << 2 | before << 1 | after`.
    pub fn word(&self) -> u64 {
        self.from << 2 | (self.before as u64) << 1 | self.after as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RULE: Rule = Rule { ltp: 5, ltd: 2, window: 2 };

    /// The weights after bursts 1..=4 of a synapse with weight 10 whose source and target fire
    /// as `s` and `d` ('1' = fired).
    fn run(s: &str, d: &str) -> Vec<u8> {
        let (mut hs, mut hd, mut w) = (0, 0, 10u8);
        s.bytes()
            .zip(d.bytes())
            .enumerate()
            .map(|(i, (a, b))| {
                hs = record(hs, a == b'1');
                hd = record(hd, b == b'1');
                w = RULE.update(i as u64 + 1, w, hs, hd);
                w
            })
            .collect()
    }

    #[test]
    fn the_specs_worked_examples() {
        assert_eq!(run("1111", "1111"), [10, 15, 20, 25]);
        assert_eq!(run("1111", "0000"), [10, 8, 6, 4]);
        assert_eq!(run("1010", "1010"), [10, 8, 6, 4]);
        assert_eq!(run("0000", "0000"), [10, 10, 10, 10]);
        // associative: a and b both fire in bursts 1 and 2 -> a synapse a -> b with w = 5 from
        // burst 3 on (grown after burst 2)
        let (a, b) = (record(record(0, true), true), record(record(0, true), true));
        assert!(!RULE.grows(1, (0, record(0, true)), (1, record(0, true))));
        assert!(RULE.grows(2, (0, a), (1, b)));
        assert!(!RULE.grows(2, (0, a), (0, b)), "no self-pair");
    }

    proptest! {
        /// Only the last W bursts count; neither firing leaves the weight; both firing in the
        /// whole window never lowers it; anything else never raises it.
        #[test]
        fn the_window_and_the_bounds(w in any::<u8>(), s in any::<u32>(), d in any::<u32>(), old in any::<u32>(),
                                     window in 1u32..=32, ltp in any::<u8>(), ltd in any::<u8>(), t in 0u64..100) {
            let rule = Rule { ltp, ltd, window };
            let m = rule.mask();
            let stale = |h: u32| (h & m) | (old & !m);
            prop_assert_eq!(rule.update(t, w, s, d), rule.update(t, w, stale(s), stale(d)));
            let after = rule.update(t, w, s, d);
            match rule.change(t, s, d) {
                Change::Unchanged => prop_assert_eq!(after, w),
                Change::Potentiate => prop_assert!(after >= w),
                Change::Depress => prop_assert!(after <= w),
            }
            if t >= window as u64 && s & m == 0 && d & m == 0 {
                prop_assert_eq!(after, w);
            }
        }
    }
}
