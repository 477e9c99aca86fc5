//! `--json` summaries: every command writes one object; `dedup` / `minhash` /
//! `batch` their run figures (`documents_read`, `bytes_in`, ...; nested
//! `persistence`), the library commands (`similar`, `warc dedup`, ...) a
//! `command` and their counts. Shown as they are, flattened one level; a command
//! line is shown where the summary holds one (`command_line`, written by every
//! command since the report shows it, or `argv`).

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A summary file read.
#[derive(Clone, Debug)]
pub struct Summary {
    pub path: PathBuf,
    pub value: Value,
}

/// Summaries larger than this are not a run's figures.
const MAX_SUMMARY_BYTES: u64 = 16 << 20;

/// Reads the summary at `path`: a JSON object.
pub fn read(path: &Path) -> Result<Summary> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len > MAX_SUMMARY_BYTES {
        bail!(
            "{}: {len} bytes: too large for a --json summary",
            path.display()
        );
    }
    let text = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let value: Value = serde_json::from_slice(&text)
        .with_context(|| format!("{}: not a --json summary", path.display()))?;
    if !value.is_object() {
        bail!(
            "{}: not a --json summary (not a JSON object)",
            path.display()
        );
    }
    Ok(Summary {
        path: path.to_owned(),
        value,
    })
}

impl Summary {
    /// The command that wrote it: its `command` field, else `dedup/minhash` for
    /// run figures.
    pub fn command(&self) -> String {
        match self.value.get("command").and_then(Value::as_str) {
            Some(c) => c.to_owned(),
            None if self.is_run_figures() => "dedup / minhash / batch".into(),
            None => "(unknown command)".into(),
        }
    }

    /// Whether it holds `dedup`'s run figures (`RunStats`).
    pub fn is_run_figures(&self) -> bool {
        self.value.get("documents_read").is_some()
    }

    /// A whole number figure.
    pub fn count(&self, key: &str) -> Option<u64> {
        self.value.get(key).and_then(Value::as_u64)
    }

    /// The command line, where the summary records one.
    pub fn command_line(&self) -> Option<String> {
        let v = self
            .value
            .get("command_line")
            .or_else(|| self.value.get("argv"))?;
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => Some(
                a.iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), shell_word))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        }
    }

    /// The MinHash run's `--verify` (its `minhash` settings; `verify` at the top
    /// in summaries written by hand), if it records one.
    pub fn verify(&self) -> Option<f64> {
        let v = self.value.pointer("/minhash/verify");
        v.or_else(|| self.value.get("verify"))?.as_f64()
    }

    /// Its figures as (name, value) rows: scalars, nested objects as `a.b`.
    pub fn rows(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        if let Value::Object(m) = &self.value {
            for (k, v) in m {
                match v {
                    Value::Object(inner) => {
                        for (k2, v2) in inner {
                            rows.push((format!("{k}.{k2}"), shown(v2)));
                        }
                    }
                    v => rows.push((k.clone(), shown(v))),
                }
            }
        }
        rows
    }
}

/// An argument as the shell takes it back: quoted when it holds more than plain
/// characters.
pub fn shell_word(s: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_./-+=:,@%".contains(&b);
    if !s.is_empty() && s.bytes().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_and_command_lines() {
        let (_t, p) = crate::temp_file(
            "run.json",
            r#"{"documents_read":3,"persistence":{"store_dir":null},"argv":["webdedup","dedup","-i","x y"],"minhash":{"verify":0.7}}"#,
        );
        let s = read(&p).unwrap();
        assert!(s.is_run_figures());
        assert_eq!(s.count("documents_read"), Some(3));
        assert_eq!(s.command_line().as_deref(), Some("webdedup dedup -i 'x y'"));
        assert_eq!(s.verify(), Some(0.7));
        assert!(s
            .rows()
            .contains(&("persistence.store_dir".into(), "-".into())));
        std::fs::write(&p, "[1]").unwrap();
        assert!(format!("{:#}", read(&p).unwrap_err()).contains("not a JSON object"));
        std::fs::write(&p, "{").unwrap();
        assert!(format!("{:#}", read(&p).unwrap_err()).contains("not a --json summary"));
    }
}
