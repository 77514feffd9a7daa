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

pub use neuroburst_model::{errors, genome, memory, model, progress, time};

pub mod backend;
pub mod brain;
pub mod capacity;
pub mod checkpoint;
pub mod connectome;
pub mod partition;
pub mod selftest;
pub mod workload;
