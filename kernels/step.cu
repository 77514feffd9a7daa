// step.cu: every neuron's step (`step`; the early step is prestep.cu), the read-back and
// publication of a burst, and `fix` (the injected neurons stepped again after the early step; run
// by the resident kernel) (after common.cuh and inject.cu; see common.cuh).

// A fired slot's row in the list: its first pair `off`, its shift (`start`, where the row starts
// in the stored synapses, less `off`) and, for every chunk of pairs whose first pair lies in the
// row, the slot (the chunk index). Every writer of a fired list with rows goes through here.
__device__ __forceinline__ void list_row(const Net& net, const Side& wr, u32 slot, u64 off, u64 start, u64 len) {
    wr.offs[slot] = off;
    wr.shifts[slot] = start - off;
    for (u64 c = (off + PAIRS_PER_WARP - 1) / PAIRS_PER_WARP; c * PAIRS_PER_WARP < off + len; c++) net.chunk_first[c] = slot;
}

// Read-back ranges a block of `step` keeps in shared memory (more: searched in global memory).
#define STEP_MAX_RB 8

// `lo`/`hi`: the ranges (in shared memory when few, else net.rb_lo / net.rb_hi).
__device__ __forceinline__ bool in_readback(const Net& net, const u32* lo_, const u32* hi_, u32 id) {
    if (net.n_rb == 0xFFFFFFFFu) return true;
    u32 lo = 0, hi = net.n_rb;
    while (lo < hi) {
        u32 mid = (lo + hi) / 2;
        if (hi_[mid] <= id) lo = mid + 1; else hi = mid;
    }
    return lo < net.n_rb && lo_[lo] <= id;
}

// Steps 2-7 of burst t for neuron n on register values (mirror of crates/model/src/model/neuron.rs `step`).
// Returns whether it fired (then at_fire holds the potential at fire).
__device__ __forceinline__ bool step_core(const AreaParams& p, u32 n, u64 t, u64 input, i64& v, u32& rcc, i64& at_fire) {
    if (p.flags & FLAG_POWER) input += (u64)ONE_LSB;
    u32 rc = rcc & 0xFFFFu;
    u32 cfc = rcc >> 16;
    bool fired = false;
    // 2. no charge accumulation
    if ((p.flags & FLAG_MP_ACC) == 0) v = 0;
    if (rc > 0) {
        // 3. refractory
        rc -= 1;
        if (rc == 0 && p.fire_limit > 0 && cfc >= p.fire_limit) cfc = 0;
    } else {
        // 4. integrate
        v = clamp_potential(v + clamp_potential((i64)input));
        // 5. window
        const i64 threshold = threshold_of(p, n - p.first);
        const bool window = v >= threshold && (p.threshold_limit == 0 || v <= p.threshold_limit) &&
                            (p.flags & FLAG_NEVER_FIRE) == 0;
        bool done = false;
        if (window) {
            if (p.fire_limit > 0 && cfc >= p.fire_limit) {
                cfc = 0;
                done = true;
            } else if (p.excitability > 0xFFFFFFFFULL || (u64)pcg_hash(n, t) < p.excitability) {
                // 6. fire
                fired = true;
                at_fire = v;
                v = 0;
                cfc = cfc < 0xFFFFu ? cfc + 1 : 0xFFFFu;
                const u32 snooze = (p.fire_limit > 0 && cfc >= p.fire_limit) ? p.snooze : 0;
                rc = (p.refractory + snooze) & 0xFFFFu;
                done = true;
            }
        }
        if (!done) {
            // 7. no fire
            if (p.fire_limit > 0) cfc = 0;
            if (p.leak_kind == LEAK_LINEAR) {
                if (v > 0) { v = v - p.leak_linear; if (v < 0) v = 0; }
                else { v = v + p.leak_linear; if (v > 0) v = 0; }
            } else {
                v = (v * (i64)p.leak_keep) / 65536;
            }
        }
    }
    rcc = rc | (cfc << 16);
    return fired;
}

// An area with no refractory period, fire limit, gradient or never-fire: its neurons with no
// countdown pending take the short path of `step_simple` (as the CPU's step_simple).
__device__ __forceinline__ bool is_simple(const AreaParams& p) {
    return p.refractory == 0 && p.snooze == 0 && p.fire_limit == 0 && (p.flags & (FLAG_GRADIENT | FLAG_NEVER_FIRE)) == 0;
}

// `step_core` for a neuron of a simple area (`is_simple`).
__device__ __forceinline__ bool step_simple(const AreaParams& p, u32 n, u64 t, u64 input, i64& v, u32& rcc, i64& at_fire) {
    if ((rcc & 0xFFFFu) != 0) return step_core(p, n, t, input, v, rcc, at_fire);
    if (p.flags & FLAG_POWER) input += (u64)ONE_LSB;
    const i64 start = (p.flags & FLAG_MP_ACC) ? v : 0;
    const i64 x = clamp_potential(start + clamp_potential((i64)input));
    if (x >= p.threshold && (p.threshold_limit == 0 || x <= p.threshold_limit) &&
        (p.excitability > 0xFFFFFFFFULL || (u64)pcg_hash(n, t) < p.excitability)) {
        at_fire = x;
        v = 0;
        const u32 cfc = rcc >> 16;
        rcc = (cfc < 0xFFFFu ? cfc + 1 : 0xFFFFu) << 16;
        return true;
    }
    if (p.leak_kind == LEAK_LINEAR) {
        i64 y = x;
        if (y > 0) { y = y - p.leak_linear; if (y < 0) y = 0; }
        else { y = y + p.leak_linear; if (y > 0) y = 0; }
        v = y;
    } else {
        v = (x * (i64)p.leak_keep) / 65536;
    }
    return false;
}

// The area of neuron `n` (global id) from the ends of the areas (`ends`: net.area_end, or a copy
// in shared memory).
__device__ __forceinline__ u32 area_of(const u32* ends, u32 n_areas, u32 n) {
    u32 lo = 0, hi = n_areas - 1;
    while (lo < hi) {
        u32 mid = (lo + hi) / 2;
        if (ends[mid] <= n) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Areas a0 .. a0 + count - 1 (params and ends) into shared memory, by the whole block.
__device__ __forceinline__ void load_areas(const Net& net, u32 a0, u32 count, AreaParams* s_par, u32* s_end) {
    for (u32 w = threadIdx.x; w < count * (sizeof(AreaParams) / 8); w += blockDim.x)
        ((u64*)s_par)[w] = __ldg(((const u64*)(net.areas + a0)) + w);
    if (threadIdx.x < count) s_end[threadIdx.x] = __ldg(net.area_end + a0 + threadIdx.x);
}

// The read-back ranges into shared memory `s_rb` (2 x STEP_MAX_RB) when there are few, by the
// whole block; `lo`/`hi` point at them there, or else at net.rb_lo / net.rb_hi.
__device__ __forceinline__ void load_readback_ranges(const Net& net, u32* s_rb, const u32*& lo, const u32*& hi) {
    const bool shared = net.n_rb <= STEP_MAX_RB;
    if (shared && threadIdx.x < net.n_rb) {
        s_rb[threadIdx.x] = __ldg(net.rb_lo + threadIdx.x);
        s_rb[STEP_MAX_RB + threadIdx.x] = __ldg(net.rb_hi + threadIdx.x);
    }
    lo = shared ? s_rb : net.rb_lo;
    hi = shared ? s_rb + STEP_MAX_RB : net.rb_hi;
}

// Block-wide claim of `mine` (a count, or a packed count << shift | pairs) from `*counter`: an
// inclusive scan over the block and one atomic per block; returns this thread's first position,
// in thread order. Every thread of the block must call it; `warp_sum` is shared scratch of 32
// words (free again on return).
template <typename T>
__device__ __forceinline__ T block_claim(T mine, T* counter, T* warp_sum) {
    const u32 lane = threadIdx.x & 31;
    const u32 wid = threadIdx.x >> 5;
    const u32 nw = blockDim.x >> 5;
    const T incl = warp_scan(mine);
    if (lane == 31) warp_sum[wid] = incl;
    __syncthreads();
    if (wid == 0) {
        const T w = lane < nw ? warp_sum[lane] : 0;
        const T wi = warp_scan(w);
        const T total = __shfl_sync(0xffffffffu, wi, 31);
        T b0 = 0;
        if (lane == 0 && total != 0) b0 = atomicAdd(counter, total);
        b0 = __shfl_sync(0xffffffffu, b0, 0);
        if (lane < nw) warp_sum[lane] = b0 + wi - w;
    }
    __syncthreads();
    const T pos = warp_sum[wid] + incl - mine;
    __syncthreads();
    return pos;
}

#define STEP_ITEMS 4
// Tags of the output words of burst t (never 0: the host zeroes the entries it has read).
__device__ __forceinline__ u32 tag32(u64 t) { return (u32)(t % 0xFFFFFFFFULL) + 1; }
__device__ __forceinline__ u32 tag16(u64 t) { return (u32)(t % 0xFFFFULL) + 1; }

// The output's areas after the header: the read-back of burst t (tagged ids u64[out_cap], then
// tagged potentials u64[out_cap]), one per burst parity with the early step (`prestep` writes burst
// t's while the host may still read burst t-1's); then (early) `fix`'s corrections, laid out alike.
__device__ __forceinline__ u64* readback_area(const Net& net, u64 t, bool by_parity) {
    return (u64*)(net.host_out + sizeof(OutHeader)) + (by_parity ? (t & 1) * 2 * net.out_cap : 0);
}
__device__ __forceinline__ u64* corrections_area(const Net& net) {
    return (u64*)(net.host_out + sizeof(OutHeader)) + 4 * net.out_cap;
}

// A tagged output entry of burst t: `word` (32 bits) and a potential (48 bits), at `slot` of `area`.
// The tags let the host take the words in any order (no system fences: each waits for the PCIe
// writes, microseconds).
__device__ __forceinline__ void put_entry(const Net& net, u64* area, u64 slot, u64 t, u32 word, i64 v) {
    area[slot] = ((u64)tag32(t) << 32) | word;
    area[net.out_cap + slot] = ((u64)tag16(t) << 48) | ((u64)v & 0xFFFFFFFFFFFFULL);
}

// Read-back compaction into mapped host memory, in two halves so that other work can go between
// the claim and its use: `claim_readback` takes the slots of the warp's lanes with `rb` (one
// atomic per warp), `put` writes neuron `id` fired at potential `v` into the lane's slot and
// returns it, or NO_RB (no entry, or the buffer is full). Both warp-uniformly.
struct ReadbackClaim {
    unsigned mask; // the lanes with an entry
    int leader;
    u64 base;      // in the leader lane: the warp's first slot

    __device__ __forceinline__ u32 put(const Net& net, u64* area, u64 t, u32 id, i64 v) {
        if (mask == 0) return NO_RB;
        const u32 lane = threadIdx.x & 31;
        const u64 rslot = __shfl_sync(0xffffffffu, base, leader) + __popc(mask & ((1u << lane) - 1));
        if (!((mask >> lane) & 1) || rslot >= net.out_cap) return NO_RB;
        put_entry(net, area, rslot, t, id, v);
        return (u32)rslot;
    }
};

__device__ __forceinline__ ReadbackClaim claim_readback(const Net& net, bool rb) {
    ReadbackClaim c{__ballot_sync(0xffffffffu, rb), 0, 0};
    if (c.mask == 0) return c;
    c.leader = __ffs(c.mask) - 1;
    if ((threadIdx.x & 31) == (u32)c.leader) c.base = atomicAdd(net.rb_counter, (u64)__popc(c.mask));
    return c;
}

// The end of `step` and `fix`: the last block to finish (ticket) publishes burst t's counters to
// the host, each word tagged (in any order): fired neurons and pairs net of the slots `fix` killed,
// the read-back count and the corrections count (`dead` and `corr` stay 0 without the early step).
// Returns true in the thread that published. One GPU of several: the others read this GPU's fired
// list in the next burst, so the blocks' writes are fenced at system scope.
__device__ __forceinline__ bool publish(const Net& net, const Side& wr, u64 t, u32& s_last, Blk b) {
    __syncthreads();
    if (threadIdx.x == 0) {
        if (net.multi) __threadfence_system(); else __threadfence();
        s_last = atomicAdd(net.ticket, 1u) == b.n - 1;
    }
    __syncthreads();
    if (!s_last || threadIdx.x != 0) return false;
    __threadfence();
    *net.ticket = 0;
    const u64 mask = (1ULL << net.count_shift) - 1;
    const u64 packed = *(volatile u64*)wr.counter;
    const u64 dead = *(volatile u64*)net.dead;
    const u64 rbc = *(volatile u64*)net.rb_counter;
    const u64 corr = *(volatile u64*)net.corr;
    volatile OutHeader* h = (volatile OutHeader*)net.host_out;
    const u64 tg = (u64)tag32(t) << 32;
    h->fired_total = tg | ((packed >> net.count_shift) - (dead >> net.count_shift));
    h->pairs = (packed & mask) - (dead & mask);
    h->rb_count = tg | rbc;
    h->corrections = tg | corr;
    h->burst = t;
    return true;
}

// Areas a block of `step` keeps in shared memory; a block spanning more searches the global table.
#define STEP_MAX_AREAS 4

// step: STEP_ITEMS neurons per thread (coalesced, blockDim apart). Every load of every item is
// issued before any store (the arrays may alias as far as the compiler knows, so a store would
// fence the next item's loads: one memory round trip per item); the block's areas sit in shared
// memory. The last block to finish publishes the burst's counters (no separate kernel).
template <typename ACC, typename RP, int ITEMS>
__device__ void step_impl(const Net& net, const Side& wr, Blk b) {
    __shared__ AreaParams s_par[STEP_MAX_AREAS];
    __shared__ u32 s_end[STEP_MAX_AREAS];
    __shared__ u32 s_a0, s_na;
    __shared__ u64 warp_sum[32];
    __shared__ u32 s_last;
    __shared__ u32 s_rb[2 * STEP_MAX_RB];
    const u32 lane = threadIdx.x & 31;
    const u32 N = net.n;
    const u32 base = b.id * (blockDim.x * ITEMS);
    ACC* __restrict__ accp = (ACC*)net.acc;
    i64* __restrict__ vp = net.v;
    u32* __restrict__ rccp = net.rcc;
    u32* __restrict__ maskp = net.inj_mask;
    u64* __restrict__ injp = net.inj;
    // 1. every item's state, all loads in flight together
    ACC a[ITEMS];
    i64 v[ITEMS];
    u32 r[ITEMS];
    u32 mw[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        if (n < N) {
            a[i] = accp[n];
            v[i] = vp[n];
            r[i] = rccp[n];
            mw[i] = maskp[n >> 5];
        } else {
            a[i] = 0;
            v[i] = 0;
            r[i] = 0;
            mw[i] = 0;
        }
    }
    const u64 t = *net.burst;
    const u32 G = net.base;  // local index n is neuron G + n of the brain
    if (threadIdx.x == 0) {
        const u32 last = min(base + blockDim.x * ITEMS, N) - 1;
        const u32 a0 = area_of(net.area_end, net.n_areas, G + base);
        const u32 a1 = area_of(net.area_end, net.n_areas, G + last);
        s_a0 = a0;
        s_na = (a1 - a0 < STEP_MAX_AREAS) ? a1 - a0 + 1 : 0;
    }
    __syncthreads();
    const u32 a0 = s_a0;
    const u32 na = s_na;
    load_areas(net, a0, na, s_par, s_end);
    // the read-back ranges, when few (loaded now, used after the step: no round trip then)
    const u32 *rb_lo, *rb_hi;
    load_readback_ranges(net, s_rb, rb_lo, rb_hi);
    // injected input (only where the mask says so)
    u64 in[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        in[i] = (mw[i] & (1u << lane)) ? injp[n] : 0;
    }
    __syncthreads();
    // 2. compute
    bool f[ITEMS];
    i64 atf[ITEMS];
    i64 v1[ITEMS];
    u32 r1[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        f[i] = false;
        atf[i] = 0;
        v1[i] = v[i];
        r1[i] = r[i];
    }
    const bool simple = na == 1 && is_simple(s_par[0]);
    if (simple) {
        // the block lies in one simple area
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u32 n = base + i * blockDim.x + threadIdx.x;
            if (n < N) f[i] = step_simple(s_par[0], G + n, t, (u64)(i64)a[i] + in[i], v1[i], r1[i], atf[i]);
        }
    } else {
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        if (n < N) {
            const AreaParams* p;
            if (na) {
                u32 k = 0;
                while (k + 1 < na && s_end[k] <= G + n) k++;
                p = &s_par[k];
            } else {
                p = net.areas + area_of(net.area_end, net.n_areas, G + n);
            }
            const u64 input = (u64)(i64)a[i] + in[i];
            f[i] = step_core(*p, G + n, t, input, v1[i], r1[i], atf[i]);
        }
    }
    }
    // 3. stores
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        if (n < N) {
            if (a[i] != 0 && !net.acc_keep) accp[n] = 0;
            if (mw[i] & (1u << lane)) injp[n] = 0;
            if (v1[i] != v[i]) vp[n] = v1[i];
            if (r1[i] != r[i]) rccp[n] = r1[i];
            // clear this warp's injection word (32 neurons, warp-aligned)
            if (lane == 0 && mw[i] != 0) maskp[n >> 5] = 0;
        }
    }
    u64 pk[ITEMS];
    u64 mine = 0;
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        pk[i] = 0;
        if (f[i]) {
            // one GPU of several: only the count (the rows are this GPU's part; every GPU
            // computes the row offsets of the gathered list in `gather`)
            pk[i] = (1ULL << net.count_shift) | (net.multi ? 0 : (row_start<RP>(net, n + 1) - row_start<RP>(net, n)));
            mine += pk[i];
        }
    }
    // fired-list compaction: block scan of the packed (count, pairs), one atomic per block
    u64 pos = block_claim(mine, wr.counter, warp_sum);
    const u64 mask = (1ULL << net.count_shift) - 1;
    u64* const rb_area = readback_area(net, t, false);
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        if (f[i]) {
            const u32 slot = (u32)(pos >> net.count_shift);
            const u64 off = pos & mask;
            wr.fired[slot] = G + n;
            if (!net.multi) {
                list_row(net, wr, slot, off, row_start<RP>(net, G + n), pk[i] & mask);
            }
            pos += pk[i];
        }
        // readback compaction into mapped host memory (warp-uniform loop: ballots are safe)
        const bool rb = f[i] && in_readback(net, rb_lo, rb_hi, G + n);
        claim_readback(net, rb).put(net, rb_area, t, G + n, atf[i]);
    }
    publish(net, wr, t, s_last, b);
}

// fix (early step): each injected neuron, once, stepped again from the state `prestep` read, with
// its synaptic and injected input; its state replaces the early one; the fired list and the
// read-back are mended (see the top of the file). The injection's ids strictly ascending (header
// bit 61, `fused`): no `inject` ran, each entry is its neuron's whole injection; else `inject`
// summed them into `inj` and the entry that clears the neuron's mask bit steps it. Appends are
// claimed once per block (a block scan) and once per warp for the read-back. The last block to
// finish publishes the burst and clears the counters the next `prestep` claims from (`rd`: the
// side the next burst writes). With `bits` (one GPU's brain that learns), `spec` is mended too: it
// holds the fired list's neurons after it (learning's record reads them: learn.cu).
//
// Its time is the burst's latency on the GPU, and with few entries it is a chain of dependent
// memory round trips, so each wave of loads is issued together: (1) the header, the burst number,
// the entry the header will most likely describe (formats 2 and 0, read before the format is
// known), the areas and the read-back ranges into shared memory; (2) everything about the
// neuron (input, state, early fired bit and slot, row length); then the two claims (fired list
// and read-back) in flight together; then the ticket. Measured with ncu (warm caches) on an H100
// for W(100k)'s ~1000 entries: 8.0 -> 7.5 us. (Writing the entries for the host after the ticket,
// so that its fence would wait for no write to host memory, measured the same.)
#define FIX_MAX_AREAS 32

template <typename ACC, typename RP>
__device__ bool fix_impl(const Net& net, const Side& wr, const Side& rd, const u8* mapped, u64 head, Blk b, bool bits) {
    __shared__ u64 hdr[2];
    __shared__ u64 warp_sum[32];
    __shared__ u32 s_last;
    __shared__ AreaParams s_par[FIX_MAX_AREAS];
    __shared__ u32 s_end[FIX_MAX_AREAS];
    __shared__ u32 s_rb[2 * STEP_MAX_RB];
    // wave 1: header, burst number, the likely entry, areas and read-back ranges
    load_injection_header(net, hdr);
    const u64 t = *(volatile const u64*)net.burst + 1;
    const u64 first = (u64)b.id * blockDim.x + threadIdx.x;
    u32 guess4 = 0;
    u64 guess8 = 0;
    if (mapped) {
        // where the entries lie in host memory: the command brought the header's word (`head`),
        // so the format and the count are known, and no load goes past the entries
        const u64 n = head & INJ_COUNT_MASK;
        const u32 f = (u32)(head >> 62);
        if (f == 2 && first < n) guess4 = __ldcv(((const u32*)mapped) + first);
        if (f == 0 && first < n) guess8 = __ldcv(((const u64*)mapped) + first);
    } else {
        const u8* const entries = net.host_in + 16;
        if (16 + 4 * (first + 1) <= net.in_cap) guess4 = ((const u32*)entries)[first];
        if (16 + 8 * (first + 1) <= net.in_cap) guess8 = ((const u64*)entries)[first];
    }
    const bool areas_shared = net.n_areas <= FIX_MAX_AREAS;
    if (areas_shared) load_areas(net, 0, net.n_areas, s_par, s_end);
    const u32 *rb_lo, *rb_hi;
    load_readback_ranges(net, s_rb, rb_lo, rb_hi);
    __syncthreads();
    const u64 ninj = hdr[0] & INJ_COUNT_MASK;
    const u32 fmt = (u32)(hdr[0] >> 62);
    const bool fused = (hdr[0] >> 61) & 1;
    const u32 G = net.base;
    const u64 mask = (1ULL << net.count_shift) - 1;
    u64* const rb_area = readback_area(net, t, true);
    u64* const c_area = corrections_area(net);
    // block-uniform loop: every thread takes part in the claims
    for (u64 tile = (u64)b.id * blockDim.x; tile < ninj; tile += (u64)b.n * blockDim.x) {
        const u64 i = tile + threadIdx.x;
        bool append = false;
        u32 n = 0;
        i64 atf = 0;
        u64 len = 0, start = 0;
        if (i < ninj) {
            i64 val;
            if (i == first && fmt == 2) {
                n = guess4 - G;
                val = (i64)hdr[1];
            } else if (i == first && fmt == 0) {
                n = (u32)guess8 - G;
                val = (i64)(int)(u32)(guess8 >> 32);
            } else {
                injection_entry(net, mapped, hdr, i, n, val);
            }
            const u32 bit = 1u << (n & 31);
            // wave 2: everything about neuron n
            const i64 v0 = net.v[n];
            const u32 rcc0 = net.rcc[n];
            const ACC a = ((const ACC*)net.acc)[n];
            const u32 spec = net.spec[n >> 5];
            const u64 w = net.where[n];
            const u64 r0 = row_start<RP>(net, G + n);
            const u64 r1 = row_start<RP>(net, G + n + 1);
            bool own = true;
            u64 input = (u64)(i64)a;
            if (fused) {
                input += (u64)val;
            } else if ((atomicAnd(net.inj_mask + (n >> 5), ~bit) & bit) != 0) {
                input += net.inj[n];
                net.inj[n] = 0;
            } else {
                own = false; // another entry of this neuron steps it
            }
            if (own) {
                const AreaParams& p = areas_shared ? s_par[area_of(s_end, net.n_areas, G + n)]
                                                   : net.areas[area_of(net.area_end, net.n_areas, G + n)];
                i64 v = v0;
                u32 rcc = rcc0;
                const bool fired = step_core(p, G + n, t, input, v, rcc, atf);
                net.v_out[n] = v;
                net.rcc_out[n] = rcc;
                // one GPU of several: only the count (as in `step`)
                len = net.multi ? 0 : r1 - r0;
                start = r0;
                if (spec & bit) {
                    const u32 rbs = (u32)(w >> 32);
                    if (!fired) {
                        wr.fired[(u32)w] = DEAD;
                        atomicAdd(net.dead, (1ULL << net.count_shift) | len);
                        if (bits) atomicAnd(net.spec + (n >> 5), ~bit);
                    }
                    if (rbs != NO_RB) {
                        // the potential at fire changed, or the neuron no longer fires: a correction
                        const u64 c = atomicAdd(net.corr, 1ULL);
                        if (c < net.out_cap) put_entry(net, c_area, c, t, rbs | (fired ? 0u : DEAD_RB), atf);
                    }
                } else {
                    append = fired;
                    if (bits && fired) atomicOr(net.spec + (n >> 5), bit);
                }
            }
        }
        // the read-back claim (one atomic per warp) goes out before the block's fired-list claim
        ReadbackClaim rbc = claim_readback(net, append && in_readback(net, rb_lo, rb_hi, G + n));
        u64 pos = block_claim(append ? (1ULL << net.count_shift) | len : 0, wr.counter, warp_sum);
        if (append) {
            const u32 slot = (u32)(pos >> net.count_shift);
            wr.fired[slot] = G + n;
            if (!net.multi) {
                list_row(net, wr, slot, pos & mask, start, len);
            }
        }
        rbc.put(net, rb_area, t, G + n, atf);
    }
    if (publish(net, wr, t, s_last, b)) {
        *net.burst = t;
        *rd.counter = 0;
        *net.rb_counter = 0;
        *net.dead = 0;
        *net.corr = 0;
        return true;
    }
    return false;
}

// 4 blocks of 256 per SM, STEP_ITEMS neurons per thread
#define STEP(NAME, ACC, RP) \
    extern "C" __global__ void __launch_bounds__(256, 4) NAME(Net net, Side wr) { step_impl<ACC, RP, STEP_ITEMS>(net, wr, hw_blk()); }
STEP(step_n32_r32, int, u32)
STEP(step_n32_r64, int, u64)
STEP(step_n64_r32, i64, u32)
STEP(step_n64_r64, i64, u64)
