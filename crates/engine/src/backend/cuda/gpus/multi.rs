//! One brain on several GPUs of one machine.
//!
//! Each GPU owns a contiguous range of neurons (a [`ShardPlan`]): their state and every synapse
//! onto them, with rows for every source of the brain. Once every GPU has finished burst t, each
//! has the whole brain's fired list of burst t and propagates it over its own synapses, ahead of
//! burst t+1's injection; burst t+1 then only injects and steps its own neurons. Only fired ids
//! travel between the GPUs.
//!
//! Two ways, as on one GPU:
//! - **Linked** (every brain the resident kernel can run): each GPU runs its share in the resident
//!   kernel, and the kernels exchange the lists themselves (peer stores and arrival counters over
//!   NVLink, `exchange.rs`): the host is out of the per-burst loop between the GPUs.
//! - **Graphs** (brains whose procedural synapses are binned or drawn row by row, and shards that
//!   share a GPU, where two resident kernels could not both stay): each GPU gathers
//!   the others' lists by peer loads in a CUDA graph that its thread launches once every GPU has
//!   finished the burst (a host barrier).
//!
//! One host thread per GPU writes that GPU's share of the injection, hands the burst to its GPU
//! and reads its output; the calling thread checks the input, hands out the burst and joins the
//! motor output.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::backend::cuda::backend::CudaBackend;
use crate::backend::cuda::build::connectome::GpuShard;
use crate::backend::cuda::gpus::meeting::{wait_until, Meeting, SPIN};
use crate::backend::shard::{check_state, state_slice};
use crate::backend::{out_of_range, Backend, BackendError, BackendInfo, BurstOutput, Readback};
use crate::brain::Brain;
use crate::connectome::stream::Streamed;
use crate::model::{InjectionSlice, Injections, NeuronState};
use crate::partition::ShardPlan;

/// Where the GPUs' synapses come from.
enum Placed {
    /// The brain's parts hold them.
    Host,
    /// Drawn on the host chunk by chunk, copied to each GPU.
    Streamed(Arc<Streamed>),
    /// Each GPU builds its part from the closed forms.
    OnGpus(crate::backend::cuda::build::on_gpu::Recipe),
}

/// What the calling thread hands a worker for one burst: the input, sorted.
#[derive(Clone, Copy)]
struct Job {
    /// Borrowed from the caller for the burst (see `MultiGpu::run`), not for 'static.
    input: InjectionSlice<'static>,
}

/// What a worker hands back.
#[derive(Default)]
struct Out {
    fired: Vec<u32>,
    potentials: Vec<i64>,
    fired_total: u64,
    /// Its GPU's time of the burst, once timed (`WorkerCommand::Time`).
    device_us: Option<f64>,
    error: Option<BackendError>,
}

/// Requests other than bursts, run on the worker's thread.
enum WorkerCommand {
    Snapshot,
    Restore(NeuronState),
    /// The propagation ahead of the next burst, once every GPU has its state (`CudaBackend::ahead`).
    Ahead,
    /// Time each burst on the GPU from now on (graphs).
    Time,
    /// Learn or not, from the firing of the burst after the next on.
    GpuLearning(bool),
}

enum Reply {
    State(Result<NeuronState, BackendError>),
    Done(Result<(), BackendError>),
    Timed(bool),
}

/// What the calling thread and the workers share.
struct WorkerShared {
    /// Round the workers are to run (0: none yet), one per burst.
    go: AtomicU64,
    job: Mutex<Job>,
    /// Graphs: bursts run by the workers, summed (each adds one per burst once it has its output):
    /// every GPU propagates the next burst's spikes ahead once all have stepped.
    stepped: AtomicU64,
    stop: AtomicBool,
}

struct Worker {
    range: Range<u32>,
    /// To wake it when it dozes between bursts.
    thread: std::thread::Thread,
    done: Arc<AtomicU64>,
    out: Arc<Mutex<Out>>,
    control: std::sync::mpsc::Sender<WorkerCommand>,
    reply: std::sync::mpsc::Receiver<Reply>,
    handle: Option<JoinHandle<()>>,
}

/// The brain on several GPUs.
pub struct MultiGpu {
    shared: Arc<WorkerShared>,
    /// Where the GPUs sum their binned synapses together: their meeting (abandoned on drop).
    meeting: Option<Arc<Meeting>>,
    workers: Vec<Worker>,
    neurons: u32,
    burst: u64,
    round: u64,
    /// Neurons fired in the whole brain in the last burst (the workers' counts summed).
    fired_total: u64,
    /// The last burst's device time: the slowest GPU's, where they are timed.
    device_us: Option<f64>,
    /// The largest synaptic input of one burst a neuron can get (the GPUs' largest).
    input_bound: Option<u64>,
    fired: Vec<u32>,
    potentials: Vec<i64>,
    /// The input, sorted, when it came unsorted.
    sorted: Injections,
    info: BackendInfo,
}

/// `brain` (built without rows) with one empty part per range of `plan`.
fn with_ranges(mut brain: Brain, plan: &ShardPlan) -> Brain {
    brain.connectome.parts =
        plan.ranges.iter().map(|r| crate::connectome::Part { targets_range: r.clone(), ..Default::default() }).collect();
    brain
}

/// Whether the GPUs of a brain with these parts run it in the resident kernel (linked): unless its
/// procedural synapses are binned or drawn row by row (graphs, as on one GPU).
fn links(parts: &[Range<u32>], procedural: &[crate::backend::cuda::layout::ProcMap], has_rows: bool) -> bool {
    !has_rows && parts.iter().all(|r| !r.is_empty() && !crate::backend::cuda::burst::procbin::ProcBins::wanted(r.len() as u32, procedural))
}

/// Dropped by a GPU's build thread that failed or panicked (still holding the meeting): the GPUs
/// building together stop waiting for it. A thread that built its share takes the meeting out.
struct StopOthers(Option<Arc<crate::backend::cuda::build::on_gpu::Parts>>);

impl StopOthers {
    /// The thread built its share: nothing to stop.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for StopOthers {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            p.fail();
        }
    }
}

impl MultiGpu {
    /// Put `brain`, built for `plan` with one part per shard ([`Brain::build_sharded`]), on
    /// `devices` (one per shard). Checks peer access between every pair first.
    pub fn new(brain: Brain, plan: &ShardPlan, readback: Readback, devices: &[usize]) -> Result<MultiGpu, BackendError> {
        Self::placed(brain, plan, Placed::Host, readback, devices)
    }

    /// As [`MultiGpu::new`] for a brain built with every mapping procedural, every one a fanout
    /// in closed form ([`crate::connectome::storage::gpu_buildable`]): each GPU builds its own
    /// part from the seed (`build.rs`: the rows counted, then drawn), all at once; the host holds
    /// no synapse. Any other brain is an error.
    pub fn built_on_gpus(
        brain: Brain,
        plan: &ShardPlan,
        readback: Readback,
        devices: &[usize],
        progress: bool,
    ) -> Result<MultiGpu, BackendError> {
        let (procedural, rows) = crate::backend::cuda::build::connectome::gpu_procedural(&brain.connectome)?;
        let c = &brain.connectome;
        let recipe = (c.synapses() == 0 && c.plastic.is_none() && !procedural.is_empty() && rows.is_empty())
            .then(|| crate::backend::cuda::build::on_gpu::Recipe::new(procedural, progress))
            .flatten()
            .ok_or_else(|| {
                BackendError::Device("this brain cannot be built on its GPUs (every mapping must be a fanout in closed form)".into())
            })?;
        Self::placed(with_ranges(brain, plan), plan, Placed::OnGpus(recipe), readback, devices)
    }

    /// As [`MultiGpu::new`] for a brain that stores nothing (every mapping drawn again, built by
    /// [`Brain::without_rows`]): each GPU gets its neurons' range and no rows.
    pub fn drawn_again(brain: Brain, plan: &ShardPlan, readback: Readback, devices: &[usize]) -> Result<MultiGpu, BackendError> {
        Self::placed(with_ranges(brain, plan), plan, Placed::Host, readback, devices)
    }

    /// As [`MultiGpu::new`] for a brain planned by [`Brain::planned_sharded`] (its parts hold row
    /// pointers only): each GPU's synapses are drawn on the host a few chunks at a time and copied
    /// to it.
    pub fn streamed(
        brain: Brain,
        plan: &ShardPlan,
        streamed: Streamed,
        readback: Readback,
        devices: &[usize],
    ) -> Result<MultiGpu, BackendError> {
        Self::placed(brain, plan, Placed::Streamed(Arc::new(streamed)), readback, devices)
    }

    fn placed(brain: Brain, plan: &ShardPlan, placed: Placed, readback: Readback, devices: &[usize]) -> Result<MultiGpu, BackendError> {
        assert_eq!(plan.len(), devices.len(), "one GPU per shard");
        assert_eq!(brain.connectome.parts.len(), plan.len(), "one part per shard");
        let neurons = brain.layout.neurons;
        let params = brain.layout.params;
        let (procedural, rows) = crate::backend::cuda::build::connectome::gpu_procedural(&brain.connectome)?;
        let (streamed, recipe) = match placed {
            Placed::Host => (None, None),
            Placed::Streamed(st) => (Some(st), None),
            Placed::OnGpus(r) => (None, Some(r)),
        };
        // built on the GPUs: the recipe stores the procedural mappings
        let procedural = if recipe.is_some() { Vec::new() } else { procedural };
        // linked resident kernels each hold a whole GPU: shards sharing a GPU run on graphs
        let distinct = devices.iter().collect::<std::collections::BTreeSet<_>>().len() == devices.len();
        let linked = distinct && links(&plan.ranges, &procedural, !rows.is_empty());
        let table = recipe.as_ref().map_or(brain.connectome.contributions, |r| r.table.clone());
        let plastic = brain.connectome.plastic;
        // built on the GPUs: they meet to draw each other's parts
        let parts = recipe.as_ref().map(|_| crate::backend::cuda::build::on_gpu::Parts::new(plan.len()));
        let shards: Vec<GpuShard> = (brain.connectome.parts.into_iter().enumerate())
            .map(|(i, part)| GpuShard {
                part,
                params: params.clone(),
                contributions: table.clone(),
                neurons,
                plastic: plastic.clone(),
                procedural: procedural.clone(),
                rows: rows.clone(),
                // one progress bar: the first GPU's
                recipe: recipe.clone().map(|mut r| {
                    r.progress &= i == 0;
                    r
                }),
                part_rows: None,
                parts: parts.clone().map(|p| (p, i)),
                streamed: streamed.clone().map(|st| (st, i)),
                together: true,
            })
            .collect();
        // every GPU builds (or takes) its part at once
        let t0 = Instant::now();
        let results: Vec<Result<CudaBackend, BackendError>> = std::thread::scope(|sc| {
            let handles: Vec<_> = shards
                .into_iter()
                .zip(devices)
                .map(|(shard, &device)| {
                    let rb = readback.clone();
                    let mut stop = StopOthers(shard.parts.as_ref().map(|p| p.0.clone()));
                    sc.spawn(move || {
                        let r = CudaBackend::new_shard(shard, rb, device, linked);
                        if r.is_ok() {
                            stop.disarm();
                        }
                        r
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(BackendError::Device("a GPU's build stopped".into())))).collect()
        });
        // the error of the GPU that failed, not the others' that stopped waiting for it
        let another = |e: &BackendError| matches!(e, BackendError::Device(m) if m == crate::backend::cuda::build::on_gpu::ANOTHER_FAILED);
        if let Some(i) = results.iter().position(|r| r.as_ref().is_err_and(|e| !another(e))).or(results.iter().position(|r| r.is_err())) {
            return Err(results.into_iter().nth(i).and_then(|r| r.err()).expect("an error"));
        }
        let gpus: Vec<CudaBackend> = results.into_iter().flatten().collect();
        let t1 = Instant::now();
        let mut gpus = gpus;
        for a in &gpus {
            for b in &gpus {
                a.enable_peer_access(b)?;
            }
        }
        let lists: Vec<[(u64, u64); 2]> = gpus.iter().map(|g| g.own_lists()).collect();
        let inboxes: Vec<_> = gpus.iter().filter_map(|g| g.inbox()).collect();
        // binned procedural synapses: every GPU sums its own neurons' rows onto the whole brain
        let sums: Vec<_> = gpus.iter().filter_map(|g| g.sum_peer()).collect();
        let meeting =
            if sums.len() == gpus.len() { Some(Meeting::new(&gpus.iter().map(|g| g.ctx.clone()).collect::<Vec<_>>())?) } else { None };
        for (k, g) in gpus.iter_mut().enumerate() {
            g.connect(k, &lists, &inboxes, meeting.clone().map(|m| (&sums[..], m)))?;
        }
        if linked {
            for g in &mut gpus {
                g.ahead()?;
            }
        }
        tracing::debug!(
            parts_s = (t1 - t0).as_secs_f64(),
            linking_s = t1.elapsed().as_secs_f64(),
            "CUDA: the GPUs' parts built and linked"
        );
        let infos: Vec<BackendInfo> = gpus.iter().map(|g| g.info()).collect();
        let input_bound = gpus.iter().map(|g| g.input_bound()).try_fold(0, |m, b| b.map(|b| m.max(b)));
        let info = BackendInfo {
            backend: "cuda".into(),
            device: format!(
                "{} GPUs ({}, {}): {}",
                gpus.len(),
                plan.strategy,
                if linked { "resident kernels, linked" } else { "graphs" },
                infos.iter().map(|i| i.device.as_str()).collect::<Vec<_>>().join("; ")
            ),
            memory_bytes: infos.iter().map(|i| i.memory_bytes).sum(),
            bytes_per_synapse: infos.iter().map(|i| i.bytes_per_synapse).sum::<f64>() / infos.len() as f64,
        };
        let shared = Arc::new(WorkerShared {
            go: AtomicU64::new(0),
            job: Mutex::new(Job { input: InjectionSlice::EMPTY }),
            stepped: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let n_workers = gpus.len();
        let workers = gpus
            .into_iter()
            .zip(&plan.ranges)
            .enumerate()
            .map(|(k, (gpu, range))| {
                let done = Arc::new(AtomicU64::new(0));
                let out = Arc::new(Mutex::new(Out::default()));
                let (control, control_rx) = std::sync::mpsc::channel();
                let (reply_tx, reply) = std::sync::mpsc::channel();
                let (sh, d, o, r) = (shared.clone(), done.clone(), out.clone(), range.clone());
                let handle = std::thread::Builder::new()
                    .name(format!("gpu-shard-{k}"))
                    .spawn(move || worker(k, gpu, r, (!linked).then_some(n_workers), sh, d, o, control_rx, reply_tx))
                    .map_err(|e| BackendError::Device(format!("cannot start the thread of GPU shard {k}: {e}")))?;
                let thread = handle.thread().clone();
                Ok(Worker { range: range.clone(), thread, done, out, control, reply, handle: Some(handle) })
            })
            .collect::<Result<Vec<_>, BackendError>>()?;
        Ok(MultiGpu {
            shared,
            meeting,
            workers,
            neurons,
            burst: 0,
            round: 0,
            fired_total: 0,
            device_us: None,
            input_bound,
            fired: Vec::new(),
            potentials: Vec::new(),
            sorted: Injections::new(),
            info,
        })
    }

    /// Run burst `t` over `input` (sorted) on every GPU.
    fn run(&mut self, t: u64, input: InjectionSlice<'_>) -> Result<(), BackendError> {
        debug_assert!(input.sorted());
        // no GPU may run a burst the others refuse: ids past the brain are refused here (sorted:
        // its last id is its largest), each GPU takes its share of the rest
        if input.id_bounds().is_some_and(|(_, max)| max >= self.neurons) {
            return Err(out_of_range(input, 0..self.neurons));
        }
        // SAFETY: only the lifetime changes: the workers read the input during this round alone,
        // and this call returns only once every worker has reported the round done.
        let job = Job { input: unsafe { std::mem::transmute::<InjectionSlice<'_>, InjectionSlice<'static>>(input) } };
        *self.shared.job.lock().unwrap() = job;
        self.round += 1;
        let round = self.round;
        self.shared.go.store(round, Ordering::SeqCst);
        for w in &self.workers {
            w.thread.unpark();
        }
        for w in &self.workers {
            wait_until(|| w.done.load(Ordering::Acquire) == round);
        }
        *self.shared.job.lock().unwrap() = Job { input: InjectionSlice::EMPTY };
        self.fired.clear();
        self.potentials.clear();
        let mut error = None;
        self.fired_total = 0;
        let mut device_us = Some(0.0f64);
        for w in &self.workers {
            let mut o = w.out.lock().unwrap();
            device_us = device_us.zip(o.device_us).map(|(a, b)| a.max(b));
            if let Some(e) = o.error.take() {
                error.get_or_insert(e);
            }
            self.fired.extend_from_slice(&o.fired);
            self.potentials.extend_from_slice(&o.potentials);
            self.fired_total += o.fired_total;
        }
        self.device_us = device_us;
        match error {
            Some(e) => Err(e),
            None => {
                self.burst = t;
                Ok(())
            }
        }
    }

    fn ask(&self, w: &Worker, c: WorkerCommand) -> Result<Reply, BackendError> {
        w.control.send(c).map_err(|_| BackendError::Device("a GPU shard's thread has stopped".into()))?;
        w.thread.unpark();
        w.reply.recv().map_err(|_| BackendError::Device("a GPU shard's thread has stopped".into()))
    }

    /// The largest synaptic input of one burst a neuron can get, or a bound of it that fits i32
    /// (built on the GPUs); None: procedural synapses.
    pub fn input_bound(&self) -> Option<u64> {
        self.input_bound
    }

    /// Neurons of each GPU.
    pub fn ranges(&self) -> Vec<Range<u32>> {
        self.workers.iter().map(|w| w.range.clone()).collect()
    }
}

/// The thread of GPU `k`; `graphs`: Some(GPUs of the brain) on the graphs path, where every GPU
/// propagates once all have stepped.
#[allow(clippy::too_many_arguments)]
fn worker(
    k: usize,
    mut gpu: CudaBackend,
    range: Range<u32>,
    graphs: Option<usize>,
    shared: Arc<WorkerShared>,
    done: Arc<AtomicU64>,
    out: Arc<Mutex<Out>>,
    control: std::sync::mpsc::Receiver<WorkerCommand>,
    reply: std::sync::mpsc::Sender<Reply>,
) {
    let mut last = 0u64;
    // bursts this worker has launched (every worker launches the same ones)
    let mut stepped = 0u64;
    loop {
        // a burst, a control request, or stop
        let start = Instant::now();
        let mut spins = 0u32;
        let t = loop {
            let t = shared.go.load(Ordering::Acquire);
            if t != last {
                break Some(t);
            }
            if shared.stop.load(Ordering::Relaxed) {
                if let Some(s) = gpu.trace_summary() {
                    tracing::info!("GPU shard {k} (GPU {}): {s}", gpu.info().device);
                }
                return;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) {
                if let Ok(c) = control.try_recv() {
                    let r = match c {
                        WorkerCommand::Snapshot => Reply::State(gpu.snapshot()),
                        WorkerCommand::Restore(st) => Reply::Done(gpu.restore(&st)),
                        WorkerCommand::Ahead => Reply::Done(gpu.ahead()),
                        WorkerCommand::Time => Reply::Timed(gpu.start_timing()),
                        WorkerCommand::GpuLearning(on) => Reply::Done(gpu.switch_learning(on)),
                    };
                    let _ = reply.send(r);
                    break None;
                }
            }
            if !spins.is_multiple_of(1024) || start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                // idle for a while: doze until the next burst unparks this thread
                std::thread::park_timeout(Duration::from_millis(2));
            }
        };
        let Some(t) = t else { continue };
        last = t;
        let input = shared.job.lock().unwrap().input;
        // this GPU's share (the input is sorted, its ids checked by the caller)
        let r = gpu.stage(input.within(range.clone())).and_then(|s| gpu.launch(s));
        let mut o = out.lock().unwrap();
        match r {
            Ok(b) => {
                o.fired.clear();
                o.fired.extend_from_slice(b.fired);
                o.potentials.clear();
                o.potentials.extend_from_slice(b.potentials);
                o.fired_total = b.fired_total;
                o.error = None;
                o.device_us = gpu.timed_us();
            }
            Err(e) => {
                // the brain cannot go on: no GPU waits for this one at a meeting
                gpu.abandon_meeting();
                o.error = Some(e);
            }
        }
        drop(o);
        done.store(t, Ordering::Release);
        if let Some(n_workers) = graphs {
            // once every GPU has stepped, their fired lists are complete: gather and propagate them
            // for the next burst now, while the host hands out this one's output and waits for the
            // next injection (an error here recurs, and is reported, when the next burst launches)
            stepped += 1;
            shared.stepped.fetch_add(1, Ordering::AcqRel);
            wait_until(|| shared.stepped.load(Ordering::Acquire) >= stepped * n_workers as u64);
            let _ = gpu.launch_pre();
        }
    }
}

impl Backend for MultiGpu {
    fn info(&self) -> BackendInfo {
        self.info.clone()
    }

    fn burst(&mut self, input: InjectionSlice<'_>) -> Result<BurstOutput<'_>, BackendError> {
        // ids are checked by the workers, each over its share, in parallel
        let t = self.burst + 1;
        if input.sorted() {
            self.run(t, input)?;
        } else {
            // each GPU takes its share by binary search: sort a copy first
            let mut sorted = std::mem::take(&mut self.sorted);
            sorted.clear();
            sorted.extend_from(input);
            sorted.sort();
            let r = self.run(t, sorted.as_slice());
            self.sorted = sorted;
            r?;
        }
        Ok(BurstOutput { burst: t, fired: &self.fired, potentials: &self.potentials, fired_total: self.fired_total })
    }

    /// Every GPU's bursts timed (on graphs: the linked resident kernels have no burst of their own).
    fn time_device(&mut self) -> bool {
        let mut all = true;
        for w in &self.workers {
            all &= matches!(self.ask(w, WorkerCommand::Time), Ok(Reply::Timed(true)));
        }
        all
    }

    fn device_us(&mut self) -> Option<f64> {
        self.device_us
    }

    fn snapshot(&mut self) -> Result<NeuronState, BackendError> {
        let mut st = NeuronState { burst: self.burst, ..Default::default() };
        for w in &self.workers {
            match self.ask(w, WorkerCommand::Snapshot)? {
                Reply::State(s) => {
                    let s = s?;
                    st.potential.extend_from_slice(&s.potential);
                    st.refractory.extend_from_slice(&s.refractory);
                    st.consecutive.extend_from_slice(&s.consecutive);
                    st.fired.extend_from_slice(&s.fired);
                    crate::backend::shard::merge_learned(&mut st.learned, s.learned);
                }
                _ => unreachable!("a snapshot is answered with a state"),
            }
        }
        st.fired.sort_unstable();
        Ok(st)
    }

    /// Each GPU learns from its own part's synapses, with the whole brain's histories: each is
    /// switched (a worker takes the switch after the learning of its last burst's firing is
    /// queued).
    fn set_learning(&mut self, on: bool) -> Result<(), BackendError> {
        for w in &self.workers {
            match self.ask(w, WorkerCommand::GpuLearning(on))? {
                Reply::Done(r) => r?,
                _ => unreachable!("a learning switch is answered with done"),
            }
        }
        Ok(())
    }

    fn restore(&mut self, st: &NeuronState) -> Result<(), BackendError> {
        check_state(st, self.neurons)?;
        for w in &self.workers {
            let mut part = state_slice(st, &w.range);
            part.fired = st.fired.clone();
            match self.ask(w, WorkerCommand::Restore(part))? {
                Reply::Done(r) => r?,
                _ => unreachable!("a restore is answered with done"),
            }
        }
        // every GPU has its list now: each gathers the others' (linked; on graphs the next burst does)
        for w in &self.workers {
            match self.ask(w, WorkerCommand::Ahead)? {
                Reply::Done(r) => r?,
                _ => unreachable!("a propagation ahead is answered with done"),
            }
        }
        self.burst = st.burst;
        Ok(())
    }
}

impl Drop for MultiGpu {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(m) = &self.meeting {
            m.abandon();
        }
        for w in &mut self.workers {
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        }
    }
}
