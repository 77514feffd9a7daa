//! The `cluster` section of the configuration: one brain sharded over several processes or hosts
//! (`neuroburst shard`). Membership is static: shard `k` listens on `endpoints[k]` and connects to
//! every other shard's endpoint; the shard count is the number of endpoints.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the surviving shards do when a shard dies or stalls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum OnShardLoss {
    /// Every shard stops (exit status 3) after naming the missing shard; restart them all with
    /// `--resume` to continue from the last common checkpoint.
    #[default]
    Stop,
    /// The others go on without it (its spikes count as none) until it rejoins.
    Degraded,
}

/// Most shards a cluster may have (membership travels as a 64-bit mask).
pub const MAX_SHARDS: usize = 64;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// The brain's name in the Zenoh keys (`neuroburst/<name>/...`): letters, digits, `_`, `-`.
    pub name: String,
    /// One Zenoh endpoint per shard, e.g. `tcp/10.0.0.2:7600`: shard `k` listens on
    /// `endpoints[k]` and connects to all the others.
    pub endpoints: Vec<String>,
    /// The shard that takes the sensor input (and forwards each shard its share every burst) and
    /// gathers the motor output.
    pub io_shard: usize,
    /// How long a shard waits for a peer's spikes of a burst before it counts the peer as missing.
    pub burst_timeout_ms: u64,
    /// How long the shards wait for each other at start-up and after a rejoin.
    pub startup_timeout_s: f64,
    /// stop | degraded
    pub on_shard_loss: OnShardLoss,
    /// Every shard saves its own state every this many bursts (0 = never); a rejoin rolls the
    /// whole brain back to the last checkpoint that every shard holds.
    pub checkpoint_interval: u64,
    /// Where the shards' checkpoint files go (`<name>-shard<k>-<burst>.ckpt`).
    pub checkpoint_dir: PathBuf,
    /// Bursts per second, paced by the io shard; 0 = as fast as the shards go.
    pub rate_hz: f64,
    /// A Zenoh JSON5 session configuration for the shards' links (TLS and mutual TLS with
    /// `quic/...` endpoints, authentication, access control: config/zenoh/cluster_mtls.json5); the
    /// endpoints and scouting above apply on top of it.
    pub zenoh_config_file: Option<PathBuf>,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            name: "brain".into(),
            endpoints: vec![],
            io_shard: 0,
            burst_timeout_ms: 1000,
            startup_timeout_s: 120.0,
            on_shard_loss: OnShardLoss::Stop,
            checkpoint_interval: 0,
            checkpoint_dir: "checkpoints".into(),
            rate_hz: 0.0,
            zenoh_config_file: None,
        }
    }
}

/// A bad `cluster` section; the message names the key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cluster.{key}: {message}")]
pub struct ClusterConfigError {
    pub key: &'static str,
    pub message: String,
}

impl ClusterConfig {
    pub fn shards(&self) -> usize {
        self.endpoints.len()
    }

    pub fn burst_timeout(&self) -> Duration {
        Duration::from_millis(self.burst_timeout_ms)
    }

    pub fn startup_timeout(&self) -> Duration {
        crate::time::seconds(self.startup_timeout_s)
    }

    /// Check the section for running shard `index` (`None`: only the section itself).
    pub fn validate(&self, index: Option<usize>) -> Result<(), ClusterConfigError> {
        let err = |key, message: String| Err(ClusterConfigError { key, message });
        if self.name.is_empty() || !self.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return err("name", format!("{:?} must be letters, digits, `_` or `-` (it is a Zenoh key segment)", self.name));
        }
        let n = self.endpoints.len();
        if n == 0 {
            return err("endpoints", "no shards: list one Zenoh endpoint per shard, e.g. [tcp/10.0.0.1:7600, tcp/10.0.0.2:7600]".into());
        }
        if n > MAX_SHARDS {
            return err("endpoints", format!("{n} shards, at most {MAX_SHARDS} are supported"));
        }
        for (k, e) in self.endpoints.iter().enumerate() {
            if !e.contains('/') || e.contains(char::is_whitespace) {
                return err("endpoints", format!("endpoint {k} {e:?} is not a Zenoh endpoint like tcp/10.0.0.1:7600"));
            }
            if self.endpoints[..k].contains(e) {
                return err(
                    "endpoints",
                    format!("endpoint {e:?} is listed twice (shards {} and {k})", self.endpoints[..k].iter().position(|x| x == e).unwrap()),
                );
            }
        }
        if self.io_shard >= n {
            return err("io_shard", format!("{} but there are {n} shards (0..{})", self.io_shard, n - 1));
        }
        if self.burst_timeout_ms == 0 {
            return err("burst_timeout_ms", "must be at least 1".into());
        }
        if !(self.startup_timeout_s.is_finite() && self.startup_timeout_s > 0.0) {
            return err("startup_timeout_s", format!("{} is not > 0", self.startup_timeout_s));
        }
        if !(self.rate_hz.is_finite() && self.rate_hz >= 0.0) {
            return err("rate_hz", format!("{} is not >= 0", self.rate_hz));
        }
        if self.rate_hz > 0.0 && self.burst_timeout().as_secs_f64() <= 1.0 / self.rate_hz {
            return err(
                "burst_timeout_ms",
                format!(
                    "{} ms is not longer than a burst period at rate_hz {} ({:.1} ms)",
                    self.burst_timeout_ms,
                    self.rate_hz,
                    1000.0 / self.rate_hz
                ),
            );
        }
        if let Some(k) = index {
            if k >= n {
                return err("endpoints", format!("shard index {k}, but the cluster has {n} shards (0..{})", n - 1));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> ClusterConfig {
        ClusterConfig {
            endpoints: vec!["tcp/10.0.0.1:7600".into(), "tcp/10.0.0.2:7600".into(), "tcp/10.0.0.3:7600".into()],
            ..Default::default()
        }
    }

    #[test]
    fn a_good_section_passes() {
        assert_eq!(three().validate(Some(2)), Ok(()));
        assert_eq!(three().shards(), 3);
    }

    #[test]
    fn errors_name_the_key() {
        let e = ClusterConfig::default().validate(None).unwrap_err();
        assert_eq!(e.key, "endpoints");
        let e = three().validate(Some(3)).unwrap_err().to_string();
        assert!(e.contains("cluster.endpoints") && e.contains("index 3"), "{e}");
        let e = ClusterConfig { io_shard: 5, ..three() }.validate(None).unwrap_err().to_string();
        assert!(e.starts_with("cluster.io_shard"), "{e}");
        let e = ClusterConfig { name: "a/b".into(), ..three() }.validate(None).unwrap_err();
        assert_eq!(e.key, "name");
        let mut dup = three();
        dup.endpoints[2] = dup.endpoints[0].clone();
        assert!(dup.validate(None).unwrap_err().message.contains("twice"));
        let e = ClusterConfig { rate_hz: 1.0, burst_timeout_ms: 500, ..three() }.validate(None).unwrap_err();
        assert_eq!(e.key, "burst_timeout_ms");
        let e = ClusterConfig { startup_timeout_s: f64::NAN, ..three() }.validate(None).unwrap_err();
        assert_eq!(e.key, "startup_timeout_s");
    }
}
