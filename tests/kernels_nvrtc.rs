//! The CUDA kernels compile under NVRTC on every run, GPU or not: NVRTC from PyPI
//! (nvidia-cuda-nvrtc-cu12, the CUDA version of cudarc's bindings) drives `neuroburst kernels`
//! for the architectures the project runs on. A kernel that does not compile fails here, not at
//! a robot's start-up.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::venv;

/// The venv's folder that holds libnvrtc.so.12.
fn nvrtc_lib(python: &Path) -> PathBuf {
    let venv = python.parent().and_then(Path::parent).expect("venv folder");
    let lib = venv.join("lib");
    std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{}: {e}", lib.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/nvidia/cuda_nvrtc/lib"))
        .find(|p| p.join("libnvrtc.so.12").exists())
        .unwrap_or_else(|| panic!("libnvrtc.so.12 not found under {}", lib.display()))
}

#[test]
fn the_kernels_compile_under_nvrtc_for_hopper_and_jetson_orin() {
    let python = venv("nvrtc", &["nvidia-cuda-nvrtc-cu12==12.8.93"]);
    let lib = nvrtc_lib(&python);
    let dir = tempfile::tempdir().unwrap();
    // H100/H200 (sm_90) and Jetson AGX Orin (sm_87)
    for arch in ["90", "87"] {
        let ptx = dir.path().join(format!("burst-{arch}.ptx"));
        let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
            .args(["kernels", "--arch", arch, "--out"])
            .arg(&ptx)
            .env("LD_LIBRARY_PATH", &lib)
            // a fresh cache: compile, do not read an earlier PTX
            .env("NEUROBURST_PTX_CACHE", dir.path().join("cache"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "sm_{arch}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
        let names: Vec<&str> = stdout.lines().nth(1).unwrap_or("").split(' ').collect();
        // every kernel the backend loads, in every variant it can pick
        let mut want = vec!["inject".to_string(), "max_reduce".to_string()];
        for n in ["n32", "n64"] {
            for r in ["r32", "r64"] {
                want.extend([format!("step_{n}_{r}"), format!("prestep_{n}_{r}")]);
                for c in ["c16", "c32"] {
                    want.extend([format!("propagate_{n}_{r}_{c}"), format!("resident_{n}_{r}_{c}")]);
                }
            }
        }
        for r in ["r32", "r64"] {
            want.extend([format!("relist_{r}"), format!("gather_{r}")]);
        }
        for c in ["c16", "c32"] {
            want.push(format!("in_bound_{c}"));
        }
        for k in &want {
            assert!(names.contains(&k.as_str()), "sm_{arch}: kernel {k} missing from {names:?}");
        }
        // the second program: every variant's resident kernel, with four blocks an SM
        let four = stdout.lines().nth(2).unwrap_or("");
        let four: Vec<&str> =
            four.strip_prefix("four blocks an SM: ").unwrap_or_else(|| panic!("sm_{arch}: {stdout}")).split(' ').collect();
        let residents: Vec<&String> = want.iter().filter(|k| k.starts_with("resident_")).collect();
        assert_eq!(four.len(), residents.len(), "sm_{arch}: {four:?}");
        for k in residents {
            assert!(four.contains(&k.as_str()), "sm_{arch}: kernel {k} missing from the four-block program: {four:?}");
        }
        let text = std::fs::read_to_string(&ptx).unwrap();
        assert!(text.contains(&format!(".target sm_{arch}")), "sm_{arch}: the PTX targets another architecture");
        assert_eq!(text.matches(".entry ").count(), names.len(), "sm_{arch}: the PTX's entries and the names printed differ");
    }
}

#[test]
fn a_bad_arch_or_no_nvrtc_gets_a_clear_error() {
    let bad = Command::new(env!("CARGO_BIN_EXE_neuroburst")).args(["kernels", "--arch", "h100"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--arch \"h100\": expected a compute capability"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neuroburst"))
        .args(["kernels", "--arch", "90"])
        // an empty folder: nothing to dlopen but the system's library paths
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    if out.status.success() {
        common::skip("the missing-NVRTC check: this machine has NVRTC on its system library path");
        return;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("NVRTC (libnvrtc.so) was not found"), "{stderr}");
}
