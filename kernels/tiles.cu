// tiles.cu: a large brain's stored synapses summed where the cache is (after propagate.cu; see
// docs/cuda.md, "Tiles"). Random atomics into an accumulator larger than L2 cost a DRAM read and
// write each, and even in L2 they top out near 7e10 a second: W(20M) spent most of its burst
// there. So, one GPU in the resident kernel, the propagation is two phases:
//   tile_bin: every (spike, synapse) pair into the bin of its target's tile (2^bits neurons):
//             each block has its own room in each tile's bin and counts its entries in shared
//             memory (no global atomic), the entry the target within its tile | code << bits;
//   tile_sum: a block per tile adds its bins' entries into 32-bit sums in shared memory, then
//             writes them to the accumulator, whose neurons it alone owns (no clear before).
// A block whose room in a bin is full adds the synapse into `spill` instead (exact, slower) and
// flags the tile; tile_sum adds a flagged tile's spill in and clears it. Only for 32-bit
// accumulators (the brain's input bound fits, so no partial sum overflows): the same input as
// the direct path, bit for bit.

// The propagation's tiles (the host's `TilesParams` is generated from this).
struct Tiles {
    u32* bins;    // the entries of tile p from block g: bins[(p * blocks + g) * room ..]
    u32* counts;  // counts[g * n_tiles + p]: entries block g binned into tile p (room or more)
    u32* flags;   // per tile: 1 when its spill holds some of its sum
    int* spill;   // per neuron: what found no room (zero but in flagged tiles)
    u64 room;
    u32 n_tiles;  // 0: the propagation is direct (`propagate`)
    u32 bits;
    u32 blocks;   // blocks that bin (the grid of the resident kernel, or of `tile_bin`)
    u32 pad;
};

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

// Shared memory of tile_bin: the block's entries so far and the chunk's per tile, the chunk staged.
__host__ __device__ constexpr u32 tile_bin_smem(u32 n_tiles, u32 block) {
    return 8 * n_tiles + 6 * (block / 32) * BIN_WARP_CHUNKS * PAIRS_PER_WARP;
}

// Bin the pairs of `rd` (run by every block of a grid of t.blocks, with tile_bin_smem bytes of
// dynamic shared memory).
template <typename RP, typename CODE>
__device__ void tile_bin_impl(const Net& net, const Side& rd, const Tiles& t) {
    extern __shared__ u32 dyn[];
    const u32 nt = t.n_tiles;
    u32* const cnt = dyn;        // the block's entries in each tile's bin so far
    u32* const hist = dyn + nt;  // this chunk's per tile, then their offsets in `stage`
    const u32 per_block = (blockDim.x >> 5) * BIN_WARP_CHUNKS * PAIRS_PER_WARP;
    u32* const stage = dyn + 2 * nt;
    u16* const stile = (u16*)(stage + per_block);
    const u32 tid = threadIdx.x, warp = tid >> 5, g = blockIdx.x;
    const u32 mask = (1u << t.bits) - 1;
    for (u32 i = tid; i < nt; i += blockDim.x) cnt[i] = hist[i] = 0;
    const Pairs pc = pairs_of(net, rd);
    const u64 chunks = (pc.pairs + PAIRS_PER_WARP - 1) / PAIRS_PER_WARP;
    const u32 wchunks = (blockDim.x >> 5) * BIN_WARP_CHUNKS;
    __syncthreads();
    for (u64 bc = g; bc * wchunks < chunks; bc += t.blocks) {
        u32 ent[BIN_ITEMS], rk[BIN_ITEMS];
        {
            u32 tg[BIN_ITEMS], cd[BIN_ITEMS];
            int cv[BIN_ITEMS];
            warp_pairs<RP, CODE, BIN_ITEMS>(net, rd, pc, (bc * wchunks + warp * BIN_WARP_CHUNKS) * PAIRS_PER_WARP, tg, cd, cv);
#pragma unroll
            for (int i = 0; i < BIN_ITEMS; i++) {
                const u32 p = tg[i] >> t.bits;
                ent[i] = (tg[i] & mask) | (cd[i] << t.bits);
                // rank in the tile's run | tile << 16 (a chunk holds fewer than 2^16 entries)
                rk[i] = cv[i] != 0 ? atomicAdd(hist + p, 1u) | (p << 16) : ~0u;
            }
        }
        __syncthreads();
        const u32 total = block_scan(hist, nt);
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
                atomicAdd(t.spill + ((p << t.bits) | (e & mask)), net.table[e >> t.bits]);
                t.flags[p] = 1;
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
    }
    __syncthreads();
    for (u32 i = tid; i < nt; i += blockDim.x) t.counts[(u64)g * nt + i] = cnt[i];
}

// Blocks that bin at most (the tiles' sum keeps their runs' starts in shared memory).
#define TILE_MAX_BLOCKS 1024
// Entries a thread loads before it adds them.
#define SUM_UNROLL 8

// The sums of tile b.id (2^bits ints of dynamic shared memory) into net.acc (32-bit): every
// block's run in the tile's bin, the runs one after another, each thread over every
// blockDim.x-th entry.
__device__ void tile_sum_impl(const Net& net, const Tiles& t, Blk b) {
    extern __shared__ int sums[];
    __shared__ u32 start[TILE_MAX_BLOCKS + 1];
    const u32 p = b.id;
    const u32 first = p << t.bits;
    const u32 len = min(1u << t.bits, net.n - first);
    const u32 mask = (1u << t.bits) - 1;
    const u32 tid = threadIdx.x;
    for (u32 i = tid; i < len; i += blockDim.x) sums[i] = 0;
    for (u32 g = tid; g < t.blocks; g += blockDim.x) start[g] = (u32)min((u64)t.counts[(u64)g * t.n_tiles + p], t.room);
    __syncthreads();
    const u32 total = block_scan(start, t.blocks);
    if (tid == 0) start[t.blocks] = total;
    __syncthreads();
    const int* __restrict__ table = net.table;
    const u32* bins = t.bins + (u64)p * t.blocks * t.room;
    for (u32 base = 0; base < total; base += blockDim.x * SUM_UNROLL) {
        u32 x[SUM_UNROLL];
#pragma unroll
        for (int u = 0; u < SUM_UNROLL; u++) {
            const u32 i = base + u * blockDim.x + tid;
            x[u] = ~0u;
            if (i < total) {
                // the run holding entry i: the last g with start[g] <= i
                u32 lo = 0, hi = t.blocks - 1;
                while (lo < hi) {
                    const u32 mid = (lo + hi + 1) >> 1;
                    if (start[mid] <= i) lo = mid; else hi = mid - 1;
                }
                x[u] = __ldcs(bins + (u64)lo * t.room + (i - start[lo]));
            }
        }
#pragma unroll
        for (int u = 0; u < SUM_UNROLL; u++)
            if (x[u] != ~0u) atomicAdd(sums + (x[u] & mask), table[x[u] >> t.bits]);
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
    if (spilled && tid == 0) t.flags[p] = 0;
}

// The two phases as kernels of their own (the propagation the host runs ahead of the resident
// kernel's first burst): tile_bin with t.blocks blocks, tile_sum with any grid.
#define TILE_BIN(SUFFIX, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) tile_bin_##SUFFIX(Net net, Side rd, Tiles t) { tile_bin_impl<RP, CODE>(net, rd, t); }
TILE_BIN(r32_c16, u32, u16)
TILE_BIN(r32_c32, u32, u32)
TILE_BIN(r64_c16, u64, u16)
TILE_BIN(r64_c32, u64, u32)
extern "C" __global__ void __launch_bounds__(256) tile_sum(Net net, Tiles t) {
    for (u32 p = blockIdx.x; p < t.n_tiles; p += gridDim.x) {
        __syncthreads();
        tile_sum_impl(net, t, Blk{p, t.n_tiles});
    }
}
