//! A shard starts: its brain built (its share only), its engine, its checkpoints, its Zenoh
//! session and subscriptions; then the run loop bursts it ([`crate::run::bursts`]).

use std::ops::Range;
use std::sync::Arc;

use ::zenoh::sample::{Locality, SampleKind};
use ::zenoh::Wait;

use crate::backend::cpu::CpuEngine;
use crate::backend::shard::ShardEngine;
use crate::brain::Brain;
use crate::cluster::checkpoints::ShardCheckpoints;
use crate::cluster::inbox::SharedInbox;
use crate::cluster::io::WorkloadIo;
use crate::cluster::links::Links;
use crate::cluster::options::{session_config, zerr, ClusterError, Outcome, Report, ShardOptions};
use crate::cluster::wire::Keys;
use crate::genome::{AreaKind, Genome};
use crate::model::{Injections, Layout};
use crate::run::Io;

use super::{Shard, CLOSE_WAIT};

/// Run shard `o.index` until the last burst, a signal, or a loss that stops it.
pub fn run(mut o: ShardOptions) -> Result<Report, ClusterError> {
    o.cluster.validate(Some(o.index))?;
    let n = o.cluster.shards();
    let me = o.index;
    let threads = rayon::current_num_threads();
    // a GPU takes the shard's synapses as one part
    let parts = if o.gpus.is_empty() { threads } else { o.gpus.len() };
    // Only this shard's synapses: the memory of a shard, not of the whole brain.
    let layout = crate::model::Layout::from_genome(&o.genome);
    let available = crate::capacity::host_available();
    crate::capacity::check_share(&o.genome, &layout, 1.0 / n as f64, !o.gpus.is_empty(), &available).map_err(ClusterError::Startup)?;
    let (brain, plan) = Brain::build_shard(&o.genome, n, o.strategy, parts, me, o.progress)?;
    let ranges = plan.ranges.clone();
    let motor = o.motor.take().unwrap_or_else(|| motor_ranges(&o.genome, &brain.layout));
    tracing::info!(
        "shard {me} of {n}: neurons {:?} ({} synapses onto them), {} plan, {threads} threads",
        ranges[me],
        plan.synapses[me],
        plan.strategy
    );
    let mut engine: Box<dyn ShardEngine> = if o.gpus.is_empty() {
        Box::new(CpuEngine::for_shard(brain, &plan, me))
    } else {
        Box::new(crate::backend::cuda::CudaShardEngine::new(brain, ranges[me].clone(), &o.gpus)?)
    };
    tracing::info!("shard {me}: {} engine on {}", engine.info().backend, engine.info().device);
    if !o.learning {
        engine.set_learning(false, 0)?;
    }
    let initial = engine.snapshot()?;
    let c = &o.cluster;
    let ckpts = ShardCheckpoints::new(&c.checkpoint_dir, &c.name, me, n, ranges[me].clone());
    let latest = if o.resume {
        ckpts.latest()
    } else {
        let removed = ckpts.clear()?;
        if removed > 0 {
            tracing::info!("fresh start: removed {removed} old checkpoint(s) of shard {me} from {}", c.checkpoint_dir.display());
        }
        0
    };
    let record = match (&o.record, me == c.io_shard) {
        (Some(p), true) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|source| ClusterError::Record { path: p.clone(), source })?;
            Some(std::io::BufWriter::new(f))
        }
        _ => None,
    };
    // the other shards burst as their input and the spikes come
    let mut io: Box<dyn Io> = match o.io.take() {
        Some(io) if me == c.io_shard => io,
        _ => Box::new(WorkloadIo::new(None, if me == c.io_shard { c.rate_hz } else { 0.0 }, 0)),
    };
    if me == c.io_shard {
        tracing::info!("io shard: {}", io.describe());
    }
    let io_last = [o.bursts, io.last_burst().unwrap_or(0)].into_iter().filter(|&x| x > 0).min().unwrap_or(0);
    let keys = Keys::new(&c.name);
    let shared = Arc::new(SharedInbox::new(me, c.io_shard, ranges.clone(), keys.clone()));
    let session = ::zenoh::open(session_config(c, me, crate::cluster::wire::largest_message(&ranges))?)
        .wait()
        .map_err(zerr("opening the session"))?;
    tracing::info!("zenoh peer {} listening on {}, connecting to the other {} shard(s)", session.zid(), c.endpoints[me], n - 1);

    // Subscribers first, then the token: whoever sees the token can reach the subscribers.
    let s = shared.clone();
    let _spikes = session
        .declare_subscriber(keys.all_spikes())
        .allowed_origin(Locality::Remote)
        .callback(move |x| s.on_data(x.key_expr().as_str(), &x.payload().to_bytes()))
        .wait()
        .map_err(zerr("spikes subscriber"))?;
    let s = shared.clone();
    let _inputs = session
        .declare_subscriber(keys.inputs_of(me))
        .allowed_origin(Locality::Remote)
        .callback(move |x| s.on_data(x.key_expr().as_str(), &x.payload().to_bytes()))
        .wait()
        .map_err(zerr("input subscriber"))?;
    let s = shared.clone();
    let _control = session
        .declare_subscriber(keys.control())
        .allowed_origin(Locality::Remote)
        .callback(move |x| s.on_control(x.key_expr().as_str(), &x.payload().to_bytes()))
        .wait()
        .map_err(zerr("control subscriber"))?;
    let s = shared.clone();
    let _members = session
        .liveliness()
        .declare_subscriber(keys.all_members())
        .history(true)
        .callback(move |x| s.on_token(x.key_expr().as_str(), x.kind() == SampleKind::Put))
        .wait()
        .map_err(zerr("member subscriber"))?;
    let token_key = keys.member(me, latest, &session.zid().to_string());
    let _token = session.liveliness().declare_token(token_key.clone()).wait().map_err(zerr("member token"))?;
    shared.on_token(&token_key, true);

    let report = Report {
        outcome: Outcome::Completed,
        index: me,
        shards: n,
        neurons: ranges[me].clone(),
        epochs: 0,
        bursts_run: 0,
        last_burst: 0,
        malformed: 0,
        stray: 0,
        forged: 0,
        period_us: vec![],
        compute_us: vec![],
        wait_us: vec![],
        sent_bytes: vec![],
        io: serde_json::Value::Null,
    };
    let links = Links::new(session, keys, shared, me, c.io_shard, ranges);
    let mut shard = Shard {
        links,
        engine,
        initial,
        ckpts,
        motor,
        record,
        report,
        io_last,
        members: 0,
        c: 0,
        last: u64::MAX,
        held: None,
        own: Vec::new(),
        parts: vec![Vec::new(); n],
        whole: Vec::new(),
        input: Vec::new(),
        input_cols: Injections::new(),
        sent_ahead: None,
        io_cols: Injections::new(),
        prev_done: None,
        degraded_logged: false,
        outcome: None,
        o,
    };
    let stop = shard.o.stop.clone();
    let outcome = match crate::run::bursts(io.as_mut(), &mut shard, &stop, |_, _| Ok(false)) {
        Ok(ran) => Ok(shard.outcome.take().unwrap_or(if ran.interrupted { Outcome::Interrupted } else { Outcome::Completed })),
        Err(e) => Err(e.downcast::<ClusterError>().unwrap_or_else(|e| ClusterError::Io(crate::errors::said_once(&e)))),
    };
    let io_summary =
        if me == shard.links.io { Some(io.finish(None).map_err(|e| ClusterError::Io(crate::errors::said_once(&e)))) } else { None };
    // Close explicitly: the session sends what it still holds (the last spikes) before the
    // links go down, and the peers see this shard's token go. Over a dead link (a cut cable)
    // Zenoh would wait 10 s for answers that cannot come: after 2 s this shard exits anyway.
    let (tx, rx) = std::sync::mpsc::channel();
    let session = shard.links.session.clone();
    let _ = std::thread::Builder::new().name("close".into()).spawn(move || {
        let _ = tx.send(session.close().wait());
    });
    match rx.recv_timeout(CLOSE_WAIT) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("closing the zenoh session: {e}"),
        Err(_) => tracing::warn!("closing the zenoh session: no answer within {} s (unreachable peers); leaving", CLOSE_WAIT.as_secs()),
    }
    if let Some(r) = shard.record.as_mut() {
        use std::io::Write;
        let path = shard.o.record.clone().unwrap_or_default();
        r.flush().map_err(|source| ClusterError::Record { path, source })?;
    }
    shard.report.outcome = outcome?;
    shard.report.io = io_summary.transpose()?.unwrap_or_default();
    {
        let g = shard.links.shared.lock();
        (shard.report.malformed, shard.report.stray, shard.report.forged) = (g.malformed, g.stray, g.forged);
    }
    Ok(shard.report)
}

/// The id ranges of the genome's motor areas.
fn motor_ranges(genome: &Genome, layout: &Layout) -> Vec<Range<u32>> {
    genome
        .areas
        .iter()
        .filter(|a| a.kind == AreaKind::Motor)
        .filter_map(|a| layout.area_index(&a.id))
        .map(|i| layout.params[i].first..layout.params[i].first + layout.params[i].count)
        .collect()
}
