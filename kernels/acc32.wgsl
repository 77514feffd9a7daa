// acc32.wgsl, appended to burst.wgsl on a device without 64-bit atomics (Metal): an accumulator is
// two 32-bit words; an addition adds its low word with a 32-bit atomic and, when that carried or
// the value is negative, the high word plus the carry: the words hold the sum modulo 2^64 whatever
// the order, as the CPU's wrapping i64 sum does.

@group(0) @binding(2) var<storage, read_write> acc: array<atomic<u32>>;

// Add v (modulo 2^64) to accumulator n: the low word, then the high word with the carry.
fn acc_add(n: u32, v: i64) {
    let lo = u32(v & 0xFFFFFFFFli);
    let hi = u32((v >> 32u) & 0xFFFFFFFFli);
    var carry = 0u;
    if lo != 0u {
        let old = atomicAdd(&acc[2u * n], lo);
        carry = select(0u, 1u, old > 0xFFFFFFFFu - lo);
    }
    if hi + carry != 0u {
        atomicAdd(&acc[2u * n + 1u], hi + carry);
    }
}
