//! Checkpoints: round trip through a real backend, atomic writes, and every refusal (another
//! genome, another format version, a truncated or corrupt file, not a checkpoint at all).

use std::path::PathBuf;

use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::{Backend, Readback};
use neuroburst::brain::Brain;
use neuroburst::checkpoint::{write_atomic, Checkpoint, CheckpointError, VERSION};
use neuroburst::genome::Genome;
use neuroburst::model::InjectionSlice;

fn genome(name: &str) -> Genome {
    Genome::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/genomes").join(name)).unwrap()
}

fn backend(g: &Genome) -> CpuBackend {
    CpuBackend::new(Brain::build(g, 1, false), Readback::All)
}

#[test]
fn round_trip_resumes_the_same_future() {
    let g = genome("reflex.yaml");
    let mut a = backend(&g);
    for _ in 0..17 {
        a.burst(InjectionSlice::EMPTY).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("brain.ckpt");
    Checkpoint::new(&g, a.snapshot().unwrap()).save(&path).unwrap();

    let c = Checkpoint::load(&path, &g).unwrap();
    assert_eq!(c.state, a.snapshot().unwrap());
    let mut b = backend(&g);
    b.restore(&c.state).unwrap();
    for _ in 0..30 {
        let (x, y) = (a.burst(InjectionSlice::EMPTY).unwrap().fired.to_vec(), b.burst(InjectionSlice::EMPTY).unwrap().fired.to_vec());
        assert_eq!(x, y);
    }
    assert_eq!(a.snapshot().unwrap(), b.snapshot().unwrap());
}

#[test]
fn a_crash_mid_write_leaves_the_old_file() {
    let g = genome("reflex.yaml");
    let mut b = backend(&g);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("brain.ckpt");
    let old = Checkpoint::new(&g, b.snapshot().unwrap());
    old.save(&path).unwrap();
    let old_bytes = std::fs::read(&path).unwrap();

    b.burst(InjectionSlice::EMPTY).unwrap();
    let new = Checkpoint::new(&g, b.snapshot().unwrap()).to_bytes();
    // The writer fails half way (disk full, ...).
    let e = write_atomic(&path, |f| {
        std::io::Write::write_all(f, &new[..new.len() / 2])?;
        Err(std::io::Error::other("simulated failure"))
    });
    assert!(e.is_err());
    assert_eq!(std::fs::read(&path).unwrap(), old_bytes);
    // The process dies half way: the temp file stays behind, the checkpoint is untouched.
    let r = std::panic::catch_unwind(|| {
        let _ = write_atomic(&path, |f| {
            std::io::Write::write_all(f, &new[..new.len() / 2]).unwrap();
            panic!("simulated crash");
        });
    });
    assert!(r.is_err());
    assert_eq!(std::fs::read(&path).unwrap(), old_bytes);
    assert_eq!(Checkpoint::load(&path, &g).unwrap(), old);
    // The next save succeeds despite the leftover.
    Checkpoint::new(&g, b.snapshot().unwrap()).save(&path).unwrap();
    assert_eq!(Checkpoint::load(&path, &g).unwrap().state.burst, 1);
}

#[test]
fn another_genome_is_refused_naming_both() {
    let (reflex, rover) = (genome("reflex.yaml"), genome("rover.yaml"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("brain.ckpt");
    Checkpoint::new(&reflex, backend(&reflex).snapshot().unwrap()).save(&path).unwrap();
    let e = Checkpoint::load(&path, &rover).unwrap_err();
    assert!(matches!(e, CheckpointError::GenomeMismatch { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("\"reflex\"") && msg.contains("\"rover\"") && msg.contains("brain.ckpt"), "{msg}");
    // The same genome with another seed is another brain.
    let mut reseeded = reflex.clone();
    reseeded.seed += 1;
    assert!(matches!(Checkpoint::load(&path, &reseeded), Err(CheckpointError::GenomeMismatch { .. })));
}

#[test]
fn wrong_version_truncation_corruption_and_foreign_files_are_refused() {
    let g = genome("reflex.yaml");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("brain.ckpt");
    let good = Checkpoint::new(&g, backend(&g).snapshot().unwrap()).to_bytes();

    let mut v = good.clone();
    v[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
    std::fs::write(&path, &v).unwrap();
    let e = Checkpoint::load(&path, &g).unwrap_err();
    assert!(matches!(e, CheckpointError::Version { found, .. } if found == VERSION + 1), "{e}");
    assert!(e.to_string().contains(&format!("version {}", VERSION + 1)), "{e}");

    for cut in [good.len() - 1, good.len() / 2, 40, 10, 3] {
        std::fs::write(&path, &good[..cut]).unwrap();
        let e = Checkpoint::load(&path, &g).unwrap_err();
        assert!(matches!(e, CheckpointError::Corrupt { .. }), "cut at {cut}: {e}");
    }
    let mut flipped = good.clone();
    flipped[60] ^= 1;
    std::fs::write(&path, &flipped).unwrap();
    assert!(matches!(Checkpoint::load(&path, &g), Err(CheckpointError::Corrupt { .. })));

    std::fs::write(&path, b"name: reflex\nareas: []\n").unwrap();
    assert!(matches!(Checkpoint::load(&path, &g), Err(CheckpointError::BadMagic { .. })));
    let e = Checkpoint::load(&dir.path().join("missing.ckpt"), &g).unwrap_err();
    assert!(matches!(e, CheckpointError::Io { .. }) && e.to_string().contains("missing.ckpt"), "{e}");
}
