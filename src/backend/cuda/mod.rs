//! The CUDA backend: the whole burst on one GPU, bit-identical to the CPU reference.
//!
//! - [`probe`]: is a usable GPU there (driver, device, NVRTC, our kernels compile)? Never panics.
//! - [`module`]: `kernels/*.cu`, embedded, compiled by NVRTC at start-up (PTX cached on disk).
//! - `layout`: the host's mirrors of the kernels' structs, the output's layout.
//! - [`memory`]: what a brain needs on the device (usable without a GPU, e.g. by `inspect`), the
//!   mapped pinned host buffers that carry the injection up and the motor output down, and
//!   page-locked input columns.
//! - `backend`: [`CudaBackend`], what it owns, how it is put together and the `Backend` trait.
//! - `build/`: where a brain is built: `connectome` (what a GPU gets of the connectome, its
//!   upload), `on_gpu` (a closed-form connectome built on the GPU), `state` (`GpuState`: the
//!   brain's part on the device, and the kernels' `Net`).
//! - `burst/`: where a burst is launched: `launch` (how the bursts run: the resident kernel or
//!   graphs), `staging` (a burst from the host: input, launch, read-back), `host_io` (the host's
//!   buffers), `resident` (the kernel that stays on the GPU), `graphs` (the graphs, and the work
//!   run ahead of a burst), `tiles` and `procbin` (a large brain's synapses binned), `learn`
//!   (plasticity), `snapshot` (snapshots and restores).
//! - `gpus/`: where GPUs meet: `multi` ([`MultiGpu`]: several GPUs of one host), `peers`,
//!   `exchange` (the linked resident kernels' spike exchange), `meeting`, `engine`
//!   ([`CudaShardEngine`]: a GPU shard of a brain over processes).
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
mod burst;
mod gpus;
mod layout;
pub mod memory;
pub mod module;
mod probe;

pub use backend::CudaBackend;
pub use build::on_gpu::LONGEST as GPU_BUILD_LONGEST_ROW;
pub use gpus::engine::CudaShardEngine;
pub use gpus::multi::MultiGpu;
pub use memory::{device_bytes_needed, MemoryPlan};
pub use probe::{device_count, free_memory, probe};

#[cfg(test)]
mod tests {
    /// docs/cuda.md's files table names every file of `kernels/` and `src/backend/cuda/` (by its
    /// path below it), and no file that is not there.
    #[test]
    fn the_files_table_names_every_file() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("docs/cuda.md")).unwrap();
        let table = &doc[doc.find("### Files").unwrap()..doc.find("### Kernels").unwrap()];
        let named: Vec<&str> = table.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).collect();
        let mut listed: Vec<String> = named.iter().map(|p| p.strip_prefix("src/backend/cuda/").unwrap_or(p).to_string()).collect();
        fn walk(dir: &std::path::Path, rel: &str, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let name = format!("{rel}{}", e.file_name().to_string_lossy());
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), &format!("{name}/"), out);
                } else {
                    out.push(name);
                }
            }
        }
        let mut files = vec![];
        walk(&root.join("kernels"), "kernels/", &mut files);
        walk(&root.join("src/backend/cuda"), "", &mut files);
        listed.sort();
        files.sort();
        assert_eq!(listed, files, "docs/cuda.md's files table against kernels/ and src/backend/cuda/");
    }
}
