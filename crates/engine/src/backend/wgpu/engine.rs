//! [`WgpuEngine`]: a whole brain on one wgpu device. A burst is one upload (its header and
//! injections, written into a buffer the host maps and the shaders read), one submission of one
//! compute pass (propagation, injection, step, the fired list put in ascending order on the device
//! and written where the host maps it), then that list copied out as it is. The device keeps its
//! fired list as the next burst's spikes (the propagation reads it where it is), so spikes go up
//! from the host only after a restore; a brain that does not learn propagates them ahead, in a second submission, while the
//! host reads the burst back. A brain that learns learns on the host, as
//! the CPU backend does (the shared learner, `backend/learn/`), and its synapses' codes go to the
//! device before the burst that uses them.

use std::ops::Range;

use super::buffers::{codes_bytes, fired_bytes, fired_v_at, padded, Buffers, Pass, COMPACT_GROUPS, GROUP, HEADER_WORDS, STEP_GROUP};
use super::device::WgpuDevice;
use super::trace::WgpuTrace;
use crate::backend::cpu::Regen;
use crate::backend::learn::{Deferred, Learner, Scatter};
use crate::backend::shard::ShardEngine;
use crate::backend::{BackendError, BackendInfo};
use crate::connectome::Part;
use crate::model::{InjectionSlice, NeuronState, Values};

/// What a brain that learns keeps on the host: its synapses (the learner changes their codes).
struct HostLearning {
    learner: Learner,
    part: Part,
    deferred: Deferred,
    /// The learning from the last burst is done (see [`ShardEngine::learn_ahead`]).
    ahead: bool,
}

/// The rows that fired: the device propagates them from their codes, so the learner's hand-over
/// is not needed here.
struct OnDevice;

impl Scatter for OnDevice {
    fn row<C: Copy + Into<u32>>(&mut self, _targets: &[u32], _codes: &[C]) {}
    fn changed(&mut self, _target: u32, _was: u32, _now: u32) {}
}

/// A brain on one wgpu device.
pub struct WgpuEngine {
    gpu: WgpuDevice,
    buf: Buffers,
    neurons: u32,
    synapses: u64,
    learning: Option<HostLearning>,
    /// The procedural synapses of the last burst's spikes, drawn again on the host (the CPU
    /// backend's draw) and added on the device with the injections.
    regen: Regen,
    /// The burst's upload (burst.wgsl's `Upload`), as words.
    up: Vec<u32>,
    /// The device's fired list holds this engine's `fired`: the next burst's spikes, when they
    /// are these, are read from it on the device.
    kept: bool,
    /// The accumulators hold the propagation of the device's fired list (run ahead).
    propagated: bool,
    trace: Option<WgpuTrace>,
    /// Fired neurons read back from the last burst (ascending), and how many to copy at first
    /// (grows to the most seen).
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    expect: u64,
}

/// The `count` fired ids and their potentials from a read-back of a list copied with `m` ids
/// (see [`fired_v_at`]).
fn take_fired(bytes: &[u8], count: usize, m: u64, ids: &mut Vec<u32>, vs: &mut Vec<i64>) {
    let v_at = fired_v_at(m) as usize;
    let (id_bytes, v_bytes) = (&bytes[4..4 + count * 4], &bytes[v_at..v_at + count * 8]);
    ids.clear();
    vs.clear();
    // a copy where the mapping is aligned (wgpu maps at 8-byte boundaries), else word by word
    match bytemuck::try_cast_slice::<u8, u32>(id_bytes) {
        Ok(w) => ids.extend_from_slice(w),
        Err(_) => ids.extend(id_bytes.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))),
    }
    match bytemuck::try_cast_slice::<u8, i64>(v_bytes) {
        Ok(w) => vs.extend_from_slice(w),
        Err(_) => vs.extend(v_bytes.chunks_exact(8).map(|w| i64::from_le_bytes(w.try_into().expect("8 bytes")))),
    }
}

/// `groups` workgroups as a grid the device takes (at most `max` along a dimension).
fn grid(groups: u64, max: u32) -> (u32, u32) {
    let x = groups.clamp(1, max as u64);
    (x as u32, groups.div_ceil(x).max(1) as u32)
}

/// Record `p` (the trace's pass `i`) into `pass` with bind group `own` as group 1, between its
/// timestamps when traced.
fn record(trace: Option<&WgpuTrace>, pass: &mut wgpu::ComputePass<'_>, i: usize, p: &Pass, groups: (u32, u32), own: usize) {
    if let Some(tr) = trace {
        tr.stamp(pass, i, false);
    }
    p.record(pass, groups, own);
    if let Some(tr) = trace {
        tr.stamp(pass, i, true);
    }
}

fn device_err<'a>(gpu: &'a WgpuDevice, what: &'a str) -> impl Fn(String) -> BackendError + 'a {
    move |e| BackendError::Device(format!("{} ({what}): {e}", gpu.name))
}

impl WgpuEngine {
    /// The brain's one part (`parts` of one), its areas and contribution table onto the device.
    pub(super) fn new(
        gpu: WgpuDevice,
        mut parts: Vec<Part>,
        params: Vec<crate::model::AreaParams>,
        table: Vec<i32>,
        plastic: Option<crate::connectome::Plastic>,
        procedural: Option<std::sync::Arc<crate::connectome::Procedural>>,
        neurons: u32,
    ) -> Result<WgpuEngine, BackendError> {
        if parts.len() != 1 || parts[0].targets_range != (0..neurons) {
            return Err(BackendError::Device("the wgpu backend takes a brain built in one part".into()));
        }
        let part = parts.pop().expect("one part");
        let buf = Buffers::new(&gpu, &part, &params, &table, neurons)?;
        let trace = WgpuTrace::new(&gpu);
        let synapses = part.synapses();
        let learning =
            plastic.map(|p| HostLearning { learner: Learner::new(p, neurons), deferred: Deferred::of(&part), part, ahead: false });
        Ok(WgpuEngine {
            gpu,
            buf,
            neurons,
            synapses,
            learning,
            regen: Regen::new(procedural, 0..neurons, vec![0]),
            up: Vec::new(),
            kept: false,
            propagated: false,
            trace,
            fired: Vec::new(),
            fired_v: Vec::new(),
            expect: 1024,
        })
    }

    /// HostLearning after burst `t - 1`, whose firing is `spikes` (as the CPU backend's), the
    /// synapses' new codes then sent to the device.
    fn learn(&mut self, t: u64, spikes: &[u32]) {
        let Some(l) = &mut self.learning else { return };
        if std::mem::take(&mut l.ahead) {
            return;
        }
        l.learner.record(t.saturating_sub(1), spikes);
        if t < 2 || !l.learner.switch.learns(t - 1) {
            return;
        }
        l.learner.grow(t - 1);
        l.learner.update(t - 1, &mut l.part, &mut l.deferred, &mut OnDevice);
        l.learner.apply_growth(&mut l.part, &mut l.deferred, &mut OnDevice);
        self.gpu.queue.write_buffer(&self.buf.codes, 0, &padded(codes_bytes(&l.part.codes)));
    }

    fn write<T: bytemuck::Pod>(&self, buffer: &wgpu::Buffer, data: &[T]) {
        if !data.is_empty() {
            self.gpu.queue.write_buffer(buffer, 0, &padded(bytemuck::cast_slice(data)));
        }
    }

    /// Copy the fired list's count and its first `m` ids to the readback buffer, and their
    /// potentials after them (at [`fired_v_at`]); returns the bytes to read.
    fn copy_fired(&self, encoder: &mut wgpu::CommandEncoder, m: u64) -> u64 {
        let b = &self.buf;
        encoder.copy_buffer_to_buffer(&b.fired, 0, &b.readback, 0, (1 + m) * 4);
        if m > 0 {
            encoder.copy_buffer_to_buffer(&b.fired_v, 0, &b.readback, fired_v_at(m), m * 8);
        }
        fired_bytes(m)
    }

    /// Burst `t`'s upload into `up` (burst.wgsl's `Upload`): the header (with `m`, the fired the
    /// host reads from `out`), the spikes' count and
    /// the spikes unless the device `kept` them, the injected ids (the input's, then the
    /// procedural synapses' targets) and their potentials as (low, high) words, 8-byte aligned
    /// (or their one potential in the header). Returns the injections.
    fn upload(&mut self, t: u64, spikes: &[u32], kept: bool, input: InjectionSlice<'_>, m: u64) -> Result<u64, BackendError> {
        let drawn = self.regen.drawn(0).count() as u64;
        let k = input.len() as u64 + drawn;
        let s = if kept { 0 } else { 1 + spikes.len() as u64 };
        let inj_at = HEADER_WORDS as u64 + s;
        // one potential for every injection (a sensor's spikes, the benchmark's) goes in the header
        let same = match input.values() {
            Values::Same(p) if drawn == 0 => Some(p.0),
            _ => None,
        };
        let inj_v_at = (inj_at + k).next_multiple_of(2);
        let words =
            k.checked_mul(if same.is_some() { 0 } else { 2 }).and_then(|w| w.checked_add(inj_v_at)).filter(|&w| w <= u32::MAX as u64);
        let Some(words) = words else {
            return Err(BackendError::Device(format!("{}: {k} injections and {s} spikes in one burst", self.gpu.name)));
        };
        self.buf.upload_room(&self.gpu, words)?;
        let up = &mut self.up;
        up.clear();
        // (the header's places count from the end of the header: burst.wgsl's `words`)
        let h = HEADER_WORDS as u64;
        let (one, v) = same.map_or((0, 0), |v| (1, v));
        up.extend_from_slice(&[t as u32, k as u32, (inj_at - h) as u32, (inj_v_at - h) as u32, one, v as u32, (v >> 32) as u32, m as u32]);
        if !kept {
            up.push(spikes.len() as u32);
            up.extend_from_slice(spikes);
        }
        up.extend_from_slice(input.ids());
        up.extend(self.regen.drawn(0).map(|(target, _)| target));
        if same.is_some() {
            return Ok(k);
        }
        up.resize(inj_v_at as usize, 0);
        let mut value = |v: i64| up.extend_from_slice(&[v as u32, (v >> 32) as u32]);
        match input.values() {
            Values::Each(v) => v.iter().for_each(|&v| value(v)),
            Values::Same(p) => (0..input.len()).for_each(|_| value(p.0)),
        }
        self.regen.drawn(0).for_each(|(_, c)| value(c as i64));
        Ok(k)
    }

    /// Stage `i` of the trace ends (NEUROBURST_WGPU_TRACE=1).
    fn mark(&mut self, i: usize) {
        if let Some(tr) = &mut self.trace {
            tr.mark(i);
        }
    }
}

impl Drop for WgpuEngine {
    fn drop(&mut self) {
        if let Some(tr) = &self.trace {
            eprintln!("wgpu trace: {}", tr.summary());
        }
    }
}

impl ShardEngine for WgpuEngine {
    fn range(&self) -> Range<u32> {
        0..self.neurons
    }

    fn info(&self) -> BackendInfo {
        let bytes = self.buf.bytes;
        BackendInfo {
            backend: "wgpu".into(),
            device: self.gpu.name.clone(),
            memory_bytes: bytes,
            bytes_per_synapse: if self.synapses == 0 { 0.0 } else { bytes as f64 / self.synapses as f64 },
        }
    }

    fn burst(&mut self, t: u64, spikes: &[u32], input: InjectionSlice<'_>) -> Result<(), BackendError> {
        if spikes.len() > self.neurons as usize {
            return Err(BackendError::Device(format!("{} spikes for a brain of {} neurons", spikes.len(), self.neurons)));
        }
        if let Some(tr) = &mut self.trace {
            tr.start();
        }
        self.learn(t, spikes);
        self.regen.draw(spikes);
        let kept = self.kept && spikes == self.fired.as_slice();
        let s = spikes.len() as u64;
        let m = self.expect.min(self.neurons as u64);
        self.buf.out_room(&self.gpu, m)?;
        let k = self.upload(t, spikes, kept, input, m)?;
        self.buf.upload.put(&self.gpu, &self.up)?;
        self.mark(0);
        let b = &self.buf;
        let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
        let max = self.gpu.limits.max_compute_workgroups_per_dimension;
        let tr = self.trace.as_ref();
        // the spikes: propagated ahead already (the last burst's fired list, as asked), else from
        // the device's fired list, else from the host's (after a restore); an ahead propagation of
        // other spikes than asked is cleared (no caller does that: the brain's spikes are its fired)
        let ahead = self.propagated && kept;
        if self.propagated && !kept {
            encoder.clear_buffer(b.acc(), 0, None);
        }
        let propagates = !ahead && s > 0;
        if propagates && !kept {
            encoder.copy_buffer_to_buffer(&b.upload.buffer, HEADER_WORDS as u64 * 4, &b.spikes, 0, (1 + s) * 4);
        }
        let stepped = self.neurons > 0;
        {
            // the passes in one compute pass (wgpu puts a barrier between its dispatches)
            let mut pass = encoder.begin_compute_pass(&Default::default());
            let mut run = |i: usize, p: &Pass, groups: (u32, u32), own: usize| record(tr, &mut pass, i, p, groups, own);
            if propagates {
                run(0, &b.propagate, (grid(s, max).0, 1), if kept { 2 } else { 1 });
            }
            if k > 0 {
                run(1, &b.inject, grid(k.div_ceil(GROUP as u64), max), 1);
            }
            if stepped {
                // the step, then its fired list in ascending order
                let groups = (self.neurons as u64).div_ceil(STEP_GROUP as u64);
                run(2, &b.step, grid(groups, max), 1);
                run(3, &b.compact, grid(groups.div_ceil(COMPACT_GROUPS), max), 1);
            }
        }
        // (propagated ahead: the trace's propagation time is the last burst's second submission)
        let ran = [propagates || self.propagated, k > 0, stepped, stepped];
        let span = fired_bytes(m);
        let read = tr.map_or(span, |tr| tr.resolve(&mut encoder, &b.out, span));
        let commands = encoder.finish();
        self.mark(1);
        let burst = self.gpu.queue.submit([commands]);
        self.buf.upload.remap();
        self.mark(2);
        let b = &self.buf;
        // the next burst's propagation of this one's fired list, while the host reads it back (a
        // brain that learns changes its codes first)
        let propagate_ahead = self.learning.is_none() && stepped;
        if propagate_ahead {
            let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                record(self.trace.as_ref(), &mut pass, 0, &b.propagate, (grid(s.max(1), max).0, 1), 2);
            }
            self.gpu.queue.submit([encoder.finish()]);
        }
        self.mark(3);
        // (the device's fired list is no longer the last one, whatever comes of the read)
        self.kept = false;
        self.propagated = false;
        self.gpu.map(&self.buf.out, read, Some(burst))?;
        self.mark(4);
        let (neurons, name) = (self.neurons, &self.gpu.name);
        let (fired, fired_v, trace) = (&mut self.fired, &mut self.fired_v, &mut self.trace);
        let count = self.gpu.view(&self.buf.out, read, |bytes| {
            if let Some(tr) = trace {
                tr.passes(&bytes[span as usize..], ran);
            }
            let count = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as u64;
            if count <= m {
                take_fired(bytes, count as usize, m, fired, fired_v);
            }
            count
        })?;
        if count > neurons as u64 {
            return Err(BackendError::Device(format!("{name}: {count} neurons fired in a brain of {neurons}")));
        }
        if count > m {
            // more fired than `out` holds: copy and read them all
            let m = count;
            let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
            let span = self.copy_fired(&mut encoder, m);
            self.gpu.queue.submit([encoder.finish()]);
            self.gpu.map(&self.buf.readback, span, None)?;
            let (fired, fired_v) = (&mut self.fired, &mut self.fired_v);
            self.gpu.view(&self.buf.readback, span, |bytes| take_fired(bytes, count as usize, m, fired, fired_v))?;
            self.expect = count.next_power_of_two();
        }
        // ascending (by construction: `compact`), so the last is the largest
        if let Some(&id) = self.fired.last().filter(|&&id| id >= neurons) {
            return Err(BackendError::Device(format!("{name}: neuron {id} fired in a brain of {neurons}")));
        }
        self.kept = true;
        self.propagated = propagate_ahead;
        self.mark(5);
        Ok(())
    }

    fn fired(&self) -> (&[u32], &[i64]) {
        (&self.fired, &self.fired_v)
    }

    fn set_learning(&mut self, on: bool, last: u64) -> Result<(), BackendError> {
        if let Some(l) = &mut self.learning {
            l.learner.switch.set(on, last);
        }
        Ok(())
    }

    fn learn_ahead(&mut self, t: u64, spikes: &[u32]) {
        if self.learning.as_ref().is_some_and(|l| !l.ahead) {
            self.learn(t, spikes);
            if let Some(l) = &mut self.learning {
                l.ahead = true;
            }
        }
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let n = self.neurons as u64;
        let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&self.buf.rcc, 0, &self.buf.readback, 0, n * 4);
        encoder.copy_buffer_to_buffer(&self.buf.potential, 0, &self.buf.readback, self.buf.v_at, n * 8);
        self.gpu.queue.submit([encoder.finish()]);
        let span = self.buf.v_at + n * 8;
        self.gpu.map(&self.buf.readback, span, None)?;
        let v_at = self.buf.v_at as usize;
        let (rcc, potential): (Vec<u32>, Vec<i64>) = self.gpu.view(&self.buf.readback, span, |bytes| {
            (bytemuck::pod_collect_to_vec(&bytes[..n as usize * 4]), bytemuck::pod_collect_to_vec(&bytes[v_at..v_at + n as usize * 8]))
        })?;
        let mut st = NeuronState {
            potential,
            refractory: rcc.iter().map(|&w| w as u16).collect(),
            consecutive: rcc.iter().map(|&w| (w >> 16) as u16).collect(),
            fired: self.fired.clone(),
            ..Default::default()
        };
        if let Some(l) = &self.learning {
            st.learned = l.learner.snapshot(&[(&l.part, &l.deferred)]);
            st.learned.ahead = l.ahead;
        }
        Ok(st)
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        crate::backend::shard::check_lengths(st, self.neurons as usize)?;
        let rcc: Vec<u32> = st.refractory.iter().zip(&st.consecutive).map(|(&r, &c)| r as u32 | (c as u32) << 16).collect();
        self.write(&self.buf.potential, &st.potential);
        self.write(&self.buf.rcc, &rcc);
        self.gpu.queue.write_buffer(self.buf.acc(), 0, &vec![0u8; self.neurons as usize * 8]);
        self.kept = false;
        self.propagated = false;
        if let Some(l) = &mut self.learning {
            let mut parts = [(&mut l.part, &mut l.deferred)];
            l.learner.restore(&st.learned, &mut parts).map_err(device_err(&self.gpu, "restoring what the brain learned"))?;
            l.ahead = st.learned.ahead;
            self.gpu.queue.write_buffer(&self.buf.codes, 0, &padded(codes_bytes(&l.part.codes)));
        }
        self.gpu.wait()?;
        self.gpu.check("restoring the state")
    }
}
