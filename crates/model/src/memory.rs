//! Large arrays on huge pages. Neuron state and synapses are read at random every burst; with 4 KiB
//! pages nearly every such access also misses the TLB. Linux backs memory with 2 MiB pages when
//! asked (`madvise(MADV_HUGEPAGE)`, needed when transparent huge pages are in `madvise` mode) before
//! the pages are first touched.

/// A zero-filled vector of `n` elements whose memory is advised to use huge pages.
pub fn zeroed<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v.resize(n, T::default());
    v
}

/// Advise the kernel to back `len` bytes from `ptr` with huge pages (no effect off Linux, for small
/// regions, or when the kernel refuses).
pub fn advise(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < HUGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(4096);
        let end = (ptr as usize + len) & !4095;
        if end > start {
            // SAFETY: madvise only changes how the kernel backs this range of our own allocation;
            // MADV_HUGEPAGE never changes its contents. A failure is harmless and ignored.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ptr;
}

/// Hint the CPU to fetch the cache lines of `bytes` bytes from `ptr` (every line they touch; no
/// effect elsewhere).
#[inline(always)]
pub fn prefetch<T>(ptr: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = ptr as *const i8;
        let (mut off, end) = (0, (ptr as usize % 64) + bytes);
        let line = p.wrapping_sub(ptr as usize % 64);
        while off < end {
            // SAFETY: prefetch is a hint; it never faults, whatever the address.
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(line.wrapping_add(off))
            };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (ptr, bytes);
}

/// The process's peak resident memory in bytes (Linux: `VmHWM` of /proc/self/status), if known.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Memory the process may still take, and where that figure comes from.
#[derive(Clone, Debug)]
pub struct Available {
    /// How many bytes.
    pub bytes: u64,
    /// Where the figure comes from (said in a refusal).
    pub from: String,
}

/// What the host has available: the smaller of the system's available memory and what the
/// process's cgroup (a container, a systemd slice) still allows. NEUROBURST_HOST_MEM_LIMIT
/// (bytes) stands in for it (the tests of the refusal use it).
pub fn host_available() -> Available {
    if let Some(b) = std::env::var("NEUROBURST_HOST_MEM_LIMIT").ok().and_then(|v| v.parse().ok()) {
        return Available { bytes: b, from: "NEUROBURST_HOST_MEM_LIMIT".into() };
    }
    let mut sys = sysinfo::System::new();
    sys.refresh_memory();
    let mut a = Available { bytes: sys.available_memory(), from: "the host's available memory".into() };
    if let Some(cg) = sys.cgroup_limits() {
        if cg.free_memory < a.bytes {
            a = Available { bytes: cg.free_memory, from: "the memory its cgroup still allows".into() };
        }
    }
    a
}
