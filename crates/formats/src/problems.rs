//! Input problems as every command reports them: counted, and printed as one line
//! each, `webdedup: FILE:LINE: reason` (the position may be a row or an offset),
//! with control characters escaped.

use std::fmt;
use std::path::Path;

/// Counts and prints input problems (`webdedup: FILE:LINE: reason` on stderr).
#[derive(Debug, Default)]
pub struct Problems {
    count: std::cell::Cell<u64>,
    /// The first messages (for tests and summaries).
    messages: std::cell::RefCell<Vec<String>>,
    /// Count without printing (second passes over the same input).
    pub quiet: bool,
}

impl Problems {
    pub fn new(quiet: bool) -> Problems {
        Problems {
            quiet,
            ..Default::default()
        }
    }

    pub fn quiet() -> Problems {
        Problems::new(true)
    }

    pub fn count(&self) -> u64 {
        self.count.get()
    }

    /// Adds the counts and messages of `other` (a per-file collector) to `self`.
    pub fn absorb(&self, other: Problems) {
        self.count.set(self.count.get() + other.count.get());
        let mut m = self.messages.borrow_mut();
        for msg in other.messages.into_inner() {
            if m.len() < 1000 {
                m.push(msg);
            }
        }
    }

    /// The first 1000 messages, as printed.
    pub fn messages(&self) -> Vec<String> {
        self.messages.borrow().clone()
    }

    pub fn report(&self, file: &Path, line: Option<u64>, reason: impl fmt::Display) {
        self.report_at(file, "", line, reason)
    }

    /// [`report`](Self::report) at a position that is not a line: `at` is what
    /// names it (`row ` in Parquet, `offset ` in WET), as `webdedup dedup` says.
    pub fn report_at(&self, file: &Path, at: &str, line: Option<u64>, reason: impl fmt::Display) {
        self.count.set(self.count.get() + 1);
        let msg = match line {
            Some(l) => format!("{}:{at}{l}: {reason}", file.display()),
            None => format!("{}: {reason}", file.display()),
        };
        if !self.quiet {
            // `msg` names an input file and may quote input: never raw control bytes.
            eprintln!("webdedup: {}", webdedup_text::shown::escape_controls(&msg));
        }
        let mut m = self.messages.borrow_mut();
        if m.len() < 1000 {
            m.push(msg);
        }
    }
}
