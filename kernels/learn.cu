// learn.cu: plasticity (docs/plasticity.md), the mirror of src/backend/learn.rs, after the
// burst that fired the list `rd` and before that list is propagated (after common.cuh; see it).
//
// A plastic synapse's code is `code_base + group * 256 + weight`: learning rewrites codes, and
// the propagation reads them as it reads static ones. The phases, each over the whole grid:
//   learn_mark:  the fired list -> one bit per neuron (`now`); the active count reset;
//   learn_shift: every neuron's history shifted, the new bit in; the neurons that fired within
//                the longest window listed (`active`, any order);
//   learn_rows:  a warp per active source: its row's plastic synapses by the whole rule, marking
//                those whose target is active too;
//   learn_cols:  a warp per active own target: its unmarked plastic synapses (their source was
//                silent) depressed; the marks cleared;
//   learn_grow:  one block: the associative pairs grown, in (source, target) order up to the cap.
// Every synapse is written by one thread per phase, so the result does not depend on the order.

// Mirror of `PlasMap` in layout.rs: one plastic mapping.
struct PlasMap {
    u32 ltp;
    u32 ltd;
    u32 window;
    u32 assoc;    // 1: associative
    u32 src_lo;
    u32 src_hi;
    u32 dst_lo;
    u32 dst_hi;
    u64 cap;      // max_synapses
    u64 bits;     // first u32 word of its pair table in `exists`
};

// Mirror of `Learn` in layout.rs.
struct Learn {
    u32* hist;            // every neuron of the brain
    u32* now;             // one bit per neuron of the brain: in the list being recorded
    u32* active;          // neurons of the brain active within the longest window
    u32* n_active;
    u32* marks;           // one bit per synapse of this GPU's part
    const u64* col_ptr;   // own targets + 1
    const u32* col_syn;
    const u32* group_map; // plastic mapping of each group
    const PlasMap* maps;
    u32* exists;          // the associative pair tables
    u64* grown;           // per plastic mapping: grown, refused
    const u64* burst;     // the burst counter (`Net::burst`): the burst whose list is learned from
    const u64* skip;      // a burst whose learning is skipped (a restored state holds it), or ~0
    u32 code_base;
    u32 n_total;
    u32 longest;          // history bits of the longest window
    u32 n_maps;
};

// Entries of a row (`learn_rows`) or a column (`learn_cols`) a lane takes at once.
#define LEARN_ITEMS 4

__device__ __forceinline__ u32 window_mask(u32 w) { return w >= 32 ? 0xFFFFFFFFu : (1u << w) - 1; }

__device__ __forceinline__ bool pair_exists(const Learn& L, const PlasMap& m, u32 s, u32 d) {
    if (!m.assoc) return true;
    const u64 i = (u64)(s - m.src_lo) * (m.dst_hi - m.dst_lo) + (d - m.dst_lo);
    return (L.exists[m.bits + (i >> 5)] >> (i & 31)) & 1;
}

__device__ __forceinline__ bool skipped(const Learn& L) { return *(volatile const u64*)L.skip == *(volatile const u64*)L.burst; }

__device__ void learn_mark_impl(const Learn& L, const Side& rd, u32 count_shift, Blk b) {
    if (skipped(L)) return;
    const u32 count = (u32)(*(volatile const u64*)rd.counter >> count_shift);
    if (b.id == 0 && threadIdx.x == 0) *L.n_active = 0;
    for (u32 i = b.id * blockDim.x + threadIdx.x; i < count; i += b.n * blockDim.x) {
        const u32 f = rd.fired[i];
        if (f != DEAD) atomicOr(L.now + (f >> 5), 1u << (f & 31));
    }
}

__device__ void learn_shift_impl(const Learn& L, Blk b) {
    if (skipped(L)) return;
    __shared__ u32 warp_n[32];
    __shared__ u32 block_at;
    const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    for (u32 w0 = b.id * blockDim.x; w0 < L.n_total; w0 += b.n * blockDim.x) {
        const u32 n = w0 + threadIdx.x;
        // a warp's 32 neurons share one word of `now` (w0 is a multiple of 32)
        const u32 word = n < L.n_total ? *(volatile u32*)(L.now + (n >> 5)) : 0;
        u32 h = 0;
        if (n < L.n_total) {
            h = (L.hist[n] << 1) | ((word >> lane) & 1);
            L.hist[n] = h;
        }
        __syncwarp();
        if (lane == 0 && n < L.n_total && word) L.now[n >> 5] = 0;
        // the active neurons listed with one atomic per block (a counter every warp hit was slow)
        const bool act = n < L.n_total && (h & L.longest) != 0;
        const u32 ballot = __ballot_sync(0xFFFFFFFFu, act);
        if (lane == 0) warp_n[wid] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 total = 0;
            for (u32 k = 0; k < (blockDim.x >> 5); k++) {
                const u32 c = warp_n[k];
                warp_n[k] = total;
                total += c;
            }
            block_at = total ? atomicAdd(L.n_active, total) : 0;
        }
        __syncthreads();
        if (act) L.active[block_at + warp_n[wid] + __popc(ballot & ((1u << lane) - 1))] = n;
        __syncthreads();
    }
}

template <typename CODE>
__device__ __forceinline__ bool decode(const Learn& L, u32 code, u32& group, u32& w) {
    if (code < L.code_base) return false;
    group = (code - L.code_base) >> 8;
    w = (code - L.code_base) & 0xFF;
    return true;
}

template <typename RP, typename CODE>
__device__ void learn_rows_impl(const Learn& L, const Net& net, Blk b) {
    if (skipped(L)) return;
    const u64 t = *(volatile const u64*)net.burst;
    const u32 count = *(volatile const u32*)L.n_active;
    const u32 lane = threadIdx.x & 31;
    const u32 warp = (b.id * blockDim.x + threadIdx.x) >> 5;
    const u32 warps = (b.n * blockDim.x) >> 5;
    CODE* codes = (CODE*)net.codes;
    for (u32 a = warp; a < count; a += warps) {
        const u32 s = L.active[a];
        const u32 hs = L.hist[s];
        const u64 lo = row_start<RP>(net, s), hi = row_start<RP>(net, s + 1);
        // ITEMS entries a lane, their loads issued together (a target's history is a random read)
        for (u64 i0 = lo; i0 < hi; i0 += 32 * LEARN_ITEMS) {
            u32 cd[LEARN_ITEMS], d[LEARN_ITEMS], hd[LEARN_ITEMS];
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) {
                const u64 i = i0 + lane + 32 * k;
                cd[k] = i < hi ? (u32)codes[i] : 0;
                d[k] = i < hi && cd[k] >= L.code_base ? net.targets[i] + net.base : ~0u;
            }
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) hd[k] = d[k] != ~0u ? L.hist[d[k]] : 0;
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) {
                const u64 i = i0 + lane + 32 * k;
                u32 group, w;
                if (d[k] == ~0u || !decode<CODE>(L, cd[k], group, w)) continue;
                const PlasMap& m = L.maps[L.group_map[group]];
                const u32 mask = window_mask(m.window);
                if ((hs & mask) == 0) continue;
                if (hd[k] & L.longest) atomicOr(L.marks + (i >> 5), 1u << (i & 31));
                if (t < m.window) continue;
                u32 nw;
                if ((hs & mask) == mask && (hd[k] & mask) == mask) {
                    if (!pair_exists(L, m, s, d[k])) continue;
                    nw = min(255u, w + m.ltp);
                } else {
                    nw = w > m.ltd ? w - m.ltd : 0;
                }
                if (nw != w) codes[i] = (CODE)(L.code_base + (group << 8) + nw);
            }
        }
    }
}

template <typename CODE>
__device__ void learn_cols_impl(const Learn& L, const Net& net, Blk b) {
    if (skipped(L)) return;
    const u64 t = *(volatile const u64*)net.burst;
    const u32 count = *(volatile const u32*)L.n_active;
    const u32 lane = threadIdx.x & 31;
    const u32 warp = (b.id * blockDim.x + threadIdx.x) >> 5;
    const u32 warps = (b.n * blockDim.x) >> 5;
    CODE* codes = (CODE*)net.codes;
    for (u32 a = warp; a < count; a += warps) {
        const u32 d = L.active[a];
        if (d < net.base || d >= net.base + net.n) continue;
        const u32 hd = L.hist[d];
        const u64 lo = L.col_ptr[d - net.base], hi = L.col_ptr[d - net.base + 1];
        // LEARN_ITEMS entries a lane, their loads issued together (the reads are random)
        for (u64 j0 = lo; j0 < hi; j0 += 32 * LEARN_ITEMS) {
            u32 i[LEARN_ITEMS], mk[LEARN_ITEMS], cd[LEARN_ITEMS];
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) {
                const u64 j = j0 + lane + 32 * k;
                i[k] = j < hi ? L.col_syn[j] : ~0u;
            }
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) mk[k] = i[k] != ~0u ? L.marks[i[k] >> 5] & (1u << (i[k] & 31)) : 1;
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) cd[k] = mk[k] == 0 ? (u32)codes[i[k]] : 0;
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) {
                if (i[k] == ~0u) continue;
                if (mk[k]) {
                    atomicAnd(L.marks + (i[k] >> 5), ~mk[k]);
                    continue;
                }
                u32 group, w;
                if (!decode<CODE>(L, cd[k], group, w)) continue;
                const PlasMap& m = L.maps[L.group_map[group]];
                const u32 mask = window_mask(m.window);
                if (t < m.window || (hd & mask) == 0 || w == 0) continue;
                const u32 nw = w > m.ltd ? w - m.ltd : 0;
                codes[i[k]] = (CODE)(L.code_base + (group << 8) + nw);
            }
        }
    }
}

// The synapse of pair s -> d of plastic mapping pm in this GPU's part (rows sorted by target), or
// ~0 when d is not this GPU's.
template <typename RP, typename CODE>
__device__ u64 find_pair(const Learn& L, const Net& net, u32 pm, u32 s, u32 d) {
    if (d < net.base || d >= net.base + net.n) return ~0ULL;
    const u32 rel = d - net.base;
    u64 lo = row_start<RP>(net, s), hi = row_start<RP>(net, s + 1);
    while (lo < hi) {
        const u64 mid = (lo + hi) / 2;
        if (net.targets[mid] < rel) lo = mid + 1; else hi = mid;
    }
    const CODE* codes = (const CODE*)net.codes;
    for (u64 i = lo; i < row_start<RP>(net, s + 1) && net.targets[i] == rel; i++) {
        u32 group, w;
        if (decode<CODE>(L, (u32)codes[i], group, w) && L.group_map[group] == pm) return i;
    }
    return ~0ULL;
}

// One block (the block with b.id == 0; the others return): growth in (source, target) order.
template <typename RP, typename CODE>
__device__ void learn_grow_impl(const Learn& L, const Net& net, Blk b) {
    if (b.id != 0 || skipped(L)) return;
    __shared__ u32 warp_sum[32];
    __shared__ u64 grown_s, refused_s;
    const u64 t = *(volatile const u64*)net.burst;
    const u32 lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    CODE* codes = (CODE*)net.codes;
    for (u32 pm = 0; pm < L.n_maps; pm++) {
        const PlasMap m = L.maps[pm];
        if (!m.assoc || m.ltp == 0 || t < m.window) continue;
        const u32 full = window_mask(m.window);
        if (threadIdx.x == 0) {
            grown_s = L.grown[2 * pm];
            refused_s = L.grown[2 * pm + 1];
        }
        __syncthreads();
        const u32 width = m.dst_hi - m.dst_lo;
        for (u32 s = m.src_lo; s < m.src_hi; s++) {
            if ((L.hist[s] & full) != full) continue;
            for (u32 d0 = m.dst_lo; d0 < m.dst_hi; d0 += blockDim.x) {
                const u32 d = d0 + threadIdx.x;
                const u64 i = (u64)(s - m.src_lo) * width + (d - m.dst_lo);
                const bool cand = d < m.dst_hi && d != s && (L.hist[d] & full) == full &&
                                  ((L.exists[m.bits + (i >> 5)] >> (i & 31)) & 1) == 0;
                const u32 ballot = __ballot_sync(0xFFFFFFFFu, cand);
                if (lane == 0) warp_sum[wid] = __popc(ballot);
                __syncthreads();
                u32 before = 0, total = 0;
                for (u32 k = 0; k < nw; k++) {
                    if (k < wid) before += warp_sum[k];
                    total += warp_sum[k];
                }
                const u64 rank = grown_s + before + __popc(ballot & ((1u << lane) - 1));
                if (cand && rank < m.cap) {
                    atomicOr(L.exists + m.bits + (i >> 5), 1u << (i & 31));
                    const u64 j = find_pair<RP, CODE>(L, net, pm, s, d);
                    if (j != ~0ULL) {
                        u32 group, w;
                        decode<CODE>(L, (u32)codes[j], group, w);
                        codes[j] = (CODE)(L.code_base + (group << 8) + m.ltp);
                    }
                }
                __syncthreads();
                if (threadIdx.x == 0 && total) {
                    const u64 room = m.cap > grown_s ? m.cap - grown_s : 0;
                    const u64 made = total < room ? total : room;
                    grown_s += made;
                    refused_s += total - made;
                }
                __syncthreads();
            }
        }
        if (threadIdx.x == 0) {
            L.grown[2 * pm] = grown_s;
            L.grown[2 * pm + 1] = refused_s;
        }
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(256) learn_mark(Learn L, Side rd, u32 count_shift) { learn_mark_impl(L, rd, count_shift, hw_blk()); }
extern "C" __global__ void __launch_bounds__(256) learn_shift(Learn L) { learn_shift_impl(L, hw_blk()); }
#define LEARN(SUFFIX, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) learn_rows_##SUFFIX(Learn L, Net net) { learn_rows_impl<RP, CODE>(L, net, hw_blk()); } \
    extern "C" __global__ void __launch_bounds__(256) learn_cols_##SUFFIX(Learn L, Net net) { learn_cols_impl<CODE>(L, net, hw_blk()); } \
    extern "C" __global__ void __launch_bounds__(256) learn_grow_##SUFFIX(Learn L, Net net) { learn_grow_impl<RP, CODE>(L, net, hw_blk()); }
EACH_VARIANT(LEARN)
