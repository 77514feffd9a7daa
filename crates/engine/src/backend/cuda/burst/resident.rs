//! The resident kernel (every GPU, the early step): one cooperative launch that stays on the GPU
//! and runs the bursts itself, so that a burst costs the host no API call.
//!
//! The host stages a burst as before (the injection's header in its pinned buffer; the ids in the
//! caller's page-locked column or after the header), then writes a command into mapped memory
//! (`Ctl` in resident.cu): where the entries lie, how many bytes, the injection's header, each
//! half word tagged with the command's number. Block 0 of the kernel polls those words over PCIe
//! until each carries the next number (so one round trip brings the whole command) and passes the
//! command to the other blocks through device memory; the grid copies the entries into the device
//! buffer, then runs the phases the burst graph would (`inject` for input with a neuron twice,
//! `fix`, which publishes the burst into the mapped output as before, then the next burst's
//! `propagate` and `prestep`), each over its own grid of blocks, with a grid-wide barrier between
//! them (`kernels/resident.cu`, `resident_impl`).
//! The output protocol is the graphs': the host reads it the same way.
//!
//! The kernel runs on a stream of its own, so the backend's stream stays free. Whatever reads or
//! replaces device state (snapshot, restore, a larger injection buffer, drop) first parks the
//! kernel ([`Resident::park`]): a quit command, then the kernel's stream is synchronised. The
//! next burst launches it again. A parked kernel has run the next burst's propagation and early
//! step, as the graph path has.
//!
//! The launch is cooperative: the driver refuses it when the grid cannot be resident all at once
//! (so the barriers cannot deadlock). A device without cooperative launch runs graphs
//! (`graphs.rs`).

use std::sync::{Arc, Mutex};

use cudarc::driver::{sys, CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::backend::cuda::layout::{dev_err, dptr, ResParams};
use crate::backend::cuda::memory::{Park, Pinned};
use crate::backend::BackendError;

/// Bit of the command word that tells the kernel to return (`RES_QUIT` in resident.cu).
const QUIT: u64 = 1 << 63;

/// The phases of the work ahead of a burst that the kernel times (`RES_PHASES` in resident.cu).
/// Then block 0's wait for the next command, its hand-on to the grid (a small injection loaded),
/// and the rest of the burst (`inject`, `fix`). A phase that did not run is not reported (one
/// GPU's learning has no mark), so each of learning's names says so.
pub(in crate::backend::cuda) const PHASES: [&str; 11] = [
    "learning's mark",
    "learning's shift",
    "learning's rows",
    "learning's growth",
    "propagation",
    "tiles' split",
    "tiles' sums",
    "early step",
    "waiting for the command",
    "hand-on",
    "inject and fix",
];

/// Bytes of `Ctl` (resident.cu): the command's eight words, then the kernel's diagnostics word.
const CTL_BYTES: usize = 128;

/// Word of `Ctl` where the kernel says where it is (`at`).
const CTL_AT: usize = 8;

/// Word of `Ctl` the copy engine sends into `ResDev::sent` after an injection's entries.
const CTL_SENT: usize = 9;

/// Word of `ResDev` (resident.cu) that holds the last command whose entries were sent: after 4,
/// the phases' times and the bursts.
const RES_DEV_SENT: usize = 4 + PHASES.len() + 1;

/// Words of `ResDev`: then the command's header word, passed on by block 0, and the command
/// whose `fix` is done (its publishing block to the grid).
const RES_DEV_WORDS: usize = RES_DEV_SENT + 3;

/// Bit of the command's bytes word: the entries are sent by the copy engine (`RES_SENT`).
const SENT: u64 = 1 << 61;

/// The kernel reads an injection of at most this many bytes (header included) where it lies
/// (the pinned buffer) unless the copy engine sends it: no copy into device memory, no barrier
/// (`RES_DIRECT`); block 0 brings up to 8 KB of it into device memory (`res_whole`).
pub(in crate::backend::cuda) const RESIDENT_DIRECT: u64 = 16 << 10;

/// An idle kernel (paced input) reads an injection of at most this many bytes where it lies
/// (`inject` and `fix` over PCIe) instead of copying it into device memory over a grid barrier
/// first.
const IDLE_DIRECT: u64 = 64 << 10;

/// What became of the commands' entries (`NEUROBURST_CUDA_TRACE=1` reports it).
#[derive(Clone, Copy, Debug, Default)]
pub(in crate::backend::cuda) struct Handovers {
    /// Commands written while the kernel worked ahead.
    pub written_ahead: u64,
    /// Commands whose entries the copy engine sent ahead.
    pub sent_ahead: u64,
    /// Commands past [`RESIDENT_DIRECT`] whose entries an idle kernel read where they lie.
    pub read_where_they_lie: u64,
}

/// How long `park` waits for the kernel to return.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Resident blocks per SM (of what the kernel's registers allow):
/// one up to this many neurons, else two. Measured on an H100 (2026-11-24): W(100k) p50 14.3-14.5
/// us with one against 15.2-15.4 with two (fewer blocks: cheaper barriers), W(5M) 50.4-52.8 with
/// two against 54.5-57.3 with one (more warps for the early step). With the early step's warps on
/// their own (kernels/prestep.cu), W(1M) gains from two as well (one H200, 2026-11-29, back to
/// back p50 of two rounds interleaved: 44.8, 44.7 us against 52.7, 50.8; the propagation 22.9 ->
/// 20.0 us, the early step 17.6 -> 12.7 us), W(100k) still not (three rounds: 24.2 us each with
/// two against 23.0-23.6 with one; paced at 1 kHz 15.2 against 14.1 us).
const ONE_BLOCK_PER_SM_UP_TO: u32 = 500_000;

/// A brain that learns runs the resident kernel of four blocks of 256 an SM (64 registers a
/// thread: `Program::FourBlocks`) from this many neurons (its propagation not tiled): learning's
/// phases walk rows with chains of dependent loads and gain from the warps more than the other
/// phases lose to the spills and the dearer barriers. One H200, W(N, 100, 1%) every synapse
/// plastic, back to back p50 (2026-11-29), two blocks against four: 100k 38.3 / 53.5 us, 1M 153.1
/// / 101.2 us, 5M 388.0 / 306.8 us; static brains lose with four (W(5M) 146 / 183 us, W(20M)
/// tiled 789 / 1340 us). Since learning's rows run in a pipeline (two blocks: the next row's
/// entries in flight; four: its header only, the registers for more spill; 2026-11-30, night),
/// W(1M) every synapse plastic takes 68.8-69.7 us with two and 74.0-75.7 with four, W(5M) 245.5
/// with two and 219.3 with four: the crossing lies between (not measured).
const FOUR_BLOCKS_FROM: u32 = 2_000_000;

pub(in crate::backend::cuda) struct Resident {
    func: CudaFunction,
    /// The kernel of four blocks an SM (`Program::FourBlocks`).
    four_blocks: bool,
    /// `ResDev`: barrier arrivals, the command passed on.
    dev: CudaSlice<u64>,
    /// What a command or a park touches, shared with the page-locks of input columns: the driver
    /// unlocks host pages only once the device is idle, so a lock parks the kernel before it
    /// lets go of its pages (`ColumnLock`).
    state: Arc<Mutex<ResidentState>>,
}

/// The kernel's stream and command words.
struct ResidentState {
    stream: Arc<CudaStream>,
    /// The copy engine's stream: a large injection sent into device memory while the kernel
    /// still works ahead, then the command's number into `ResDev::sent`.
    copy: Arc<CudaStream>,
    /// `ResDev::sent`.
    sent: u64,
    /// False once the copy engine's sending failed (stream memory operations refused).
    can_send: bool,
    /// What became of the commands' entries.
    handovers: Handovers,
    /// Mapped pinned: `Ctl` (the command's tagged words, then `at`).
    ctl: Pinned,
    running: bool,
    /// The last command word written (its number | QUIT).
    word: u64,
    /// Blocks of the launch.
    grid: u32,
    /// Dynamic shared memory of a block.
    smem: u32,
}

impl Resident {
    /// The kernel's launch shape on this device, or why it cannot run (no cooperative launch, no
    /// room for a block). `func` is of the four-block program when `four_blocks`.
    /// `smem`: bytes of dynamic shared memory a block (the tiles' phases).
    pub(in crate::backend::cuda) fn new(
        ctx: &Arc<CudaContext>,
        func: CudaFunction,
        sm: u32,
        neurons: u32,
        four_blocks: bool,
        smem: u32,
    ) -> Result<Resident, String> {
        if !cooperative(ctx) {
            return Err("the device has no cooperative launch".into());
        }
        func.set_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem as i32)
            .map_err(|e| e.to_string())?;
        let occ = func.occupancy_max_active_blocks_per_multiprocessor(256, smem as usize, None).map_err(|e| e.to_string())?;
        let want = if four_blocks {
            4
        } else if neurons <= ONE_BLOCK_PER_SM_UP_TO {
            1
        } else {
            2
        };
        let per_sm = occ.min(want);
        if per_sm == 0 {
            return Err("the resident kernel does not fit on an SM".into());
        }
        let stream = ctx.new_stream().map_err(|e| e.to_string())?;
        let copy = ctx.new_stream().map_err(|e| e.to_string())?;
        let ctl = Pinned::new(ctx, CTL_BYTES).map_err(|e| e.to_string())?;
        let dev = stream.alloc_zeros::<u64>(RES_DEV_WORDS).map_err(|e| e.to_string())?;
        let sent = dptr(&dev, &stream) + 8 * RES_DEV_SENT as u64;
        tracing::debug!(blocks = sm * per_sm, occupancy = occ, "CUDA: resident kernel ready");
        let grid = sm * per_sm;
        let state = Arc::new(Mutex::new(ResidentState {
            stream,
            copy,
            sent,
            can_send: true,
            handovers: Handovers::default(),
            ctl,
            running: false,
            word: 0,
            grid,
            smem,
        }));
        Ok(Resident { func, four_blocks, dev, state })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ResidentState> {
        // a poisoned lock only means a panic elsewhere: the words are still consistent
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a brain of `neurons` runs the kernel of four blocks an SM: it learns and its
    /// propagation is not tiled (see [`FOUR_BLOCKS_FROM`]).
    pub(in crate::backend::cuda) fn wants_four_blocks(neurons: u32, learns: bool, tiled: bool) -> bool {
        learns && !tiled && neurons >= FOUR_BLOCKS_FROM
    }

    /// Whether this is the kernel of four blocks an SM.
    pub(in crate::backend::cuda) fn four_blocks(&self) -> bool {
        self.four_blocks
    }

    /// Blocks of the launch.
    pub(in crate::backend::cuda) fn blocks(&self) -> u32 {
        self.state().grid
    }

    pub(in crate::backend::cuda) fn running(&self) -> bool {
        self.state().running
    }

    /// The stream the kernel runs on (to ask the driver whether it failed).
    pub(in crate::backend::cuda) fn stream(&self) -> Arc<CudaStream> {
        self.state().stream.clone()
    }

    /// A handle that parks the kernel (for the page-lock of an input column).
    pub(in crate::backend::cuda) fn parker(&self) -> Arc<dyn Park> {
        self.state.clone()
    }

    pub(in crate::backend::cuda) fn whereabouts(&self) -> String {
        self.state().whereabouts()
    }

    /// Launch the kernel; `p` without the control words (filled here). The caller has finished
    /// everything on its own stream that the kernel reads.
    pub(in crate::backend::cuda) fn start(&mut self, mut p: ResParams) -> Result<(), BackendError> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(!st.running);
        let s = st.stream.clone();
        // SAFETY: zeroes our own RES_DEV_WORDS words of device memory (`ResDev`) on the kernel's stream.
        unsafe { sys::cuMemsetD32Async(dptr(&self.dev, &s), 0, 2 * RES_DEV_WORDS, s.cu_stream()) }
            .result()
            .map_err(dev_err("clearing the resident kernel's words"))?;
        p.ctl = st.ctl.dev();
        p.dev = dptr(&self.dev, &s);
        p.last = st.word;
        let cfg = LaunchConfig { grid_dim: (st.grid, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: st.smem };
        // SAFETY: every pointer in `p` points into buffers of the backend that owns this value and
        // parks the kernel (quit, then wait until it has returned) before any of them is freed or
        // replaced; the kernel indexes them within the sizes `build` allocated, as the graphs'
        // kernels do.
        unsafe { s.launch_builder(&self.func).arg(&p).launch_cooperative(cfg) }.map_err(dev_err("launching the resident kernel"))?;
        st.running = true;
        Ok(())
    }

    /// Write a command: the entries' device address, the bytes to copy (header included) and the
    /// injection's header (its two words, as staged in the pinned buffer).
    ///
    /// `send` (the entries' host address, and where in device memory they go): while the kernel
    /// still works ahead, every injection is sent by the copy engine (`bytes` less the 16 of the
    /// header), before the kernel needs them, and the kernel waits for them instead of copying
    /// them itself. A small one too: block 0 then loads nothing over PCIe after the command
    /// (W(100k) back to back, its hand-on 2.6 -> 1.4 us, period 18.8 -> 17.2 us).
    ///
    /// Not sent, entries of up to [`RESIDENT_DIRECT`] bytes are read where they lie, at `src`; on
    /// an idle kernel, where the copy engine's start costs more than the grid's reads, up to
    /// [`IDLE_DIRECT`] bytes; larger ones are copied by the grid.
    pub(in crate::backend::cuda) fn command(&mut self, src: u64, bytes: u64, header: [u64; 2], send: (u64, u64)) {
        let mut st = self.state();
        let go = (st.word & !QUIT) + 1;
        let ahead = st.working_ahead();
        st.handovers.written_ahead += ahead as u64;
        let mut sent = false;
        if ahead && bytes > 16 && st.can_send {
            let (from, to) = send;
            let s = st.copy.cu_stream();
            let word = st.ctl.ptr() as *mut u64;
            // The entries, then the command's number (from the word of `ctl` that holds it) into
            // `ResDev::sent`: copies on one stream land in order.
            // SAFETY: `from` holds the staged entries (pinned, or a page-locked column), `to` the
            // device copy of at least `bytes` (ensured by `stage`); nothing else writes the copy
            // until this burst is published, which the kernel does only after `sent` says the copy
            // is done, and the host changes neither before then (parking syncs this stream).
            let copied = unsafe {
                std::ptr::write_volatile(word.add(CTL_SENT), go);
                sys::cuMemcpyAsync(to, from, bytes as usize - 16, s)
                    .result()
                    .and_then(|()| sys::cuMemcpyAsync(st.sent, word.add(CTL_SENT) as u64, 8, s).result())
            };
            match copied {
                Ok(()) => {
                    sent = true;
                    st.handovers.sent_ahead += 1;
                }
                Err(e) => {
                    // the kernel reads or copies the entries itself, as on an idle kernel (a copy
                    // that did go out writes the same bytes)
                    tracing::warn!("CUDA: the copy engine cannot send the injection ahead ({e}); the kernel copies it");
                    st.can_send = false;
                }
            }
        }
        let idle_direct = !sent && !ahead && bytes > RESIDENT_DIRECT && bytes <= IDLE_DIRECT;
        st.handovers.read_where_they_lie += idle_direct as u64;
        let direct = !sent && (bytes <= RESIDENT_DIRECT || idle_direct);
        let flags = if sent { SENT } else { (direct as u64) << 62 };
        st.write([src, bytes | flags, header[0], header[1]], go);
    }

    /// What became of the commands' entries since the kernel was made.
    pub(in crate::backend::cuda) fn handovers(&self) -> Handovers {
        self.state().handovers
    }

    /// Stop the kernel (if it runs) and wait until it has returned.
    pub(in crate::backend::cuda) fn park(&mut self) -> Result<(), BackendError> {
        self.state().park()
    }

    /// Block 0's mean device time per burst (us) in the work ahead of the bursts since the last
    /// launch, by phase ([`PHASES`]), and the bursts (read once parked).
    pub(in crate::backend::cuda) fn phases(&self) -> Option<([f64; PHASES.len()], u64)> {
        let st = self.state();
        if st.running {
            return None;
        }
        let w = st.stream.clone_dtoh(&self.dev).ok()?;
        let n = w[4 + PHASES.len()];
        Some((std::array::from_fn(|k| w[4 + k] as f64 / n.max(1) as f64 / 1e3), n))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        let _ = self.park();
    }
}

impl ResidentState {
    /// Whether the kernel still works ahead (the propagation or the early step after the last
    /// command), from the word it writes where it is. Never right after a launch: the word then
    /// holds a command before the quit that parked it, and `word` that quit.
    fn working_ahead(&self) -> bool {
        // SAFETY: word CTL_AT of `ctl` (CTL_BYTES), written by the kernel.
        let at = unsafe { std::ptr::read_volatile((self.ctl.ptr() as *const u64).add(CTL_AT)) };
        self.running && at >> 8 == self.word & !QUIT && matches!(at & 0xFF, 4 | 5)
    }

    /// Where the kernel is, in words (for an error when a burst does not come back).
    fn whereabouts(&self) -> String {
        // SAFETY: word CTL_AT of `ctl` (CTL_BYTES), written by the kernel.
        let at = unsafe { std::ptr::read_volatile((self.ctl.ptr() as *const u64).add(CTL_AT)) };
        const PHASES: [&str; 8] = [
            "before its first command",
            "copying the injection",
            "past the copy",
            "in fix",
            "in the exchange or the propagation",
            "in the early step",
            "waiting for a command",
            "gone: the spike exchange with the other GPUs never came whole",
        ];
        format!(
            "the resident kernel ({} blocks) is {} of command {} (last command written: {})",
            self.grid,
            PHASES.get((at & 0xFF) as usize).unwrap_or(&"lost"),
            at >> 8,
            self.word & !QUIT
        )
    }

    /// The command `go` (its number | QUIT): `words` (src, bytes | direct, the header's two
    /// words) as eight half words, each tagged with the number's 32 low bits; QUIT rides in the
    /// bytes' top bit.
    fn write(&mut self, mut words: [u64; 4], go: u64) {
        let w = self.ctl.ptr() as *mut u64;
        let tag = (go & !QUIT) << 32;
        words[1] |= go & QUIT;
        let mut halves = [0u64; 8];
        for (k, &x) in words.iter().enumerate() {
            halves[2 * k] = tag | (x & 0xFFFF_FFFF);
            halves[2 * k + 1] = tag | (x >> 32);
        }
        // What the command points at (the staged entries) is written before any of its words: the
        // kernel reads it once every word carries the new tag (its acquire after the words).
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        // SAFETY: `ctl` holds CTL_BYTES (16 aligned words); each word is stored whole.
        unsafe {
            for (k, &h) in halves.iter().enumerate() {
                std::ptr::write_volatile(w.add(k), h);
            }
        }
        self.word = go;
    }

    /// Stop the kernel (if it runs) and wait until it has returned.
    fn park(&mut self) -> Result<(), BackendError> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        self.stream.context().bind_to_thread().map_err(dev_err("binding the context"))?;
        // a copy the kernel waits for is done before the kernel parks; one of a failed burst too
        self.copy.synchronize().map_err(dev_err("finishing the injection's copy"))?;
        let go = ((self.word & !QUIT) + 1) | QUIT;
        self.write([0; 4], go);
        // a kernel stuck in a phase never sees the quit: give up after a while rather than hang
        let since = std::time::Instant::now();
        loop {
            // SAFETY: queries our own stream.
            match unsafe { sys::cuStreamQuery(self.stream.cu_stream()) } {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY if since.elapsed() < STOP_WAIT => {
                    std::thread::sleep(std::time::Duration::from_micros(20))
                }
                sys::CUresult::CUDA_ERROR_NOT_READY => {
                    return Err(BackendError::Device(format!("CUDA: the resident kernel did not stop: {}", self.whereabouts())))
                }
                other => return Err(BackendError::Device(format!("CUDA: the resident kernel failed: {other:?}"))),
            }
        }
    }
}

/// Whether the device has cooperative launch (the resident kernel needs it).
pub(in crate::backend::cuda) fn cooperative(ctx: &CudaContext) -> bool {
    ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH).is_ok_and(|c| c != 0)
}

impl Park for Mutex<ResidentState> {
    fn park(&self) -> Result<(), BackendError> {
        self.lock().unwrap_or_else(|e| e.into_inner()).park()
    }
}
