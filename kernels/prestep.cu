// prestep.cu: the early step (`prestep`): every neuron stepped with its synaptic input right after
// the propagation, before the burst's injection arrives (`fix` in step.cu mends the injected ones)
// (after step.cu; see common.cuh).
//
// Each warp walks chunks of PRE_CHUNK neurons (PRE_ITEMS a lane, 32 apart: coalesced) on its own,
// grid-stride, with no block barrier: while one warp waits for its loads, the others compute and
// store. The fired neurons of a warp's chunks gather in the warp's own room in shared memory (id,
// pairs, read-back slot) and take their fired-list slots in runs, one global atomic a run, when the
// room would overflow and at the end: the fired list, its pair offsets, `chunk_first` and `where`
// as `step` writes them (the list's order is the atomics' order, as with `step`'s block claims).

// Neurons a lane at once: four (the bytes in flight a warp), two in the kernel of four blocks an SM
// (64 registers a thread: four spill there, and twice the warps keep as many bytes in flight).
#define PRE_ITEMS (FOUR_BLOCKS ? 2 : 4)
#define PRE_CHUNK (32 * PRE_ITEMS)
// A warp's room: a whole chunk fits into an empty one.
#define PRE_ROOM PRE_CHUNK
// Warps a block at most (256 threads).
#define PRE_WARPS 8

// The fired neurons staged in a warp's room (`n` of them), their slots claimed with one atomic;
// the room is empty after. Warp-uniform.
template <typename RP>
__device__ __forceinline__ void pre_flush(const Net& net, const Side& wr, const u32* ids, const u32* pairs, const u32* rbs,
                                          u32 n) {
    const u32 lane = threadIdx.x & 31;
    const u32 G = net.base;
    const u64 one = 1ULL << net.count_shift;
    const u64 mask = one - 1;
    __syncwarp();
    // this lane's entries: j = lane + 32 k
    u64 mine = 0;
    for (u32 j = lane; j < n; j += 32) mine += one | (net.multi ? 0 : pairs[j]);
    const u64 incl = warp_scan(mine);
    u64 base = 0;
    if (lane == 31 && incl != 0) base = atomicAdd(wr.counter, incl);
    base = __shfl_sync(0xffffffffu, base, 31);
    // positions in the order j = 0, 1, ...: round k's entries follow round k - 1's
    for (u32 k = 0; k * 32 < n; k++) {
        const u32 j = k * 32 + lane;
        const u64 pk = j < n ? (one | (net.multi ? 0 : pairs[j])) : 0;
        const u64 ex = warp_scan(pk) - pk;
        const u64 round = __shfl_sync(0xffffffffu, ex + pk, 31);
        if (j < n) {
            const u64 pos = base + ex;
            const u32 slot = (u32)(pos >> net.count_shift);
            const u32 id = ids[j];
            wr.fired[slot] = id;
            if (!net.multi) {
                list_row(net, wr, slot, pos & mask, row_start<RP>(net, id), pairs[j]);
            }
            net.where[id - G] = (u64)slot | ((u64)rbs[j] << 32);
        }
        base += round;
    }
    __syncwarp();
}

template <typename ACC, typename RP>
__device__ void prestep_impl(const Net& net, const Side& wr, Blk grid) {
    __shared__ u32 s_ids[PRE_WARPS][PRE_ROOM];
    __shared__ u32 s_pairs[PRE_WARPS][PRE_ROOM];
    __shared__ u32 s_rbs[PRE_WARPS][PRE_ROOM];
    __shared__ u32 s_rb[2 * STEP_MAX_RB];
    const u32 lane = threadIdx.x & 31;
    const u32 wib = threadIdx.x >> 5;
    u32* const ids = s_ids[wib];
    u32* const prs = s_pairs[wib];
    u32* const rbs = s_rbs[wib];
    const u32 N = net.n;
    const u32 G = net.base;  // local index n is neuron G + n of the brain
    const u64 t = *net.burst + 1;  // the early step runs before `fix` numbers the burst
    const u32 *rb_lo, *rb_hi;
    load_readback_ranges(net, s_rb, rb_lo, rb_hi);
    __syncthreads();
    u64* const rb_area = readback_area(net, t, true);
    ACC* __restrict__ accp = (ACC*)net.acc;
    const i64* __restrict__ vp = net.v;
    const u32* __restrict__ rccp = net.rcc;
    // the area of the warp's last chunk: [a_lo, a_hi) of global ids
    u32 a_cur = 0, a_lo = 1, a_hi = 0;
    u32 staged = 0;
    const u32 warps = grid.n * (blockDim.x >> 5);
    const u32 chunks = (N + PRE_CHUNK - 1) / PRE_CHUNK;
    for (u32 c = grid.id * (blockDim.x >> 5) + wib; c < chunks; c += warps) {
        const u32 base = c * PRE_CHUNK;
        // 1. every item's state, all loads in flight together
        ACC a[PRE_ITEMS];
        i64 v[PRE_ITEMS];
        u32 r[PRE_ITEMS];
#pragma unroll
        for (int i = 0; i < PRE_ITEMS; i++) {
            const u32 n = base + i * 32 + lane;
            const bool in = n < N;
            a[i] = in ? accp[n] : 0;
            v[i] = in ? vp[n] : 0;
            r[i] = in ? rccp[n] : 0;
        }
        // the chunk's area (warp-uniform): the last one's, or searched
        const u32 last = min(base + PRE_CHUNK, N) - 1;
        if (!(a_lo <= G + base && G + base < a_hi)) {
            a_cur = area_of(net.area_end, net.n_areas, G + base);
            a_lo = a_cur ? __ldg(net.area_end + a_cur - 1) : 0;
            a_hi = __ldg(net.area_end + a_cur);
        }
        const bool one_area = G + last < a_hi;
        const AreaParams* const p = net.areas + a_cur;
        // 2. compute
        bool f[PRE_ITEMS];
        i64 atf[PRE_ITEMS];
        i64 v1[PRE_ITEMS];
        u32 r1[PRE_ITEMS];
#pragma unroll
        for (int i = 0; i < PRE_ITEMS; i++) {
            f[i] = false;
            atf[i] = 0;
            v1[i] = v[i];
            r1[i] = r[i];
        }
        if (one_area && is_simple(*p)) {
            // one simple area: the short path (its parameters in registers)
            const AreaParams q = *p;
#pragma unroll
            for (int i = 0; i < PRE_ITEMS; i++) {
                const u32 n = base + i * 32 + lane;
                if (n < N) f[i] = step_simple(q, G + n, t, (u64)(i64)a[i], v1[i], r1[i], atf[i]);
            }
        } else {
#pragma unroll
            for (int i = 0; i < PRE_ITEMS; i++) {
                const u32 n = base + i * 32 + lane;
                if (n < N) {
                    const AreaParams* q = one_area ? p : net.areas + area_of(net.area_end, net.n_areas, G + n);
                    f[i] = step_core(*q, G + n, t, (u64)(i64)a[i], v1[i], r1[i], atf[i]);
                }
            }
        }
        // 3. stores: into the other state buffer (`fix` steps the injected neurons again from
        // this one), the fired bits, and the last burst's accumulator cleared (`fix` of that burst
        // is done with it; none when the propagation writes every neuron's input: tiles.cu)
        u32 k = 0;
#pragma unroll
        for (int i = 0; i < PRE_ITEMS; i++) {
            const u32 n = base + i * 32 + lane;
            if (n < N) {
                if (a[i] != 0 && !net.acc_keep) accp[n] = 0;
                net.v_out[n] = v1[i];
                net.rcc_out[n] = r1[i];
                if (net.acc_other) ((ACC*)net.acc_other)[n] = 0;
            }
            const unsigned fb = __ballot_sync(0xffffffffu, f[i]);
            if (lane == 0 && n < N) net.spec[n >> 5] = fb;
            k += __popc(fb);
        }
        if (k == 0) continue;
        // 4. the fired: read-back entries now, fired-list slots staged in the warp's room
        if (staged + k > PRE_ROOM) {
            pre_flush<RP>(net, wr, ids, prs, rbs, staged);
            staged = 0;
        }
#pragma unroll
        for (int i = 0; i < PRE_ITEMS; i++) {
            const u32 n = base + i * 32 + lane;
            const unsigned fb = __ballot_sync(0xffffffffu, f[i]);
            if (fb == 0) continue;
            const bool rb = f[i] && in_readback(net, rb_lo, rb_hi, G + n);
            const u32 rs = claim_readback(net, rb).put(net, rb_area, t, G + n, atf[i]);
            if (f[i]) {
                const u32 j = staged + __popc(fb & ((1u << lane) - 1));
                ids[j] = G + n;
                prs[j] = net.multi ? 0 : (u32)(row_start<RP>(net, n + 1) - row_start<RP>(net, n));
                rbs[j] = rs;
            }
            staged += __popc(fb);
        }
    }
    if (staged) pre_flush<RP>(net, wr, ids, prs, rbs, staged);
}

// The graphs' early step (4 blocks of 256 per SM; the resident kernel runs prestep_impl itself)
#define PRESTEP(NAME, ACC, RP) \
    extern "C" __global__ void __launch_bounds__(256, 4) NAME(Net net, Side wr) { prestep_impl<ACC, RP>(net, wr, hw_blk()); }
PRESTEP(prestep_n32_r32, int, u32)
PRESTEP(prestep_n32_r64, int, u64)
PRESTEP(prestep_n64_r32, i64, u32)
PRESTEP(prestep_n64_r64, i64, u64)
