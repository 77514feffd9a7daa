//! The GPUs of one process meeting in the middle of a burst's propagation: where their binned
//! procedural synapses are summed together (`procbin.rs`, `Spread`), each GPU makes partial sums
//! of every neuron, and no GPU may fold its neurons' partials before every GPU has made them.
//!
//! The meeting is on the streams, not on the host: each GPU's thread launches its first half,
//! records its event, and once every GPU's thread has recorded (microseconds: they launch at
//! once, after every GPU has stepped), makes its stream wait for every other GPU's event before
//! launching its second half. No thread waits for a GPU.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};

use crate::backend::cuda::layout::dev_err;
use crate::backend::BackendError;

/// How long a waiting thread spins before it sleeps: a burst's phases take microseconds, and a
/// sleeping thread wakes tens of microseconds late.
pub(in crate::backend::cuda) const SPIN: Duration = Duration::from_millis(20);

/// Spin, then doze, until `f` holds (the other side is another thread on another core).
pub(in crate::backend::cuda) fn wait_until(f: impl Fn() -> bool) {
    let start = Instant::now();
    let mut spins = 0u32;
    while !f() {
        spins = spins.wrapping_add(1);
        if !spins.is_multiple_of(256) || start.elapsed() < SPIN {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// Shared by the GPUs of one brain.
pub(in crate::backend::cuda) struct Meeting {
    /// Each GPU's event, in shard order, recorded after its first half.
    events: Vec<CudaEvent>,
    /// Arrivals, never cleared: meeting k is complete at k times the GPUs.
    arrived: AtomicU64,
    /// A GPU will not come (its burst failed, or the brain is dropped): the others stop waiting.
    abandoned: AtomicBool,
}

impl Meeting {
    /// A meeting of the GPUs of these contexts (in shard order).
    pub(in crate::backend::cuda) fn new(ctxs: &[Arc<CudaContext>]) -> Result<Arc<Meeting>, BackendError> {
        let events = ctxs
            .iter()
            .map(|c| c.new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(dev_err("creating the GPUs' meeting events"))?;
        Ok(Arc::new(Meeting { events, arrived: AtomicU64::new(0), abandoned: AtomicBool::new(false) }))
    }

    /// The others stop waiting (and every later meeting fails).
    pub(in crate::backend::cuda) fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
    }
}

/// One GPU's seat at the meeting.
pub(in crate::backend::cuda) struct Seat {
    meeting: Arc<Meeting>,
    me: usize,
    /// Meetings this GPU has come to.
    rounds: u64,
}

impl Seat {
    pub(in crate::backend::cuda) fn new(meeting: Arc<Meeting>, me: usize) -> Seat {
        Seat { meeting, me, rounds: 0 }
    }

    /// After this GPU's first half was launched on `s` (`launched`: whether it was): once every
    /// GPU's first half is queued, `s` waits for all of them. Comes to the meeting even when the
    /// launch failed, so that the others do not wait for it.
    pub(in crate::backend::cuda) fn meet(&mut self, s: &CudaStream, launched: Result<(), BackendError>) -> Result<(), BackendError> {
        let m = &self.meeting;
        let recorded = launched.and_then(|_| m.events[self.me].record(s).map_err(dev_err("recording the meeting event")));
        if recorded.is_err() {
            m.abandon();
        }
        self.rounds += 1;
        m.arrived.fetch_add(1, Ordering::AcqRel);
        let all = self.rounds * m.events.len() as u64;
        wait_until(|| m.arrived.load(Ordering::Acquire) >= all || m.abandoned.load(Ordering::Acquire));
        recorded?;
        if m.abandoned.load(Ordering::Acquire) {
            return Err(BackendError::Device("another GPU of the brain failed its burst".into()));
        }
        for (k, e) in m.events.iter().enumerate() {
            if k != self.me {
                s.wait(e).map_err(dev_err("waiting for another GPU's partial sums"))?;
            }
        }
        Ok(())
    }

    /// This GPU will not come to the next meeting.
    pub(in crate::backend::cuda) fn abandon(&self) {
        self.meeting.abandon();
    }
}
