//! YAML with enums written as single-key maps (`leak: {fraction: 0.1}`, `{vectors: [[0, 0, 1]]}`)
//! or plain strings for unit variants (`projector`), in both directions; serde_yaml's default is
//! `!tag` syntax, which people rarely write by hand.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A value read from YAML text.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_yaml::Error> {
    serde_yaml::with::singleton_map_recursive::deserialize(serde_yaml::Deserializer::from_str(text))
}

/// A value written as YAML text.
pub fn to_string<T: Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    let mut ser = serde_yaml::Serializer::new(&mut out);
    serde_yaml::with::singleton_map_recursive::serialize(value, &mut ser).expect("plain data always serialises to YAML");
    String::from_utf8(out).expect("serde_yaml writes UTF-8")
}
