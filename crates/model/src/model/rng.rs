//! FEAGI's PCG hash: the only source of randomness while bursting, a pure function of
//! (neuron id, burst number), so every backend and shard draws the same numbers.

/// The 32-bit PCG hash of neuron `n` at burst `t` (burst numbers are used modulo 2^32).
#[inline(always)]
pub fn pcg_hash(n: u32, t: u64) -> u32 {
    let x = n.wrapping_mul(2_654_435_761).wrapping_add((t as u32).wrapping_mul(1_597_334_677));
    let state = x.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// `rand(n, t)` of the model, in [0, 1).
pub fn rand01(n: u32, t: u64) -> f64 {
    pcg_hash(n, t) as f64 / 4_294_967_296.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values computed by hand from the formula in burst-model.md (Python, u32 masks).
    #[test]
    fn matches_reference_formula() {
        fn reference(n: u64, t: u64) -> u64 {
            let m = 0xFFFF_FFFFu64;
            let x = (n * 2_654_435_761 + t * 1_597_334_677) & m;
            let state = (x * 747_796_405 + 2_891_336_453) & m;
            let word = (((state >> ((state >> 28) + 4)) ^ state) * 277_803_737) & m;
            (word >> 22) ^ word
        }
        for n in [0u32, 1, 2, 77, 123_456, u32::MAX] {
            for t in [0u64, 1, 2, 1000, 7919, u32::MAX as u64] {
                assert_eq!(pcg_hash(n, t) as u64, reference(n as u64, t), "n={n} t={t}");
            }
        }
        assert!(rand01(5, 9) < 1.0);
    }
}
