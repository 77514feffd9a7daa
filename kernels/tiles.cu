// tiles.cu: a large brain's stored synapses summed where the cache is (after propagate.cu; see
// docs/cuda.md, "Tiles"). Random atomics into an accumulator larger than L2 cost a DRAM read and
// write each, and even in L2 they top out near 7e10 a second: W(20M) spent most of its burst
// there. So, one GPU in the resident kernel, the propagation is three phases:
//   tile_bin:   every (spike, synapse) pair into the bin of its target's coarse tile (2^cbits
//               neurons, at most a few hundred tiles, so that a block's chunk leaves runs of
//               whole sectors): each block has its own room in each coarse bin and counts its
//               entries in shared memory (no global atomic), the entry the target within its
//               coarse tile | code << cbits;
//   tile_split: the coarse bins' entries into the fine tiles (2^bits neurons) of their coarse
//               tile, in runs reserved by one global atomic a run, so that each fine tile's
//               entries lie in one array, the entry the target within its tile | code << bits;
//   tile_sum:   a block per fine tile adds its entries into 32-bit sums in shared memory, then
//               writes them to the accumulator, whose neurons it alone owns (no clear before).
// An entry that finds no room (a block's coarse room, or a fine tile's array, full) is added into
// `spill` instead (exact, slower) and flags its fine tile; tile_sum adds a flagged tile's spill in
// and clears it. Only for 32-bit accumulators (the brain's input bound fits, so no partial sum
// overflows): the same input as the direct path, bit for bit.

// The propagation's tiles (the host's `TilesParams` is generated from this).
struct Tiles {
    u32* bins;    // coarse tile c's entries from block g: bins[(c * blocks + g) * room ..]
    u32* counts;  // counts[g * n_coarse + c]: entries block g binned into coarse tile c (room or more)
    u32* fine;    // fine tile p's entries: fine[p * cap ..]
    u32* fill;    // per fine tile: its entries this burst (cap or more; tile_sum zeroes it)
    u32* flags;   // per fine tile: 1 when its spill holds some of its sum
    int* spill;   // per neuron: what found no room (zero but in flagged tiles)
    u64 room;     // entries of a block's room in a coarse bin
    u64 cap;      // entries of a fine tile's array
    u32 n_tiles;  // fine tiles; 0: the propagation is direct (`propagate`)
    u32 bits;
    u32 n_coarse;
    u32 cbits;    // a coarse tile: 2^(cbits - bits) fine tiles (at most TILE_MAX_FINE)
    u32 blocks;   // blocks that bin (the grid of the resident kernel, or of `tile_bin`)
    u32 slices;   // tile_split's items a coarse tile: TILE_SLICE_ROOMS blocks' rooms each
};

// Fine tiles of a coarse tile at most, and the blocks' rooms one tile_split item reads at most.
#define TILE_MAX_FINE 1024
#define TILE_SLICE_ROOMS 16

// Exclusive prefix sum of a[0..n) in place (every thread of the block calls it), in shared
// memory; returns the total. Each thread sums a run of consecutive words, then the runs' sums are
// scanned across the block.
__device__ u32 block_scan(u32* a, u32 n) {
    __shared__ u32 wsum[32];
    __shared__ u32 s_total;
    const u32 tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = blockDim.x >> 5;
    const u32 per = (n + blockDim.x - 1) / blockDim.x;
    const u32 lo = min(tid * per, n), hi = min(lo + per, n);
    u32 mine = 0;
    for (u32 i = lo; i < hi; i++) mine += a[i];
    const u32 incl = warp_scan(mine);
    if (lane == 31) wsum[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const u32 w = warp_scan(lane < nw ? wsum[lane] : 0u);
        if (lane < nw) wsum[lane] = w;
        if (lane == nw - 1) s_total = w;
    }
    __syncthreads();
    u32 run = incl - mine + (warp ? wsum[warp - 1] : 0);
    for (u32 i = lo; i < hi; i++) {
        const u32 v = a[i];
        a[i] = run;
        run += v;
    }
    __syncthreads();
    return s_total;
}

// Warp chunks (of PAIRS_PER_WARP pairs) a warp bins at a time: a block's chunk is staged sorted
// by tile in shared memory and written out in runs.
#define BIN_WARP_CHUNKS 2
#define BIN_ITEMS (BIN_WARP_CHUNKS * CHUNK_ITEMS)

// Bin the pairs of `rd` by coarse tile (run by every block of a grid of t.blocks; dynamic shared
// memory: 8 bytes a coarse tile, and the chunk staged, 6 bytes an entry).
template <typename RP, typename CODE>
__device__ void tile_bin_impl(const Net& net, const Side& rd, const Tiles& t) {
    extern __shared__ u32 dyn[];
    const u32 nt = t.n_coarse;
    u32* const cnt = dyn;        // the block's entries in each coarse tile's bin so far
    u32* const hist = dyn + nt;  // this chunk's per tile, then their offsets in `stage`
    const u32 per_block = (blockDim.x >> 5) * BIN_WARP_CHUNKS * PAIRS_PER_WARP;
    u32* const stage = dyn + 2 * nt;
    u16* const stile = (u16*)(stage + per_block);
    const u32 tid = threadIdx.x, warp = tid >> 5, g = blockIdx.x;
    const u32 mask = (1u << t.cbits) - 1;
    for (u32 i = tid; i < nt; i += blockDim.x) cnt[i] = hist[i] = 0;
    const Pairs pc = pairs_of(net, rd);
    const u64 chunks = (pc.pairs + PAIRS_PER_WARP - 1) / PAIRS_PER_WARP;
    const u32 wchunks = (blockDim.x >> 5) * BIN_WARP_CHUNKS;
    __syncthreads();
    // The next chunk's bounds and rows are fetched while this chunk is sorted (the first while this
    // chunk's synapses are loaded, the second between the barriers of its scan), so that only the
    // synapses' loads stand between a chunk and its sort.
    const u64 step = t.blocks;
    const auto k0_of = [&](u64 c) { return (c * wchunks + warp * BIN_WARP_CHUNKS) * PAIRS_PER_WARP; };
    PairFetch cur = fetch_bounds(net, pc, k0_of(g), BIN_ITEMS);
    fetch_rows(rd, pc, cur);
    for (u64 bc = g; bc * wchunks < chunks; bc += step) {
        u32 ent[BIN_ITEMS], rk[BIN_ITEMS];
        PairFetch ahead;
        {
            u32 tg[BIN_ITEMS], cd[BIN_ITEMS];
            int cv[BIN_ITEMS];
            const u32 ok = fetch_pairs<CODE>(net, rd, cur, tg, cd);
            ahead = fetch_bounds(net, pc, k0_of(bc + step), BIN_ITEMS);
            pair_values(net, ok, cd, cv);
#pragma unroll
            for (int i = 0; i < BIN_ITEMS; i++) {
                const u32 p = tg[i] >> t.cbits;
                ent[i] = (tg[i] & mask) | (cd[i] << t.cbits);
                // rank in the tile's run | tile << 16 (a chunk holds fewer than 2^16 entries)
                rk[i] = cv[i] != 0 ? atomicAdd(hist + p, 1u) | (p << 16) : ~0u;
            }
        }
        __syncthreads();
        const u32 total = block_scan(hist, nt);
        fetch_rows(rd, pc, ahead);
#pragma unroll
        for (int i = 0; i < BIN_ITEMS; i++) {
            if (rk[i] != ~0u) {
                const u32 p = rk[i] >> 16, at = hist[p] + (rk[i] & 0xffffu);
                stage[at] = ent[i];
                stile[at] = (u16)p;
            }
        }
        __syncthreads();
        // out in runs: entry i of tile p's run goes to the block's room in p's bin, after its last
        for (u32 i = tid; i < total; i += blockDim.x) {
            const u32 p = stile[i], e = stage[i];
            const u32 at = cnt[p] + (i - hist[p]);
            if (at < t.room) {
                t.bins[((u64)p * t.blocks + g) * t.room + at] = e;
            } else {
                const u32 target = (p << t.cbits) | (e & mask);
                atomicAdd(t.spill + target, net.table[e >> t.cbits]);
                t.flags[target >> t.bits] = 1;
            }
        }
        __syncthreads();
        // the runs' lengths into the counts, and `hist` zeroed for the next chunk
        u32 h[8];
        for (u32 p0 = 0; p0 < nt; p0 += 8 * blockDim.x) {
#pragma unroll
            for (int q = 0; q < 8; q++) {
                const u32 p = p0 + q * blockDim.x + tid;
                h[q] = p < nt ? (p + 1 < nt ? hist[p + 1] : total) - hist[p] : 0;
            }
            __syncthreads();
#pragma unroll
            for (int q = 0; q < 8; q++) {
                const u32 p = p0 + q * blockDim.x + tid;
                if (p < nt) {
                    cnt[p] += h[q];
                    hist[p] = 0;
                }
            }
        }
        __syncthreads();
        cur = ahead;
    }
    __syncthreads();
    for (u32 i = tid; i < nt; i += blockDim.x) t.counts[(u64)g * nt + i] = cnt[i];
}

// The coarse bins' entries into the fine tiles' arrays (grid-stride over the items: a coarse tile
// and TILE_SLICE_ROOMS binning blocks' rooms in its bin; dynamic shared memory: 8 bytes a fine
// tile of a coarse one, the item's rooms' starts, and the chunk staged, 6 bytes an entry).
__device__ void tile_split_impl(const Net& net, const Tiles& t) {
    extern __shared__ u32 dyn[];
    const u32 nf = 1u << (t.cbits - t.bits);
    u32* const hist = dyn;            // this chunk's entries per fine tile, then their offsets in `stage`
    u32* const resv = dyn + nf;       // where each fine tile's run goes in its array
    u32* const start = dyn + 2 * nf;  // the item's rooms' first entries, and their total
    u32* const stage = start + TILE_SLICE_ROOMS + 1;
    u16* const stile = (u16*)(stage + BIN_ITEMS * blockDim.x);
    const u32 tid = threadIdx.x;
    const u32 cmask = (1u << t.cbits) - 1, mask = (1u << t.bits) - 1;
    const u32 items = t.n_coarse * t.slices;
    for (u32 i = tid; i < nf; i += blockDim.x) hist[i] = 0;
    for (u32 w = blockIdx.x; w < items; w += gridDim.x) {
        const u32 c = w / t.slices, g0 = (w % t.slices) * TILE_SLICE_ROOMS;
        const u32 nr = min((u32)TILE_SLICE_ROOMS, t.blocks - g0);
        __syncthreads();
        if (tid < 32) {
            const u32 len = tid < nr ? (u32)min((u64)t.counts[(u64)(g0 + tid) * t.n_coarse + c], t.room) : 0u;
            const u32 incl = warp_scan(len);
            if (tid < nr) start[tid + 1] = incl;
            if (tid == 0) start[0] = 0;
        }
        __syncthreads();
        const u32 total = start[nr];
        const u32* src = t.bins + ((u64)c * t.blocks + g0) * t.room;
        const u32 p0 = c << (t.cbits - t.bits);
        const u32 step = BIN_ITEMS * blockDim.x;
        // a round's entries (the rooms walked in order: `r` only grows within an item)
        u32 r = 0;
        auto load = [&](u32 base, u32 (&x)[BIN_ITEMS]) {
#pragma unroll
            for (int u = 0; u < BIN_ITEMS; u++) {
                const u32 i = base + u * blockDim.x + tid;
                x[u] = 0;
                if (i < total) {
                    while (start[r + 1] <= i) r++;
                    x[u] = __ldcs(src + (u64)r * t.room + (i - start[r]));
                }
            }
        };
        u32 next[BIN_ITEMS];
        load(0, next);
        for (u32 base = 0; base < total; base += step) {
            u32 x[BIN_ITEMS], rk[BIN_ITEMS];
#pragma unroll
            for (int u = 0; u < BIN_ITEMS; u++) x[u] = next[u];
            // the next round's loads in flight while this round is staged and written out
            if (base + step < total) load(base + step, next);
#pragma unroll
            for (int u = 0; u < BIN_ITEMS; u++) {
                rk[u] = ~0u;
                if (base + u * blockDim.x + tid < total) {
                    const u32 f = (x[u] & cmask) >> t.bits;
                    // rank in the fine tile's run | fine tile << 16 (a chunk holds fewer than 2^16)
                    rk[u] = atomicAdd(hist + f, 1u) | (f << 16);
                    x[u] = (x[u] & mask) | ((x[u] >> t.cbits) << t.bits);
                }
            }
            __syncthreads();
            const u32 n = block_scan(hist, nf);
#pragma unroll
            for (int u = 0; u < BIN_ITEMS; u++) {
                if (rk[u] != ~0u) {
                    const u32 f = rk[u] >> 16, at = hist[f] + (rk[u] & 0xffffu);
                    stage[at] = x[u];
                    stile[at] = (u16)f;
                }
            }
            // each fine tile's run reserved in its array: one global atomic a run
            for (u32 f = tid; f < nf; f += blockDim.x) {
                const u32 len = (f + 1 < nf ? hist[f + 1] : n) - hist[f];
                resv[f] = len ? atomicAdd(t.fill + p0 + f, len) : 0u;
            }
            __syncthreads();
            for (u32 i = tid; i < n; i += blockDim.x) {
                const u32 f = stile[i], e = stage[i], p = p0 + f;
                const u64 at = (u64)resv[f] + (i - hist[f]);
                if (at < t.cap) {
                    t.fine[(u64)p * t.cap + at] = e;
                } else {
                    atomicAdd(t.spill + ((p << t.bits) | (e & mask)), net.table[e >> t.bits]);
                    t.flags[p] = 1;
                }
            }
            __syncthreads();
            for (u32 f = tid; f < nf; f += blockDim.x) hist[f] = 0;
            __syncthreads();
        }
    }
}

// Entries a thread loads before it adds them.
#define SUM_UNROLL 16

// The sums of fine tile b.id (2^bits ints of dynamic shared memory) into net.acc (32-bit): its
// array, each thread over every blockDim.x-th entry.
__device__ void tile_sum_impl(const Net& net, const Tiles& t, Blk b) {
    extern __shared__ int sums[];
    const u32 p = b.id;
    const u32 first = p << t.bits;
    const u32 len = min(1u << t.bits, net.n - first);
    const u32 mask = (1u << t.bits) - 1;
    const u32 tid = threadIdx.x;
    for (u32 i = tid; i < len; i += blockDim.x) sums[i] = 0;
    const u32 total = (u32)min((u64)t.fill[p], t.cap);
    __syncthreads();
    const int* __restrict__ table = net.table;
    const u32* in = t.fine + (u64)p * t.cap;
    for (u32 base = 0; base < total; base += blockDim.x * SUM_UNROLL) {
        u32 x[SUM_UNROLL];
#pragma unroll
        for (int u = 0; u < SUM_UNROLL; u++) {
            const u32 i = base + u * blockDim.x + tid;
            x[u] = i < total ? __ldcs(in + i) : 0u;
        }
#pragma unroll
        for (int u = 0; u < SUM_UNROLL; u++)
            if (base + u * blockDim.x + tid < total) atomicAdd(sums + (x[u] & mask), table[x[u] >> t.bits]);
    }
    const bool spilled = t.flags[p] != 0;
    __syncthreads();
    int* acc = (int*)net.acc;
    for (u32 i = tid; i < len; i += blockDim.x) {
        int v = sums[i];
        if (spilled) {
            v += t.spill[first + i];
            t.spill[first + i] = 0;
        }
        acc[first + i] = v;
    }
    if (tid == 0) {
        t.fill[p] = 0;
        if (spilled) t.flags[p] = 0;
    }
}

// The three phases as kernels of their own (the propagation the host runs ahead of the resident
// kernel's first burst): tile_bin with t.blocks blocks, tile_split and tile_sum with any grid.
#define TILE_BIN(SUFFIX, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) tile_bin_##SUFFIX(Net net, Side rd, Tiles t) { tile_bin_impl<RP, CODE>(net, rd, t); }
TILE_BIN(r32_c16, u32, u16)
TILE_BIN(r32_c32, u32, u32)
TILE_BIN(r64_c16, u64, u16)
TILE_BIN(r64_c32, u64, u32)
extern "C" __global__ void __launch_bounds__(256) tile_split(Net net, Tiles t) { tile_split_impl(net, t); }
extern "C" __global__ void __launch_bounds__(256) tile_sum(Net net, Tiles t) {
    for (u32 p = blockIdx.x; p < t.n_tiles; p += gridDim.x) {
        __syncthreads();
        tile_sum_impl(net, t, Blk{p, t.n_tiles});
    }
}
