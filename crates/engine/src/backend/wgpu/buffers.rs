//! The brain on the device: its buffers, the three pipelines of `kernels/burst.wgsl` and their
//! bind groups. What changes every burst goes up in one buffer (`upload`), through a staging buffer
//! of our own ([`Stage`]): each `write_buffer` costs wgpu a staging buffer of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use wgpu::util::DeviceExt;

use super::device::WgpuDevice;
use crate::backend::BackendError;
use crate::connectome::{Codes, Part};
use crate::model::AreaParams;

/// The kernels, compiled by the driver when the backend starts.
const SOURCE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/burst.wgsl"));

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
    pub upload: wgpu::Buffer,
    /// Words `upload` holds.
    upload_room: u64,
    pub stage: Stage,
    pub potential: wgpu::Buffer,
    pub rcc: wgpu::Buffer,
    /// `[count, fired...]` ascending, and the fired neurons' potentials.
    pub fired: wgpu::Buffer,
    pub fired_v: wgpu::Buffer,
    /// Where the host reads the fired lists and the state: ids at 0, potentials at `v_at`.
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
    fn new(gpu: &WgpuDevice, module: &wgpu::ShaderModule, entry: &str, groups: &[&Entries<'_>]) -> Pass {
        let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        let groups = groups.iter().enumerate().map(|(i, e)| bind_group(gpu, &pipeline, entry, i.min(1) as u32, e)).collect();
        Pass { pipeline, groups }
    }

    /// Record the pass with its first set of buffers for group 1 (see [`Pass::run_with`]).
    pub fn run(&self, encoder: &mut wgpu::CommandEncoder, groups: (u32, u32), timestamps: Option<(&wgpu::QuerySet, u32)>) {
        self.run_with(encoder, groups, timestamps, 1);
    }

    /// Record the pass with bind group `own` as group 1; `timestamps`: the query set and the pair
    /// of its queries to write the pass's start and end into (NEUROBURST_WGPU_TRACE=1).
    pub fn run_with(&self, encoder: &mut wgpu::CommandEncoder, groups: (u32, u32), timestamps: Option<(&wgpu::QuerySet, u32)>, own: usize) {
        let timestamp_writes = timestamps.map(|(query_set, i)| wgpu::ComputePassTimestampWrites {
            query_set,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        });
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
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
        let upload_room = 1024;
        let upload = zeroed("upload", upload_room * 4, STORAGE);
        let stage = Stage::new(gpu, upload_room * 4);
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
        let v_at = ((n + 1) * 4).next_multiple_of(8);
        // (and room after the fired list for the passes' timestamps: NEUROBURST_WGPU_TRACE=1)
        let readback = zeroed("readback", v_at + n * 8 + TIMESTAMP_BYTES, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("burst.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SOURCE.into()),
        });
        let rows: &Entries<'_> = &[(0, &row_ptr), (1, &targets), (2, &codes), (3, &table), (4, &spikes)];
        let rows_fired: &Entries<'_> = &[(0, &row_ptr), (1, &targets), (2, &codes), (3, &table), (4, &fired)];
        let propagate = Pass::new(gpu, &module, "propagate", &[&[(0, &brain), (2, &acc)], rows, rows_fired]);
        let inject = Pass::new(gpu, &module, "inject", &[&[(1, &upload), (2, &acc)]]);
        let own: &Entries<'_> =
            &[(7, &areas), (8, &area_end), (9, &potential), (10, &rcc), (13, &acc), (14, &bits), (15, &fire_v), (16, &counts)];
        let step = Pass::new(gpu, &module, "step", &[&[(0, &brain), (1, &upload)], own]);
        let own: &Entries<'_> = &[(11, &fired), (12, &fired_v), (14, &bits), (15, &fire_v), (16, &counts)];
        let compact = Pass::new(gpu, &module, "compact", &[&[(0, &brain)], own]);
        let all = [&acc, &row_ptr, &targets, &codes, &table, &spikes, &areas, &area_end, &potential, &rcc, &fired, &fired_v, &bits];
        let bytes = all.iter().chain([&&fire_v, &&counts]).map(|b| b.size()).sum();
        gpu.check("building the brain")?;
        Ok(Buffers {
            brain,
            acc,
            codes,
            spikes,
            upload,
            upload_room,
            stage,
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
        if words <= self.upload_room {
            return Ok(());
        }
        let room = words.next_power_of_two();
        gpu.fits("injections of one burst", room * 4)?;
        self.upload = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("upload"),
            size: room * 4,
            usage: STORAGE,
            mapped_at_creation: false,
        });
        self.upload_room = room;
        self.stage = Stage::new(gpu, room * 4);
        let (brain, upload, acc) = (&self.brain, &self.upload, &self.acc);
        self.inject.groups[0] = bind_group(gpu, &self.inject.pipeline, "inject", 0, &[(1, upload), (2, acc)]);
        self.step.groups[0] = bind_group(gpu, &self.step.pipeline, "step", 0, &[(0, brain), (1, upload)]);
        Ok(())
    }

    /// The accumulators (cleared on a restore).
    pub fn acc(&self) -> &wgpu::Buffer {
        &self.acc
    }
}

/// The upload's staging buffer (MAP_WRITE): written while mapped, copied into the upload on the
/// device, and mapped again once that submission is done (the read-back waits for it anyway), so a
/// burst costs no staging buffer of wgpu's.
pub(super) struct Stage {
    buffer: wgpu::Buffer,
    mapped: Arc<AtomicBool>,
}

impl Stage {
    fn new(gpu: &WgpuDevice, bytes: u64) -> Stage {
        let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("upload stage"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: true,
        });
        Stage { buffer, mapped: Arc::new(AtomicBool::new(true)) }
    }

    /// `words` into the stage and their copy into `dst` recorded; false (nothing done) when the
    /// stage is not mapped (then the caller writes through the queue).
    pub fn put(&self, encoder: &mut wgpu::CommandEncoder, words: &[u32], dst: &wgpu::Buffer) -> bool {
        let bytes = std::mem::size_of_val(words) as u64;
        if bytes == 0 || bytes > self.buffer.size() || !self.mapped.load(Ordering::Acquire) {
            return false;
        }
        match self.buffer.slice(..bytes).get_mapped_range_mut() {
            Ok(mut view) => view.copy_from_slice(bytemuck::cast_slice(words)),
            Err(_) => return false,
        }
        self.buffer.unmap();
        self.mapped.store(false, Ordering::Release);
        encoder.copy_buffer_to_buffer(&self.buffer, 0, dst, 0, bytes);
        true
    }

    /// Map the stage again (after the submission of a [`Stage::put`]'s copy: done with it).
    pub fn remap(&self) {
        let mapped = self.mapped.clone();
        self.buffer.slice(..).map_async(wgpu::MapMode::Write, move |r| mapped.store(r.is_ok(), Ordering::Release));
    }
}

/// Bytes of the passes' timestamps (a start and an end each, 8 bytes a timestamp).
pub(super) const TIMESTAMP_BYTES: u64 = super::trace::PASSES.len() as u64 * 2 * 8;
