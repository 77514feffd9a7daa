//! The loop around the brain, independent of where messages come from: [`intake`] (latest message
//! per topic wins, encoded into injections), [`outputs`] (motor areas decoded into messages, the
//! per-burst activity), and drivers: [`replay`] (a bag, lock-stepped to bag time). The live ROS 2
//! node (`src/live/`) reuses intake and outputs.

pub mod intake;
pub mod outputs;
pub mod plot;
pub mod replay;
pub mod schedule;
