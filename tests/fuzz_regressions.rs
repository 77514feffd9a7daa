//! Every input a fuzzer found a bug with (`tests/fuzz/regressions/<target>/`) runs again through
//! its target's body on every test run, so a bug once fixed stays fixed: the same functions the
//! coverage-guided fuzzers call (`tests/fuzz/targets.rs`; `tests/fuzz/run.sh` runs those).

#[path = "fuzz/targets.rs"]
pub(crate) mod targets;

use super::common::repo;

#[test]
fn every_input_a_fuzzer_found_a_bug_with_runs_clean() {
    let dir = repo().join("tests/fuzz/regressions");
    let mut ran = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        let (_, target) = targets::TARGETS.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}: no such fuzz target"));
        for input in std::fs::read_dir(entry.path()).unwrap() {
            let path = input.unwrap().path();
            println!("{name}: {}", path.display());
            target(&std::fs::read(&path).unwrap());
            ran += 1;
        }
    }
    assert!(ran > 0, "no regression inputs under {}", dir.display());
}

#[test]
fn every_target_takes_the_bundled_files_and_nothing() {
    for (name, target) in targets::TARGETS {
        target(&[]);
        target(&[0; 64]);
        println!("{name}: empty and zero inputs");
    }
    let genome = std::fs::read(repo().join("examples/diffdrive/genome.yaml")).unwrap();
    targets::genome_yaml(&genome);
    let feagi = std::fs::read(repo().join("tests/fixtures/feagi/essential_genome.json")).unwrap();
    targets::genome_feagi(&feagi);
    let mut bag = vec![0u8];
    bag.extend(std::fs::read(repo().join("examples/diffdrive/input.mcap")).unwrap());
    targets::bag(&bag);
}
