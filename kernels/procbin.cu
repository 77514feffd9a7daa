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
//   proc_sum:   a block per sub-bin adds its entries into 32-bit sums in shared memory, then
//               writes them to the accumulator, whose neurons it alone owns (no clear before).
// A bucket that would overflow its room adds into a spill accumulator instead (exact, slower),
// which proc_sum folds in. The sums are exact integers: the same input as the direct path, bit for
// bit.
//
// Several GPUs of one process (docs/sharding.md): each GPU draws the rows of its own fired
// neurons only, binned over the whole brain, and proc_sum writes 32-bit partial sums of every
// neuron (a flag a sub-bin when its exact sum is left in the spill); once every GPU has its
// partials, proc_fold adds every GPU's partials of this GPU's neurons (peer loads over NVLink)
// into its accumulator. On four GPUs, a draw of a target elsewhere cost as much as one kept; a
// partial sum costs 4 bytes a neuron a GPU on NVLink.

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
#define DROP (BIN_BLOCK - 1) // the bucket of draws that are no synapse here (MAX_TILES < DROP)
// K draws a thread a chunk, of one row: W(100M, 1000) on an H200 10.4 ms a burst against 10.8 with
// 8 and 10.6 with 32. (A thread's draws spanning two rows cost 10.95: the row change, unrolled K
// times, was paid by every draw.)
template <typename ACC, u32 K, bool KEEP>
__device__ void proc_bin_impl(const Net& net, const Side& rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    if (kmax == 0) return;
    __shared__ u32 hist[BIN_BLOCK], offs[BIN_BLOCK];
    __shared__ u64 dst[BIN_BLOCK], lim[BIN_BLOCK];
    __shared__ u32 stage[(BIN_BLOCK * K)];
    __shared__ u8 stile[(BIN_BLOCK * K)];
    const u32 count = (u32)(*rd.counter >> net.count_shift);
    // a row (fired slot, map) is padded to whole runs of K draws: a thread's K draws are of one
    // row, whose key and stream position it works out once
    const u32 runs = (kmax + K - 1) / K;
    const u64 events = (u64)count * net.n_proc * runs * K;
    const u32 tmask = (1u << bits) - 1;
    const u32 tid = threadIdx.x;
    for (u64 c0 = (u64)blockIdx.x * (BIN_BLOCK * K); c0 < events; c0 += (u64)gridDim.x * (BIN_BLOCK * K)) {
        hist[tid] = 0;
        __syncthreads();
        // this thread's run: draws j0 .. j0 + K of row `it` (fired slot it / n_proc, map it % n_proc)
        const u64 r = c0 / K + tid;
        u32 n_mine = 0, j0 = 0, mi = 0;
        ProcMap m{};
        u64 y = 0, dy = 0;
        if (r * K < events) {
            const u64 it = r < 0xffffffffull ? (u64)((u32)r / runs) : r / runs;
            j0 = (u32)(r - it * runs) * K;
            const u64 slot = it <= 0xffffffffull ? (u64)((u32)it / net.n_proc) : it / net.n_proc;
            mi = (u32)(it - slot * net.n_proc);
            m = net.proc[mi];
            const u32 s = rd.fired[slot];
            // draws below the fanout are synapses (none when the source is not the map's)
            if (s != DEAD && s - m.src_first < m.src_count && j0 < m.fanout) {
                n_mine = min(K, m.fanout - j0);
                y = mix64(m.key ^ ((u64)s * 0xd1b54a32d192ed03ULL)) + ((u64)j0 * m.draws + 1) * DRAW_G;
                dy = m.draws * DRAW_G;
            }
        }
        const u32 hi = mi << bits;
        u32 ent[K], rk[K];
        if (n_mine) {
            // (without an attractivity every draw is a synapse); no branch per draw: one that is no
            // synapse here is counted in bucket DROP
#pragma unroll
            for (u32 k = 0; k < K; k++) {
                const u32 d = KEEP ? proc_draw(m, y) : m.dst_first + hi64_32(mix64(y), m.dst_count);
                const u32 t = d - net.base;
                const u32 p = k < n_mine && (!KEEP || d != ~0u) && t < net.n ? t >> bits : DROP;
                ent[k] = (t & tmask) | hi;
                // (a draw that is no synapse here takes no count: on four GPUs three of four are)
                rk[k] = p == DROP ? DROP << 16 : atomicAdd(hist + p, 1u) | (p << 16);
                y += dy;
            }
        } else {
            // a row of another map's source, or past the end: no draw
#pragma unroll
            for (u32 k = 0; k < K; k++) rk[k] = DROP << 16;
        }
        __syncthreads();
        const u32 total = split_reserve<BIN_BLOCK>(hist, offs, dst, lim, counts, n_tiles, 0, room);
#pragma unroll
        for (u32 k = 0; k < K; k++) {
            if (rk[k] >> 16 != DROP) {
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
                // (`net.acc` is the spill accumulator here)
                acc_add<ACC>(net.acc, (p << bits) | (e & tmask), net.proc[e >> bits].contribution);
            }
        }
        __syncthreads();
    }
}

// 16 bytes from global to shared memory, asynchronously (cp.async: no registers hold them).
__device__ __forceinline__ void copy_async16(void* to, const void* from) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((u32)__cvta_generic_to_shared(to)), "l"(from) : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits for this thread's copies but those of the last group committed.
__device__ __forceinline__ void copy_async_wait_prior() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

// The tiles' bins split into sub-bins of 2^sbits neurons: sub-bin q of tile p is
// `subs[(p << (bits - sbits) | q) * subroom ..]`, its entries the target within the sub-bin | map
// index << sbits, in 16 bits where they fit. A block's chunks are double-buffered in shared memory
// (2 x SUB_CHUNK entries, dynamic): the next chunk is copied in while this one is split, and this
// one is staged sorted in place. W(100M, 1000) on an H100: 10.63 ms a burst against 11.0 with the
// chunk loaded into registers (3 blocks an SM), 11.3 with the next chunk's loads issued before the
// write-out, 10.81 with 2 blocks an SM.
#define SUB_BLOCK 512
#define SUB_CHUNK (SUB_BLOCK * SPLIT_K)
#define SUB_MAX 128 // sub-bins a tile (1 << (TILE_BITS - SUB_BITS) in procbin.rs)
template <typename ACC, typename S>
__device__ void proc_split_impl(const Net& net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, u32 bits, u32 sbits, S* subs, u64* subcounts, u64 subroom) {
    extern __shared__ u32 chunk[]; // [2][SUB_CHUNK]
    __shared__ u32 hist[SUB_BLOCK], offs[SUB_BLOCK];
    __shared__ u64 dst[SUB_MAX], lim[SUB_MAX];
    const u32 nsub = 1u << (bits - sbits);
    const u32 tmask = (1u << bits) - 1, smask = (1u << sbits) - 1;
    const u32 tid = threadIdx.x;
    // the grid strides over every tile's chunks together
    u32 p = 0;
    u64 first = 0; // the first chunk of tile p
    u64 chunks = (min(counts[0], room) + SUB_CHUNK - 1) / SUB_CHUNK;
    u32 n = 0; // chunk g's entries (of tile p)
    // chunk g's tile and entries, its copy into buffer `buf` issued (a group, empty past the last
    // chunk); false past the last chunk. (Each bin starts 16-byte aligned: `room` is a multiple of
    // 4, and entries past a bin's count are copied but not read.)
    auto fetch = [&](u64 g, u32 buf) {
        while (p < n_tiles && g >= first + chunks) {
            first += chunks;
            p++;
            if (p < n_tiles) chunks = (min(counts[p], room) + SUB_CHUNK - 1) / SUB_CHUNK;
        }
        const bool some = p < n_tiles;
        if (some) {
            const u64 c0 = (g - first) * SUB_CHUNK;
            n = (u32)min(min(counts[p], room) - c0, (u64)SUB_CHUNK);
            const u32* b = bins + p * room + c0;
            u32* to = chunk + buf * SUB_CHUNK;
            for (u32 i = tid * 4; i < n; i += SUB_BLOCK * 4) copy_async16(to + i, b + i);
        }
        copy_async_commit();
        return some;
    };
    u64 g = blockIdx.x;
    u32 buf = 0;
    bool more = fetch(g, buf);
    while (more) {
        const u32 tp = p, tn = n;
        u32* const c = chunk + buf * SUB_CHUNK;
        g += gridDim.x;
        const bool next = fetch(g, buf ^ 1);
        for (u32 i = tid; i < nsub; i += SUB_BLOCK) hist[i] = 0;
        copy_async_wait_prior();
        __syncthreads();
        // the entries' ranks within their sub-bin, two to a register (below SUB_CHUNK): with 16
        // registers of ranks, 3 blocks an SM spilled (W(100M, 1000) on an H100 11.7 ms a burst)
        u32 ent[SPLIT_K], rk[SPLIT_K / 2];
#pragma unroll
        for (u32 k = 0; k < SPLIT_K; k++) {
            if (k % 2 == 0) rk[k / 2] = 0;
            if (k * SUB_BLOCK + tid < tn) {
                ent[k] = c[k * SUB_BLOCK + tid];
                rk[k / 2] |= atomicAdd(hist + ((ent[k] & tmask) >> sbits), 1u) << (16 * (k % 2));
            }
        }
        __syncthreads();
        const u32 total = split_reserve<SUB_BLOCK>(hist, offs, dst, lim, subcounts + (u64)tp * nsub, nsub, (u64)tp * nsub * subroom, subroom);
        // staged sorted in place (every entry is in a register now)
#pragma unroll
        for (u32 k = 0; k < SPLIT_K; k++) {
            if (k * SUB_BLOCK + tid < tn) c[offs[(ent[k] & tmask) >> sbits] + ((rk[k / 2] >> (16 * (k % 2))) & 0xffffu)] = ent[k];
        }
        __syncthreads();
        for (u32 i = tid; i < total; i += SUB_BLOCK) {
            const u32 e = c[i], q = (e & tmask) >> sbits;
            const u64 at = dst[q] + i;
            if (at < lim[q]) {
                subs[at] = (S)((e & smask) | ((e >> bits) << sbits));
            } else {
                acc_add<ACC>(net.acc, (tp << bits) | (e & tmask), net.proc[e >> bits].contribution); // (the spill)
            }
        }
        // (the next fetch copies into this buffer)
        __syncthreads();
        buf ^= 1;
        more = next;
    }
}

// A block per sub-bin: its entries added into 32-bit sums in shared memory, then written to the
// accumulator (the block owns those neurons, and every neuron is some block's: no clear before).
// Synapses that found no room in a bin or sub-bin were added into `spill` (64-bit, kept zero),
// which the block of a sub-bin that may have some (its count, or its tile's, past the room) adds
// in and clears. A step that leaves the i32 range (seen from the value the atomic returns) makes
// the block add its entries again into the 64-bit accumulator instead: when no step overflowed,
// every partial sum, the last included, is the exact one.
// PART (several GPUs): the sums go to `part` (32-bit, every neuron of the brain) instead; a
// sub-bin whose sum overflowed adds its entries into the spill instead, and `flags` says which
// sub-bins' spill holds some of their sum (proc_fold takes it).
template <typename ACC, typename S, bool PART>
__device__ void proc_sum_impl(const Net& net, const S* subs, const u64* subcounts, u64 subroom, u32 n_subs, u32 sbits, const u64* counts, u64 room,
                              u32 bits, i64* spill, int* part, u32* flags) {
    extern __shared__ int sums[];
    __shared__ int over;
    const u32 smask = (1u << sbits) - 1;
    const u32 tid = threadIdx.x, bd = blockDim.x;
    i64* const acc = (i64*)net.acc;
    for (u32 g = blockIdx.x; g < n_subs; g += gridDim.x) {
        const u64 first = (u64)g << sbits;
        if (first >= net.n) break;
        const u32 len = (u32)min((u64)1 << sbits, net.n - first);
        for (u32 i = tid; i < len; i += bd) sums[i] = 0;
        if (tid == 0) over = 0;
        __syncthreads();
        const u64 c = min(subcounts[g], subroom);
        const bool spilled = subcounts[g] > subroom || counts[g >> (bits - sbits)] > room;
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
        if (PART) {
            if (over) {
                // the entries again, in 64 bits, into the spill (which may hold others of its neurons)
                for (u64 i = tid; i < c; i += bd) {
                    const u32 e = b[i];
                    acc_add<ACC>(spill, (u32)first + (e & smask), net.proc[e >> sbits].contribution);
                }
            }
            for (u32 i = tid; i < len; i += bd) part[first + i] = over ? 0 : sums[i];
            if (tid == 0) flags[g] = over || spilled;
            __syncthreads();
            continue;
        }
        if (over) {
            // the entries again, in 64 bits (into the accumulator, zeroed first, then into `sums`' place)
            for (u32 i = tid; i < len; i += bd) acc[first + i] = 0;
            __syncthreads();
            for (u64 i = tid; i < c; i += bd) {
                const u32 e = b[i];
                acc_add<ACC>(acc, (u32)first + (e & smask), net.proc[e >> sbits].contribution);
            }
            __syncthreads();
        }
        for (u32 i = tid; i < len; i += bd) {
            i64 v = over ? __ldcg(acc + first + i) : (i64)sums[i];
            if (spilled) {
                v += spill[first + i];
                spill[first + i] = 0;
            }
            acc[first + i] = v;
        }
        __syncthreads();
    }
}

// Occupancy: 4 blocks of proc_bin an SM (at most 64 registers, 56 used, no spill: its branch-free
// draws keep every entry and rank live). W(100M, 1000) on an H100 10.03 ms a burst against 10.14 with 5 blocks (48
// registers, spilled) and 10.43 with 6 (40); with a branch per draw, 6 blocks 10.15. 3 blocks of
// proc_split (its shared memory).
// Where one GPU's partial sums lie, for the others (the host's `SumPeer` is generated from this).
struct SumPeer {
    int* part;
    i64* spill;
    u32* flags;
};

// This GPU's neurons' input (net.acc, written): every GPU's partial sums of them, and what a flagged
// sub-bin left in a GPU's spill (taken: zeroed for the next burst). Four neurons a thread, 16 bytes
// a load from each GPU.
__device__ void proc_fold_impl(const Net& net, const SumPeer* peers, u32 n_peers, u32 sbits) {
    i64* const acc = (i64*)net.acc;
    const u64 lo = net.base, hi = (u64)net.base + net.n;
    const u64 q0 = lo / 4, q1 = (hi + 3) / 4;
    for (u64 q = q0 + (u64)blockIdx.x * blockDim.x + threadIdx.x; q < q1; q += (u64)gridDim.x * blockDim.x) {
        i64 v[4] = {0, 0, 0, 0};
        for (u32 p = 0; p < n_peers; p++) {
            const SumPeer x = peers[p];
            const int4 w = __ldcs((const int4*)x.part + q);
            v[0] += w.x;
            v[1] += w.y;
            v[2] += w.z;
            v[3] += w.w;
            // (four neurons share a sub-bin: 2^sbits is a multiple of 4)
            if (__ldcs(x.flags + ((q * 4) >> sbits))) {
                for (u32 j = 0; j < 4; j++) {
                    const u64 g = q * 4 + j;
                    if (g >= lo && g < hi) {
                        v[j] += x.spill[g];
                        x.spill[g] = 0;
                    }
                }
            }
        }
        for (u32 j = 0; j < 4; j++) {
            const u64 g = q * 4 + j;
            if (g >= lo && g < hi) acc[g - lo] = v[j];
        }
    }
}

extern "C" __global__ void proc_fold(Net net, const SumPeer* peers, u32 n_peers, u32 sbits) {
    proc_fold_impl(net, peers, n_peers, sbits);
}

extern "C" __global__ void __launch_bounds__(BIN_BLOCK, 4) proc_bin_n64(Net net, Side rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    proc_bin_impl<i64, SPLIT_K, false>(net, rd, bins, counts, room, n_tiles, bits, kmax);
}
extern "C" __global__ void __launch_bounds__(BIN_BLOCK, 4) proc_bin_keep_n64(Net net, Side rd, u32* bins, u64* counts, u64 room, u32 n_tiles, u32 bits, u32 kmax) {
    proc_bin_impl<i64, SPLIT_K, true>(net, rd, bins, counts, room, n_tiles, bits, kmax);
}
#define PROC_SPLIT_SUM(S, suffix) \
    extern "C" __global__ void __launch_bounds__(SUB_BLOCK, 3) proc_split_n64_##suffix(Net net, const u32* bins, const u64* counts, u64 room, u32 n_tiles, \
                                                                                  u32 bits, u32 sbits, S* subs, u64* subcounts, u64 subroom) { \
        proc_split_impl<i64, S>(net, bins, counts, room, n_tiles, bits, sbits, subs, subcounts, subroom); \
    } \
    extern "C" __global__ void __launch_bounds__(1024) proc_sum_n64_##suffix(Net net, const S* subs, const u64* subcounts, u64 subroom, u32 n_subs, u32 sbits, \
                                                                          const u64* counts, u64 room, u32 bits, i64* spill, int* part, u32* flags) { \
        if (part) { \
            proc_sum_impl<i64, S, true>(net, subs, subcounts, subroom, n_subs, sbits, counts, room, bits, spill, part, flags); \
        } else { \
            proc_sum_impl<i64, S, false>(net, subs, subcounts, subroom, n_subs, sbits, counts, room, bits, spill, part, flags); \
        } \
    }
PROC_SPLIT_SUM(u16, s16)
PROC_SPLIT_SUM(u32, s32)
