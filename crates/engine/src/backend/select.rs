//! Choosing a backend: a pure function of what was asked, what the machine has and the brain's
//! size, so the choice is tested without a GPU.

use serde::{Deserialize, Serialize};

/// What the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// The GPU when one is usable and the brain is large enough, otherwise the CPU.
    #[default]
    Auto,
    /// The CPU backend (the reference).
    Cpu,
    /// The CUDA backend (one GPU, or several with `backend.gpus`).
    Cuda,
}

/// What probing the machine found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuProbe {
    /// A usable GPU: its name.
    Available(String),
    /// No usable GPU, and why (no driver, no device, NVRTC missing, ...).
    Unavailable(String),
}

/// The decision, with the reason to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The backend chosen.
    pub kind: BackendKind,
    /// Why, in one line (logged at start-up).
    pub reason: String,
}

/// Pick the backend. `Cuda` asked for on a machine without a usable GPU is an error (returned as
/// `Err(reason)`); `Auto` falls back to the CPU and says why.
pub fn choose(asked: BackendKind, probe: &GpuProbe, neurons: u64, gpu_min_neurons: u64) -> Result<Choice, String> {
    match (asked, probe) {
        (BackendKind::Cpu, _) => Ok(Choice { kind: BackendKind::Cpu, reason: "the CPU backend was asked for".into() }),
        (BackendKind::Cuda, GpuProbe::Available(name)) => {
            Ok(Choice { kind: BackendKind::Cuda, reason: format!("the CUDA backend was asked for ({name})") })
        }
        (BackendKind::Cuda, GpuProbe::Unavailable(why)) => Err(format!("the CUDA backend was asked for, but {why}")),
        (BackendKind::Auto, GpuProbe::Unavailable(why)) => {
            Ok(Choice { kind: BackendKind::Cpu, reason: format!("auto: using the CPU because {why}") })
        }
        (BackendKind::Auto, GpuProbe::Available(name)) if neurons < gpu_min_neurons => Ok(Choice {
            kind: BackendKind::Cpu,
            reason: format!(
                "auto: using the CPU: the brain has {neurons} neurons, under gpu_min_neurons = {gpu_min_neurons} ({name} is there)"
            ),
        }),
        (BackendKind::Auto, GpuProbe::Available(name)) => Ok(Choice {
            kind: BackendKind::Cuda,
            reason: format!("auto: using {name}: the brain has {neurons} neurons (gpu_min_neurons = {gpu_min_neurons})"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_and_says_why() {
        let none = GpuProbe::Unavailable("no CUDA driver (libcuda.so not found)".into());
        let gpu = GpuProbe::Available("H100".into());
        let c = choose(BackendKind::Auto, &none, 1_000_000, 10).unwrap();
        assert_eq!(c.kind, BackendKind::Cpu);
        assert!(c.reason.contains("libcuda"));
        assert_eq!(choose(BackendKind::Auto, &gpu, 5, 10).unwrap().kind, BackendKind::Cpu);
        assert_eq!(choose(BackendKind::Auto, &gpu, 10, 10).unwrap().kind, BackendKind::Cuda);
        assert_eq!(choose(BackendKind::Cpu, &gpu, 10, 0).unwrap().kind, BackendKind::Cpu);
        assert!(choose(BackendKind::Cuda, &none, 10, 0).unwrap_err().contains("libcuda"));
    }
}
