//! One GPU of several in the resident kernel: the spike exchange between the GPUs of one host,
//! with the host out of the per-burst loop.
//!
//! Each GPU keeps an inbox: room for every GPU's fired list (each at its first neuron, so no
//! offsets need agreeing), a count word per GPU, both twice (by exchange parity), and two arrival
//! counters. After a burst's `fix`, every resident block of every GPU copies its share of its own
//! list into every GPU's inbox (peer stores over NVLink), fences at system scope and adds one to
//! that GPU's arrivals; each GPU then waits until its arrivals count every block of every GPU and
//! gathers its inbox, locally, into the whole brain's list with its own row offsets
//! (`kernels/resident.cu`, `exchange`). Only fired ids cross NVLink, once, as stores: no GPU waits
//! on a load from another.
//!
//! The arrival counters are never cleared: exchange e of the brain (counted by the host, the same
//! on every GPU, passed in at each launch) waits for `(e + 1) / 2` times the arrivals of one
//! exchange in its parity's counter.

use cudarc::driver::{CudaSlice, CudaStream};

use crate::backend::cuda::layout::{as_bytes, dev_err, dptr, Link, Peer, Side, Xchg};
use crate::backend::BackendError;

/// GPUs one brain may span (MAX_PEERS in propagate.cu).
pub(in crate::backend::cuda) const MAX_GPUS: usize = 64;

/// Where one GPU's inbox lies, and what it adds to an exchange, for the others.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GpuInbox {
    ids: u64,
    counts: u64,
    arrivals: u64,
    /// The GPU's first neuron.
    base: u32,
    /// Its resident blocks (each arrives once per exchange on every GPU).
    blocks: u32,
}

pub(in crate::backend::cuda) struct Exchange {
    /// u32[2 * neurons of the brain]: by parity, every GPU's list at its first neuron.
    ids: CudaSlice<u32>,
    /// u64[2 * MAX_GPUS]: by parity, every GPU's count (count << count_shift).
    counts: CudaSlice<u64>,
    /// u64[2]: arrivals by parity.
    arrivals: CudaSlice<u64>,
    /// Once connected: the `Link` table and the inbox's `Peer` tables by parity.
    tables: Option<(CudaSlice<u8>, [CudaSlice<u8>; 2])>,
    /// Blocks of every GPU: the arrivals of one exchange.
    per: u64,
    gpus: u32,
    neurons: u64,
    /// Exchanges commanded so far.
    done: u64,
}

impl Exchange {
    /// The inbox of one GPU of a brain of `neurons` neurons.
    pub(in crate::backend::cuda) fn new(s: &std::sync::Arc<CudaStream>, neurons: u32) -> Result<Exchange, BackendError> {
        let e = |w: &'static str| dev_err(w);
        Ok(Exchange {
            ids: s.alloc_zeros(2 * neurons as usize).map_err(e("alloc the spike inbox"))?,
            counts: s.alloc_zeros(2 * MAX_GPUS).map_err(e("alloc the spike inbox's counts"))?,
            arrivals: s.alloc_zeros(2).map_err(e("alloc the spike inbox's arrivals"))?,
            tables: None,
            per: 0,
            gpus: 0,
            neurons: neurons as u64,
            done: 0,
        })
    }

    pub(in crate::backend::cuda) fn inbox(&self, s: &CudaStream, base: u32, blocks: u32) -> GpuInbox {
        GpuInbox { ids: dptr(&self.ids, s), counts: dptr(&self.counts, s), arrivals: dptr(&self.arrivals, s), base, blocks }
    }

    /// GPU `me` of `all` (every GPU's inbox, in shard order): where its list goes, where the
    /// others' land.
    pub(in crate::backend::cuda) fn connect(
        &mut self,
        s: &std::sync::Arc<CudaStream>,
        me: usize,
        all: &[GpuInbox],
    ) -> Result<(), BackendError> {
        if all.len() > MAX_GPUS {
            return Err(BackendError::Device(format!("{} GPUs: at most {MAX_GPUS} can share one brain", all.len())));
        }
        let n = self.neurons;
        let links: Vec<Link> = all
            .iter()
            .map(|g| Link {
                ids: [0, 1].map(|p| g.ids + 4 * (p * n + all[me].base as u64)),
                count: [0, 1].map(|p| g.counts + 8 * (p * MAX_GPUS + me) as u64),
                arrivals: g.arrivals,
            })
            .collect();
        let mine = all[me];
        let inbox = [0u64, 1].map(|p| {
            let v: Vec<Peer> = all
                .iter()
                .enumerate()
                .map(|(k, g)| Peer {
                    fired: mine.ids + 4 * (p * n + g.base as u64),
                    counter: mine.counts + 8 * (p as usize * MAX_GPUS + k) as u64,
                })
                .collect();
            s.clone_htod(as_bytes(&v))
        });
        let [i0, i1] = inbox;
        let e = |w: &'static str| dev_err(w);
        let links = s.clone_htod(as_bytes(&links)).map_err(e("uploading the exchange's links"))?;
        self.tables = Some((links, [i0.map_err(e("uploading the inbox table"))?, i1.map_err(e("uploading the inbox table"))?]));
        self.per = all.iter().map(|g| g.blocks as u64).sum();
        self.gpus = all.len() as u32;
        Ok(())
    }

    /// The kernel's view for a launch, `gathered` the list it gathers into.
    pub(in crate::backend::cuda) fn params(&self, s: &CudaStream, gathered: Side) -> Xchg {
        let Some((links, inbox)) = &self.tables else { return Xchg::default() };
        Xchg {
            links: dptr(links, s),
            inbox: [dptr(&inbox[0], s), dptr(&inbox[1], s)],
            arrivals: dptr(&self.arrivals, s),
            gathered,
            done: self.done,
            per: self.per,
            n: self.gpus,
            pad: 0,
        }
    }

    /// One more burst commanded: one more exchange.
    pub(in crate::backend::cuda) fn commanded(&mut self) {
        self.done += 1;
    }
}
