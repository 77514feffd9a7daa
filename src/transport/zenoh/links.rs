//! Watches the session's links: a thread polls the routers and peers it is connected to, counts
//! every loss of all of them (the robot's router stopped, the network went away) and logs each
//! loss and each reconnection once. Zenoh reconnects by itself (`connect/timeout_ms = -1`); the
//! node keeps bursting meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zenoh::{Session, Wait};

/// How often the links are polled.
const POLL: Duration = Duration::from_millis(100);
/// How long without any link at start before a warning says so.
const PATIENCE: Duration = Duration::from_secs(5);

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    losses: AtomicU64,
}

pub struct LinkWatch {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LinkWatch {
    pub fn start(session: Session, connect: Vec<String>) -> LinkWatch {
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let thread = std::thread::Builder::new().name("zenoh-links".into()).spawn(move || watch(&session, &connect, &s)).ok();
        LinkWatch { shared, thread }
    }

    /// Losses of every link so far.
    pub fn losses(&self) -> u64 {
        self.shared.losses.load(Ordering::Relaxed)
    }
}

impl Drop for LinkWatch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch(session: &Session, connect: &[String], shared: &Shared) {
    let start = Instant::now();
    let mut up = false;
    let mut down_since: Option<Instant> = None;
    let mut warned = false;
    // One poll more after the stop, so that a reconnection just before it is still logged.
    loop {
        let routers = session.info().routers_zid().wait().count();
        let peers = session.info().peers_zid().wait().count();
        let now = Instant::now();
        match (up, routers + peers > 0) {
            (false, true) => {
                match down_since.take() {
                    Some(t) => tracing::info!(
                        "zenoh: connected again after {:.1} s ({routers} routers, {peers} peers); the node kept bursting",
                        (now - t).as_secs_f64()
                    ),
                    None => tracing::info!("zenoh: connected ({routers} routers, {peers} peers)"),
                }
                up = true;
            }
            (true, false) => {
                let n = shared.losses.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::warn!("zenoh: lost every router and peer link (loss {n}); reconnecting to {connect:?}, bursting on");
                down_since = Some(now);
                up = false;
            }
            (false, false) if !warned && down_since.is_none() && now - start > PATIENCE => {
                tracing::warn!("zenoh: no router or peer after {} s; still trying {connect:?}", PATIENCE.as_secs());
                warned = true;
            }
            _ => {}
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(POLL);
    }
}
