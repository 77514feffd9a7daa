//! `neuroburst replay`: a rosbag2 bag through the brain; motor topics and the per-burst activity
//! written to an MCAP bag; a summary; optionally a PNG plot.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use super::table;
use crate::backend::open::open;
use crate::backend::Readback;
use crate::genome::Genome;
use crate::model::Layout;
use crate::replay::{plot, ReplaySummary};
use crate::replay::{replay, ReplayOptions};

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Input bag: a rosbag2 directory (metadata.yaml with .mcap or .db3 files) or a .mcap file.
    #[arg(long, value_name = "BAG")]
    pub bag: PathBuf,
    /// Genome: the project's YAML or a FEAGI JSON genome.
    #[arg(long, value_name = "FILE")]
    pub genome: PathBuf,
    /// Output MCAP bag (motor topics and the activity topic).
    #[arg(long, value_name = "OUT.mcap")]
    pub out: PathBuf,
    /// Draw motor output and area activity over time into this PNG.
    #[arg(long, value_name = "OUT.png")]
    pub plot: Option<PathBuf>,
    /// Save the brain's state after the last burst (what it learned included) as a checkpoint:
    /// `--resume` it in the node, or `neuroburst export` the learned genome.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Serve the live view to Foxglove on HOST:PORT (default 127.0.0.1:8765): the replay waits for
    /// a client, then runs at bag pace (replay.pace, 1 when not set).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub view: Option<String>,
    #[command(flatten)]
    pub runtime: super::RuntimeArgs,
}

pub fn main(a: ReplayArgs) -> anyhow::Result<()> {
    let config = a.runtime.config()?;
    if let Some(addr) = &a.view {
        crate::view::parse_addr(addr)?;
    }
    super::init(&config);
    let genome = Genome::load(&a.genome)?;
    let layout = Layout::from_genome(&genome);
    let bag = crate::bag::open(&a.bag)?;
    let mut opened = open(&genome, &config.backend, Readback::All, config.log.progress).map_err(anyhow::Error::msg)?;

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst)).context("cannot install the Ctrl-C handler")?;
    }
    let view = match &a.view {
        Some(addr) => Some(crate::view::View::start(addr, &genome, &config.view)?),
        None => None,
    };
    let mut setup = config.replay_setup();
    if view.is_some() && setup.replay.pace == 0.0 {
        setup.replay.pace = 1.0;
    }
    if let Some(v) = &view {
        crate::replay::advertise_shown(v, &bag, &setup);
        v.wait_for_client(&stop);
    }
    let opts = ReplayOptions {
        burst_rate_hz: genome.burst_rate_hz,
        progress: config.log.progress,
        stop: &stop,
        view: view.as_ref(),
        genome: &genome,
    };
    let summary = replay(bag, &a.bag, &layout, opened.backend.as_mut(), setup, &a.out, &opts)?;

    print_summary(&a, &genome, &summary, opened.backend.info().backend);
    if let Some(path) = &a.checkpoint {
        let state = opened.backend.snapshot().map_err(|e| anyhow::anyhow!("cannot read the brain's state: {e}"))?;
        crate::checkpoint::Checkpoint::new(&genome, state).save(path)?;
        println!("checkpoint written to {}", path.display());
    }
    if let Some(p) = &a.plot {
        let backend = opened.backend.info().backend;
        let bag_name = a.bag.file_name().map_or(a.bag.display().to_string(), |n| n.to_string_lossy().to_string());
        let title = plot::PlotTitle { genome: &genome.name, bag: &bag_name, backend: &backend, rate_hz: genome.burst_rate_hz };
        let ids: Vec<String> = layout.meta.iter().map(|m| m.id.clone()).collect();
        let neurons: Vec<u32> = layout.params.iter().map(|p| p.count).collect();
        plot::draw(&summary, &title, &ids, &neurons, p).map_err(anyhow::Error::msg)?;
        println!("plot written to {}", p.display());
    }
    if summary.interrupted {
        eprintln!("interrupted: {} written up to burst {}", a.out.display(), summary.bursts);
    }
    Ok(())
}

fn print_summary(a: &ReplayArgs, genome: &Genome, s: &ReplaySummary, backend: String) {
    println!(
        "{}: {} bursts at {} Hz over {:.2} s of bag time on {}{}",
        genome.name,
        s.bursts,
        genome.burst_rate_hz,
        s.duration_s,
        backend,
        if s.interrupted { " (interrupted)" } else { "" }
    );
    let mut rows = vec![vec!["input topic".into(), "received".into(), "encoded".into(), "replaced".into(), "malformed".into()]];
    for (t, st) in &s.inputs {
        let n = [&st.received, &st.encoded, &st.replaced, &st.malformed].map(|c| c.get().to_string());
        rows.push([vec![t.clone()], n.to_vec()].concat());
    }
    for (t, n) in &s.ignored {
        rows.push(vec![format!("{t} (no encoder)"), n.to_string(), "-".into(), "-".into(), "-".into()]);
    }
    print!("{}", table::render(&rows));
    for (t, e) in &s.first_errors {
        println!("first error on {t}: {e}");
    }
    let mut rows = vec![vec!["output topic".into(), "type".into(), "messages".into(), "mean".into()]];
    for m in &s.motor {
        let mean: Vec<String> = m.labels.iter().zip(&m.mean).map(|(l, v)| format!("{l} {v:+.3}")).collect();
        rows.push(vec![m.topic.clone(), m.type_name.clone(), m.messages.to_string(), mean.join(", ")]);
    }
    rows.push(vec!["(activity)".into(), "neuroburst_msgs/msg/BurstActivity".into(), s.activity_messages.to_string(), String::new()]);
    print!("{}", table::render(&rows));
    let fired: Vec<String> = s.fired.iter().map(|(id, n)| format!("{id} {n}")).collect();
    println!("fired per area: {}", fired.join(", "));
    if let (Some(first), Some(last)) = (s.learning.first(), s.learning.last()) {
        let mut rows = vec![vec!["plastic mapping".into(), "synapses".into(), "mean weight".into(), "at the start".into()]];
        for (j, label) in s.learning_labels.iter().enumerate() {
            rows.push(vec![label.clone(), last.synapses[j].to_string(), format!("{:.2}", last.mean[j]), format!("{:.2}", first.mean[j])]);
        }
        print!("{}", table::render(&rows));
    }
    println!("output written to {}", a.out.display());
}
