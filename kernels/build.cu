// build.cu: a connectome built where it lives. A brain whose every mapping has a closed form
// (crates/engine/src/connectome/procedural.rs `ClosedForm`: fanouts drawn synapse by synapse) is stored on the
// GPU by drawing its rows there, in the order the host's build stores them (each row sorted by
// target, then by mapping), with the same contribution codes (after common.cuh; see
// crates/engine/src/backend/cuda/build/on_gpu.rs).

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

// Draw i of source s's row in area a: its key, target << 32 | the map's index in the area.
__device__ __forceinline__ u64 mat_key(const ProcMap* maps, const MatArea& a, u32 s, u32 i) {
    u32 f = a.f0, j = i;
    while (j >= maps[f].fanout) j -= maps[f++].fanout;
    const ProcMap m = maps[f];
    const u64 key = mix64(m.key ^ ((u64)s * 0xd1b54a32d192ed03ULL));
    const u64 x = mix64(key + (u64)(j + 1) * 0x9e3779b97f4a7c15ULL);
    const u32 t = m.dst_first + (u32)__umul64hi(x, (u64)m.dst_count);
    return ((u64)t << 32) | (f - a.f0);
}

// A warp draws source s's row into `keys` (p: its length rounded up to a power of two; the pad
// keys are ~0) and sorts it (bitonic): by target, then by map.
__device__ __forceinline__ void draw_sorted(const ProcMap* maps, const MatArea& a, u32 s, u32 p, u64* keys) {
    const u32 lane = threadIdx.x & 31;
    for (u32 i = lane; i < p; i += 32) keys[i] = i < a.len ? mat_key(maps, a, s, i) : ~0ULL;
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

// Where one GPU's part of a brain lies (its neurons lo..hi: the targets it stores, rows for every
// source; one GPU's whole brain: 0..n): its rows' counts (one u32 a source), its row pointers (u32,
// or u64 when row64), counted and scanned or in closed form, its targets (relative to lo) and u16
// codes. Another GPU's part is written by peer stores (NVLink). `bound` is the drawing GPU's own.
struct Owner {
    u64 counts;
    u64 row_ptr;
    u64 targets;
    u64 codes;
    u32 lo;
    u32 hi;
    u32 row64;
    u32 pad;
    u64 bound; // u64 a block of BOUND_SHIFT neurons of the brain: the input its GPU's rows give it
};

// Neurons per block of the input bounds (materialize, bound_fold): 2^BOUND_SHIFT.
#define BOUND_SHIFT 6

// One GPU's part of a brain on several: the rows' lengths vary, so a count pass, a scan into row
// pointers, then the rows. Each GPU draws the rows of its own neurons in both passes.

// part_count: a warp per source s of src_lo..src_hi counts its draws that land in each part
// (at most 64 parts, ranges ascending) into that part's counts.
extern "C" __global__ void part_count(const ProcMap* maps, const MatArea* areas, u32 n_areas, u32 src_lo, u32 src_hi, const Owner* owners,
                                      u32 n_owners) {
    const u32 lane = threadIdx.x & 31;
    const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    for (u64 s64 = src_lo + warp; s64 < src_hi; s64 += warps) {
        const u32 s = (u32)s64;
        const int ai = mat_area(areas, n_areas, s);
        // lane k counts part k's draws (c0) and part k + 32's (c1)
        u32 c0 = 0, c1 = 0;
        if (ai >= 0) {
            const MatArea a = areas[ai];
            for (u32 i0 = 0; i0 < a.len; i0 += 32) {
                u32 o = n_owners; // the part of this lane's draw: none past the row
                if (i0 + lane < a.len) {
                    const u32 t = (u32)(mat_key(maps, a, s, i0 + lane) >> 32);
                    u32 lo = 0, hi = n_owners - 1;
                    while (lo < hi) {
                        const u32 mid = (lo + hi + 1) / 2;
                        if (owners[mid].lo <= t) lo = mid; else hi = mid - 1;
                    }
                    if (t - owners[lo].lo < owners[lo].hi - owners[lo].lo) o = lo;
                }
                for (u32 k = 0; k < n_owners; k++) {
                    const u32 b = __popc(__ballot_sync(0xffffffffu, o == k));
                    if (lane == (k & 31)) {
                        if (k < 32) c0 += b; else c1 += b;
                    }
                }
            }
        }
        if (lane < n_owners) ((u32*)owners[lane].counts)[s] = c0;
        if (lane + 32 < n_owners) ((u32*)owners[lane + 32].counts)[s] = c1;
    }
}

// The scan of the counts into row pointers, over tiles of SCAN_TILE counts (a block of 256
// threads, 16 consecutive counts each): `scan_tiles` sums each tile, the host scans the sums
// (one word per tile), `scan_write` writes each tile's row pointers from its offset.
#define SCAN_TILE 4096
__device__ __forceinline__ u64 block_exclusive(u64 v, u64* warp_sum, u64& total) {
    const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const u64 incl = warp_scan(v);
    if (lane == 31) warp_sum[wid] = incl;
    __syncthreads();
    if (wid == 0) {
        const u64 w = lane < nw ? warp_sum[lane] : 0;
        const u64 wi = warp_scan(w);
        if (lane < nw) warp_sum[lane] = wi - w;
        if (lane == 31) warp_sum[32] = wi;
    }
    __syncthreads();
    const u64 r = warp_sum[wid] + incl - v;
    total = warp_sum[32];
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(256) scan_tiles(const u32* counts, u32 n, u64* tile_sums) {
    __shared__ u64 warp_sum[33];
    const u64 base = (u64)blockIdx.x * SCAN_TILE + threadIdx.x * 16;
    u64 v = 0;
    for (u32 k = 0; k < 16; k++) v += base + k < n ? counts[base + k] : 0;
    u64 total;
    block_exclusive(v, warp_sum, total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(256) scan_write(const u32* counts, u32 n, const u64* tile_offs, void* row_ptr, u32 row64) {
    __shared__ u64 warp_sum[33];
    const u64 base = (u64)blockIdx.x * SCAN_TILE + threadIdx.x * 16;
    u32 c[16];
    u64 v = 0;
#pragma unroll
    for (u32 k = 0; k < 16; k++) {
        c[k] = base + k < n ? counts[base + k] : 0;
        v += c[k];
    }
    u64 total;
    u64 at = tile_offs[blockIdx.x] + block_exclusive(v, warp_sum, total);
#pragma unroll
    for (u32 k = 0; k < 16; k++) {
        if (base + k < n) {
            if (row64) ((u64*)row_ptr)[base + k] = at; else ((u32*)row_ptr)[base + k] = (u32)at;
        }
        at += c[k];
    }
}

// materialize: the rows of sources src_lo..src_hi, each drawn once, sorted and cut into the runs
// of targets of every part (`owners`, ascending ranges), each run written at its part's row
// pointer. A warp per source neuron draws its keys (target << 32 | slot) into shared memory
// (`pow2` per warp: the longest row rounded up to a power of two) and sorts them (bitonic). So on
// several GPUs each draws and sorts the rows of its own neurons only, not every row of the brain.
// Each synapse drawn also adds its contribution's magnitude to its target's block of 2^BOUND_SHIFT
// neurons in `bound` (small enough to stay in L2): no neuron's input of one burst exceeds its
// block's, known without another pass over the rows (`bound_fold`).
extern "C" __global__ void __launch_bounds__(128) materialize(const ProcMap* maps, const u16* map_code, const MatArea* areas, u32 n_areas,
                                                              u32 src_lo, u32 src_hi, u32 pow2, const Owner* owners, u32 n_owners,
                                                              u64* bound) {
    extern __shared__ u64 keys_all[];
    const u32 lane = threadIdx.x & 31;
    u64* keys = keys_all + (threadIdx.x >> 5) * pow2;
    const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    for (u64 s64 = src_lo + warp; s64 < src_hi; s64 += warps) {
        const u32 s = (u32)s64;
        const int ai = mat_area(areas, n_areas, s);
        if (ai < 0) continue;
        const MatArea a = areas[ai];
        if (a.len == 0) continue;
        u32 p = 1;
        while (p < a.len) p <<= 1;
        draw_sorted(maps, a, s, p, keys);
        for (u32 i = lane; i < a.len; i += 32) {
            const u64 k = keys[i];
            const int c = maps[a.f0 + (u32)(k & 0xffffffffu)].contribution;
            const u64 m = c < 0 ? (u64)(-(i64)c) : (u64)c;
            if (m) atomicAdd(bound + ((k >> 32) >> BOUND_SHIFT), m);
        }
        for (u32 o = 0; o < n_owners; o++) {
            const Owner w = owners[o];
            // the part's run starts after the targets below its range
            u32 below = 0;
            for (u32 i = lane; i < a.len; i += 32) below += (u32)(keys[i] >> 32) < w.lo;
            for (int d = 16; d > 0; d >>= 1) below += __shfl_xor_sync(0xffffffffu, below, d);
            const u64 r0 = w.row64 ? ((const u64*)w.row_ptr)[s] : ((const u32*)w.row_ptr)[s];
            const u64 r1 = w.row64 ? ((const u64*)w.row_ptr)[s + 1] : ((const u32*)w.row_ptr)[s + 1];
            u32* targets = (u32*)w.targets;
            u16* codes = (u16*)w.codes;
            for (u32 i = lane; i < r1 - r0; i += 32) {
                const u64 k = keys[below + i];
                targets[r0 + i] = (u32)(k >> 32) - w.lo;
                codes[r0 + i] = map_code[a.f0 + (u32)(k & 0xffffffffu)];
            }
        }
        __syncwarp();
    }
}

// bound_fold: the largest input of one burst of the blocks of the neurons lo..hi (lo < hi), each
// the sum of every part's `bound` (a peer's over NVLink), atomically maxed into `out`.
extern "C" __global__ void bound_fold(const Owner* owners, u32 n_owners, u32 lo, u32 hi, u64* out) {
    u64 m = 0;
    const u32 first = lo >> BOUND_SHIFT, end = ((hi - 1) >> BOUND_SHIFT) + 1;
    for (u64 i = first + (u64)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += (u64)gridDim.x * blockDim.x) {
        u64 sum = 0;
        for (u32 o = 0; o < n_owners; o++) sum += ((const u64*)owners[o].bound)[i];
        m = max(m, sum);
    }
    for (int d = 16; d > 0; d >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, d));
    if ((threadIdx.x & 31) == 0 && m) atomicMax((unsigned long long*)out, (unsigned long long)m);
}
