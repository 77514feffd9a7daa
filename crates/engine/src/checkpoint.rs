//! Checkpoints: the brain's state in a compact, versioned little-endian file, written atomically
//! (temp file + fsync + rename + directory fsync), tied to its genome by a fingerprint.
//!
//! Layout (all integers little endian):
//! ```text
//! magic "NBCKPT\r\n" | version u32 | fingerprint [16] | genome name (u32 len + UTF-8)
//! | burst u64 | neurons u64 | potential i64 x n | refractory u16 x n | consecutive u16 x n
//! | fired count u64 + u32 x count
//! | sections u32 + (tag [4] + len u64 + bytes) x sections
//! | checksum u64 (XXH3-64 of everything before)
//! ```
//! Version 2 adds what plastic mappings learned (docs/plasticity.md), as sections: `HIST` (whether
//! the last burst's learning is in, u32, then every neuron's firing history, u32 x n), `SYNS` (every plastic synapse: source u32, target u32,
//! mapping u32, weight u8) and `GROW` (every grown associative pair: mapping u32, source u32,
//! target u32). Version 1 files still load; a plastic brain resumed from one starts its weights
//! from the genome.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::genome::Genome;
use crate::model::plasticity::{GrownPair, Learned, LearnedSynapse};
use crate::model::NeuronState;

/// The first 8 bytes of every checkpoint file.
pub const MAGIC: &[u8; 8] = b"NBCKPT\r\n";
/// The version this neuroburst writes.
pub const VERSION: u32 = 2;

/// The oldest version this neuroburst reads.
pub const OLDEST: u32 = 1;

/// The `checkpoint` section of the configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Checkpoint file; `--resume` reads it, shutdown and triggers write it.
    pub path: PathBuf,
    /// Save when the node shuts down (SIGINT/SIGTERM).
    pub on_shutdown: bool,
    /// Topic (std_msgs/msg/Empty) that triggers a save; empty: none. SIGUSR1 always does.
    pub trigger_topic: String,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig { path: "neuroburst.ckpt".into(), on_shutdown: true, trigger_topic: "~/save_checkpoint".into() }
    }
}

/// Identifies a genome: XXH3-128 of its YAML and its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint(pub [u8; 16]);

impl Fingerprint {
    /// The fingerprint of `genome`.
    pub fn of(genome: &Genome) -> Fingerprint {
        let mut bytes = genome.to_yaml().into_bytes();
        bytes.extend_from_slice(&genome.seed.to_le_bytes());
        Fingerprint(xxhash_rust::xxh3::xxh3_128(&bytes).to_le_bytes())
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// A checkpoint's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// The name of the genome whose state it is.
    pub genome_name: String,
    /// That genome's fingerprint (a resume checks it).
    pub fingerprint: Fingerprint,
    /// The neurons' state (and what was learned).
    pub state: NeuronState,
    /// Further tagged sections (e.g. learned weights), kept as bytes.
    pub sections: Vec<([u8; 4], Vec<u8>)>,
}

/// Errors from reading or writing a checkpoint, each naming the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    /// The file could not be read or written.
    Io {
        /// The checkpoint file.
        path: PathBuf,
        #[source]
        /// What the system said.
        source: std::io::Error,
    },
    #[error("{path}: not a neuroburst checkpoint (bad magic)")]
    /// The file is not a checkpoint.
    BadMagic {
        /// The checkpoint file.
        path: PathBuf,
    },
    #[error("{path}: checkpoint format version {found}, this neuroburst reads versions 1 to {supported}")]
    /// A checkpoint of a format this neuroburst does not read.
    Version {
        /// The checkpoint file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The newest version this neuroburst reads.
        supported: u32,
    },
    #[error("{path}: truncated or corrupt checkpoint ({what})")]
    /// The file ends early or holds what a checkpoint cannot.
    Corrupt {
        /// The checkpoint file.
        path: PathBuf,
        /// What is missing or wrong.
        what: String,
    },
    #[error(
        "{path}: the checkpoint is of genome {saved_name:?} (fingerprint {saved}), not of genome {name:?} (fingerprint {expected}); \
         start without --resume or point checkpoint.path elsewhere"
    )]
    /// The checkpoint is of another genome.
    GenomeMismatch {
        /// The checkpoint file.
        path: PathBuf,
        /// The saved state's genome's name.
        saved_name: String,
        /// Its fingerprint.
        saved: Fingerprint,
        /// The running brain's genome's name.
        name: String,
        /// Its fingerprint.
        expected: Fingerprint,
    },
    #[error("{path}: the checkpoint takes {needed} bytes, but its disk has {available} bytes free; nothing was written")]
    /// The disk has no room for it (nothing was written).
    Disk {
        /// The checkpoint file.
        path: PathBuf,
        /// Bytes the checkpoint takes.
        needed: u64,
        /// Bytes free on its disk.
        available: u64,
    },
}

impl Checkpoint {
    /// A checkpoint of `state`, a state of `genome`'s brain.
    pub fn new(genome: &Genome, state: NeuronState) -> Checkpoint {
        Checkpoint { genome_name: genome.name.clone(), fingerprint: Fingerprint::of(genome), state, sections: vec![] }
    }

    /// The checkpoint as the file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let s = &self.state;
        let n = s.potential.len();
        let mut b = Vec::with_capacity(64 + n * 12 + s.fired.len() * 4);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&VERSION.to_le_bytes());
        b.extend_from_slice(&self.fingerprint.0);
        b.extend_from_slice(&(self.genome_name.len() as u32).to_le_bytes());
        b.extend_from_slice(self.genome_name.as_bytes());
        b.extend_from_slice(&s.burst.to_le_bytes());
        b.extend_from_slice(&(n as u64).to_le_bytes());
        s.potential.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
        s.refractory.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
        s.consecutive.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
        b.extend_from_slice(&(s.fired.len() as u64).to_le_bytes());
        s.fired.iter().for_each(|v| b.extend_from_slice(&v.to_le_bytes()));
        let learned = learned_sections(&s.learned);
        b.extend_from_slice(&((self.sections.len() + learned.len()) as u32).to_le_bytes());
        for (tag, data) in learned.iter().chain(&self.sections) {
            b.extend_from_slice(tag);
            b.extend_from_slice(&(data.len() as u64).to_le_bytes());
            b.extend_from_slice(data);
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    /// A checkpoint read from `b`, the bytes of file `path` (named in errors).
    pub fn from_bytes(path: &Path, b: &[u8]) -> Result<Checkpoint, CheckpointError> {
        let corrupt = |what: &str| CheckpointError::Corrupt { path: path.to_path_buf(), what: what.to_string() };
        let head = &b[..b.len().min(8)];
        if head != &MAGIC[..head.len()] {
            return Err(CheckpointError::BadMagic { path: path.to_path_buf() });
        }
        if b.len() < 12 {
            return Err(corrupt("shorter than its header"));
        }
        let found = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if !(OLDEST..=VERSION).contains(&found) {
            return Err(CheckpointError::Version { path: path.to_path_buf(), found, supported: VERSION });
        }
        if b.len() < 20 {
            return Err(corrupt("shorter than its header"));
        }
        let (body, sum) = b.split_at(b.len() - 8);
        if xxhash_rust::xxh3::xxh3_64(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
            return Err(corrupt("checksum mismatch"));
        }
        let mut r = Reader { b: body, at: 12 };
        let fingerprint = Fingerprint(r.take(16).ok_or_else(|| corrupt("fingerprint"))?.try_into().unwrap());
        let name_len = r.u32().ok_or_else(|| corrupt("genome name"))? as usize;
        let genome_name =
            String::from_utf8(r.take(name_len).ok_or_else(|| corrupt("genome name"))?.to_vec()).map_err(|_| corrupt("genome name"))?;
        let burst = r.u64().ok_or_else(|| corrupt("burst"))?;
        let n = r.u64().ok_or_else(|| corrupt("neuron count"))? as usize;
        let potential = r.array(n, 8, |c| i64::from_le_bytes(c.try_into().unwrap())).ok_or_else(|| corrupt("potentials"))?;
        let refractory = r.array(n, 2, |c| u16::from_le_bytes(c.try_into().unwrap())).ok_or_else(|| corrupt("refractory"))?;
        let consecutive = r.array(n, 2, |c| u16::from_le_bytes(c.try_into().unwrap())).ok_or_else(|| corrupt("consecutive"))?;
        let fired_n = r.u64().ok_or_else(|| corrupt("fired"))? as usize;
        let fired = r.array(fired_n, 4, |c| u32::from_le_bytes(c.try_into().unwrap())).ok_or_else(|| corrupt("fired"))?;
        let count = r.u32().ok_or_else(|| corrupt("sections"))?;
        let mut sections = vec![];
        for _ in 0..count {
            let tag: [u8; 4] = r.take(4).ok_or_else(|| corrupt("section tag"))?.try_into().unwrap();
            let len = r.u64().ok_or_else(|| corrupt("section length"))? as usize;
            sections.push((tag, r.take(len).ok_or_else(|| corrupt("section"))?.to_vec()));
        }
        if r.at != body.len() {
            return Err(corrupt("trailing bytes"));
        }
        let learned = take_learned(&mut sections, n).map_err(|what| corrupt(&what))?;
        let state = NeuronState { burst, potential, refractory, consecutive, fired, learned };
        Ok(Checkpoint { genome_name, fingerprint, state, sections })
    }

    /// Write atomically: readers see the old file or the new one, never a mix.
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        let bytes = self.to_bytes();
        check_disk(path, bytes.len() as u64, free_bytes(&dir_of(path)))?;
        write_atomic(path, |f| f.write_all(&bytes))
    }

    /// Read `path` and check that it belongs to `genome`.
    pub fn load(path: &Path, genome: &Genome) -> Result<Checkpoint, CheckpointError> {
        let bytes = std::fs::read(path).map_err(|source| CheckpointError::Io { path: path.to_path_buf(), source })?;
        let c = Checkpoint::from_bytes(path, &bytes)?;
        let expected = Fingerprint::of(genome);
        if c.fingerprint != expected {
            return Err(CheckpointError::GenomeMismatch {
                path: path.to_path_buf(),
                saved_name: c.genome_name,
                saved: c.fingerprint,
                name: genome.name.clone(),
                expected,
            });
        }
        Ok(c)
    }
}

/// The sections that hold `learned` (none for a brain that does not learn).
fn learned_sections(l: &Learned) -> Vec<([u8; 4], Vec<u8>)> {
    if l.is_empty() {
        return Vec::new();
    }
    let hist = (l.ahead as u32).to_le_bytes().into_iter().chain(l.history.iter().flat_map(|h| h.to_le_bytes())).collect();
    let mut syns = Vec::with_capacity(l.synapses.len() * 13);
    for s in &l.synapses {
        [s.source, s.target, s.mapping].iter().for_each(|v| syns.extend_from_slice(&v.to_le_bytes()));
        syns.push(s.weight);
    }
    let grow = l.grown.iter().flat_map(|g| [g.mapping, g.source, g.target]).flat_map(u32::to_le_bytes).collect();
    vec![(*b"HIST", hist), (*b"SYNS", syns), (*b"GROW", grow)]
}

/// Take the learned state's sections out of `sections`.
fn take_learned(sections: &mut Vec<([u8; 4], Vec<u8>)>, neurons: usize) -> Result<Learned, String> {
    let mut l = Learned::default();
    let word = |c: &[u8], i: usize| u32::from_le_bytes(c[i * 4..i * 4 + 4].try_into().unwrap());
    for (tag, data) in sections.iter() {
        match tag {
            b"HIST" if data.len() == (neurons + 1) * 4 => {
                l.ahead = word(data, 0) != 0;
                l.history = data[4..].chunks_exact(4).map(|c| word(c, 0)).collect();
            }
            b"SYNS" if data.len() % 13 == 0 => {
                l.synapses = data
                    .chunks_exact(13)
                    .map(|c| LearnedSynapse { source: word(c, 0), target: word(c, 1), mapping: word(c, 2), weight: c[12] })
                    .collect()
            }
            b"GROW" if data.len() % 12 == 0 => {
                l.grown = data.chunks_exact(12).map(|c| GrownPair { mapping: word(c, 0), source: word(c, 1), target: word(c, 2) }).collect()
            }
            b"HIST" | b"SYNS" | b"GROW" => return Err(format!("section {} has a bad length", String::from_utf8_lossy(tag))),
            _ => {}
        }
    }
    sections.retain(|(tag, _)| !matches!(tag, b"HIST" | b"SYNS" | b"GROW"));
    Ok(l)
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len())?;
        let s = &self.b[self.at..end];
        self.at = end;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()))
    }
    fn array<T>(&mut self, n: usize, size: usize, f: impl Fn(&[u8]) -> T) -> Option<Vec<T>> {
        let bytes = self.take(n.checked_mul(size)?)?;
        Some(bytes.chunks_exact(size).map(f).collect())
    }
}

/// Write `path` through a temp file in the same directory: write, fsync, rename, fsync the
/// directory. If `write` fails (or the process dies), the old file is untouched.
fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Bytes free for this process on the file system of `dir` (None when it cannot be asked).
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed statvfs is a valid out-parameter; `c` is a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// Refuse a checkpoint of `needed` bytes where only `available` are free (the new file is
/// written beside the old one, which it replaces only once whole).
fn check_disk(path: &Path, needed: u64, available: Option<u64>) -> Result<(), CheckpointError> {
    match available {
        Some(available) if available < needed => Err(CheckpointError::Disk { path: path.to_path_buf(), needed, available }),
        _ => Ok(()),
    }
}

/// The temporary file of each write is `.<name>.tmp-<pid>-<n>`: unique within the process (two
/// writes in flight never share one, so a half-written file is never renamed into place) and
/// across processes; one left by a process that is gone (it died mid-write) is removed by the next
/// write of the same file.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut File) -> std::io::Result<()>) -> Result<(), CheckpointError> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let io = |source| CheckpointError::Io { path: path.to_path_buf(), source };
    let dir = dir_of(path);
    let name = path.file_name().ok_or_else(|| io(std::io::Error::other("not a file name")))?;
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    remove_stale(&dir, &prefix);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!("{prefix}{}-{n}", std::process::id()));
    let result = (|| {
        let mut f = File::options().write(true).create_new(true).open(&tmp)?;
        write(&mut f)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        File::open(&dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

/// Remove the temporary files `<prefix><pid>-<n>` in `dir` whose process is gone.
fn remove_stale(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file.to_str().and_then(|f| f.strip_prefix(prefix)).and_then(|r| r.split('-').next()?.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let gone = pid > 0 && unsafe { libc::kill(pid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && std::fs::remove_file(e.path()).is_ok() {
            tracing::info!("removed {}, left by process {pid} (gone) in the middle of a write", e.path().display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_unique_and_a_dead_process_leaves_none_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("brain.ckpt");
        // a process that died mid-write (pid 2^22 + 7: above the kernel's pid_max, never alive)
        let stale = dir.path().join(".brain.ckpt.tmp-4194311-0");
        std::fs::write(&stale, b"half").unwrap();
        let mine = dir.path().join(format!(".brain.ckpt.tmp-{}-999", std::process::id()));
        std::fs::write(&mine, b"in flight").unwrap();
        // two writes at once: each its own temporary file, both whole
        std::thread::scope(|s| {
            for b in [b'a', b'b'] {
                let path = &path;
                s.spawn(move || write_atomic(path, |f| f.write_all(&[b; 100_000])).unwrap());
            }
        });
        let got = std::fs::read(&path).unwrap();
        assert!(got == [b'a'; 100_000] || got == [b'b'; 100_000], "a mix of two writes");
        assert!(!stale.exists(), "a dead process's temporary file stays");
        assert!(mine.exists(), "a live process's temporary file was removed");
    }

    #[test]
    fn a_checkpoint_larger_than_the_free_disk_is_refused_with_both_numbers() {
        let p = Path::new("/robot/brain.ckpt");
        let e = check_disk(p, 5_000, Some(4_096)).unwrap_err().to_string();
        assert!(e.contains("/robot/brain.ckpt") && e.contains("5000") && e.contains("4096"), "{e}");
        assert!(check_disk(p, 4_096, Some(4_096)).is_ok());
        assert!(check_disk(p, 1 << 40, None).is_ok());
        assert!(free_bytes(Path::new(".")).is_some_and(|b| b > 0));
    }
}
