//! One GPU of several: where its own fired lists lie for the others, peer access between the
//! GPUs, and the connection to the others' lists (on one host: `multi.rs`), or to a buffer the
//! host fills with the whole brain's spikes (a brain over processes: `engine.rs`).

use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice};

use crate::backend::cuda::backend::{CudaBackend, Multi};
use crate::backend::cuda::gpus::exchange::GpuInbox;
use crate::backend::cuda::gpus::meeting::{Meeting, Seat};
use crate::backend::cuda::layout::{as_bytes, dev_err, dptr, Peer, SumPeer, M_COUNTER};
use crate::backend::BackendError;

impl CudaBackend {
    /// Where this GPU's own fired lists lie, for the other GPUs: `Peer` of side 0 and of side 1.
    pub(crate) fn own_lists(&self) -> [(u64, u64); 2] {
        let misc = dptr(&self.state.misc, &self.stream);
        [0, 1].map(|i| (dptr(&self.state.fired[i], &self.stream), misc + 8 * (M_COUNTER + i) as u64))
    }

    /// Let this GPU read `other`'s memory (NVLink or PCIe peer access); a clear error when it cannot.
    pub(crate) fn enable_peer_access(&self, other: &CudaBackend) -> Result<(), BackendError> {
        peer_access(&self.ctx, &other.ctx)
    }

    /// One GPU of several in the resident kernel: where its inbox lies, for the others.
    pub(crate) fn inbox(&self) -> Option<GpuInbox> {
        let blocks = self.launch.resident.as_ref()?.blocks();
        Some(self.launch.exchange.as_ref()?.inbox(&self.stream, self.state.base, blocks))
    }

    /// One GPU of several in this process that sums its binned procedural synapses with the
    /// others': where its partial sums lie, for them.
    pub(in crate::backend::cuda) fn sum_peer(&self) -> Option<SumPeer> {
        self.state.proc_bins.as_ref()?.sum_peer(&self.stream)
    }

    /// GPU `me` of several: where every GPU's own lists lie (`own_lists` of each, this one's
    /// included, in shard order), which the propagation ahead of a (re)start gathers; in the
    /// resident kernel every GPU's inbox too (`inbox` of each), else the burst graphs are captured,
    /// which start by gathering the lists. `sums`: where the GPUs sum their binned synapses
    /// together, every GPU's partial sums (`sum_peer` of each) and their meeting.
    pub(in crate::backend::cuda) fn connect(
        &mut self,
        me: usize,
        lists: &[[(u64, u64); 2]],
        inboxes: &[GpuInbox],
        sums: Option<(&[SumPeer], Arc<Meeting>)>,
    ) -> Result<(), BackendError> {
        assert!(self.launch.path.sharded(), "connect is for one GPU of several");
        if lists.len() > 64 {
            return Err(BackendError::Device(format!("{} GPUs: at most 64 can share one brain", lists.len())));
        }
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = self.stream.clone();
        let e = |w: &'static str| dev_err(w);
        let total = self.n_total() as usize;
        let peers = [0, 1].map(|side| {
            let v: Vec<Peer> = lists.iter().map(|l| Peer { fired: l[side].0, counter: l[side].1 }).collect();
            s.clone_htod(as_bytes(&v))
        });
        let [p0, p1] = peers;
        self.state.multi = Some(Multi {
            fired: s.alloc_zeros(total.max(1)).map_err(e("alloc gathered fired list"))?,
            offs: s.alloc_zeros(total.max(1)).map_err(e("alloc gathered offsets"))?,
            shifts: s.alloc_zeros(total.max(1)).map_err(e("alloc gathered row shifts"))?,
            peers: [p0.map_err(e("uploading the peer table"))?, p1.map_err(e("uploading the peer table"))?],
            n_peers: lists.len() as u32,
        });
        if let (Some(b), Some((all, meeting))) = (&mut self.state.proc_bins, sums) {
            b.connect(&s, all)?;
            self.launch.seat = Some(Seat::new(meeting, me));
        }
        if let Some(x) = &mut self.launch.exchange {
            x.connect(&s, me, inboxes)?;
            s.synchronize().map_err(e("connecting the GPUs"))?;
            return Ok(());
        }
        s.synchronize().map_err(e("connecting the GPUs"))?;
        self.capture_graphs()
    }

    /// The other GPUs of the brain stop waiting for this one at their meetings (its burst failed).
    pub(in crate::backend::cuda) fn abandon_meeting(&self) {
        if let Some(seat) = &self.launch.seat {
            seat.abandon();
        }
    }

    /// One GPU of a brain spread over processes: the whole brain's fired list of each burst comes
    /// from the host ([`CudaBackend::upload_spikes`]) into a buffer that `gather` reads as its one
    /// peer. Returns that buffer and its counter, which the caller keeps alive.
    pub(crate) fn connect_host(&mut self) -> Result<(CudaSlice<u32>, CudaSlice<u64>), BackendError> {
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = self.stream.clone();
        let buf: CudaSlice<u32> = s.alloc_zeros((self.n_total() as usize).max(1)).map_err(dev_err("alloc the spike buffer"))?;
        let ctr: CudaSlice<u64> = s.alloc_zeros(1).map_err(dev_err("alloc the spike counter"))?;
        let peer = (dptr(&buf, &s), dptr(&ctr, &s));
        self.connect(0, &[[peer, peer]], &[], None)?;
        Ok((buf, ctr))
    }

    /// The whole brain's fired list of the last burst (any order, ids checked) into the buffer of
    /// [`CudaBackend::connect_host`], queued on the stream before the next burst's gather.
    pub(crate) fn upload_spikes(&mut self, spikes: &[u32], buf: &mut CudaSlice<u32>, ctr: &mut CudaSlice<u64>) -> Result<(), BackendError> {
        let total = self.n_total();
        if let Some(&bad) = spikes.iter().find(|&&n| n >= total) {
            return Err(BackendError::InjectionOutOfRange { neuron: bad, neurons: total });
        }
        self.ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
        let s = self.stream.clone();
        if !spikes.is_empty() {
            let mut view = buf.slice_mut(0..spikes.len());
            s.memcpy_htod(spikes, &mut view).map_err(dev_err("uploading the spikes"))?;
        }
        s.memcpy_htod(&[(spikes.len() as u64) << self.state.count_shift], ctr).map_err(dev_err("uploading the spike count"))?;
        // the propagation must gather these: it is launched with the next burst
        self.launch.pre_pending = false;
        Ok(())
    }

    /// Bursts run so far.
    pub(crate) fn bursts(&self) -> u64 {
        self.launch.burst
    }
}

/// Let the GPU of `ctx` read and write `other`'s memory (NVLink or PCIe peer access), its memory
/// pool's included; a clear error when it cannot.
pub(in crate::backend::cuda) fn peer_access(ctx: &CudaContext, other: &CudaContext) -> Result<(), BackendError> {
    let (a, b) = (ctx.ordinal(), other.ordinal());
    if a == b {
        return Ok(());
    }
    let mut can = 0;
    // SAFETY: writes one int; both ordinals name existing devices (their contexts exist).
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, ctx.cu_device(), other.cu_device()) }
        .result()
        .map_err(dev_err("querying peer access"))?;
    if can == 0 {
        return Err(BackendError::Device(format!(
            "GPU {a} cannot access the memory of GPU {b} (no peer access between them): the spike exchange needs it; use GPUs with NVLink or P2P, or fewer GPUs"
        )));
    }
    ctx.bind_to_thread().map_err(dev_err("binding the context"))?;
    // SAFETY: enables access from our (current) context to the other's; already enabled is fine.
    match unsafe { sys::cuCtxEnablePeerAccess(other.cu_ctx(), 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
        other_err => return Err(BackendError::Device(format!("CUDA: enabling peer access from GPU {a} to GPU {b}: {other_err:?}"))),
    }
    // The buffers come from the other GPU's stream-ordered memory pool, which peer access does
    // not cover: grant this GPU access to that pool too.
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: writes one handle; the device exists.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, other.cu_device()) }.result().map_err(dev_err("getting a memory pool"))?;
    let desc = sys::CUmemAccessDesc {
        location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: a as i32 },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: one valid descriptor for a valid pool.
    unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) }
        .result()
        .map_err(|e| BackendError::Device(format!("CUDA: granting GPU {a} access to the memory pool of GPU {b}: {e}")))
}
