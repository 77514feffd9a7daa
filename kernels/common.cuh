// Shared by the kernels: types, the device structs (`Net`, `Side`, `OutHeader`, `AreaParams`; the
// host's `Net`, `Side` and `ProcMap` are generated from them by crates/engine/build.rs, the others
// checked against them by a test of crates/engine/src/backend/cuda/layout.rs), fixed-point helpers,
// and the row and accumulator helpers. crates/engine/src/backend/cuda/module.rs compiles this header and then
// inject.cu, step.cu, prestep.cu, rows.cu, propagate.cu, procbin.cu, tiles.cu, learn.cu, resident.cu and
// build.cu as one NVRTC program.
//
// The burst on the GPU: on one GPU, one kernel that stays on the GPU runs every burst
// (resident.cu), on several GPUs one on each, exchanging the fired lists (resident.cu, `exchange`);
// where it cannot run, CUDA graphs of the phase kernels (crates/engine/src/backend/cuda/burst/graphs.rs).
// The phases:
//
//   propagate: the spikes of burst t-1 over (spike, synapse) pairs -> integer atomics into the
//              input accumulators (order-independent, exact), as soon as burst t-1 is done;
//   inject:    the burst's sensory injection (copied up, or read where it lies) -> `inj`;
//   step:      every neuron (4 per thread), steps 2-7 of burst-model.md (mirror of crates/model/src/model/neuron.rs),
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

// The kernel of four blocks an SM (`Program::FourBlocks` puts `#define RES_MINB 4` before this
// header): 64 registers a thread, so the phases that would spill keep less in flight.
#if defined(RES_MINB) && RES_MINB >= 4
#define FOUR_BLOCKS 1
#else
#define FOUR_BLOCKS 0
#endif

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

// Mirror of crates/model/src/model/mod.rs `AreaParams` (#[repr(C)], 104 bytes).
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

// crates/engine/src/connectome/procedural.rs `ClosedForm` as the host sees it (`ProcMap`, generated): a procedural
// mapping whose synapses are drawn one by one (a fanout): draw j of source s goes to
// dst_first + hi64(x * dst_count), x = mix64(key_s + (j * draws + 1) * G), key_s = mix64(key ^ s * D);
// with an attractivity (draws 2) it is a synapse when mix64(key_s + (j * 2 + 2) * G) < keep.
struct ProcMap {
    u64 key;
    u64 keep;
    u32 src_first;
    u32 src_count;
    u32 dst_first;
    u32 dst_count;
    u32 fanout;
    int contribution;
    u32 draws;
};

struct FlatArea; // rows.cu
struct FlatMap;

// Everything a burst touches (the host's `Net` is generated from this: crates/engine/build.rs;
// one field a line, its comment its doc).
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
    const ProcMap* proc; // the procedural mappings, drawn again when their sources fire
    u32 n_proc;
    u32 proc_binned;     // 1: `propagate` leaves them to proc_bin and proc_add (procbin.cu)
    const FlatArea* row_areas; // the procedural mappings drawn row by row (rows.cu), by source area
    const FlatMap* row_maps;
    const i64* row_list;
    u32 n_row_areas;
};

// Injection header word 0: count | fused << 61 | fmt << 62.
#define INJ_COUNT_MASK ((1ULL << 61) - 1)
#define DEAD 0xFFFFFFFFu
#define NO_RB 0xFFFFFFFFu
#define DEAD_RB 0x80000000u

// One of the two fired-list buffers, read in burst t, written in burst t-1 (the host's `Side` is
// generated from this).
struct Side {
    u32* fired;
    u64* offs;    // first pair index of each fired neuron's row
    u64* shifts;  // each fired neuron's row start less its first pair index (wrapping): pair k of
                  // the slot's row is stored synapse k + shift (written with the slot: the pairs'
                  // readers skip a dependent load)
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

// SplitMix64's finaliser (crates/engine/src/connectome/draw.rs `mix64`).
__device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// A warp's inclusive prefix sum of `v` in lane order (every lane of the warp calls it).
template <typename T>
__device__ __forceinline__ T warp_scan(T v) {
    const u32 lane = threadIdx.x & 31;
    for (u32 d = 1; d < 32; d <<= 1) {
        const T o = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += o;
    }
    return v;
}

#define DRAW_G 0x9e3779b97f4a7c15ULL

// hi64(x * c) for a 32-bit c, from 32-bit halves (exact: the low half's carry is its high word).
__device__ __forceinline__ u32 hi64_32(u64 x, u32 c) {
    return (u32)(((u64)(u32)(x >> 32) * c + __umulhi((u32)x, c)) >> 32);
}

// Target of the draw whose stream position is y = key_s + (j * draws + 1) * G, or ~0u when the
// draw keeps no synapse. Draw j + 1 is at y + draws * G.
__device__ __forceinline__ u32 proc_draw(const ProcMap& m, u64 y) {
    const u64 x = mix64(y);
    if (m.draws == 2 && mix64(y + DRAW_G) >= m.keep) return ~0u;
    return m.dst_first + hi64_32(x, m.dst_count);
}

// Target of draw j of a ProcMap's source (its key_s), or ~0u when the draw keeps no synapse.
__device__ __forceinline__ u32 proc_target(const ProcMap& m, u64 key, u32 j) {
    return proc_draw(m, key + ((u64)j * m.draws + 1) * DRAW_G);
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
