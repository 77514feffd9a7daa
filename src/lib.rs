//! neuroburst: a spiking brain in FEAGI's burst model, on NVIDIA GPUs or the CPU, in closed loop
//! with a ROS 2 robot. This crate is the application; the layers below it are crates of their own
//! (docs/architecture.md), re-exported here under their module names:
//! - `neuroburst-model` ([`model`], [`genome`], [`time`], [`memory`], [`progress`], [`errors`]):
//!   the burst semantics in fixed point and the genomes;
//! - `neuroburst-engine` ([`brain`], [`connectome`], [`backend`], [`checkpoint`], [`workload`],
//!   [`partition`], [`capacity`], [`selftest`]): connectomes built and run on the CPU or GPUs;
//! - `neuroburst-ros` ([`ros`], [`bag`], [`transport`], [`encode`], [`decode`]): ROS 2 on the wire.
//!
//! Its own modules:
//! - [`run`]: the run loop every way of running a brain shares: pacing, intake, outputs;
//! - [`node`]: the live ROS 2 node (`neuroburst node`); [`replay`]: the bag replay;
//! - [`cluster`]: one brain sharded over processes or hosts, exchanging spikes over Zenoh;
//! - [`bench`]: the benchmarks (`bench`, `bench-loop`, `bench-cluster`);
//! - [`view`]: the live Foxglove view; [`config`]: the node's YAML configuration;
//! - [`cli`]: the command line.

pub use neuroburst_engine::{backend, brain, capacity, checkpoint, connectome, partition, selftest, workload};
pub use neuroburst_model::{errors, genome, memory, model, progress, time};
pub use neuroburst_ros::{bag, decode, encode, ros, transport};

pub mod bench;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod node;
pub mod replay;
pub mod run;
pub mod view;
