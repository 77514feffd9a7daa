// propagate.cu: the last burst's spikes over the synapses (the closed forms too: proc_impl; the
// procedural rows are rows.cu's), and the fired lists' plumbing: the gather of every GPU's list (several GPUs), the relist of a restored list, and the input bound
// that picks the accumulator width (after common.cuh, inject.cu and step.cu; see common.cuh).

// The procedural synapses of the fired sources: a warp per (fired slot, procedural mapping), its
// lanes over the mapping's fanout; targets outside this GPU's neurons are left to their own GPU.
template <typename ACC>
__device__ void proc_impl(const Net& net, const u32* fired, u32 count, u64 warp, u64 warps, u32 lane) {
    const u64 items = (u64)count * net.n_proc;
    for (u64 it = warp; it < items; it += warps) {
        const u32 s = fired[it / net.n_proc];
        const ProcMap m = net.proc[it % net.n_proc];
        if (s == DEAD || s - m.src_first >= m.src_count) continue;
        const u64 key = mix64(m.key ^ ((u64)s * 0xd1b54a32d192ed03ULL));
        for (u32 j = lane; j < m.fanout; j += 32) {
            const u32 d = proc_target(m, key, j);
            const u32 t = d - net.base;
            if (d != ~0u && t < net.n) acc_add<ACC>(net.acc, t, m.contribution);
        }
    }
}

// The fired list's pair count and fired count (packed counter of `rd`).
struct Pairs {
    u64 pairs;
    u32 count;
};
__device__ __forceinline__ Pairs pairs_of(const Net& net, const Side& rd) {
    const u64 packed = *rd.counter;
    return Pairs{packed & ((1ULL << net.count_shift) - 1), (u32)(packed >> net.count_shift)};
}

#define CHUNK_ITEMS (PAIRS_PER_WARP / 32)

// A warp's ITEMS * 32 (spike, synapse) pairs from k0 (a multiple of PAIRS_PER_WARP) of the fired
// list `rd`, fetched in three stages of loads, each needing the one before: the chunk's bounds
// (`fetch_bounds`: the chunk index), its rows (`fetch_rows`) and their synapses (`fetch_pairs`).
// `each_pair` loads a warp's next chunk's bounds and rows while this chunk's synapses and values
// load (one H200: W(5M)'s propagation 87.4 -> 84.5 us, W(100k)'s 6.2 -> 5.4); `tile_bin` spreads
// the stages over its barriers' epochs, so that a stage's loads fly while the block sorts and
// writes out the chunk before. Lane l's item i is pair k0 + l + 32 i. When the pairs lie in at
// most 32 rows (rows of 8 pairs or more on average), each lane loads one row's offset, id and
// shift (written with the slot), and every item finds its row among the lanes by shuffles: two
// rounds of loads before the synapses instead of a binary search in memory per item (one H200:
// W(1M)'s propagation 30.3 -> 23.5 us, W(20M)'s binning 482 -> 406 us; each row's start (now its
// shift) kept with its slot, one round fewer: W(5M) period 115.6 -> 107.0 us in one call).
struct PairFetch {
    u64 k0, k1;  // the warp's pairs [k0, k1)
    u32 lo, hi;  // the fired slots that hold them
    u64 o, sh;   // at most 32 rows: lane l's row lo + l, its first pair (~0: none) and its shift
    u32 f;       // its id (DEAD: none, or a slot the early step's `fix` emptied)
};

__device__ __forceinline__ PairFetch fetch_bounds(const Net& net, Pairs pc, u64 k0, u32 items) {
    PairFetch p;
    p.k0 = k0;
    p.k1 = min(k0 + items * 32, pc.pairs);
    p.lo = k0 < pc.pairs ? net.chunk_first[k0 / PAIRS_PER_WARP] : 0;
    p.hi = p.k1 < pc.pairs ? net.chunk_first[p.k1 / PAIRS_PER_WARP] : pc.count - 1;
    p.o = ~0ULL;
    p.sh = 0;
    p.f = DEAD;
    return p;
}

// (not __restrict__ loads: the resident kernel wrote the list earlier in the same launch, and the
// read-only path's loads would not see that)
__device__ __forceinline__ void fetch_rows(const Side& rd, Pairs pc, PairFetch& p) {
    const u32 lane = threadIdx.x & 31;
    if (p.hi - p.lo < 32 && lane <= p.hi - p.lo && p.k0 < pc.pairs) {
        p.o = rd.offs[p.lo + lane];
        p.f = rd.fired[p.lo + lane];
        p.sh = rd.shifts[p.lo + lane];
    }
}

// Each item's target and code; bit i of the result: item i is a pair of a row still fired.
template <typename CODE, int ITEMS>
__device__ __forceinline__ u32 fetch_pairs(const Net& net, const Side& rd, const PairFetch& p, u32 (&tg)[ITEMS], u32 (&cd)[ITEMS]) {
    static_assert(ITEMS <= 32, "a bit an item");
    const u32 lane = threadIdx.x & 31;
    const CODE* __restrict__ codes = (const CODE*)net.codes;
    const u32* __restrict__ targets = net.targets;
    const u64 k0 = p.k0, k1 = p.k1;
    u32 src[ITEMS];
    u64 j[ITEMS];
    if (p.hi - p.lo < 32) {
        // where lane l's row's pairs start in the list (relative to k0, saturated)
        const u32 rel = p.o == ~0ULL ? ~0u : (p.o <= k0 ? 0u : (u32)min(p.o - k0, (u64)0xFFFFFFFEULL));
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u32 kk = lane + 32 * i;
            u32 pos = 0;
#pragma unroll
            for (u32 b = 16; b; b >>= 1) {
                const u32 c = pos + b;
                const u32 r = __shfl_sync(0xffffffffu, rel, c & 31);
                if (c < 32 && r <= kk) pos = c;
            }
            const u32 s = __shfl_sync(0xffffffffu, p.f, pos);
            const u64 sh = __shfl_sync(0xffffffffu, p.sh, pos);
            src[i] = k0 + kk < k1 ? s : DEAD;
            j[i] = sh + k0 + kk;
        }
    } else {
        u32 s[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u64 k = k0 + lane + 32 * i;
            s[i] = (k < k1) ? find_row(rd.offs, p.lo, p.hi, k) : p.lo;
        }
        u64 sh[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            src[i] = k0 + lane + 32 * i < k1 ? rd.fired[s[i]] : DEAD;
            sh[i] = rd.shifts[s[i]];
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            // a DEAD slot (early step: the neuron did not fire after all) propagates nothing
            j[i] = src[i] != DEAD ? sh[i] + (k0 + lane + 32 * i) : 0;
        }
    }
    u32 ok = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const bool live = src[i] != DEAD;
        tg[i] = live ? targets[j[i]] : 0;
        cd[i] = live ? (u32)codes[j[i]] : 0;
        ok |= (u32)live << i;
    }
    return ok;
}

// The items' contributions (0: no pair, or none to add).
template <int ITEMS>
__device__ __forceinline__ void pair_values(const Net& net, u32 ok, const u32 (&cd)[ITEMS], int (&cv)[ITEMS]) {
    const int* __restrict__ table = net.table;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) cv[i] = (ok >> i) & 1 ? table[cd[i]] : 0;
}

// Every (spike, synapse) pair of the last burst's fired list `rd` whose contribution is not 0,
// grid-stride over chunks of PAIRS_PER_WARP pairs a warp: f(target, code, contribution).
template <typename CODE, typename F>
__device__ __forceinline__ void each_pair(const Net& net, const Side& rd, Blk b, F f) {
    const Pairs pc = pairs_of(net, rd);
    const u64 warp = ((u64)b.id * blockDim.x + threadIdx.x) >> 5;
    const u64 warps = ((u64)b.n * blockDim.x) >> 5;
    if (warp * PAIRS_PER_WARP >= pc.pairs) return;
    PairFetch p = fetch_bounds(net, pc, warp * PAIRS_PER_WARP, CHUNK_ITEMS);
    fetch_rows(rd, pc, p);
    // the warp's next chunk's bounds and rows load while this chunk's synapses and values do
    for (u64 c = warp; c * PAIRS_PER_WARP < pc.pairs; c += warps) {
        const bool more = (c + warps) * PAIRS_PER_WARP < pc.pairs;
        PairFetch q = p;
        if (more) q = fetch_bounds(net, pc, (c + warps) * PAIRS_PER_WARP, CHUNK_ITEMS);
        u32 tg[CHUNK_ITEMS], cd[CHUNK_ITEMS];
        int cv[CHUNK_ITEMS];
        const u32 ok = fetch_pairs<CODE>(net, rd, p, tg, cd);
        if (more) fetch_rows(rd, pc, q);
        pair_values(net, ok, cd, cv);
#pragma unroll
        for (int i = 0; i < CHUNK_ITEMS; i++)
            if (cv[i] != 0) f(tg[i], cd[i], cv[i]);
        p = q;
    }
}

// The list's synapses (`rows`: its stored rows too; false when learning propagated them: learn.cu).
template <typename ACC, typename RP, typename CODE>
__device__ void propagate_impl(const Net& net, const Side& rd, Blk b, bool rows = true) {
    if (rows) each_pair<CODE>(net, rd, b, [&](u32 t, u32, int cv) { acc_add<ACC>(net.acc, t, cv); });
    if (net.n_proc && !net.proc_binned) {
        const u32 lane = threadIdx.x & 31;
        const u64 warp = ((u64)b.id * blockDim.x + threadIdx.x) >> 5;
        const u64 warps = ((u64)b.n * blockDim.x) >> 5;
        proc_impl<ACC>(net, rd.fired, pairs_of(net, rd).count, warp, warps, lane);
    }
}

// One GPU of several: where another GPU's fired list of the last burst lies (peer memory over
// NVLink, or this GPU's own).
struct Peer {
    const u32* fired;
    const u64* counter; // count << count_shift (no pairs)
};
#define MAX_PEERS 64

// gather: the whole brain's fired list of the last burst, read from every GPU's own list (peer
// loads, or the copies the others pushed here: resident.cu), into rd with the row offsets of this
// GPU's part and the chunk index, as `step` builds them on one GPU (block scan, one atomic per
// block of 256 ids; rd.counter zeroed before). Runs over the hardware grid.
template <typename RP>
__device__ void gather_impl(const Net& net, const Side& rd, const Peer* peers, u32 n_peers) {
    __shared__ u64 pre[MAX_PEERS + 1];
    __shared__ u64 warp_sum[32];
    if (threadIdx.x == 0) {
        u64 a = 0;
        for (u32 r = 0; r < n_peers; r++) {
            pre[r] = a;
            a += (*(volatile const u64*)peers[r].counter) >> net.count_shift;
        }
        pre[n_peers] = a;
    }
    __syncthreads();
    const u64 total = pre[n_peers];
    const u64 mask = (1ULL << net.count_shift) - 1;
    for (u64 tile = (u64)blockIdx.x * blockDim.x; tile < total; tile += (u64)gridDim.x * blockDim.x) {
        const u64 i = tile + threadIdx.x;
        u32 s = 0;
        u64 pk = 0;
        if (i < total) {
            u32 r = 0;
            while (r + 1 < n_peers && pre[r + 1] <= i) r++;
            s = peers[r].fired[i - pre[r]];
            // a slot the early step's `fix` emptied takes no slot here
            if (s != DEAD) pk = (1ULL << net.count_shift) | (row_start<RP>(net, s + 1) - row_start<RP>(net, s));
        }
        const u64 pos = block_claim(pk, rd.counter, warp_sum);
        if (pk != 0) {
            const u32 slot = (u32)(pos >> net.count_shift);
            const u64 off = pos & mask;
            rd.fired[slot] = s;
            list_row(net, rd, slot, off, row_start<RP>(net, s), pk & mask);
        }
    }
}

// Restoring a fired list: rebuild the row offsets of `count` ids already in wr.fired (host order)
// into tmp order; the packed counter is recomputed here (wr.counter must be 0).
template <typename RP>
__device__ void relist_impl(const Net& net, const Side& wr, const u32* ids, u32 count) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const u32 s = ids[i];
    const u64 len = row_start<RP>(net, s + 1) - row_start<RP>(net, s);
    const u64 pos = atomicAdd(wr.counter, (1ULL << net.count_shift) | len);
    const u32 slot = (u32)(pos >> net.count_shift);
    wr.fired[slot] = s;
    list_row(net, wr, slot, pos & ((1ULL << net.count_shift) - 1), row_start<RP>(net, s), len);
}

// Upper bound of each neuron's synaptic input in one burst: sum of |c| over its incoming synapses
// (into `scratch`, u64 per neuron), then the maximum into *out. Decides the accumulator width.
template <typename CODE>
__device__ void in_bound_impl(const Net& net, u64* scratch, u64 synapses) {
    const CODE* codes = (const CODE*)net.codes;
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < synapses; j += (u64)gridDim.x * blockDim.x) {
        const int c = net.table[codes[j]];
        const u64 m = c < 0 ? (u64)(-(i64)c) : (u64)c;
        if (m) atomicAdd(scratch + net.targets[j], m);
    }
}

extern "C" __global__ void max_reduce(const u64* scratch, u32 n, u64* out) {
    u64 m = 0;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) m = max(m, scratch[i]);
    for (int d = 16; d > 0; d >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, d));
    if ((threadIdx.x & 31) == 0 && m) atomicMax(out, m);
}

#define PROPAGATE(SUFFIX, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) propagate_##SUFFIX(Net net, Side rd) { propagate_impl<ACC, RP, CODE>(net, rd, hw_blk()); }
EACH_VARIANT(PROPAGATE)

extern "C" __global__ void __launch_bounds__(256) gather_r32(Net net, Side rd, const Peer* peers, u32 n_peers) { gather_impl<u32>(net, rd, peers, n_peers); }
extern "C" __global__ void __launch_bounds__(256) gather_r64(Net net, Side rd, const Peer* peers, u32 n_peers) { gather_impl<u64>(net, rd, peers, n_peers); }
extern "C" __global__ void relist_r32(Net net, Side wr, const u32* ids, u32 count) { relist_impl<u32>(net, wr, ids, count); }
extern "C" __global__ void relist_r64(Net net, Side wr, const u32* ids, u32 count) { relist_impl<u64>(net, wr, ids, count); }
extern "C" __global__ void in_bound_c16(Net net, u64* scratch, u64 synapses) { in_bound_impl<u16>(net, scratch, synapses); }
extern "C" __global__ void in_bound_c32(Net net, u64* scratch, u64 synapses) { in_bound_impl<u32>(net, scratch, synapses); }
