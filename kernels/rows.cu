// rows.cu: procedural mappings without a closed form, drawn row by row when their sources fire
// (after common.cuh): `proc_rows`, launched after `propagate` on the graph paths; a brain with
// such mappings runs on graphs. In the resident kernel (and `propagate`) they would cost every
// brain at start-up: the driver's compile of the module (once a machine; it caches it) took
// 12.8 s with them in the resident kernel, 18 s in both, against 6.9 s as it is (ptxas, 2 cores).
//
// The rules are crates/engine/src/connectome/flat.rs's records, followed draw for draw as
// crates/engine/src/connectome/rows.rs's Drawer draws them: a warp per (fired source, source area); for an area
// whose psp is divided by the out-degree, the row is counted first (every mapping of the area),
// then drawn again adding quantize(value / out-degree).
//
// Voxel morphologies give the destination voxels of the source voxel in ascending order without
// repeats (the order the build draws the keep draws in). All but vectors and patterns give one
// box, a product of three sorted axis sets, indexed directly; vectors and patterns give a union of
// boxes, walked in order over the range they span (a ballot per 32 voxels). Floating point is
// the build's: IEEE divisions, and libm's log with each operation rounded on its own (no FMA).

#define R_FANOUT 0u
#define R_PROBABILITY 1u
#define R_VOXEL 2u
#define M_VECTORS 0u
#define M_PATTERNS 1u
#define M_PROJECTOR 2u
#define M_BLOCK_TO_BLOCK 3u
#define M_ALL_TO_ALL 4u
#define M_EXPANDER_X 5u
#define M_REDUCER_X 6u
#define M_RANDOMIZER 7u
#define M_LATERAL_PAIRS_X 8u
#define M_LAST_TO_FIRST 9u
#define F_KEEP 1u
#define F_DRAWN 2u
#define F_TILE 4u
#define F_ALWAYS 8u
#define F_NEVER 16u
#define P_ANY (-2LL)
#define P_SAME (-3LL)
#define P_EXCEPT (-4LL)
#define STREAM_D 0xd1b54a32d192ed03ULL

// Mirror of crates/engine/src/connectome/flat.rs `FlatMap`.
struct FlatMap {
    u64 key;
    u64 vkey;
    u64 keep;
    u64 value;  // f64 bits
    u64 log1mp; // f64 bits
    u32 rule;
    u32 morph;
    u32 flags;
    u32 fanout;
    u32 src_first;
    u32 src_dims[3];
    u32 src_npv;
    u32 dst_first;
    u32 dst_count;
    u32 dst_dims[3];
    u32 dst_npv;
    int scalar[3];
    u32 tile_seed[3];
    int tile_pattern[6];
    u32 list_at;
    u32 list_len;
};

// Mirror of `FlatArea`.
struct FlatArea {
    u32 first;
    u32 count;
    u32 map_first;
    u32 map_end;
    u32 uniform;
};

// libm's log (FreeBSD e_log.c) for x in (0, 1], normal: the build's geometric skips.
__device__ double libm_log(double x) {
    const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
    const double LG1 = 6.666666666666735130e-01, LG2 = 3.999999999940941908e-01, LG3 = 2.857142874366239149e-01;
    const double LG4 = 2.222219843214978396e-01, LG5 = 1.818357216161805012e-01, LG6 = 1.531383769920937332e-01;
    const double LG7 = 1.479819860511658591e-01;
    u64 ui = (u64)__double_as_longlong(x);
    u32 hx = (u32)(ui >> 32);
    if (hx == 0x3ff00000u && (ui << 32) == 0) return 0.0;
    hx += 0x3ff00000u - 0x3fe6a09eu;
    const int k = (int)(hx >> 20) - 0x3ff;
    hx = (hx & 0x000fffffu) + 0x3fe6a09eu;
    ui = ((u64)hx << 32) | (ui & 0xffffffffULL);
    x = __longlong_as_double((long long)ui);
    const double f = __dsub_rn(x, 1.0);
    const double hfsq = __dmul_rn(__dmul_rn(0.5, f), f);
    const double s = __ddiv_rn(f, __dadd_rn(2.0, f));
    const double z = __dmul_rn(s, s);
    const double w = __dmul_rn(z, z);
    const double t1 = __dmul_rn(w, __dadd_rn(LG2, __dmul_rn(w, __dadd_rn(LG4, __dmul_rn(w, LG6)))));
    const double t2 = __dmul_rn(z, __dadd_rn(LG1, __dmul_rn(w, __dadd_rn(LG3, __dmul_rn(w, __dadd_rn(LG5, __dmul_rn(w, LG7)))))));
    const double r = __dadd_rn(t2, t1);
    const double dk = (double)k;
    double a = __dmul_rn(s, __dadd_rn(hfsq, r));
    a = __dadd_rn(a, __dmul_rn(dk, LN2_LO));
    a = __dsub_rn(a, hfsq);
    a = __dadd_rn(a, f);
    return __dadd_rn(a, __dmul_rn(dk, LN2_HI));
}

// Draw number c (1-based) of a stream whose key is ks.
__device__ __forceinline__ u64 draw_at(u64 ks, u64 c) { return mix64(ks + c * DRAW_G); }

// draw.rs `geometric_skip`: trials skipped before the next success.
__device__ __forceinline__ u64 geometric_skip(u64 x, double log1mp) {
    const double u = __ddiv_rn((double)((x >> 11) + 1), 9007199254740992.0);
    const double g = __ddiv_rn(libm_log(u), log1mp);
    if (!(g > 0.0)) return 0;
    return g >= 18446744073709551615.0 ? ~0ULL : (u64)g;
}

// One axis of a box of destination voxels: `n` values in ascending order.
#define AX_RANGE 0u  // lo, lo + 1, ...
#define AX_EXCEPT 1u // 0 .. n, leaving out p
#define AX_BIT 2u    // the values with bit p set
#define AX_BITS 3u   // W - 1 - l for the set bits l of p, W = lo, highest bit first
struct Axis {
    u32 kind, lo, n, p;
};

__device__ __forceinline__ Axis ax_range(u32 lo, u32 n) { return Axis{AX_RANGE, lo, n, 0}; }

__device__ u32 axis_at(const Axis& a, u32 i) {
    switch (a.kind) {
    case AX_RANGE: return a.lo + i;
    case AX_EXCEPT: return i < a.p ? i : i + 1;
    case AX_BIT: return (u32)((((u64)i >> a.p) << (a.p + 1)) | (1ULL << a.p) | (i & ((1u << a.p) - 1)));
    default: {
        u32 m = a.p;
        for (u32 t = 0; t < i; t++) m &= ~(1u << (31 - __clz(m)));
        return a.lo - 1 - (31 - __clz(m));
    }
    }
}

// Whether v is on the axis (only vectors and patterns are walked: their axes are ranges and
// exceptions, and v is inside the destination).
__device__ __forceinline__ bool axis_has(const Axis& a, u32 v) {
    return a.kind == AX_EXCEPT ? v != a.p : v - a.lo < a.n;
}

struct Box {
    Axis a[3];
    __device__ u64 size() const { return (u64)a[0].n * a[1].n * a[2].n; }
};

// Values of `dim` not counting `src` (morphology.rs `axis_values`, `!`).
__device__ __forceinline__ Axis ax_except(u32 src, u32 dim) {
    return src < dim ? Axis{AX_EXCEPT, 0, dim - 1, src} : ax_range(0, dim);
}

// morphology.rs `project_axis`, as the set {lo .. lo + n}.
__device__ Axis project_axis(u32 src, u32 sd, u32 dd) {
    if (sd == dd) return ax_range(src, 1);
    if (sd > dd) {
        const double ratio = __ddiv_rn((double)sd, (double)dd);
        const u32 d = (u32)floor(__ddiv_rn((double)src, ratio));
        return ax_range(min(d, dd - 1), 1);
    }
    const double ratio = __ddiv_rn((double)dd, (double)sd);
    auto f = [&](u32 d) { return (u32)floor(__ddiv_rn((double)d, ratio)); };
    u32 lo = (u32)fmin(floor(__dmul_rn((double)src, ratio)), (double)dd);
    while (lo > 0 && f(lo - 1) >= src) lo--;
    while (lo < dd && f(lo) < src) lo++;
    u32 hi = lo;
    while (hi < dd && f(hi) == src) hi++;
    return ax_range(lo, hi - lo);
}

// The box of pattern pair `p` (6 codes) for source voxel v, or an empty one.
__device__ Box pattern_box(const i64* p, const u32* v, const u32* d) {
    Box b;
    for (int a = 0; a < 3; a++) {
        if (p[a] >= -1 && p[a] != (i64)v[a]) return Box{{ax_range(0, 0), ax_range(0, 0), ax_range(0, 0)}};
    }
    for (int a = 0; a < 3; a++) {
        const i64 c = p[3 + a];
        if (c == P_ANY) b.a[a] = ax_range(0, d[a]);
        else if (c == P_SAME) b.a[a] = ax_range(v[a], v[a] < d[a] ? 1 : 0);
        else if (c == P_EXCEPT) b.a[a] = ax_except(v[a], d[a]);
        else b.a[a] = ax_range((u32)c, c >= 0 && c < (i64)d[a] ? 1 : 0);
    }
    return b;
}

// The box of vector `x` (3 numbers) for source voxel v, or an empty one.
__device__ Box vector_box(const FlatMap& m, const i64* x, const u32* v) {
    Box b;
    for (int a = 0; a < 3; a++) {
        const i64 t = (i64)v[a] + x[a] * (i64)m.scalar[a];
        b.a[a] = ax_range((u32)t, t >= 0 && t < (i64)m.dst_dims[a] ? 1 : 0);
    }
    return b;
}

// The destination voxels of source voxel v (of a source of dims s) under a one-box morphology.
__device__ Box one_box(const FlatMap& m, u32 morph, const u32* v, const u32* s, u64 vid) {
    const u32* d = m.dst_dims;
    const Box none = {{ax_range(0, 0), ax_range(0, 0), ax_range(0, 0)}};
    const u32 y = min(v[1], d[1] - 1), z = min(v[2], d[2] - 1);
    switch (morph) {
    case M_PROJECTOR: return Box{{project_axis(v[0], s[0], d[0]), project_axis(v[1], s[1], d[1]), project_axis(v[2], s[2], d[2])}};
    case M_BLOCK_TO_BLOCK:
        return (v[0] < d[0] && v[1] < d[1] && v[2] < d[2]) ? Box{{ax_range(v[0], 1), ax_range(v[1], 1), ax_range(v[2], 1)}} : none;
    case M_ALL_TO_ALL: return Box{{ax_range(0, d[0]), ax_range(0, d[1]), ax_range(0, d[2])}};
    case M_EXPANDER_X: {
        if (v[0] >= s[0]) return none;
        const u32 b = s[0] - 1 - v[0];
        if (b >= 32) return none;
        // values below d[0] with bit b set
        const u64 n = (((u64)d[0] >> (b + 1)) << b) + (u64)max(0LL, (i64)(d[0] & ((2ULL << b) - 1)) - (i64)(1ULL << b));
        return Box{{Axis{AX_BIT, 0, (u32)n, b}, ax_range(y, 1), ax_range(z, 1)}};
    }
    case M_REDUCER_X: {
        const u32 bits = v[0] & (d[0] >= 32 ? ~0u : (1u << d[0]) - 1);
        return Box{{Axis{AX_BITS, d[0], (u32)__popc(bits), bits}, ax_range(y, 1), ax_range(z, 1)}};
    }
    case M_RANDOMIZER: {
        const u64 n = (u64)d[0] * d[1] * d[2];
        const u64 ks = mix64(m.vkey ^ (vid * STREAM_D));
        const u64 i = __umul64hi(draw_at(ks, 1), n);
        return Box{{ax_range((u32)(i / ((u64)d[1] * d[2])), 1), ax_range((u32)((i / d[2]) % d[1]), 1), ax_range((u32)(i % d[2]), 1)}};
    }
    case M_LATERAL_PAIRS_X: {
        const i64 x = (v[0] % 2 == 0) ? (i64)v[0] + 1 : (i64)v[0] - 1;
        const bool ok = x < (i64)s[0] && x >= 0 && x < (i64)d[0] && v[1] < d[1] && v[2] < d[2];
        return ok ? Box{{ax_range((u32)x, 1), ax_range(v[1], 1), ax_range(v[2], 1)}} : none;
    }
    case M_LAST_TO_FIRST:
        return (v[0] + 1 == s[0] && v[1] + 1 == s[1] && v[2] + 1 == s[2]) ? Box{{ax_range(0, 1), ax_range(0, 1), ax_range(0, 1)}} : none;
    default: return none;
    }
}

// The source voxel of local neuron `local` (v), its id, and what the morphology sees: through a
// tile, the voxel inside its tile and the tile's dims (s); false when the tile is left out.
__device__ bool source_voxel(const FlatMap& m, u32 local, u32* v, u32* s, u64* vid) {
    const u32* sd = m.src_dims;
    const u32 voxel = local / m.src_npv;
    v[2] = voxel % sd[2];
    v[1] = (voxel / sd[2]) % sd[1];
    v[0] = voxel / (sd[2] * sd[1]);
    *vid = ((u64)v[0] * sd[1] + v[1]) * sd[2] + v[2];
    for (int a = 0; a < 3; a++) s[a] = sd[a];
    if (!(m.flags & F_TILE)) return true;
    for (int a = 0; a < 3; a++) {
        const u32 seed = m.tile_seed[a], t = v[a] / seed;
        const i64 choose = m.tile_pattern[2 * a], period = choose + m.tile_pattern[2 * a + 1];
        if (((u64)t + 1) * seed > sd[a] || (period > 0 && (i64)t % period >= choose)) return false;
    }
    for (int a = 0; a < 3; a++) {
        v[a] %= m.tile_seed[a];
        s[a] = m.tile_seed[a];
    }
    return true;
}

__device__ __forceinline__ u64 lin_of(const Box& b, const u32* d, u32 i) {
    return ((u64)axis_at(b.a[0], i ? b.a[0].n - 1 : 0) * d[1] + axis_at(b.a[1], i ? b.a[1].n - 1 : 0)) * d[2] + axis_at(b.a[2], i ? b.a[2].n - 1 : 0);
}

// Every synapse of source s's row under m, shared among the warp's lanes (every lane calls it):
// counted (c == 0; the lane's share is returned), or c added to its target in net's accumulator.
// Candidate i (0-based, in the build's order) keeps its synapse when draw i + 1 of the source's
// stream is below `keep` (with an attractivity).
template <typename ACC>
__device__ u64 row_each(const Net& net, const FlatMap& m, u32 s, u32 lane, int c) {
    u64 count = 0;
    auto f = [&](u32 t) {
        const u32 tt = t - net.base;
        if (c == 0) count++;
        else if (tt < net.n) acc_add<ACC>(net.acc, tt, c);
    };
    const u64 ks = mix64(m.key ^ ((u64)s * STREAM_D));
    const bool keeps = m.flags & F_KEEP;
    if (m.rule == R_FANOUT) {
        // a fanout's draws as a closed form's (proc_target)
        const ProcMap pm = {m.key, m.keep, 0, 0, m.dst_first, m.dst_count, m.fanout, 0, keeps ? 2u : 1u};
        for (u32 j = lane; j < m.fanout; j += 32) {
            const u32 t = proc_target(pm, ks, j);
            if (t != ~0u) f(t);
        }
        return count;
    }
    if (m.rule == R_PROBABILITY) {
        // geometric skips: one lane, in order
        if (lane != 0 || (m.flags & F_NEVER)) return count;
        const bool always = m.flags & F_ALWAYS;
        const double l = __longlong_as_double((long long)m.log1mp);
        u64 at = 0;
        u64 i = always ? 0 : geometric_skip(draw_at(ks, ++at), l);
        while (i < m.dst_count) {
            if (!keeps || draw_at(ks, ++at) < m.keep) f(m.dst_first + (u32)i);
            const u64 skip = always ? 0 : geometric_skip(draw_at(ks, ++at), l);
            i = skip > ~0ULL - (i + 1) ? ~0ULL : i + 1 + skip;
        }
        return count;
    }
    u32 v[3], sd[3];
    u64 vid;
    if (!source_voxel(m, s - m.src_first, v, sd, &vid)) return count;
    const u32 npv = m.dst_npv;
    const u32* d = m.dst_dims;
    auto emit = [&](u64 rank, u32 x, u32 y, u32 z, u32 k) {
        const u64 i = rank * npv + k;
        if (!keeps || draw_at(ks, i + 1) < m.keep) f(m.dst_first + ((x * d[1] + y) * d[2] + z) * npv + k);
    };
    const i64* at = net.row_list + m.list_at;
    const bool listed = m.morph == M_VECTORS || m.morph == M_PATTERNS;
    auto box_of = [&](u32 e) { return m.morph == M_VECTORS ? vector_box(m, at + 3 * (u64)e, v) : pattern_box(at + 6 * (u64)e, v, d); };
    if (!listed || m.list_len == 1) {
        const Box b = listed ? box_of(0) : one_box(m, m.morph, v, sd, vid);
        const u64 yz = (u64)b.a[1].n * b.a[2].n, total = b.size() * npv;
        for (u64 i = lane; i < total; i += 32) {
            const u64 r = i / npv;
            emit(r, axis_at(b.a[0], (u32)(r / yz)), axis_at(b.a[1], (u32)(r / b.a[2].n % b.a[1].n)), axis_at(b.a[2], (u32)(r % b.a[2].n)),
                 (u32)(i % npv));
        }
        return count;
    }
    // a union of boxes: the linear voxel ids they span, 32 at a time, each voxel's rank by ballot
    u64 lo = ~0ULL, hi = 0;
    for (u32 e = 0; e < m.list_len; e++) {
        const Box b = box_of(e);
        if (b.size() == 0) continue;
        lo = min(lo, lin_of(b, d, 0));
        hi = max(hi, lin_of(b, d, 1));
    }
    const u64 yz = (u64)d[1] * d[2];
    u64 rank = 0;
    for (u64 l0 = lo; lo <= hi && l0 <= hi; l0 += 32) {
        const u64 l = l0 + lane;
        const u32 x = (u32)(l / yz), y = (u32)(l / d[2] % d[1]), z = (u32)(l % d[2]);
        bool in = false;
        for (u32 e = 0; l <= hi && !in && e < m.list_len; e++) {
            const Box b = box_of(e);
            in = axis_has(b.a[0], x) && axis_has(b.a[1], y) && axis_has(b.a[2], z);
        }
        const u32 ballot = __ballot_sync(0xffffffffu, in);
        if (in) {
            const u64 r = rank + __popc(ballot & ((1u << lane) - 1));
            for (u32 k = 0; k < npv; k++) emit(r, x, y, z, k);
        }
        rank += __popc(ballot);
    }
    return count;
}

// fixed.rs `contribution_from_f64`: v × 2^12 rounded (ties away from zero), saturating.
__device__ int quantize_contribution(double v) {
    if (isnan(v)) return 0;
    const double scaled = round(__dmul_rn(v, 4096.0));
    if (scaled >= 2147483647.0) return 2147483647;
    if (scaled <= -2147483647.0) return -2147483647;
    return (int)(i64)scaled;
}

// The rows of the fired sources of rd in areas with flat maps: a warp per (fired slot, such
// area), over the blocks b.
template <typename ACC>
__device__ void rows_impl(const Net& net, const Side& rd, Blk b) {
    const u32 count = (u32)(*rd.counter >> net.count_shift), lane = threadIdx.x & 31;
    const u64 warp = ((u64)b.id * blockDim.x + threadIdx.x) >> 5, warps = ((u64)b.n * blockDim.x) >> 5;
    const u64 items = (u64)count * net.n_row_areas;
    for (u64 it = warp; it < items; it += warps) {
        const u32 s = rd.fired[it / net.n_row_areas];
        const FlatArea a = net.row_areas[it % net.n_row_areas];
        if (s == DEAD || s - a.first >= a.count) continue;
        double divisor = 1.0;
        if (!a.uniform) {
            u64 n = 0;
            for (u32 i = a.map_first; i < a.map_end; i++) n += row_each<ACC>(net, net.row_maps[i], s, lane, 0);
            for (int d = 16; d > 0; d >>= 1) n += __shfl_xor_sync(0xffffffffu, n, d);
            divisor = (double)max(n, 1ULL);
        }
        for (u32 i = a.map_first; i < a.map_end; i++) {
            const FlatMap& m = net.row_maps[i];
            if (!(m.flags & F_DRAWN)) continue;
            const int c = quantize_contribution(__ddiv_rn(__longlong_as_double((long long)m.value), divisor));
            if (c != 0) row_each<ACC>(net, m, s, lane, c);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) proc_rows_n32(Net net, Side rd) { rows_impl<int>(net, rd, hw_blk()); }
extern "C" __global__ void __launch_bounds__(256) proc_rows_n64(Net net, Side rd) { rows_impl<i64>(net, rd, hw_blk()); }
