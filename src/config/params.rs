//! The configuration's keys as parameters: every key of a section that holds a value or a list of
//! values (not the encoders' and decoders' lists of entries, nor `node.input_types`), with its
//! type, its description (the comment above it in `config/neuroburst.yaml`) and, for a number,
//! its range. Every value is checked against its range wherever it comes from (the file, `--set`,
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

/// The keys whose new value may take effect while the node runs (at the next burst); the others
/// are read-only there, set in the configuration or with `--set`.
pub const DYNAMIC: &[&str] = &["log.level", "node.log_interval_s"];

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
    ("replay.pace", Range::closed(0.0, 1e6), "0: as fast as possible"),
    ("view.rate_hz", Range::above(0.0, 1000.0), ""),
    ("view.max_points", Range::closed(1.0, 1e9), ""),
    ("node.domain", Range::closed(0.0, 232.0), "ROS_DOMAIN_ID"),
    ("node.rate_hz", Range::closed(0.0, 100000.0), "0: the genome's burst_rate_hz"),
    ("node.reflex.bursts", Range::closed(1.0, 1000.0), ""),
    ("node.reflex.lead", Range::closed(1.0, 100000.0), "at least reflex.bursts"),
    ("node.realtime.priority", Range::closed(0.0, 99.0), "0: not real-time"),
    ("node.realtime.cpu", Range::closed(0.0, 4095.0), "absent: no pinning"),
    ("node.stats_rate_hz", Range::above(0.0, 1000.0), ""),
    ("node.log_interval_s", Range::closed(0.0, 86400.0), "0: every problem at once"),
    ("cluster.io_shard", Range::closed(0.0, 63.0), ""),
    ("cluster.burst_timeout_ms", Range::closed(1.0, 3600000.0), ""),
    ("cluster.startup_timeout_s", Range::above(0.0, 86400.0), ""),
    ("cluster.checkpoint_interval", Range::closed(0.0, 1e15), "0: none"),
    ("cluster.rate_hz", Range::closed(0.0, 100000.0), "0: as fast as the shards go"),
];

/// Keys that are not parameters: lists of entries and maps of the user's keys.
const NOT_PARAMETERS: &[&str] = &["encoders", "decoders", "node.input_types"];

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
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
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
            if !range.contains(x) {
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
        additional_constraints: note.to_string(),
        read_only: !DYNAMIC.contains(&p.key.as_str()),
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

/// `config` with parameter `key` set to `v`, checked as a file's value is (its type, its range,
/// the rest of the configuration); the refusal says why.
pub fn set(config: &Config, key: &str, v: &ParameterValue) -> Result<Config, String> {
    let p = params(config).into_iter().find(|p| p.key == key).ok_or_else(|| format!("{key}: no such parameter"))?;
    if !DYNAMIC.contains(&key) {
        return Err(format!("{key} is read-only while the node runs: set it in the configuration or with --set"));
    }
    if v.r#type != p.kind.ros_type() {
        return Err(format!("{key} takes a parameter of type {}, not {}", p.kind.ros_type(), v.r#type));
    }
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
        let c2 = set(&c, "node.log_interval_s", &double(2.5)).unwrap();
        assert_eq!(c2.node.log_interval_s, 2.5);
        assert_eq!(set(&c, "log.level", &string("debug")).unwrap().log.level, "debug");
        let e = set(&c, "node.log_interval_s", &double(-1.0)).unwrap_err();
        assert!(e.contains("node.log_interval_s") && e.contains("[0, 86400]"), "{e}");
        let e = set(&c, "log.level", &string("loud")).unwrap_err();
        assert!(e.contains("log.level"), "{e}");
        let e = set(&c, "node.rate_hz", &double(100.0)).unwrap_err();
        assert!(e.contains("read-only"), "{e}");
        let e = set(&c, "node.log_interval_s", &string("soon")).unwrap_err();
        assert!(e.contains("type 3"), "{e}");
        assert!(set(&c, "node.nothing", &double(1.0)).unwrap_err().contains("no such parameter"));
    }

    #[test]
    fn a_value_outside_its_range_is_refused_naming_the_key_and_the_range() {
        let e = Config::load(None, &["node.rate_hz=-5".into()]).unwrap_err().to_string();
        assert!(e.contains("node.rate_hz") && e.contains("[0, 100000]"), "{e}");
        let e = Config::load(None, &["node.realtime.priority=120".into()]).unwrap_err().to_string();
        assert!(e.contains("node.realtime.priority") && e.contains("[0, 99]"), "{e}");
        let e = Config::load(None, &["node.stats_rate_hz=0".into()]).unwrap_err().to_string();
        assert!(e.contains("(0, 1000]"), "{e}");
        let e = Config::load(None, &["backend.gpus=[0, 5000]".into()]).unwrap_err().to_string();
        assert!(e.contains("backend.gpus") && e.contains("5000"), "{e}");
        Config::load(None, &["node.rate_hz=250".into(), "node.stats_rate_hz=0.5".into()]).unwrap();
    }
}
