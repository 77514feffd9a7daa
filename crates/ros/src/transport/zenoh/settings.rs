//! The `zenoh` section of the configuration, and the Zenoh session configuration built from it.
//! Multicast scouting is always off: the node only talks to the endpoints it is given.
//!
//! Security is configured the way Zenoh and rmw_zenoh users already do it: a Zenoh JSON5 session
//! configuration file (`zenoh.config_file`, or the environment's ZENOH_SESSION_CONFIG_URI, the
//! variable rmw_zenoh reads) holds TLS certificates (`quic/...` endpoints, mutual TLS), user and
//! password authentication and access control; neuroburst's own keys (mode, endpoints) apply on
//! top of it. config/zenoh/ ships commented examples.

use serde::{Deserialize, Serialize};

use super::keys::KeyFormat;
use crate::transport::TransportError;

/// Zenoh session mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ZenohMode {
    /// A peer that connects to a router (like every rmw_zenoh process on the robot).
    #[default]
    Peer,
    /// A client of a (remote) router: the remote-brain setup.
    Client,
}

/// The `zenoh` section of the configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ZenohConfig {
    /// peer | client
    pub mode: ZenohMode,
    /// Endpoints to connect to, e.g. `tcp/127.0.0.1:7447` (the robot's rmw_zenohd).
    pub connect: Vec<String>,
    /// Endpoints to listen on (peer mode only). Peers exchange data directly (the router only
    /// brokers discovery), so a peer must listen where the robot's processes can reach it.
    pub listen: Vec<String>,
    /// rmw | ros2dds
    pub format: KeyFormat,
    /// A Zenoh JSON5 session configuration to start from (TLS, authentication, access control;
    /// the file a robot passes to rmw_zenoh in ZENOH_SESSION_CONFIG_URI, which is read when this is
    /// not set). `mode`, `connect`, `listen` and multicast scouting apply on top of it.
    pub config_file: Option<std::path::PathBuf>,
    /// The largest message (bytes) the session takes from a link; a larger one is dropped by
    /// Zenoh before it is reassembled. 0: Zenoh's default. Not a key of the file: the node sets
    /// it from `node.max_message_size` (or its topics), a shard from its share of the brain.
    #[serde(skip)]
    pub max_message_size: u64,
}

impl Default for ZenohConfig {
    fn default() -> Self {
        ZenohConfig {
            mode: ZenohMode::Peer,
            connect: vec!["tcp/127.0.0.1:7447".into()],
            listen: vec!["tcp/127.0.0.1:0".into()],
            format: KeyFormat::Rmw,
            config_file: None,
            max_message_size: 0,
        }
    }
}

impl ZenohConfig {
    /// The Zenoh session configuration: mode, endpoints, multicast scouting off; connections
    /// are retried forever (a router that stops and comes back is reconnected).
    pub fn session_config(&self) -> Result<::zenoh::Config, TransportError> {
        let mut c = match self.base_file() {
            Some((path, from)) => {
                let c = ::zenoh::Config::from_file(&path)
                    .map_err(|e| TransportError::Zenoh(format!("{from} {}: not a Zenoh configuration: {e}", path.display())))?;
                tracing::info!("zenoh: session configuration from {} ({from}); mode and endpoints from neuroburst's", path.display());
                c
            }
            None => ::zenoh::Config::default(),
        };
        let mut set = |key: &str, value: serde_json::Value| {
            c.insert_json5(key, &value.to_string()).map_err(|e| TransportError::Zenoh(format!("config {key}: {e}")))
        };
        let mode = match self.mode {
            ZenohMode::Peer => "peer",
            ZenohMode::Client => "client",
        };
        set("mode", mode.into())?;
        set("scouting/multicast/enabled", false.into())?;
        set("connect/endpoints", serde_json::json!(self.connect))?;
        set("connect/exit_on_failure", false.into())?;
        set("connect/timeout_ms", (-1).into())?;
        // A peer listens only where told; a client never listens.
        let listen = if self.mode == ZenohMode::Client { vec![] } else { self.listen.clone() };
        set("listen/endpoints", serde_json::json!(listen))?;
        if self.max_message_size > 0 {
            set("transport/link/rx/max_message_size", self.max_message_size.into())?;
        }
        Ok(c)
    }

    /// The session configuration file to start from, and what named it.
    pub fn base_file(&self) -> Option<(std::path::PathBuf, &'static str)> {
        if let Some(p) = &self.config_file {
            return Some((p.clone(), "zenoh.config_file"));
        }
        let uri = std::env::var("ZENOH_SESSION_CONFIG_URI").ok().filter(|v| !v.is_empty())?;
        let path = uri.strip_prefix("file://").unwrap_or(&uri);
        Some((path.into(), "ZENOH_SESSION_CONFIG_URI"))
    }
}
