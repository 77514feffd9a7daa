//! The engine without the node: a bundled genome, a backend chosen as the node chooses it (`auto`:
//! a GPU when there is one and the brain is large enough for it, else the CPU), touch injected into
//! the sensor area, bursts, and what the motor area fired. No ROS, no Zenoh, no bag.
//!
//! `cargo run --release --example embed` (in the workspace; `-p neuroburst-engine` elsewhere)

use neuroburst_engine::backend::open::open;
use neuroburst_engine::backend::{BackendConfig, Readback};
use neuroburst_engine::genome::Genome;
use neuroburst_engine::model::fixed::Potential;
use neuroburst_engine::model::{Injection, Injections, Layout};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/reflex.yaml");
    let genome = Genome::load(std::path::Path::new(path))?;
    let layout = Layout::from_genome(&genome);
    let area = |id: &str| {
        let p = &layout.params[layout.area_index(id).expect("the reflex genome has this area")];
        p.first..p.first + p.count
    };
    let (touch, motor) = (area("touch"), area("motor"));

    let mut opened = open(&genome, &BackendConfig::default(), Readback::All, false)?;
    println!("{} ({}), {} synapses", genome.name, opened.choice.reason, opened.synapses);

    // a touch on the whole pad for 5 bursts, then nothing
    let pad: Injections = touch.clone().map(|n| Injection { neuron: n, potential: Potential::from_f64(1.0) }).collect();
    let none = Injections::new();
    let mut total = 0;
    for t in 1..=20 {
        let input = if t <= 5 { &pad } else { &none };
        let out = opened.backend.burst(input.as_slice())?;
        let moved: Vec<u32> = out.fired.iter().copied().filter(|n| motor.contains(n)).map(|n| n - motor.start).collect();
        total += moved.len();
        println!("burst {t:>2}: {:>2} fired, motor neurons {moved:?}", out.fired.len());
    }
    // a snapshot is the whole state: restore it into the same backend and it carries on alike
    let state = opened.backend.snapshot()?;
    opened.backend.restore(&state)?;
    println!("{total} motor spikes in 20 bursts; state of burst {} saved and restored", state.burst);
    Ok(())
}
