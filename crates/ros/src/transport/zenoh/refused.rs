//! Incoming links the session refused (a TLS handshake that failed: no client certificate, one of
//! another CA, an expired one), said once per reason in the node's own words.
//!
//! Zenoh's listeners report a failed handshake as a warning of their accept loop, with a hint
//! about open-file limits that does not apply, and again on every retry of the same peer. The
//! [`layer`] sees those events (whatever `RUST_LOG` says: a refused link is a security event), the
//! [`hide`] filter keeps them out of the log, and a small thread logs the first refusal of each
//! reason and counts the rest ([`refused`]). Logging happens on that thread, never inside the
//! subscriber that saw the event.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::OnceLock;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::{Context, Filter, Layer};

/// The crates whose accept loops report failed handshakes.
const LISTENERS: [&str; 3] = ["zenoh_link_commons", "zenoh_link_tls", "zenoh_link_quic"];

static REFUSED: AtomicU64 = AtomicU64::new(0);
static SAY: OnceLock<SyncSender<String>> = OnceLock::new();

/// Incoming links refused since the start.
pub fn refused() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// The message of an event, if it is an accept loop's refusal: the reason, in the peer's terms.
fn refusal(event: &Event<'_>) -> Option<String> {
    let meta = event.metadata();
    if *meta.level() > Level::WARN || !LISTENERS.iter().any(|t| meta.target().starts_with(t)) {
        return None;
    }
    let mut message = Message(String::new());
    event.record(&mut message);
    let text = message.0;
    let failed = ["acceptor failed", "Cannot accept", "Can not accept", "handshake"];
    if !failed.iter().any(|f| text.contains(f)) && !text.contains("open file limit") {
        return None;
    }
    Some(reason(&text))
}

/// The readable part of a refusal: rustls' reason (`invalid peer certificate: UnknownIssuer`,
/// `peer sent no certificates`) where there is one, else the message without Zenoh's hint.
fn reason(text: &str) -> String {
    if let Some(start) = text.find("reason: \"") {
        let rest = &text[start + 9..];
        if let Some(end) = rest.find('"') {
            return rest[..end].to_string();
        }
    }
    let text = text.split(" Hint:").next().unwrap_or(text);
    text.trim_end_matches(['.', ' ']).to_string()
}

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }
}

/// The layer that sees the listeners' warnings; add it beside the formatting layer.
pub fn layer<S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>>() -> impl Layer<S> {
    let targets = LISTENERS.iter().fold(Targets::new(), |t, l| t.with_target(*l, Level::WARN));
    Watch.with_filter(targets)
}

/// A filter for the formatting layer: everything but the listeners' refusals (logged by [`layer`]).
pub fn hide<S>() -> impl Filter<S> {
    Hide
}

struct Watch;

impl<S: Subscriber> Layer<S> for Watch {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if let Some(reason) = refusal(event) {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            // Never blocks: a full queue means the logger is behind, and the count still counts.
            let _ = SAY.get_or_init(start).try_send(reason);
        }
    }
}

struct Hide;

impl<S> Filter<S> for Hide {
    fn enabled(&self, _: &tracing::Metadata<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _: &tracing_subscriber::layer::Context<'_, S>) -> bool {
        refusal(event).is_none()
    }
}

/// The thread that says each reason once.
fn start() -> SyncSender<String> {
    let (tx, rx) = sync_channel::<String>(64);
    let spawned = std::thread::Builder::new().name("refused-links".into()).spawn(move || {
        let mut said = HashSet::new();
        for reason in rx {
            if said.insert(reason.clone()) {
                tracing::warn!("zenoh: refused an incoming link: {reason} (further refusals for this reason are counted, not logged)");
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!("zenoh: cannot start the thread that logs refused links: {e}");
    }
    tx
}

#[cfg(test)]
mod tests {
    use super::reason;

    #[test]
    fn the_reason_is_rustls_words_or_the_message_without_the_hint() {
        let quic = r#"QUIC acceptor failed: TransportError(TransportError { code: Code::crypto(2a), frame: None, reason: "invalid peer certificate: UnknownIssuer" }) Hint: increase the system open file limit."#;
        assert_eq!(reason(quic), "invalid peer certificate: UnknownIssuer");
        assert_eq!(reason("received corrupt message. Hint: increase the system open file limit."), "received corrupt message");
    }
}
