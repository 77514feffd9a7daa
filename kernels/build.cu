// build.cu: a connectome built where it lives. A brain whose every mapping has a closed form
// (src/connectome/procedural.rs `ClosedForm`: fanouts drawn synapse by synapse) is stored on the
// GPU by drawing its rows there, in the order the host's build stores them (each row sorted by
// target, then by mapping), with the same contribution codes (after common.cuh; see
// src/backend/cuda/build.rs).

// One source area's rows: each of its `count` neurons has a row of `len` synapses from the maps
// `maps[f0 .. f1)` (in mapping order), starting at `off + (s - first) * len`.
struct MatArea {
    u64 off;
    u32 first;
    u32 count;
    u32 len;
    u32 f0;
    u32 f1;
    u32 pad;
};

// The area of neuron s (areas ascending by first; every neuron with a row is in one).
__device__ __forceinline__ int mat_area(const MatArea* areas, u32 n_areas, u32 s) {
    int lo = 0, hi = (int)n_areas - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (areas[mid].first <= s) lo = mid; else hi = mid - 1;
    }
    return (n_areas && s - areas[lo].first < areas[lo].count) ? lo : -1;
}

// Row pointers of `n` neurons (u32 or u64): rows of neurons outside every area are empty.
extern "C" __global__ void materialize_rows(const MatArea* areas, u32 n_areas, u32 n, u64 total, void* row_ptr, u32 row64) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += (u64)gridDim.x * blockDim.x) {
        u64 at = total;
        if (i < n) {
            // the first row at or after i: its area's offset, or the next area's
            int lo = 0, hi = (int)n_areas;
            while (lo < hi) {
                const int mid = (lo + hi) / 2;
                if ((u64)areas[mid].first + areas[mid].count <= i) lo = mid + 1; else hi = mid;
            }
            if (lo < (int)n_areas) {
                const MatArea a = areas[lo];
                at = a.off + (i > a.first ? (u64)(i - a.first) * a.len : 0);
            }
        }
        if (row64) ((u64*)row_ptr)[i] = at; else ((u32*)row_ptr)[i] = (u32)at;
    }
}

// Rows of sources lo..hi: a warp per source neuron, its keys (target << 32 | slot) drawn into shared
// memory (`pow2` per warp: the longest row rounded up to a power of two), sorted (bitonic), written.
extern "C" __global__ void __launch_bounds__(128) materialize(const ProcMap* maps, const u16* map_code, const MatArea* areas, u32 n_areas,
                                                              u32 lo, u32 hi, u32 pow2, u32* targets, u16* codes) {
    extern __shared__ u64 keys_all[];
    const u32 lane = threadIdx.x & 31;
    u64* keys = keys_all + (threadIdx.x >> 5) * pow2;
    const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    for (u64 s64 = lo + warp; s64 < hi; s64 += warps) {
        const u32 s = (u32)s64;
        const int ai = mat_area(areas, n_areas, s);
        if (ai < 0) continue;
        const MatArea a = areas[ai];
        if (a.len == 0) continue;
        u32 p = 1;
        while (p < a.len) p <<= 1;
        // draw: synapse i of the row is draw j of map f (maps in order, each its fanout)
        for (u32 i = lane; i < p; i += 32) {
            u64 k = ~0ULL;
            if (i < a.len) {
                u32 f = a.f0, j = i;
                while (j >= maps[f].fanout) j -= maps[f++].fanout;
                const ProcMap m = maps[f];
                const u64 key = mix64(m.key ^ ((u64)s * 0xd1b54a32d192ed03ULL));
                const u64 x = mix64(key + (u64)(j + 1) * 0x9e3779b97f4a7c15ULL);
                const u32 t = m.dst_first + (u32)__umul64hi(x, (u64)m.dst_count);
                k = ((u64)t << 32) | (f - a.f0);
            }
            keys[i] = k;
        }
        __syncwarp();
        for (u32 size = 2; size <= p; size <<= 1) {
            for (u32 stride = size >> 1; stride > 0; stride >>= 1) {
                for (u32 i = lane; i < p; i += 32) {
                    const u32 q = i ^ stride;
                    if (q > i) {
                        const u64 x = keys[i], y = keys[q];
                        const bool up = (i & size) == 0;
                        if ((x > y) == up) { keys[i] = y; keys[q] = x; }
                    }
                }
                __syncwarp();
            }
        }
        const u64 at = a.off + (u64)(s - a.first) * a.len;
        for (u32 i = lane; i < a.len; i += 32) {
            const u64 k = keys[i];
            targets[at + i] = (u32)(k >> 32);
            codes[at + i] = map_code[a.f0 + (u32)(k & 0xffffffffu)];
        }
        __syncwarp();
    }
}
