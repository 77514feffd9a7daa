//! A shard's links to its peers: its Zenoh session, what it sends (its spikes, the io shard's
//! input shares and directives, sent again while a wait is overdue) and what it waits for (the
//! start, the peers' spikes and its input, the directives, the losses and rejoins). The shard's
//! burst ([`super::run`]) uses them as the exchange stage of the run loop.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::zenoh::Session;

use super::config::ClusterConfig;
use super::inbox::SharedInbox;
use super::options::ClusterError;
use super::outbox::{put, Outbox};
use super::wire::{self, DataKind, Directive, Keys};
use crate::model::{Injection, InjectionSlice};

/// Why a gather ended.
pub(super) enum Gathered {
    Ready,
    Directive(Directive),
    Lost { shards: u64, reason: String },
    Rejoin(u64),
    Behind(String),
    Interrupted,
}

/// What a gather waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// Every member's spikes of a burst.
    Spikes,
    /// The input of the next burst (from the io shard).
    Input,
}

/// While a message it waits for is overdue (a peer's spikes or its input), the shard sends its
/// own recent messages again this often (at most; a quarter of the burst timeout when that is
/// shorter). A message put while the link to a peer was still coming up (a rejoin) or was being
/// replaced reaches nobody, and Zenoh does not send it again: the peer would wait for it until
/// the timeout. Also while the shard waits for its input alone: a variant that resent only while
/// spikes were missing failed the cut-link rejoin test 4 times in 6 here; this one passed 19 of 19.
const RESEND: Duration = Duration::from_millis(100);

/// A member token that goes counts as a loss once it has stayed gone this long (at most; half
/// the burst timeout when that is shorter): the late removal of a restarted shard's old token can
/// arrive just before its new token.
const TOKEN_GRACE: Duration = Duration::from_millis(250);

/// A shard's links to the other shards.
pub(super) struct Links {
    pub session: Session,
    pub keys: Keys,
    /// What the subscribers received (the inbox), the tokens, the directives.
    pub shared: Arc<SharedInbox>,
    /// This shard, the io shard, every shard's neurons.
    pub me: usize,
    pub io: usize,
    pub ranges: Vec<Range<u32>>,
    /// The epoch the messages sent now belong to.
    pub epoch: u32,
    /// Payload bytes put on the links since the last burst's fired list (each peer's copy).
    pub bytes_out: u64,
    /// What this shard sent lately, to send again while a peer's message is overdue.
    sent: Outbox,
}

impl Links {
    pub fn new(session: Session, keys: Keys, shared: Arc<SharedInbox>, me: usize, io: usize, ranges: Vec<Range<u32>>) -> Links {
        let sent = Outbox::new(ranges.len());
        Links { session, keys, shared, me, io, ranges, epoch: 0, bytes_out: 0, sent }
    }

    /// The shard count.
    pub fn n(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_io(&self) -> bool {
        self.me == self.io
    }

    /// Every shard's bit.
    pub fn all(&self) -> u64 {
        if self.n() == 64 {
            u64::MAX
        } else {
            (1u64 << self.n()) - 1
        }
    }

    /// The start-up barrier. The io shard waits for every member token, then tells everyone to
    /// start from the latest checkpoint that all hold (its input ending at `last`, 0: never);
    /// the others wait for that directive. None: stopped while waiting.
    pub fn start(&self, cfg: &ClusterConfig, last: u64, stop: &AtomicBool) -> Result<Option<Directive>, ClusterError> {
        let timeout = cfg.startup_timeout();
        let deadline = Instant::now() + timeout;
        let all = self.all();
        let mut g = self.shared.lock();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if self.is_io() && g.alive & all == all {
                let resume = (0..self.n()).filter_map(|k| g.checkpoint_of(k)).min().unwrap_or(0);
                g.appeared = 0;
                drop(g);
                let d = Directive { from: self.me, epoch: 1, resume, members: all, last };
                tracing::info!("all {} shards are up; starting from burst {resume}", self.n());
                self.publish_directive(&d)?;
                return Ok(Some(d));
            }
            if !self.is_io() {
                if let Some(d) = g.directive.filter(|d| d.members & (1 << self.me) != 0) {
                    tracing::info!(
                        "start directive from the io shard: epoch {}, from burst {}, members {}",
                        d.epoch,
                        d.resume,
                        wire::list(d.members)
                    );
                    return Ok(Some(d));
                }
            }
            let (g2, in_time) = self.shared.wait(g, deadline.min(Instant::now() + Duration::from_millis(100)));
            g = g2;
            if !in_time && Instant::now() >= deadline {
                let what = if self.is_io() {
                    let missing = all & !g.alive;
                    let eps: Vec<&str> = wire::shards_of(missing).map(|k| cfg.endpoints[k].as_str()).collect();
                    format!(
                        "shard(s) {} did not come up within {:.0} s (endpoints {})",
                        wire::list(missing),
                        timeout.as_secs_f64(),
                        eps.join(", ")
                    )
                } else {
                    format!(
                        "no start directive from the io shard {} ({}) within {:.0} s",
                        self.io,
                        cfg.endpoints[self.io],
                        timeout.as_secs_f64()
                    )
                };
                return Err(ClusterError::Startup(what));
            }
        }
    }

    pub fn publish_directive(&self, d: &Directive) -> Result<(), ClusterError> {
        put(&self.session, &self.keys.control(), &d.encode())
    }

    /// A new epoch: what was sent before is of no use to anyone; the inbox keeps what comes
    /// from burst `c` on.
    pub fn rebase(&mut self, epoch: u32, c: u64, members: u64) {
        self.epoch = epoch;
        self.sent.clear();
        let mut g = self.shared.lock();
        g.rebase(epoch, c);
        g.appeared &= !members;
    }

    /// This shard's fired neurons of burst `b`, to the members.
    pub fn publish_spikes(&mut self, b: u64, members: u64, own: &[u32]) -> Result<(), ClusterError> {
        let (key, buf) = &mut self.sent.spikes[(b % 2) as usize];
        wire::encode_spikes(buf, self.me, self.epoch, b, own);
        self.keys.data(DataKind::Spikes, b, self.me, key);
        self.bytes_out += buf.len() as u64 * (members & !(1 << self.me)).count_ones() as u64;
        put(&self.session, key, buf)
    }

    /// The io shard: burst `t`'s injection (sorted), each member's share sent, this shard's
    /// into `mine`.
    pub fn send_inputs(&mut self, t: u64, members: u64, cols: InjectionSlice<'_>, mine: &mut Vec<Injection>) -> Result<(), ClusterError> {
        for k in 0..self.n() {
            if members & (1 << k) == 0 {
                continue;
            }
            let share = cols.within(self.ranges[k].clone());
            if k == self.me {
                mine.clear();
                mine.extend(share.iter());
            } else {
                let (key, buf) = &mut self.sent.inputs[k][(t % 2) as usize];
                wire::encode_input(buf, k, self.epoch, t, share.iter());
                self.keys.data(DataKind::Input, t, k, key);
                self.bytes_out += buf.len() as u64;
                put(&self.session, key, buf)?;
            }
        }
        Ok(())
    }

    /// Send this shard's recent messages again (see [`RESEND`]). A failed put is only logged:
    /// this is a second try, and the wait goes on.
    fn resend(&self) {
        for (key, bytes) in self.sent.all() {
            if let Err(e) = put(&self.session, key, bytes) {
                tracing::debug!("sending again: {e}");
            }
        }
    }

    /// Wait for what `want` names: the spikes of burst `b` from every member, moved out of the
    /// inbox into `parts`, or (a shard but the io shard) its input of burst `b + 1`, into `input`.
    ///
    /// A shard that wakes far past its own wake-up time was stalled itself (stopped, starved):
    /// it gives the peers one fresh timeout, in which the messages that piled up meanwhile are
    /// read (and show it whether the others went on without it), before it judges them.
    #[allow(clippy::too_many_arguments)]
    pub fn gather(
        &self,
        b: u64,
        members: u64,
        want: Want,
        (deadline, timeout): (Instant, Duration),
        stop: &AtomicBool,
        parts: &mut [Vec<u32>],
        input: &mut Vec<Injection>,
    ) -> Gathered {
        let me_bit = 1u64 << self.me;
        let io_bit = 1u64 << self.io;
        let mut deadline = deadline;
        let mut extended = false;
        let resend_every = RESEND.min(timeout / 4);
        let grace = TOKEN_GRACE.min(timeout / 2);
        let mut next_resend = Instant::now() + resend_every;
        let mut g = self.shared.lock();
        loop {
            if let Some(d) = g.directive.filter(|d| d.epoch > self.epoch) {
                if d.members & me_bit != 0 {
                    return Gathered::Directive(d);
                }
                return Gathered::Behind(format!("the io shard's directive of epoch {} leaves this shard out", d.epoch));
            }
            if self.is_io() {
                let req = g.appeared & !members & g.alive;
                if req != 0 {
                    g.appeared &= !req;
                    return Gathered::Rejoin(req);
                }
            }
            let missing = if want == Want::Spikes { g.missing(b, members) } else { 0 };
            let input_missing = want == Want::Input && !g.has_input(b + 1);
            if missing == 0 && !input_missing {
                match want {
                    Want::Spikes => g.take(b, members, parts),
                    Want::Input => g.take_input(b + 1, input),
                }
                return Gathered::Ready;
            }
            let now = Instant::now();
            let (lost, recheck) = g.gone_for(grace, now);
            let lost = lost & g.seen;
            let gone = (missing & lost) | if input_missing && lost & io_bit != 0 { io_bit } else { 0 };
            if gone != 0 {
                return Gathered::Lost { shards: gone, reason: "its member token is gone (the process ended or cannot be reached)".into() };
            }
            if stop.load(Ordering::Relaxed) {
                return Gathered::Interrupted;
            }
            if now >= next_resend && now < deadline {
                drop(g);
                self.resend();
                next_resend = Instant::now() + resend_every;
                g = self.shared.lock();
                continue;
            }
            if now >= deadline {
                // the peers fell silent: a message far ahead now says they went on without this one
                if let Some((s, at)) = g.ahead {
                    return Gathered::Behind(format!("shard {s} is at burst {at} while this shard waits for burst {b}"));
                }
                let shards = missing | if input_missing { io_bit } else { 0 };
                let what = if missing != 0 { format!("spikes of burst {b}") } else { format!("input of burst {}", b + 1) };
                return Gathered::Lost { shards, reason: format!("no {what} within {} ms (stalled or unreachable)", timeout.as_millis()) };
            }
            let wake = deadline.min(now + Duration::from_millis(100)).min(next_resend);
            let wake = recheck.map_or(wake, |r| wake.min(r));
            g = self.shared.wait(g, wake).0;
            let late = Instant::now().saturating_duration_since(wake);
            if !extended && late > (timeout / 2).max(Duration::from_millis(50)) {
                tracing::warn!(
                    "this shard was stalled for {} ms: waiting {} ms more before judging its peers",
                    late.as_millis(),
                    timeout.as_millis()
                );
                deadline = Instant::now() + timeout;
                extended = true;
            }
        }
    }
}
