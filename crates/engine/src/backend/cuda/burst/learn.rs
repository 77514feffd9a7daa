//! Learning on the GPU (`kernels/learn.cu`, docs/plasticity.md): the device buffers, the
//! launches that run before each propagation (graph paths, and the work ahead the host runs after
//! a restore or a park; the resident kernel runs the phases itself, on one GPU without the mark:
//! `fix` leaves the fired list's bits in `spec`), and the learned state in and out.
//!
//! The host keeps this GPU's row pointers and a CPU [`Learner`]: a snapshot reads the targets,
//! codes, stamps, histories and pair tables back and lets the reference describe the learned state
//! (and a restore goes the other way), so the GPU's learned state is the CPU's by construction.
//! The synapses are on the host only while a snapshot or a restore reads them.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::backend::cuda::build::connectome::Resources;
use crate::backend::cuda::layout::{as_bytes, dev_err, dptr, Learn, Net, PlasMap, Side, BLOCK};
use crate::backend::cuda::module::Kernels;
use crate::backend::learn::{Deferred, Learner, SWEEP_BURSTS};
use crate::backend::BackendError;
use crate::connectome::{Codes, Part, Plastic};
use crate::model::plasticity::{window_mask, Learned, Switch};

/// The learning state of one GPU.
pub(in crate::backend::cuda) struct GpuLearning {
    pub params: Learn,
    _now: CudaSlice<u32>,
    /// A bit per neuron whose history is not 0 (a record walks them; a restore writes them).
    act: CudaSlice<u32>,
    _active: CudaSlice<u32>,
    _n_active: CudaSlice<u32>,
    status: CudaSlice<u32>,
    stamps: CudaSlice<u16>,
    _windows: CudaSlice<u32>,
    _group_map: CudaSlice<u32>,
    _maps: CudaSlice<u8>,
    exists: CudaSlice<u64>,
    grown: CudaSlice<u64>,
    hist: CudaSlice<u32>,
    /// The burst whose learning is skipped (~0: none).
    skip: CudaSlice<u64>,
    /// Which bursts' firing is learned from ([`Switch::word`]), and its host copy.
    toggle: CudaSlice<u64>,
    switch: Switch,
    /// The next learning is skipped (a restored state holds it already): set by a restore,
    /// cleared when a propagation is launched (the learning before it consumes it).
    pub skip_pending: bool,
    /// This GPU's part: its row pointers (its targets and codes only while a snapshot or a
    /// restore reads them), and the reference learner.
    part: Part,
    synapses: usize,
    deferred: Deferred,
    learner: Learner,
    /// Words of each associative mapping's pair table (u64), in order.
    words: Vec<usize>,
}

impl GpuLearning {
    /// The resident kernel's `learning` word: 1, and 2 when the brain has associative mappings.
    pub(in crate::backend::cuda) fn flags(&self) -> u32 {
        1 | (!self.words.is_empty() as u32) << 1
    }
}

/// Bytes learning takes on the device for a part: histories (and two bits each: fired, and a
/// history that is not 0; the active list) and a status per window for every neuron, a stamp per
/// synapse, the pair tables.
pub(in crate::backend::cuda) fn device_bytes(synapses: u64, plastic: &Plastic, neurons_total: u32) -> u64 {
    let n = neurons_total as u64;
    let pairs: u64 = plastic.mappings.iter().filter_map(|m| m.associative.as_ref()).map(|a| (a.pairs() as u64).div_ceil(64) * 8).sum();
    let mut windows: Vec<u32> = plastic.mappings.iter().map(|m| m.rule.window).collect();
    windows.sort_unstable();
    windows.dedup();
    n * 4 + 2 * n.div_ceil(32) * 4 + n * 4 + windows.len() as u64 * n * 4 + synapses * 2 + pairs
}

impl GpuLearning {
    /// `part`: this GPU's part, whose row pointers are kept (its synapses, `synapses` of them, are
    /// on the device).
    pub(in crate::backend::cuda) fn new(
        s: &Arc<CudaStream>,
        part: &Part,
        synapses: u64,
        plastic: &Plastic,
        neurons_total: u32,
    ) -> Result<GpuLearning, BackendError> {
        let e = |w: &'static str| dev_err(w);
        let n = neurons_total as usize;
        let mut learner = Learner::new(plastic.clone(), neurons_total);
        let (windows, slot_of) = learner.slots();
        let mut words = Vec::new();
        let mut maps = Vec::new();
        let mut at = 0u64;
        for (m, &slot) in plastic.mappings.iter().zip(&slot_of) {
            let mut map = PlasMap { ltp: m.rule.ltp as u32, ltd: m.rule.ltd as u32, window: m.rule.window, slot, ..Default::default() };
            if let Some(a) = &m.associative {
                let w = a.pairs().div_ceil(64);
                (map.assoc, map.src_lo, map.src_hi, map.dst_lo, map.dst_hi) =
                    (1, a.sources.start, a.sources.end, a.targets.start, a.targets.end);
                (map.cap, map.bits) = (a.max_synapses, at * 2);
                at += w as u64;
                words.push(w);
            }
            maps.push(map);
        }
        let nonempty_u32 = |v: &[u32], what: &'static str| if v.is_empty() { s.alloc_zeros(1) } else { s.clone_htod(v) }.map_err(e(what));
        let hist = s.alloc_zeros::<u32>(n.max(1)).map_err(e("alloc histories"))?;
        let _now = s.alloc_zeros::<u32>(n.div_ceil(32) + 1).map_err(e("alloc fired bits"))?;
        let act = s.alloc_zeros::<u32>(n.div_ceil(32) + 1).map_err(e("alloc the bits of the histories"))?;
        let _active = s.alloc_zeros::<u32>(n.max(1)).map_err(e("alloc the active list"))?;
        let _n_active = s.alloc_zeros::<u32>(1).map_err(e("alloc the active count"))?;
        let status = s.alloc_zeros::<u32>((windows.len() * n).max(1)).map_err(e("alloc statuses"))?;
        let synapses = synapses as usize;
        let stamps = s.alloc_zeros::<u16>(synapses.max(1)).map_err(e("alloc stamps"))?;
        let _windows = nonempty_u32(&windows, "uploading the windows")?;
        let _group_map = nonempty_u32(&plastic.group_mapping, "uploading the plastic groups")?;
        let _maps = s.clone_htod(as_bytes(&maps)).map_err(e("uploading the plastic mappings"))?;
        // the pairs a learned genome grew already (the reference learner starts from them)
        let st = learner.state_mut();
        let mut table_words: Vec<u64> = st.tables.iter().flatten().copied().collect();
        table_words.resize((at as usize).max(1), 0);
        let exists = s.clone_htod(&table_words).map_err(e("uploading pair tables"))?;
        let mut counts: Vec<u64> = st.grown.iter().zip(st.refused.iter()).flat_map(|(&g, &r)| [g, r]).collect();
        counts.resize(2 * maps.len().max(1), 0);
        let grown = s.clone_htod(&counts).map_err(e("uploading growth counts"))?;
        let skip = s.clone_htod(&[u64::MAX]).map_err(e("alloc the skip word"))?;
        let switch = Switch::default();
        let toggle = s.clone_htod(&[switch.word()]).map_err(e("alloc the learning switch"))?;
        let params = Learn {
            hist: dptr(&hist, s),
            now: dptr(&_now, s),
            act: dptr(&act, s),
            active: dptr(&_active, s),
            n_active: dptr(&_n_active, s),
            status: dptr(&status, s),
            stamps: dptr(&stamps, s),
            windows: dptr(&_windows, s),
            group_map: dptr(&_group_map, s),
            maps: dptr(&_maps, s),
            exists: dptr(&exists, s),
            grown: dptr(&grown, s),
            burst: 0,
            skip: dptr(&skip, s),
            toggle: dptr(&toggle, s),
            code_base: plastic.base,
            n_total: neurons_total,
            longest: window_mask(plastic.max_window()),
            n_maps: maps.len() as u32,
            n_slots: windows.len() as u32,
            sweep_rows: neurons_total.div_ceil(SWEEP_BURSTS as u32),
        };
        let codes = Codes::empty(part.codes.bytes_per_code() == 4);
        let host_part = Part { targets_range: part.targets_range.clone(), row_ptr: part.row_ptr.clone(), targets: Vec::new(), codes };
        Ok(GpuLearning {
            params,
            _now,
            act,
            _active,
            _n_active,
            status,
            stamps,
            _windows,
            _group_map,
            _maps,
            exists,
            grown,
            hist,
            skip,
            toggle,
            switch,
            skip_pending: false,
            deferred: Deferred::from_stamps(Vec::new()),
            part: host_part,
            synapses,
            learner,
            words,
        })
    }

    /// Launch (or record, into a capture) the learning from the fired list `rd`, before it is
    /// propagated; `sm`: the device's multiprocessors.
    pub(in crate::backend::cuda) fn launch(
        &self,
        s: &Arc<CudaStream>,
        k: &Kernels,
        net: &Net,
        rd: &Side,
        sm: u32,
    ) -> Result<(), BackendError> {
        let e = |w: &'static str| dev_err(w);
        let cfg = |blocks: u32| LaunchConfig { grid_dim: (blocks.max(1), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let l = &self.params;
        // SAFETY (all four): every pointer in `l` and `net` points into buffers owned by the
        // backend that outlive its graphs; the kernels index them within the sizes allocated in
        // `new` and `build` (neurons of the brain, synapses and targets of this part, the pair
        // tables and the mappings uploaded there).
        unsafe { s.launch_builder(&k.learn_mark).arg(l).arg(rd).arg(&net.count_shift).launch(cfg(sm * 4)) }.map_err(e("learn_mark"))?;
        unsafe { s.launch_builder(&k.learn_shift).arg(l).launch(cfg(sm * 4)) }.map_err(e("learn_shift"))?;
        unsafe { s.launch_builder(&k.learn_rows).arg(l).arg(net).launch(cfg(sm * 8)) }.map_err(e("learn_rows"))?;
        if !self.words.is_empty() {
            unsafe { s.launch_builder(&k.learn_grow).arg(l).arg(net).launch(cfg(1)) }.map_err(e("learn_grow"))?;
        }
        Ok(())
    }

    /// Learn or not from the firing of burst `last + 2` on (see [`Switch`]): the word is written
    /// behind the learning already queued on `s` (that of burst `last`'s firing, which reads the
    /// word before it), and the device is not running the resident kernel.
    pub(in crate::backend::cuda) fn set(&mut self, s: &Arc<CudaStream>, on: bool, last: u64) -> Result<(), BackendError> {
        self.switch.set(on, last);
        s.memcpy_htod(&[self.switch.word()], &mut self.toggle).map_err(dev_err("writing the learning switch"))
    }

    /// The device's targets, codes, stamps, histories, statuses and pair tables into the host
    /// copies (the device is idle); [`GpuLearning::release`] lets the synapses go again.
    fn download(&mut self, s: &Arc<CudaStream>, res: &Resources) -> Result<(), BackendError> {
        let e = |w: &'static str| dev_err(w);
        let mut targets = s.clone_dtoh(&res.targets).map_err(e("reading targets"))?;
        targets.truncate(self.synapses);
        self.part.targets = targets;
        let bytes = s.clone_dtoh(&res.codes).map_err(e("reading codes"))?;
        match &mut self.part.codes {
            Codes::U16(c) => *c = bytes.chunks_exact(2).take(self.synapses).map(|b| u16::from_le_bytes([b[0], b[1]])).collect(),
            Codes::U32(c) => *c = bytes.chunks_exact(4).take(self.synapses).map(|b| u32::from_le_bytes(b.try_into().unwrap())).collect(),
        }
        let mut stamps = s.clone_dtoh(&self.stamps).map_err(e("reading stamps"))?;
        stamps.truncate(self.synapses);
        self.deferred = Deferred::from_stamps(stamps);
        let hist = s.clone_dtoh(&self.hist).map_err(e("reading histories"))?;
        let status = s.clone_dtoh(&self.status).map_err(e("reading statuses"))?;
        let exists = s.clone_dtoh(&self.exists).map_err(e("reading pair tables"))?;
        let grown = s.clone_dtoh(&self.grown).map_err(e("reading growth counts"))?;
        let st = self.learner.state_mut();
        st.history.copy_from_slice(&hist[..st.history.len()]);
        let n = st.history.len();
        for (v, from) in st.status.iter_mut().zip(status.chunks_exact(n)) {
            v.copy_from_slice(from);
        }
        let mut at = 0;
        for (t, &w) in st.tables.iter_mut().filter(|t| !t.is_empty()).zip(&self.words) {
            t.copy_from_slice(&exists[at..at + w]);
            at += w;
        }
        for (i, (g, r)) in st.grown.iter_mut().zip(st.refused.iter_mut()).enumerate() {
            (*g, *r) = (grown[2 * i], grown[2 * i + 1]);
        }
        Ok(())
    }

    /// The learned state of this GPU's part.
    pub(in crate::backend::cuda) fn snapshot(&mut self, s: &Arc<CudaStream>, res: &Resources) -> Result<Learned, BackendError> {
        self.download(s, res)?;
        let learned = self.learner.snapshot(&[(&self.part, &self.deferred)]);
        self.release();
        Ok(learned)
    }

    /// Drop the host copies of the synapses and their stamps (read again when next wanted).
    fn release(&mut self) {
        self.part.targets = Vec::new();
        self.part.codes = Codes::empty(self.part.codes.bytes_per_code() == 4);
        self.deferred = Deferred::from_stamps(Vec::new());
    }

    /// Take `learned` (the whole brain's) onto the device; an empty one changes nothing.
    /// `burst`: the restored state's last burst (whose learning a state that is ahead holds).
    pub(in crate::backend::cuda) fn restore(
        &mut self,
        s: &Arc<CudaStream>,
        res: &mut Resources,
        learned: &Learned,
        burst: u64,
    ) -> Result<(), BackendError> {
        if learned.is_empty() {
            return Ok(());
        }
        self.download(s, res)?;
        let restored = self.learner.restore(learned, &mut [(&mut self.part, &mut self.deferred)]);
        if let Err(e) = restored {
            self.release();
            return Err(BackendError::Device(format!("cannot restore what the brain learned: {e}")));
        }
        let e = |w: &'static str| dev_err(w);
        match &self.part.codes {
            Codes::U16(c) if !c.is_empty() => s.memcpy_htod(as_bytes(c), &mut res.codes),
            Codes::U32(c) if !c.is_empty() => s.memcpy_htod(as_bytes(c), &mut res.codes),
            _ => Ok(()),
        }
        .map_err(e("writing codes"))?;
        self.release();
        // every synapse up to date: stamps and counts start again from 0
        // SAFETY: zeroes the stamps (one u16 per synapse of the part, allocated in `new`) on our
        // stream.
        unsafe { cudarc::driver::sys::cuMemsetD16Async(dptr(&self.stamps, s), 0, self.synapses, s.cu_stream()) }
            .result()
            .map_err(e("clearing stamps"))?;
        let st = self.learner.state_mut();
        let status = st.status.concat();
        if !status.is_empty() {
            s.memcpy_htod(&status, &mut self.status).map_err(e("writing statuses"))?;
        }
        s.memcpy_htod(&st.history[..], &mut self.hist).map_err(e("writing histories"))?;
        // the next record walks the neurons with a history
        let bits = |c: &[u32]| c.iter().enumerate().fold(0u32, |m, (j, &h)| m | ((h != 0) as u32) << j);
        let act: Vec<u32> = st.history.chunks(32).map(bits).chain([0]).collect();
        s.memcpy_htod(&act, &mut self.act).map_err(e("writing the bits of the histories"))?;
        let words: Vec<u64> = st.tables.iter().flatten().copied().collect();
        if !words.is_empty() {
            s.memcpy_htod(&words, &mut self.exists).map_err(e("writing pair tables"))?;
        }
        let counts: Vec<u64> = st.grown.iter().zip(st.refused.iter()).flat_map(|(&g, &r)| [g, r]).collect();
        if !counts.is_empty() {
            s.memcpy_htod(&counts, &mut self.grown).map_err(e("writing growth counts"))?;
        }
        let skip = if learned.ahead { burst } else { u64::MAX };
        s.memcpy_htod(&[skip], &mut self.skip).map_err(e("writing the skip word"))?;
        self.skip_pending = learned.ahead;
        Ok(())
    }
}

impl crate::backend::cuda::backend::CudaBackend {
    /// What this GPU's part learned (the device is idle); empty when the brain does not learn.
    pub(in crate::backend::cuda) fn learned(&mut self) -> Result<crate::model::plasticity::Learned, BackendError> {
        // the learning from the last burst ran with the propagation launched after it
        let ran_ahead = self.launch.pre_pending;
        match &mut self.state.learning {
            Some(l) => {
                let ahead = ran_ahead || l.skip_pending;
                let mut learned = l.snapshot(&self.stream, &self.state.res)?;
                learned.ahead = ahead;
                Ok(learned)
            }
            None => Ok(Default::default()),
        }
    }

    /// Learn or not from the firing of the burst after the next on (before the first burst: from
    /// the start).
    pub(in crate::backend::cuda) fn switch_learning(&mut self, on: bool) -> Result<(), BackendError> {
        if self.state.learning.is_none() {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        // the resident kernel reads the word: it runs again with the next burst
        self.park()?;
        let last = self.launch.burst;
        match &mut self.state.learning {
            Some(l) => l.set(&self.stream, on, last),
            None => Ok(()),
        }
    }

    /// Take the whole brain's learned state (the device is idle).
    pub(in crate::backend::cuda) fn restore_learned(
        &mut self,
        learned: &crate::model::plasticity::Learned,
        burst: u64,
    ) -> Result<(), BackendError> {
        match &mut self.state.learning {
            Some(l) => l.restore(&self.stream, &mut self.state.res, learned, burst),
            None => Ok(()),
        }
    }
}
