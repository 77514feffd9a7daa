//! neuroburst: a spiking brain in FEAGI's burst model, on NVIDIA GPUs or the CPU.
//!
//! Layers, from the inside out:
//! - [`model`]: the burst semantics in fixed point (no I/O);
//! - [`genome`]: the brain description (own YAML format, FEAGI import);
//! - [`connectome`]: synapses built from a genome;
//! - [`backend`]: the [`backend::Backend`] trait and its implementations (CPU reference, CUDA);
//! - [`cli`]: the command line.

pub mod backend;
pub mod bag;
pub mod brain;
pub mod cli;
pub mod config;
pub mod connectome;
pub mod decode;
pub mod encode;
pub mod genome;
pub mod model;
pub mod node;
pub mod ros;
pub mod workload;
