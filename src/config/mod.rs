//! The node's configuration: YAML, strict (unknown keys are errors), every key documented in
//! `config/neuroburst.yaml`, which is also the built-in default. Layers: defaults, then a file,
//! then `--set key=value` overrides.

pub mod params;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::BackendConfig;
use crate::decode::DecoderConfig;
use crate::encode::EncoderConfig;
use crate::replay::{ReplayConfig, ReplaySetup};

/// The commented default configuration shipped in `config/`.
pub const DEFAULT_YAML: &str = include_str!("../../config/neuroburst.yaml");

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub backend: BackendConfig,
    #[serde(default)]
    pub log: LogConfig,
    /// Sensor topics -> sensor areas.
    #[serde(default)]
    pub encoders: Vec<EncoderConfig>,
    /// Motor areas -> motor topics.
    #[serde(default)]
    pub decoders: Vec<DecoderConfig>,
    /// `neuroburst replay`.
    #[serde(default)]
    pub replay: ReplayConfig,
    /// `neuroburst node`: the live ROS 2 node.
    #[serde(default)]
    pub node: crate::node::NodeConfig,
    /// The Zenoh transport.
    #[serde(default)]
    pub zenoh: crate::transport::zenoh::ZenohConfig,
    /// Checkpoints of the brain's state.
    #[serde(default)]
    pub checkpoint: crate::checkpoint::CheckpointConfig,
    /// One brain sharded over several processes or hosts (`neuroburst shard`).
    #[serde(default)]
    pub cluster: crate::cluster::ClusterConfig,
    /// The live view (Foxglove WebSocket) and the scene a replay records.
    #[serde(default)]
    pub view: crate::view::ViewConfig,
}

/// Logging and progress display.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub level: String,
    pub progress: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig { level: "info".into(), progress: true }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the configuration: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("--set {arg:?}: {message}")]
    Override { arg: String, message: String },
}

impl Config {
    /// The sections the live node reads.
    pub fn node_setup(&self) -> crate::node::NodeSetup<'_> {
        crate::node::NodeSetup {
            node: &self.node,
            encoders: &self.encoders,
            decoders: &self.decoders,
            backend: &self.backend,
            checkpoint: &self.checkpoint,
            view: &self.view,
        }
    }

    /// The sections the live node reads, owned (what a managed node reads at every configure).
    pub fn node_sections(&self) -> crate::node::NodeSections {
        crate::node::NodeSections {
            node: self.node.clone(),
            encoders: self.encoders.clone(),
            decoders: self.decoders.clone(),
            backend: self.backend.clone(),
            checkpoint: self.checkpoint.clone(),
            view: self.view.clone(),
        }
    }

    /// The sections a replay reads.
    pub fn replay_setup(&self) -> ReplaySetup {
        ReplaySetup {
            encoders: self.encoders.clone(),
            decoders: self.decoders.clone(),
            mode: self.node.mode,
            reflex: self.node.reflex.clone(),
            replay: self.replay.clone(),
            view: self.view.clone(),
        }
    }

    /// Defaults, then `file` (if any), then each `key=value` override, checked strictly.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        let text = match file {
            Some(path) => std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?,
            None => String::new(),
        };
        let origin = file.map_or("default configuration".to_string(), |p| p.display().to_string());
        let invalid = |e: serde_yaml::Error| ConfigError::Invalid { origin: origin.clone(), message: e.to_string() };
        // The file alone must be valid, so its errors name the file, the key and the line.
        let mut value: serde_yaml::Value = serde_yaml::from_str(&text).map_err(invalid)?;
        if value.is_null() {
            value = serde_yaml::Value::Mapping(Default::default());
        }
        let mut config: Config = if text.trim().is_empty() { Config::default() } else { serde_yaml::from_str(&text).map_err(invalid)? };
        for arg in overrides {
            apply_override(&mut value, arg)?;
            config =
                serde_yaml::from_value(value.clone()).map_err(|e| ConfigError::Override { arg: arg.clone(), message: e.to_string() })?;
        }
        config.validate()?;
        Ok(config)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];
        if !LEVELS.contains(&self.log.level.as_str()) {
            return Err(ConfigError::Invalid {
                origin: "log.level".into(),
                message: format!("{:?} is not one of {}", self.log.level, LEVELS.join(", ")),
            });
        }
        params::check(self).map_err(|(origin, message)| ConfigError::Invalid { origin, message })?;
        if self.node.reflex.lead < self.node.reflex.bursts {
            return Err(ConfigError::Invalid {
                origin: "node.reflex.lead".into(),
                message: format!("{} is less than node.reflex.bursts ({})", self.node.reflex.lead, self.node.reflex.bursts),
            });
        }
        let mut topics: Vec<&str> = self.decoders.iter().map(|d| d.topic()).collect();
        if !self.replay.activity_topic.is_empty() {
            topics.push(&self.replay.activity_topic);
        }
        for (i, t) in topics.iter().enumerate() {
            if topics[..i].contains(t) {
                return Err(ConfigError::Invalid {
                    origin: "decoders".into(),
                    message: format!("topic {t} is written by two outputs (decoders, replay.activity_topic)"),
                });
            }
        }
        Ok(())
    }
}

/// Set `a.b.c=value` in a YAML tree; `value` is parsed as YAML (so numbers and booleans keep
/// their types).
pub(crate) fn apply_override(root: &mut serde_yaml::Value, arg: &str) -> Result<(), ConfigError> {
    let err = |message: String| ConfigError::Override { arg: arg.to_string(), message };
    let (key, raw) = arg.split_once('=').ok_or_else(|| err("expected key=value".into()))?;
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(err("the key must be dotted names like backend.kind".into()));
    }
    let value: serde_yaml::Value = serde_yaml::from_str(raw).map_err(|e| err(format!("value is not valid YAML: {e}")))?;
    let mut node = root;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let map = match node {
            serde_yaml::Value::Mapping(m) => m,
            _ => return Err(err(format!("`{}` is not a section", parts[..i].join(".")))),
        };
        let k = serde_yaml::Value::String(part.to_string());
        if i + 1 == parts.len() {
            map.insert(k, value);
            return Ok(());
        }
        node = map.entry(k).or_insert_with(|| serde_yaml::Value::Mapping(Default::default()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_default_parses_and_equals_the_builtin_defaults() {
        let parsed: Config = serde_yaml::from_str(DEFAULT_YAML).unwrap();
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn overrides_apply_in_order_and_keep_types() {
        let c = Config::load(None, &["backend.kind=cpu".into(), "backend.cpu_threads=3".into(), "log.progress=false".into()]).unwrap();
        assert_eq!(c.backend.kind, crate::backend::BackendKind::Cpu);
        assert_eq!(c.backend.cpu_threads, 3);
        assert!(!c.log.progress);
        let c = Config::load(None, &["backend.cuda_launch=graphs".into()]).unwrap();
        assert_eq!(c.backend.cuda_launch, crate::backend::CudaLaunch::Graphs);
        assert_eq!(Config::default().backend.cuda_launch, crate::backend::CudaLaunch::Auto);
    }

    #[test]
    fn bad_overrides_name_the_key() {
        let e = Config::load(None, &["backend.kindd=cpu".into()]).unwrap_err().to_string();
        assert!(e.contains("backend.kindd") && e.contains("unknown field"), "{e}");
        let e = Config::load(None, &["backend.kind=gpu".into()]).unwrap_err().to_string();
        assert!(e.contains("backend.kind=gpu") && e.contains("unknown variant"), "{e}");
        let e = Config::load(None, &["backend.cuda_launch=kernel".into()]).unwrap_err().to_string();
        assert!(e.contains("backend.cuda_launch=kernel") && e.contains("unknown variant"), "{e}");
        let e = Config::load(None, &["backend".into()]).unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
        let e = Config::load(None, &["log.level=loud".into()]).unwrap_err().to_string();
        assert!(e.contains("log.level"), "{e}");
    }

    #[test]
    fn the_diffdrive_example_config_loads() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/diffdrive/config.yaml");
        let c = Config::load(Some(&p), &[]).unwrap();
        assert_eq!((c.encoders.len(), c.decoders.len()), (3, 1));
        assert_eq!(c.decoders[0].topic(), "/cmd_vel");
        let e = Config::load(Some(&p), &["replay.activity_topic=/cmd_vel".into()]).unwrap_err().to_string();
        assert!(e.contains("/cmd_vel") && e.contains("two outputs"), "{e}");
    }

    #[test]
    fn the_shipped_cluster_and_remote_brain_configs_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        let c = Config::load(Some(&dir.join("cluster.yaml")), &[]).unwrap();
        c.cluster.validate(Some(2)).unwrap();
        assert_eq!(c.cluster.shards(), 3);
        assert_eq!(c.cluster.on_shard_loss, crate::cluster::OnShardLoss::Degraded);
        assert!(c.cluster.endpoints.iter().all(|e| e.starts_with("tcp/127.0.0.1:")), "shipped endpoints stay on loopback");
        let r = Config::load(Some(&dir.join("remote_brain.yaml")), &[]).unwrap();
        assert_eq!(r.zenoh.mode, crate::transport::zenoh::ZenohMode::Client);
        assert_eq!(r.zenoh.connect, vec!["tcp/127.0.0.1:7447".to_string()]);
        let e = Config::load(None, &["cluster.on_shard_loss=retry".into()]).unwrap_err().to_string();
        assert!(e.contains("on_shard_loss") && e.contains("unknown variant"), "{e}");
    }

    #[test]
    fn unknown_keys_in_a_file_name_the_file_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.yaml");
        std::fs::write(&p, "backend:\n  kind: cpu\n  speed: 11\n").unwrap();
        let e = Config::load(Some(&p), &[]).unwrap_err().to_string();
        assert!(e.contains("c.yaml") && e.contains("speed") && e.contains("line 3"), "{e}");
    }
}
