// learn.cu: plasticity (docs/plasticity.md), the mirror of crates/engine/src/backend/learn/mod.rs, after the
// burst that fired the list `rd` and before that list is propagated (after common.cuh; see it).
//
// A plastic synapse's code is `code_base + group * 256 + weight`: learning rewrites codes, and
// the propagation reads them as it reads static ones. A history holds the longest window's bits
// only, so a neuron silent for that long has none, and the record walks the active neurons, not
// the brain. The phases, each over the whole grid:
//   learn_mark:  the fired list -> one bit per neuron (`now`); the active count reset (one GPU's
//                resident kernel: neither; `fix` leaves the list's bits in `spec`, and the block
//                that publishes the burst resets the count);
//   learn_shift: the neurons with a history (`act`, a bit each) or that fired: the history
//                shifted, the new bit in, its status per window (active within it, in all of it,
//                and the count of bursts it was active: the deferred depressions of the synapses
//                onto it whose source was silent); those still active within the longest window
//                listed (`active`, in sorted runs); every other neuron's history is 0 and stays
//                so, its status as it is;
//   learn_rows:  a warp per row, in a pipeline: each active source's plastic synapses by the
//                whole rule, after what they owe (the target's count since the synapse's stamp);
//                then the sweep's rows of the burst brought up to date (synapses whose source is
//                silent only: the two never touch the same synapse); in one GPU's resident kernel,
//                the list's rows propagated as they are learned (unless growth or tiles follow);
//   learn_grow:  one block: the associative pairs grown, in (source, target) order up to the cap.
// Every synapse is written by one thread per phase, so the result does not depend on the order.

// One plastic mapping (the host's `PlasMap` is generated from this: crates/engine/build.rs).
struct PlasMap {
    u32 ltp;
    u32 ltd;
    u32 window;
    u32 assoc;    // 1: associative
    u32 src_lo;
    u32 src_hi;
    u32 dst_lo;
    u32 dst_hi;
    u32 slot;     // its window's status (index into `Learn::status`)
    u32 pad;
    u64 cap;      // max_synapses
    u64 bits;     // first u32 word of its pair table in `exists`
};

// The learning state on the device (the host's `Learn` is generated from this).
struct Learn {
    u32* hist;            // every neuron of the brain: its firing in the longest window's bursts
    u32* now;             // one bit per neuron of the brain: in the list being recorded
    u32* act;             // one bit per neuron of the brain: its history is not 0
    u32* active;          // neurons of the brain active within the longest window
    u32* n_active;
    u32* status;          // per window (slot), every neuron of the brain: count << 16 | all << 1 | any
    u16* stamps;          // one per synapse of this GPU's part: its target's count when brought up to date (at weight 0 it may be older: a debt on 0 is 0)
    const u32* windows;   // per slot: its window in bursts
    const u32* group_map; // plastic mapping of each group
    const PlasMap* maps;
    u32* exists;          // the associative pair tables
    u64* grown;           // per plastic mapping: grown, refused
    const u64* burst;     // the burst counter (`Net::burst`): the burst whose list is learned from
    const u64* skip;      // a burst whose learning is skipped (a restored state holds it), or ~0
    const u64* toggle;    // which bursts' firing is learned from: from << 2 | before << 1 | after (`Switch`)
    u32 code_base;
    u32 n_total;
    u32 longest;          // history bits of the longest window
    u32 n_maps;
    u32 n_slots;
    u32 sweep_rows;       // rows the sweep brings up to date a burst (all of them in SWEEP_BURSTS bursts)
};

// Mirror of `SWEEP_BURSTS` in crates/engine/src/backend/learn/mod.rs.
#define SWEEP_BURSTS 32768u
#define ST_ANY 1u
#define ST_ALL 2u

// What a synapse of weight w owes: ltd, `owed` times, from 0.
__device__ __forceinline__ u32 after_debt(u32 w, u32 owed, u32 ltd) {
    const u32 debt = min(255u, owed * ltd);
    return w > debt ? w - debt : 0;
}

// Entries of a row a lane of `learn_rows` takes at once.
#define LEARN_ITEMS 4
// Whether `learn_rows` loads a row's first entries while the row before it is learned: in the
// kernel of two blocks an SM (plastic W(1M) rows 47.6 -> 35.0 us), not in that of four (64
// registers: the registers for them spill, rows 33.6 -> 51.2 us).
#define LEARN_AHEAD (!FOUR_BLOCKS)

__device__ __forceinline__ u32 window_mask(u32 w) { return w >= 32 ? 0xFFFFFFFFu : (1u << w) - 1; }

__device__ __forceinline__ bool pair_exists(const Learn& L, const PlasMap& m, u32 s, u32 d) {
    if (!m.assoc) return true;
    const u64 i = (u64)(s - m.src_lo) * (m.dst_hi - m.dst_lo) + (d - m.dst_lo);
    return (L.exists[m.bits + (i >> 5)] >> (i & 31)) & 1;
}

__device__ __forceinline__ bool skipped(const Learn& L) { return *(volatile const u64*)L.skip == *(volatile const u64*)L.burst; }

// Whether burst t's firing is learned from (`Switch::learns`); off, the histories go on, nothing
// is counted, updated nor grown. The word never changes while a kernel runs (the host writes it
// on the stream, the resident kernel parked): read through the read-only cache.
__device__ __forceinline__ bool learns(const Learn& L, u64 t) {
    const u64 w = __ldg(L.toggle);
    return ((t < (w >> 2) ? w >> 1 : w) & 1) != 0;
}

__device__ void learn_mark_impl(const Learn& L, const Side& rd, u32 count_shift, Blk b) {
    if (skipped(L)) return;
    const u32 count = (u32)(*(volatile const u64*)rd.counter >> count_shift);
    if (b.id == 0 && threadIdx.x == 0) *L.n_active = 0;
    for (u32 i = b.id * blockDim.x + threadIdx.x; i < count; i += b.n * blockDim.x) {
        const u32 f = rd.fired[i];
        if (f != DEAD) atomicOr(L.now + (f >> 5), 1u << (f & 31));
    }
}

// Neurons a lane of learn_shift takes at once (their loads issued together).
#define SHIFT_ITEMS 4

// A word of `act` and of the list's bits (`fired`: `now`, cleared here; or `spec`, which the next
// early step writes again) a lane (each block a contiguous range of words, in rounds of a word a
// thread): the neurons with a history or that fired, their loads SHIFT_ITEMS at a time;
// the still active listed in order, one atomic a block's round (sorted runs: the rows of
// neighbouring sources go to neighbouring warps of `learn_rows`).
__device__ void learn_shift_impl(const Learn& L, Blk b, const u32* fired, bool clear) {
    if (skipped(L)) return;
    const u64 t = *(volatile const u64*)L.burst;
    const bool counting = learns(L, t);
    __shared__ u32 warp_sum[32];
    const u32 words = (L.n_total + 31) / 32;
    const u32 per = (words + b.n - 1) / b.n;
    const u32 lo = min(b.id * per, words), hi = min(lo + per, words);
    for (u32 w0 = lo; w0 < hi; w0 += blockDim.x) {
        const u32 w = w0 + threadIdx.x;
        const u32 f = w < hi ? *(volatile const u32*)(fired + w) : 0;
        const u32 a = w < hi ? L.act[w] : 0;
        u32 m = a | f, kept = 0; // the word's neurons to walk; those still active after
        while (__any_sync(0xFFFFFFFFu, m != 0)) {
            u32 n[SHIFT_ITEMS], h[SHIFT_ITEMS], st0[SHIFT_ITEMS];
#pragma unroll
            for (int i = 0; i < SHIFT_ITEMS; i++) {
                n[i] = m ? w * 32 + __ffs(m) - 1 : DEAD;
                m &= m - 1;
            }
            // the history and the first window's status, loaded together
#pragma unroll
            for (int i = 0; i < SHIFT_ITEMS; i++) {
                h[i] = n[i] != DEAD ? L.hist[n[i]] : 0;
                st0[i] = n[i] != DEAD ? L.status[n[i]] : 0;
            }
#pragma unroll
            for (int i = 0; i < SHIFT_ITEMS; i++) {
                h[i] = ((h[i] << 1) | ((f >> (n[i] & 31)) & 1)) & L.longest;
                if (n[i] != DEAD && h[i] != 0) kept |= 1u << (n[i] & 31);
            }
            // every neuron walked was active within the longest window before this burst, or is now
            for (u32 k = 0; k < L.n_slots; k++) {
                const u32 wk = L.windows[k], mask = window_mask(wk);
                u32 st[SHIFT_ITEMS];
#pragma unroll
                for (int i = 0; i < SHIFT_ITEMS; i++) st[i] = k == 0 ? st0[i] : n[i] != DEAD ? L.status[(u64)k * L.n_total + n[i]] : 0;
#pragma unroll
                for (int i = 0; i < SHIFT_ITEMS; i++) {
                    if (n[i] == DEAD) continue;
                    const u32 any = (h[i] & mask) != 0, all = (h[i] & mask) == mask;
                    L.status[(u64)k * L.n_total + n[i]] = ((st[i] & 0xFFFF0000u) + ((any && t >= wk && counting) ? 0x10000u : 0)) | all << 1 | any;
                }
            }
#pragma unroll
            for (int i = 0; i < SHIFT_ITEMS; i++)
                if (n[i] != DEAD) L.hist[n[i]] = h[i];
        }
        if (kept != a) L.act[w] = kept;
        if (f && clear) L.now[w] = 0;
        // this round's still active, in order: one atomic a block's round
        u32 at = block_claim<u32>(__popc(kept), L.n_active, warp_sum);
        for (u32 bits = kept; bits; bits &= bits - 1) L.active[at++] = w * 32 + __ffs(bits) - 1;
    }
}

template <typename CODE>
__device__ __forceinline__ bool decode(const Learn& L, u32 code, u32& group, u32& w) {
    if (code < L.code_base) return false;
    group = (code - L.code_base) >> 8;
    w = (code - L.code_base) & 0xFF;
    return true;
}

// Entries i0 + lane + 32 k (k < ITEMS) of a row ending at hi: codes, targets, stamps (0 past it),
// their loads issued together.
template <typename CODE>
__device__ __forceinline__ void rows_load(const Learn& L, const Net& net, u64 i0, u64 hi, u32 lane, u32* cd, u32* d, u32* sp) {
#pragma unroll
    for (int k = 0; k < LEARN_ITEMS; k++) {
        const u64 i = i0 + lane + 32 * k;
        const bool in = i < hi;
        cd[k] = in ? (u32)((const CODE*)net.codes)[i] : 0;
        d[k] = in ? net.targets[i] : 0;
        sp[k] = in ? L.stamps[i] : 0;
    }
}

// A row of `learn_rows`: its source, the source's history, its bounds (all 0 past the rows), and
// whether it is a row of the sweep.
struct RowHead {
    u32 s, hs, sweep;
    u64 lo, hi;
};
template <typename RP>
__device__ __forceinline__ RowHead row_head(const Learn& L, const Net& net, u32 s, bool in, bool sweep) {
    if (!in) return RowHead{0, 0, 0, 0, 0};
    return RowHead{s, L.hist[s], sweep, row_start<RP>(net, s), row_start<RP>(net, s + 1)};
}

// Entries i0 + lane + 32 k of row r (codes cd, targets d, stamps sp). An active source's row: its
// plastic synapses whose source is active in their window by the whole rule, after what they owe
// (the target's count since the synapse's stamp). A row of the sweep: its synapses whose source is
// silent in their window pay what they owe (the two never touch the same synapse). A synapse at
// weight 0 that the rule can only depress owes nothing that matters (a debt on 0 is 0): its
// target's status is not read, nor its stamp written. With `fire` (the source is in the list being
// learned from, whose propagation is this pass's), every synapse's contribution at its weight
// after learning into its target's sum.
template <typename ACC, typename CODE>
__device__ __forceinline__ void learn_chunk(const Learn& L, const Net& net, const RowHead& r, u64 i0, u32 lane, u64 t, bool fire, const u32* cd, const u32* d, const u32* sp) {
    CODE* codes = (CODE*)net.codes;
    // the synapses that learn now, their targets' status (a random read)
    u32 learn = 0, slot[LEARN_ITEMS], st[LEARN_ITEMS];
#pragma unroll
    for (int k = 0; k < LEARN_ITEMS; k++) {
        u32 group, w;
        slot[k] = 0;
        if (i0 + lane + 32 * k < r.hi && decode<CODE>(L, cd[k], group, w)) {
            const PlasMap& m = L.maps[L.group_map[group]];
            const u32 mask = window_mask(m.window), sm = r.hs & mask;
            const bool active = sm != 0 && t >= m.window;
            if (r.sweep ? !active && w != 0 : active && (w != 0 || sm == mask)) learn |= 1u << k;
            slot[k] = m.slot;
        }
    }
#pragma unroll
    for (int k = 0; k < LEARN_ITEMS; k++) st[k] = (learn >> k) & 1 ? L.status[(u64)slot[k] * L.n_total + d[k] + net.base] : 0;
#pragma unroll
    for (int k = 0; k < LEARN_ITEMS; k++) {
        const u64 i = i0 + lane + 32 * k;
        if (i >= r.hi) continue;
        u32 code = cd[k];
        if ((learn >> k) & 1) {
            u32 group, w;
            decode<CODE>(L, code, group, w);
            const PlasMap& m = L.maps[L.group_map[group]];
            const u32 mask = window_mask(m.window), now = st[k] >> 16;
            // the bursts before this one in which the target alone was active (the sweep's: all)
            const u32 owed = (now - sp[k] - (r.sweep ? 0 : st[k] & ST_ANY)) & 0xFFFF;
            if (now != sp[k]) L.stamps[i] = (u16)now;
            const u32 w0 = after_debt(w, owed, m.ltd);
            u32 nw = r.sweep ? w0 : w0 > m.ltd ? w0 - m.ltd : 0;
            // an associative pair that does not exist grows instead (learn_grow)
            bool keep = false;
            if (!r.sweep && (r.hs & mask) == mask && (st[k] & ST_ALL)) {
                keep = !pair_exists(L, m, r.s, d[k] + net.base);
                nw = min(255u, w0 + m.ltp);
            }
            if (!keep && nw != w) {
                code = L.code_base + (group << 8) + nw;
                codes[i] = (CODE)code;
            }
        }
        if (fire) {
            const int cv = net.table[code];
            if (cv != 0) acc_add<ACC>(net.acc, d[k], cv);
        }
    }
}

// A warp per row, every warps-th: the active sources' rows, then this burst's rows of the sweep
// (every row once in SWEEP_BURSTS bursts, so no count outgrows its u16; every row when learning
// stops after this burst). With `prop` (no growth follows, the propagation is not tiled), once
// every window has passed, the rows of the sources in the list are propagated as they are learned:
// then no row of the sweep touches a synapse of theirs, so their weights are final here. Returns
// whether it did (the same in every thread): the list's own propagation is then left out.
template <typename ACC, typename RP, typename CODE>
__device__ bool learn_rows_impl(const Learn& L, const Net& net, Blk b, bool prop) {
    const u64 t = *(volatile const u64*)net.burst;
    if (skipped(L) || !learns(L, t)) return false;
    for (u32 k = 0; k < L.n_slots && prop; k++) prop = t >= L.windows[k];
    const u64 count = *(volatile const u32*)L.n_active;
    const bool settle = !learns(L, t + 1);
    const u64 r0 = settle ? 0 : min((u64)(t % SWEEP_BURSTS) * L.sweep_rows, (u64)L.n_total);
    const u64 r1 = settle ? L.n_total : min(r0 + L.sweep_rows, (u64)L.n_total);
    const u64 rows = count + (r1 - r0);
    const u32 lane = threadIdx.x & 31;
    const u32 warp = (b.id * blockDim.x + threadIdx.x) >> 5;
    const u32 warps = (b.n * blockDim.x) >> 5;
    // Rows in a pipeline, so that a row costs about one memory round trip (its targets' status),
    // not five: (LEARN_AHEAD) while a row is learned, the next row's first 32 x ITEMS codes,
    // targets and stamps are in flight, and the header (source, history, bounds) of the row after
    // it; else the next row's header. The source of the row past that is loaded a round earlier.
    constexpr u32 HEADS = LEARN_AHEAD ? 2 : 1;
    const auto source = [&](u64 a) { return a < count ? L.active[a] : (u32)(r0 + (a - count)); };
    const auto head = [&](u32 s, u64 a) { return row_head<RP>(L, net, s, a < rows, a >= count); };
    RowHead cur = head(source(warp), warp), nxt{0, 0, 0, 0, 0};
    if (LEARN_AHEAD) nxt = head(source((u64)warp + warps), (u64)warp + warps);
    u32 s_far = source((u64)warp + (u64)HEADS * warps);
    u32 cd[LEARN_ITEMS], d[LEARN_ITEMS], sp[LEARN_ITEMS];
    if (LEARN_AHEAD) rows_load<CODE>(L, net, cur.lo, cur.hi, lane, cd, d, sp);
    for (u64 a = warp; a < rows; a += warps) {
        const RowHead far = head(s_far, a + (u64)HEADS * warps);
        s_far = source(a + (u64)(HEADS + 1) * warps);
        u32 cd_n[LEARN_ITEMS], d_n[LEARN_ITEMS], sp_n[LEARN_ITEMS];
        if (LEARN_AHEAD) rows_load<CODE>(L, net, nxt.lo, nxt.hi, lane, cd_n, d_n, sp_n);
        for (u64 i0 = cur.lo; i0 < cur.hi; i0 += 32 * LEARN_ITEMS) {
            if (!LEARN_AHEAD || i0 != cur.lo) rows_load<CODE>(L, net, i0, cur.hi, lane, cd, d, sp);
            learn_chunk<ACC, CODE>(L, net, cur, i0, lane, t, prop && !cur.sweep && (cur.hs & 1), cd, d, sp);
        }
        if (LEARN_AHEAD) {
            cur = nxt;
            nxt = far;
#pragma unroll
            for (int k = 0; k < LEARN_ITEMS; k++) {
                cd[k] = cd_n[k];
                d[k] = d_n[k];
                sp[k] = sp_n[k];
            }
        } else {
            cur = far;
        }
    }
    return prop;
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
    const u64 t = *(volatile const u64*)net.burst;
    if (b.id != 0 || skipped(L) || !learns(L, t)) return;
    __shared__ u32 warp_sum[32];
    __shared__ u64 grown_s, refused_s;
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
                        // up to date from this burst on (its depression is not the new synapse's)
                        L.stamps[j] = (u16)(L.status[(u64)m.slot * L.n_total + d] >> 16);
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
extern "C" __global__ void __launch_bounds__(256) learn_shift(Learn L) { learn_shift_impl(L, hw_blk(), L.now, true); }
#define LEARN(SUFFIX, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) learn_rows_##SUFFIX(Learn L, Net net) { learn_rows_impl<ACC, RP, CODE>(L, net, hw_blk(), false); } \
    extern "C" __global__ void __launch_bounds__(256) learn_grow_##SUFFIX(Learn L, Net net) { learn_grow_impl<RP, CODE>(L, net, hw_blk()); }
EACH_VARIANT(LEARN)
