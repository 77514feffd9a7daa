//! ROS names: resolving a topic against the node's namespace and name (`~/stats`, relative
//! `scan`, absolute `/cmd_vel`), and checking namespaces.

/// Resolve `topic` for the node `node` in namespace `namespace` (`/` or `/robot1`).
/// `~/x` -> `<ns>/<node>/x`; `x` -> `<ns>/x`; `/x` stays.
pub fn resolve(topic: &str, namespace: &str, node: &str) -> Result<String, String> {
    let ns = normalize_namespace(namespace)?;
    let base = if ns == "/" { String::new() } else { ns };
    let full = if let Some(rest) = topic.strip_prefix("~/") {
        format!("{base}/{node}/{rest}")
    } else if topic == "~" {
        format!("{base}/{node}")
    } else if topic.starts_with('/') {
        topic.to_string()
    } else {
        format!("{base}/{topic}")
    };
    match check_name(&full) {
        Ok(()) => Ok(full),
        Err(e) => Err(format!("topic {topic:?} resolves to {full:?}: {e}")),
    }
}

/// `""`, `/` -> `/`; `robot1`, `/robot1/` -> `/robot1`.
pub fn normalize_namespace(ns: &str) -> Result<String, String> {
    let trimmed = ns.trim_matches('/');
    if trimmed.is_empty() {
        return Ok("/".into());
    }
    let full = format!("/{trimmed}");
    check_name(&full).map_err(|e| format!("namespace {ns:?}: {e}"))?;
    Ok(full)
}

fn check_name(name: &str) -> Result<(), String> {
    if name.len() < 2 || name.ends_with('/') || name.contains("//") {
        return Err("not a valid ROS name".into());
    }
    for token in name[1..].split('/') {
        let first = token.chars().next().unwrap_or('0');
        if first.is_ascii_digit() {
            return Err(format!("token {token:?} starts with a digit"));
        }
        if !token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("token {token:?} has characters other than letters, digits and '_'"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution() {
        assert_eq!(resolve("scan", "/", "brain").unwrap(), "/scan");
        assert_eq!(resolve("scan", "robot1", "brain").unwrap(), "/robot1/scan");
        assert_eq!(resolve("/cmd_vel", "/robot1", "brain").unwrap(), "/cmd_vel");
        assert_eq!(resolve("~/stats", "/", "brain").unwrap(), "/brain/stats");
        assert_eq!(resolve("~/stats", "/r", "brain").unwrap(), "/r/brain/stats");
        assert!(resolve("a b", "/", "brain").is_err());
        assert!(resolve("/1x", "/", "brain").is_err());
        assert_eq!(normalize_namespace("").unwrap(), "/");
    }
}
