//! Bad input is counted always and logged at most once per topic, kind and interval.

use std::collections::HashMap;
use std::time::{Duration, Instant};

pub struct ProblemLog {
    interval: Duration,
    /// (topic, kind) -> (count at the last log line, when it was logged).
    last: HashMap<(String, &'static str), (u64, Option<Instant>)>,
}

impl ProblemLog {
    pub fn new(interval: Duration) -> ProblemLog {
        ProblemLog { interval, last: HashMap::new() }
    }

    /// Log at most once per `interval` from now on (`node.log_interval_s` set while running).
    pub fn set_interval(&mut self, interval: Duration) {
        self.interval = interval;
    }

    /// `total` is the running count of `kind` problems on `topic`; logs a warning if it grew and
    /// nothing was logged about it in the last interval. Returns whether it logged.
    pub fn check(&mut self, now: Instant, topic: &str, kind: &'static str, total: u64, detail: Option<&str>) -> bool {
        let entry = self.last.entry((topic.to_string(), kind)).or_insert((0, None));
        if total <= entry.0 || entry.1.is_some_and(|t| now.duration_since(t) < self.interval) {
            return false;
        }
        let new = total - entry.0;
        match detail {
            Some(d) => tracing::warn!("{topic}: {new} {kind} (total {total}); last: {d}"),
            None => tracing::warn!("{topic}: {new} {kind} (total {total})"),
        }
        *entry = (total, Some(now));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_topic_and_interval() {
        let mut p = ProblemLog::new(Duration::from_secs(5));
        let t = Instant::now();
        assert!(p.check(t, "/scan", "malformed", 1, None));
        assert!(!p.check(t + Duration::from_secs(1), "/scan", "malformed", 50, None));
        assert!(p.check(t + Duration::from_secs(1), "/image", "malformed", 1, None));
        assert!(p.check(t + Duration::from_secs(6), "/scan", "malformed", 60, None));
        assert!(!p.check(t + Duration::from_secs(20), "/scan", "malformed", 60, None));
    }
}
