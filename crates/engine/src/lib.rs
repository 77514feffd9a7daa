//! neuroburst's burst engine: a genome's connectome built and run, one synaptic delay per burst, on
//! the CPU (the reference) or NVIDIA GPUs (one or several; kernels compiled by NVRTC at start-up,
//! the driver loaded at run time), bit for bit the same.
//!
//! - [`brain`]: a genome's layout and connectome, ready to run;
//! - [`connectome`]: synapses built from a genome's morphologies (stored, or procedural);
//! - [`backend`]: the [`backend::Backend`] trait, [`backend::open`] (`auto` picks CUDA or the
//!   CPU), the CPU reference and CUDA;
//! - [`checkpoint`]: a brain's state on disk (snapshot and restore);
//! - [`workload`]: the benchmark brain W(N, K, rho); [`partition`]: neuron ranges of shards;
//!   [`capacity`]: a brain refused before its build when it cannot fit;
//! - [`selftest`]: the parity check of a backend against the CPU on random brains.
//!
//! The model's modules are re-exported ([`genome`], [`model`], ...), so that one dependency serves.
//!
//! A genome run for a few bursts, touch injected into its sensor area and the motor area read
//! (`examples/embed.rs` does the same with a snapshot and restore):
//!
//! ```
//! use neuroburst_engine::backend::open::open;
//! use neuroburst_engine::backend::{BackendConfig, BackendKind, Readback};
//! use neuroburst_engine::genome::Genome;
//! use neuroburst_engine::model::fixed::Potential;
//! use neuroburst_engine::model::{Injection, Injections, Layout};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/reflex.yaml");
//! let genome = Genome::load(std::path::Path::new(path))?;
//! let layout = Layout::from_genome(&genome);
//! let area = |id| &layout.params[layout.area_index(id).unwrap()];
//! let (touch, motor) = (area("touch"), area("motor"));
//! // the CPU here, so that the doctest is the same everywhere; `BackendConfig::default()` is `auto`
//! let config = BackendConfig { kind: BackendKind::Cpu, ..BackendConfig::default() };
//! let mut opened = open(&genome, &config, Readback::All, false)?;
//! let pad: Injections = (touch.first..touch.first + touch.count)
//!     .map(|neuron| Injection { neuron, potential: Potential::from_f64(1.0) })
//!     .collect();
//! let mut motor_spikes = 0;
//! for _ in 0..10 {
//!     let out = opened.backend.burst(pad.as_slice())?;
//!     motor_spikes += out.fired.iter().filter(|&&n| n >= motor.first && n < motor.first + motor.count).count();
//! }
//! assert!(motor_spikes > 0, "touch reaches the motor area");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub use neuroburst_model::{errors, genome, memory, model, progress, time};

pub mod backend;
pub mod brain;
pub mod capacity;
pub mod checkpoint;
pub mod connectome;
pub mod partition;
pub mod selftest;
pub mod workload;
