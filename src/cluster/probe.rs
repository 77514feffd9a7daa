//! The bare cost of a cluster's link: messages of one size sent back and forth between shard 0 and
//! shard 1 over the sessions the shards themselves open ([`session_config`]: same endpoints, same
//! TLS and access control, same put options), nothing else on the link. `neuroburst bench-cluster`
//! sets it beside the exchange a burst measured, for the bytes that burst sent.

use std::time::{Duration, Instant};

use ::zenoh::sample::Locality;
use ::zenoh::Wait;

use super::options::{session_config, zerr, ClusterError};
use super::outbox::put;
use super::ClusterConfig;

/// How long shard 0 waits for an answer before sending again (the link may not be up yet), and
/// how long either side waits in all before it gives up.
const RESEND: Duration = Duration::from_millis(200);
const GIVE_UP: Duration = Duration::from_secs(60);

/// Run this process's side of the probe: shard 0 sends `warmup + count` messages of `bytes`
/// bytes (at least 8: a sequence number), each after the answer to the last, and returns the
/// round trips of the last `count` in microseconds; shard 1 answers each with the same bytes
/// until shard 0 says it is done, and returns nothing.
pub fn round_trips(cluster: &ClusterConfig, index: usize, bytes: usize, warmup: u64, count: u64) -> Result<Vec<f64>, ClusterError> {
    cluster.validate(Some(index))?;
    if index > 1 {
        return Err(ClusterError::Startup(format!("the link probe runs between shards 0 and 1, not {index}")));
    }
    let session = ::zenoh::open(session_config(cluster, index, bytes as u64 + (1 << 20))?).wait().map_err(zerr("opening the session"))?;
    let (ping, pong) = (format!("neuroburst/{}/probe/ping", cluster.name), format!("neuroburst/{}/probe/pong", cluster.name));
    let (listen, answer) = if index == 0 { (&pong, &ping) } else { (&ping, &pong) };
    let sub = session.declare_subscriber(listen.as_str()).allowed_origin(Locality::Remote).wait().map_err(zerr("probe subscriber"))?;
    let recv = |d: Duration| sub.recv_timeout(d).map_err(|e| ClusterError::Zenoh(format!("probe: {e}")));
    let mut rtts = Vec::with_capacity(count as usize);
    if index == 1 {
        let mut last = Instant::now();
        loop {
            match recv(RESEND)? {
                Some(s) => {
                    let b = s.payload().to_bytes();
                    if b.is_empty() {
                        break;
                    }
                    put(&session, answer, &b)?;
                    last = Instant::now();
                }
                None if last.elapsed() > GIVE_UP => return Err(ClusterError::Startup("the link probe: shard 0 went quiet".into())),
                None => {}
            }
        }
    } else {
        let mut msg = vec![0u8; bytes.max(8)];
        for seq in 0..warmup + count {
            msg[..8].copy_from_slice(&seq.to_le_bytes());
            let start = Instant::now();
            put(&session, answer, &msg)?;
            loop {
                match recv(RESEND)? {
                    Some(s) if s.payload().to_bytes().get(..8) == Some(&msg[..8]) => break,
                    Some(_) => {}
                    None if start.elapsed() > GIVE_UP => {
                        return Err(ClusterError::Startup(format!("the link probe: no answer from shard 1 ({})", cluster.endpoints[1])))
                    }
                    // not up yet, or lost before the link was: again
                    None => put(&session, answer, &msg)?,
                }
            }
            if seq >= warmup {
                rtts.push(start.elapsed().as_secs_f64() * 1e6);
            }
        }
        put(&session, answer, &[])?;
    }
    let _ = session.close().wait();
    Ok(rtts)
}
