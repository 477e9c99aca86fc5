//! Feedback mode from Python (`Dedup(feedback=True)`): the command line's `-f`.
//!
//! The command line numbers paragraphs ("records") within each input file; a
//! worker call has no file, so each call names a *source* (`source=`, by default
//! `python`) and records are numbered within it across calls, in the order the
//! calls reserve them. A source named by the input's path relative to an input
//! directory, fed in file order, gives the same references as `webdedup dedup -f`
//! on that directory, so `webdedup check` can confirm them.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use webdedup_dedup::policy::file_id;

/// The source used when a call names none.
pub const DEFAULT_SOURCE: &str = "python";

#[derive(Default)]
pub struct Sources {
    inner: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    /// File id -> index into `names` and `next`.
    index: HashMap<u64, usize>,
    /// In order of first use (the order of `files.idx`).
    names: Vec<String>,
    /// The next record number of each source (records count from 1).
    next: Vec<u64>,
}

impl Sources {
    /// Reserves `records` record numbers in source `name`; returns the source's
    /// file id and the first reserved number.
    pub fn reserve(&self, name: &str, records: usize) -> Result<(u64, u64), String> {
        if name.contains(['\t', '\n', '\r']) {
            return Err(format!(
                "source {name:?}: tabs and line breaks cannot stand in files.idx"
            ));
        }
        let id = file_id(name.as_bytes());
        let mut r = self.inner.lock();
        let i = match r.index.get(&id) {
            Some(&i) if r.names[i] == name => i,
            Some(&i) => {
                return Err(format!(
                    "sources {name:?} and {:?} have the same file id {id:016x}",
                    r.names[i]
                ))
            }
            None => {
                r.names.push(name.to_owned());
                r.next.push(1);
                let i = r.names.len() - 1;
                r.index.insert(id, i);
                i
            }
        };
        let first = r.next[i];
        r.next[i] += records as u64;
        Ok((id, first))
    }

    /// The name of the source with file id `id`, if a call of this `Dedup` used it.
    pub fn name(&self, id: u64) -> Option<String> {
        let r = self.inner.lock();
        r.index.get(&id).map(|&i| r.names[i].clone())
    }

    /// Writes `DIR/files.idx` (what `webdedup check` reads) for every source used.
    pub fn write_index(&self, dir: &Path) -> Result<std::path::PathBuf, String> {
        let names = self.inner.lock().names.clone();
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        webdedup_dedup::runner::write_files_index_of(dir, names.iter().map(|n| n.as_bytes()))
            .map_err(|e| format!("{e:#}"))?;
        Ok(dir.join(webdedup_dedup::runner::FILES_INDEX))
    }
}
