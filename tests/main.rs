//! The integration tests, one binary: each file of `tests/` is a module of it (`common` the
//! helpers they share), so that the test command links the crate and its dependencies (zenoh,
//! foxglove, rusqlite, ...) into one test program instead of one per file. Run one file's tests
//! with its module as the filter: `cargo test --profile ci --test integration ros2_rcl::`.

mod common;

mod architecture;
mod bad_input;
mod bag_bad_input;
mod checkpoint;
mod cuda_parity;
mod encoders_decoders;
mod encoders_rosbags;
mod feagi_import;
mod feagi_v3;
mod fuzz_regressions;
mod hostile;
mod kernels_nvrtc;
mod multi_machine;
mod node_failures;
mod node_services;
mod node_zenoh;
mod package;
mod plasticity;
mod procedural;
mod properties;
mod r2r_types;
mod reflex;
mod remote_brain;
mod replay_bags;
mod ros2_bridge;
mod ros2_rcl;
mod ros_fuzz;
mod ros_wire;
mod secure_links;
mod sharding;
mod sim;
mod standalone;
mod streamed;
mod view;
mod wgpu;
mod worked_examples;
