//! Smoothing over a window of bursts, and the output rate (in bag/ROS time, never wall-clock).

use std::collections::VecDeque;

/// Moving average of value vectors over the last `window` bursts.
#[derive(Debug)]
pub struct Smoother {
    window: usize,
    history: VecDeque<Vec<f64>>,
}

impl Smoother {
    /// A mean over the last `window` values.
    pub fn new(window: usize) -> Self {
        Smoother { window: window.max(1), history: VecDeque::new() }
    }

    /// Add this burst's values; the average of the window.
    pub fn push(&mut self, values: Vec<f64>) -> Vec<f64> {
        if self.history.len() == self.window {
            self.history.pop_front();
        }
        self.history.push_back(values);
        let n = self.history.len() as f64;
        let len = self.history.back().map_or(0, Vec::len);
        (0..len).map(|i| self.history.iter().map(|v| v.get(i).copied().unwrap_or(0.0)).sum::<f64>() / n).collect()
    }
}

/// Lets one message through per period of `1 / rate_hz` (0 = every burst).
#[derive(Debug)]
pub struct RateGate {
    rate_hz: f64,
    last_slot: Option<u64>,
}

impl RateGate {
    /// A gate of `rate_hz` messages a second (0: every burst).
    pub fn new(rate_hz: f64) -> Self {
        RateGate { rate_hz, last_slot: None }
    }

    /// Whether a message at `time_ns` goes through (and the gate then waits for the next period).
    pub fn due(&mut self, time_ns: u64) -> bool {
        if self.rate_hz <= 0.0 {
            return true;
        }
        let slot = (time_ns as f64 * 1e-9 * self.rate_hz).floor() as u64;
        if self.last_slot == Some(slot) {
            return false;
        }
        self.last_slot = Some(slot);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_average_and_rate() {
        let mut s = Smoother::new(2);
        assert_eq!(s.push(vec![1.0]), vec![1.0]);
        assert_eq!(s.push(vec![3.0]), vec![2.0]);
        assert_eq!(s.push(vec![5.0]), vec![4.0]);
        let mut g = RateGate::new(10.0);
        let due: Vec<bool> = [0u64, 50_000_000, 100_000_000, 150_000_000, 210_000_000].iter().map(|&t| g.due(t)).collect();
        assert_eq!(due, vec![true, false, true, false, true]);
    }
}
