//! Lines of the run's files the report could not read: `FILE:LINE: reason`, shown
//! on stderr (at most [`SHOWN_PER_FILE`] a file, the rest counted) and making the
//! exit status 1, never stopping the report.

use std::path::Path;

/// Problems shown per file; the rest are counted.
pub const SHOWN_PER_FILE: u64 = 20;

#[derive(Debug, Default)]
pub struct Problems {
    pub shown: Vec<String>,
    pub count: u64,
}

impl Problems {
    /// A problem at `line` (from 1) of `file`; `in_file` counts this file's so far.
    pub fn add(&mut self, file: &Path, line: u64, reason: &str, in_file: &mut u64) {
        self.count += 1;
        *in_file += 1;
        if *in_file <= SHOWN_PER_FILE {
            self.shown
                .push(format!("{}:{line}: {reason}", file.display()));
        } else if *in_file == SHOWN_PER_FILE + 1 {
            self.shown.push(format!(
                "{}: more problems in this file, counted, not shown",
                file.display()
            ));
        }
    }
}
