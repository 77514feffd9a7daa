//! The wall clock's burst grid: bursts start on a fixed grid `t0 + k x period`, never drifting. A burst that
//! ends after the next grid point has missed its deadline: it is counted, and the clock moves on
//! to the next grid point still ahead (late bursts are never caught up in a rush).

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct Grid {
    t0: Instant,
    period: Duration,
    /// Grid index of the next burst.
    next: u64,
    pub missed: u64,
    /// Spin to each grid point instead of sleeping (`node.realtime.busy_poll`).
    pub busy: bool,
}

/// How long before a deadline the clock stops sleeping and spins (sleep overshoots ~50-100 us).
pub const SPIN: Duration = Duration::from_micros(200);

impl Grid {
    pub fn new(rate_hz: f64, now: Instant) -> Grid {
        Grid { t0: now, period: crate::time::seconds(1.0 / rate_hz), next: 0, missed: 0, busy: false }
    }

    /// Start the grid again at `now` (keeping its period and `busy`).
    pub fn restart(&mut self, now: Instant) {
        *self = Grid { t0: now, next: 0, missed: 0, ..*self };
    }

    pub fn period(&self) -> Duration {
        self.period
    }

    fn at(&self, k: u64) -> Instant {
        self.t0 + self.period.saturating_mul(k.min(u32::MAX as u64) as u32)
    }

    /// The next grid point.
    pub fn deadline(&self) -> Instant {
        self.at(self.next)
    }

    /// Give up the next grid point without a burst (reflex mode ran that burst early).
    pub fn skip(&mut self) {
        self.next += 1;
    }

    /// Wait for the next grid point (or return at once if it has passed).
    pub fn wait(&self) {
        let deadline = self.at(self.next);
        loop {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            let left = deadline - now;
            if left > SPIN && !self.busy {
                std::thread::sleep(left - SPIN);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// The burst that started at the current grid point ended at `end`: count a miss if it
    /// overran its period, and advance to the first grid point not yet passed.
    pub fn finished(&mut self, end: Instant) -> bool {
        let slot_end = self.at(self.next + 1);
        let missed = end > slot_end;
        if missed {
            self.missed += 1;
        }
        let elapsed = end.saturating_duration_since(self.t0).as_nanos();
        let k = (elapsed / self.period.as_nanos().max(1)) as u64 + 1;
        self.next = k.max(self.next + 1);
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_time_bursts_follow_the_grid() {
        let t0 = Instant::now();
        let mut c = Grid::new(1000.0, t0);
        assert!(!c.finished(t0 + Duration::from_micros(300)));
        assert_eq!(c.next, 1);
        assert!(!c.finished(t0 + Duration::from_micros(1500)));
        assert_eq!(c.next, 2);
        assert_eq!(c.missed, 0);
    }

    #[test]
    fn a_late_burst_is_counted_and_skips_without_drift() {
        let t0 = Instant::now();
        let mut c = Grid::new(1000.0, t0);
        // Burst 0 runs 3.5 ms: missed; the next starts at 4 ms, on the grid.
        assert!(c.finished(t0 + Duration::from_micros(3500)));
        assert_eq!((c.missed, c.next), (1, 4));
        assert_eq!(c.at(c.next), t0 + Duration::from_millis(4));
    }

    #[test]
    fn a_busy_grid_spins_to_its_point_and_keeps_busy_on_restart() {
        let t0 = Instant::now();
        let mut c = Grid { busy: true, ..Grid::new(500.0, t0) };
        c.restart(t0);
        assert!(c.busy);
        assert_eq!(c.period(), Duration::from_millis(2));
        c.finished(t0);
        c.wait();
        assert!(Instant::now() >= t0 + Duration::from_millis(2));
    }
}
