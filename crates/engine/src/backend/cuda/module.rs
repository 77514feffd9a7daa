//! The kernels: `kernels/*.cu` after `kernels/common.cuh`, embedded in the binary as one NVRTC
//! program, compiled for the device's architecture at start-up. The PTX is cached on disk, keyed by a hash of the source and the
//! architecture, so later start-ups skip the compilation.

use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileOptions, Ptx};

/// The kernel source: the shared header, then the phases in the order they use each other.
pub const BURST_CU: &str = concat!(
    include_str!("../../../kernels/common.cuh"),
    include_str!("../../../kernels/inject.cu"),
    include_str!("../../../kernels/step.cu"),
    include_str!("../../../kernels/prestep.cu"),
    include_str!("../../../kernels/rows.cu"),
    include_str!("../../../kernels/propagate.cu"),
    include_str!("../../../kernels/procbin.cu"),
    include_str!("../../../kernels/tiles.cu"),
    include_str!("../../../kernels/learn.cu"),
    include_str!("../../../kernels/resident.cu"),
    include_str!("../../../kernels/build.cu"),
);

/// FNV-1a, 64 bits: a stable hash for the cache key.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where compiled PTX is kept: NEUROBURST_PTX_CACHE, else `$XDG_CACHE_HOME/neuroburst`, else
/// `~/.cache/neuroburst`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("NEUROBURST_PTX_CACHE") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("neuroburst"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("neuroburst"))
}

/// The two programs of the same source: the burst's (every kernel), and one whose resident
/// kernels are compiled for four blocks an SM (`RES_MINB` in resident.cu) and which is
/// compiled (or read from the cache) only when a brain that learns needs it: its resident kernels
/// double the compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The program every brain uses (`RES_MINB` 2).
    Burst,
    /// The same source with the resident kernels at four blocks an SM (brains that learn).
    FourBlocks,
}

impl Program {
    fn source(self) -> std::borrow::Cow<'static, str> {
        match self {
            Program::Burst => BURST_CU.into(),
            Program::FourBlocks => format!("#define RES_MINB 4\n{BURST_CU}").into(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Program::Burst => "burst",
            Program::FourBlocks => "four-blocks",
        }
    }
}

/// Compile (or fetch from the cache) the PTX of `program` for compute capability `major.minor`.
pub fn ptx_for(major: i32, minor: i32, program: Program) -> Result<Ptx, String> {
    let arch = format!("sm_{major}{minor}");
    let src = program.source();
    let key = format!("{}-{:016x}-{arch}.ptx", program.name(), fnv1a(src.as_bytes()));
    let cached = cache_dir().map(|d| d.join(&key));
    if let Some(path) = &cached {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.contains(".entry") {
                return Ok(Ptx::from_src(text));
            }
        }
    }
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture=compute_{major}{minor}"), "--std=c++17".into()],
        name: Some("neuroburst.cu".into()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(src.as_ref(), opts).map_err(|e| format!("NVRTC could not compile kernels/*.cu: {e}"))?;
    if let Some(path) = &cached {
        // A cache that cannot be written is no error: the next start-up compiles again.
        let _ = std::fs::create_dir_all(path.parent().unwrap_or(path));
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, ptx.to_src()).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
    Ok(ptx)
}

/// Compile the kernels for compute capability `major.minor` without a GPU (NVRTC only, e.g. to
/// check an NVRTC install or fill the cache before a robot starts): the PTX and its kernels'
/// names. Never panics: a missing NVRTC or a compile error is an error that says so.
pub fn compile(major: i32, minor: i32, program: Program) -> Result<(Ptx, Vec<String>), String> {
    // SAFETY: only tries to dlopen the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc.so) was not found: add the CUDA toolkit's lib64 (or the lib folder of \
                    PyPI's nvidia-cuda-nvrtc-cu12) to LD_LIBRARY_PATH"
            .into());
    }
    let ptx = std::panic::catch_unwind(|| ptx_for(major, minor, program))
        .map_err(|_| "NVRTC failed to load (a symbol is missing: is it CUDA 12.8 or newer?)".to_string())??;
    let names = ptx
        .to_src()
        .lines()
        .filter_map(|l| l.split_once(".entry ").map(|(_, rest)| rest.split(['(', ' ']).next().unwrap_or(rest).to_string()))
        .collect();
    Ok((ptx, names))
}

/// The loaded kernels of one variant (accumulator width, row pointer width, code width).
pub struct Kernels {
    /// The loaded module the functions below come from.
    pub module: Arc<CudaModule>,
    /// The direct propagation: every fired neuron's row, its contributions added to its targets.
    pub propagate: CudaFunction,
    /// Every neuron's step, the fired list compacted.
    pub step: CudaFunction,
    /// The early step: every neuron stepped as if nothing were injected, before the injection.
    pub prestep: CudaFunction,
    /// The sensory injection into the per-neuron input (and the burst's counters reset).
    pub inject: CudaFunction,
    /// One GPU, the early step: the kernel that stays on the GPU and runs every burst itself.
    pub resident: CudaFunction,
    /// The fired list rebuilt from the fired bits (after a restore).
    pub relist: CudaFunction,
    /// One GPU of several: gathers the fired lists of every GPU.
    pub gather: CudaFunction,
    /// Whether every part's input bound fits the accumulators.
    pub in_bound: CudaFunction,
    /// The largest of an array (the bounds).
    pub max_reduce: CudaFunction,
    /// Learning (`kernels/learn.cu`), in the order they run.
    pub learn_mark: CudaFunction,
    /// The neurons' firing histories shifted by one burst.
    pub learn_shift: CudaFunction,
    /// The fired neurons' plastic rows updated by the rule.
    pub learn_rows: CudaFunction,
    /// Associative pairs grown.
    pub learn_grow: CudaFunction,
    /// Building the connectome on the GPU (`kernels/build.cu`): row pointers, then rows.
    pub materialize_rows: CudaFunction,
    /// The rows written.
    pub materialize: CudaFunction,
    /// Synapses counted per part.
    pub part_count: CudaFunction,
    /// The largest input of one burst among a GPU's neurons, from every part's bounds.
    pub bound_fold: CudaFunction,
    /// The tiles' entry counts scanned.
    pub scan_tiles: CudaFunction,
    /// The scanned offsets written.
    pub scan_write: CudaFunction,
    /// A large brain's procedural synapses, sorted by target and summed in shared memory
    /// (`kernels/procbin.cu`); split and sum for [16-bit, 32-bit] sub-bin entries.
    /// [every draw a synapse, draws kept at random]
    pub proc_bin: [CudaFunction; 2],
    /// Split by sub-bin.
    pub proc_split: [CudaFunction; 2],
    /// Summed in shared memory.
    pub proc_sum: [CudaFunction; 2],
    /// One GPU of several: every GPU's partial sums of its neurons added.
    pub proc_fold: CudaFunction,
    /// The procedural mappings drawn row by row (`kernels/rows.cu`), after `propagate`.
    pub proc_rows: CudaFunction,
    /// A large brain's stored synapses binned by coarse target tile, split into fine tiles and
    /// summed in shared memory (`kernels/tiles.cu`), as kernels of their own.
    pub tile_bin: CudaFunction,
    /// The coarse bins split into the fine tiles' arrays.
    pub tile_split: CudaFunction,
    /// The fine tiles' sums written as the neurons' input.
    pub tile_sum: CudaFunction,
}

/// Which kernel variant a brain needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// i64 accumulators (the brain's per-burst input bound does not fit in i32).
    pub wide_acc: bool,
    /// Row offsets of 64 bits (a part of more than 2^32 synapses).
    pub row64: bool,
    /// Contribution codes of 32 bits.
    pub code32: bool,
}

impl Variant {
    /// The kernels' name suffixes: accumulator, row pointer and code widths.
    fn suffixes(self) -> (&'static str, &'static str, &'static str) {
        (if self.wide_acc { "n64" } else { "n32" }, if self.row64 { "r64" } else { "r32" }, if self.code32 { "c32" } else { "c16" })
    }

    /// The resident kernel of this variant with four blocks an SM (its program compiled on first
    /// use), for a brain that learns.
    pub fn resident_four_blocks(self, ctx: &Arc<CudaContext>) -> Result<CudaFunction, String> {
        let (n, r, c) = self.suffixes();
        let name = format!("resident_{n}_{r}_{c}");
        module(ctx, Program::FourBlocks)?.load_function(&name).map_err(|e| format!("kernel {name} (four blocks) is missing: {e}"))
    }
}

/// The module of each program on each context loaded so far (the device's primary context, kept
/// for the process): every variant is in a program's one module, and the probe, the GPU build and
/// the backend of a GPU each take their kernels from it instead of loading it again (the driver
/// parses the PTX each time).
static MODULES: std::sync::Mutex<Vec<(usize, Program, Arc<CudaModule>)>> = std::sync::Mutex::new(Vec::new());

/// The module of `program` on `ctx`, loaded once.
fn module(ctx: &Arc<CudaContext>, program: Program) -> Result<Arc<CudaModule>, String> {
    let key = ctx.cu_ctx() as usize;
    let mut loaded = MODULES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, _, m)) = loaded.iter().find(|(k, p, _)| *k == key && *p == program) {
        return Ok(m.clone());
    }
    let (major, minor) = ctx.compute_capability().map_err(|e| format!("cannot read the compute capability: {e}"))?;
    let ptx = ptx_for(major, minor, program)?;
    let t0 = std::time::Instant::now();
    let module = ctx.load_module(ptx).map_err(|e| format!("the driver could not load the compiled kernels: {e}"))?;
    tracing::debug!(device = ctx.ordinal(), load_s = t0.elapsed().as_secs_f64(), "CUDA: the kernels' module loaded");
    loaded.push((key, program, module.clone()));
    Ok(module)
}

impl Kernels {
    /// The kernels of variant `v`, from its program (compiled or read from the PTX cache).
    pub fn load(ctx: &Arc<CudaContext>, v: Variant) -> Result<Kernels, String> {
        let module = module(ctx, Program::Burst)?;
        let (n, r, c) = v.suffixes();
        let f = |name: String| module.load_function(&name).map_err(|e| format!("kernel {name} is missing: {e}"));
        Ok(Kernels {
            propagate: f(format!("propagate_{n}_{r}_{c}"))?,
            step: f(format!("step_{n}_{r}"))?,
            prestep: f(format!("prestep_{n}_{r}"))?,
            inject: f("inject".into())?,
            resident: f(format!("resident_{n}_{r}_{c}"))?,
            relist: f(format!("relist_{r}"))?,
            gather: f(format!("gather_{r}"))?,
            in_bound: f(format!("in_bound_{c}"))?,
            max_reduce: f("max_reduce".into())?,
            learn_mark: f("learn_mark".into())?,
            learn_shift: f("learn_shift".into())?,
            learn_rows: f(format!("learn_rows_{n}_{r}_{c}"))?,
            learn_grow: f(format!("learn_grow_{n}_{r}_{c}"))?,
            materialize_rows: f("materialize_rows".into())?,
            materialize: f("materialize".into())?,
            part_count: f("part_count".into())?,
            bound_fold: f("bound_fold".into())?,
            scan_tiles: f("scan_tiles".into())?,
            scan_write: f("scan_write".into())?,
            proc_bin: [f("proc_bin_n64".into())?, f("proc_bin_keep_n64".into())?],
            proc_split: [f("proc_split_n64_s16".into())?, f("proc_split_n64_s32".into())?],
            proc_sum: [f("proc_sum_n64_s16".into())?, f("proc_sum_n64_s32".into())?],
            proc_fold: f("proc_fold".into())?,
            proc_rows: f(format!("proc_rows_{n}"))?,
            tile_bin: f(format!("tile_bin_{r}_{c}"))?,
            tile_split: f("tile_split".into())?,
            tile_sum: f("tile_sum".into())?,
            module,
        })
    }
}

#[cfg(test)]
mod tests {
    /// Compiles the kernels wherever NVRTC can be loaded (no GPU needed); says so when it cannot.
    #[test]
    fn kernels_compile_under_nvrtc_when_present() {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            // libtest captures eprintln!: the real stderr, so the skip shows
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), b"skipping: NVRTC (libnvrtc.so) not found\n");
            return;
        }
        std::env::set_var("NEUROBURST_PTX_CACHE", std::env::temp_dir().join("neuroburst-ptx-test"));
        let ptx = super::ptx_for(9, 0, super::Program::Burst).unwrap_or_else(|e| panic!("{e}"));
        let src = ptx.to_src();
        for k in [
            "propagate_n32_r32_c16",
            "step_n64_r64",
            "prestep_n32_r32",
            "relist_r32",
            "inject",
            "resident_n64_r64_c32",
            "gather_r64",
            "in_bound_c32",
            "max_reduce",
            "bound_fold",
            "learn_shift",
            "learn_rows_n32_r64_c16",
            "learn_grow_n64_r32_c32",
            "proc_rows_n64",
        ] {
            assert!(src.contains(k), "kernel {k} missing from the PTX");
        }
    }
}
