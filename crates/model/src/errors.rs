//! Errors said once. An error that names its cause in its own message (`cannot read the genome:
//! No such file or directory`) and also returns it as its `source()` would print the cause twice
//! in a chain (`{:#}`); [`chain`] prints each cause once, outermost first.

use std::error::Error;

/// The error and its causes, joined by ": ", each cause left out when the text so far already
/// says it.
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !s.is_empty() && !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out
}

/// [`chain`] of an `anyhow::Error`.
pub fn said_once(e: &anyhow::Error) -> String {
    chain(e.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("genome.yaml: cannot read the genome: {source}")]
    struct Read {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let text = io.to_string();
        let e = anyhow::Error::new(Read { source: io }).context("loading the brain");
        // anyhow's own chain says the cause twice
        assert_eq!(format!("{e:#}").matches(&text).count(), 2);
        let once = said_once(&e);
        assert_eq!(once.matches(&text).count(), 1, "{once}");
        assert!(once.starts_with("loading the brain: genome.yaml: cannot read the genome: "), "{once}");
    }

    #[test]
    fn causes_not_in_the_message_are_appended_in_order() {
        let e = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(said_once(&e), "outer: middle: inner");
    }
}
