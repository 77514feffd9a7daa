// procbin.cu: the procedural synapses of a large brain, binned (after propagate.cu; see
// docs/capacity.md). Drawn synapses land at random in an accumulator far larger than L2, and a
// random atomic there costs a read and a write of DRAM each. So they are drawn in two passes:
// `proc_bin` draws every synapse of the fired sources once and appends it to the bin of its
// target's tile (2^bits neurons, 2M or 4M: one tile's 8 or 16 MB of 32-bit sums fits in L2), staged per block in
// shared memory and written out in runs; `proc_add` then adds the bins tile after tile into 32-bit
// sums held in L2, and `proc_fold` adds those to the accumulator. A bin that would overflow its room adds directly (exact, slower).
// The sums are exact integers: the same input as the direct path, bit for bit.

#define PROC_STAGE 512

// Entry: target within its tile (low `bits` bits) | map index << bits.
template <typename ACC>
__device__ void proc_bin_impl(const Net& net, const Side& rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    if (kmax == 0) return;
    extern __shared__ u32 stage[]; // n_tiles x PROC_STAGE entries, then n_tiles fill counters
    u32* fill = stage + n_tiles * PROC_STAGE;
    for (u32 i = threadIdx.x; i < n_tiles; i += blockDim.x) fill[i] = 0;
    __syncthreads();
    const u32 count = (u32)(*rd.counter >> net.count_shift);
    const u64 events = (u64)count * net.n_proc * kmax;
    const u64 tmask = (1u << bits) - 1;
    // write out the staged entries of tile p (the calling warp); returns nothing, fills fill[p] = 0
    auto flush = [&](u32 p, u32 lane) {
        const u32 f = fill[p];
        u64 base = 0;
        if (lane == 0) base = atomicAdd(counts + p, (u64)f);
        base = __shfl_sync(0xffffffffu, base, 0);
        for (u32 i = lane; i < f; i += 32) {
            const u32 e = stage[p * PROC_STAGE + i];
            if (base + i < room) {
                bins[p * room + base + i] = e;
            } else {
                const u32 t = (p << bits) | (e & tmask);
                acc_add<ACC>(net.acc, t, net.proc[e >> bits].contribution);
            }
        }
        __syncwarp();
        if (lane == 0) fill[p] = 0;
    };
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const u64 step = (u64)gridDim.x * blockDim.x;
    // rounds of blockDim.x synapses per block; the grid strides over the whole range together
    for (u64 r0 = (u64)blockIdx.x * blockDim.x; r0 < events; r0 += step) {
        const u64 e = r0 + threadIdx.x;
        if (e < events) {
            // (32-bit division where the range allows: several times cheaper)
            const u64 it = events <= 0xffffffffull ? (u64)((u32)e / kmax) : e / kmax;
            const u32 j = (u32)(e - it * kmax);
            const u32 s = rd.fired[it / net.n_proc];
            const u32 mi = (u32)(it % net.n_proc);
            const ProcMap m = net.proc[mi];
            if (s != DEAD && s - m.src_first < m.src_count && j < m.fanout) {
                const u64 key = mix64(m.key ^ ((u64)s * 0xd1b54a32d192ed03ULL));
                const u32 d = proc_target(m, key, j);
                const u32 t = d - net.base;
                if (d != ~0u && t < net.n) {
                    const u32 p = t >> bits;
                    const u32 at = atomicAdd(fill + p, 1u);
                    stage[p * PROC_STAGE + at] = (t & tmask) | (mi << bits);
                }
            }
        }
        __syncthreads();
        // a tile that might not take the next round is written out (at most blockDim.x more)
        for (u32 p = warp; p < n_tiles; p += warps) {
            if (fill[p] > PROC_STAGE - blockDim.x) flush(p, lane);
        }
        __syncthreads();
    }
    for (u32 p = warp; p < n_tiles; p += warps) {
        if (fill[p]) flush(p, lane);
    }
}

// The bins, tile after tile (the grid walks them in order, so one tile's sums are in L2 at a
// time), added into 32-bit sums (`scratch`, one per neuron: half the bytes of the accumulator, so a
// tile's sums stay in L2 under the adds). A step of a sum that leaves the i32 range (seen from the
// value the atomic returns) marks its tile in `over`: its sums are dropped by `proc_fold` and its
// bin is added again into the 64-bit accumulator by `proc_redo`. Exact either way: when no step
// overflowed, every partial sum, the last included, is the exact one.
template <typename ACC>
__device__ void proc_add_impl(const Net& net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, u32 bits, int* scratch, u32* over) {
    const u64 tmask = (1u << bits) - 1;
    const u64 step = (u64)gridDim.x * blockDim.x;
    for (u32 p = 0; p < n_tiles; p++) {
        const u64 c = min(counts[p], room);
        const u32* b = bins + p * room;
        bool overflow = false;
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < c; i += step) {
            // streamed past L2 (evict first): L2 keeps the tile's sums
            const u32 e = __ldcs(b + i);
            const int v = net.proc[e >> bits].contribution;
            const int old = atomicAdd(scratch + ((p << bits) | (u32)(e & tmask)), v);
            const int sum = (int)((unsigned)old + (unsigned)v);
            overflow |= ((old ^ sum) & (v ^ sum)) < 0;
        }
        if (__any_sync(0xffffffffu, overflow) && (threadIdx.x & 31) == 0) over[p] = 1;
    }
}

// The 32-bit sums into the accumulator (a tile marked in `over` is left to `proc_redo`), zeroed
// for the next burst.
template <typename ACC>
__device__ void proc_fold_impl(const Net& net, int* scratch, const u32* over, u32 bits) {
    for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < net.n; t += gridDim.x * blockDim.x) {
        const int v = scratch[t];
        if (v != 0) {
            scratch[t] = 0;
            if (!over[t >> bits]) ((i64*)net.acc)[t] += v;
        }
    }
}

// The bins of the tiles marked in `over`, added again into the 64-bit accumulator.
template <typename ACC>
__device__ void proc_redo_impl(const Net& net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, u32 bits, const u32* over) {
    const u64 tmask = (1u << bits) - 1;
    const u64 step = (u64)gridDim.x * blockDim.x;
    for (u32 p = 0; p < n_tiles; p++) {
        if (!over[p]) continue;
        const u64 c = min(counts[p], room);
        const u32* b = bins + p * room;
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < c; i += step) {
            const u32 e = b[i];
            acc_add<ACC>(net.acc, (p << bits) | (u32)(e & tmask), net.proc[e >> bits].contribution);
        }
    }
}

extern "C" __global__ void proc_clear(u64* counts, u32* over, u32 n_tiles) {
    if (threadIdx.x < n_tiles) {
        counts[threadIdx.x] = 0;
        over[threadIdx.x] = 0;
    }
}

extern "C" __global__ void __launch_bounds__(256) proc_bin_n64(Net net, Side rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    proc_bin_impl<i64>(net, rd, bins, counts, room, n_tiles, bits, kmax);
}
extern "C" __global__ void __launch_bounds__(256) proc_add_n64(Net net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, u32 bits,
                                                                int* scratch, u32* over) {
    proc_add_impl<i64>(net, bins, counts, room, n_tiles, bits, scratch, over);
}
extern "C" __global__ void __launch_bounds__(256) proc_fold_n64(Net net, int* scratch, const u32* over, u32 bits) {
    proc_fold_impl<i64>(net, scratch, over, bits);
}
extern "C" __global__ void __launch_bounds__(256) proc_redo_n64(Net net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, u32 bits, const u32* over) {
    proc_redo_impl<i64>(net, bins, counts, room, n_tiles, bits, over);
}
