// burst.wgsl: one burst on any GPU through wgpu (Vulkan, Metal, DX12), bit for bit with the CPU
// reference (crates/model/src/model/neuron.rs, docs/model.md). Three passes, in one submission:
//   `propagate`  the last burst's spikes: every synapse of every fired source adds its contribution
//                to its target's accumulator;
//   `inject`     the sensory input of this burst, into the same accumulators;
//   `step`       every neuron's steps 2-7 from its accumulator (which it zeroes), the fired neurons
//                appended to a list (in no order: the host sorts it).
// Group 1's bindings are numbered across the three passes (each pass binds its own).
// Potentials are i64 (the device's SHADER_INT64). Accumulators are two 32-bit words a neuron, added
// to with 32-bit atomics and the carry counted into the high word: sums modulo 2^64, exact and in
// any order (no 64-bit atomics, which Metal lacks).

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

// What changes every burst (and the brain's sizes).
struct Burst {
    // the burst number, modulo 2^32 (the random draw's)
    t: u32,
    neurons: u32,
    spikes: u32,
    injections: u32,
    areas: u32,
    // 1: a synapse's code is 16 bits (two a word), 0: 32 bits
    codes16: u32,
    // workgroups of the propagation (its grid-stride)
    groups: u32,
    pad: u32,
}

const FLAG_MP_ACC: u32 = 1u;
const FLAG_POWER: u32 = 2u;
const FLAG_NEVER_FIRE: u32 = 4u;
const FLAG_GRADIENT: u32 = 8u;
const LEAK_LINEAR: u32 = 1u;
const ONE_LSB: i64 = 4096li;
const POTENTIAL_MAX: i64 = 140737488355327li;
const I64_MAX: i64 = 9223372036854775807li;

@group(0) @binding(0) var<uniform> b: Burst;
@group(0) @binding(1) var<storage, read_write> acc: array<atomic<u32>>;

// Add v (modulo 2^64) to accumulator n: the low word, then the high word with the carry.
fn acc_add(n: u32, v: i64) {
    let lo = u32(v & 0xFFFFFFFFli);
    let hi = u32((v >> 32u) & 0xFFFFFFFFli);
    var carry = 0u;
    if lo != 0u {
        let old = atomicAdd(&acc[2u * n], lo);
        carry = select(0u, 1u, old > 0xFFFFFFFFu - lo);
    }
    if hi + carry != 0u {
        atomicAdd(&acc[2u * n + 1u], hi + carry);
    }
}

// ---- propagate -------------------------------------------------------------------------------

@group(1) @binding(0) var<storage, read> row_ptr: array<u32>;
@group(1) @binding(1) var<storage, read> targets: array<u32>;
@group(1) @binding(2) var<storage, read> codes: array<u32>;
@group(1) @binding(3) var<storage, read> table: array<i32>;
@group(1) @binding(4) var<storage, read> spikes: array<u32>;

fn code_of(i: u32) -> u32 {
    if b.codes16 == 1u {
        return (codes[i >> 1u] >> ((i & 1u) * 16u)) & 0xFFFFu;
    }
    return codes[i];
}

// A workgroup a fired source at a time (grid-stride over the spikes), its threads over the row.
@compute @workgroup_size(64)
fn propagate(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    for (var k = wg.x; k < b.spikes; k += b.groups) {
        let s = spikes[k];
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

@group(1) @binding(5) var<storage, read> inj_ids: array<u32>;
@group(1) @binding(6) var<storage, read> inj_v: array<i64>;

@compute @workgroup_size(64)
fn inject(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let k = g.x + g.y * nw.x * 64u;
    if k < b.injections {
        acc_add(inj_ids[k], inj_v[k]);
    }
}

// ---- step ------------------------------------------------------------------------------------

@group(1) @binding(7) var<storage, read> areas: array<Area>;
@group(1) @binding(8) var<storage, read> area_end: array<u32>;
@group(1) @binding(9) var<storage, read_write> potential: array<i64>;
// refractory countdown | consecutive-fire count << 16
@group(1) @binding(10) var<storage, read_write> rcc: array<u32>;
// [0]: how many fired; then the fired neurons
@group(1) @binding(11) var<storage, read_write> fired: array<atomic<u32>>;
@group(1) @binding(12) var<storage, read_write> fired_v: array<i64>;

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

fn threshold_of(p: Area, local: u32) -> i64 {
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

@compute @workgroup_size(64)
fn step(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let n = g.x + g.y * nw.x * 64u;
    if n >= b.neurons {
        return;
    }
    // the input: synapses and injections, modulo 2^64 (then clamped, as on the CPU)
    let lo = atomicLoad(&acc[2u * n]);
    let hi = atomicLoad(&acc[2u * n + 1u]);
    if (lo | hi) != 0u {
        atomicStore(&acc[2u * n], 0u);
        atomicStore(&acc[2u * n + 1u], 0u);
    }
    var input = bitcast<i64>((u64(hi) << 32u) | u64(lo));
    let p = areas[area_of(n)];
    if (p.flags & FLAG_POWER) != 0u {
        input = bitcast<i64>(bitcast<u64>(input) + u64(ONE_LSB));
    }
    var v = potential[n];
    var rc = rcc[n] & 0xFFFFu;
    var cfc = rcc[n] >> 16u;
    var at_fire = 0li;
    var fires = false;
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
        let window = v >= threshold_of(p, n - p.first) && (p.threshold_limit == 0li || v <= p.threshold_limit)
            && (p.flags & FLAG_NEVER_FIRE) == 0u;
        var done = false;
        if window {
            if p.fire_limit > 0u && cfc >= p.fire_limit {
                cfc = 0u;
                done = true;
            } else if p.excitability > 0xFFFFFFFFlu || u64(pcg_hash(n, b.t)) < p.excitability {
                // 6. fire
                fires = true;
                at_fire = v;
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
                v = (v * i64(p.leak_keep)) / 65536li;
            }
        }
    }
    potential[n] = v;
    rcc[n] = rc | (cfc << 16u);
    if fires {
        let k = atomicAdd(&fired[0], 1u);
        atomicStore(&fired[k + 1u], n);
        fired_v[k] = at_fire;
    }
}
