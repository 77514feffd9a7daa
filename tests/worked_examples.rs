//! The worked examples of burst-model.md, run through the CPU backend.

use neuroburst::backend::cpu::CpuBackend;
use neuroburst::backend::{Backend, Readback};
use neuroburst::brain::Brain;
use neuroburst::genome::Genome;
use neuroburst::model::{Injection, Injections, Potential};

/// One neuron, driven above threshold every burst; returns its firing pattern as `1` and `_`.
fn pattern(neuron_yaml: &str, bursts: usize) -> String {
    let yaml = format!(
        "name: one\nareas:\n  - id: a\n    kind: sensor\n    dims: [1, 1, 1]\n    neuron:\n{}\n",
        neuron_yaml.lines().map(|l| format!("      {l}")).collect::<Vec<_>>().join("\n")
    );
    let genome = Genome::from_yaml_str(&yaml).unwrap();
    let mut b = CpuBackend::new(Brain::build(&genome, 1, false), Readback::All);
    let drive = Injections::from([Injection { neuron: 0, potential: Potential::from_f64(5.0) }]);
    (0..bursts).map(|_| if b.burst(drive.as_slice()).unwrap().fired.is_empty() { '_' } else { '1' }).collect()
}

#[test]
fn refractory_one() {
    assert_eq!(pattern("threshold: 1.0\nrefractory_period: 1", 8), "1_1_1_1_");
}

#[test]
fn refractory_one_fire_limit_three_snooze_two() {
    assert_eq!(pattern("threshold: 1.0\nrefractory_period: 1\nconsecutive_fire_limit: 3\nsnooze_period: 2", 16), "1_1_1___1_1_1___");
}

#[test]
fn no_refractory_fires_every_burst() {
    assert_eq!(pattern("threshold: 1.0", 6), "111111");
}

#[test]
fn fire_limit_without_refractory_skips_one_burst() {
    // limit 2, no refractory, no snooze: fire, fire, window holds with cfc = limit -> reset, fire...
    assert_eq!(pattern("threshold: 1.0\nconsecutive_fire_limit: 2", 9), "11_11_11_");
}

#[test]
fn threshold_limit_closes_the_window() {
    assert_eq!(pattern("threshold: 1.0\nthreshold_limit: 4.0", 4), "____");
    assert_eq!(pattern("threshold: 1.0\nthreshold_limit: 5.0", 4), "1111");
}
