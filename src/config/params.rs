//! The configuration's keys as parameters: every key of a section that holds a value or a list of
//! values (not the lists of entries: the encoders, the decoders, `view.topics`; nor
//! `node.input_types`), with its type, its description (the comment above it in
//! `config/neuroburst.yaml`) and, for a number, its range. Every value is checked against its range wherever it comes from (the file, `--set`,
//! a ROS parameter), and the refusal names the key and the range.

use std::collections::BTreeMap;
use std::fmt;

use serde_yaml::Value;

use super::{apply_override, Config, DEFAULT_YAML};
use crate::ros::rcl_interfaces::{FloatingPointRange, IntegerRange, ParameterDescriptor, ParameterValue};
use crate::ros::typesys::Bounded;

/// A parameter's type, as ROS 2 names them (rcl_interfaces/msg/ParameterType).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Integer,
    Double,
    String,
    BoolArray,
    IntegerArray,
    DoubleArray,
    StringArray,
}

impl Kind {
    /// Its rcl_interfaces/msg/ParameterType id.
    pub fn ros_type(self) -> u8 {
        match self {
            Kind::Bool => 1,
            Kind::Integer => 2,
            Kind::Double => 3,
            Kind::String => 4,
            Kind::BoolArray => 6,
            Kind::IntegerArray => 7,
            Kind::DoubleArray => 8,
            Kind::StringArray => 9,
        }
    }
}

/// The keys whose new value may take effect while the node runs (at the next burst), and every
/// decoder's scales and limits (`decoders.<topic>.<axis>.scale`); the others are read at
/// configure: a managed node takes them while unconfigured, else they are set in the
/// configuration or with `--set`.
pub const DYNAMIC: &[&str] = &["log.level", "node.log_interval_s", "backend.learning"];

/// The keys fixed when the node starts: its transport's (its name, namespace, domain, the Zenoh
/// session) and the process's.
const FIXED: &[&str] = &[
    "node.name",
    "node.namespace",
    "node.domain",
    "node.transport",
    "node.lifecycle",
    "node.parameter_files_dir",
    "zenoh",
    "cluster.zenoh_config_file",
    "log.progress",
    "backend.cpu_threads",
];

/// The keys that name a file or a directory the node reads or writes (with the `genome`
/// parameter of the command line): over the services, only inside `node.parameter_files_dir`.
pub const FILE_KEYS: &[&str] = &["checkpoint.path", "cluster.checkpoint_dir"];

/// Where `value` (a parameter `key` naming a file, set over the services) lies: a path inside
/// `dir` (a relative one is taken inside it), canonical; refused, with the reason, where `dir` is
/// empty (file parameters are read-only over the services) or the path leaves it (`..`, a
/// symbolic link, an absolute path elsewhere). The file itself need not exist; its directory must.
pub fn file_inside(dir: &std::path::Path, key: &str, value: &str) -> Result<std::path::PathBuf, String> {
    use std::path::{Component, Path};
    if dir.as_os_str().is_empty() {
        return Err(format!(
            "{key} names a file: it is read-only over the parameter services unless node.parameter_files_dir names a directory \
             for such files (set {key} in the configuration, with --set, or as a launch parameter)"
        ));
    }
    let refuse = |why: String| Err(format!("{key}: {value:?} {why}"));
    let root = match dir.canonicalize() {
        Ok(r) => r,
        Err(e) => return refuse(format!("cannot be checked: node.parameter_files_dir {}: {e}", dir.display())),
    };
    let path = root.join(Path::new(value));
    let Some(Component::Normal(name)) = path.components().next_back() else {
        return refuse("does not name a file".into());
    };
    let parent = path.parent().unwrap_or(&root);
    let resolved = match parent.canonicalize() {
        Ok(p) => p.join(name),
        Err(e) => return refuse(format!("is not in an existing directory: {e}")),
    };
    // a file that exists is followed through its links
    let resolved = resolved.canonicalize().unwrap_or(resolved);
    if resolved.starts_with(&root) && resolved != root {
        Ok(resolved)
    } else {
        refuse(format!("is outside node.parameter_files_dir ({})", root.display()))
    }
}

/// Whether `key` may change while a brain runs.
pub fn dynamic(key: &str) -> bool {
    DYNAMIC.contains(&key) || key.starts_with("decoders.")
}

fn fixed(key: &str) -> bool {
    FIXED.iter().any(|f| key == *f || key.strip_prefix(f).is_some_and(|r| r.starts_with('.')))
}

/// The values a number may take: `min..=max`, or `min` left out where `open` (`(0, 1000]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub open: bool,
}

impl Range {
    const fn closed(min: f64, max: f64) -> Range {
        Range { min, max, open: false }
    }

    const fn above(min: f64, max: f64) -> Range {
        Range { min, max, open: true }
    }

    pub fn contains(&self, v: f64) -> bool {
        v.is_finite() && v <= self.max && (v > self.min || (!self.open && v == self.min))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}, {}]", if self.open { "(" } else { "[" }, self.min, self.max)
    }
}

/// The range of every numeric key (of each element, for a list), and what its ends mean.
const RANGES: &[(&str, Range, &str)] = &[
    ("backend.device", Range::closed(0.0, 1023.0), ""),
    ("backend.gpu_min_neurons", Range::closed(0.0, 4294967295.0), ""),
    ("backend.cpu_threads", Range::closed(0.0, 4096.0), "0: one per core"),
    ("backend.shards", Range::closed(1.0, 64.0), "or auto"),
    ("backend.gpus", Range::closed(0.0, 1023.0), "each"),
    ("backend.shard_min_neurons", Range::closed(1.0, 4294967295.0), ""),
    ("replay.max_bursts", Range::closed(0.0, 1e15), "0: the whole bag"),
    ("replay.pace", Range::closed(0.0, 1e6), "0: as fast as possible; else at least 0.001"),
    ("view.rate_hz", Range::closed(crate::time::MIN_RATE_HZ, 1000.0), ""),
    ("view.max_points", Range::closed(1.0, 1e9), ""),
    ("node.domain", Range::closed(0.0, 232.0), "ROS_DOMAIN_ID"),
    ("node.rate_hz", Range::closed(0.0, crate::time::MAX_RATE_HZ), "0: the genome's burst_rate_hz; else at least 0.001"),
    ("node.reflex.bursts", Range::closed(1.0, 1000.0), ""),
    ("node.reflex.lead", Range::closed(1.0, 100000.0), "at least reflex.bursts"),
    ("node.realtime.priority", Range::closed(0.0, 99.0), "0: not real-time"),
    ("node.realtime.cpu", Range::closed(0.0, 4095.0), "absent: no pinning"),
    ("node.stats_rate_hz", Range::closed(crate::time::MIN_RATE_HZ, 1000.0), ""),
    ("node.log_interval_s", Range::closed(0.0, 86400.0), "0: every problem at once"),
    ("node.max_message_size", Range::closed(0.0, 1073741824.0), "0: what the configured topics need"),
    ("cluster.io_shard", Range::closed(0.0, 63.0), ""),
    ("cluster.burst_timeout_ms", Range::closed(1.0, 3600000.0), ""),
    ("cluster.startup_timeout_s", Range::above(0.0, 86400.0), ""),
    ("cluster.checkpoint_interval", Range::closed(0.0, 1e15), "0: none"),
    ("cluster.rate_hz", Range::closed(0.0, crate::time::MAX_RATE_HZ), "0: as fast as the shards go; else at least 0.001"),
];

/// Rates whose 0 means "none" or "another's": any other value is a rate, at least
/// [`crate::time::MIN_RATE_HZ`] (a period that fits a `Duration`).
const ZERO_OR_RATE: &[&str] = &["replay.pace", "node.rate_hz", "cluster.rate_hz"];

/// Keys that are not parameters: lists of entries and maps of the user's keys.
const NOT_PARAMETERS: &[&str] = &["encoders", "decoders", "node.input_types", "view.topics"];

/// One parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// `section.key` (`node.reflex.bursts`).
    pub key: String,
    pub kind: Kind,
    pub value: Value,
    pub description: String,
    pub range: Option<Range>,
}

/// The range of `key`, if it is a number.
pub fn range(key: &str) -> Option<Range> {
    RANGES.iter().find(|r| r.0 == key).map(|r| r.1)
}

/// The key of a line `key: value` of the shipped configuration.
fn key_of(line: &str) -> Option<&str> {
    let (key, _) = line.split_once(": ").or_else(|| line.strip_suffix(':').map(|k| (k, "")))?;
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_')).then_some(key)
}

/// The key of an optional key shown commented out (`# cpu: 3`: one word after the colon, where
/// prose goes on).
fn commented_key(comment: &str) -> Option<&str> {
    let line = comment.strip_prefix(' ')?;
    key_of(line).filter(|_| line.split_once(": ").is_some_and(|(_, v)| !v.trim().contains(' ')))
}

/// The comment above each key of the shipped configuration, joined into one line.
pub fn descriptions() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut comment: Vec<String> = Vec::new();
    for line in DEFAULT_YAML.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim();
        if text.is_empty() {
            comment.clear();
        } else if let Some(c) = text.strip_prefix('#').filter(|c| commented_key(c).is_none()) {
            comment.push(c.trim().to_string());
        } else if let Some(key) = key_of(text).or_else(|| commented_key(&text[1..])) {
            // a key, or an optional one shown commented out (`# cpu: 3`)
            path.retain(|(i, _)| *i < indent);
            path.push((indent, key.to_string()));
            let full: Vec<&str> = path.iter().map(|(_, k)| k.as_str()).collect();
            out.insert(full.join("."), comment.join(" "));
            comment.clear();
        }
    }
    out
}

fn kind_of(v: &Value) -> Option<Kind> {
    Some(match v {
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.is_f64() => Kind::Double,
        Value::Number(_) => Kind::Integer,
        Value::String(_) | Value::Null => Kind::String,
        Value::Sequence(s) => match s.first().map(kind_of) {
            Some(Some(Kind::Bool)) => Kind::BoolArray,
            Some(Some(Kind::Integer)) => Kind::IntegerArray,
            Some(Some(Kind::Double)) => Kind::DoubleArray,
            _ => Kind::StringArray,
        },
        _ => return None,
    })
}

/// Every parameter of `config`, in key order.
pub fn params(config: &Config) -> Vec<Param> {
    let descriptions = descriptions();
    let mut out = Vec::new();
    let value = serde_yaml::to_value(config).expect("the configuration serializes");
    walk("", &value, &mut |key, v| {
        if let Some(mut kind) = kind_of(v) {
            // an empty list, or an optional number not set
            if range(key).is_some() && kind == Kind::StringArray {
                kind = Kind::IntegerArray;
            } else if range(key).is_some() && v.is_null() {
                kind = Kind::Integer;
            }
            let description = descriptions.get(key).cloned().unwrap_or_default();
            out.push(Param { key: key.to_string(), kind, value: v.clone(), description, range: range(key) });
        }
    });
    out.extend(decoder_params(config));
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// A twist decoder's axis as parameters: `decoders.<topic>.<axis>.scale` and `.limit` (the topic
/// without its first `/`, other `/` as `.`).
fn decoder_params(config: &Config) -> Vec<Param> {
    let mut out = Vec::new();
    for d in &config.decoders {
        let crate::decode::DecoderConfig::Twist(t) = d else { continue };
        let topic = t.topic.trim_start_matches('/').replace('/', ".");
        for a in &t.axes {
            let axis = serde_yaml::to_value(a.axis).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            let key = |field: &str| format!("decoders.{topic}.{axis}.{field}");
            out.push(Param {
                key: key("scale"),
                kind: Kind::Double,
                value: a.scale.into(),
                description: format!("{} {axis} at full activation of area {} (m/s or rad/s)", t.topic, t.area),
                range: Some(DECODER_SCALE),
            });
            out.push(Param {
                key: key("limit"),
                kind: Kind::Double,
                value: a.limit.into(),
                description: format!("{} {axis}: |value| is clamped to this (m/s or rad/s)", t.topic),
                range: Some(DECODER_LIMIT),
            });
        }
    }
    out
}

const DECODER_SCALE: Range = Range::closed(-1000.0, 1000.0);
const DECODER_LIMIT: Range = Range::closed(0.0, 1000.0);

/// `config` with the twist axis of parameter `key` (`decoders.<topic>.<axis>.<scale|limit>`) at `x`.
fn set_decoder(config: &Config, key: &str, x: f64) -> Result<Config, String> {
    let mut c = config.clone();
    let names: Vec<String> = decoder_params(config).into_iter().map(|p| p.key).collect();
    let index = names.iter().position(|n| n == key).ok_or_else(|| format!("{key}: no such parameter"))?;
    let twists = c.decoders.iter_mut().filter_map(|d| match d {
        crate::decode::DecoderConfig::Twist(t) => Some(t),
        _ => None,
    });
    let axis = twists.flat_map(|t| t.axes.iter_mut()).nth(index / 2).ok_or_else(|| format!("{key}: no such parameter"))?;
    if index % 2 == 0 {
        axis.scale = x;
    } else {
        axis.limit = x;
    }
    Ok(c)
}

/// Call `f` on every key below `prefix` that holds a value or a list of values.
fn walk(prefix: &str, v: &Value, f: &mut impl FnMut(&str, &Value)) {
    if NOT_PARAMETERS.contains(&prefix) {
        return;
    }
    match v {
        Value::Mapping(m) => {
            for (k, v) in m {
                let k = k.as_str().unwrap_or_default();
                let key = if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
                walk(&key, v, f);
            }
        }
        Value::Tagged(t) => walk(prefix, &t.value, f),
        _ => f(prefix, v),
    }
}

/// Check every number of `config` against its range: the first one outside, as (key, why).
pub fn check(config: &Config) -> Result<(), (String, String)> {
    for p in params(config) {
        let Some(range) = p.range else { continue };
        let values: Vec<&Value> = match &p.value {
            Value::Sequence(s) => s.iter().collect(),
            v => vec![v],
        };
        for v in values {
            let Some(x) = v.as_f64() else { continue };
            if !range.contains(x) || (ZERO_OR_RATE.contains(&p.key.as_str()) && x > 0.0 && x < crate::time::MIN_RATE_HZ) {
                let note = RANGES.iter().find(|r| r.0 == p.key).map_or("", |r| r.2);
                let note = if note.is_empty() { String::new() } else { format!(" ({note})") };
                return Err((p.key, format!("{x} is not in {range}{note}")));
            }
        }
    }
    Ok(())
}

/// `p`'s value as a ROS parameter value.
pub fn value(p: &Param) -> ParameterValue {
    let mut v = ParameterValue { r#type: p.kind.ros_type(), ..Default::default() };
    let seq = || p.value.as_sequence().cloned().unwrap_or_default();
    match p.kind {
        Kind::Bool => v.bool_value = p.value.as_bool().unwrap_or_default(),
        Kind::Integer => v.integer_value = p.value.as_i64().unwrap_or_default(),
        Kind::Double => v.double_value = p.value.as_f64().unwrap_or_default(),
        Kind::String => v.string_value = p.value.as_str().unwrap_or_default().to_string(),
        Kind::BoolArray => v.bool_array_value = seq().iter().filter_map(Value::as_bool).collect(),
        Kind::IntegerArray => v.integer_array_value = seq().iter().filter_map(Value::as_i64).collect(),
        Kind::DoubleArray => v.double_array_value = seq().iter().filter_map(Value::as_f64).collect(),
        Kind::StringArray => v.string_array_value = seq().iter().filter_map(|x| x.as_str().map(String::from)).collect(),
    }
    v
}

/// What `ros2 param describe` shows of `p`: its type, description, range, and whether it is
/// read-only while the node runs.
pub fn descriptor(p: &Param) -> ParameterDescriptor {
    let note = RANGES.iter().find(|r| r.0 == p.key).map_or("", |r| r.2);
    let mut d = ParameterDescriptor {
        name: p.key.clone(),
        r#type: p.kind.ros_type(),
        description: p.description.clone(),
        additional_constraints: match (fixed(&p.key), dynamic(&p.key)) {
            (true, _) => join(note, "fixed when the node starts"),
            _ if FILE_KEYS.contains(&p.key.as_str()) => FILE_CONSTRAINT.to_string(),
            (_, false) => join(note, "read at configure: set while the node is unconfigured"),
            _ => note.to_string(),
        },
        read_only: !dynamic(&p.key),
        ..Default::default()
    };
    if let Some(r) = p.range {
        if matches!(p.kind, Kind::Integer | Kind::IntegerArray) {
            let from = if r.open { r.min as i64 + 1 } else { r.min as i64 };
            d.integer_range = Bounded(vec![IntegerRange { from_value: from, to_value: r.max as i64, step: 0 }]);
        } else {
            d.floating_point_range = Bounded(vec![FloatingPointRange { from_value: r.min, to_value: r.max, step: 0.0 }]);
        }
    }
    d
}

/// What `ros2 param describe` says of a parameter that names a file.
pub const FILE_CONSTRAINT: &str =
    "names a file: set over the services only inside node.parameter_files_dir (read-only there when it is empty), while the node is unconfigured";

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}; {b}")
    }
}

/// `config` with parameter `key` set to `v`, checked as a file's value is (its type, its range,
/// the rest of the configuration); the refusal says why. `running`: a brain is built, and only
/// the dynamic keys may change.
pub fn set(config: &Config, key: &str, v: &ParameterValue, running: bool) -> Result<Config, String> {
    let p = params(config).into_iter().find(|p| p.key == key).ok_or_else(|| format!("{key}: no such parameter"))?;
    if fixed(key) {
        return Err(format!("{key} is fixed when the node starts: set it in the configuration or with --set"));
    }
    if running && !dynamic(key) {
        return Err(format!("{key} is read at configure: set it while the node is unconfigured (or in the configuration)"));
    }
    if v.r#type != p.kind.ros_type() {
        return Err(format!("{key} takes a parameter of type {}, not {}", p.kind.ros_type(), v.r#type));
    }
    if FILE_KEYS.contains(&key) {
        let inside = file_inside(&config.node.parameter_files_dir, key, &v.string_value)?;
        let v = ParameterValue { string_value: inside.display().to_string(), ..v.clone() };
        return set_value(config, key, &p, &v);
    }
    if key.starts_with("decoders.") {
        let range = p.range.unwrap_or(DECODER_SCALE);
        if !range.contains(v.double_value) {
            return Err(format!("{key}: {} is not in {range}", v.double_value));
        }
        let c = set_decoder(config, key, v.double_value)?;
        c.validate().map_err(|e| e.to_string())?;
        return Ok(c);
    }
    set_value(config, key, &p, v)
}

/// `config` with `key` (parameter `p`) at `v`, checked.
fn set_value(config: &Config, key: &str, p: &Param, v: &ParameterValue) -> Result<Config, String> {
    let yaml: Value = match p.kind {
        Kind::Bool => v.bool_value.into(),
        Kind::Integer => v.integer_value.into(),
        Kind::Double => v.double_value.into(),
        Kind::String => v.string_value.clone().into(),
        Kind::BoolArray => v.bool_array_value.clone().into(),
        Kind::IntegerArray => v.integer_array_value.clone().into(),
        Kind::DoubleArray => v.double_array_value.clone().into(),
        Kind::StringArray => v.string_array_value.clone().into(),
    };
    let text = serde_yaml::to_string(&yaml).map_err(|e| e.to_string())?;
    let mut root = serde_yaml::to_value(config).map_err(|e| e.to_string())?;
    apply_override(&mut root, &format!("{key}={}", text.trim())).map_err(|e| e.to_string())?;
    let c: Config = serde_yaml::from_value(root).map_err(|e| format!("{key}: {e}"))?;
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_has_a_description_and_every_number_a_range() {
        let ps = params(&Config::default());
        assert!(ps.len() > 30, "{} parameters", ps.len());
        let bare: Vec<&str> = ps.iter().filter(|p| p.description.is_empty()).map(|p| p.key.as_str()).collect();
        assert!(bare.is_empty(), "no comment above them in config/neuroburst.yaml: {bare:?}");
        for p in &ps {
            let numeric = matches!(p.kind, Kind::Integer | Kind::Double | Kind::IntegerArray | Kind::DoubleArray);
            assert!(!numeric || p.range.is_some(), "{}: a number without a range", p.key);
            if let Some(r) = p.range {
                assert!(p.value.as_f64().is_none_or(|x| r.contains(x)), "{}: its default is outside {r}", p.key);
            }
        }
        for (key, _, _) in RANGES {
            assert!(ps.iter().any(|p| p.key == *key), "{key}: a range for no parameter");
        }
        let rate = ps.iter().find(|p| p.key == "node.rate_hz").unwrap();
        assert_eq!(rate.kind, Kind::Double);
        assert!(rate.description.contains("Bursts per second"), "{}", rate.description);
    }

    #[test]
    fn parameters_are_described_and_set_as_ros_does_and_a_refusal_says_why() {
        let c = Config::default();
        let ps = params(&c);
        let rate = ps.iter().find(|p| p.key == "node.rate_hz").unwrap();
        let d = descriptor(rate);
        assert_eq!((d.r#type, d.read_only), (3, true));
        assert_eq!(d.floating_point_range.0[0].to_value, 100000.0);
        let prio = descriptor(ps.iter().find(|p| p.key == "node.realtime.priority").unwrap());
        assert_eq!((prio.r#type, prio.integer_range.0[0].to_value), (2, 99));
        let interval = ps.iter().find(|p| p.key == "node.log_interval_s").unwrap();
        assert!(!descriptor(interval).read_only);
        assert_eq!(value(interval).double_value, 5.0);

        let double = |x: f64| ParameterValue { r#type: 3, double_value: x, ..Default::default() };
        let string = |s: &str| ParameterValue { r#type: 4, string_value: s.into(), ..Default::default() };
        let c2 = set(&c, "node.log_interval_s", &double(2.5), true).unwrap();
        assert_eq!(c2.node.log_interval_s, 2.5);
        assert_eq!(set(&c, "log.level", &string("debug"), true).unwrap().log.level, "debug");
        let e = set(&c, "node.log_interval_s", &double(-1.0), true).unwrap_err();
        assert!(e.contains("node.log_interval_s") && e.contains("[0, 86400]"), "{e}");
        let e = set(&c, "log.level", &string("loud"), true).unwrap_err();
        assert!(e.contains("log.level"), "{e}");
        let e = set(&c, "node.rate_hz", &double(100.0), true).unwrap_err();
        assert!(e.contains("read at configure"), "{e}");
        assert_eq!(set(&c, "node.rate_hz", &double(100.0), false).unwrap().node.rate_hz, 100.0);
        let e = set(&c, "node.name", &string("other"), false).unwrap_err();
        assert!(e.contains("fixed"), "{e}");
        let e = set(&c, "node.log_interval_s", &string("soon"), true).unwrap_err();
        assert!(e.contains("type 3"), "{e}");
        assert!(set(&c, "node.nothing", &double(1.0), true).unwrap_err().contains("no such parameter"));
        // a twist decoder's scales and limits change while the brain runs
        let yaml = "decoders:\n- {kind: twist, area: o__mot, topic: /cmd_vel, axes: [{axis: linear_x, scale: 0.5, limit: 1.0}, {axis: angular_z, scale: 1.0, limit: 2.0}]}\n";
        let c: Config = serde_yaml::from_str(yaml).unwrap();
        let d = descriptor(params(&c).iter().find(|p| p.key == "decoders.cmd_vel.angular_z.limit").unwrap());
        assert!(!d.read_only && d.description.contains("clamped"), "{d:?}");
        let c2 = set(&c, "decoders.cmd_vel.angular_z.limit", &double(0.5), true).unwrap();
        let crate::decode::DecoderConfig::Twist(t) = &c2.decoders[0] else { panic!() };
        assert_eq!((t.axes[0].limit, t.axes[1].limit, t.axes[1].scale), (1.0, 0.5, 1.0));
        let e = set(&c, "decoders.cmd_vel.linear_x.limit", &double(-1.0), true).unwrap_err();
        assert!(e.contains("[0, 1000]"), "{e}");
    }

    #[test]
    fn file_parameters_are_set_over_the_services_only_inside_their_directory() {
        let string = |s: &str| ParameterValue { r#type: 4, string_value: s.into(), ..Default::default() };
        let c = Config::default();
        // no directory named: read-only over the services
        let e = set(&c, "checkpoint.path", &string("/tmp/x.ckpt"), false).unwrap_err();
        assert!(e.contains("checkpoint.path") && e.contains("read-only") && e.contains("node.parameter_files_dir"), "{e}");
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("brains");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("host.ckpt")).unwrap();
        let mut c = Config::default();
        c.node.parameter_files_dir = dir.clone();
        let root = dir.canonicalize().unwrap();
        let ok = set(&c, "checkpoint.path", &string("brain.ckpt"), false).unwrap();
        assert_eq!(ok.checkpoint.path, root.join("brain.ckpt"));
        let ok = set(&c, "checkpoint.path", &string(&root.join("b2.ckpt").display().to_string()), false).unwrap();
        assert_eq!(ok.checkpoint.path, root.join("b2.ckpt"));
        let up = |p: &str| format!("..{}{p}", std::path::MAIN_SEPARATOR);
        let bad = ["/etc/cron.d/evil".into(), up("evil.ckpt"), format!("sub/{}", up(&up("evil.ckpt"))), "etc/passwd".into()];
        for bad in bad.iter().map(String::as_str).chain(["host.ckpt", "", ".", "nodir/x.ckpt"]) {
            let e = set(&c, "checkpoint.path", &string(bad), false).unwrap_err();
            assert!(e.starts_with("checkpoint.path") && e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
        let e = set(&c, "cluster.checkpoint_dir", &string("/var/lib"), false).unwrap_err();
        assert!(e.contains("outside node.parameter_files_dir"), "{e}");
        // the directory itself is fixed, as is the shards' Zenoh configuration
        assert!(set(&c, "node.parameter_files_dir", &string("/"), false).unwrap_err().contains("fixed"));
        let d = descriptor(params(&c).iter().find(|p| p.key == "checkpoint.path").unwrap());
        assert!(d.read_only && d.additional_constraints.contains("node.parameter_files_dir"), "{d:?}");
    }

    #[test]
    fn a_value_outside_its_range_is_refused_naming_the_key_and_the_range() {
        let e = Config::load(None, &["node.rate_hz=-5".into()]).unwrap_err().to_string();
        assert!(e.contains("node.rate_hz") && e.contains("[0, 100000]"), "{e}");
        let e = Config::load(None, &["node.realtime.priority=120".into()]).unwrap_err().to_string();
        assert!(e.contains("node.realtime.priority") && e.contains("[0, 99]"), "{e}");
        let e = Config::load(None, &["node.stats_rate_hz=0".into()]).unwrap_err().to_string();
        assert!(e.contains("[0.001, 1000]"), "{e}");
        // a rate whose period would not fit a Duration (the burst thread panicked on it)
        for key in ["node.rate_hz", "replay.pace", "cluster.rate_hz"] {
            let e = Config::load(None, &[format!("{key}=1e-20")]).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("at least 0.001"), "{e}");
            Config::load(None, &[format!("{key}=0")]).unwrap();
        }
        let e = Config::load(None, &["view.rate_hz=1e-300".into()]).unwrap_err().to_string();
        assert!(e.contains("view.rate_hz"), "{e}");
        let e = Config::load(None, &["backend.gpus=[0, 5000]".into()]).unwrap_err().to_string();
        assert!(e.contains("backend.gpus") && e.contains("5000"), "{e}");
        Config::load(None, &["node.rate_hz=250".into(), "node.stats_rate_hz=0.5".into()]).unwrap();
    }
}
