//! `ros2 launch` appends `--ros-args ...` to the command line. They are taken out before clap
//! sees the arguments, and read here for every transport: `-r/--remap from:=to` (topics, and
//! `__node`/`__ns`), `-p/--param name:=value`, `--params-file FILE`; the rest (`--log-level`,
//! `--enclave`, ...) is accepted and ignored. Parameters named like configuration keys
//! (`node.rate_hz`, `zenoh.connect`, ...) override the configuration file; `genome`, `config` and
//! `resume` stand for the command-line options of the same names.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RosArgs {
    /// Everything that came inside `--ros-args ... [--]`, in order.
    pub raw: Vec<String>,
    /// Topic remappings `from -> to` (names as written).
    pub remaps: BTreeMap<String, String>,
    /// `__node:=` and `__ns:=`.
    pub node_name: Option<String>,
    pub namespace: Option<String>,
    /// `-p` parameters, then `--params-file` ones (as YAML values), in order.
    pub params: Vec<(String, serde_yaml::Value)>,
    pub params_files: Vec<String>,
}

static ROS_ARGS: OnceLock<RosArgs> = OnceLock::new();

/// Remove the `--ros-args` blocks from the process arguments (keep them for [`get`]).
pub fn strip(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let (rest, ros) = split(args);
    let _ = ROS_ARGS.set(ros);
    rest
}

/// The `--ros-args` of this process (empty if none).
pub fn get() -> RosArgs {
    ROS_ARGS.get().cloned().unwrap_or_default()
}

pub fn split(args: impl IntoIterator<Item = OsString>) -> (Vec<OsString>, RosArgs) {
    let mut rest = vec![];
    let mut ros = RosArgs::default();
    let mut inside = false;
    for a in args {
        if a == "--ros-args" {
            inside = true;
        } else if inside && a == "--" {
            inside = false;
        } else if inside {
            ros.raw.push(a.to_string_lossy().into_owned());
        } else {
            rest.push(a);
        }
    }
    let mut it = ros.raw.clone().into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-r" | "--remap" => {
                if let Some((from, to)) = it.next().as_deref().and_then(|r| r.split_once(":=")) {
                    match from.rsplit(':').next().unwrap_or(from) {
                        "__node" | "__name" => ros.node_name = Some(to.to_string()),
                        "__ns" => ros.namespace = Some(to.to_string()),
                        f => {
                            ros.remaps.insert(f.to_string(), to.to_string());
                        }
                    }
                }
            }
            "-p" | "--param" => {
                if let Some((k, v)) = it.next().as_deref().and_then(|p| p.split_once(":=")) {
                    let k = k.rsplit(':').next().unwrap_or(k);
                    ros.params.push((k.to_string(), serde_yaml::from_str(v).unwrap_or(serde_yaml::Value::String(v.into()))));
                }
            }
            "--params-file" => ros.params_files.extend(it.next()),
            _ => {}
        }
    }
    (rest, ros)
}

/// Parameters of a ROS params file for node `name` in namespace `ns` (entries `/**`, `name`,
/// `/name`, `ns/name`), flattened to dotted names.
pub fn read_params_file(path: &Path, name: &str, ns: &str) -> anyhow::Result<Vec<(String, serde_yaml::Value)>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let full = format!("{}/{name}", ns.trim_end_matches('/'));
    let mut out = vec![];
    if let serde_yaml::Value::Mapping(m) = doc {
        for (k, v) in m {
            let k = k.as_str().unwrap_or_default();
            if ["/**", "**", name, full.as_str(), full.trim_start_matches('/')].contains(&k) {
                if let Some(p) = v.get("ros__parameters") {
                    flatten("", p, &mut out);
                }
            }
        }
    }
    Ok(out)
}

fn flatten(prefix: &str, v: &serde_yaml::Value, out: &mut Vec<(String, serde_yaml::Value)>) {
    match v {
        serde_yaml::Value::Mapping(m) => {
            for (k, v) in m {
                let k = k.as_str().unwrap_or_default();
                let key = if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
                flatten(&key, v, out);
            }
        }
        v => out.push((prefix.to_string(), v.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_parses_the_ros_args_of_ros2_launch() {
        let args = "neuroburst node --genome g.yaml --ros-args -r __node:=brain -r __ns:=/robot1 -r cmd_vel:=/diff/cmd_vel -p node.rate_hz:=500.0 --params-file /tmp/p.yaml --log-level info -- --resume";
        let (rest, ros) = split(args.split(' ').map(OsString::from));
        assert_eq!(rest, "neuroburst node --genome g.yaml --resume".split(' ').map(OsString::from).collect::<Vec<_>>());
        assert_eq!(ros.node_name.as_deref(), Some("brain"));
        assert_eq!(ros.namespace.as_deref(), Some("/robot1"));
        assert_eq!(ros.remaps["cmd_vel"], "/diff/cmd_vel");
        assert_eq!(ros.params, vec![("node.rate_hz".to_string(), serde_yaml::Value::from(500.0))]);
        assert_eq!(ros.params_files, vec!["/tmp/p.yaml"]);
    }

    #[test]
    fn params_files_are_flattened_for_this_node() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.yaml");
        std::fs::write(&p, "/**:\n  ros__parameters:\n    genome: g.yaml\nbrain:\n  ros__parameters:\n    node:\n      rate_hz: 250.0\nother:\n  ros__parameters:\n    x: 1\n").unwrap();
        let v = read_params_file(&p, "brain", "/").unwrap();
        assert_eq!(v, vec![("genome".into(), "g.yaml".into()), ("node.rate_hz".into(), serde_yaml::Value::from(250.0))]);
    }
}
