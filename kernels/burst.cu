// The burst on the GPU: three kernels per burst, captured in CUDA graphs by
// src/backend/cuda/backend.rs, compiled by NVRTC at start-up. On one GPU the same phases run by
// default inside one kernel that stays on the GPU (`resident_impl`, at the end of this file).
//
//   propagate: the spikes of burst t-1 over (spike, synapse) pairs -> integer atomics into the
//              input accumulators (order-independent, exact); on one GPU it runs ahead, as soon
//              as burst t-1 is done, in its own graph;
//   inject:    the burst's sensory injection (copied up, or read from mapped memory) -> `inj`;
//   step:      every neuron (4 per thread), steps 2-7 of burst-model.md (mirror of src/model/neuron.rs),
//              fired-list compaction (ids + row offsets, one packed 64-bit atomic per block),
//              readback compaction straight into mapped pinned host memory; the last block to
//              finish writes the burst's counters, then its number, into the mapped header.
//
// The early step (one GPU, `net.early`): a neuron's step depends on the sensory input only when
// it is injected, so `prestep` steps every neuron as if nothing were injected right after the
// propagation, before the host has the injection (off the latency path), from one state buffer
// into the other; then the burst runs `inject` and `fix`, which steps the injected neurons again
// from the old state with their input and mends the fired list (a neuron that no longer fires
// leaves a DEAD slot, one that now fires is appended) and the read-back (corrections the host
// applies). The fired sets are the same as the one-pass step's, bit for bit.
//
// Everything here must stay bit-identical to the CPU reference: integer arithmetic only.

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define POTENTIAL_MAX ((i64)((1LL << 47) - 1))
#define ONE_LSB ((i64)4096)
#define FLAG_MP_ACC 1u
#define FLAG_POWER 2u
#define FLAG_NEVER_FIRE 4u
#define FLAG_GRADIENT 8u
#define LEAK_LINEAR 1u
#define PAIRS_PER_WARP 256

// Mirror of src/model/mod.rs `AreaParams` (#[repr(C)], 104 bytes).
struct AreaParams {
    i64 threshold;
    i64 threshold_inc[3];
    i64 threshold_limit;
    i64 leak_linear;
    u64 excitability;
    u32 first;
    u32 count;
    u32 dims[3];
    u32 neurons_per_voxel;
    u32 leak_keep;
    u32 leak_kind;
    u32 refractory;
    u32 fire_limit;
    u32 snooze;
    u32 flags;
};

// Mirror of src/backend/cuda/backend.rs `Net` (#[repr(C)]): everything a burst touches.
struct Net {
    i64* v;              // potentials
    u32* rcc;            // refractory countdown (low 16 bits) | consecutive-fire count (high 16)
    void* acc;           // synaptic input: i32 (narrow) or i64 (wide) per neuron
    u64* inj;            // injected input per neuron (wrapping i64 sums)
    u32* inj_mask;       // one bit per neuron: injected this burst
    const void* row_ptr; // u32 or u64, N + 1
    const u32* targets;
    const void* codes;   // u16 or u32
    const int* table;    // contributions in LSBs
    const AreaParams* areas;
    const u32* area_end; // exclusive end id of each area, ascending
    const u32* rb_lo;    // readback ranges, sorted and disjoint
    const u32* rb_hi;
    u64* burst;          // number of the burst being run
    u64* rb_counter;
    u32* ticket;         // blocks of `step` done
    u32* chunk_first;    // per chunk of PAIRS_PER_WARP pairs: the fired slot whose row holds its first pair
    const u8* host_in;   // device copy of the pinned injection: u64 header (count | fmt << 62), value, entries
    const u8* host_map;  // the pinned injection itself, mapped (small injections are read here: no copy)
    u8* host_out;        // mapped pinned: OutHeader, then per burst parity (early; else parity 0 only) tagged
                         // ids u64[out_cap] and tagged potentials u64[out_cap], then (early) corrections
                         // u64[out_cap] (tagged read-back slot | DEAD_RB) and u64[out_cap] (tagged potentials)
    i64* v_out;          // early: the state buffer `prestep` and `fix` write (else = v)
    u32* rcc_out;
    u32* spec;           // early: one bit per neuron, fired in `prestep`
    u64* where;          // early: of a neuron `prestep` fired: its fired slot | read-back slot << 32
    u64* dead;           // early: packed count << shift | pairs of the slots `fix` killed
    u64* corr;           // early: read-back corrections written by `fix`
    void* acc_other;     // early: the other side's accumulator, which `prestep` clears for the next propagation
    u64 out_cap;
    u64 in_cap;          // bytes of the device injection buffer (host_in)
    u32 n;
    u32 n_areas;
    u32 n_rb;            // 0xFFFFFFFF = every neuron is read back
    u32 count_shift;     // packed fired counter: count << shift | pair total
    u32 base;            // global id of this GPU's first neuron (0 on one GPU)
    u32 multi;           // 1: one GPU of several (the fired list is gathered from every GPU)
    u32 acc_keep;        // 1: step leaves `acc` as it is (cleared before the next propagation into it)
    u32 early;           // 1: the early step (prestep ahead, then inject + fix per burst)
};

// Injection header word 0: count | fused << 61 | fmt << 62.
#define INJ_COUNT_MASK ((1ULL << 61) - 1)
#define DEAD 0xFFFFFFFFu
#define NO_RB 0xFFFFFFFFu
#define DEAD_RB 0x80000000u

// Mirror of `Side`: one of the two fired-list buffers (read in burst t, written in burst t-1).
struct Side {
    u32* fired;
    u64* offs;    // first pair index of each fired neuron's row
    u64* counter; // count << shift | pairs
};

struct OutHeader {
    u64 burst;
    u64 fired_total;
    u64 rb_count;
    u64 pairs;
    u64 corrections; // early: tagged count of read-back corrections
    u64 pad_[3];
};

__device__ __forceinline__ i64 clamp_potential(i64 v) {
    return v > POTENTIAL_MAX ? POTENTIAL_MAX : (v < -POTENTIAL_MAX ? -POTENTIAL_MAX : v);
}

__device__ __forceinline__ i64 sat_add(i64 a, i64 b) {
    i64 r = (i64)((u64)a + (u64)b);
    if (((a ^ r) & (b ^ r)) < 0) return a < 0 ? (i64)0x8000000000000000ULL : 0x7FFFFFFFFFFFFFFFLL;
    return r;
}

// a * x, saturating (Rust's i64::saturating_mul with x >= 0).
__device__ __forceinline__ i64 sat_mul_u32(i64 a, u32 x) {
    if (x == 0 || a == 0) return 0;
    const i64 MAXV = 0x7FFFFFFFFFFFFFFFLL;
    const i64 MINV = (i64)0x8000000000000000ULL;
    if (a > 0 && a > MAXV / (i64)x) return MAXV;
    if (a < 0 && a < MINV / (i64)x) return MINV;
    return a * (i64)x;
}

__device__ __forceinline__ u32 pcg_hash(u32 n, u64 t) {
    u32 x = n * 2654435761u + (u32)t * 1597334677u;
    u32 state = x * 747796405u + 2891336453u;
    u32 word = ((state >> ((state >> 28) + 4)) ^ state) * 277803737u;
    return (word >> 22) ^ word;
}

__device__ __forceinline__ i64 threshold_of(const AreaParams& p, u32 local) {
    if ((p.flags & FLAG_GRADIENT) == 0) return p.threshold;
    u32 voxel = local / p.neurons_per_voxel;
    u32 z = voxel % p.dims[2];
    u32 y = (voxel / p.dims[2]) % p.dims[1];
    u32 x = voxel / (p.dims[2] * p.dims[1]);
    i64 t = sat_add(p.threshold, sat_mul_u32(p.threshold_inc[0], x));
    t = sat_add(t, sat_mul_u32(p.threshold_inc[1], y));
    t = sat_add(t, sat_mul_u32(p.threshold_inc[2], z));
    return t;
}

// The block a phase runs as: the hardware's (a kernel of its own) or a virtual one (the resident
// kernel runs each phase's grid of blocks over its own, fewer blocks).
struct Blk {
    u32 id;
    u32 n;
};
__device__ __forceinline__ Blk hw_blk() { return Blk{blockIdx.x, gridDim.x}; }

template <typename RP>
__device__ __forceinline__ u64 row_start(const Net& net, u32 s) {
    return (u64)((const RP*)net.row_ptr)[s];
}

// Last index s in [lo, hi] with offs[s] <= k (offs ascending, offs[lo] <= k).
__device__ __forceinline__ u32 find_row(const u64* offs, u32 lo, u32 hi, u64 k) {
    while (lo < hi) {
        u32 mid = lo + (hi - lo + 1) / 2;
        if (offs[mid] <= k) lo = mid; else hi = mid - 1;
    }
    return lo;
}

template <typename ACC> __device__ __forceinline__ void acc_add(void* acc, u32 i, int c);
template <> __device__ __forceinline__ void acc_add<int>(void* acc, u32 i, int c) {
    atomicAdd(((int*)acc) + i, c);
}
template <> __device__ __forceinline__ void acc_add<i64>(void* acc, u32 i, int c) {
    atomicAdd(((u64*)acc) + i, (u64)(i64)c);
}

// propagate: grid-stride over chunks of PAIRS_PER_WARP (spike, synapse) pairs per warp. Pair k
// belongs to the fired row s with offs[s] <= k < offs[s + 1]. It needs only the last burst's fired
// list, so on one GPU it runs ahead, right after the last burst's `step` (before the host has the
// next injection): it is off the burst's latency path.
template <typename ACC, typename RP, typename CODE>
__device__ void propagate_impl(const Net& net, const Side& rd, Blk b) {
    const u64 packed = *rd.counter;
    const u32 count = (u32)(packed >> net.count_shift);
    const u64 pairs = packed & ((1ULL << net.count_shift) - 1);
    const u32 lane = threadIdx.x & 31;
    const u64 warp = ((u64)b.id * blockDim.x + threadIdx.x) >> 5;
    const u64 warps = ((u64)b.n * blockDim.x) >> 5;
    const CODE* __restrict__ codes = (const CODE*)net.codes;
    const u32* __restrict__ targets = net.targets;
    // (not __restrict__: the resident kernel wrote them earlier in the same launch, and the
    // read-only path's loads would not see that)
    const u64* offs = rd.offs;
    const u32* fired = rd.fired;
    const int* __restrict__ table = net.table;
    constexpr int ITEMS = PAIRS_PER_WARP / 32;
    for (u64 c = warp; c * PAIRS_PER_WARP < pairs; c += warps) {
        const u64 k0 = c * PAIRS_PER_WARP;
        const u64 k1 = min(k0 + PAIRS_PER_WARP, pairs);
        const u32 lo = net.chunk_first[c];
        const u32 hi = (k1 < pairs) ? net.chunk_first[c + 1] : count - 1;
        u32 s[ITEMS];
        u32 src[ITEMS];
        u64 j[ITEMS];
        u32 tg[ITEMS];
        u32 cd[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u64 k = k0 + lane + 32 * i;
            s[i] = (k < k1) ? find_row(offs, lo, hi, k) : lo;
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) src[i] = fired[s[i]];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u64 k = k0 + lane + 32 * i;
            // a DEAD slot (early step: the neuron did not fire after all) propagates nothing
            j[i] = src[i] != DEAD ? row_start<RP>(net, src[i]) + (k - offs[s[i]]) : 0;
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const bool ok = k0 + lane + 32 * i < k1 && src[i] != DEAD;
            tg[i] = ok ? targets[j[i]] : 0;
            cd[i] = ok ? (u32)codes[j[i]] : 0;
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const bool ok = k0 + lane + 32 * i < k1 && src[i] != DEAD;
            const int cv = ok ? table[cd[i]] : 0;
            if (cv != 0) acc_add<ACC>(net.acc, tg[i], cv);
        }
    }
}

// load_header: the injection's header, from the mapped pinned buffer into the device copy. Runs
// first when the host copied only the ids, from the caller's page-locked column (`prepare_input`
// in backend.rs): a second copy for the 16 bytes measured ~7 us more per burst on an H100, one
// read of host memory by one block ~1-2 us.
extern "C" __global__ void load_header(Net net) {
    if (threadIdx.x < 2) ((u64*)net.host_in)[threadIdx.x] = __ldcv(((const u64*)net.host_map) + threadIdx.x);
}

// inject: the burst's sensory injection into `inj` (wrapping sums) and the injected-neuron mask,
// and the burst's counters reset (it runs right before `step`). `mapped` = 0: header and entries
// were copied to net.host_in; else the grid (`mapped` blocks) reads them straight from the mapped
// pinned buffer (no copy call).
// The injection's header, read by thread 0 and 1 into `hdr` (shared; the caller syncs).
// `mapped` 2 (the resident kernel, small input): the header is in the device copy, the entries
// in the mapped buffer (many blocks reading the same host words are served one at a time).
__device__ __forceinline__ void load_injection_header(const Net& net, u32 mapped, u64* hdr) {
    if (threadIdx.x < 2)
        hdr[threadIdx.x] = mapped == 1 ? __ldcv(((const u64*)net.host_map) + threadIdx.x) : __ldcv(((const u64*)net.host_in) + threadIdx.x);
}

// Entry i of the injection: this GPU's local neuron index and the value.
__device__ __forceinline__ void injection_entry(const Net& net, u32 mapped, const u64* hdr, u64 i, u32& id, i64& val) {
    const u32 fmt = (u32)(hdr[0] >> 62);
    const u8* entries = (mapped ? net.host_map : net.host_in) + 16;
    if (fmt == 1) {
        const u64* e = (const u64*)(entries + i * 16);
        id = (u32)(mapped ? __ldcv(e) : e[0]);
        val = (i64)(mapped ? __ldcv(e + 1) : e[1]);
    } else if (fmt == 2) {
        const u32* e = ((const u32*)entries) + i;
        id = mapped ? __ldcv(e) : *e;
        val = (i64)hdr[1];
    } else {
        const u64* p = (const u64*)(entries + i * 8);
        const u64 e = mapped ? __ldcv(p) : *p;
        id = (u32)e;
        val = (i64)(int)(u32)(e >> 32);
    }
    id -= net.base;
}

__device__ void inject_impl(const Net& net, const Side& wr, u32 mapped, Blk b) {
    __shared__ u64 hdr[2];
    load_injection_header(net, mapped, hdr);
    if (b.id == 0 && threadIdx.x == 0 && !net.early) {
        *wr.counter = 0;
        *net.rb_counter = 0;
        *net.burst += 1;
    }
    __syncthreads();
    const u64 ninj = hdr[0] & INJ_COUNT_MASK;
    for (u64 i = (u64)b.id * blockDim.x + threadIdx.x; i < ninj; i += (u64)b.n * blockDim.x) {
        u32 id;
        i64 val;
        injection_entry(net, mapped, hdr, i, id, val);
        atomicAdd(net.inj + id, (u64)val);
        atomicOr(net.inj_mask + (id >> 5), 1u << (id & 31));
    }
}

// Record, for every chunk of pairs whose first pair lies in this row, the row's fired slot.
__device__ __forceinline__ void mark_chunks(const Net& net, u32 slot, u64 off, u64 len) {
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

// Steps 2-7 of burst t for neuron n on register values (mirror of src/model/neuron.rs `step`).
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

// Block-wide claim of `mine` (a packed count << shift | pairs) from `*counter`: an inclusive scan
// over the block and one atomic per block; returns this thread's first position. Every thread of
// the block must call it; `warp_sum` is shared scratch of 32 words (free again on return).
__device__ __forceinline__ u64 block_claim(u64 mine, u64* counter, u64* warp_sum) {
    const u32 lane = threadIdx.x & 31;
    const u32 wid = threadIdx.x >> 5;
    const u32 nw = blockDim.x >> 5;
    u64 incl = mine;
    for (int d = 1; d < 32; d <<= 1) {
        const u64 o = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += o;
    }
    if (lane == 31) warp_sum[wid] = incl;
    __syncthreads();
    if (wid == 0) {
        const u64 w = lane < nw ? warp_sum[lane] : 0;
        u64 wi = w;
        for (int d = 1; d < 32; d <<= 1) {
            const u64 o = __shfl_up_sync(0xffffffffu, wi, d);
            if (lane >= d) wi += o;
        }
        const u64 total = __shfl_sync(0xffffffffu, wi, 31);
        u64 b0 = 0;
        if (lane == 0 && total != 0) b0 = atomicAdd(counter, total);
        b0 = __shfl_sync(0xffffffffu, b0, 0);
        if (lane < nw) warp_sum[lane] = b0 + wi - w;
    }
    __syncthreads();
    const u64 pos = warp_sum[wid] + incl - mine;
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
template <typename ACC, typename RP, int ITEMS, bool EARLY>
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
            mw[i] = EARLY ? 0 : maskp[n >> 5];
        } else {
            a[i] = 0;
            v[i] = 0;
            r[i] = 0;
            mw[i] = 0;
        }
    }
    // the early step runs before `fix` numbers the burst
    const u64 t = EARLY ? *net.burst + 1 : *net.burst;
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
        in[i] = (!EARLY && (mw[i] & (1u << lane))) ? injp[n] : 0;
    }
    __syncthreads();
    // 2. compute
    bool f[ITEMS];
    i64 atf[ITEMS];
    i64 v1[ITEMS];
    u32 r1[ITEMS];
    const bool simple = na == 1 && s_par[0].refractory == 0 && s_par[0].snooze == 0 && s_par[0].fire_limit == 0 &&
                        (s_par[0].flags & (FLAG_GRADIENT | FLAG_NEVER_FIRE)) == 0;
    if (simple) {
        // the block lies in one simple area (no refractory period, fire limit, gradient or never-fire):
        // neurons with no countdown pending take the short path (as the CPU's step_simple)
        const AreaParams& p = s_par[0];
        const i64 thr = p.threshold;
        const i64 lim = p.threshold_limit;
        const u64 exc = p.excitability;
        const u32 flags = p.flags;
        const bool linear = p.leak_kind == LEAK_LINEAR;
        const i64 ll = p.leak_linear;
        const i64 keep = (i64)p.leak_keep;
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u32 n = base + i * blockDim.x + threadIdx.x;
            f[i] = false;
            atf[i] = 0;
            v1[i] = v[i];
            r1[i] = r[i];
            if (n >= N) continue;
            u64 input = (u64)(i64)a[i] + in[i];
            if ((r[i] & 0xFFFFu) != 0) {
                f[i] = step_core(p, G + n, t, input, v1[i], r1[i], atf[i]);
                continue;
            }
            if (flags & FLAG_POWER) input += (u64)ONE_LSB;
            const i64 start = (flags & FLAG_MP_ACC) ? v[i] : 0;
            const i64 x = clamp_potential(start + clamp_potential((i64)input));
            if (x >= thr && (lim == 0 || x <= lim) && (exc > 0xFFFFFFFFULL || (u64)pcg_hash(G + n, t) < exc)) {
                f[i] = true;
                atf[i] = x;
                v1[i] = 0;
                const u32 cfc = r[i] >> 16;
                r1[i] = (cfc < 0xFFFFu ? cfc + 1 : 0xFFFFu) << 16;
            } else if (linear) {
                i64 y = x;
                if (y > 0) { y = y - ll; if (y < 0) y = 0; }
                else { y = y + ll; if (y > 0) y = 0; }
                v1[i] = y;
            } else {
                v1[i] = (x * keep) / 65536;
            }
        }
    } else {
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        f[i] = false;
        atf[i] = 0;
        v1[i] = v[i];
        r1[i] = r[i];
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
            if (EARLY) {
                // into the other state buffer: `fix` steps the injected neurons again from this one
                net.v_out[n] = v1[i];
                net.rcc_out[n] = r1[i];
                // the last burst's accumulator: `fix` of that burst is done with it
                ((ACC*)net.acc_other)[n] = 0;
            } else {
                if (mw[i] & (1u << lane)) injp[n] = 0;
                if (v1[i] != v[i]) vp[n] = v1[i];
                if (r1[i] != r[i]) rccp[n] = r1[i];
                // clear this warp's injection word (32 neurons, warp-aligned)
                if (lane == 0 && mw[i] != 0) maskp[n >> 5] = 0;
            }
        }
        if (EARLY) {
            // which neurons fired, for `fix` (32 neurons, warp-aligned; warp-uniform loop)
            const unsigned fb = __ballot_sync(0xffffffffu, f[i]);
            if (lane == 0 && n < N) net.spec[n >> 5] = fb;
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
    u64* const rb_area = readback_area(net, t, EARLY);
#pragma unroll
    for (int i = 0; i < ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        u32 slot = 0;
        if (f[i]) {
            slot = (u32)(pos >> net.count_shift);
            const u64 off = pos & mask;
            wr.fired[slot] = G + n;
            if (!net.multi) {
                wr.offs[slot] = off;
                mark_chunks(net, slot, off, pk[i] & mask);
            }
            pos += pk[i];
        }
        // readback compaction into mapped host memory (warp-uniform loop: ballots are safe)
        const bool rb = f[i] && in_readback(net, rb_lo, rb_hi, G + n);
        const u32 rbs = claim_readback(net, rb).put(net, rb_area, t, G + n, atf[i]);
        if (EARLY && f[i]) net.where[n] = (u64)slot | ((u64)rbs << 32);
    }
    // the early step publishes nothing: `fix` does, once it has mended the burst
    if (EARLY) return;
    publish(net, wr, t, s_last, b);
}

// fix (early step): each injected neuron, once, stepped again from the state `prestep` read, with
// its synaptic and injected input; its state replaces the early one; the fired list and the
// read-back are mended (see the top of the file). The injection's ids strictly ascending (header
// bit 61, `fused`): no `inject` ran, each entry is its neuron's whole injection; else `inject`
// summed them into `inj` and the entry that clears the neuron's mask bit steps it. Appends are
// claimed once per block (a block scan) and once per warp for the read-back. The last block to
// finish publishes the burst and clears the counters the next `prestep` claims from (`rd`: the
// side the next burst writes).
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
__device__ void fix_impl(const Net& net, const Side& wr, const Side& rd, u32 mapped, Blk b) {
    __shared__ u64 hdr[2];
    __shared__ u64 warp_sum[32];
    __shared__ u32 s_last;
    __shared__ AreaParams s_par[FIX_MAX_AREAS];
    __shared__ u32 s_end[FIX_MAX_AREAS];
    __shared__ u32 s_rb[2 * STEP_MAX_RB];
    // wave 1: header, burst number, the likely entry, areas and read-back ranges
    load_injection_header(net, mapped, hdr);
    const u64 t = *(volatile const u64*)net.burst + 1;
    const u64 first = (u64)b.id * blockDim.x + threadIdx.x;
    const u8* const entries = (mapped ? net.host_map : net.host_in) + 16;
    u32 guess4 = 0;
    u64 guess8 = 0;
    if (!mapped && 16 + 4 * (first + 1) <= net.in_cap) guess4 = ((const u32*)entries)[first];
    if (!mapped && 16 + 8 * (first + 1) <= net.in_cap) guess8 = ((const u64*)entries)[first];
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
        u64 len = 0;
        if (i < ninj) {
            i64 val;
            if (i == first && !mapped && fmt == 2) {
                n = guess4 - G;
                val = (i64)hdr[1];
            } else if (i == first && !mapped && fmt == 0) {
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
                len = r1 - r0;
                if (spec & bit) {
                    const u32 rbs = (u32)(w >> 32);
                    if (!fired) {
                        wr.fired[(u32)w] = DEAD;
                        atomicAdd(net.dead, (1ULL << net.count_shift) | len);
                    }
                    if (rbs != NO_RB) {
                        // the potential at fire changed, or the neuron no longer fires: a correction
                        const u64 c = atomicAdd(net.corr, 1ULL);
                        if (c < net.out_cap) put_entry(net, c_area, c, t, rbs | (fired ? 0u : DEAD_RB), atf);
                    }
                } else {
                    append = fired;
                }
            }
        }
        // the read-back claim (one atomic per warp) goes out before the block's fired-list claim
        ReadbackClaim rbc = claim_readback(net, append && in_readback(net, rb_lo, rb_hi, G + n));
        u64 pos = block_claim(append ? (1ULL << net.count_shift) | len : 0, wr.counter, warp_sum);
        if (append) {
            const u32 slot = (u32)(pos >> net.count_shift);
            wr.fired[slot] = G + n;
            wr.offs[slot] = pos & mask;
            mark_chunks(net, slot, pos & mask, len);
        }
        rbc.put(net, rb_area, t, G + n, atf);
    }
    if (publish(net, wr, t, s_last, b)) {
        *net.burst = t;
        *rd.counter = 0;
        *net.rb_counter = 0;
        *net.dead = 0;
        *net.corr = 0;
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
// loads), into rd with the row offsets of this GPU's part and the chunk index, as `step` builds
// them on one GPU (block scan, one atomic per block of 256 ids; rd.counter zeroed before).
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
            pk = (1ULL << net.count_shift) | (row_start<RP>(net, s + 1) - row_start<RP>(net, s));
        }
        const u64 pos = block_claim(pk, rd.counter, warp_sum);
        if (i < total) {
            const u32 slot = (u32)(pos >> net.count_shift);
            const u64 off = pos & mask;
            rd.fired[slot] = s;
            rd.offs[slot] = off;
            mark_chunks(net, slot, off, pk & mask);
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
    wr.offs[slot] = pos & ((1ULL << net.count_shift) - 1);
    mark_chunks(net, slot, pos & ((1ULL << net.count_shift) - 1), len);
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

// ---------------------------------------------------------------------------------------------
// The resident kernel (one GPU, the early step; NEUROBURST_CUDA_RESIDENT): one cooperative launch
// that stays on the GPU and runs every burst's phases itself, each over a grid-wide barrier, so
// that a burst costs the host no API call: the host writes the injection's header (its pinned
// buffer) and a command (`Ctl`, mapped), block 0 sees the command, the grid copies the entries
// from host memory (the pinned buffer, or the caller's page-locked column) into the device
// buffer, then runs inject (a neuron twice), fix (publishes the burst as before), and the next
// burst's propagation and early step. The phases are the kernels above, each over its own grid of
// blocks (`Blk`), run by the resident blocks in turn.

// What the host writes (mapped pinned memory), the command last.
struct Ctl {
    u64 go;    // the command's number (one more each time) | RES_QUIT
    u64 src;   // device address of the entries (16-byte aligned)
    u64 bytes; // header + entries | RES_DIRECT
    u64 at;    // written by the kernel (block 0): command number << 8 | phase, for diagnostics
    u64 pad_[4];
};
#define RES_QUIT (1ULL << 63)
// The entries are read where they lie (the pinned buffer) by `inject` and `fix`: no copy, no
// barrier (small input).
#define RES_DIRECT (1ULL << 62)

// The resident kernel's words in device memory (zeroed before each launch).
struct ResDev {
    u64 bar;   // grid barrier: arrivals so far
    u64 go;    // the command, from block 0 to the others
    u64 src;
    u64 bytes;
};

// Mirror of `ResParams` in backend.rs.
struct ResParams {
    Net net[2];   // the bursts reading side 0 and side 1 (`net_for`)
    Side side[2];
    const Ctl* ctl;
    ResDev* dev;
    u64 last;     // the command number before the first one to run
    u32 cur;      // the side the first burst reads
    u32 inj_blocks;
    u32 prop_blocks;
    u32 step_blocks;
};

__device__ __forceinline__ u64 ld_acquire_sys(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_acquire_gpu(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_relaxed_sys(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release_gpu(u64* p, u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Every block of the grid waits here for all the others; what each wrote before is then seen by
// all (the arrivals only grow: `arrived` counts them in every block alike).
__device__ __forceinline__ void grid_sync(ResDev* dev, u64& arrived) {
    __syncthreads();
    arrived += gridDim.x;
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&dev->bar, 1ULL);
        while (ld_acquire_gpu(&dev->bar) < arrived) {}
        __threadfence();
    }
    __syncthreads();
}

// The blocks 0 .. n - 1 of a phase, over the resident blocks.
template <typename F>
__device__ __forceinline__ void each_blk(u32 n, F f) {
    for (u32 v = blockIdx.x; v < n; v += gridDim.x) {
        __syncthreads();
        f(Blk{v, n});
    }
}

template <typename ACC, typename RP, typename CODE>
__device__ void resident_impl(const ResParams& p) {
    __shared__ u64 s_cmd[3];
    u64 arrived = 0;
    // the last command seen: block 0 reads the host's word (the last number written before the
    // launch), the others the device word (zeroed before the launch; numbers are never 0)
    u64 last = blockIdx.x == 0 ? p.last : 0;
    u32 r = p.cur;
    for (;;) {
        // 1. the next command: block 0 polls the host's word, the others a word in device memory
        if (blockIdx.x == 0) {
            if (threadIdx.x == 0) {
                u64 g;
                while ((g = ld_acquire_sys(&p.ctl->go)) == last) {}
                s_cmd[0] = g;
            }
            __syncthreads();
            // one round trip: the command's words, and the first 8 KB (2 x 16 bytes a thread) of the pinned
            // buffer (the header, and the entries of a small injection: W(100k)'s ~4 KB) into the
            // device copy (both sides' nets share the buffers)
            if ((s_cmd[0] & RES_QUIT) == 0) {
                uint4 v[2];
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    const u32 i = threadIdx.x + k * blockDim.x;
                    if (16ull * (i + 1) <= p.net[0].in_cap) v[k] = __ldcv(((const uint4*)p.net[0].host_map) + i);
                }
#pragma unroll
                for (int k = 0; k < 2; k++) {
                    const u32 i = threadIdx.x + k * blockDim.x;
                    if (16ull * (i + 1) <= p.net[0].in_cap) ((uint4*)p.net[0].host_in)[i] = v[k];
                }
            }
            if (threadIdx.x == 0) {
                s_cmd[1] = ld_relaxed_sys(&p.ctl->src);
                s_cmd[2] = ld_relaxed_sys(&p.ctl->bytes);
                *(volatile u64*)&p.dev->src = s_cmd[1];
                *(volatile u64*)&p.dev->bytes = s_cmd[2];
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence();
                st_release_gpu(&p.dev->go, s_cmd[0]);
            }
        } else if (threadIdx.x == 0) {
            u64 g;
            while ((g = ld_acquire_gpu(&p.dev->go)) == last) __nanosleep(32);
            s_cmd[0] = g;
            s_cmd[1] = *(volatile u64*)&p.dev->src;
            s_cmd[2] = *(volatile u64*)&p.dev->bytes;
        }
        __syncthreads();
        const u64 g = s_cmd[0];
        const u64 src = s_cmd[1];
        const bool direct = (s_cmd[2] & RES_DIRECT) != 0;
        const u64 bytes = s_cmd[2] & ~RES_DIRECT;
        __syncthreads();
        last = g;
        if (g & RES_QUIT) return;
        // where block 0 is (a posted write to host memory: no wait)
        u64* const at = (u64*)&p.ctl->at;
        const u64 num = (g & ~RES_QUIT) << 8;
        if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64*)at = num | 1;
        const Net& net = p.net[r];
        const Side& wr = p.side[1 - r];
        const Side& rd = p.side[r];
        // 2. the entries into the device buffer (block 0 put the header there, and all of a
        // small injection), from `src`, 16 bytes a thread (then the last 4-byte words); input up
        // to RESIDENT_DIRECT is read where it lies
        const bool whole = direct && bytes <= 32ull * blockDim.x && bytes <= net.in_cap;
        const u32 mapped = (direct && !whole) ? 2 : 0;
        if (!direct) {
            u8* dst = (u8*)net.host_in;
            const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
            const u64 stride = (u64)gridDim.x * blockDim.x;
            const u64 body = bytes - 16;
            const uint4* s16 = (const uint4*)src;
            uint4* d16 = (uint4*)(dst + 16);
            for (u64 i = tid; i < body / 16; i += stride) d16[i] = __ldcv(s16 + i);
            for (u64 w = (body / 16) * 4 + tid; w < body / 4; w += stride) ((u32*)(dst + 16))[w] = __ldcv(((const u32*)src) + w);
            grid_sync(p.dev, arrived);
        }
        if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64*)at = num | 2;
        // 3. inject (a neuron twice: sums), then fix, which publishes the burst to the host
        const bool fused = ((*(volatile const u64*)net.host_in) >> 61) & 1;
        if (!fused) {
            each_blk(p.inj_blocks, [&](Blk b) { inject_impl(net, wr, mapped, b); });
            grid_sync(p.dev, arrived);
        }
        if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64*)at = num | 3;
        each_blk(p.inj_blocks, [&](Blk b) { fix_impl<ACC, RP>(net, wr, rd, mapped, b); });
        grid_sync(p.dev, arrived);
        if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64*)at = num | 4;
        // 4. ahead of the next burst (it reads side 1 - r): the propagation of the list just
        // written, then the early step
        const Net& next = p.net[1 - r];
        each_blk(p.prop_blocks, [&](Blk b) { propagate_impl<ACC, RP, CODE>(next, p.side[1 - r], b); });
        grid_sync(p.dev, arrived);
        if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64*)at = num | 5;
        each_blk(p.step_blocks, [&](Blk b) { step_impl<ACC, RP, STEP_ITEMS, true>(next, p.side[r], b); });
        grid_sync(p.dev, arrived);
        if (blockIdx.x == 0 && threadIdx.x == 0) *(volatile u64*)at = num | 6;
        r = 1 - r;
    }
}

// The kernel variants (accumulator, row pointer, code widths; `Variant` in module.rs), each as
// `prefix_nXX_rXX_cXX`: M(suffix, ACC, RP, CODE) for every one.
#define EACH_VARIANT(M) \
    M(n32_r32_c16, int, u32, u16) \
    M(n32_r32_c32, int, u32, u32) \
    M(n32_r64_c16, int, u64, u16) \
    M(n32_r64_c32, int, u64, u32) \
    M(n64_r32_c16, i64, u32, u16) \
    M(n64_r32_c32, i64, u32, u32) \
    M(n64_r64_c16, i64, u64, u16) \
    M(n64_r64_c32, i64, u64, u32)

// up to 2 blocks of 256 per SM: registers for every phase's code in one kernel
#define RES_MINB 2
#define RESIDENT(SUFFIX, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256, RES_MINB) resident_##SUFFIX(const __grid_constant__ ResParams p) { resident_impl<ACC, RP, CODE>(p); }
EACH_VARIANT(RESIDENT)

#define PROPAGATE(SUFFIX, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) propagate_##SUFFIX(Net net, Side rd) { propagate_impl<ACC, RP, CODE>(net, rd, hw_blk()); }
EACH_VARIANT(PROPAGATE)

#define STEP(NAME, ACC, RP, MINB, ITEMS) \
    extern "C" __global__ void __launch_bounds__(256, MINB) NAME(Net net, Side wr) { step_impl<ACC, RP, ITEMS, false>(net, wr, hw_blk()); } \
    extern "C" __global__ void __launch_bounds__(256, MINB) pre##NAME(Net net, Side wr) { step_impl<ACC, RP, ITEMS, true>(net, wr, hw_blk()); }
#define STEPS(SUFFIX, MINB, ITEMS) \
    STEP(step_n32_r32##SUFFIX, int, u32, MINB, ITEMS) \
    STEP(step_n32_r64##SUFFIX, int, u64, MINB, ITEMS) \
    STEP(step_n64_r32##SUFFIX, i64, u32, MINB, ITEMS) \
    STEP(step_n64_r64##SUFFIX, i64, u64, MINB, ITEMS)
// default: STEP_ITEMS neurons per thread, 4 blocks of 256 per SM; the others for measurements
// (NEUROBURST_CUDA_STEP=_b2 etc.; the _i8 ones take 8 neurons per thread)
STEPS(, 4, STEP_ITEMS)
STEPS(_b2, 2, STEP_ITEMS)
STEPS(_i8, 2, 8)
STEPS(_i8b3, 3, 8)

#define FIX(NAME, ACC, RP) \
    extern "C" __global__ void __launch_bounds__(256) NAME(Net net, Side wr, Side rd, u32 mapped) { fix_impl<ACC, RP>(net, wr, rd, mapped, hw_blk()); }
FIX(fix_n32_r32, int, u32)
FIX(fix_n32_r64, int, u64)
FIX(fix_n64_r32, i64, u32)
FIX(fix_n64_r64, i64, u64)

extern "C" __global__ void __launch_bounds__(256) gather_r32(Net net, Side rd, const Peer* peers, u32 n_peers) { gather_impl<u32>(net, rd, peers, n_peers); }
extern "C" __global__ void __launch_bounds__(256) gather_r64(Net net, Side rd, const Peer* peers, u32 n_peers) { gather_impl<u64>(net, rd, peers, n_peers); }
extern "C" __global__ void __launch_bounds__(256) inject(Net net, Side wr, u32 mapped) { inject_impl(net, wr, mapped, hw_blk()); }
extern "C" __global__ void relist_r32(Net net, Side wr, const u32* ids, u32 count) { relist_impl<u32>(net, wr, ids, count); }
extern "C" __global__ void relist_r64(Net net, Side wr, const u32* ids, u32 count) { relist_impl<u64>(net, wr, ids, count); }
extern "C" __global__ void in_bound_c16(Net net, u64* scratch, u64 synapses) { in_bound_impl<u16>(net, scratch, synapses); }
extern "C" __global__ void in_bound_c32(Net net, u64* scratch, u64 synapses) { in_bound_impl<u32>(net, scratch, synapses); }
