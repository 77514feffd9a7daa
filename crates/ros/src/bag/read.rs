//! Opening a bag: a directory (with `metadata.yaml`, or just its `.mcap`/`.db3` files) or a
//! single `.mcap`/`.db3` file.

use std::path::{Path, PathBuf};

use super::{db3, mcap_read, Bag, BagError};

/// Read the whole bag at `path`.
pub fn open(path: &Path) -> Result<Bag, BagError> {
    let files = if path.is_dir() { files_of_dir(path)? } else { vec![path.to_path_buf()] };
    let mut bag = Bag::default();
    for f in &files {
        match f.extension().and_then(|e| e.to_str()) {
            Some("mcap") => mcap_read::read(f, &mut bag)?,
            Some("db3") => db3::read(f, &mut bag)?,
            _ => {
                if !f.exists() {
                    return Err(BagError::Io {
                        file: f.clone(),
                        source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
                    });
                }
                return Err(BagError::Unsupported { file: f.clone(), message: "expected a bag directory, a .mcap or a .db3 file".into() });
            }
        }
    }
    // stable: equal times keep the order of the files and of the records within them
    bag.messages.sort_by_key(|m| m.log_time);
    bag.files = files;
    Ok(bag)
}

/// The storage files of a bag directory, from `metadata.yaml` (`relative_file_paths`) when present,
/// else every `.mcap` and `.db3` file, sorted by name.
fn files_of_dir(dir: &Path) -> Result<Vec<PathBuf>, BagError> {
    let meta = dir.join("metadata.yaml");
    if meta.is_file() {
        let text = std::fs::read_to_string(&meta).map_err(|source| BagError::Io { file: meta.clone(), source })?;
        let corrupt = |message: String| BagError::Corrupt { file: meta.clone(), message };
        let v: serde_yaml::Value = serde_yaml::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        let info = v.get("rosbag2_bagfile_information").ok_or_else(|| corrupt("no rosbag2_bagfile_information".into()))?;
        let compression = info.get("compression_format").and_then(|c| c.as_str()).unwrap_or("");
        if !compression.is_empty() {
            return Err(BagError::Unsupported {
                file: meta.clone(),
                message: format!(
                    "the bag is compressed by rosbag2 ({compression}, mode {}); decompress it first (`ros2 bag convert` or `rosbags-convert`)",
                    info.get("compression_mode").and_then(|c| c.as_str()).unwrap_or("?")
                ),
            });
        }
        let rel = info.get("relative_file_paths").and_then(|r| r.as_sequence()).ok_or_else(|| corrupt("no relative_file_paths".into()))?;
        let mut files = Vec::new();
        for r in rel {
            let name = r.as_str().ok_or_else(|| corrupt("relative_file_paths holds a non-string".into()))?;
            let mut p = dir.join(name);
            // rosbag2 lists compressed files by their stored name; old bags list names without the directory
            if !p.exists() {
                if let Some(base) = Path::new(name).file_name() {
                    p = dir.join(base);
                }
            }
            files.push(p);
        }
        if files.is_empty() {
            return Err(corrupt("relative_file_paths is empty".into()));
        }
        return Ok(files);
    }
    let rd = std::fs::read_dir(dir).map_err(|source| BagError::Io { file: dir.to_path_buf(), source })?;
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("mcap" | "db3")))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(BagError::Unsupported {
            file: dir.to_path_buf(),
            message: "a directory without metadata.yaml, .mcap or .db3 files".into(),
        });
    }
    Ok(files)
}
