// procbin.cu: the procedural synapses of a large brain, binned (after propagate.cu; see
// docs/capacity.md). Drawn synapses land at random in an accumulator far larger than L2, and a
// random atomic there costs a read and a write of DRAM each; even in L2, 1e9 atomics a burst
// take most of it. So the sums are made in shared memory, where an atomic is cheap, by sorting
// the drawn synapses by target first, in two passes of a multisplit (a block counts its chunk's
// entries per bucket in shared memory, reserves each bucket's room with one global atomic, stages
// them sorted and writes them out in runs):
//   proc_bin:   every synapse of the fired sources drawn once, into the bin of its target's tile
//               (2^bits neurons, 2M);
//   proc_split: each tile's bin into sub-bins of 2^sbits neurons (16K: 64 KB of 32-bit sums);
//   proc_sum:   a block per sub-bin adds its entries into 32-bit sums in shared memory, then into
//               the accumulator, whose neurons it alone owns.
// A bucket that would overflow its room adds directly (exact, slower). The sums are exact
// integers: the same input as the direct path, bit for bit.

#define SPLIT_K 16

// After each thread counted its entries into `hist` (keeping their ranks): the buckets' offsets
// in the block's staging (`offs`), their room reserved in `gcounts`, and where the entry staged
// at i goes: `dst[q] + i` while below `lim[q]` (bucket q's room is `first + q * stride`, `stride`
// entries). Returns the block's entry count.
template <u32 BLOCK>
__device__ u32 split_reserve(const u32* hist, u32* offs, u64* dst, u64* lim, u64* gcounts, u32 nb, u64 first, u64 stride) {
    __shared__ u32 wsum[BLOCK / 32];
    __shared__ u32 total;
    const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const u32 h = tid < nb ? hist[tid] : 0;
    const u32 v = warp_scan(h);
    if (lane == 31) wsum[warp] = v;
    __syncthreads();
    if (warp == 0) {
        const u32 w = warp_scan(lane < BLOCK / 32 ? wsum[lane] : 0u);
        if (lane < BLOCK / 32) wsum[lane] = w;
    }
    __syncthreads();
    const u32 incl = v + (warp ? wsum[warp - 1] : 0);
    if (tid < nb) {
        offs[tid] = incl - h;
        if (h) {
            const u64 start = first + tid * stride;
            dst[tid] = start + atomicAdd(gcounts + tid, (u64)h) - (incl - h);
            lim[tid] = start + stride;
        }
    }
    if (tid == BLOCK - 1) total = incl;
    __syncthreads();
    return total;
}

// Entry of a tile's bin: target within its tile (low `bits` bits) | map index << bits.
#define BIN_BLOCK 256
// K draws a thread a chunk: W(100M, 1000) on an H100 13.3 ms a burst against 13.8 with 8 (39
// registers, more blocks an SM) and 14.7 with 32 (94 registers)
template <typename ACC, u32 K, bool KEEP>
__device__ void proc_bin_impl(const Net& net, const Side& rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    if (kmax == 0) return;
    __shared__ u32 hist[BIN_BLOCK], offs[BIN_BLOCK];
    __shared__ u64 dst[BIN_BLOCK], lim[BIN_BLOCK];
    __shared__ u32 stage[(BIN_BLOCK * K)];
    __shared__ u8 stile[(BIN_BLOCK * K)];
    const u32 count = (u32)(*rd.counter >> net.count_shift);
    const u64 events = (u64)count * net.n_proc * kmax;
    const u32 tmask = (1u << bits) - 1;
    const u32 tid = threadIdx.x;
    for (u64 c0 = (u64)blockIdx.x * (BIN_BLOCK * K); c0 < events; c0 += (u64)gridDim.x * (BIN_BLOCK * K)) {
        for (u32 i = tid; i < n_tiles; i += BIN_BLOCK) hist[i] = 0;
        __syncthreads();
        // this thread's K consecutive draws: from draw j of row `it` (fired slot it / n_proc,
        // map it % n_proc) on; a row's key and stream position are worked out once
        const u64 e0 = c0 + (u64)tid * K;
        const u32 n_mine = e0 < events ? (u32)min((u64)K, events - e0) : 0;
        const u64 it = events <= 0xffffffffull ? (u64)((u32)e0 / kmax) : e0 / kmax;
        u32 j = (u32)(e0 - it * kmax);
        u64 slot = it / net.n_proc;
        u32 mi = (u32)(it - slot * net.n_proc);
        ProcMap m;
        u64 y = 0, dy = 0;
        u32 jend = 0; // the row's draws below it may be synapses (none when its source is not the map's)
        auto row = [&]() {
            m = net.proc[mi];
            const u32 s = rd.fired[slot];
            const bool live = s != DEAD && s - m.src_first < m.src_count;
            jend = live ? m.fanout : 0;
            dy = m.draws * DRAW_G;
            if (live) y = mix64(m.key ^ ((u64)s * 0xd1b54a32d192ed03ULL)) + ((u64)j * m.draws + 1) * DRAW_G;
        };
        if (n_mine) row();
        u32 ent[K], rk[K];
#pragma unroll
        for (u32 k = 0; k < K; k++) {
            rk[k] = ~0u;
            if (k < n_mine) {
                if (j == kmax) {
                    j = 0;
                    if (++mi == net.n_proc) {
                        mi = 0;
                        slot++;
                    }
                    row();
                }
                if (j < jend) {
                    // (without an attractivity every draw is a synapse)
                    const u32 d = KEEP ? proc_draw(m, y) : m.dst_first + hi64_32(mix64(y), m.dst_count);
                    const u32 t = d - net.base;
                    if ((!KEEP || d != ~0u) && t < net.n) {
                        const u32 p = t >> bits;
                        ent[k] = (t & tmask) | (mi << bits);
                        rk[k] = atomicAdd(hist + p, 1u) | (p << 16);
                    }
                }
                j++;
                y += dy;
            }
        }
        __syncthreads();
        const u32 total = split_reserve<BIN_BLOCK>(hist, offs, dst, lim, counts, n_tiles, 0, room);
#pragma unroll
        for (u32 k = 0; k < K; k++) {
            if (rk[k] != ~0u) {
                const u32 p = rk[k] >> 16, at = offs[p] + (rk[k] & 0xffffu);
                stage[at] = ent[k];
                stile[at] = (u8)p;
            }
        }
        __syncthreads();
        for (u32 i = tid; i < total; i += BIN_BLOCK) {
            const u32 e = stage[i], p = stile[i];
            const u64 at = dst[p] + i;
            if (at < lim[p]) {
                bins[at] = e;
            } else {
                acc_add<ACC>(net.acc, (p << bits) | (e & tmask), net.proc[e >> bits].contribution);
            }
        }
        __syncthreads();
    }
}

// The tiles' bins split into sub-bins of 2^sbits neurons: sub-bin q of tile p is
// `subs[(p << (bits - sbits) | q) * subroom ..]`, its entries the target within the sub-bin | map
// index << sbits, in 16 bits where they fit.
#define SUB_BLOCK 512
#define SUB_CHUNK (SUB_BLOCK * SPLIT_K)
template <typename ACC, typename S>
__device__ void proc_split_impl(const Net& net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, u32 bits, u32 sbits, S* subs, u64* subcounts, u64 subroom) {
    __shared__ u32 hist[SUB_BLOCK], offs[SUB_BLOCK];
    __shared__ u64 dst[SUB_BLOCK], lim[SUB_BLOCK];
    __shared__ u32 stage[SUB_CHUNK];
    const u32 nsub = 1u << (bits - sbits);
    const u32 tmask = (1u << bits) - 1, smask = (1u << sbits) - 1;
    const u32 tid = threadIdx.x;
    // the grid strides over every tile's chunks together
    u32 p = 0;
    u64 first = 0; // the first chunk of tile p
    u64 chunks = (min(counts[0], room) + SUB_CHUNK - 1) / SUB_CHUNK;
    for (u64 g = blockIdx.x;; g += gridDim.x) {
        while (p < n_tiles && g >= first + chunks) {
            first += chunks;
            p++;
            if (p < n_tiles) chunks = (min(counts[p], room) + SUB_CHUNK - 1) / SUB_CHUNK;
        }
        if (p >= n_tiles) break;
        const u64 c0 = (g - first) * SUB_CHUNK;
        const u32 n = (u32)min(min(counts[p], room) - c0, (u64)SUB_CHUNK);
        const u32* b = bins + p * room + c0;
        for (u32 i = tid; i < nsub; i += SUB_BLOCK) hist[i] = 0;
        u32 ent[SPLIT_K], rk[SPLIT_K];
        // every load first (in flight together), then the counts
#pragma unroll
        for (u32 k = 0; k < SPLIT_K; k++) ent[k] = k * SUB_BLOCK + tid < n ? __ldcs(b + k * SUB_BLOCK + tid) : 0;
        __syncthreads();
#pragma unroll
        for (u32 k = 0; k < SPLIT_K; k++) {
            if (k * SUB_BLOCK + tid < n) rk[k] = atomicAdd(hist + ((ent[k] & tmask) >> sbits), 1u);
        }
        __syncthreads();
        const u32 total = split_reserve<SUB_BLOCK>(hist, offs, dst, lim, subcounts + (u64)p * nsub, nsub, (u64)p * nsub * subroom, subroom);
#pragma unroll
        for (u32 k = 0; k < SPLIT_K; k++) {
            if (k * SUB_BLOCK + tid < n) stage[offs[(ent[k] & tmask) >> sbits] + rk[k]] = ent[k];
        }
        __syncthreads();
        for (u32 i = tid; i < total; i += SUB_BLOCK) {
            const u32 e = stage[i], q = (e & tmask) >> sbits;
            const u64 at = dst[q] + i;
            if (at < lim[q]) {
                subs[at] = (S)((e & smask) | ((e >> bits) << sbits));
            } else {
                acc_add<ACC>(net.acc, (p << bits) | (e & tmask), net.proc[e >> bits].contribution);
            }
        }
        __syncthreads();
    }
}

// A block per sub-bin: its entries added into 32-bit sums in shared memory, then into the
// accumulator (the block owns those neurons). A step that leaves the i32 range (seen from the
// value the atomic returns) makes the block add its entries again into the 64-bit accumulator
// instead: when no step overflowed, every partial sum, the last included, is the exact one.
template <typename ACC, typename S>
__device__ void proc_sum_impl(const Net& net, const S* subs, const u64* subcounts, u64 subroom, u32 n_subs, u32 sbits) {
    extern __shared__ int sums[];
    __shared__ int over;
    const u32 smask = (1u << sbits) - 1;
    const u32 tid = threadIdx.x, bd = blockDim.x;
    for (u32 g = blockIdx.x; g < n_subs; g += gridDim.x) {
        const u64 first = (u64)g << sbits;
        if (first >= net.n) break;
        const u32 len = (u32)min((u64)1 << sbits, net.n - first);
        for (u32 i = tid; i < len; i += bd) sums[i] = 0;
        if (tid == 0) over = 0;
        __syncthreads();
        const u64 c = min(subcounts[g], subroom);
        const S* b = subs + (u64)g * subroom;
        bool of = false;
        auto add = [&](u32 e) {
            const int v = net.proc[e >> sbits].contribution;
            const int old = atomicAdd(sums + (e & smask), v);
            const int s = (int)((unsigned)old + (unsigned)v);
            of |= ((old ^ s) & (v ^ s)) < 0;
        };
        // 16 bytes a load (a sub-bin starts 16-byte aligned: `subroom` is a multiple of 8)
        constexpr u32 PER = 16 / sizeof(S);
        union Words {
            uint4 v;
            S e[PER];
        };
        const uint4* b4 = (const uint4*)b;
        for (u64 i = tid; i < c / PER; i += bd) {
            Words w;
            w.v = __ldcs(b4 + i);
#pragma unroll
            for (u32 k = 0; k < PER; k++) add(w.e[k]);
        }
        for (u64 i = c / PER * PER + tid; i < c; i += bd) add(b[i]);
        if (of) over = 1;
        __syncthreads();
        if (!over) {
            for (u32 i = tid; i < len; i += bd) {
                const int v = sums[i];
                if (v) ((i64*)net.acc)[first + i] += v;
            }
        } else {
            for (u64 i = tid; i < c; i += bd) {
                const u32 e = b[i];
                acc_add<ACC>(net.acc, (u32)first + (e & smask), net.proc[e >> sbits].contribution);
            }
        }
        __syncthreads();
    }
}

extern "C" __global__ void __launch_bounds__(BIN_BLOCK) proc_bin_n64(Net net, Side rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    proc_bin_impl<i64, SPLIT_K, false>(net, rd, bins, counts, room, n_tiles, bits, kmax);
}
extern "C" __global__ void __launch_bounds__(BIN_BLOCK) proc_bin_keep_n64(Net net, Side rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    proc_bin_impl<i64, SPLIT_K, true>(net, rd, bins, counts, room, n_tiles, bits, kmax);
}
#define PROC_SPLIT_SUM(S, suffix) \
    extern "C" __global__ void __launch_bounds__(SUB_BLOCK) proc_split_n64_##suffix(Net net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, \
                                                                                  u32 bits, u32 sbits, S* subs, u64* subcounts, u64 subroom) { \
        proc_split_impl<i64, S>(net, bins, counts, room, n_tiles, bits, sbits, subs, subcounts, subroom); \
    } \
    extern "C" __global__ void __launch_bounds__(1024) proc_sum_n64_##suffix(Net net, const S* subs, const u64* subcounts, u64 subroom, u32 n_subs, u32 sbits) { \
        proc_sum_impl<i64, S>(net, subs, subcounts, subroom, n_subs, sbits); \
    }
PROC_SPLIT_SUM(u16, s16)
PROC_SPLIT_SUM(u32, s32)
