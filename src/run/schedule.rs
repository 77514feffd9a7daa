//! When each burst of a replay runs, in bag time, and which messages it takes. With `r` the
//! burst rate, `t0` the first message's log time and `t_last` the last's:
//!
//! - **clock** (`node.mode: clock`): burst k (k = 1, 2, ...) runs at `t_k = t0 + (k - 1) / r` on
//!   the messages logged before `t_k`, until one burst after the last message.
//! - **reflex** (`node.mode: reflex`): the live node's reflex mode in bag time. A message on an
//!   input topic logged at `t` starts `reflex.bursts` bursts at `t` (they take the messages logged
//!   up to `t`) when its topic is one of `reflex.triggers` (all inputs when empty) and, with
//!   `reflex.on_change`, its encoding differs from its topic's previous one; the grid
//!   `t0 + j / r` goes on, a grid point giving up its burst for each burst run ahead of it, and
//!   the bursts never run more than `reflex.lead` ahead of the grid. The grid ends where the
//!   clock's does. Bursts at one time share its stamp.
//!
//! Either way the schedule depends on the bag and the configuration only: replays are
//! deterministic.

use std::collections::BTreeMap;

use super::intake::Intake;
use super::pace::{Mode, ReflexConfig};

use crate::bag::Bag;
use crate::encode::{encode_sorted, Encoder, EncoderConfig, News};
use crate::model::Layout;

/// Per message of `bag`: whether it starts reflex bursts under `reflex` (its topic an input and a
/// trigger, and news under `on_change`: its encodings, by `encoders`, differ from its topic's
/// previous message's).
fn reflex_starts(bag: &Bag, reflex: &ReflexConfig, encoders: &[EncoderConfig], layout: &Layout) -> Result<Vec<bool>, String> {
    // per topic that starts reflexes: its encoders and what was news last
    let mut by_topic: Vec<Option<(Vec<Encoder>, News)>> = Vec::new();
    for t in &bag.topics {
        let configs: Vec<&EncoderConfig> = encoders.iter().filter(|c| c.topic() == t.name).collect();
        by_topic.push(if configs.is_empty() || !reflex.triggered_by(&t.name) {
            None
        } else {
            let e: Result<Vec<Encoder>, _> = configs.iter().map(|c| Encoder::new(c, layout)).collect();
            Some((e.map_err(|e| e.to_string())?, News::default()))
        });
    }
    Ok(bag
        .messages
        .iter()
        .map(|m| {
            let Some((encoders, news)) = &mut by_topic[m.topic] else { return false };
            // an undecodable message is dropped by the intake: no news
            !reflex.on_change || encode_sorted(encoders, &bag.topics[m.topic].type_name, &m.data).is_ok_and(|now| news.changed(&now))
        })
        .collect())
}

#[derive(Clone, Debug)]
pub struct BagSchedule {
    t0: u64,
    t_last: u64,
    /// Per burst: its bag time and how many messages (a prefix of the bag) it has been offered.
    bursts: Vec<(u64, usize)>,
    /// The next message to offer.
    next: usize,
}

impl BagSchedule {
    /// The clock's schedule of `bag` at `burst_rate_hz` (at most `max_bursts`, 0: no limit); no
    /// bursts for a bag without messages.
    pub fn new(bag: &Bag, burst_rate_hz: f64, max_bursts: u64) -> Result<BagSchedule, String> {
        Self::plan(bag, burst_rate_hz, max_bursts, None)
    }

    /// The schedule of `mode` (with `reflex`'s settings in reflex mode); `encoders` read the
    /// inputs (the bag's topics they name).
    pub fn for_mode(
        bag: &Bag,
        burst_rate_hz: f64,
        max_bursts: u64,
        (mode, reflex): (Mode, &ReflexConfig),
        (encoders, layout): (&[EncoderConfig], &Layout),
    ) -> Result<BagSchedule, String> {
        match mode {
            Mode::Clock => Self::new(bag, burst_rate_hz, max_bursts),
            Mode::Reflex => {
                reflex.check(&encoders.iter().map(|c| c.topic()).collect::<Vec<_>>())?;
                let starts = reflex_starts(bag, reflex, encoders, layout)?;
                Self::plan(bag, burst_rate_hz, max_bursts, Some((reflex.bursts, reflex.lead, &starts)))
            }
        }
    }

    /// `reflex`: bursts per message, lead, and per message whether it starts them.
    fn plan(bag: &Bag, rate: f64, max_bursts: u64, reflex: Option<(u32, u32, &[bool])>) -> Result<BagSchedule, String> {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(format!("burst_rate_hz must be > 0, not {rate}"));
        }
        let msgs = &bag.messages;
        let (Some(first), Some(last)) = (msgs.first(), msgs.last()) else {
            return Ok(BagSchedule { t0: 0, t_last: 0, bursts: vec![], next: 0 });
        };
        let (t0, t_last) = (first.log_time, last.log_time);
        let period_ns = 1e9 / rate;
        let grid = |j: u64| t0 + (j as f64 * period_ns).round() as u64;
        // the clock's bursts: up to the first one that starts after the last message
        let grid_total = ((t_last - t0) as f64 / period_ns).floor() as u64 + 2;
        let max = if max_bursts > 0 { max_bursts } else { u64::MAX } as usize;
        let mut bursts = Vec::new();
        match reflex {
            None => {
                let mut m = 0;
                for j in 0..grid_total.min(max as u64) {
                    let t = grid(j);
                    m += msgs[m..].partition_point(|x| x.log_time < t);
                    bursts.push((t, m));
                }
            }
            Some((per_message, lead, starts)) => {
                let (mut j, mut m, mut now) = (0u64, 0usize, t0);
                let (mut ahead, mut pending) = (0u32, 0u32);
                while bursts.len() < max {
                    if pending > 0 && ahead < lead {
                        bursts.push((now, m));
                        (pending, ahead) = (pending - 1, ahead + 1);
                        continue;
                    }
                    if j >= grid_total && m >= msgs.len() && pending == 0 {
                        break;
                    }
                    let tg = grid(j);
                    if m < msgs.len() && msgs[m].log_time <= tg {
                        // the messages logged at one time arrive together
                        now = msgs[m].log_time;
                        while m < msgs.len() && msgs[m].log_time == now {
                            if starts[m] {
                                pending = per_message;
                            }
                            m += 1;
                        }
                    } else {
                        now = tg;
                        j += 1;
                        if ahead > 0 {
                            ahead -= 1;
                        } else {
                            bursts.push((tg, m));
                            pending = pending.saturating_sub(1);
                        }
                    }
                }
            }
        }
        Ok(BagSchedule { t0, t_last, bursts, next: 0 })
    }

    /// The number of bursts.
    pub fn total(&self) -> u64 {
        self.bursts.len() as u64
    }

    /// Every burst's bag time, in order (what [`super::pace::Pace::bag`] paces).
    pub fn times(&self) -> Vec<u64> {
        self.bursts.iter().map(|b| b.0).collect()
    }

    /// The first message's log time.
    pub fn t0(&self) -> u64 {
        self.t0
    }

    /// Bag seconds from the first message to the last.
    pub fn duration_s(&self) -> f64 {
        (self.t_last - self.t0) as f64 * 1e-9
    }

    /// Burst `k`'s bag time `t_k` (k = 1, 2, ...).
    pub fn time(&self, k: u64) -> u64 {
        self.bursts[k as usize - 1].0
    }

    /// Offer `intake` every message not yet offered that burst `k` takes; those on topics no
    /// encoder reads are counted in `ignored`.
    pub fn offer(&mut self, bag: &Bag, k: u64, intake: &mut Intake, ignored: &mut BTreeMap<String, u64>) {
        let upto = self.bursts[k as usize - 1].1;
        while self.next < upto {
            let m = &bag.messages[self.next];
            let topic = &bag.topics[m.topic];
            if !intake.offer(&topic.name, &topic.type_name, &m.data, m.log_time) {
                *ignored.entry(topic.name.clone()).or_default() += 1;
            }
            self.next += 1;
        }
    }

    /// The index of the next message to offer (those before it were offered).
    pub fn position(&self) -> usize {
        self.next
    }

    /// Back to the first message (a replay that starts again).
    pub fn rewind(&mut self) {
        self.next = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bag::{BagMessage, Topic};

    /// Messages at these log times (ms) on topic 0 (an input) or 1 (not one).
    fn bag(times: &[(u64, usize)]) -> Bag {
        let topic = |n: &str| Topic { name: n.into(), type_name: "sensor_msgs/msg/LaserScan".into(), encoding: "cdr".into() };
        Bag {
            topics: vec![topic("/scan"), topic("/other")],
            messages: times.iter().map(|&(ms, topic)| BagMessage { topic, log_time: ms * 1_000_000, data: vec![] }).collect(),
            files: vec![],
        }
    }

    fn times_ms(s: &BagSchedule) -> Vec<(f64, usize)> {
        s.bursts.iter().map(|&(t, m)| ((t - s.t0) as f64 * 1e-6, m)).collect()
    }

    #[test]
    fn clock_bursts_on_the_grid_take_what_came_before() {
        let s = BagSchedule::plan(&bag(&[(0, 0), (25, 0), (30, 0)]), 100.0, 0, None).unwrap();
        assert_eq!(times_ms(&s), vec![(0.0, 0), (10.0, 1), (20.0, 1), (30.0, 2), (40.0, 3)]);
    }

    #[test]
    fn reflex_bursts_at_a_message_and_gives_up_grid_points() {
        let b = bag(&[(0, 0), (25, 0), (27, 1), (30, 0)]);
        let s = BagSchedule::plan(&b, 100.0, 0, Some((2, 8, &[true, true, false, true]))).unwrap();
        // 0 ms: the message starts two bursts (the grid points at 0 and 10 ms are given up);
        // 20 ms: on the grid; 25 ms: two bursts; 27 ms: not an input, nothing; 30 ms: two more
        // (4 ahead: the grid's 30..60 ms are given up, and the grid ends at 40 ms)
        assert_eq!(times_ms(&s), vec![(0.0, 1), (0.0, 1), (20.0, 1), (25.0, 2), (25.0, 2), (30.0, 4), (30.0, 4)]);
        // at most `lead` ahead: with lead 2 (2 ahead after 25 ms), the message at 30 ms waits for
        // the grid point at 30 ms to free one burst, and the one at 40 ms the other
        let s = BagSchedule::plan(&b, 100.0, 0, Some((2, 2, &[true, true, false, true]))).unwrap();
        assert_eq!(times_ms(&s), vec![(0.0, 1), (0.0, 1), (20.0, 1), (25.0, 2), (25.0, 2), (30.0, 4), (40.0, 4)]);
    }

    #[test]
    fn only_triggers_start_reflexes_and_with_on_change_only_news() {
        use crate::ros::sensor_msgs::LaserScan;
        let genome =
            crate::genome::Genome::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/genomes/rover.yaml"))).unwrap();
        let layout = Layout::from_genome(&genome);
        let encoders: Vec<EncoderConfig> = serde_yaml::from_str(
            "[{kind: laser_scan, topic: /scan, area: scan, max_range: 2.0}, {kind: laser_scan, topic: /other, area: scan, max_range: 2.0}]",
        )
        .unwrap();
        let scan = |near: bool| {
            let ranges = (0..16).map(|i| if near && i < 4 { 0.2 } else { 9.0 }).collect();
            let s = LaserScan { angle_min: -1.5, angle_max: 1.5, angle_increment: 0.2, range_max: 10.0, ranges, ..Default::default() };
            crate::ros::encode(&s)
        };
        let mut b = bag(&[(0, 0), (10, 0), (20, 1), (30, 0), (40, 0)]);
        for (m, near) in b.messages.iter_mut().zip([false, false, false, true, true]) {
            m.data = scan(near);
        }
        let starts = |r: &ReflexConfig| reflex_starts(&b, r, &encoders, &layout).unwrap();
        let every = ReflexConfig { on_change: false, ..ReflexConfig::default() };
        assert_eq!(starts(&every), [true, true, true, true, true]);
        let scan_only = ReflexConfig { triggers: vec!["scan".into()], on_change: false, ..ReflexConfig::default() };
        assert_eq!(starts(&scan_only), [true, true, false, true, true]);
        // the first scan is news, the second repeats it, the obstacle is news, then repeated
        let news = ReflexConfig { triggers: vec!["/scan".into()], ..ReflexConfig::default() };
        assert_eq!(starts(&news), [true, false, false, true, false]);
        let topics: Vec<&str> = encoders.iter().map(|c| c.topic()).collect();
        assert!(news.check(&topics).is_ok());
        let wrong = ReflexConfig { triggers: vec!["imu".into()], ..ReflexConfig::default() };
        assert_eq!(wrong.check(&topics).unwrap_err(), "node.reflex.triggers: no encoder reads topic imu");
    }
}
