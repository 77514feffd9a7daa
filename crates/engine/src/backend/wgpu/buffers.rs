//! The brain on the device: its buffers, the three pipelines of `kernels/burst.wgsl` and their
//! bind groups.

use wgpu::util::DeviceExt;

use super::device::WgpuDevice;
use crate::backend::BackendError;
use crate::connectome::{Codes, Part};
use crate::model::AreaParams;

/// The kernels, compiled by the driver when the backend starts.
const SOURCE: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/burst.wgsl"));

/// Threads of a workgroup (`@workgroup_size` in burst.wgsl).
pub(super) const GROUP: u32 = 64;

/// Bytes of the `Burst` uniform.
pub(super) const BURST_BYTES: u64 = 32;

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
    pub burst: wgpu::Buffer,
    pub acc: wgpu::Buffer,
    pub codes: wgpu::Buffer,
    pub spikes: wgpu::Buffer,
    pub inj_ids: wgpu::Buffer,
    pub inj_v: wgpu::Buffer,
    /// Injections the two buffers above hold.
    pub inj_room: u64,
    pub potential: wgpu::Buffer,
    pub rcc: wgpu::Buffer,
    /// `[count, fired...]`, and the fired neurons' potentials.
    pub fired: wgpu::Buffer,
    pub fired_v: wgpu::Buffer,
    /// Where the host reads the fired lists and the state: ids at 0, potentials at `v_at`.
    pub readback: wgpu::Buffer,
    pub v_at: u64,
    /// Areas, and whether a code is 16 bits (1) or 32 (0), for the `Burst` uniform.
    pub areas: u32,
    pub codes16: u32,
    pub propagate: Pass,
    pub inject: Pass,
    pub step: Pass,
    /// Bytes of all the buffers.
    pub bytes: u64,
}

/// A pipeline and its two bind groups (group 0: the uniform and the accumulators).
pub(super) struct Pass {
    pub pipeline: wgpu::ComputePipeline,
    pub groups: [wgpu::BindGroup; 2],
}

impl Pass {
    fn new(gpu: &WgpuDevice, module: &wgpu::ShaderModule, entry: &str, common: [&wgpu::Buffer; 2], own: &[(u32, &wgpu::Buffer)]) -> Pass {
        let pipeline = gpu.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: None,
            module,
            entry_point: Some(entry),
            compilation_options: Default::default(),
            cache: None,
        });
        let group = |i: u32, entries: &[(u32, &wgpu::Buffer)]| {
            let entries: Vec<wgpu::BindGroupEntry<'_>> =
                entries.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect();
            gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(entry),
                layout: &pipeline.get_bind_group_layout(i),
                entries: &entries,
            })
        };
        let groups = [group(0, &[(0, common[0]), (1, common[1])]), group(1, own)];
        Pass { pipeline, groups }
    }

    pub fn run(&self, encoder: &mut wgpu::CommandEncoder, groups: (u32, u32)) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.groups[0], &[]);
        pass.set_bind_group(1, &self.groups[1], &[]);
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
        let burst = zeroed("burst", BURST_BYTES, wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST);
        let acc = zeroed("accumulators", n * 8, STORAGE);
        let row_ptr = init("row pointers", bytemuck::cast_slice(&row_ptr));
        let targets = init("targets", bytemuck::cast_slice(&part.targets));
        let codes = init("codes", codes_bytes(&part.codes));
        let table = init("contributions", bytemuck::cast_slice(table));
        let spikes = zeroed("spikes", n * 4, STORAGE);
        let areas = init("areas", &areas_bytes(params));
        let area_end = init("area ends", bytemuck::cast_slice(&ends));
        let potential = zeroed("potentials", n * 8, STORAGE);
        let rcc = zeroed("refractory and consecutive", n * 4, STORAGE);
        let fired = zeroed("fired", (n + 1) * 4, STORAGE);
        let fired_v = zeroed("fired potentials", n * 8, STORAGE);
        let v_at = ((n + 1) * 4).next_multiple_of(8);
        let readback = zeroed("readback", v_at + n * 8, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        let (inj_ids, inj_v) = (zeroed("injected ids", 4, STORAGE), zeroed("injected potentials", 8, STORAGE));
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("burst.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SOURCE.into()),
        });
        let common = [&burst, &acc];
        let propagate =
            Pass::new(gpu, &module, "propagate", common, &[(0, &row_ptr), (1, &targets), (2, &codes), (3, &table), (4, &spikes)]);
        let inject = Pass::new(gpu, &module, "inject", common, &[(5, &inj_ids), (6, &inj_v)]);
        let step = Pass::new(
            gpu,
            &module,
            "step",
            common,
            &[(7, &areas), (8, &area_end), (9, &potential), (10, &rcc), (11, &fired), (12, &fired_v)],
        );
        let bytes = [&acc, &row_ptr, &targets, &codes, &table, &spikes, &areas, &area_end, &potential, &rcc, &fired, &fired_v]
            .iter()
            .map(|b| b.size())
            .sum();
        gpu.check("building the brain")?;
        Ok(Buffers {
            burst,
            acc,
            codes,
            spikes,
            inj_ids,
            inj_v,
            inj_room: 1,
            potential,
            rcc,
            fired,
            fired_v,
            readback,
            v_at,
            areas: params.len() as u32,
            codes16: matches!(part.codes, Codes::U16(_)) as u32,
            propagate,
            inject,
            step,
            bytes,
        })
    }

    /// Room for `k` injections: larger buffers (and the inject pass's bind group) when needed.
    pub fn inj_room(&mut self, gpu: &WgpuDevice, k: u64) -> Result<(), BackendError> {
        if k <= self.inj_room {
            return Ok(());
        }
        let room = k.next_power_of_two();
        gpu.fits("injections of one burst", room * 8)?;
        let d = &gpu.device;
        // (at least 16 bytes: a write is padded to that, see `padded`)
        let make = |label: &str, size: u64| {
            d.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: size.max(16), usage: STORAGE, mapped_at_creation: false })
        };
        self.inj_ids = make("injected ids", room * 4);
        self.inj_v = make("injected potentials", room * 8);
        self.inj_room = room;
        let own = [(5, &self.inj_ids), (6, &self.inj_v)];
        let entries: Vec<wgpu::BindGroupEntry<'_>> =
            own.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect();
        let layout = self.inject.pipeline.get_bind_group_layout(1);
        self.inject.groups[1] =
            d.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("inject"), layout: &layout, entries: &entries });
        Ok(())
    }
}
