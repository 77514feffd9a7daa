// The burst on the GPU: three kernels per burst, captured in a CUDA graph by
// src/backend/cuda/backend.rs, compiled by NVRTC at start-up.
//
//   propagate: the spikes of burst t-1 over (spike, synapse) pairs + the sensory injection
//              -> integer atomics into the input accumulators (order-independent, exact);
//   step:      every neuron (4 per thread), steps 2-7 of burst-model.md (mirror of src/model/neuron.rs),
//              fired-list compaction (ids + row offsets, one packed 64-bit atomic per block),
//              readback compaction straight into mapped pinned host memory;
//   publish:   one thread writes the burst's counters, then its number, into the mapped header.
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
    const u8* host_in;   // device copy of the pinned injection: u64 header (count | wide << 63), then entries
    u8* host_out;        // mapped pinned: OutHeader, then ids u32[out_cap], potentials i64[out_cap]
    u64 out_cap;
    u32 n;
    u32 n_areas;
    u32 n_rb;            // 0xFFFFFFFF = every neuron is read back
    u32 count_shift;     // packed fired counter: count << shift | pair total
};

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

// propagate: grid-stride over chunks of PAIRS_PER_WARP (spike, synapse) pairs per warp, then over
// the injection entries. Pair k belongs to the fired row s with offs[s] <= k < offs[s + 1].
template <typename ACC, typename RP, typename CODE>
__device__ void propagate_impl(const Net& net, const Side& rd, const Side& wr) {
    __shared__ u64 hdr[2];
    if (threadIdx.x < 2) hdr[threadIdx.x] = ((volatile const u64*)net.host_in)[threadIdx.x];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *wr.counter = 0;
        *net.rb_counter = 0;
        *net.burst += 1;
    }
    const u64 packed = *rd.counter;
    const u32 count = (u32)(packed >> net.count_shift);
    const u64 pairs = packed & ((1ULL << net.count_shift) - 1);
    const u32 lane = threadIdx.x & 31;
    const u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u64 warps = ((u64)gridDim.x * blockDim.x) >> 5;
    const CODE* __restrict__ codes = (const CODE*)net.codes;
    const u32* __restrict__ targets = net.targets;
    const u64* __restrict__ offs = rd.offs;
    const u32* __restrict__ fired = rd.fired;
    const int* __restrict__ table = net.table;
    constexpr int ITEMS = PAIRS_PER_WARP / 32;
    for (u64 c = warp; c * PAIRS_PER_WARP < pairs; c += warps) {
        const u64 k0 = c * PAIRS_PER_WARP;
        const u64 k1 = min(k0 + PAIRS_PER_WARP, pairs);
        const u32 lo = net.chunk_first[c];
        const u32 hi = (k1 < pairs) ? net.chunk_first[c + 1] : count - 1;
        u32 s[ITEMS];
        u64 j[ITEMS];
        u32 tg[ITEMS];
        u32 cd[ITEMS];
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u64 k = k0 + lane + 32 * i;
            s[i] = (k < k1) ? find_row(offs, lo, hi, k) : lo;
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const u64 k = k0 + lane + 32 * i;
            j[i] = row_start<RP>(net, fired[s[i]]) + (k - offs[s[i]]);
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const bool ok = k0 + lane + 32 * i < k1;
            tg[i] = ok ? targets[j[i]] : 0;
            cd[i] = ok ? (u32)codes[j[i]] : 0;
        }
#pragma unroll
        for (int i = 0; i < ITEMS; i++) {
            const bool ok = k0 + lane + 32 * i < k1;
            const int cv = ok ? table[cd[i]] : 0;
            if (cv != 0) acc_add<ACC>(net.acc, tg[i], cv);
        }
    }
    __syncthreads();
    const u64 h = hdr[0];
    const u64 ninj = h & 0x3FFFFFFFFFFFFFFFULL;
    const u32 fmt = (u32)(h >> 62);
    const i64 uniform = (i64)hdr[1];
    const u8* entries = net.host_in + 16;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < ninj; i += (u64)gridDim.x * blockDim.x) {
        u32 id;
        i64 val;
        if (fmt == 1) {
            const u64* e = (const u64*)(entries + i * 16);
            id = (u32)e[0];
            val = (i64)e[1];
        } else if (fmt == 2) {
            id = ((const u32*)entries)[i];
            val = uniform;
        } else {
            const u64 e = *(const u64*)(entries + i * 8);
            id = (u32)e;
            val = (i64)(int)(u32)(e >> 32);
        }
        atomicAdd(net.inj + id, (u64)val);
        atomicOr(net.inj_mask + (id >> 5), 1u << (id & 31));
    }
}

// Record, for every chunk of pairs whose first pair lies in this row, the row's fired slot.
__device__ __forceinline__ void mark_chunks(const Net& net, u32 slot, u64 off, u64 len) {
    for (u64 c = (off + PAIRS_PER_WARP - 1) / PAIRS_PER_WARP; c * PAIRS_PER_WARP < off + len; c++) net.chunk_first[c] = slot;
}

__device__ __forceinline__ bool in_readback(const Net& net, u32 id) {
    if (net.n_rb == 0xFFFFFFFFu) return true;
    u32 lo = 0, hi = net.n_rb;
    while (lo < hi) {
        u32 mid = (lo + hi) / 2;
        if (net.rb_hi[mid] <= id) lo = mid + 1; else hi = mid;
    }
    return lo < net.n_rb && net.rb_lo[lo] <= id;
}

template <typename ACC, typename RP>
__device__ __forceinline__ void step_neuron(const Net& net, u32 n, u64 t, bool& fired, i64& at_fire) {
        // 1. input = injection + synapses + power (wrapping i64 sums, as on the CPU)
        ACC a = ((ACC*)net.acc)[n];
        if (a != 0) ((ACC*)net.acc)[n] = 0;
        u64 input = (u64)(i64)a;
        const u32 mw = net.inj_mask[n >> 5];
        if (mw != 0) {
            if (mw & (1u << (n & 31))) {
                input += net.inj[n];
                net.inj[n] = 0;
            }
        }
        u32 area = 0;
        {
            u32 lo = 0, hi = net.n_areas - 1;
            while (lo < hi) {
                u32 mid = (lo + hi) / 2;
                if (net.area_end[mid] <= n) lo = mid + 1; else hi = mid;
            }
            area = lo;
        }
        const AreaParams& p = net.areas[area];
        if (p.flags & FLAG_POWER) input += (u64)ONE_LSB;
        const u32 rcc0 = net.rcc[n];
        u32 rc = rcc0 & 0xFFFFu;
        u32 cfc = rcc0 >> 16;
        i64 v = net.v[n];
        const i64 v0 = v;
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
        if (v != v0) net.v[n] = v;
        const u32 rcc1 = rc | (cfc << 16);
        if (rcc1 != rcc0) net.rcc[n] = rcc1;
    
}

#define STEP_ITEMS 4

template <typename ACC, typename RP>
__device__ void step_impl(const Net& net, const Side& wr) {
    const u32 lane = threadIdx.x & 31;
    const u64 t = *net.burst;
    const u32 base = blockIdx.x * (blockDim.x * STEP_ITEMS);
    bool f[STEP_ITEMS];
    i64 atf[STEP_ITEMS];
    u64 pk[STEP_ITEMS];
    u64 mine = 0;
#pragma unroll
    for (int i = 0; i < STEP_ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        f[i] = false;
        atf[i] = 0;
        pk[i] = 0;
        if (n < net.n) {
            step_neuron<ACC, RP>(net, n, t, f[i], atf[i]);
            if (f[i]) {
                pk[i] = (1ULL << net.count_shift) | (row_start<RP>(net, n + 1) - row_start<RP>(net, n));
                mine += pk[i];
            }
        }
        __syncwarp();
        if (n - lane < net.n && lane == 0) {
            // clear this warp's injection word (32 neurons, warp-aligned)
            if (net.inj_mask[n >> 5] != 0) net.inj_mask[n >> 5] = 0;
        }
    }
    // fired-list compaction: block scan of the packed (count, pairs), one atomic per block
    __shared__ u64 warp_sum[32];
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
        if (lane == 0 && total != 0) b0 = atomicAdd(wr.counter, total);
        b0 = __shfl_sync(0xffffffffu, b0, 0);
        if (lane < nw) warp_sum[lane] = b0 + wi - w;
    }
    __syncthreads();
    u64 pos = warp_sum[wid] + incl - mine;
    const u64 mask = (1ULL << net.count_shift) - 1;
#pragma unroll
    for (int i = 0; i < STEP_ITEMS; i++) {
        const u32 n = base + i * blockDim.x + threadIdx.x;
        if (f[i]) {
            const u32 slot = (u32)(pos >> net.count_shift);
            const u64 off = pos & mask;
            wr.fired[slot] = n;
            wr.offs[slot] = off;
            mark_chunks(net, slot, off, pk[i] & mask);
            pos += pk[i];
        }
        // readback compaction into mapped host memory (warp-uniform loop: ballots are safe)
        const bool rb = f[i] && in_readback(net, n);
        const unsigned rbm = __ballot_sync(0xffffffffu, rb);
        if (rbm) {
            u64 rbase = 0;
            const int leader = __ffs(rbm) - 1;
            if (lane == leader) rbase = atomicAdd(net.rb_counter, (u64)__popc(rbm));
            rbase = __shfl_sync(0xffffffffu, rbase, leader);
            if (rb) {
                const u64 slot = rbase + __popc(rbm & ((1u << lane) - 1));
                if (slot < net.out_cap) {
                    u32* ids = (u32*)(net.host_out + sizeof(OutHeader));
                    i64* vs = (i64*)(net.host_out + sizeof(OutHeader) + ((net.out_cap * 4 + 7) & ~7ULL));
                    ids[slot] = n;
                    vs[slot] = atf[i];
                }
                __threadfence_system();
            }
        }
    }
}

// After `step`: publish the burst's counters to the host (the burst number last).
extern "C" __global__ void publish(Net net, Side wr) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    const u64 packed = *(volatile u64*)wr.counter;
    const u64 rbc = *(volatile u64*)net.rb_counter;
    volatile OutHeader* h = (volatile OutHeader*)net.host_out;
    h->fired_total = packed >> net.count_shift;
    h->pairs = packed & ((1ULL << net.count_shift) - 1);
    h->rb_count = rbc;
    __threadfence_system();
    h->burst = *(volatile u64*)net.burst;
    __threadfence_system();
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

#define PROPAGATE(NAME, ACC, RP, CODE) \
    extern "C" __global__ void __launch_bounds__(256) NAME(Net net, Side rd, Side wr) { propagate_impl<ACC, RP, CODE>(net, rd, wr); }
PROPAGATE(propagate_n32_r32_c16, int, u32, u16)
PROPAGATE(propagate_n32_r32_c32, int, u32, u32)
PROPAGATE(propagate_n32_r64_c16, int, u64, u16)
PROPAGATE(propagate_n32_r64_c32, int, u64, u32)
PROPAGATE(propagate_n64_r32_c16, i64, u32, u16)
PROPAGATE(propagate_n64_r32_c32, i64, u32, u32)
PROPAGATE(propagate_n64_r64_c16, i64, u64, u16)
PROPAGATE(propagate_n64_r64_c32, i64, u64, u32)

#define STEP(NAME, ACC, RP) \
    extern "C" __global__ void __launch_bounds__(256) NAME(Net net, Side wr) { step_impl<ACC, RP>(net, wr); }
STEP(step_n32_r32, int, u32)
STEP(step_n32_r64, int, u64)
STEP(step_n64_r32, i64, u32)
STEP(step_n64_r64, i64, u64)

extern "C" __global__ void relist_r32(Net net, Side wr, const u32* ids, u32 count) { relist_impl<u32>(net, wr, ids, count); }
extern "C" __global__ void relist_r64(Net net, Side wr, const u32* ids, u32 count) { relist_impl<u64>(net, wr, ids, count); }
extern "C" __global__ void in_bound_c16(Net net, u64* scratch, u64 synapses) { in_bound_impl<u16>(net, scratch, synapses); }
extern "C" __global__ void in_bound_c32(Net net, u64* scratch, u64 synapses) { in_bound_impl<u32>(net, scratch, synapses); }
