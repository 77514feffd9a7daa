//! neuroburst: a spiking brain in FEAGI's burst model, on NVIDIA GPUs or the CPU.
//!
//! Layers, from the inside out:
//! - [`model`]: the burst semantics in fixed point (no I/O);
//! - [`genome`]: the brain description (own YAML format, FEAGI genomes in and out);
//! - [`connectome`]: synapses built from a genome;
//! - [`backend`]: the [`backend::Backend`] trait and its implementations (CPU reference, CUDA);
//! - [`ros`]: ROS 2 messages as CDR bytes (no ROS install), type hashes, `.msg` definitions;
//! - [`encode`] / [`decode`]: sensor messages -> injections, motor firing -> messages;
//! - [`bag`]: rosbag2 bags (MCAP, sqlite3) read and MCAP written;
//! - [`run`]: the run loop every way of running a brain shares: pacing, intake, outputs;
//! - [`replay`]: the bag replay (`neuroburst replay`);
//! - [`transport`]: ROS 2 topics as CDR bytes over Zenoh (rmw_zenoh, zenoh-bridge-ros2dds) or r2r;
//! - [`node`]: the live ROS 2 node loop (`neuroburst node`); [`checkpoint`]: the brain state on disk;
//! - [`bench`]: the benchmarks (`bench`; `bench-loop`: a robot over Zenoh loopback and the live
//!   node; `bench-cluster`);
//! - [`cluster`]: one brain sharded over processes or hosts, exchanging spikes over Zenoh;
//! - [`cli`]: the command line;
//! - [`time`]: rates and seconds as durations, bounded (no hostile value can panic a thread);
//! - beside them: [`brain`] (a genome's layout and connectome, ready to run), [`workload`] (the
//!   benchmark brain W(N, K, rho)), [`partition`] (neuron ranges of shards), [`capacity`] and
//!   [`memory`] (memory checked before it is spent; huge pages), [`config`] (the node's YAML
//!   configuration), [`selftest`] (the parity check), [`view`] (the live Foxglove view),
//!   [`progress`] (progress of long work), [`errors`] (errors said once).

pub mod backend;
pub mod bag;
pub mod bench;
pub mod brain;
pub mod capacity;
pub mod checkpoint;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod connectome;
pub mod decode;
pub mod encode;
pub mod errors;
pub mod genome;
pub mod memory;
pub mod model;
pub mod node;
pub mod partition;
pub mod progress;
pub mod replay;
pub mod ros;
pub mod run;
pub mod selftest;
pub mod time;
pub mod transport;
pub mod view;
pub mod workload;
