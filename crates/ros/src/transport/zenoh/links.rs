//! Watches the session's links: a thread polls the routers and peers it is connected to, counts
//! every loss of the links the node dialled (its `connect` endpoints: the robot's router stopped,
//! the network went away) and logs each loss and each reconnection once. Zenoh reconnects by
//! itself (`connect/timeout_ms = -1`); the node keeps bursting meanwhile. A peer that dialled the
//! node and leaves (a simulator's bridge saying goodbye) is no loss: nothing is reconnected.

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
struct LinkState {
    stop: AtomicBool,
    losses: AtomicU64,
}

pub struct LinkWatch {
    shared: Arc<LinkState>,
    thread: Option<JoinHandle<()>>,
}

impl LinkWatch {
    pub fn start(session: Session, connect: Vec<String>) -> LinkWatch {
        let shared = Arc::new(LinkState::default());
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

/// `(protocol, port)` of an endpoint or a locator (`tcp/10.0.0.1:7447#iface=eth0` -> `(tcp, 7447)`).
fn protocol_port(s: &str) -> Option<(&str, &str)> {
    let (protocol, rest) = s.split_once('/')?;
    let address = rest.split(['#', '?']).next()?;
    Some((protocol, address.rsplit_once(':')?.1))
}

/// Whether the session holds a link it dialled: one whose far end is a `connect` endpoint (an
/// incoming link's far end is the other side's ephemeral port).
fn dialled(session: &Session, connect: &[String]) -> bool {
    let ours: Vec<(&str, &str)> = connect.iter().filter_map(|e| protocol_port(e)).collect();
    session.info().links().wait().any(|l| {
        let dst = l.dst().to_string();
        protocol_port(&dst).is_some_and(|pp| ours.contains(&pp))
    })
}

fn watch(session: &Session, connect: &[String], shared: &LinkState) {
    let start = Instant::now();
    let mut up = false;
    let mut down_since: Option<Instant> = None;
    let mut warned = false;
    // One poll more after the stop, so that a reconnection just before it is still logged.
    loop {
        let routers = session.info().routers_zid().wait().count();
        let peers = session.info().peers_zid().wait().count();
        let now = Instant::now();
        match (up, routers + peers > 0 && dialled(session, connect)) {
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
                tracing::warn!("zenoh: lost every link to {connect:?} (loss {n}); reconnecting, bursting on");
                down_since = Some(now);
                up = false;
            }
            (false, false) if !warned && down_since.is_none() && now - start > PATIENCE && !connect.is_empty() => {
                tracing::warn!(
                    "zenoh: no link to {connect:?} after {} s ({routers} routers, {peers} peers); still trying",
                    PATIENCE.as_secs()
                );
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

#[cfg(test)]
mod tests {
    #[test]
    fn endpoints_and_locators_compare_by_protocol_and_port() {
        let pp = super::protocol_port;
        assert_eq!(pp("tcp/127.0.0.1:7447"), Some(("tcp", "7447")));
        assert_eq!(pp("tcp/[::1]:7447#iface=lo"), Some(("tcp", "7447")));
        assert_eq!(pp("quic/robot.local:7600"), Some(("quic", "7600")));
        assert_eq!(pp("tcp/localhost"), None);
    }
}
