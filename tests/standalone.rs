//! The repository stands alone: no test, doc or source file reads or points at a path outside it
//! (the team's `../shared` folder above all). Every `../` path written in a text file must resolve,
//! from the file's folder or from the repository root, to something inside the repository.

use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository's text files (hidden folders and cargo/colcon outputs left out).
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with('.') && name != ".ci" {
            continue;
        }
        if path.is_dir() {
            if dir == root() && ["target", "build", "install", "log"].contains(&name.as_str()) {
                continue;
            }
            text_files(&path, out);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            if !text.is_empty() {
                out.push(path);
            }
        }
    }
}

/// `base/rel` with `..` applied lexically; None when it climbs above the root.
fn inside(base: &Path, rel: &str) -> Option<PathBuf> {
    let root = root();
    let mut p = base.strip_prefix(&root).ok()?.to_path_buf();
    for c in Path::new(rel).components() {
        match c {
            Component::ParentDir if !p.pop() => {
                return None;
            }
            Component::Normal(n) => p.push(n),
            _ => {}
        }
    }
    Some(root.join(p))
}

#[test]
fn no_file_points_outside_the_repository() {
    let mut files = vec![];
    text_files(&root(), &mut files);
    assert!(files.len() > 50, "only {} text files found under {}", files.len(), root().display());
    let mut bad = vec![];
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        if rel == "tests/standalone.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            for word in ["shared/spec", "shared/fixtures"] {
                if line.contains(word) {
                    bad.push(format!("{rel}:{}: names the team folder {word:?}", n + 1));
                }
            }
            let mut rest = line;
            while let Some(i) = rest.find("../") {
                // the whole path: `../` repeated, then the name characters that follow
                let start = rest[..i].rfind(|c: char| !(c == '.' || c == '/')).map_or(0, |j| j + 1);
                let end = rest[i..].find(|c: char| !(c.is_alphanumeric() || "._-/".contains(c))).map_or(rest.len(), |j| i + j);
                let path = &rest[start..end];
                let ok = [f.parent().unwrap().to_path_buf(), root()].iter().any(|base| inside(base, path).is_some_and(|p| p.exists()));
                if !ok && path.starts_with("..") {
                    bad.push(format!("{rel}:{}: {path:?} is not a path inside the repository", n + 1));
                }
                rest = &rest[end.max(i + 3)..];
            }
        }
    }
    assert!(bad.is_empty(), "files point outside the repository:\n{}", bad.join("\n"));
}
