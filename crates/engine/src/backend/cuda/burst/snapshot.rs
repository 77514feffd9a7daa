//! The brain's state in and out of the device: snapshots, restores (one GPU, or one GPU of
//! several), and where the state after the last burst lies (the early step alternates buffers).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::backend::cuda::backend::CudaBackend;
use crate::backend::cuda::layout::{dev_err, dptr, BLOCK, DEAD, M_BURST, M_COUNTER};
use crate::backend::BackendError;
use crate::model::NeuronState;

impl CudaBackend {
    /// Whether the state after the last burst (the one the next burst reads) lies in the early
    /// step's buffers: bursts reading side 1 step from them (see `net_for`).
    fn state_in_early(&self) -> bool {
        self.state.early.is_some() && self.launch.cur == 1
    }

    /// The state buffers holding the state after the last burst (the next burst reads them).
    fn state(&self) -> (&CudaSlice<i64>, &CudaSlice<u32>) {
        match &self.state.early {
            Some(x) if self.state_in_early() => (&x.v, &x.rcc),
            _ => (&self.state.v, &self.state.rcc),
        }
    }

    /// As [`Self::state`], to write.
    fn state_mut(&mut self) -> (&mut CudaSlice<i64>, &mut CudaSlice<u32>) {
        let early = self.state_in_early();
        match &mut self.state.early {
            Some(x) if early => (&mut x.v, &mut x.rcc),
            _ => (&mut self.state.v, &mut self.state.rcc),
        }
    }

    pub(in crate::backend::cuda) fn snapshot_impl(&mut self) -> Result<NeuronState, BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        self.park()?;
        let s = &self.stream;
        s.synchronize().map_err(dev_err("synchronising"))?;
        let (v, rcc) = self.state();
        let potential = s.clone_dtoh(v).map_err(dev_err("reading potentials"))?;
        let rcc = s.clone_dtoh(rcc).map_err(dev_err("reading refractory state"))?;
        let misc = s.clone_dtoh(&self.state.misc).map_err(dev_err("reading counters"))?;
        let count = (misc[M_COUNTER + self.launch.cur] >> self.state.count_shift) as usize;
        let mut fired = if count > 0 {
            s.clone_dtoh(&self.state.fired[self.launch.cur].slice(0..count)).map_err(dev_err("reading the fired list"))?
        } else {
            Vec::new()
        };
        // slots the early step's `fix` emptied
        fired.retain(|&f| f != DEAD);
        fired.sort_unstable();
        let refractory = rcc.iter().map(|&x| (x & 0xFFFF) as u16).collect();
        let consecutive = rcc.iter().map(|&x| (x >> 16) as u16).collect();
        let learned = self.learned()?;
        Ok(NeuronState { burst: self.launch.burst, potential, refractory, consecutive, fired, learned })
    }

    pub(in crate::backend::cuda) fn restore_impl(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        crate::backend::shard::check_lengths(st, self.state.neurons as usize)?;
        if let Some(&bad) = st.fired.iter().find(|&&f| f >= self.n_total()) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: self.n_total() });
        }
        let mut fired = st.fired.clone();
        fired.sort_unstable();
        fired.dedup();
        if self.launch.path.sharded() {
            return self.restore_shard(st, &fired);
        }
        let s = self.load_state(st, 0)?;
        let e = |w: &'static str| dev_err(w);
        let tmp = 1 - self.launch.cur;
        if !fired.is_empty() {
            let mut view = self.state.fired[tmp].slice_mut(0..fired.len());
            s.memcpy_htod(&fired, &mut view).map_err(e("writing the fired list"))?;
            let ids = dptr(&self.state.fired[tmp], &s);
            let count = fired.len() as u32;
            let wr = self.side(self.launch.cur);
            let cfg = LaunchConfig { grid_dim: (count.div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: reads `count` ids (written just above) and writes `count` slots of side `cur`
            // (N slots) and its counter, which was zeroed above.
            unsafe { s.launch_builder(&self.launch.kernels.relist).arg(&self.state.net).arg(&wr).arg(&ids).arg(&count).launch(cfg) }
                .map_err(e("launching relist"))?;
        }
        s.synchronize().map_err(e("restoring the state"))?;
        self.restore_learned(&st.learned, st.burst)?;
        s.synchronize().map_err(e("restoring the learned state"))?;
        self.launch.burst = st.burst;
        Ok(())
    }

    /// Write this GPU's neurons' state and the burst number, clear the inputs, and set the counter of
    /// the side the next burst reads to `counter` (0: no fired list yet); returns the stream.
    fn load_state(&mut self, st: &NeuronState, counter: u64) -> Result<Arc<CudaStream>, BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        self.park()?;
        let e = |w: &'static str| dev_err(w);
        let s = self.stream.clone();
        s.synchronize().map_err(e("synchronising"))?;
        if self.state.neurons > 0 {
            let rcc: Vec<u32> = st.refractory.iter().zip(&st.consecutive).map(|(&r, &c)| r as u32 | (c as u32) << 16).collect();
            let (v_dst, rcc_dst) = self.state_mut();
            s.memcpy_htod(&st.potential, v_dst).map_err(e("writing potentials"))?;
            s.memcpy_htod(&rcc, rcc_dst).map_err(e("writing refractory state"))?;
        }
        // a propagation run ahead from the replaced fired list is void
        self.launch.pre_pending = false;
        for acc in &mut self.state.acc {
            s.memset_zeros(acc).map_err(e("clearing"))?;
        }
        s.memset_zeros(&mut self.state.inj).map_err(e("clearing"))?;
        s.memset_zeros(&mut self.state.inj_mask).map_err(e("clearing"))?;
        let mut misc = vec![0u64; 64];
        misc[M_BURST] = st.burst;
        misc[M_COUNTER + self.launch.cur] = counter;
        s.memcpy_htod(&misc, &mut self.state.misc).map_err(e("writing counters"))?;
        Ok(s)
    }

    /// One GPU of several: its own neurons' state (`st` indexed from `base`); its own neurons of
    /// `fired` become the list the others gather in the next burst.
    fn restore_shard(&mut self, st: &NeuronState, fired: &[u32]) -> Result<(), BackendError> {
        let own: Vec<u32> = fired.iter().copied().filter(|f| (self.state.base..self.state.base + self.state.neurons).contains(f)).collect();
        let s = self.load_state(st, (own.len() as u64) << self.state.count_shift)?;
        let e = |w: &'static str| dev_err(w);
        if !own.is_empty() {
            let mut view = self.state.fired[self.launch.cur].slice_mut(0..own.len());
            s.memcpy_htod(&own, &mut view).map_err(e("writing the fired list"))?;
        }
        s.synchronize().map_err(e("restoring the state"))?;
        self.restore_learned(&st.learned, st.burst)?;
        s.synchronize().map_err(e("restoring the learned state"))?;
        self.launch.burst = st.burst;
        Ok(())
    }
}
