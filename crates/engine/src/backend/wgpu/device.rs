//! The device: wgpu's instance, adapter and device, what it can hold (its limits), and its errors
//! caught instead of wgpu's default panic.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::backend::{BackendError, GpuProbe};

/// One wgpu device and its queue.
pub(super) struct WgpuDevice {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// `NVIDIA H200 (Vulkan)`, `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan)`, ...
    pub name: String,
    pub limits: wgpu::Limits,
    /// A read-back polls the device first (not on a CPU device, lavapipe: it runs on the host's
    /// cores, and the poll would take one from it).
    spin: bool,
    /// The first error the device reported (validation, out of memory, lost), if any.
    error: Arc<Mutex<Option<String>>>,
}

/// How long a read-back polls the device before it waits (and leaves the core to others).
const SPIN: Duration = Duration::from_millis(2);

/// What the backend needs of a device beyond WebGPU's defaults: 64-bit integers in shaders, and
/// buffers the shaders use that the host maps (every native backend has them).
const FEATURES: wgpu::Features = wgpu::Features::SHADER_INT64.union(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS);

/// The process's one wgpu instance: every probe and device comes from it. With a Vulkan instance
/// a brain, created and dropped again and again in one process, NVIDIA's driver (580, an H200)
/// stopped finding its device after a few ("no suitable graphics adapter"), and the wgpu tests
/// run in parallel crashed; with one, they pass in parallel there.
fn instance() -> &'static wgpu::Instance {
    static INSTANCE: OnceLock<wgpu::Instance> = OnceLock::new();
    INSTANCE.get_or_init(|| {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        // Vulkan, Metal and DX12 (`WGPU_BACKEND` picks one); not GL, whose shaders have no 64-bit integers
        desc.backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
        wgpu::Instance::new(desc)
    })
}

fn adapter() -> Result<wgpu::Adapter, String> {
    let instance = instance();
    let options = wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() };
    pollster::block_on(instance.request_adapter(&options))
        .map_err(|e| format!("no wgpu adapter (Vulkan, Metal or DX12: is a Vulkan loader and driver installed?): {e}"))
}

fn name_of(a: &wgpu::Adapter) -> String {
    let info = a.get_info();
    format!("{} ({:?})", info.name, info.backend)
}

/// Probe the machine's wgpu adapter; never panics.
pub fn probe() -> GpuProbe {
    match std::panic::catch_unwind(|| adapter().and_then(|a| usable(&a).map(|()| name_of(&a)))) {
        Ok(Ok(name)) => GpuProbe::Available(name),
        Ok(Err(why)) => GpuProbe::Unavailable(why),
        Err(_) => GpuProbe::Unavailable("the wgpu adapter's probe panicked".into()),
    }
}

fn usable(a: &wgpu::Adapter) -> Result<(), String> {
    if !a.features().contains(wgpu::Features::SHADER_INT64) {
        return Err(format!("{} has no 64-bit integers in shaders (wgpu's SHADER_INT64)", name_of(a)));
    }
    if !a.features().contains(FEATURES) {
        return Err(format!("{} has no buffers both mapped and bound (wgpu's MAPPABLE_PRIMARY_BUFFERS)", name_of(a)));
    }
    Ok(())
}

impl WgpuDevice {
    /// The machine's device, with 64-bit atomics where it has them and `acc` asks for them.
    pub fn open(acc: super::WgpuAccumulators) -> Result<WgpuDevice, BackendError> {
        let dev = |e: String| BackendError::Device(e);
        let a = adapter().map_err(dev)?;
        usable(&a).map_err(dev)?;
        let name = name_of(&a);
        let spin = a.get_info().device_type != wgpu::DeviceType::Cpu;
        let limits = a.limits();
        // 64-bit atomics where the device has them; the passes' device times where the trace is
        // asked for and the device has them
        let timestamps = if super::trace::wanted() { super::trace::FEATURES } else { wgpu::Features::empty() };
        let atomics = if acc == super::WgpuAccumulators::Best { super::buffers::ATOMIC64 } else { wgpu::Features::empty() };
        let desc = wgpu::DeviceDescriptor {
            label: Some("neuroburst"),
            required_features: FEATURES | (a.features() & (atomics | timestamps)),
            required_limits: limits.clone(),
            ..Default::default()
        };
        let (device, queue) =
            pollster::block_on(a.request_device(&desc)).map_err(|e| dev(format!("{name}: cannot open the device: {e}")))?;
        let error = Arc::new(Mutex::new(None));
        let (seen, lost) = (error.clone(), error.clone());
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut slot = seen.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| e.to_string());
        }));
        device.set_device_lost_callback(move |reason, msg| {
            let mut slot = lost.lock().unwrap_or_else(|p| p.into_inner());
            slot.get_or_insert_with(|| format!("the device was lost ({reason:?}): {msg}"));
        });
        Ok(WgpuDevice { device, queue, name, limits, spin, error })
    }

    /// The device's first error since it opened, as the backend's error.
    pub fn check(&self, doing: &str) -> Result<(), BackendError> {
        match self.error.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(e) => Err(BackendError::Device(format!("{} ({doing}): {e}", self.name))),
            None => Ok(()),
        }
    }

    /// Refuse a buffer of `bytes` the device cannot bind or hold, naming it and the limits.
    pub fn fits(&self, what: &str, bytes: u64) -> Result<(), BackendError> {
        let (bind, max) = (self.limits.max_storage_buffer_binding_size, self.limits.max_buffer_size);
        if bytes > bind.min(max) {
            return Err(BackendError::Device(format!(
                "{}: the brain's {what} take {bytes} bytes, more than one buffer the device binds \
                 (max_storage_buffer_binding_size {bind}, max_buffer_size {max})",
                self.name
            )));
        }
        Ok(())
    }

    /// Wait until the queue's work is done.
    pub fn wait(&self) -> Result<(), BackendError> {
        self.device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| BackendError::Device(format!("{}: {e}", self.name)))?;
        Ok(())
    }

    /// Map the first `bytes` bytes of `buffer` (MAP_READ) for reading, once submission `after` (or
    /// all the queue's work) is done; then [`WgpuDevice::view`] reads them.
    pub fn map(&self, buffer: &wgpu::Buffer, bytes: u64, after: Option<wgpu::SubmissionIndex>) -> Result<(), BackendError> {
        if bytes == 0 {
            return Ok(());
        }
        let status = Arc::new(Mutex::new(None));
        let s = status.clone();
        buffer.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| *s.lock().unwrap_or_else(|p| p.into_inner()) = Some(r));
        // the device polled until the map is done (a burst's read-back: the blocking wait woke up
        // tens of microseconds late, W(1M) on an H200 173-216 us a burst against 138-173), and
        // waited for after SPIN (a long burst)
        let poll = |p| self.device.poll(p).map_err(|e| BackendError::Device(format!("{}: {e}", self.name)));
        let since = Instant::now();
        while status.lock().unwrap_or_else(|p| p.into_inner()).is_none() {
            if !self.spin || since.elapsed() > SPIN {
                poll(wgpu::PollType::Wait { submission_index: after, timeout: None })?;
                break;
            }
            poll(wgpu::PollType::Poll)?;
        }
        self.check("reading back")?;
        let done = status.lock().unwrap_or_else(|p| p.into_inner()).take();
        match done {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(BackendError::Device(format!("{}: reading back: {e}", self.name))),
            None => Err(BackendError::Device(format!("{}: reading back: the map never completed", self.name))),
        }
    }

    /// `f` of the first `bytes` bytes of `buffer`, mapped by [`WgpuDevice::map`]; unmapped after.
    pub fn view<R>(&self, buffer: &wgpu::Buffer, bytes: u64, f: impl FnOnce(&[u8]) -> R) -> Result<R, BackendError> {
        if bytes == 0 {
            return Ok(f(&[]));
        }
        let r = {
            let view =
                buffer.slice(..bytes).get_mapped_range().map_err(|e| BackendError::Device(format!("{}: reading back: {e}", self.name)))?;
            f(&view)
        };
        buffer.unmap();
        Ok(r)
    }
}
