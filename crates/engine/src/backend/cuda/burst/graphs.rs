//! The phases as kernels launched by the host: CUDA graphs on several GPUs (and on one without
//! cooperative launch), and the propagation and early step that run before the resident kernel's
//! first burst.
//!
//! Per side r (the fired list the bursts read), two graphs: `pre` (on one GPU of several, gather
//! every GPU's list of the last burst first; clear side r's accumulator; propagate into it) and
//! the burst graph (`inject`, `step`). The propagation runs ahead: on one GPU it is launched right
//! after the burst graph, and runs while the host reads the output; on several GPUs each GPU
//! launches it once every GPU has stepped (`multi.rs`). The injection is copied up by a copy call
//! before the burst graph.

use cudarc::driver::{result, sys, CudaEvent, CudaGraph, LaunchConfig, PushKernelArg};

use crate::backend::cuda::backend::CudaBackend;
use crate::backend::cuda::layout::{dev_err, dptr, Net, Side, BLOCK, M_COUNTER, M_GATHER, STEP_ITEMS};
use crate::backend::BackendError;

/// Events around each side's propagation graph and around the burst graph (one GPU on graphs).
pub(crate) struct DeviceTiming {
    pre: [(CudaEvent, CudaEvent); 2],
    burst: (CudaEvent, CudaEvent),
    /// The side the last burst read (whose propagation fed it); None before the first.
    side: Option<usize>,
}

impl CudaBackend {
    /// Time each burst from now on, where the bursts run on graphs (one GPU, or one of several).
    pub(in crate::backend::cuda) fn start_timing(&mut self) -> bool {
        if self.launch.path.resident() {
            return false;
        }
        let events = || -> Result<DeviceTiming, cudarc::driver::DriverError> {
            let ev = || self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
            Ok(DeviceTiming { pre: [(ev()?, ev()?), (ev()?, ev()?)], burst: (ev()?, ev()?), side: None })
        };
        match events() {
            Ok(t) => self.launch.timing = Some(t),
            Err(e) => tracing::warn!("CUDA: no events to time the bursts: {e}"),
        }
        self.launch.timing.is_some()
    }

    /// The last burst's device time: its propagation's (with its wait for the other GPUs' partial
    /// sums, on one GPU of several) and its burst graph's, in microseconds.
    pub(in crate::backend::cuda) fn timed_us(&self) -> Option<f64> {
        let t = self.launch.timing.as_ref()?;
        // (the output is read before the burst graph's end is recorded as done)
        t.burst.1.synchronize().ok()?;
        let (a, b) = &t.pre[t.side?];
        let ms = a.elapsed_ms(b).ok()? + t.burst.0.elapsed_ms(&t.burst.1).ok()?;
        Some(ms as f64 * 1e3)
    }

    /// The fired list (and its counter) of side `i`.
    pub(in crate::backend::cuda) fn side(&self, i: usize) -> Side {
        Side {
            fired: dptr(&self.state.fired[i], &self.stream),
            offs: dptr(&self.state.offs[i], &self.stream),
            shifts: dptr(&self.state.shifts[i], &self.stream),
            counter: dptr(&self.state.misc, &self.stream) + 8 * (M_COUNTER + i) as u64,
        }
    }

    pub(in crate::backend::cuda) fn gathered_side(&self) -> Option<Side> {
        self.state.multi.as_ref().map(|m| Side {
            fired: dptr(&m.fired, &self.stream),
            offs: dptr(&m.offs, &self.stream),
            shifts: dptr(&m.shifts, &self.stream),
            counter: dptr(&self.state.misc, &self.stream) + 8 * M_GATHER as u64,
        })
    }

    /// The kernels' view for bursts reading side `r`: side r has its own accumulator, which the
    /// propagation fills and `step` leaves alone; with the early step, bursts reading side r step
    /// from state buffer r into the other.
    pub(in crate::backend::cuda) fn net_for(&self, r: usize) -> Net {
        let mut net = self.state.net;
        let s = &self.stream;
        net.acc = dptr(&self.state.acc[r], s);
        net.acc_keep = 1;
        if let Some(x) = &self.state.early {
            let (a, b) = ((dptr(&self.state.v, s), dptr(&self.state.rcc, s)), (dptr(&x.v, s), dptr(&x.rcc, s)));
            let ((v, rcc), (v_out, rcc_out)) = if r == 0 { (a, b) } else { (b, a) };
            (net.v, net.rcc, net.v_out, net.rcc_out) = (v, rcc, v_out, rcc_out);
            // `prestep` clears the other side's accumulator (no clear before each propagation),
            // unless the propagation writes every neuron's (tiled)
            net.acc_other = if self.state.tiles.is_some() { 0 } else { dptr(&self.state.acc[1 - r], s) };
        }
        net
    }

    pub(in crate::backend::cuda) fn step_cfg(&self) -> LaunchConfig {
        LaunchConfig { grid_dim: (self.state.neurons.div_ceil(BLOCK * STEP_ITEMS), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    fn prop_cfg(&self) -> LaunchConfig {
        LaunchConfig { grid_dim: (self.launch.prop_grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    /// Launch (or record, into a capture under way) what runs ahead of the bursts reading side
    /// `r`: on one GPU of several, the gather of every GPU's list of the last burst (their side
    /// r); the binned procedural synapses' sums into side r's accumulator (written, not added),
    /// else, without the early step, its clear; the propagation into it; with the early step,
    /// `prestep`. Where the GPUs sum their binned synapses together, in two halves with every
    /// GPU's partial sums made between them ([`Self::ahead_sums`], then [`Self::ahead_rest`]).
    pub(in crate::backend::cuda) fn run_ahead(&self, r: usize) -> Result<(), BackendError> {
        self.ahead_sums(r)?;
        self.ahead_rest(r)
    }

    /// Whether the propagation runs in two halves (see `run_ahead`).
    fn halves(&self) -> bool {
        self.state.proc_bins.as_ref().is_some_and(|b| b.spread())
    }

    /// The list the propagation reads: on one GPU of several, the gathered one.
    fn read_side(&self, r: usize) -> Side {
        self.gathered_side().unwrap_or_else(|| self.side(r))
    }

    /// The first half of `run_ahead`: the gather, the learning, and the binned procedural synapses'
    /// sums (spread: this GPU's own list, binned onto every neuron of the brain).
    fn ahead_sums(&self, r: usize) -> Result<(), BackendError> {
        let s = &self.stream;
        let net = self.net_for(r);
        let rd = self.read_side(r);
        if let Some(m) = &self.state.multi {
            // SAFETY: zeroes the gathered counter (one u64 in `misc`, owned by self) on our stream.
            unsafe { sys::cuMemsetD32Async(rd.counter, 0, 2, s.cu_stream()) }.result().map_err(dev_err("capturing a clear"))?;
            let peers = dptr(&m.peers[r], s);
            // SAFETY: reads the peer table (n_peers entries, uploaded in `connect`) and the lists it
            // names (every GPU's own fired list of the last burst, peer access enabled), writes at
            // most N slots of the gathered list and the chunk index (sized for this part's synapses).
            unsafe { s.launch_builder(&self.launch.kernels.gather).arg(&net).arg(&rd).arg(&peers).arg(&m.n_peers).launch(self.prop_cfg()) }
                .map_err(dev_err("capturing gather"))?;
        }
        if let Some(l) = &self.state.learning {
            // learning from the list, before it is propagated
            l.launch(s, &self.launch.kernels, &net, &rd, self.launch.sm)?;
        }
        if let Some(b) = &self.state.proc_bins {
            // first: its sums are written to every neuron, so no clear before
            let from = if b.spread() { self.side(r) } else { rd };
            b.launch(s, &self.launch.kernels, &net, &from, self.launch.sm)?;
        }
        Ok(())
    }

    /// The second half of `run_ahead`: spread, every GPU's partial sums of this GPU's neurons
    /// folded into side r's accumulator; the rest of the propagation.
    fn ahead_rest(&self, r: usize) -> Result<(), BackendError> {
        let s = &self.stream;
        let net = self.net_for(r);
        let rd = self.read_side(r);
        match &self.state.proc_bins {
            Some(b) => b.fold(s, &self.launch.kernels, &net, self.launch.sm)?,
            // (the tiles write every neuron's input)
            None if self.state.early.is_none() && self.state.tiles.is_none() => {
                let words = if self.wide_accumulators() { 2 } else { 1 } * self.state.neurons as usize;
                // SAFETY: clears this side's accumulator (N i32 or i64, allocated in `build`).
                unsafe { sys::cuMemsetD32Async(net.acc, 0, words, s.cu_stream()) }
                    .result()
                    .map_err(dev_err("capturing the accumulator clear"))?;
            }
            None => {}
        }
        if let Some(t) = &self.state.tiles {
            t.launch(s, &self.launch.kernels, &net, &rd)?;
        } else {
            // SAFETY: every pointer in `net` and `rd` points into buffers owned by `self` that outlive
            // the graphs (rebuilt whenever a buffer is replaced); the kernel indexes them within the
            // sizes allocated in `build` (N fired slots, the chunk index, the synapse count).
            unsafe { s.launch_builder(&self.launch.kernels.propagate).arg(&net).arg(&rd).launch(self.prop_cfg()) }
                .map_err(dev_err("capturing propagate"))?;
        }
        if net.n_row_areas > 0 {
            // SAFETY: as propagate's; it reads the flat rows (uploaded in `upload`, n_row_areas
            // areas) and adds into this side's accumulator at targets within this GPU's neurons.
            unsafe { s.launch_builder(&self.launch.kernels.proc_rows).arg(&net).arg(&rd).launch(self.prop_cfg()) }
                .map_err(dev_err("capturing proc_rows"))?;
        }
        if self.state.early.is_some() {
            let wr = self.side(1 - r);
            // SAFETY: as above; `prestep` reads N neurons' state from buffer r and writes it into
            // the other buffer, the early fired bits and slots (N neurons), the fired list `wr`
            // and the read-back area of the burst's parity (out_cap entries).
            unsafe { s.launch_builder(&self.launch.kernels.prestep).arg(&net).arg(&wr).launch(self.step_cfg()) }
                .map_err(dev_err("launching prestep"))?;
        }
        Ok(())
    }

    /// Capture what `record` launches on our stream as a graph, instantiated and uploaded.
    fn capture(&self, what: &str, record: impl FnOnce() -> Result<(), BackendError>) -> Result<CudaGraph, BackendError> {
        let s = &self.stream;
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).map_err(dev_err("begin capture"))?;
        let l = record();
        let g = s.end_capture(sys::CUgraphInstantiate_flags(0));
        l?;
        let g = g
            .map_err(|e| BackendError::Device(format!("CUDA: instantiating the {what} graph: {e}")))?
            .ok_or_else(|| BackendError::Device(format!("CUDA: the {what} graph is empty")))?;
        g.upload().map_err(|e| BackendError::Device(format!("CUDA: uploading the {what} graph: {e}")))?;
        Ok(g)
    }

    /// The burst graph of the bursts reading side `r`: `inject` (the injection was copied up
    /// before), then `step`, which writes side 1 - r and the output.
    fn record_burst(&self, r: usize) -> Result<(), BackendError> {
        let (net, wr, s) = (self.net_for(r), self.side(1 - r), &self.stream);
        let inj_cfg = LaunchConfig { grid_dim: (self.launch.inj_grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: as in `run_ahead`; `inject` reads the injection (header + entries, within the
        // device buffer's capacity) and writes `inj`, `inj_mask` (N neurons) and the counters.
        unsafe { s.launch_builder(&self.launch.kernels.inject).arg(&net).arg(&wr).launch(inj_cfg) }.map_err(dev_err("capturing inject"))?;
        // SAFETY: as above; `step` writes N neurons' state, the fired list `wr` and the output.
        unsafe { s.launch_builder(&self.launch.kernels.step).arg(&net).arg(&wr).launch(self.step_cfg()) }
            .map_err(dev_err("capturing step"))?;
        Ok(())
    }

    /// Capture the graphs of both sides (again after a buffer they name was replaced).
    pub(in crate::backend::cuda) fn capture_graphs(&mut self) -> Result<(), BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let (mut graphs, mut pre, mut folds) = (vec![], vec![], vec![]);
        for r in 0..2 {
            graphs.push(self.capture("burst", || self.record_burst(r))?);
            if self.halves() {
                pre.push(self.capture("partial sums", || self.ahead_sums(r))?);
                folds.push(self.capture("propagation", || self.ahead_rest(r))?);
            } else {
                pre.push(self.capture("propagation", || self.run_ahead(r))?);
            }
        }
        (self.launch.graphs, self.launch.pre, self.launch.folds) = (graphs, pre, folds);
        Ok(())
    }

    /// Launch the propagation for the next burst unless it is already queued. One GPU of several
    /// calls it once every GPU has finished its last burst (it gathers their fired lists).
    pub(crate) fn launch_pre(&mut self) -> Result<(), BackendError> {
        if !self.launch.pre_pending {
            self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
            let timed = self.launch.timing.as_ref().map(|t| &t.pre[self.launch.cur]);
            timed.map(|e| e.0.record(&self.stream)).transpose().map_err(dev_err("recording an event"))?;
            // SAFETY: launches our own instantiated graph on our own stream.
            let launched = unsafe { result::graph::launch(self.launch.pre[self.launch.cur].cu_graph_exec(), self.stream.cu_stream()) }
                .map_err(dev_err("launching the propagate graph"));
            if let Some(seat) = &mut self.launch.seat {
                // the second half once every GPU has made its partial sums
                seat.meet(&self.stream, launched)?;
                // SAFETY: as above.
                unsafe { result::graph::launch(self.launch.folds[self.launch.cur].cu_graph_exec(), self.stream.cu_stream()) }
                    .map_err(dev_err("launching the propagate graph"))?;
            } else {
                launched?;
            }
            timed.map(|e| e.1.record(&self.stream)).transpose().map_err(dev_err("recording an event"))?;
            self.launch.pre_pending = true;
            if let Some(l) = &mut self.state.learning {
                l.skip_pending = false;
            }
        }
        Ok(())
    }

    /// Copy the staged injection (`in_bytes` of the pinned buffer) up and launch the burst graph;
    /// on one GPU, the next burst's propagation right after it.
    pub(in crate::backend::cuda) fn launch_graphs(&mut self, in_bytes: usize) -> Result<(), BackendError> {
        self.launch_pre()?;
        if let Some(t) = &mut self.launch.timing {
            t.side = Some(self.launch.cur);
            t.burst.0.record(&self.stream).map_err(dev_err("recording an event"))?;
        }
        // SAFETY: copies `in_bytes` (<= both buffers' capacity) from our pinned buffer to our
        // device buffer on our stream; the host does not touch the pinned buffer until the burst
        // is done.
        unsafe { sys::cuMemcpyHtoDAsync_v2(self.state.net.host_in, self.io.host_in.ptr() as *const _, in_bytes, self.stream.cu_stream()) }
            .result()
            .map_err(dev_err("copying the injection"))?;
        // SAFETY: launches our own instantiated graph on our own stream.
        unsafe { result::graph::launch(self.launch.graphs[self.launch.cur].cu_graph_exec(), self.stream.cu_stream()) }
            .map_err(dev_err("launching the burst graph"))?;
        if let Some(t) = &self.launch.timing {
            t.burst.1.record(&self.stream).map_err(dev_err("recording an event"))?;
        }
        self.launch.pre_pending = false;
        if self.state.multi.is_none() {
            // the propagation of the list this burst writes (side 1 - cur), queued behind it
            self.launch.cur = 1 - self.launch.cur;
            let r = self.launch_pre();
            self.launch.cur = 1 - self.launch.cur;
            r?;
        }
        Ok(())
    }
}
