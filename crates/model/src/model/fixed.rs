//! The fixed-point number format of potentials, inputs and synaptic contributions.
//!
//! Every backend (CPU, CUDA, several GPUs, several machines) must produce the same fired set bit for
//! bit. Floating-point sums depend on the order of the additions, and the order in which spikes land
//! on a neuron is not fixed on a GPU; integer sums are exact and order-independent. So all membrane
//! arithmetic is integer:
//!
//! | quantity | storage | unit (1 LSB) | range | on overflow |
//! |---|---|---|---|---|
//! | potential `V`, threshold, limit, input sum | `i64` | 2^-12 = 0.000244 | ±2^47 LSB = ±3.4e10 | saturates at ±[`POTENTIAL_MAX`] |
//! | synaptic contribution `c` | `i32` | 2^-12 | ±524,287.99 (8x the largest FEAGI value, 255 x 255) | saturates when the connectome is built |
//! | leak fraction | `u32` keep factor | 2^-16 | 0..1 | clamped |
//! | excitability | `u64` | 2^-32 | 0..1 | >= 1 always fires |
//!
//! The input of one burst is an `i64` sum of `i32` contributions: even 2^32 synapses of the largest
//! contribution onto one neuron cannot overflow it. The sum is then clamped to ±`POTENTIAL_MAX`
//! before it is added to `V`, and `V` is clamped again, so `V * keep` (the fractional leak) never
//! overflows `i64`. Conversions from real numbers round to nearest (ties away from zero); a
//! contribution smaller than half an LSB rounds to 0 and its synapse is counted as dead by
//! `inspect`.

/// Fractional bits of potentials and contributions.
pub const FRAC_BITS: u32 = 12;
/// One potential unit (1.0) in LSBs.
pub const ONE: i64 = 1 << FRAC_BITS;
/// Largest magnitude of a potential, in LSBs (2^47 - 1).
pub const POTENTIAL_MAX: i64 = (1 << 47) - 1;
/// Largest magnitude of a stored synaptic contribution, in LSBs.
pub const CONTRIBUTION_MAX: i64 = i32::MAX as i64;
/// Fractional bits of the leak's keep factor.
pub const LEAK_BITS: u32 = 16;

/// A potential (or threshold, or input) in fixed point: `value = lsb / 4096`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Potential(pub i64);

impl Potential {
    /// A potential of zero.
    pub const ZERO: Potential = Potential(0);
    /// A potential of one (a threshold of 1.0).
    pub const ONE: Potential = Potential(ONE);

    /// Nearest representable potential, saturating at ±`POTENTIAL_MAX`. NaN maps to 0.
    pub fn from_f64(v: f64) -> Potential {
        Potential(quantize(v, POTENTIAL_MAX))
    }

    /// The potential as a float (exact: every fixed-point value is a `f64`).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / ONE as f64
    }

    /// Saturating addition inside the potential range.
    #[inline(always)]
    pub fn sat_add(self, other: i64) -> Potential {
        Potential(clamp_potential(self.0.saturating_add(other)))
    }
}

impl std::fmt::Display for Potential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_f64())
    }
}

/// Clamp an `i64` to the potential range.
#[inline(always)]
pub fn clamp_potential(v: i64) -> i64 {
    v.clamp(-POTENTIAL_MAX, POTENTIAL_MAX)
}

/// Round `v * 2^FRAC_BITS` to the nearest integer (ties away from zero), saturating at ±`max`.
pub fn quantize(v: f64, max: i64) -> i64 {
    if v.is_nan() {
        return 0;
    }
    let scaled = (v * ONE as f64).round();
    if scaled >= max as f64 {
        max
    } else if scaled <= -(max as f64) {
        -max
    } else {
        scaled as i64
    }
}

/// A synaptic contribution `±weight × psp [/ out-degree]` in LSBs, saturating at the `i32` range.
pub fn contribution_from_f64(v: f64) -> i32 {
    quantize(v, CONTRIBUTION_MAX) as i32
}

/// The fractional leak as a keep factor `round((1 - leak) × 2^16)`, leak clamped to 0..1.
pub fn leak_keep_factor(leak: f64) -> u32 {
    let keep = (1.0 - leak.clamp(0.0, 1.0)) * (1u64 << LEAK_BITS) as f64;
    keep.round() as u32
}

/// Apply a fractional leak: `V × keep / 2^16`, truncated toward zero (the potential decays toward 0
/// and never changes sign). `|V| <= POTENTIAL_MAX < 2^47` and `keep <= 2^16` keep the product in `i64`.
#[inline(always)]
pub fn apply_fraction_leak(v: i64, keep: u32) -> i64 {
    (v * keep as i64) / (1i64 << LEAK_BITS)
}

/// Apply a linear leak of `amount` LSBs toward 0, never crossing it.
#[inline(always)]
pub fn apply_linear_leak(v: i64, amount: i64) -> i64 {
    if v > 0 {
        (v - amount).max(0)
    } else {
        (v + amount).min(0)
    }
}

/// Excitability as a `u64` threshold on the 32-bit hash: fire iff `hash < threshold`;
/// `2^32` (excitability >= 1) always fires, 0 never does.
pub fn excitability_threshold(p: f64) -> u64 {
    if p.is_nan() || p <= 0.0 {
        0
    } else if p >= 1.0 {
        1u64 << 32
    } else {
        (p * (1u64 << 32) as f64).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_and_round_trip() {
        assert_eq!(Potential::from_f64(1.0).0, 4096);
        assert_eq!(Potential::from_f64(0.1).0, 410); // 409.6 rounds to 410
        assert_eq!(Potential::from_f64(-0.1).0, -410);
        assert_eq!(Potential::from_f64(1.0 / 8192.0).0, 1); // half an LSB rounds away from zero
        assert_eq!(Potential::from_f64(1.0 / 8193.0).0, 0);
        assert_eq!(Potential::from_f64(f64::NAN).0, 0);
        assert_eq!(Potential(410).to_f64(), 410.0 / 4096.0);
    }

    #[test]
    fn potential_saturates() {
        assert_eq!(Potential::from_f64(1e30).0, POTENTIAL_MAX);
        assert_eq!(Potential::from_f64(-1e30).0, -POTENTIAL_MAX);
        assert_eq!(Potential::from_f64(f64::INFINITY).0, POTENTIAL_MAX);
        assert_eq!(Potential(POTENTIAL_MAX).sat_add(i64::MAX).0, POTENTIAL_MAX);
        assert_eq!(Potential(-POTENTIAL_MAX).sat_add(i64::MIN).0, -POTENTIAL_MAX);
        // the documented range: 3.4e10 potential units
        assert!(Potential(POTENTIAL_MAX).to_f64() > 3.4e10);
    }

    #[test]
    fn contributions_cover_feagi_range_with_headroom() {
        // 255 x 255 is the largest FEAGI contribution; it is exact, and so is 8x that.
        assert_eq!(contribution_from_f64(65025.0) as i64, 65025 * ONE);
        assert_eq!(contribution_from_f64(-65025.0) as i64, -65025 * ONE);
        assert_eq!(contribution_from_f64(8.0 * 65025.0) as i64, 8 * 65025 * ONE);
        assert_eq!(contribution_from_f64(1e9), i32::MAX);
        assert_eq!(contribution_from_f64(-1e9), -i32::MAX);
        // hundreds of the largest inputs sum without overflow
        let sum: i64 = (0..100_000).map(|_| contribution_from_f64(65025.0) as i64).sum();
        assert_eq!(Potential(0).sat_add(sum).to_f64(), 65025.0 * 100_000.0);
    }

    #[test]
    fn fraction_leak_never_overflows_and_decays_toward_zero() {
        let keep = leak_keep_factor(0.1);
        assert_eq!(keep, 58982);
        assert_eq!(apply_fraction_leak(POTENTIAL_MAX, 1 << 16), POTENTIAL_MAX);
        assert_eq!(apply_fraction_leak(-POTENTIAL_MAX, 1 << 16), -POTENTIAL_MAX);
        assert_eq!(apply_fraction_leak(4096, keep), 3686);
        assert_eq!(apply_fraction_leak(-4096, keep), -3686);
        assert_eq!(apply_fraction_leak(1, keep), 0);
        assert_eq!(apply_fraction_leak(-1, keep), 0);
        assert_eq!(leak_keep_factor(1.0), 0);
        assert_eq!(leak_keep_factor(2.0), 0);
        assert_eq!(leak_keep_factor(-1.0), 1 << 16);
    }

    #[test]
    fn linear_leak_stops_at_zero() {
        assert_eq!(apply_linear_leak(10, 3), 7);
        assert_eq!(apply_linear_leak(2, 3), 0);
        assert_eq!(apply_linear_leak(-2, 3), 0);
        assert_eq!(apply_linear_leak(-10, 3), -7);
        assert_eq!(apply_linear_leak(0, 3), 0);
    }

    #[test]
    fn excitability_limits() {
        assert_eq!(excitability_threshold(1.0), 1 << 32);
        assert_eq!(excitability_threshold(5.0), 1 << 32);
        assert_eq!(excitability_threshold(0.0), 0);
        assert_eq!(excitability_threshold(-1.0), 0);
        assert_eq!(excitability_threshold(0.5), 1 << 31);
    }
}
