//! The io shard replays a bag through the distributed brain: `neuroburst replay` with the brain
//! spread over the shards. The same pieces as a replay in one process ([`crate::replay::replay`]:
//! the bag schedule, the intake's encoders, the outputs' decoders, the output bag's channels), so
//! the output bag holds the same messages, at the same bag times, with the same bytes.
//!
//! Burst `t` runs at bag time `t_t` on the latest message of each topic logged before it; its
//! motor messages and its activity message are recorded at `t_t`. Pacing is `replay.pace` (0: as
//! fast as the shards go; else bag seconds per wall-clock second), as in one process.
//!
//! **Rollbacks.** In `degraded` mode a rejoin rolls the brain back to a checkpoint `c`, and the
//! bursts after it are computed again. So that the output is still the output of a brain that
//! never lost a shard, the io shard keeps the messages of the bursts a rollback may still take
//! back (those after the older of its two checkpoints; all of them while there are no
//! checkpoints) and writes them when no rollback can reach them, or at the end. A rollback to `c`
//! rebuilds the encoders' and decoders' state at `c` from the bag and from the decoders' areas'
//! fired neurons of bursts `1..=c`, which the io shard keeps for that. In `stop` mode nothing is
//! kept back: messages are written as they come.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::io::{sort_injection, ShardIo};
use super::options::ClusterError;
use crate::bag::{Bag, BagWriter};
use crate::config::Config;
use crate::model::{Injection, Layout};
use crate::replay::intake::Intake;
use crate::replay::outputs::Outputs;
use crate::replay::{check_topics, BagSchedule, OutputChannels};

/// A message of the output bag not written yet.
struct Kept {
    burst: u64,
    channel: u16,
    time: u64,
    data: Vec<u8>,
}

pub struct BagIo {
    bag: Bag,
    bag_path: PathBuf,
    layout: Layout,
    config: Config,
    intake: Intake,
    outputs: Outputs,
    schedule: BagSchedule,
    /// The output bag and its path.
    writer: Option<(BagWriter, PathBuf)>,
    channels: Option<OutputChannels>,
    /// Messages on topics no encoder reads.
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
    pace: f64,
    /// Wall clock and bag time of the current epoch's start.
    epoch_start: (Instant, u64),
}

impl BagIo {
    /// Replay `bag` (read from `bag_path`) with `config`'s encoders and decoders at
    /// `burst_rate_hz`; record to `out` when given. `keep_back`: the cluster may roll back
    /// (`on_shard_loss: degraded`).
    pub fn new(
        bag: Bag,
        bag_path: &Path,
        layout: Layout,
        config: &Config,
        burst_rate_hz: f64,
        out: Option<&Path>,
        keep_back: bool,
    ) -> Result<BagIo, ClusterError> {
        let err = |e: &dyn std::fmt::Display| ClusterError::Io(format!("--bag {}: {e}", bag_path.display()));
        let intake = Intake::new(&config.encoders, &layout).map_err(|e| err(&e))?;
        let schedule =
            BagSchedule::for_mode(&bag, burst_rate_hz, config.replay.max_bursts, (config.node.mode, &config.node.reflex), &intake)
                .map_err(|e| err(&e))?
                .ok_or_else(|| err(&"the bag holds no messages: nothing to replay"))?;
        let outputs = Outputs::new(&config.decoders, &layout).map_err(|e| err(&e))?;
        check_topics(&bag, &intake).map_err(|e| err(&e))?;
        let (writer, channels) = match out {
            Some(p) => {
                let mut w = BagWriter::create(p).map_err(|e| ClusterError::Io(format!("--record {}: {e}", p.display())))?;
                let ch = OutputChannels::add(&mut w, &outputs, &config.replay.activity_topic)
                    .map_err(|e| ClusterError::Io(format!("--record {}: {e}", p.display())))?;
                (Some((w, p.to_path_buf())), Some(ch))
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
        Ok(BagIo {
            bag,
            bag_path: bag_path.to_path_buf(),
            layout,
            config: config.clone(),
            intake,
            outputs,
            schedule,
            writer,
            channels,
            ignored: BTreeMap::new(),
            decoder_ranges,
            history: Vec::new(),
            keep_back,
            kept: VecDeque::new(),
            written: 0,
            messages_written: 0,
            intake_at: 0,
            pace: config.replay.pace,
            epoch_start: (Instant::now(), 0),
        })
    }

    /// The number of bursts of the replay.
    pub fn bursts(&self) -> u64 {
        self.schedule.total()
    }

    /// Rebuild the encoders' and decoders' state of burst `c` from the bag and the history.
    fn rebuild(&mut self, c: u64) -> Result<(), ClusterError> {
        let err = |e: &dyn std::fmt::Display| ClusterError::Io(format!("--bag {}: {e}", self.bag_path.display()));
        let mut intake = Intake::new(&self.config.encoders, &self.layout).map_err(|e| err(&e))?;
        let mut outputs = Outputs::new(&self.config.decoders, &self.layout).map_err(|e| err(&e))?;
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
        Ok(())
    }

    /// Write the kept messages of bursts up to `burst`.
    fn write_through(&mut self, burst: u64) -> Result<(), ClusterError> {
        let Some((w, path)) = self.writer.as_mut() else { return Ok(()) };
        while self.kept.front().is_some_and(|k| k.burst <= burst) {
            let k = self.kept.pop_front().expect("checked");
            w.write(k.channel, k.time, &k.data).map_err(|e| ClusterError::Io(format!("--record {}: {e}", path.display())))?;
            self.messages_written += 1;
        }
        self.written = self.written.max(burst);
        Ok(())
    }
}

impl ShardIo for BagIo {
    fn describe(&self) -> String {
        let out = self.writer.as_ref().map_or("not recorded".to_string(), |(_, p)| format!("recorded to {}", p.display()));
        format!(
            "the bag {} ({} bursts over {:.2} s of bag time, pace {}; motor topics {out})",
            self.bag_path.display(),
            self.schedule.total(),
            self.schedule.duration_s(),
            if self.pace > 0.0 { format!("{}x bag time", self.pace) } else { "as fast as possible".into() }
        )
    }

    fn last_burst(&self) -> Option<u64> {
        Some(self.schedule.total())
    }

    fn start(&mut self, c: u64) -> Result<(), ClusterError> {
        if c as usize > self.history.len() {
            return Err(ClusterError::Io(format!(
                "the cluster starts from burst {c}, but this replay has run {} bursts: a replay starts from the bag's beginning \
                 (start the io shard without --resume, or remove the checkpoints)",
                self.history.len()
            )));
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
        self.epoch_start = (Instant::now(), self.schedule.time(c.max(1)));
        Ok(())
    }

    fn pace(&mut self, t: u64) {
        if self.pace > 0.0 {
            let (at, t_c) = self.epoch_start;
            let bag_s = self.schedule.time(t).saturating_sub(t_c) as f64 * 1e-9;
            let due = at + Duration::from_secs_f64(bag_s / self.pace);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
    }

    fn injection(&mut self, t: u64, out: &mut Vec<Injection>) -> Result<(), ClusterError> {
        if t != self.intake_at + 1 {
            return Err(ClusterError::Io(format!("replay: the injection of burst {t} asked after burst {}", self.intake_at)));
        }
        self.schedule.offer(&self.bag, t, &mut self.intake, &mut self.ignored);
        self.intake.injection_vec(out, self.schedule.time(t));
        sort_injection(out);
        self.intake_at = t;
        Ok(())
    }

    fn fired(&mut self, t: u64, fired: &[u32]) -> Result<(), ClusterError> {
        if t != self.history.len() as u64 + 1 {
            return Err(ClusterError::Io(format!("replay: the fired neurons of burst {t} after burst {}", self.history.len())));
        }
        let t_k = self.schedule.time(t);
        let products = self.outputs.decode(t, fired, fired.len() as u64, &self.layout, t_k, self.intake.blind());
        let mut mine = Vec::new();
        for r in &self.decoder_ranges {
            mine.extend_from_slice(&fired[fired.partition_point(|&x| x < r.start)..fired.partition_point(|&x| x < r.end)]);
        }
        self.history.push(mine);
        if let Some(ch) = &self.channels {
            let kept = &mut self.kept;
            ch.messages(&products, &self.outputs, t_k, |channel, data| {
                kept.push_back(Kept { burst: t, channel, time: t_k, data: data.to_vec() });
                Ok::<(), ClusterError>(())
            })?;
        }
        if !self.keep_back {
            self.write_through(t)?;
        }
        Ok(())
    }

    fn checkpointed(&mut self, held: &[u64]) -> Result<(), ClusterError> {
        match held.iter().min() {
            Some(&oldest) => self.write_through(oldest),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<serde_json::Value, ClusterError> {
        self.write_through(u64::MAX)?;
        let out = match self.writer.take() {
            Some((w, p)) => {
                w.finish().map_err(|e| ClusterError::Io(format!("--record {}: {e}", p.display())))?;
                Some(p.display().to_string())
            }
            None => None,
        };
        let inputs: serde_json::Map<String, serde_json::Value> = self
            .intake
            .stats
            .iter()
            .map(|(t, s)| {
                (t.clone(), json!({"received": s.received, "encoded": s.encoded, "replaced": s.replaced, "malformed": s.malformed}))
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
