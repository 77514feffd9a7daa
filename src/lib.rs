//! neuroburst: a spiking brain in FEAGI's burst model, on NVIDIA GPUs or the CPU.
//!
//! Layers, from the inside out:
//! - [`model`]: the burst semantics in fixed point (no I/O);
//! - [`genome`]: the brain description (own YAML format, FEAGI import);
//! - [`connectome`]: synapses built from a genome;
//! - [`backend`]: the [`backend::Backend`] trait and its implementations (CPU reference, CUDA);
//! - [`transport`]: ROS 2 topics as CDR bytes over Zenoh (rmw_zenoh, zenoh-bridge-ros2dds) or r2r;
//! - [`node`]: the live loop; [`checkpoint`]: the brain state on disk;
//! - [`cli`]: the command line.

pub mod backend;
pub mod brain;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod connectome;
pub mod genome;
pub mod memory;
pub mod model;
pub mod node;
pub mod transport;
pub mod workload;
