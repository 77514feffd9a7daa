// acc64.wgsl, appended to burst.wgsl where the device has 64-bit atomics (wgpu's
// SHADER_INT64_ATOMIC_ALL_OPS: Vulkan's shaderBufferInt64Atomics, DX12 SM 6.6): an addition is
// one 64-bit atomic whose result is not used, so the GPU adds where the cache is without a
// round trip (NVIDIA's RED), sums modulo 2^64 in any order, as the CPU's wrapping i64 sum.

@group(0) @binding(2) var<storage, read_write> acc: array<atomic<u64>>;

// Add v (modulo 2^64) to accumulator n.
fn acc_add(n: u32, v: i64) {
    atomicAdd(&acc[n], bitcast<u64>(v));
}
