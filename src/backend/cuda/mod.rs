//! The CUDA backend: the whole burst on one GPU, bit-identical to the CPU reference.
//!
//! - [`probe`]: is a usable GPU there (driver, device, NVRTC, our kernels compile)? Never panics.
//! - [`module`]: `kernels/*.cu`, embedded, compiled by NVRTC at start-up (PTX cached on disk).
//! - `layout`: the host's mirrors of the kernels' structs, the output's layout.
//! - [`memory`]: what a brain needs on the device (usable without a GPU, e.g. by `inspect`), the
//!   mapped pinned host buffers that carry the injection up and the motor output down, and
//!   page-locked input columns.
//! - `backend`: [`CudaBackend`], what it owns and how it is built: `gpu_state` (the brain's part
//!   on the device), `host_io` (the host's side of a burst), `launch` (how the bursts run: the
//!   resident kernel or graphs); `staging` (a burst from the
//!   host: input, launch, read-back), `resident` (one GPU: the kernel that stays on the GPU),
//!   `graphs` (binned or row-drawn procedural brains, a GPU without cooperative launch, GPU shards
//!   fed by the host), `state` (snapshots and restores), `peers` (one GPU of several), `exchange`
//!   (the linked resident kernels' spike exchange), `meeting` (the GPUs of one process meeting
//!   between the halves of a propagation whose binned synapses they sum together), `learn` (plasticity: the device buffers and
//!   launches of `kernels/learn.cu`).
//! - [`multi`], [`engine`]: several GPUs of one host; a GPU shard of a brain over processes.
//!
//! Every GPU runs its bursts in the resident kernel (no API call per burst: the host writes a
//! command into mapped memory), one GPU alone or each of several with its share, exchanging the
//! fired ids over NVLink itself (`exchange.rs`); the brains the resident kernel cannot run take
//! CUDA graphs. The phases (`kernels/`): `propagate` spreads the last burst's
//! spikes over (spike, synapse) pairs with integer atomics (exact, order-independent sums), ahead
//! of the injection; `inject` adds the burst's sensory injection; `step` runs every neuron,
//! compacts the fired list on the device and writes the read-back neurons straight into mapped
//! pinned host memory (on one GPU, the early step: every neuron stepped before the injection, the
//! injected ones again after it, `fix`). Every output word carries a tag of its burst, so the GPU
//! needs no system-scope fences. Only the injection and the read-back list cross PCIe
//! (docs/cuda.md).

mod backend;
mod build;
mod device_connectome;
mod engine;
mod exchange;
mod gpu_state;
mod graphs;
mod host_io;
mod launch;
mod layout;
mod learn;
mod meeting;
pub mod memory;
pub mod module;
mod multi;
mod peers;
mod probe;
mod procbin;
mod resident;
mod staging;
mod state;
mod tiles;

pub use backend::CudaBackend;
pub use build::LONGEST as GPU_BUILD_LONGEST_ROW;
pub use engine::CudaShardEngine;
pub use memory::{device_bytes_needed, MemoryPlan};
pub use multi::MultiGpu;
pub use probe::{device_count, free_memory, probe};

#[cfg(test)]
mod tests {
    /// docs/cuda.md's files table names every file of `kernels/` and `src/backend/cuda/`, and no
    /// file that is not there.
    #[test]
    fn the_files_table_names_every_file() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("docs/cuda.md")).unwrap();
        let table = &doc[doc.find("### Files").unwrap()..doc.find("### Kernels").unwrap()];
        let named: Vec<&str> = table.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).collect();
        let name = |p: &str| p.rsplit('/').next().unwrap().to_string();
        let mut listed: Vec<String> = named.iter().map(|p| name(p)).collect();
        let mut files = vec![];
        for dir in ["kernels", "src/backend/cuda"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                files.push(e.unwrap().file_name().to_string_lossy().into_owned());
            }
        }
        listed.sort();
        files.sort();
        assert_eq!(listed, files, "docs/cuda.md's files table against kernels/ and src/backend/cuda/");
        for p in named.iter().filter(|p| p.contains('/')) {
            assert!(root.join(p).is_file(), "docs/cuda.md names {p}, which is not there");
        }
    }
}
