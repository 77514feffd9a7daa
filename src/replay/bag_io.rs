//! A bag as a brain's input and output ([`crate::run::Io`]): the bag's messages offered to the
//! intake at each burst's bag time ([`BagSchedule`]), the motor and activity messages of each
//! burst recorded at its bag time, the scene frames too (`view.record`). The replay in one
//! process and the io shard of a distributed brain both run it, so their output bags hold the
//! same messages, at the same bag times, with the same bytes.
//!
//! Burst `t` runs at bag time `t_t` on the latest message of each topic logged before it.
//! Pacing is `replay.pace` (0: as fast as the bursts go; else bag seconds per wall-clock
//! second); it never changes the output.
//!
//! **Rollbacks** (a cluster in `degraded` mode). A rejoin rolls the brain back to a checkpoint
//! `c`, and the bursts after it are computed again. So that the output is still the output of a
//! brain that never lost a shard, the io shard keeps the messages of the bursts a rollback may
//! still take back (those after the older of its two checkpoints; all of them while there are no
//! checkpoints) and writes them when no rollback can reach them, or at the end. A rollback to `c`
//! rebuilds the encoders' and decoders' state at `c` from the bag and from the decoders' areas'
//! fired neurons of bursts `1..=c`, kept for that. Without `keep_back` messages are written as
//! they come.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::anyhow;
use serde_json::json;

use super::{check_topics, labels, show_inputs, show_outputs, BurstRecord, Frames, MotorStats, OutputChannels, ReplaySetup, ReplaySummary};
use crate::bag::{Bag, BagWriter};
use crate::model::{Injections, Layout};
use crate::run::schedule::BagSchedule;
use crate::run::{BurstProducts, Intake, Io, Outputs, Pace};
use crate::view::View;

/// A message of the output bag not written yet.
struct Kept {
    burst: u64,
    channel: u16,
    time: u64,
    data: Vec<u8>,
}

pub struct BagIo<'a> {
    bag: Bag,
    bag_path: PathBuf,
    layout: Layout,
    setup: ReplaySetup,
    intake: Intake,
    outputs: Outputs,
    schedule: BagSchedule,
    pace: Pace,
    /// The output bag and its path.
    writer: Option<(BagWriter, PathBuf)>,
    channels: Option<OutputChannels>,
    /// The scene frames recorded and shown (`view.record`, the live view).
    frames: Option<Frames>,
    view: Option<&'a View>,
    /// Messages on topics no encoder reads, per topic.
    ignored: BTreeMap<String, u64>,
    /// The id ranges of the decoders' areas, and their fired neurons of every burst so far
    /// (index `t - 1`): what rebuilds the decoders' state after a rollback.
    decoder_ranges: Vec<Range<u32>>,
    history: Vec<Vec<u32>>,
    /// Keep messages back until no rollback can reach them (`degraded` mode).
    keep_back: bool,
    kept: VecDeque<Kept>,
    /// Bursts written to the output bag: 1..=written.
    written: u64,
    messages_written: u64,
    /// The last burst whose injection the intake made.
    intake_at: u64,
    /// What the replay did so far; the sums of the motor values.
    summary: ReplaySummary,
    sums: Vec<Vec<f64>>,
    fired: Vec<u64>,
}

impl<'a> BagIo<'a> {
    /// Replay `bag` (read from `bag_path`) with the setup's encoders and decoders at
    /// `burst_rate_hz`; record to `out` when given (with the scene frames when `frames` gives the
    /// genome to draw), show it in `view`. `keep_back`: a cluster may roll back
    /// (`on_shard_loss: degraded`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        bag: Bag,
        bag_path: &Path,
        layout: Layout,
        setup: ReplaySetup,
        burst_rate_hz: f64,
        out: Option<&Path>,
        keep_back: bool,
        frames: Option<(&crate::genome::Genome, Option<&'a View>)>,
    ) -> anyhow::Result<BagIo<'a>> {
        let err = |e: &dyn std::fmt::Display| anyhow!("--bag {}: {e}", bag_path.display());
        let intake = Intake::new(&setup.encoders, &layout).map_err(|e| err(&e))?;
        let schedule =
            BagSchedule::for_mode(&bag, burst_rate_hz, setup.replay.max_bursts, (setup.mode, &setup.reflex), (&setup.encoders, &layout))
                .map_err(|e| err(&e))?;
        let outputs = Outputs::new(&setup.decoders, &layout).map_err(|e| err(&e))?;
        check_topics(&bag, &intake).map_err(|e| err(&e))?;
        let (mut writer, channels) = match out {
            Some(p) => {
                let mut w = BagWriter::create(p).map_err(|e| anyhow!("{}: {e}", p.display()))?;
                let ch =
                    OutputChannels::add(&mut w, &outputs, &setup.replay.activity_topic).map_err(|e| anyhow!("{}: {e}", p.display()))?;
                (Some((w, p.to_path_buf())), Some(ch))
            }
            None => (None, None),
        };
        let (frames, view) = match frames {
            Some((genome, view)) => {
                let w = writer.as_mut().map(|w| &mut w.0);
                (Some(Frames::new(w, &setup.view, genome, schedule.t0())?), view)
            }
            None => (None, None),
        };
        let mut decoder_ranges: Vec<Range<u32>> = outputs
            .decoders
            .iter()
            .map(|d| {
                let a = &layout.params[d.area];
                a.first..a.first + a.count
            })
            .collect();
        decoder_ranges.sort_by_key(|r| r.start);
        decoder_ranges.dedup();
        let motor: Vec<MotorStats> = outputs
            .decoders
            .iter()
            .map(|d| MotorStats {
                topic: d.config.topic().into(),
                type_name: d.config.message_type().into(),
                labels: labels(&d.config, &layout),
                ..Default::default()
            })
            .collect();
        let sums = motor.iter().map(|m| vec![0.0; m.labels.len()]).collect();
        let pace = Pace::bag(schedule.times(), setup.replay.pace);
        Ok(BagIo {
            fired: vec![0; layout.meta.len()],
            summary: ReplaySummary { motor, duration_s: schedule.duration_s(), ..Default::default() },
            sums,
            bag,
            bag_path: bag_path.to_path_buf(),
            layout,
            setup,
            intake,
            outputs,
            schedule,
            pace,
            writer,
            channels,
            frames,
            view,
            ignored: BTreeMap::new(),
            decoder_ranges,
            history: Vec::new(),
            keep_back,
            kept: VecDeque::new(),
            written: 0,
            messages_written: 0,
            intake_at: 0,
        })
    }

    /// The first message's bag time.
    pub fn t0(&self) -> u64 {
        self.schedule.t0()
    }

    /// What the replay did (its motor means, the intake's counters), once finished.
    pub fn summary(&mut self) -> ReplaySummary {
        let mut s = std::mem::take(&mut self.summary);
        for (m, sum) in s.motor.iter_mut().zip(&self.sums) {
            m.mean = sum.iter().map(|v| if m.messages > 0 { v / m.messages as f64 } else { 0.0 }).collect();
        }
        s.inputs = self.intake.stats.iter().map(|(t, c)| (t.clone(), (**c).clone())).collect();
        s.ignored = self.ignored.clone();
        s.first_errors = self.intake.first_errors.clone();
        s.fired = self.layout.meta.iter().map(|m| m.id.clone()).zip(self.fired.iter().copied()).collect();
        s
    }

    /// Every burst's bag time.
    pub fn times(&self) -> Vec<u64> {
        self.schedule.times()
    }

    /// The number of bursts of the replay.
    pub fn bursts(&self) -> u64 {
        self.schedule.total()
    }

    /// Rebuild the encoders' and decoders' state of burst `c` from the bag and the history.
    fn rebuild(&mut self, c: u64) -> anyhow::Result<()> {
        let err = |e: &dyn std::fmt::Display| anyhow!("--bag {}: {e}", self.bag_path.display());
        let mut intake = Intake::new(&self.setup.encoders, &self.layout).map_err(|e| err(&e))?;
        let mut outputs = Outputs::new(&self.setup.decoders, &self.layout).map_err(|e| err(&e))?;
        self.schedule.rewind();
        self.ignored.clear();
        for k in 1..=c {
            self.schedule.offer(&self.bag, k, &mut intake, &mut self.ignored);
            intake.advance(self.schedule.time(k));
            outputs.decode(k, &self.history[k as usize - 1], 0, &self.layout, self.schedule.time(k), intake.blind());
        }
        self.intake = intake;
        self.outputs = outputs;
        self.intake_at = c;
        self.history.truncate(c as usize);
        self.summary.records.truncate(c as usize);
        Ok(())
    }

    /// Write the kept messages of bursts up to `burst`.
    fn write_through(&mut self, burst: u64) -> anyhow::Result<()> {
        let Some((w, path)) = self.writer.as_mut() else { return Ok(()) };
        while self.kept.front().is_some_and(|k| k.burst <= burst) {
            let k = self.kept.pop_front().expect("checked");
            w.write(k.channel, k.time, &k.data).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            self.messages_written += 1;
        }
        self.written = self.written.max(burst);
        Ok(())
    }

    /// Count burst `t`'s products in the summary.
    fn count(&mut self, t: u64, t_k: u64, products: BurstProducts) {
        let s = &mut self.summary;
        let mut last: Vec<Vec<f64>> =
            s.records.last().map_or_else(|| s.motor.iter().map(|m| vec![0.0; m.labels.len()]).collect(), |r| r.motor.clone());
        for (i, m) in products.motor {
            s.motor[i].messages += 1;
            for (sum, v) in self.sums[i].iter_mut().zip(&m.values) {
                *sum += v;
            }
            last[i] = m.values;
        }
        if self.channels.as_ref().is_some_and(|c| c.activity.is_some()) {
            s.activity_messages += 1;
        }
        for (f, &n) in self.fired.iter_mut().zip(&products.fired_per_area) {
            *f += n as u64;
        }
        s.records.push(BurstRecord { t: (t_k - self.schedule.t0()) as f64 * 1e-9, fired_per_area: products.fired_per_area, motor: last });
        s.bursts = t;
    }
}

impl Io for BagIo<'_> {
    fn describe(&self) -> String {
        let out = self.writer.as_ref().map_or("not recorded".to_string(), |(_, p)| format!("recorded to {}", p.display()));
        let pace = self.setup.replay.pace;
        format!(
            "the bag {} ({} bursts over {:.2} s of bag time, pace {}; motor topics {out})",
            self.bag_path.display(),
            self.schedule.total(),
            self.schedule.duration_s(),
            if pace > 0.0 { format!("{pace}x bag time") } else { "as fast as possible".into() }
        )
    }

    fn last_burst(&self) -> Option<u64> {
        Some(self.schedule.total())
    }

    fn start(&mut self, c: u64) -> anyhow::Result<()> {
        if c as usize > self.history.len() {
            return Err(anyhow!(
                "the cluster starts from burst {c}, but this replay has run {} bursts: a replay starts from the bag's beginning \
                 (start the io shard without --resume, or remove the checkpoints)",
                self.history.len()
            ));
        }
        if c != self.intake_at || (c as usize) < self.history.len() {
            tracing::info!("replay rolls back to burst {c}: the encoders' and decoders' state is rebuilt from the bag");
            self.rebuild(c)?;
        }
        while self.kept.back().is_some_and(|k| k.burst > c) {
            self.kept.pop_back();
        }
        if self.written > c {
            tracing::error!(
                "the output bag already holds bursts up to {}: the rollback to burst {c} writes bursts {}..={} again",
                self.written,
                c + 1,
                self.written
            );
            self.written = c;
        }
        self.pace.start(c);
        Ok(())
    }

    fn wait(&mut self, t: u64, stop: &AtomicBool) -> Option<u64> {
        self.pace.wait(t, stop)
    }

    fn injection(&mut self, t: u64, out: &mut Injections) -> anyhow::Result<()> {
        if t != self.intake_at + 1 {
            return Err(anyhow!("replay: the injection of burst {t} asked after burst {}", self.intake_at));
        }
        let first = self.schedule.position();
        self.schedule.offer(&self.bag, t, &mut self.intake, &mut self.ignored);
        if let Some(v) = self.view {
            show_inputs(v, &self.bag, first..self.schedule.position(), &self.intake);
        }
        self.intake.append_injection(out, self.schedule.time(t));
        self.intake_at = t;
        Ok(())
    }

    fn decode(&mut self, t: u64, fired: &[u32], fired_total: u64) -> anyhow::Result<BurstProducts> {
        if t != self.history.len() as u64 + 1 {
            return Err(anyhow!("replay: the fired neurons of burst {t} after burst {}", self.history.len()));
        }
        let t_k = self.schedule.time(t);
        let products = self.outputs.decode(t, fired, fired_total, &self.layout, t_k, self.intake.blind());
        let mut mine = Vec::new();
        for r in &self.decoder_ranges {
            mine.extend_from_slice(&fired[fired.partition_point(|&x| x < r.start)..fired.partition_point(|&x| x < r.end)]);
        }
        self.history.push(mine);
        Ok(products)
    }

    fn hand_over(&mut self, t: u64, products: BurstProducts, fired: &[u32], _started: Instant) -> anyhow::Result<()> {
        let t_k = self.schedule.time(t);
        // kept back while a rollback may still take the burst back; else written as it comes
        match (&self.channels, self.writer.as_mut()) {
            (Some(ch), _) if self.keep_back => {
                let kept = &mut self.kept;
                ch.messages(&products, &self.outputs, t_k, |channel, data| {
                    kept.push_back(Kept { burst: t, channel, time: t_k, data: data.to_vec() });
                    Ok::<(), anyhow::Error>(())
                })?;
            }
            (Some(ch), Some((w, path))) => {
                let written = &mut self.messages_written;
                ch.messages(&products, &self.outputs, t_k, |channel, data| {
                    *written += 1;
                    w.write(channel, t_k, data).map_err(|e| anyhow!("{}: {e}", path.display()))
                })?;
                self.written = t;
            }
            _ => {}
        }
        if let Some(f) = self.frames.as_mut() {
            f.burst(self.writer.as_mut().map(|w| &mut w.0), self.view, &self.layout, t_k, (&products.fired_per_area, fired))?;
        }
        if let Some(v) = self.view {
            show_outputs(v, &products, &self.outputs, &self.setup.replay.activity_topic, t_k);
        }
        self.count(t, t_k, products);
        Ok(())
    }

    fn checkpointed(&mut self, held: &[u64]) -> anyhow::Result<()> {
        match held.iter().min() {
            Some(&oldest) => self.write_through(oldest),
            None => Ok(()),
        }
    }

    fn finish(&mut self, _fatal: Option<&str>) -> anyhow::Result<serde_json::Value> {
        self.write_through(u64::MAX)?;
        let out = match self.writer.take() {
            Some((w, p)) => {
                w.finish().map_err(|e| anyhow!("{}: {e}", p.display()))?;
                Some(p.display().to_string())
            }
            None => None,
        };
        let inputs: serde_json::Map<String, serde_json::Value> = self
            .intake
            .stats
            .iter()
            .map(|(t, s)| {
                let (r, e, x, m) = (s.received.get(), s.encoded.get(), s.replaced.get(), s.malformed.get());
                (t.clone(), json!({"received": r, "encoded": e, "replaced": x, "malformed": m}))
            })
            .collect();
        Ok(json!({
            "bag": self.bag_path.display().to_string(),
            "bag_bursts": self.schedule.total(),
            "replayed_bursts": self.history.len(),
            "inputs": inputs,
            "ignored": self.ignored,
            "out": out,
            "messages_written": self.messages_written,
        }))
    }
}
