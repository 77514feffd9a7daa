//! [`WgpuEngine`]: a whole brain on one wgpu device. A burst is one submission (propagation,
//! injection, step), then the fired list read back (its ids and potentials only) and put in
//! ascending order by rank in a bitmap of the brain's neurons. A brain that learns learns on the
//! host, as the CPU backend does (the shared learner, `backend/learn/`), and its synapses' codes go
//! to the device before the burst that uses them.

use std::ops::Range;

use super::buffers::{codes_bytes, padded, Buffers, BURST_BYTES, GROUP};
use super::device::WgpuDevice;
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
    inj_ids: Vec<u32>,
    /// Fired neurons read back from the last burst, how many to copy at first (grows to the most
    /// seen), and scratch.
    fired: Vec<u32>,
    fired_v: Vec<i64>,
    expect: u64,
    bytes: Vec<u8>,
    /// The fired list as read back (in the device's order), then put in order.
    read: (Vec<u32>, Vec<i64>),
    order: Order,
    same: Vec<i64>,
}

/// The fired list in ascending order of neuron: each id's rank among the fired is the count of
/// fired ids below it, from a bitmap of the brain's neurons (a bit a neuron) and the running count
/// of its words; linear in the neurons / 64 and the fired, against a comparison sort's
/// n log n (one H200's host, W(1M)'s 10k fired: 297 us sorted, a radix sort 117 us).
#[derive(Default)]
struct Order {
    bits: Vec<u64>,
    below: Vec<u32>,
}

impl Order {
    /// `ids` (distinct, each below the bitmap's neurons) and their potentials `vs` into `out_ids`
    /// and `out_vs`, ascending.
    fn sort(&mut self, neurons: u32, ids: &[u32], vs: &[i64], out_ids: &mut Vec<u32>, out_vs: &mut Vec<i64>) {
        let words = (neurons as usize).div_ceil(64);
        self.bits.resize(words, 0);
        self.below.resize(words, 0);
        for &id in ids {
            self.bits[id as usize / 64] |= 1 << (id % 64);
        }
        let mut run = 0u32;
        for (b, &w) in self.below.iter_mut().zip(&self.bits) {
            *b = run;
            run += w.count_ones();
        }
        out_ids.clear();
        out_ids.resize(ids.len(), 0);
        out_vs.clear();
        out_vs.resize(ids.len(), 0);
        for (&id, &v) in ids.iter().zip(vs) {
            let w = id as usize / 64;
            let rank = self.below[w] + (self.bits[w] & ((1u64 << (id % 64)) - 1)).count_ones();
            out_ids[rank as usize] = id;
            out_vs[rank as usize] = v;
        }
        for &id in ids {
            self.bits[id as usize / 64] = 0;
        }
    }
}

/// Where the readback holds the potentials of a fired list copied with `m` ids: after the count
/// and the ids, 8-byte aligned (at most the snapshot's `v_at`: the buffer holds both layouts).
fn fired_v_at(m: u64) -> u64 {
    ((1 + m) * 4).next_multiple_of(8)
}

/// `groups` workgroups as a grid the device takes (at most `max` along a dimension).
fn grid(groups: u64, max: u32) -> (u32, u32) {
    let x = groups.clamp(1, max as u64);
    (x as u32, groups.div_ceil(x).max(1) as u32)
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
            inj_ids: Vec::new(),
            fired: Vec::new(),
            fired_v: Vec::new(),
            expect: 1024,
            bytes: Vec::new(),
            read: (Vec::new(), Vec::new()),
            order: Order::default(),
            same: Vec::new(),
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
        fired_v_at(m) + m * 8
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
        self.learn(t, spikes);
        self.regen.draw(spikes);
        // the injections' potentials, then the procedural synapses' contributions after them
        self.same.clear();
        match input.values() {
            Values::Each(v) => self.same.extend_from_slice(v),
            Values::Same(p) => self.same.resize(input.len(), p.0),
        }
        self.inj_ids.clear();
        self.inj_ids.extend_from_slice(input.ids());
        for (target, c) in self.regen.drawn(0) {
            self.inj_ids.push(target);
            self.same.push(c as i64);
        }
        let k = self.inj_ids.len() as u64;
        if k > u32::MAX as u64 {
            return Err(BackendError::Device(format!("{}: {k} injections in one burst", self.gpu.name)));
        }
        self.buf.inj_room(&self.gpu, k)?;
        let max = self.gpu.limits.max_compute_workgroups_per_dimension;
        let spread = grid(spikes.len() as u64, max).0;
        let uniform: [u32; 8] = [t as u32, self.neurons, spikes.len() as u32, k as u32, self.buf.areas, self.buf.codes16, spread, 0];
        debug_assert_eq!(std::mem::size_of_val(&uniform) as u64, BURST_BYTES);
        self.gpu.queue.write_buffer(&self.buf.burst, 0, bytemuck::cast_slice(&uniform));
        self.write(&self.buf.spikes, spikes);
        self.write(&self.buf.inj_ids, &self.inj_ids);
        self.write(&self.buf.inj_v, &self.same);
        self.gpu.queue.write_buffer(&self.buf.fired, 0, &[0u8; 4]);
        let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
        if !spikes.is_empty() {
            self.buf.propagate.run(&mut encoder, (spread, 1));
        }
        if k > 0 {
            self.buf.inject.run(&mut encoder, grid(k.div_ceil(GROUP as u64), max));
        }
        if self.neurons > 0 {
            self.buf.step.run(&mut encoder, grid((self.neurons as u64).div_ceil(GROUP as u64), max));
        }
        let mut m = self.expect.min(self.neurons as u64);
        let span = self.copy_fired(&mut encoder, m);
        self.gpu.queue.submit([encoder.finish()]);
        let mut bytes = std::mem::take(&mut self.bytes);
        self.gpu.read(&self.buf.readback, span, &mut bytes)?;
        let count = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as u64;
        if count > self.neurons as u64 {
            return Err(BackendError::Device(format!("{}: {count} neurons fired in a brain of {}", self.gpu.name, self.neurons)));
        }
        if count > m {
            // more fired than copied: copy and read them all again
            m = count;
            let mut encoder = self.gpu.device.create_command_encoder(&Default::default());
            let span = self.copy_fired(&mut encoder, m);
            self.gpu.queue.submit([encoder.finish()]);
            self.gpu.read(&self.buf.readback, span, &mut bytes)?;
            self.expect = count.next_power_of_two();
        }
        let (c, v_at) = (count as usize, fired_v_at(m) as usize);
        let ids = bytes[4..4 + c * 4].chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")));
        let vs = bytes[v_at..v_at + c * 8].chunks_exact(8).map(|w| i64::from_le_bytes(w.try_into().expect("8 bytes")));
        let (read_ids, read_vs) = &mut self.read;
        read_ids.clear();
        read_ids.extend(ids);
        if let Some(id) = read_ids.iter().find(|&&id| id >= self.neurons) {
            return Err(BackendError::Device(format!("{}: neuron {id} fired in a brain of {}", self.gpu.name, self.neurons)));
        }
        read_vs.clear();
        read_vs.extend(vs);
        self.order.sort(self.neurons, read_ids, read_vs, &mut self.fired, &mut self.fired_v);
        self.bytes = bytes;
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
        let mut bytes = std::mem::take(&mut self.bytes);
        self.gpu.read(&self.buf.readback, self.buf.v_at + n * 8, &mut bytes)?;
        let rcc: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes[..n as usize * 4]);
        let v_at = self.buf.v_at as usize;
        let potential: Vec<i64> = bytemuck::pod_collect_to_vec(&bytes[v_at..v_at + n as usize * 8]);
        self.bytes = bytes;
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
        self.gpu.queue.write_buffer(&self.buf.acc, 0, &vec![0u8; self.neurons as usize * 8]);
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

#[cfg(test)]
mod tests {
    use super::Order;

    #[test]
    fn the_fired_list_comes_out_ascending_with_its_potentials() {
        let mut order = Order::default();
        let (mut ids, mut vs) = (Vec::new(), Vec::new());
        for round in 0..3u32 {
            // distinct ids in a scrambled order, the potential of each its id, negated
            let read: Vec<u32> = (0..500u32).map(|i| (i * 7919 + round * 13) % 3001).collect();
            let pots: Vec<i64> = read.iter().map(|&i| -(i as i64)).collect();
            order.sort(3001, &read, &pots, &mut ids, &mut vs);
            let mut want = read.clone();
            want.sort_unstable();
            assert_eq!(ids, want);
            assert!(ids.iter().zip(&vs).all(|(&i, &v)| v == -(i as i64)));
        }
        order.sort(3001, &[], &[], &mut ids, &mut vs);
        assert!(ids.is_empty() && vs.is_empty());
    }
}
