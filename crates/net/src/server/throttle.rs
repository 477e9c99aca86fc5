//! Warnings about single connections, throttled: a client reconnecting in a loop
//! (a KNOT client with the wrong map does thousands of times a second) must not
//! flood the log. At most [`LINES`] such lines per [`WINDOW`]; the rest are
//! counted and summed up in one line (the metrics count every one of them).

use parking_lot::Mutex;
use std::time::{Duration, Instant};

pub(crate) const WINDOW: Duration = Duration::from_secs(10);
pub(crate) const LINES: u32 = 10;

#[derive(Default)]
pub(crate) struct Throttle {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    window: Option<Instant>,
    shown: u32,
    hidden: u64,
}

impl Throttle {
    /// Logs a warning unless [`LINES`] were logged in this window already.
    pub fn warn(&self, line: std::fmt::Arguments) {
        let mut s = self.state.lock();
        Self::roll(&mut s);
        if s.shown < LINES {
            s.shown += 1;
            drop(s);
            tracing::warn!("{line}");
        } else {
            s.hidden += 1;
        }
    }

    /// Sums up what was not shown once its window is over (called now and then).
    pub fn flush(&self) {
        Self::roll(&mut self.state.lock());
    }

    fn roll(s: &mut State) {
        let now = Instant::now();
        if s.window.is_some_and(|w| now.duration_since(w) < WINDOW) {
            return;
        }
        if s.hidden > 0 {
            tracing::warn!(
                "... and {} more connection warnings in {} s, not shown",
                s.hidden,
                WINDOW.as_secs()
            );
        }
        *s = State {
            window: Some(now),
            shown: 0,
            hidden: 0,
        };
    }

    #[cfg(test)]
    fn counts(&self) -> (u32, u64) {
        let s = self.state.lock();
        (s.shown, s.hidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_the_lines_of_a_window_warnings_are_counted() {
        let t = Throttle::default();
        for i in 0..100 {
            t.warn(format_args!("connection {i}"));
        }
        assert_eq!(t.counts(), (LINES, 100 - LINES as u64));
    }
}
