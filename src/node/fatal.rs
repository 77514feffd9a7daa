//! A thread that dies stops the node. The helper threads of the live topics (each sensor topic's
//! encoder, the publisher) run their work through [`Fatal::guard`]: a panic or an error there is
//! raised once, logged once with the thread's name, and interrupts the bursts; the run loop then
//! ends with it (`run::Io::failed`), so the node sends its stop commands and exits non-zero (a
//! managed node goes through ErrorProcessing) instead of staying up with a silent topic.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The first fatal error of a node's helper threads.
#[derive(Debug)]
pub struct Fatal {
    cause: OnceLock<String>,
    /// Set when raised: the burst thread's stop flag, so that a wait for the next burst ends.
    interrupt: Arc<AtomicBool>,
}

impl Fatal {
    /// A fatal error that, raised, sets `interrupt`.
    pub fn new(interrupt: Arc<AtomicBool>) -> Fatal {
        Fatal { cause: OnceLock::new(), interrupt }
    }

    /// `who` failed because of `cause`: the first cause is kept and logged, the bursts interrupted.
    pub fn raise(&self, who: &str, cause: &str) {
        if self.cause.set(format!("{who}: {cause}")).is_ok() {
            tracing::error!("{who} failed: {cause}: the node stops");
        }
        self.interrupt.store(true, Ordering::Relaxed);
    }

    /// The cause, once raised.
    pub fn cause(&self) -> Option<&str> {
        self.cause.get().map(String::as_str)
    }

    /// Run `work` as thread `who`'s: its panic is raised (with the panic's message) and `None`
    /// returned; the thread itself goes on (the publisher still sends the stop commands).
    pub fn guard<T>(&self, who: &str, work: impl FnOnce() -> T) -> Option<T> {
        match catch_unwind(AssertUnwindSafe(work)) {
            Ok(v) => Some(v),
            Err(panic) => {
                self.raise(who, &format!("panicked: {}", panic_message(panic.as_ref())));
                None
            }
        }
    }
}

/// The message a panic carries (`panic!("...")`, an `expect`), or a placeholder.
pub fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_raised_once_and_interrupts() {
        let stop = Arc::new(AtomicBool::new(false));
        let f = Fatal::new(stop.clone());
        assert_eq!(f.guard("encoder /scan", || 7), Some(7));
        assert!(f.cause().is_none() && !stop.load(Ordering::Relaxed));
        let r: Option<()> = f.guard("encoder /scan", || panic!("index out of bounds"));
        assert!(r.is_none() && stop.load(Ordering::Relaxed));
        assert_eq!(f.cause(), Some("encoder /scan: panicked: index out of bounds"));
        f.raise("publisher", "later");
        assert_eq!(f.cause(), Some("encoder /scan: panicked: index out of bounds"), "the first cause is kept");
    }
}
