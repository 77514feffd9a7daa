//! Rates and seconds as [`Duration`]s, bounded where they are made: a rate outside
//! [`MIN_RATE_HZ`]..=[`MAX_RATE_HZ`] is refused with the key that named it, and seconds are
//! clamped into `0..=MAX_SECONDS` (NaN is 0), so no configuration, genome or message can make
//! `Duration::from_secs_f64` panic on a burst thread.

use std::time::Duration;

/// The slowest rate anything runs at: one burst (or message, or frame) in 1000 s.
pub const MIN_RATE_HZ: f64 = 1e-3;
/// The fastest: 100,000 a second (a 10 us burst period).
pub const MAX_RATE_HZ: f64 = 1e5;
/// The longest time span made from seconds: a day.
pub const MAX_SECONDS: f64 = 86_400.0;

/// Whether `rate_hz` is a usable rate.
pub fn rate_ok(rate_hz: f64) -> bool {
    (MIN_RATE_HZ..=MAX_RATE_HZ).contains(&rate_hz)
}

/// Why `rate_hz` is not a usable rate of `what` (a key, a field), if it is not.
pub fn check_rate(rate_hz: f64, what: &str) -> Result<(), String> {
    if rate_ok(rate_hz) {
        Ok(())
    } else {
        Err(format!("{what}: {rate_hz} per second is outside {MIN_RATE_HZ}..={MAX_RATE_HZ}"))
    }
}

/// The period of `rate_hz` (checked: the error names `what`).
pub fn period(rate_hz: f64, what: &str) -> Result<Duration, String> {
    check_rate(rate_hz, what)?;
    Ok(seconds(1.0 / rate_hz))
}

/// `s` seconds, clamped into `0..=MAX_SECONDS` (NaN: 0).
pub fn seconds(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(s.min(MAX_SECONDS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_rates_and_seconds_never_panic() {
        for r in [0.0, -1.0, 1e-20, 1e300, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE] {
            let e = period(r, "genome.burst_rate_hz").unwrap_err();
            assert!(e.contains("genome.burst_rate_hz"), "{e}");
        }
        assert_eq!(period(1000.0, "r").unwrap(), Duration::from_millis(1));
        assert_eq!(period(MIN_RATE_HZ, "r").unwrap(), Duration::from_secs(1000));
        for s in [f64::NAN, -5.0, f64::NEG_INFINITY] {
            assert_eq!(seconds(s), Duration::ZERO);
        }
        assert_eq!(seconds(f64::INFINITY), Duration::from_secs(86_400));
        assert_eq!(seconds(1e300), Duration::from_secs(86_400));
        assert_eq!(seconds(0.25), Duration::from_millis(250));
    }
}
