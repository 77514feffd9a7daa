//! A shard's checkpoints: its own neurons' state after burst `b` (and its own fired list of
//! that burst), in the checkpoint format of [`crate::checkpoint`] with a `SHRD` section naming the
//! shard, the shard count and the range, one file per burst:
//! `<dir>/<brain>-shard<k>-<burst>.ckpt`. The last [`KEEP`] are kept: a shard that died may
//! hold one checkpoint fewer than the survivors, and a rollback needs one that all hold.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::genome::Genome;
use crate::model::NeuronState;

pub const KEEP: usize = 2;
const TAG: [u8; 4] = *b"SHRD";

pub struct ShardCheckpoints {
    dir: PathBuf,
    prefix: String,
    index: usize,
    shards: usize,
    range: Range<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum ShardCheckpointError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("{path}: {message}")]
    Other { path: PathBuf, message: String },
}

impl ShardCheckpoints {
    pub fn new(dir: &Path, brain: &str, index: usize, shards: usize, range: Range<u32>) -> ShardCheckpoints {
        ShardCheckpoints { dir: dir.to_path_buf(), prefix: format!("{brain}-shard{index}-"), index, shards, range }
    }

    pub fn path(&self, burst: u64) -> PathBuf {
        self.dir.join(format!("{}{burst:012}.ckpt", self.prefix))
    }

    /// The bursts this shard holds checkpoints of, ascending.
    pub fn list(&self) -> Vec<u64> {
        let mut v: Vec<u64> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix(&self.prefix)?.strip_suffix(".ckpt")?.parse().ok()
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// The latest checkpoint's burst, 0 when there is none.
    pub fn latest(&self) -> u64 {
        self.list().last().copied().unwrap_or(0)
    }

    /// Remove every checkpoint of this shard (a fresh start); returns how many.
    pub fn clear(&self) -> Result<usize, ShardCheckpointError> {
        let list = self.list();
        for &b in &list {
            let p = self.path(b);
            std::fs::remove_file(&p).map_err(|e| ShardCheckpointError::Other { path: p, message: e.to_string() })?;
        }
        Ok(list.len())
    }

    fn section(&self) -> Vec<u8> {
        let mut s = Vec::with_capacity(16);
        for v in [self.index as u32, self.shards as u32, self.range.start, self.range.end] {
            s.extend_from_slice(&v.to_le_bytes());
        }
        s
    }

    /// Save `state` (own neurons, `state.burst` set, `state.fired` = own fired of that burst)
    /// atomically, then drop all but the last [`KEEP`].
    pub fn save(&self, genome: &Genome, state: NeuronState) -> Result<PathBuf, ShardCheckpointError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| ShardCheckpointError::Other { path: self.dir.clone(), message: e.to_string() })?;
        let path = self.path(state.burst);
        let mut c = Checkpoint::new(genome, state);
        c.sections.push((TAG, self.section()));
        c.save(&path)?;
        let list = self.list();
        for &old in &list[..list.len().saturating_sub(KEEP)] {
            let _ = std::fs::remove_file(self.path(old));
        }
        Ok(path)
    }

    /// The state saved after `burst`, checked against the genome and this shard's place.
    pub fn load(&self, genome: &Genome, burst: u64) -> Result<NeuronState, ShardCheckpointError> {
        let path = self.path(burst);
        let c = Checkpoint::load(&path, genome)?;
        let other = |message: String| ShardCheckpointError::Other { path: path.clone(), message };
        let section = c.sections.iter().find(|(t, _)| *t == TAG).map(|(_, s)| s.as_slice());
        if section != Some(&self.section()[..]) {
            return Err(other(format!(
                "not a checkpoint of shard {} of {} (neurons {:?}); was the cluster resized or re-planned?",
                self.index, self.shards, self.range
            )));
        }
        if c.state.burst != burst || c.state.potential.len() != self.range.len() {
            return Err(other(format!(
                "holds burst {} of {} neurons, expected burst {burst} of {}",
                c.state.burst,
                c.state.potential.len(),
                self.range.len()
            )));
        }
        Ok(c.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn genome() -> Genome {
        Genome::from_yaml_str("name: t\nseed: 1\nareas:\n  - { id: a, kind: interneuron, dims: [10, 1, 1] }\n").unwrap()
    }

    fn state(burst: u64) -> NeuronState {
        NeuronState {
            burst,
            potential: vec![burst as i64; 5],
            refractory: vec![0; 5],
            consecutive: vec![1; 5],
            fired: vec![5, 7],
            ..Default::default()
        }
    }

    #[test]
    fn saves_keeps_two_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let c = ShardCheckpoints::new(dir.path(), "b", 1, 2, 5..10);
        assert_eq!(c.latest(), 0);
        for b in [100, 200, 300] {
            c.save(&genome(), state(b)).unwrap();
        }
        assert_eq!(c.list(), vec![200, 300]);
        assert_eq!(c.load(&genome(), 200).unwrap(), state(200));
        let e = c.load(&genome(), 100).unwrap_err().to_string();
        assert!(e.contains("b-shard1-000000000100.ckpt"), "{e}");
        // another shard's place is refused
        let other = ShardCheckpoints::new(dir.path(), "b", 1, 3, 5..10);
        let e = other.load(&genome(), 300).unwrap_err().to_string();
        assert!(e.contains("not a checkpoint of shard 1 of 3"), "{e}");
        assert_eq!(c.clear().unwrap(), 2);
        assert!(c.list().is_empty());
    }
}
