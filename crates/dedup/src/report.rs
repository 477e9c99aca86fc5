//! Run figures: counted per chunk, summed per run, printed as the seed's table or
//! written as JSON.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use webdedup_formats::summary::thousands;

/// Counts of one chunk (summed into [`RunStats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkStats {
    pub docs: u64,
    pub docs_kept_whole: u64,
    pub docs_partial: u64,
    pub docs_duplicate: u64,
    pub docs_emptied: u64,
    pub docs_url_filtered: u64,
    pub paras: u64,
    pub long_paras: u64,
    pub paras_kept: u64,
    pub url_title_repeats: u64,
    /// Records that are not documents (bad JSON lines...), passed through or dropped.
    pub bad_records: u64,
    /// MinHash: documents dropped without verification (their original's
    /// signature was not known to this process).
    pub docs_unverified: u64,
    /// Substring mode: repeated spans removed, and their bytes (of the input).
    pub substr_spans: u64,
    pub substr_bytes: u64,
}

impl ChunkStats {
    pub fn add(&mut self, o: &ChunkStats) {
        self.docs += o.docs;
        self.docs_kept_whole += o.docs_kept_whole;
        self.docs_partial += o.docs_partial;
        self.docs_duplicate += o.docs_duplicate;
        self.docs_emptied += o.docs_emptied;
        self.docs_url_filtered += o.docs_url_filtered;
        self.paras += o.paras;
        self.long_paras += o.long_paras;
        self.paras_kept += o.paras_kept;
        self.url_title_repeats += o.url_title_repeats;
        self.bad_records += o.bad_records;
        self.docs_unverified += o.docs_unverified;
        self.substr_spans += o.substr_spans;
        self.substr_bytes += o.substr_bytes;
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RunStats {
    pub seconds: f64,
    pub threads: usize,
    pub files: u64,
    /// Files skipped because their output was already finished (`--restore`).
    pub files_skipped: u64,
    /// The run was stopped (by a signal) before every file was finished.
    pub interrupted: bool,
    /// Files that could not be opened (no output written for them).
    pub files_unreadable: u64,
    /// Files with at least one reported input problem.
    pub files_with_issues: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub documents_read: u64,
    pub documents_kept: u64,
    pub documents_kept_whole: u64,
    pub documents_kept_partly: u64,
    pub documents_dropped: u64,
    pub documents_dropped_duplicate: u64,
    pub documents_dropped_all_paragraphs: u64,
    /// Dropped by `--url-filter` (status `U`), before any store request.
    pub documents_dropped_url_filter: u64,
    /// MinHash with `--verify`: duplicates dropped without verification, their
    /// original's signature not being known to this process (a document of
    /// another worker or of an earlier run on the same hash servers). Absent
    /// outside MinHash's verified mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents_dropped_unverified: Option<u64>,
    /// Substring mode (`--substr`): repeated spans removed inside documents and
    /// their input bytes. Absent in the other modes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spans_removed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_bytes_removed: Option<u64>,
    pub paragraphs_read: u64,
    pub paragraphs_long: u64,
    pub paragraphs_retained: u64,
    pub paragraphs_thrown_away: u64,
    pub url_title_repeats: u64,
    /// Records that are not documents (a line that is not a JSON object...):
    /// reported, and written as they are unless `--drop-bad-records`.
    pub bad_records: u64,
    /// Reported input problems by kind.
    pub issues: BTreeMap<String, u64>,
    pub keys_stored: u64,
    /// Whether `keys_stored` is a count (false on Redis, which keeps none).
    pub keys_counted: bool,
    pub store_bytes: u64,
    pub bytes_per_key: f64,
    pub mb_per_second: f64,
    /// CPU time of the run (every thread of the process), in seconds.
    pub cpu_seconds: f64,
    /// CPU time in the ordered step (store requests and decisions, one chunk at a
    /// time in input order), summed over the threads, in seconds.
    pub ordered_cpu_seconds: f64,
    /// `ordered_cpu_seconds / cpu_seconds`: the share of the work no added thread
    /// can take (by Amdahl's law, n cores give at most 1 / (s + (1 - s) / n)).
    pub ordered_share: f64,
}

impl RunStats {
    pub fn add_chunk(&mut self, c: &ChunkStats) {
        self.documents_read += c.docs;
        self.documents_kept_whole += c.docs_kept_whole;
        self.documents_kept_partly += c.docs_partial;
        self.documents_kept = self.documents_kept_whole + self.documents_kept_partly;
        self.documents_dropped_duplicate += c.docs_duplicate;
        self.documents_dropped_all_paragraphs += c.docs_emptied;
        self.documents_dropped_url_filter += c.docs_url_filtered;
        self.documents_dropped = self.documents_dropped_duplicate
            + self.documents_dropped_all_paragraphs
            + self.documents_dropped_url_filter;
        self.paragraphs_read += c.paras;
        self.paragraphs_long += c.long_paras;
        self.paragraphs_retained += c.paras_kept;
        self.paragraphs_thrown_away = self.paragraphs_read - self.paragraphs_retained;
        self.url_title_repeats += c.url_title_repeats;
        self.bad_records += c.bad_records;
        if c.docs_unverified > 0 {
            *self.documents_dropped_unverified.get_or_insert(0) += c.docs_unverified;
        }
        if c.substr_spans > 0 {
            *self.spans_removed.get_or_insert(0) += c.substr_spans;
            *self.span_bytes_removed.get_or_insert(0) += c.substr_bytes;
        }
    }

    pub fn issue_count(&self) -> u64 {
        self.issues.values().sum()
    }

    /// Whether any input was rejected or repaired (the exit status says so).
    pub fn had_input_problems(&self) -> bool {
        self.issue_count() > 0 || self.files_unreadable > 0
    }

    pub fn finish(&mut self, seconds: f64, keys: u64, store_bytes: u64) {
        self.seconds = seconds;
        self.keys_stored = keys;
        self.keys_counted = true;
        self.store_bytes = store_bytes;
        self.bytes_per_key = if keys > 0 {
            store_bytes as f64 / keys as f64
        } else {
            0.0
        };
        self.mb_per_second = if seconds > 0.0 {
            self.bytes_in as f64 / 1e6 / seconds
        } else {
            0.0
        };
    }

    /// Records the run's CPU time and its ordered step's, in seconds.
    pub fn set_cpu(&mut self, all: f64, ordered: f64) {
        self.cpu_seconds = all;
        self.ordered_cpu_seconds = ordered;
        // The two clocks count in different units (getrusage in microseconds).
        self.ordered_share = if all > 0.0 {
            (ordered / all).clamp(0.0, 1.0)
        } else {
            0.0
        };
    }

    /// The summary table printed at the end of a run.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        let n = thousands;
        let _ = writeln!(
            s,
            "Duration:                 {:.3} s ({} threads)",
            self.seconds, self.threads
        );
        let _ = writeln!(
            s,
            "Files:                    {} ({} unreadable, {} with input problems)",
            n(self.files),
            n(self.files_unreadable),
            n(self.files_with_issues)
        );
        if self.files_skipped > 0 {
            let _ = writeln!(
                s,
                "Files skipped:            {} (finished by the interrupted run)",
                n(self.files_skipped)
            );
        }
        let _ = writeln!(s, "Documents read:           {}", n(self.documents_read));
        let _ = writeln!(
            s,
            "Documents kept:           {} ({:.2}%; {} whole, {} partly)",
            n(self.documents_kept),
            pct(self.documents_kept, self.documents_read),
            n(self.documents_kept_whole),
            n(self.documents_kept_partly)
        );
        let _ = writeln!(
            s,
            "Documents dropped:        {} ({} duplicate documents, {} with every paragraph seen)",
            n(self.documents_dropped),
            n(self.documents_dropped_duplicate),
            n(self.documents_dropped_all_paragraphs)
        );
        if let Some(u) = self.documents_dropped_unverified.filter(|&u| u > 0) {
            let _ = writeln!(
                s,
                "Dropped unverified:       {} (original's signature not known to this worker)",
                n(u)
            );
        }
        if self.documents_dropped_url_filter > 0 {
            let _ = writeln!(
                s,
                "Documents URL-filtered:   {} (status U, never looked up)",
                n(self.documents_dropped_url_filter)
            );
        }
        let _ = writeln!(
            s,
            "Paragraphs retained:      {} ({:.2}%)",
            n(self.paragraphs_retained),
            pct(self.paragraphs_retained, self.paragraphs_read)
        );
        let _ = writeln!(
            s,
            "Paragraphs thrown away:   {}",
            n(self.paragraphs_thrown_away)
        );
        let _ = writeln!(s, "URL+title repeats:        {}", n(self.url_title_repeats));
        if self.bad_records > 0 {
            let _ = writeln!(
                s,
                "Bad records:              {} (not documents; see the input problems)",
                n(self.bad_records)
            );
        }
        let _ = writeln!(
            s,
            "MB in / out:              {:.1} / {:.1}",
            self.bytes_in as f64 / 1e6,
            self.bytes_out as f64 / 1e6
        );
        let _ = writeln!(
            s,
            "Throughput:               {:.1} MB/s",
            self.mb_per_second
        );
        if self.keys_counted {
            let _ = writeln!(
                s,
                "Keys stored:              {} ({:.2} bytes per key)",
                n(self.keys_stored),
                self.bytes_per_key
            );
        } else {
            let _ = writeln!(
                s,
                "Keys stored:              not counted by this store (Redis keeps no count)"
            );
        }
        if !self.issues.is_empty() {
            let list: Vec<String> = self
                .issues
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(s, "Input problems:           {}", list.join(", "));
        }
        s
    }
}
