//! Sharding through the binary, where there is no GPU: CPU shards in one process give the same
//! spikes as one shard, for every strategy; bad sharding requests get clear errors.

use crate::common;

use common::{neuroburst, root};

fn spikes(args: &[&str], out: &std::path::Path) -> String {
    let genome = root().join("examples/genomes/showcase.yaml");
    let mut all =
        vec!["run", "--genome", genome.to_str().unwrap(), "--bursts", "300", "--spikes-out", out.to_str().unwrap(), "--backend", "cpu"];
    all.extend_from_slice(args);
    let o = neuroburst(&all);
    assert!(o.status.success(), "{all:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn cpu_shards_give_the_same_spikes_for_every_count_and_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let one = spikes(&[], &dir.path().join("one.jsonl"));
    assert!(one.lines().count() > 10, "the showcase brain should fire");
    for (k, s) in [("2", "round_robin"), ("3", "round_robin"), ("2", "by_cortical_area"), ("4", "by_cortical_area")] {
        let got = spikes(&["--shards", k, "--strategy", s], &dir.path().join(format!("{k}-{s}.jsonl")));
        assert!(got == one, "{k} shards, {s}: the spikes differ from one shard");
    }
}

#[test]
fn bad_sharding_requests_are_clear_errors() {
    let genome = root().join("examples/genomes/showcase.yaml");
    let g = genome.to_str().unwrap();
    let o = neuroburst(&["run", "--genome", g, "--bursts", "1", "--backend", "cpu", "--shards", "0"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("shards"), "{}", String::from_utf8_lossy(&o.stderr));
    // the workload brain has one area: it cannot be split by area
    let o =
        neuroburst(&["bench", "--backend", "cpu", "--neurons", "1000", "--bursts", "1", "--shards", "2", "--strategy", "by_cortical_area"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("by_cortical_area") && err.contains("round_robin"), "{err}");
    // more shards than neurons
    let o = neuroburst(&["bench", "--backend", "cpu", "--neurons", "3", "--fanout", "1", "--bursts", "1", "--shards", "5"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("5 shards"), "{}", String::from_utf8_lossy(&o.stderr));
    // inspect shows the plan
    let o = neuroburst(&["inspect", "--genome", g, "--shards", "3", "--strategy", "by_cortical_area"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && out.contains("shard plan: 3 shards, by_cortical_area"), "{out}");
}
