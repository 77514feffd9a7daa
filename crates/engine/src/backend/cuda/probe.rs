//! Is there a usable GPU? Checked step by step so that each failure has a clear reason; never
//! panics (cudarc's dynamic loading panics when a library or symbol is missing: caught here).

use crate::backend::GpuProbe;

/// Oldest driver API the bindings (CUDA 12.8) are used with.
const MIN_DRIVER: i32 = 12000;

fn describe_panic(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// Probe GPU `device`: `Available(description)` or `Unavailable(reason)`.
pub fn probe(device: usize) -> GpuProbe {
    match std::panic::catch_unwind(|| probe_inner(device)) {
        Ok(Ok(name)) => GpuProbe::Available(name),
        Ok(Err(why)) => GpuProbe::Unavailable(why),
        Err(p) => GpuProbe::Unavailable(format!("the CUDA libraries failed to load: {}", describe_panic(p))),
    }
}

/// How many GPUs the driver sees (0 when there is no usable driver); never panics.
pub fn device_count() -> usize {
    std::panic::catch_unwind(|| {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return 0;
        }
        if cudarc::driver::result::init().is_err() {
            return 0;
        }
        cudarc::driver::result::device::get_count().map_or(0, |c| c.max(0) as usize)
    })
    .unwrap_or(0)
}

/// Free memory of GPU `device` in bytes (None without a usable GPU); never panics.
pub fn free_memory(device: usize) -> Option<u64> {
    std::panic::catch_unwind(|| {
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return None;
        }
        let ctx = cudarc::driver::CudaContext::new(device).ok()?;
        ctx.mem_get_info().ok().map(|(free, _)| free as u64)
    })
    .ok()
    .flatten()
}

fn probe_inner(device: usize) -> Result<String, String> {
    use cudarc::driver::{result, sys, CudaContext};
    // SAFETY: only tries to dlopen the library.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so not found)".into());
    }
    result::init().map_err(|e| format!("the CUDA driver did not initialise: {e}"))?;
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result().map_err(|e| format!("cannot read the CUDA driver version: {e}"))?;
    if version < MIN_DRIVER {
        return Err(format!(
            "the CUDA driver is too old ({}.{}, at least {}.{} is needed)",
            version / 1000,
            version % 1000 / 10,
            MIN_DRIVER / 1000,
            MIN_DRIVER % 1000 / 10
        ));
    }
    let count = result::device::get_count().map_err(|e| format!("cannot count CUDA devices: {e}"))?;
    if count <= 0 {
        return Err("the CUDA driver found no GPU".into());
    }
    if device >= count as usize {
        return Err(format!("there is no GPU {device} (the driver found {count})"));
    }
    // SAFETY: only tries to dlopen the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("NVRTC (libnvrtc.so) was not found: add the CUDA toolkit's lib64 to LD_LIBRARY_PATH".into());
    }
    let ctx = CudaContext::new(device).map_err(|e| format!("cannot create a context on GPU {device}: {e}"))?;
    let name = ctx.name().map_err(|e| e.to_string())?;
    let (major, minor) = ctx.compute_capability().map_err(|e| e.to_string())?;
    if major < 6 {
        return Err(format!("{name} has compute capability {major}.{minor}; 6.0 or newer is needed"));
    }
    let total = ctx.total_mem().map_err(|e| e.to_string())?;
    super::module::Kernels::load(&ctx, super::module::Variant { wide_acc: false, row64: false, code32: false })?;
    Ok(format!(
        "{name} ({:.1} GiB, sm_{major}{minor}, driver {}.{})",
        total as f64 / (1u64 << 30) as f64,
        version / 1000,
        version % 1000 / 10
    ))
}
