//! The layering of docs/architecture.md, checked against the tree. Between crates the compiler
//! keeps it (a crate cannot import a layer above it: it does not depend on it); inside each crate,
//! every import between its top-level modules (a line of code, not a comment, naming `crate::X`)
//! goes to the module's own layer or one below, but for the exceptions named here; the imports
//! make no circle but the one named; only the command line imports the whole configuration. An
//! exception that no longer occurs fails too, so that the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates of the workspace, bottom first: (folder of its sources, its modules' layers bottom
/// first). A `crate::X` naming a module of a crate below (re-exported) is the compiler's to check.
const CRATES: &[(&str, &[&[&str]])] = &[
    ("crates/model/src", &[&["errors", "memory", "progress", "time"], &["model", "genome"]]),
    ("crates/engine/src", &[&["brain", "connectome", "partition", "capacity", "workload"], &["backend", "checkpoint"], &["selftest"]]),
    ("crates/ros/src", &[&["ros"], &["transport", "bag", "encode", "decode"]]),
    ("src", &[&["run"], &["node", "replay", "cluster", "bench", "view"], &["config"], &["cli"]]),
];

/// Imports against the layers that stand today: (module, what it imports, why).
const EXCEPTIONS: &[(&str, &str, &str)] = &[("connectome", "selftest", "its unit tests build the selftest's random brains")];

/// Modules that import each other today: none (a circle found fails the test, as a named one no
/// longer found does).
const CIRCLES: &[&[&str]] = &[];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every source folder of the workspace (crates/*/src and src).
fn sources() -> Vec<PathBuf> {
    CRATES.iter().map(|c| root().join(c.0)).collect()
}

/// (crate's folder, layer index) of a module of the workspace.
fn place(m: &str) -> (usize, usize) {
    CRATES
        .iter()
        .enumerate()
        .find_map(|(c, (_, layers))| layers.iter().position(|l| l.contains(&m)).map(|l| (c, l)))
        .unwrap_or_else(|| panic!("{m}: a top-level module in no layer of CRATES"))
}

/// The top-level modules each module imports (of its own crate or of the crates below).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for src in sources() {
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            if name == "lib" || name == "main" {
                continue;
            }
            let mut files = Vec::new();
            collect(&path, &mut files);
            let mut set = BTreeSet::new();
            for f in files {
                let text = std::fs::read_to_string(&f).unwrap();
                for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                    for (i, _) in line.match_indices("crate::") {
                        let m: String = line[i + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                        if !m.is_empty() && m != name {
                            set.insert(m);
                        }
                    }
                }
            }
            out.insert(name, set);
        }
    }
    out
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            collect(&e.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The workspace's crates are those of CRATES, and each crate's lib.rs declares the modules
/// CRATES gives it.
#[test]
fn the_crates_and_their_modules_are_those_of_the_layers() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for (src, layers) in CRATES {
        let dir = src.strip_suffix("/src").unwrap_or("");
        if !dir.is_empty() {
            assert!(manifest.contains(&format!("\"{dir}\"")), "{dir} is not a member of the workspace");
        }
        let lib = std::fs::read_to_string(root().join(src).join("lib.rs")).unwrap();
        let declared: BTreeSet<&str> = lib.lines().filter_map(|l| l.strip_prefix("pub mod ")).map(|l| l.trim_end_matches(';')).collect();
        let named: BTreeSet<&str> = layers.iter().flat_map(|l| l.iter().copied()).collect();
        assert_eq!(declared, named, "{src}/lib.rs against CRATES");
    }
}

#[test]
fn every_import_goes_down_the_layers_but_the_named_exceptions() {
    let imports = imports();
    let mut bad = Vec::new();
    let mut used = BTreeSet::new();
    for (m, set) in &imports {
        for i in set {
            let (here, there) = (place(m), place(i));
            // a crate below: the compiler's; the same crate: the layer's own or one below
            if there.0 < here.0 || (there.0 == here.0 && there.1 <= here.1) {
                continue;
            }
            match EXCEPTIONS.iter().find(|e| e.0 == m && e.1 == i) {
                Some(e) => {
                    used.insert((e.0, e.1));
                }
                None => bad.push(format!("{m} imports {i}, a layer above it")),
            }
        }
    }
    for e in EXCEPTIONS {
        if !used.contains(&(e.0, e.1)) {
            bad.push(format!("{} no longer imports {}: remove the exception", e.0, e.1));
        }
    }
    assert!(bad.is_empty(), "against docs/architecture.md:\n{}", bad.join("\n"));
}

#[test]
fn the_imports_make_no_circle_but_the_named_one() {
    let imports = imports();
    // the modules each reaches (exceptions left out: they are named above)
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            for i in imports.get(&m).into_iter().flatten() {
                if EXCEPTIONS.iter().any(|e| e.0 == m && e.1 == i) {
                    continue;
                }
                if seen.insert(i.clone()) {
                    todo.push(i.clone());
                }
            }
        }
        seen
    };
    let mut circles: BTreeSet<Vec<String>> = BTreeSet::new();
    for m in imports.keys() {
        let r = reach(m);
        if r.contains(m) {
            let mut members: Vec<String> = r.into_iter().filter(|o| reach(o).contains(m)).collect();
            members.sort();
            circles.insert(members);
        }
    }
    let named: BTreeSet<Vec<String>> = CIRCLES.iter().map(|c| c.iter().map(|s| s.to_string()).collect()).collect();
    assert_eq!(circles, named, "circles among the top-level modules (the ones found, the ones named)");
}

#[test]
fn the_model_and_the_genome_import_in_one_direction() {
    let imports = imports();
    assert!(imports["model"].is_empty(), "the model imports {:?}", imports["model"]);
    // the genome: the model and the leaves (`time`: a rate's bounds)
    assert!(
        imports["genome"].iter().all(|i| i == "model" || CRATES[0].1[0].contains(&i.as_str())),
        "the genome imports {:?}",
        imports["genome"]
    );
}

#[test]
fn only_the_command_line_sees_the_whole_configuration() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    let mut bad = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().to_string();
        if rel.starts_with("cli/") || rel.starts_with("config/") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        if text.lines().any(|l| !l.trim_start().starts_with("//") && l.contains("crate::config")) {
            bad.push(rel);
        }
    }
    assert!(bad.is_empty(), "these take the whole Config instead of their sections: {bad:?}");
}

#[test]
fn one_intake_one_outputs_one_pacer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&src, &mut files);
    let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for kind in ["Intake", "Outputs", "Pace"] {
            let def = [format!("pub struct {kind} "), format!("pub struct {kind}<"), format!("pub enum {kind} ")];
            if text.lines().any(|l| def.iter().any(|d| l.starts_with(d.as_str()))) {
                found.entry(kind).or_default().push(f.strip_prefix(&src).unwrap().to_string_lossy().to_string());
            }
        }
    }
    assert_eq!(found.get("Intake").map(Vec::as_slice), Some(&["run/intake.rs".to_string()][..]));
    assert_eq!(found.get("Outputs").map(Vec::as_slice), Some(&["run/outputs.rs".to_string()][..]));
    assert_eq!(found.get("Pace").map(Vec::as_slice), Some(&["run/pace.rs".to_string()][..]));
}

/// Every struct, enum, trait and type alias has a name of its own across the workspace (tests'
/// too): a name says which thing it is without its module.
#[test]
fn type_names_are_unique() {
    let mut files = Vec::new();
    for src in sources() {
        collect(&src, &mut files);
    }
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(root()).unwrap().to_string_lossy().to_string();
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            // a struct, enum or trait at any depth (tests' modules too); a type alias only at the
            // top (an indented `type` is an associated type)
            let t = line.trim_start();
            let t = t.strip_prefix("pub ").or_else(|| t.strip_prefix("pub(").and_then(|r| r.split_once(") ").map(|(_, r)| r))).unwrap_or(t);
            let name = ["struct ", "enum ", "trait "].iter().find_map(|k| t.strip_prefix(k)).or_else(|| {
                if line.starts_with("type ") || line.starts_with("pub type ") {
                    t.strip_prefix("type ")
                } else {
                    None
                }
            });
            if let Some(rest) = name {
                let n: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if n.starts_with(|c: char| c.is_ascii_uppercase()) {
                    defined.entry(n).or_default().push(rel.clone());
                }
            }
        }
    }
    let repeated: Vec<String> = defined.iter().filter(|(_, at)| at.len() > 1).map(|(n, at)| format!("{n} in {at:?}")).collect();
    assert!(repeated.is_empty(), "type names defined twice in the workspace: {repeated:?}");
}

/// docs/cuda.md's files table names every file of `kernels/` and `crates/engine/src/backend/cuda/` (by its
/// path below it), and no file that is not there.
#[test]
fn docs_cuda_names_every_file_of_the_kernels_and_the_cuda_backend() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/cuda.md")).unwrap();
    let table = &doc[doc.find("### Files").unwrap()..doc.find("### Kernels").unwrap()];
    let named: Vec<&str> = table.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).collect();
    let mut listed: Vec<String> =
        named.iter().map(|p| p.strip_prefix("crates/engine/src/backend/cuda/").unwrap_or(p).to_string()).collect();
    fn walk(dir: &std::path::Path, rel: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{rel}{}", e.file_name().to_string_lossy());
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &format!("{name}/"), out);
            } else if !name.ends_with(".wgsl") {
                // (the wgpu backend's kernels: docs/wgpu.md)
                out.push(name);
            }
        }
    }
    let mut files = vec![];
    walk(&root.join("kernels"), "kernels/", &mut files);
    walk(&root.join("crates/engine/src/backend/cuda"), "", &mut files);
    listed.sort();
    files.sort();
    assert_eq!(listed, files, "docs/cuda.md's files table against kernels/ and crates/engine/src/backend/cuda/");
}

/// The engine (and the model under it) compile without the node's world: no zenoh, tokio, r2r,
/// bags, plots or Foxglove in their dependency trees (`cargo tree`, normal dependencies).
#[test]
fn the_engine_depends_on_no_transport_bag_plot_or_view() {
    for krate in ["neuroburst-model", "neuroburst-engine"] {
        let out = std::process::Command::new(env!("CARGO"))
            .args(["tree", "--offline", "-e", "normal", "--prefix", "none", "-p", krate, "--manifest-path"])
            .arg(root().join("Cargo.toml"))
            .output()
            .unwrap();
        assert!(out.status.success(), "cargo tree -p {krate}: {}", String::from_utf8_lossy(&out.stderr));
        let tree = String::from_utf8_lossy(&out.stdout);
        let names: BTreeSet<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
        let found: Vec<&&str> = ["zenoh", "tokio", "r2r", "rusqlite", "mcap", "plotters", "foxglove", "image", "clap"]
            .iter()
            .filter(|n| names.contains(**n))
            .collect();
        assert!(found.is_empty(), "{krate} depends on {found:?}:\n{tree}");
        assert!(names.len() > 3, "{krate}: no tree:\n{tree}");
    }
}
