//! neuroburst's model: FEAGI's burst semantics in fixed point, and the genomes that describe a
//! brain. Nothing here knows of ROS, Zenoh, bags or GPUs.
//!
//! - [`model`]: cortical areas as 3-D neuron grids ([`model::Layout`]), a neuron's parameters and
//!   state, one burst's step in fixed point ([`model::Potential`], saturating arithmetic);
//! - [`genome`]: the brain description: neuroburst's own YAML, FEAGI 2.x genomes in and out, the
//!   morphologies and mappings between areas;
//! - [`time`]: rates and seconds as durations, bounded (no hostile value can panic a thread);
//! - [`memory`]: memory checked before it is spent (what the host has available; huge pages);
//! - [`progress`]: progress of long work; [`errors`]: errors said once.
//!
//! The engine (`neuroburst-engine`) builds a connectome from a genome and runs it.

#![warn(missing_docs)]

pub mod errors;
pub mod genome;
pub mod memory;
pub mod model;
pub mod progress;
pub mod time;
