//! Counter-based random draws for building the connectome: each draw is a pure function of
//! (genome seed, mapping, source neuron, draw index), so any subset of rows can be built on any
//! thread or machine and give the same synapses. SplitMix64's finaliser mixes the counter.

/// SplitMix64's finaliser: a well-mixed 64-bit value of `z`.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A stream of draws for one (seed, mapping, source) triple.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    key: u64,
    counter: u64,
}

impl Stream {
    /// The stream of draws of `source`'s synapses in mapping `mapping` of a brain seeded `seed`.
    pub fn new(seed: u64, mapping: u64, source: u64) -> Stream {
        Stream::for_source(Stream::mapping_key(seed, mapping), source)
    }

    /// The part of a stream's key that (seed, mapping) gives (a GPU computes it once per mapping:
    /// [`super::ClosedForm`]).
    pub fn mapping_key(seed: u64, mapping: u64) -> u64 {
        mix64(seed ^ 0x6e65_7572_6f62_7572) ^ mix64(mapping.wrapping_add(0x9e37_79b9_7f4a_7c15))
    }

    /// The stream of `source` under a [`Stream::mapping_key`].
    pub fn for_source(mapping_key: u64, source: u64) -> Stream {
        Stream { key: mix64(mapping_key ^ source.wrapping_mul(0xd1b5_4a32_d192_ed03)), counter: 0 }
    }

    /// Skip `n` draws.
    pub fn skip(&mut self, n: u64) {
        self.counter += n;
    }

    #[inline(always)]
    /// The next draw.
    pub fn next_u64(&mut self) -> u64 {
        self.counter += 1;
        mix64(self.key.wrapping_add(self.counter.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
    }

    /// Uniform in `0..n` (multiply-shift; bias below 2^-32 for any n < 2^32).
    #[inline(always)]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `p` (0..1), as `draw < p × 2^64`.
    #[inline(always)]
    pub fn chance(&mut self, threshold: u64) -> bool {
        self.next_u64() < threshold
    }

    /// Uniform in (0, 1], 53 bits.
    #[inline(always)]
    pub fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// `p` (0..1) as a threshold on a u64 draw; 1 or more always passes.
pub fn chance_threshold(p: f64) -> Option<u64> {
    if p >= 1.0 {
        None
    } else if p <= 0.0 {
        Some(0)
    } else {
        Some((p * 18_446_744_073_709_551_616.0) as u64)
    }
}

/// Number of trials skipped before the next success of a Bernoulli(p) sequence (geometric), with
/// `libm`'s `log` so every machine computes the same value.
#[inline(always)]
pub fn geometric_skip(stream: &mut Stream, log1mp: f64) -> u64 {
    let g = libm::log(stream.open01()) / log1mp;
    if g >= u64::MAX as f64 {
        u64::MAX
    } else {
        g as u64
    }
}
