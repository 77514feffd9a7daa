//! The brain on the device: its buffers, the pipelines of `kernels/burst.wgsl` and their bind
//! groups. Two buffers the host maps (wgpu's `MAPPABLE_PRIMARY_BUFFERS`, every native backend):
//! what changes every burst goes up in one ([`Mapped`] `upload`), which the shaders read where it
//! is, and the step's fired list comes back in the other (`out`), where the last pass writes it:
//! a burst copies no buffer (each `write_buffer` would cost wgpu a staging buffer, each copy a
//! command and a barrier).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use wgpu::util::DeviceExt;

use super::device::WgpuDevice;
use crate::backend::BackendError;
use crate::connectome::{Codes, Part};
use crate::model::AreaParams;

/// The kernels, compiled by the driver when the backend starts, with the accumulators' addition
/// of 64-bit atomics where the device has them, else of 32-bit words and a carry.
const SOURCE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/burst.wgsl"));
const ACC64: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/acc64.wgsl"));
const ACC32: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/acc32.wgsl"));

/// The device feature of 64-bit atomics in storage buffers (acc64.wgsl).
pub(super) const ATOMIC64: wgpu::Features = wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS;

/// Where `out` (and the readback) holds the potentials of a fired list of `m` ids: after the
/// count and the ids, 8-byte aligned (burst.wgsl's `out_v`; at most the snapshot's `v_at`).
pub(super) fn fired_v_at(m: u64) -> u64 {
    ((1 + m) * 4).next_multiple_of(8)
}

/// Bytes of a fired list of `m` ids and their potentials as `out` (and the readback) hold it.
pub(super) fn fired_bytes(m: u64) -> u64 {
    fired_v_at(m) + m * 8
}

/// Bytes of `out` for a fired list of `m` ids, and after it the trace's timestamps
/// (NEUROBURST_WGPU_TRACE=1).
fn out_bytes(m: u64) -> u64 {
    fired_bytes(m) + TIMESTAMP_BYTES
}

/// Threads of a workgroup (`@workgroup_size` in burst.wgsl).
pub(super) const GROUP: u32 = 64;

/// Threads of a step workgroup (`STEP_GROUP` in burst.wgsl).
pub(super) const STEP_GROUP: u32 = 256;

/// Step workgroups a compact workgroup orders (`COMPACT_WORDS / 8` in burst.wgsl).
pub(super) const COMPACT_GROUPS: u64 = 32;

/// Words of the upload's header (`Header` in burst.wgsl): the burst number, the injections, where
/// the injected ids and potentials start.
pub(super) const HEADER_WORDS: usize = 8;

const STORAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST).union(wgpu::BufferUsages::COPY_SRC);

/// `out`: written by the compact pass (and the trace's timestamps copied in), mapped by the host.
const OUT: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::MAP_READ).union(wgpu::BufferUsages::COPY_DST);

/// `bytes` padded with zeros to a multiple of 4 and at least 16 bytes (wgpu binds no empty buffer).
pub(super) fn padded(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let len = bytes.len().next_multiple_of(4).max(16);
    if len == bytes.len() {
        return bytes.into();
    }
    let mut v = bytes.to_vec();
    v.resize(len, 0);
    v.into()
}

pub(super) fn codes_bytes(codes: &Codes) -> &[u8] {
    match codes {
        Codes::U16(c) => bytemuck::cast_slice(c),
        Codes::U32(c) => bytemuck::cast_slice(c),
    }
}

/// Each area's parameters as burst.wgsl's `Area` (104 bytes).
fn areas_bytes(params: &[AreaParams]) -> Vec<u8> {
    let mut out = Vec::with_capacity(params.len() * 104);
    for p in params {
        for v in [p.threshold, p.threshold_inc[0], p.threshold_inc[1], p.threshold_inc[2], p.threshold_limit, p.leak_linear] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&p.excitability.to_le_bytes());
        let words = [
            p.first,
            p.count,
            p.dims[0],
            p.dims[1],
            p.dims[2],
            p.neurons_per_voxel,
            p.leak_keep,
            p.leak_kind,
            p.refractory,
            p.fire_limit,
            p.snooze,
            p.flags,
        ];
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
    out
}

/// The brain's buffers and the passes over them.
pub(super) struct Buffers {
    brain: wgpu::Buffer,
    acc: wgpu::Buffer,
    pub codes: wgpu::Buffer,
    /// `[count, spikes...]` from the host (after a restore).
    pub spikes: wgpu::Buffer,
    /// The header, then (after a restore) the spikes' count and the spikes, the injected ids and
    /// their potentials.
    pub upload: Mapped,
    /// The step's fired list as the host maps it: `[count, the first m ids]`, their potentials
    /// at [`fired_v_at`]`(m)`, room for `out_room` ids.
    pub out: wgpu::Buffer,
    pub out_room: u64,
    /// The buffers the compact pass binds as group 1 (bound again with a larger `out`).
    compact_own: [wgpu::Buffer; 6],
    pub potential: wgpu::Buffer,
    pub rcc: wgpu::Buffer,
    /// `[count, fired...]` ascending, and the fired neurons' potentials.
    pub fired: wgpu::Buffer,
    pub fired_v: wgpu::Buffer,
    /// Where the host reads the state (ids at 0, potentials at `v_at`), and a fired list longer
    /// than `out` holds.
    pub readback: wgpu::Buffer,
    pub v_at: u64,
    pub propagate: Pass,
    pub inject: Pass,
    pub step: Pass,
    pub compact: Pass,
    /// Bytes of all the buffers.
    pub bytes: u64,
}

/// A pipeline and its bind groups (group 0: the brain's sizes, the upload, and for the additions
/// the accumulators; group 1 the pass's own buffers, and any more are other sets of them for group
/// 1: the propagation's over the host's spikes or the device's fired list).
pub(super) struct Pass {
    pub pipeline: wgpu::ComputePipeline,
    groups: Vec<wgpu::BindGroup>,
}

type Entries<'a> = [(u32, &'a wgpu::Buffer)];

fn bind_group(gpu: &WgpuDevice, pipeline: &wgpu::ComputePipeline, label: &str, i: u32, entries: &Entries<'_>) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> =
        entries.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect();
    gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout: &pipeline.get_bind_group_layout(i),
        entries: &entries,
    })
}

impl Pass {
    fn new(
        gpu: &WgpuDevice,
        module: &wgpu::ShaderModule,
        options: &wgpu::PipelineCompilationOptions<'_>,
        entry: &str,
        groups: &[&Entries<'_>],
    ) -> Pass {
        let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: options.clone(),
            cache: None,
        });
        let groups = groups.iter().enumerate().map(|(i, e)| bind_group(gpu, &pipeline, entry, i.min(1) as u32, e)).collect();
        Pass { pipeline, groups }
    }

    /// Record the pass into `pass` with bind group `own` as group 1 (its first set of buffers, or
    /// another: the propagation's over the device's fired list).
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, groups: (u32, u32), own: usize) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.groups[0], &[]);
        if let Some(g) = self.groups.get(own) {
            pass.set_bind_group(1, g, &[]);
        }
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }
}

impl Buffers {
    pub fn new(gpu: &WgpuDevice, part: &Part, params: &[AreaParams], table: &[i32], neurons: u32) -> Result<Buffers, BackendError> {
        let n = neurons as u64;
        let synapses = part.synapses();
        if synapses > u32::MAX as u64 {
            return Err(BackendError::Device(format!(
                "{}: the brain has {synapses} synapses, more than a 32-bit index reaches (split across buffers: not yet)",
                gpu.name
            )));
        }
        gpu.fits("synapse targets", synapses * 4)?;
        gpu.fits("synapse codes", codes_bytes(&part.codes).len() as u64)?;
        gpu.fits("input accumulators", n * 8)?;
        gpu.fits("potentials", n * 8)?;
        let d = &gpu.device;
        let init = |label: &str, bytes: &[u8]| {
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: &padded(bytes), usage: STORAGE })
        };
        let zeroed = |label: &str, size: u64, usage: wgpu::BufferUsages| {
            d.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.next_multiple_of(8).max(16),
                usage,
                mapped_at_creation: false,
            })
        };
        let row_ptr: Vec<u32> = part.row_ptr.iter().map(|&r| r as u32).collect();
        let ends: Vec<u32> = params.iter().map(|p| p.first + p.count).collect();
        let sizes = [neurons, params.len() as u32, matches!(part.codes, Codes::U16(_)) as u32, 0];
        let brain = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("brain"),
            contents: bytemuck::cast_slice(&sizes),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let upload = Mapped::new(gpu, 1024);
        let acc = zeroed("accumulators", n * 8, STORAGE);
        let row_ptr = init("row pointers", bytemuck::cast_slice(&row_ptr));
        let targets = init("targets", bytemuck::cast_slice(&part.targets));
        let codes = init("codes", codes_bytes(&part.codes));
        let table = init("contributions", bytemuck::cast_slice(table));
        let spikes = zeroed("spikes", (n + 1) * 4, STORAGE);
        let areas = init("areas", &areas_bytes(params));
        let area_end = init("area ends", bytemuck::cast_slice(&ends));
        let potential = zeroed("potentials", n * 8, STORAGE);
        let rcc = zeroed("refractory and consecutive", n * 4, STORAGE);
        let fired = zeroed("fired", (n + 1) * 4, STORAGE);
        let fired_v = zeroed("fired potentials", n * 8, STORAGE);
        // the step's bitmap (8 words a workgroup), potentials at fire by neuron, counts by workgroup
        let groups = n.div_ceil(STEP_GROUP as u64);
        let bits = zeroed("fired bits", groups * 32, STORAGE);
        let fire_v = zeroed("potentials at fire", n * 8, STORAGE);
        let counts = zeroed("fired by workgroup", groups * 4, STORAGE);
        let step_area = init("area of each step workgroup", bytemuck::cast_slice(&step_areas(&ends, neurons)));
        let out_room = 1024.min(n);
        let out = zeroed("out", out_bytes(out_room), OUT);
        let v_at = ((n + 1) * 4).next_multiple_of(8);
        let readback = zeroed("readback", v_at + n * 8, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        let acc_add = if d.features().contains(ATOMIC64) { ACC64 } else { ACC32 };
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("burst.wgsl"),
            source: wgpu::ShaderSource::Wgsl(format!("{SOURCE}\n{acc_add}").into()),
        });
        let options = wgpu::PipelineCompilationOptions { zero_initialize_workgroup_memory: false, ..Default::default() };
        let rows: &Entries<'_> = &[(0, &row_ptr), (1, &targets), (2, &codes), (3, &table), (4, &spikes)];
        let rows_fired: &Entries<'_> = &[(0, &row_ptr), (1, &targets), (2, &codes), (3, &table), (4, &fired)];
        let new = |entry, groups: &[&Entries<'_>]| Pass::new(gpu, &module, &options, entry, groups);
        let propagate = new("propagate", &[&[(0, &brain), (2, &acc)], rows, rows_fired]);
        let inject = new("inject", &[&[(1, &upload.buffer), (2, &acc)]]);
        let own: &Entries<'_> = &[
            (7, &areas),
            (8, &area_end),
            (9, &potential),
            (10, &rcc),
            (13, &acc),
            (14, &bits),
            (15, &fire_v),
            (16, &counts),
            (17, &step_area),
        ];
        let step = new("step", &[&[(0, &brain), (1, &upload.buffer)], own]);
        let compact_own = [fired.clone(), fired_v.clone(), bits.clone(), fire_v.clone(), counts.clone(), out.clone()];
        let compact = new("compact", &[&[(0, &brain), (1, &upload.buffer)], &compact_entries(&compact_own)]);
        let all = [&acc, &row_ptr, &targets, &codes, &table, &spikes, &areas, &area_end, &potential, &rcc, &fired, &fired_v, &bits];
        let bytes = all.iter().chain([&&fire_v, &&counts, &&step_area, &&out]).map(|b| b.size()).sum();
        gpu.check("building the brain")?;
        Ok(Buffers {
            brain,
            acc,
            codes,
            spikes,
            upload,
            out,
            out_room,
            compact_own,
            potential,
            rcc,
            fired,
            fired_v,
            readback,
            v_at,
            propagate,
            inject,
            step,
            compact,
            bytes,
        })
    }

    /// Room for `words` words of upload: a larger buffer (and the passes' bind groups over it)
    /// when needed.
    pub fn upload_room(&mut self, gpu: &WgpuDevice, words: u64) -> Result<(), BackendError> {
        if words <= self.upload.room {
            return Ok(());
        }
        let room = words.next_power_of_two();
        gpu.fits("injections of one burst", room * 4)?;
        self.upload = Mapped::new(gpu, room);
        self.bind_group0(gpu);
        Ok(())
    }

    /// Room in `out` for a fired list of `m` ids: a larger buffer (and the compact pass's bind
    /// group over it) when needed.
    pub fn out_room(&mut self, gpu: &WgpuDevice, m: u64) -> Result<(), BackendError> {
        if m <= self.out_room {
            return Ok(());
        }
        gpu.fits("fired list", out_bytes(m))?;
        self.out = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("out"),
            size: out_bytes(m),
            usage: OUT,
            mapped_at_creation: false,
        });
        self.out_room = m;
        self.compact_own[5] = self.out.clone();
        self.compact.groups[1] = bind_group(gpu, &self.compact.pipeline, "compact", 1, &compact_entries(&self.compact_own));
        Ok(())
    }

    /// The passes' group 0 bound again over a new upload buffer.
    fn bind_group0(&mut self, gpu: &WgpuDevice) {
        let (brain, upload, acc) = (&self.brain, &self.upload.buffer, &self.acc);
        self.inject.groups[0] = bind_group(gpu, &self.inject.pipeline, "inject", 0, &[(1, upload), (2, acc)]);
        self.step.groups[0] = bind_group(gpu, &self.step.pipeline, "step", 0, &[(0, brain), (1, upload)]);
        self.compact.groups[0] = bind_group(gpu, &self.compact.pipeline, "compact", 0, &[(0, brain), (1, upload)]);
    }

    /// The accumulators (cleared on a restore).
    pub fn acc(&self) -> &wgpu::Buffer {
        &self.acc
    }
}

/// The compact pass's group 1 over `own` (fired, fired_v, bits, fire_v, counts, out).
fn compact_entries(own: &[wgpu::Buffer; 6]) -> [(u32, &wgpu::Buffer); 6] {
    let [fired, fired_v, bits, fire_v, counts, out] = own;
    [(11, fired), (12, fired_v), (14, bits), (15, fire_v), (16, counts), (18, out)]
}

/// The area of each step workgroup's neurons (`STEP_GROUP` of them) where they lie in one, else
/// `u32::MAX` (its threads search for theirs); `ends`: each area's end, ascending.
fn step_areas(ends: &[u32], neurons: u32) -> Vec<u32> {
    let area = |n: u32| ends.partition_point(|&e| e <= n);
    (0..neurons.div_ceil(STEP_GROUP))
        .map(|g| {
            let first = g * STEP_GROUP;
            let last = (first + STEP_GROUP).min(neurons) - 1;
            let a = area(first);
            if a == area(last) {
                a as u32
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// A buffer the host writes while it is mapped and the shaders read where it is (the burst's
/// upload): unmapped for the submission that reads it, mapped again once that is done (the
/// read-back waits for it anyway).
pub(super) struct Mapped {
    pub buffer: wgpu::Buffer,
    /// Words it holds.
    pub room: u64,
    /// [`MAPPED`], [`PENDING`] (its map asked for) or [`FAILED`].
    state: Arc<AtomicU8>,
}

const MAPPED: u8 = 0;
const PENDING: u8 = 1;
const FAILED: u8 = 2;

impl Mapped {
    fn new(gpu: &WgpuDevice, words: u64) -> Mapped {
        let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("upload"),
            size: words * 4,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: true,
        });
        Mapped { buffer, room: words, state: Arc::new(AtomicU8::new(MAPPED)) }
    }

    /// `words` written at its start and the buffer unmapped for the submission that reads them;
    /// waits (polls the device) while the last submission that read it is not done yet; an error
    /// when the buffer could not be mapped again.
    pub fn put(&self, gpu: &WgpuDevice, words: &[u32]) -> Result<(), BackendError> {
        loop {
            match self.state.load(Ordering::Acquire) {
                MAPPED => break,
                FAILED => return Err(BackendError::Device(format!("{}: the upload buffer could not be mapped again", gpu.name))),
                _ => {
                    gpu.device.poll(wgpu::PollType::Poll).map_err(|e| BackendError::Device(format!("{}: {e}", gpu.name)))?;
                    gpu.check("mapping the upload")?;
                }
            }
        }
        let bytes = std::mem::size_of_val(words) as u64;
        if bytes > 0 {
            let mut view = self
                .buffer
                .slice(..bytes)
                .get_mapped_range_mut()
                .map_err(|e| BackendError::Device(format!("{}: writing the upload: {e}", gpu.name)))?;
            view.copy_from_slice(bytemuck::cast_slice(words));
        }
        self.buffer.unmap();
        self.state.store(PENDING, Ordering::Release);
        Ok(())
    }

    /// Map it again (after the submission that reads it).
    pub fn remap(&self) {
        let state = self.state.clone();
        self.buffer
            .slice(..)
            .map_async(wgpu::MapMode::Write, move |r| state.store(if r.is_ok() { MAPPED } else { FAILED }, Ordering::Release));
    }
}

/// Bytes of the passes' timestamps (a start and an end each, 8 bytes a timestamp).
pub(super) const TIMESTAMP_BYTES: u64 = super::trace::PASSES.len() as u64 * 2 * 8;
