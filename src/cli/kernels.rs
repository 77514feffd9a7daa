//! `neuroburst kernels`: compile the CUDA kernels with NVRTC, no GPU needed.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use crate::backend::cuda::module::{self, Program};

#[derive(Args, Debug)]
pub struct KernelsArgs {
    /// Compute capability to compile for: 90 (H100, H200), 89, 80, ... (also `sm_90` or `9.0`).
    #[arg(long, default_value = "90")]
    pub arch: String,
    /// Also write the burst program's PTX to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `90`, `sm_90`, `compute_90` or `9.0` -> (9, 0).
fn parse_arch(s: &str) -> Option<(i32, i32)> {
    let t = s.trim().trim_start_matches("sm_").trim_start_matches("compute_");
    if let Some((a, b)) = t.split_once('.') {
        return Some((a.parse().ok()?, b.parse().ok()?));
    }
    if t.len() < 2 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (a, b) = t.split_at(t.len() - 1);
    Some((a.parse().ok()?, b.parse().ok()?))
}

pub fn main(a: KernelsArgs) -> anyhow::Result<()> {
    super::init(&Default::default());
    let (major, minor) =
        parse_arch(&a.arch).with_context(|| format!("--arch {:?}: expected a compute capability such as 90, sm_90 or 9.0", a.arch))?;
    let t0 = Instant::now();
    let (ptx, names) = module::compile(major, minor, Program::Burst).map_err(anyhow::Error::msg)?;
    let (_, four) = module::compile(major, minor, Program::FourBlocks).map_err(anyhow::Error::msg)?;
    let cache = module::cache_dir().map_or("no cache folder".into(), |d| d.display().to_string());
    println!(
        "kernels/*.cu for sm_{major}{minor}: {} kernels, and the resident kernels of four blocks an SM (for brains that learn), {:.1} s (compiled, or read from the cache in {cache})",
        names.len(),
        t0.elapsed().as_secs_f64()
    );
    println!("{}", names.join(" "));
    let resident: Vec<&str> = four.iter().map(String::as_str).filter(|k| k.starts_with("resident_")).collect();
    println!("four blocks an SM: {}", resident.join(" "));
    if let Some(out) = &a.out {
        std::fs::write(out, ptx.to_src()).with_context(|| format!("{}: cannot write the PTX", out.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_arch;

    #[test]
    fn arches_parse_in_every_spelling_and_bad_ones_are_refused() {
        for s in ["90", "sm_90", "compute_90", "9.0"] {
            assert_eq!(parse_arch(s), Some((9, 0)), "{s}");
        }
        assert_eq!(parse_arch("100"), Some((10, 0)));
        assert_eq!(parse_arch("8.9"), Some((8, 9)));
        for s in ["", "9", "sm_", "h100", "9.x"] {
            assert_eq!(parse_arch(s), None, "{s}");
        }
    }
}
