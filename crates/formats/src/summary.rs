//! What a run did, shown one way by every command (docs/cli.md): a summary line
//! `webdedup CMD: 1,234 lines, 1 duplicate, ...` for people (numbers with thousands
//! separators, plurals right) and the same figures as a JSON object for programs
//! (`--json`). A command builds an [`Outcome`]; the command line decides what to
//! show (`-q` shows no summary) and where the JSON goes.
//!
//! ```
//! use webdedup_formats::summary::Outcome;
//! let mut o = Outcome::new("cdx dups");
//! o.count("lines", 1234, "line", "lines").count("duplicates", 1, "duplicate", "duplicates");
//! assert_eq!(o.summary(), "webdedup cdx dups: 1,234 lines, 1 duplicate");
//! assert_eq!(o.figures()["lines"], 1234);
//! ```

use serde_json::{Map, Value};

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` with its noun: `1 file`, `2 files`, `1,024 files`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// A run's exit status, summary parts and figures.
#[derive(Clone, Debug)]
pub struct Outcome {
    command: String,
    /// 0: every input read cleanly; 1: some input was reported and skipped.
    pub status: i32,
    parts: Vec<String>,
    figures: Map<String, Value>,
}

impl Outcome {
    /// An outcome of `command` (`"cdx dups"`), status 0, nothing counted yet.
    pub fn new(command: &str) -> Outcome {
        Outcome {
            command: command.to_owned(),
            status: 0,
            parts: Vec::new(),
            figures: Map::new(),
        }
    }

    /// A count shown in the summary (`1,234 lines`) and given as figure `key`.
    pub fn count(&mut self, key: &str, n: u64, one: &str, many: &str) -> &mut Self {
        self.parts.push(count(n, one, many));
        self.figures.insert(key.to_owned(), n.into());
        self
    }

    /// A figure for programs only (the JSON object), not in the summary line.
    pub fn figure(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.figures.insert(key.to_owned(), value.into());
        self
    }

    /// A number with what happened to it (`1,234 kept`), in the summary only.
    pub fn number(&mut self, n: u64, what: &str) -> &mut Self {
        self.note(format!("{} {what}", thousands(n)))
    }

    /// A part of the summary line that is not a count (`12.5 MB/s`).
    pub fn note(&mut self, text: impl Into<String>) -> &mut Self {
        self.parts.push(text.into());
        self
    }

    /// `webdedup CMD: part, part, ...`.
    pub fn summary(&self) -> String {
        format!("webdedup {}: {}", self.command, self.parts.join(", "))
    }

    /// `{"command": CMD, "status": N, figures...}`: the `--json` object.
    pub fn figures(&self) -> Value {
        let mut m = Map::new();
        m.insert("command".into(), self.command.clone().into());
        m.insert("status".into(), self.status.into());
        m.extend(self.figures.clone());
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_and_plurals() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(20511992), "20,511,992");
        assert_eq!(count(1, "file", "files"), "1 file");
        assert_eq!(count(0, "file", "files"), "0 files");
        assert_eq!(count(1500, "file", "files"), "1,500 files");
    }

    #[test]
    fn figures_carry_command_and_status() {
        let mut o = Outcome::new("warc index");
        o.count("files", 2, "file", "files")
            .note("3.0 MB/s")
            .figure("bytes", 7u64);
        o.status = 1;
        assert_eq!(o.summary(), "webdedup warc index: 2 files, 3.0 MB/s");
        let f = o.figures();
        assert_eq!(f["command"], "warc index");
        assert_eq!(f["status"], 1);
        assert_eq!(f["bytes"], 7);
    }
}
