//! Choosing a backend: a pure function of what was asked, what the machine has and the brain's
//! size, so the choice is tested without a GPU.

use serde::{Deserialize, Serialize};

/// What the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// CUDA when an NVIDIA GPU is usable, else wgpu when a Vulkan, Metal or DX12 device is, for a
    /// brain large enough; otherwise the CPU.
    #[default]
    Auto,
    /// The CPU backend (the reference).
    Cpu,
    /// The CUDA backend (one GPU, or several with `backend.gpus`).
    Cuda,
    /// The wgpu backend: one GPU through Vulkan, Metal or DX12.
    Wgpu,
}

/// What probing the machine found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuProbe {
    /// A usable GPU: its name.
    Available(String),
    /// No usable GPU, and why (no driver, no device, NVRTC missing, ...).
    Unavailable(String),
}

/// What probing found for each GPU backend (a backend not probed is unavailable "not probed").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probes {
    /// An NVIDIA GPU through CUDA.
    pub cuda: GpuProbe,
    /// A GPU through wgpu.
    pub wgpu: GpuProbe,
}

/// The decision, with the reason to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The backend chosen.
    pub kind: BackendKind,
    /// Why, in one line (logged at start-up).
    pub reason: String,
}

/// Whether `auto` needs the wgpu probe: CUDA cannot take the brain, and it is large enough for a GPU.
pub fn wants_wgpu_probe(asked: BackendKind, cuda: &GpuProbe, neurons: u64, gpu_min_neurons: u64) -> bool {
    match asked {
        BackendKind::Wgpu => true,
        BackendKind::Auto => neurons >= gpu_min_neurons && matches!(cuda, GpuProbe::Unavailable(_)),
        BackendKind::Cpu | BackendKind::Cuda => false,
    }
}

/// Pick the backend. A GPU backend asked for on a machine where it is not usable is an error
/// (returned as `Err(reason)`); `Auto` takes CUDA, then wgpu, then the CPU, and says why.
pub fn choose(asked: BackendKind, probes: &Probes, neurons: u64, gpu_min_neurons: u64) -> Result<Choice, String> {
    let pick = |kind, reason: String| Ok(Choice { kind, reason });
    match (asked, &probes.cuda, &probes.wgpu) {
        (BackendKind::Cpu, _, _) => pick(BackendKind::Cpu, "the CPU backend was asked for".into()),
        (BackendKind::Cuda, GpuProbe::Available(name), _) => pick(BackendKind::Cuda, format!("the CUDA backend was asked for ({name})")),
        (BackendKind::Cuda, GpuProbe::Unavailable(why), _) => Err(format!("the CUDA backend was asked for, but {why}")),
        (BackendKind::Wgpu, _, GpuProbe::Available(name)) => pick(BackendKind::Wgpu, format!("the wgpu backend was asked for ({name})")),
        (BackendKind::Wgpu, _, GpuProbe::Unavailable(why)) => Err(format!("the wgpu backend was asked for, but {why}")),
        (BackendKind::Auto, cuda, _) if neurons < gpu_min_neurons => {
            let there = match cuda {
                GpuProbe::Available(name) => format!(" ({name} is there)"),
                GpuProbe::Unavailable(_) => String::new(),
            };
            pick(
                BackendKind::Cpu,
                format!("auto: using the CPU: the brain has {neurons} neurons, under gpu_min_neurons = {gpu_min_neurons}{there}"),
            )
        }
        (BackendKind::Auto, GpuProbe::Available(name), _) => pick(
            BackendKind::Cuda,
            format!("auto: using {name} (CUDA): the brain has {neurons} neurons (gpu_min_neurons = {gpu_min_neurons})"),
        ),
        (BackendKind::Auto, GpuProbe::Unavailable(no_cuda), GpuProbe::Available(name)) => pick(
            BackendKind::Wgpu,
            format!("auto: using {name} (wgpu), because {no_cuda}: the brain has {neurons} neurons (gpu_min_neurons = {gpu_min_neurons})"),
        ),
        (BackendKind::Auto, GpuProbe::Unavailable(no_cuda), GpuProbe::Unavailable(no_wgpu)) => {
            pick(BackendKind::Cpu, format!("auto: using the CPU because {no_cuda}, and {no_wgpu}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_and_says_why() {
        let none = GpuProbe::Unavailable("no CUDA driver (libcuda.so not found)".into());
        let no_vk = GpuProbe::Unavailable("no wgpu adapter".into());
        let gpu = GpuProbe::Available("H100".into());
        let vk = GpuProbe::Available("llvmpipe (Vulkan)".into());
        let p = |cuda: &GpuProbe, wgpu: &GpuProbe| Probes { cuda: cuda.clone(), wgpu: wgpu.clone() };
        let c = choose(BackendKind::Auto, &p(&none, &no_vk), 1_000_000, 10).unwrap();
        assert_eq!(c.kind, BackendKind::Cpu);
        assert!(c.reason.contains("libcuda") && c.reason.contains("no wgpu adapter"), "{}", c.reason);
        assert_eq!(choose(BackendKind::Auto, &p(&gpu, &vk), 5, 10).unwrap().kind, BackendKind::Cpu);
        assert_eq!(choose(BackendKind::Auto, &p(&gpu, &vk), 10, 10).unwrap().kind, BackendKind::Cuda);
        // CUDA, then wgpu, then the CPU
        let c = choose(BackendKind::Auto, &p(&none, &vk), 10, 10).unwrap();
        assert_eq!(c.kind, BackendKind::Wgpu);
        assert!(c.reason.contains("llvmpipe") && c.reason.contains("libcuda"), "{}", c.reason);
        assert_eq!(choose(BackendKind::Auto, &p(&none, &vk), 5, 10).unwrap().kind, BackendKind::Cpu);
        assert_eq!(choose(BackendKind::Cpu, &p(&gpu, &vk), 10, 0).unwrap().kind, BackendKind::Cpu);
        assert!(choose(BackendKind::Cuda, &p(&none, &vk), 10, 0).unwrap_err().contains("libcuda"));
        assert_eq!(choose(BackendKind::Wgpu, &p(&gpu, &vk), 1, 10).unwrap().kind, BackendKind::Wgpu);
        assert!(choose(BackendKind::Wgpu, &p(&gpu, &no_vk), 10, 0).unwrap_err().contains("no wgpu adapter"));
        // the wgpu probe (slow: a Vulkan instance) only where auto could pick it
        assert!(!wants_wgpu_probe(BackendKind::Auto, &gpu, 100, 10));
        assert!(!wants_wgpu_probe(BackendKind::Auto, &none, 5, 10));
        assert!(wants_wgpu_probe(BackendKind::Auto, &none, 10, 10));
        assert!(wants_wgpu_probe(BackendKind::Wgpu, &gpu, 1, 10));
    }
}
