//! `neuroburst node`: the live ROS 2 node. Tokio waits for the signals (SIGINT/SIGTERM stop,
//! SIGUSR1 saves a checkpoint); the burst loop runs on its own thread (`node::run`).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use anyhow::{anyhow, Context};
use clap::Args;

use super::ros_args;
use crate::config::Config;
use crate::genome::Genome;
use crate::node::services::Shared;
use crate::node::{self, Control};
use crate::transport::TransportKind;

#[derive(Args, Debug)]
pub struct NodeArgs {
    /// Genome: the project's YAML or a FEAGI JSON genome (or the ROS parameter `genome`).
    #[arg(long, value_name = "FILE")]
    pub genome: Option<PathBuf>,
    /// Transport: zenoh | ros2 (overrides node.transport).
    #[arg(long, value_enum)]
    pub transport: Option<TransportKind>,
    #[command(flatten)]
    pub link: super::RobotLinkArgs,
    /// Restore the brain state from checkpoint.path before the first burst.
    #[arg(long)]
    pub resume: bool,
    /// Load the configuration (file, ROS parameters, options) and the genome, print the resolved
    /// configuration as YAML, and exit without starting (for launch-file checks).
    #[arg(long)]
    pub check: bool,
    /// Serve the live view to Foxglove on HOST:PORT (default 127.0.0.1:8765): the brain's scene,
    /// the sensor and motor messages, the stats.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub view: Option<String>,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

/// The configuration: file, then ROS parameters, then `--set`, then the options above.
fn configure(a: &mut NodeArgs) -> anyhow::Result<Config> {
    let ros = ros_args::get();
    let mut params = ros.params.clone();
    // A first pass for the node's name and namespace, which select the params-file entries.
    let first = a.runtime.config()?;
    let name = ros.node_name.clone().unwrap_or(first.node.name.clone());
    let ns = ros.namespace.clone().or(a.link.namespace.clone()).unwrap_or(first.node.namespace.clone());
    for f in &ros.params_files {
        let mut file_params = ros_args::read_params_file(std::path::Path::new(f), &name, &ns)?;
        file_params.append(&mut params);
        params = file_params;
    }
    let mut sets = vec![];
    for (k, v) in params {
        match k.as_str() {
            "genome" => a.genome = a.genome.take().or(v.as_str().map(PathBuf::from)),
            "config" => a.runtime.config = a.runtime.config.take().or(v.as_str().map(PathBuf::from)),
            "resume" => a.resume |= v.as_bool().unwrap_or(false),
            "use_sim_time" => sets.push(format!("node.use_sim_time={}", serde_json::to_string(&v)?)),
            _ => sets.push(format!("{k}={}", serde_json::to_string(&v)?)),
        }
    }
    sets.append(&mut a.runtime.set);
    a.runtime.set = sets;
    let mut c = a.runtime.config()?;
    let n = &mut c.node;
    if let Some(t) = a.transport {
        n.transport = t;
    }
    if let Some(name) = ros.node_name {
        n.name = name;
    }
    // `-r from:=to` renames the encoders' and decoders' topics, and the node's own.
    let remap = |topic: &mut String| {
        if let Some(to) = ros.remaps.get(topic.as_str()).or_else(|| ros.remaps.get(topic.trim_start_matches('/'))) {
            *topic = to.clone();
        }
    };
    n.input_types = std::mem::take(&mut n.input_types)
        .into_iter()
        .map(|(mut topic, t)| {
            remap(&mut topic);
            (topic, t)
        })
        .collect();
    remap(&mut n.stats_topic);
    remap(&mut c.checkpoint.trigger_topic);
    c.encoders.iter_mut().for_each(|e| remap(e.topic_mut()));
    c.decoders.iter_mut().for_each(|d| remap(d.topic_mut()));
    a.link.apply(&mut c, ros.namespace)?;
    c.zenoh.max_message_size = node::max_message_size(&c.node_setup());
    Ok(c)
}

pub fn main(mut a: NodeArgs) -> anyhow::Result<()> {
    let config = configure(&mut a)?;
    if let Some(addr) = &a.view {
        crate::view::parse_addr(addr)?;
    }
    super::init(&config);
    let managed = config.node.lifecycle;
    if !managed && a.genome.is_none() {
        return Err(anyhow!("no genome: pass --genome FILE (or the ROS parameter `genome`)"));
    }
    // A managed node loads its genome at configure; the check and the view need it now.
    let genome = match &a.genome {
        Some(path) if a.check || a.view.is_some() => Some(Genome::load(path)?),
        _ => None,
    };
    if a.check {
        let g = genome.as_ref().map_or("none".into(), |g| format!("{:?}", g.name));
        println!("# genome {g} ({}), resume: {}", a.genome.as_ref().map_or("none".into(), |p| p.display().to_string()), a.resume);
        print!("{}", serde_yaml::to_string(&config)?);
        return Ok(());
    }
    let mut transport =
        crate::transport::select::open(config.node.transport, &config.zenoh, &config.node.name, &config.node.namespace, config.node.domain)
            .context("cannot open the transport")?;
    let control = Arc::new(Control::default());
    if let (Some(addr), Some(genome)) = (&a.view, &genome) {
        let _ = control.view.set(Arc::new(crate::view::View::start(addr, genome, &config.view)?));
    }
    let fqn = node::topics::fully_qualified(&config.node.namespace, &config.node.name);
    let (commands, requests) = std::sync::mpsc::channel();
    let params = super::parameters::ConfigParameters::new(config.clone(), a.genome.clone(), a.resume);
    let shared = Arc::new(Shared::new(Box::new(params), control.clone(), fqn, commands));
    node::services::start(transport.as_mut(), &shared, managed).context("cannot serve the node's services")?;
    if managed {
        tracing::info!("{}: a managed node, unconfigured: waiting for {0}/change_state", shared.fqn);
    }
    let burster = std::thread::Builder::new()
        .name("burst".into())
        .spawn(move || {
            // a panic outside the bursts (which catch their own) still ends the process
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                node::managed::run(shared.clone(), transport.as_mut(), requests, managed)
            }))
            .unwrap_or_else(|p| Err(anyhow!("the burst thread panicked: {}", node::fatal::panic_message(p.as_ref()))));
            shared.control.request_stop();
            drop(transport);
            r
        })
        .context("cannot start the burst thread")?;

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        let mut usr1 = signal(SignalKind::user_defined1())?;
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(50));
        loop {
            tokio::select! {
                _ = term.recv() => { tracing::info!("SIGTERM: stopping"); break; }
                _ = int.recv() => { tracing::info!("SIGINT: stopping"); break; }
                _ = usr1.recv() => { tracing::info!("SIGUSR1: checkpoint requested"); control.request_save(None); }
                _ = tick.tick() => if control.stop.load(Ordering::Relaxed) { break; },
            }
        }
        control.request_stop();
        anyhow::Ok(())
    })?;
    burster.join().map_err(|_| anyhow!("the burst thread panicked"))??;
    Ok(())
}
