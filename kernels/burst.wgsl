// burst.wgsl: one burst on any GPU through wgpu (Vulkan, Metal, DX12), bit for bit with the CPU
// reference (crates/model/src/model/neuron.rs, docs/model.md). The passes, dispatches of one
// compute pass:
//   `propagate`  the last burst's spikes: every synapse of every fired source adds its contribution
//                to its target's accumulator;
//   `inject`     the sensory input of this burst, into the same accumulators;
//   `step`       every neuron's steps 2-7 from its accumulator (which it zeroes); the fired marked
//                in a bitmap, their potentials kept by neuron, counted by workgroup;
//   `compact`    each fired neuron at its rank: the fired list in ascending order, as the host
//                hands it on (no sort on the host), written where the host maps it (`out`).
// Group 1's bindings are numbered across the three passes (each pass binds its own).
// Potentials are i64 (the device's SHADER_INT64). Accumulators are 64 bits a neuron, added to
// with 64-bit atomics (acc64.wgsl) or, on a device without them (Metal), as two 32-bit words with
// the carry counted into the high word (acc32.wgsl): sums modulo 2^64, exact and in any order.
// What changes every burst comes up in one buffer (`Upload`); the spikes the propagation reads
// are the last burst's fired list where it is still on the device (the host binds it), or the
// host's (after a restore).

struct Area {
    threshold: i64,
    inc_x: i64,
    inc_y: i64,
    inc_z: i64,
    threshold_limit: i64,
    leak_linear: i64,
    excitability: u64,
    first: u32,
    count: u32,
    dim_x: u32,
    dim_y: u32,
    dim_z: u32,
    neurons_per_voxel: u32,
    leak_keep: u32,
    leak_kind: u32,
    refractory: u32,
    fire_limit: u32,
    snooze: u32,
    flags: u32,
}

// The brain's sizes (written once).
struct Brain {
    neurons: u32,
    areas: u32,
    // 1: a synapse's code is 16 bits (two a word), 0: 32 bits
    codes16: u32,
    pad: u32,
}

// What changes every burst (the host's `Header`).
struct Header {
    // the burst number, modulo 2^32 (the random draw's)
    t: u32,
    injections: u32,
    // where the injected neurons' ids start in `words`, and their potentials (two words each: low, high)
    inj_at: u32,
    inj_v_at: u32,
    // 1: every injection has the potential (same_lo, same_hi), and `words` holds none
    same: u32,
    same_lo: u32,
    same_hi: u32,
    // the fired the host reads from `out` (their ids, then their potentials): the first m
    m: u32,
}

struct Upload {
    h: Header,
    words: array<u32>,
}

const FLAG_MP_ACC: u32 = 1u;
const FLAG_POWER: u32 = 2u;
const FLAG_NEVER_FIRE: u32 = 4u;
const FLAG_GRADIENT: u32 = 8u;
const LEAK_LINEAR: u32 = 1u;
const ONE_LSB: i64 = 4096li;
const POTENTIAL_MAX: i64 = 140737488355327li;
const I64_MAX: i64 = 9223372036854775807li;

@group(0) @binding(0) var<uniform> b: Brain;
@group(0) @binding(1) var<storage, read> up: Upload;
// The accumulators as the propagation and the injection add to them (`acc`, group 0 binding 2)
// and `acc_add(n, v)`: in acc64.wgsl where the device has 64-bit atomics, else in acc32.wgsl (the
// host appends one of them to this file).

// ---- propagate -------------------------------------------------------------------------------

@group(1) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(1) @binding(1) var<storage, read> targets: array<u32>;
@group(1) @binding(2) var<storage, read> codes: array<u32>;
@group(1) @binding(3) var<storage, read> table: array<i32>;
// [how many, then the spikes]: the fired list of the last burst (the step's `fired`) or the host's
@group(1) @binding(4) var<storage, read> spikes: array<u32>;

fn code_of(i: u32) -> u32 {
    if b.codes16 == 1u {
        return (codes[i >> 1u] >> ((i & 1u) * 16u)) & 0xFFFFu;
    }
    return codes[i];
}

// A workgroup a fired source at a time (grid-stride over the spikes), its threads over the row.
@compute @workgroup_size(64)
fn propagate(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
             @builtin(local_invocation_index) lane: u32) {
    let count = spikes[0];
    for (var k = wg.x; k < count; k += nw.x) {
        let s = spikes[k + 1u];
        let end = row_ptr[s + 1u];
        for (var i = row_ptr[s] + lane; i < end; i += 64u) {
            let c = table[code_of(i)];
            if c != 0 {
                acc_add(targets[i], i64(c));
            }
        }
    }
}

// ---- inject ----------------------------------------------------------------------------------

@compute @workgroup_size(64)
fn inject(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let k = g.x + g.y * nw.x * 64u;
    if k < up.h.injections {
        var lo = up.h.same_lo;
        var hi = up.h.same_hi;
        if up.h.same == 0u {
            lo = up.words[up.h.inj_v_at + 2u * k];
            hi = up.words[up.h.inj_v_at + 2u * k + 1u];
        }
        acc_add(up.words[up.h.inj_at + k], bitcast<i64>((u64(hi) << 32u) | u64(lo)));
    }
}

// ---- step ------------------------------------------------------------------------------------

@group(1) @binding(7) var<storage, read> areas: array<Area>;
@group(1) @binding(8) var<storage, read> area_end: array<u32>;
@group(1) @binding(9) var<storage, read_write> potential: array<i64>;
// refractory countdown | consecutive-fire count << 16
@group(1) @binding(10) var<storage, read_write> rcc: array<u32>;
// [0]: how many fired; then the fired neurons, ascending (`compact`)
@group(1) @binding(11) var<storage, read_write> fired: array<u32>;
@group(1) @binding(12) var<storage, read_write> fired_v: array<i64>;
// a bit a neuron: fired (8 words a step workgroup, all written every burst)
@group(1) @binding(14) var<storage, read_write> bits: array<u32>;
// the potential at fire, by neuron (of the fired only)
@group(1) @binding(15) var<storage, read_write> fire_v: array<i64>;
// the fired of each step workgroup
@group(1) @binding(16) var<storage, read_write> counts: array<u32>;
// the area of each step workgroup's neurons where they lie in one (else ~0), written when the brain is built
@group(1) @binding(17) var<storage, read> step_area: array<u32>;
// what the host maps: [count, the first `up.h.m` fired ids, their potentials (low, high words) 8-byte aligned]
@group(1) @binding(18) var<storage, read_write> out: array<u32>;
// the accumulators again, read and cleared plainly (no atomic: the step is their one user)
@group(1) @binding(13) var<storage, read_write> acc_words: array<vec2<u32>>;

fn clamp_potential(v: i64) -> i64 {
    return clamp(v, -POTENTIAL_MAX, POTENTIAL_MAX);
}

// Rust's i64::saturating_add.
fn i64_min() -> i64 {
    return -I64_MAX - 1li;
}

fn sat_add(a: i64, c: i64) -> i64 {
    let r = bitcast<i64>(bitcast<u64>(a) + bitcast<u64>(c));
    if ((a ^ r) & (c ^ r)) < 0li {
        return select(I64_MAX, i64_min(), a < 0li);
    }
    return r;
}

// Rust's i64::saturating_mul by x >= 0.
fn sat_mul_u32(a: i64, x: u32) -> i64 {
    if x == 0u || a == 0li {
        return 0li;
    }
    let xx = i64(x);
    if a > 0li && a > I64_MAX / xx {
        return I64_MAX;
    }
    if a < 0li && a < i64_min() / xx {
        return i64_min();
    }
    return a * xx;
}

fn threshold_of(a: u32, local: u32) -> i64 {
    let p = &areas[a];
    if (p.flags & FLAG_GRADIENT) == 0u {
        return p.threshold;
    }
    let voxel = local / p.neurons_per_voxel;
    let z = voxel % p.dim_z;
    let y = (voxel / p.dim_z) % p.dim_y;
    let x = voxel / (p.dim_z * p.dim_y);
    var t = sat_add(p.threshold, sat_mul_u32(p.inc_x, x));
    t = sat_add(t, sat_mul_u32(p.inc_y, y));
    return sat_add(t, sat_mul_u32(p.inc_z, z));
}

fn pcg_hash(n: u32, t: u32) -> u32 {
    let x = n * 2654435761u + t * 1597334677u;
    let state = x * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn area_of(n: u32) -> u32 {
    var lo = 0u;
    var hi = b.areas - 1u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if area_end[mid] <= n {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

struct Fire {
    fires: bool,
    at: i64,
}

// Steps 2-7 of neuron n (the mirror of `step_core` in kernels/step.cu).
fn step_neuron(n: u32, a: u32) -> Fire {
    // (the area's fields read where they are used, not all of them a thread)
    let p = &areas[a];
    // the input: synapses and injections, modulo 2^64 (then clamped, as on the CPU)
    let w = acc_words[n];
    if (w.x | w.y) != 0u {
        acc_words[n] = vec2<u32>(0u, 0u);
    }
    var input = bitcast<i64>((u64(w.y) << 32u) | u64(w.x));
    if (p.flags & FLAG_POWER) != 0u {
        input = bitcast<i64>(bitcast<u64>(input) + u64(ONE_LSB));
    }
    let v0 = potential[n];
    let r0 = rcc[n];
    var v = v0;
    var rc = r0 & 0xFFFFu;
    var cfc = r0 >> 16u;
    var f = Fire(false, 0li);
    // 2. no charge accumulation
    if (p.flags & FLAG_MP_ACC) == 0u {
        v = 0li;
    }
    if rc > 0u {
        // 3. refractory
        rc -= 1u;
        if rc == 0u && p.fire_limit > 0u && cfc >= p.fire_limit {
            cfc = 0u;
        }
    } else {
        // 4. integrate
        v = clamp_potential(v + clamp_potential(input));
        // 5. the firing window
        let window = v >= threshold_of(a, n - p.first) && (p.threshold_limit == 0li || v <= p.threshold_limit)
            && (p.flags & FLAG_NEVER_FIRE) == 0u;
        var done = false;
        if window {
            if p.fire_limit > 0u && cfc >= p.fire_limit {
                cfc = 0u;
                done = true;
            } else if p.excitability > 0xFFFFFFFFlu || u64(pcg_hash(n, up.h.t)) < p.excitability {
                // 6. fire
                f = Fire(true, v);
                v = 0li;
                cfc = min(cfc + 1u, 0xFFFFu);
                let snooze = select(0u, p.snooze, p.fire_limit > 0u && cfc >= p.fire_limit);
                rc = (p.refractory + snooze) & 0xFFFFu;
                done = true;
            }
        }
        if !done {
            // 7. no fire
            if p.fire_limit > 0u {
                cfc = 0u;
            }
            if p.leak_kind == LEAK_LINEAR {
                if v > 0li {
                    v = max(v - p.leak_linear, 0li);
                } else {
                    v = min(v + p.leak_linear, 0li);
                }
            } else {
                // (x / 65536 truncating toward 0, as the CPU's i64 division, by shifts)
                let x = v * i64(p.leak_keep);
                v = (x + ((x >> 63u) & 65535li)) >> 16u;
            }
        }
    }
    if v != v0 {
        potential[n] = v;
    }
    let r1 = rc | (cfc << 16u);
    if r1 != r0 {
        rcc[n] = r1;
    }
    return f;
}

// Threads of a step workgroup (8 words of the bitmap).
const STEP_GROUP: u32 = 256u;

// The workgroup's fired, a bit each, and how many (zeroed by the workgroup itself: the pipelines
// leave workgroup memory as it is).
var<workgroup> wg_bits: array<atomic<u32>, 8>;
var<workgroup> wg_count: atomic<u32>;

// A thread a neuron. The workgroup's area comes from `step_area` (written when the brain is
// built), so no thread waits for a search; the fired are marked and counted in the workgroup
// once every neuron has stepped.
@compute @workgroup_size(256)
fn step(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
    let n = g.x + g.y * nw.x * STEP_GROUP;
    let wg = n / STEP_GROUP;
    if li < 8u {
        atomicStore(&wg_bits[li], 0u);
    }
    if li == 8u {
        atomicStore(&wg_count, 0u);
    }
    var fires = false;
    if n < b.neurons {
        var a = step_area[wg];
        if a == 0xFFFFFFFFu {
            a = area_of(n);
        }
        let f = step_neuron(n, a);
        if f.fires {
            fire_v[n] = f.at;
            fires = true;
        }
    }
    workgroupBarrier();
    if fires {
        atomicOr(&wg_bits[li >> 5u], 1u << (li & 31u));
        atomicAdd(&wg_count, 1u);
    }
    workgroupBarrier();
    // (a grid of two dimensions may have workgroups past the last)
    let groups = (b.neurons + STEP_GROUP - 1u) / STEP_GROUP;
    if li < 8u && wg < groups {
        bits[wg * 8u + li] = atomicLoad(&wg_bits[li]);
    }
    if li == 8u && wg < groups {
        counts[wg] = atomicLoad(&wg_count);
    }
}

// ---- compact ---------------------------------------------------------------------------------

// Bitmap words a compact workgroup takes: a word a thread, 32 step workgroups.
const COMPACT_WORDS: u32 = 256u;

// The fired before the workgroup's run, its words and its step workgroups' counts.
var<workgroup> wg_base: atomic<u32>;
var<workgroup> wg_words: array<u32, 256>;
var<workgroup> wg_counts: array<u32, 32>;

// A workgroup a run of COMPACT_WORDS words of the bitmap, a thread a word: the run starts in the
// fired list after the fired of every step workgroup before it (their counts summed here: no pass
// of its own for a scan), a word after the step workgroups before it in the run and the words
// before it in its step workgroup (at most 31 counts and 7 words, summed by the thread); a word's
// fired go to their places in ascending order, in `fired` (the next burst's spikes) and, the
// first `up.h.m` of them, in `out` (what the host maps). The last run writes the list's length.
@compute @workgroup_size(256)
fn compact(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
           @builtin(local_invocation_index) li: u32) {
    let c = wid.x + wid.y * nw.x;
    let groups = (b.neurons + STEP_GROUP - 1u) / STEP_GROUP;
    let first = c * (COMPACT_WORDS / 8u);
    if first >= groups {
        return;
    }
    if li == 0u {
        atomicStore(&wg_base, 0u);
    }
    workgroupBarrier();
    var before = 0u;
    for (var i = li; i < first; i += 256u) {
        before += counts[i];
    }
    if before != 0u {
        atomicAdd(&wg_base, before);
    }
    let w = c * COMPACT_WORDS + li;
    var word = 0u;
    if w < groups * 8u {
        word = bits[w];
    }
    wg_words[li] = word;
    if li < 32u {
        var k = 0u;
        if first + li < groups {
            k = counts[first + li];
        }
        wg_counts[li] = k;
    }
    workgroupBarrier();
    var r = atomicLoad(&wg_base);
    for (var i = 0u; i < (li >> 3u); i++) {
        r += wg_counts[i];
    }
    for (var i = li & ~7u; i < li; i++) {
        r += countOneBits(wg_words[i]);
    }
    let m = up.h.m;
    // where `out` holds the potentials: after the count and m ids, 8-byte aligned (the host's `fired_v_at`)
    let out_v = (2u + m) & ~1u;
    while word != 0u {
        let n = w * 32u + firstTrailingBit(word);
        let v = fire_v[n];
        fired[1u + r] = n;
        fired_v[r] = v;
        if r < m {
            out[1u + r] = n;
            out[out_v + 2u * r] = u32(v & 0xFFFFFFFFli);
            out[out_v + 2u * r + 1u] = u32((v >> 32u) & 0xFFFFFFFFli);
        }
        r += 1u;
        word &= word - 1u;
    }
    if li == 255u && first + COMPACT_WORDS / 8u >= groups {
        fired[0] = r;
        out[0] = r;
    }
}
