//! Where a wgpu burst's time goes (`NEUROBURST_WGPU_TRACE=1`, as the CUDA backend's
//! `NEUROBURST_CUDA_TRACE`): the host's stages by its clock, and each pass's device time by
//! timestamps written around its dispatch where the device has them (wgpu's
//! `TIMESTAMP_QUERY_INSIDE_PASSES`); summed over the bursts and printed when the brain is dropped.

use std::time::Instant;

use super::buffers::TIMESTAMP_BYTES;
use super::device::WgpuDevice;

/// The host's stages of a burst.
pub(super) const STAGES: [&str; 6] =
    ["prepare (learning, draws, upload)", "encode", "submit", "propagation ahead (encode, submit)", "wait", "read"];

/// The device features the trace asks for (where the adapter has them).
pub(super) const FEATURES: wgpu::Features = wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

/// The passes, in the order of their queries.
pub(super) const PASSES: [&str; 4] = ["propagate", "inject", "step", "compact"];

/// Whether the trace is asked for.
pub(super) fn wanted() -> bool {
    std::env::var("NEUROBURST_WGPU_TRACE").is_ok_and(|v| v == "1")
}

struct Queries {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    /// Nanoseconds a tick.
    period: f64,
}

pub(super) struct WgpuTrace {
    bursts: u64,
    host: [f64; STAGES.len()],
    /// Device nanoseconds by pass, and the bursts each pass ran in.
    device: [f64; PASSES.len()],
    ran: [u64; PASSES.len()],
    queries: Option<Queries>,
    at: Instant,
}

impl WgpuTrace {
    /// A trace when `NEUROBURST_WGPU_TRACE=1`, with the passes' device times where `gpu` has
    /// timestamp queries.
    pub fn new(gpu: &WgpuDevice) -> Option<WgpuTrace> {
        if !wanted() {
            return None;
        }
        let queries = gpu.device.features().contains(FEATURES).then(|| Queries {
            set: gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("passes"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * PASSES.len() as u32,
            }),
            resolve: gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size: TIMESTAMP_BYTES,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            period: gpu.queue.get_timestamp_period() as f64,
        });
        Some(WgpuTrace {
            bursts: 0,
            host: [0.0; STAGES.len()],
            device: [0.0; PASSES.len()],
            ran: [0; PASSES.len()],
            queries,
            at: Instant::now(),
        })
    }

    /// A burst begins.
    pub fn start(&mut self) {
        self.bursts += 1;
        self.at = Instant::now();
    }

    /// Stage `i` ends now.
    pub fn mark(&mut self, i: usize) {
        let now = Instant::now();
        self.host[i] += (now - self.at).as_secs_f64();
        self.at = now;
    }

    /// Pass `i`'s start (`end` false) or end written into its query, within `pass`.
    pub fn stamp(&self, pass: &mut wgpu::ComputePass<'_>, i: usize, end: bool) {
        if let Some(q) = &self.queries {
            pass.write_timestamp(&q.set, 2 * i as u32 + end as u32);
        }
    }

    /// Record the timestamps' copy into `readback` at `at`; returns the bytes to read then.
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder, readback: &wgpu::Buffer, at: u64) -> u64 {
        let Some(q) = &self.queries else { return at };
        encoder.resolve_query_set(&q.set, 0..2 * PASSES.len() as u32, &q.resolve, 0);
        encoder.copy_buffer_to_buffer(&q.resolve, 0, readback, at, TIMESTAMP_BYTES);
        at + TIMESTAMP_BYTES
    }

    /// The timestamps read back (at their place in `bytes`) of the passes that ran.
    pub fn passes(&mut self, bytes: &[u8], ran: [bool; PASSES.len()]) {
        let Some(q) = &self.queries else { return };
        let ts: Vec<u64> = bytes.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes"))).collect();
        for (i, ran) in ran.into_iter().enumerate() {
            if ran && ts.len() >= 2 * i + 2 {
                self.device[i] += ts[2 * i + 1].saturating_sub(ts[2 * i]) as f64 * q.period;
                self.ran[i] += 1;
            }
        }
    }

    /// Mean host time a burst by stage and device time by pass.
    pub fn summary(&self) -> String {
        let n = self.bursts.max(1) as f64;
        let host: Vec<String> = STAGES.iter().zip(self.host).map(|(s, t)| format!("{s} {:.1} us", t / n * 1e6)).collect();
        let device = if self.queries.is_some() {
            let each = PASSES.iter().zip(self.device.iter().zip(self.ran));
            let each: Vec<String> =
                each.filter(|(_, (_, r))| *r > 0).map(|(p, (ns, r))| format!("{p} {:.1} us", ns / r as f64 / 1e3)).collect();
            format!("; device, by pass: {}", each.join(", "))
        } else {
            "; device: no timestamps inside passes".into()
        };
        format!("{} bursts, per burst: {}{device}", self.bursts, host.join(", "))
    }
}
