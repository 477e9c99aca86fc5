//! The outcomes of the commands whose library returns statistics instead of an
//! [`Outcome`] (`dedup`, `minhash`, `check`): turned into one here, so that they
//! are shown as every other command's ([`crate::conventions::Reporting::finish`]):
//! one summary line with plurals right, and `--json` one object with `command` and
//! `status` beside the statistics' own fields.

use crate::conventions::JsonOut;
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::Path;
use webdedup_dedup::check::CheckReport;
use webdedup_dedup::options::MinHashOptions;
use webdedup_dedup::persist::PersistReport;
use webdedup_dedup::RunStats;
use webdedup_formats::summary::{count, thousands, Outcome};

/// An outcome of `command` whose figures are `stats`' fields.
fn with_figures(command: &str, stats: &impl Serialize) -> Result<Outcome> {
    let mut o = Outcome::new(command);
    let value = serde_json::to_value(stats).context("cannot write JSON")?;
    for (key, v) in value.as_object().into_iter().flatten() {
        o.figure(key, v.clone());
    }
    Ok(o)
}

/// `a` as a percentage of `b` (0 when `b` is).
pub(crate) fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `dedup`'s or (with `minhash`, its settings) `minhash`'s outcome: the
/// paragraph and URL+title parts only where they apply (MinHash judges whole
/// documents).
pub fn run_outcome(
    command: &str,
    s: &RunStats,
    persisted: &PersistReport,
    store: Option<String>,
    minhash: Option<&MinHashOptions>,
) -> Result<Outcome> {
    let mut o = with_figures(command, s)?;
    o.count("files", s.files, "file", "files");
    if s.files_skipped > 0 {
        o.note(format!(
            "{} finished by the interrupted run",
            count(s.files_skipped, "file", "files")
        ));
    }
    o.count(
        "documents_read",
        s.documents_read,
        "document read",
        "documents read",
    );
    o.note(format!(
        "{} kept ({:.2}%)",
        thousands(s.documents_kept),
        pct(s.documents_kept, s.documents_read)
    ));
    if let Some(m) = minhash {
        // The settings a report of the run shows (its `--verify` line too).
        o.figure(
            "minhash",
            serde_json::json!({
                "shingles": m.params.shingling.to_string(),
                "shingle_norm": m.params.norm.name(),
                "hashes": m.params.hashes,
                "bands": m.params.bands,
                "rows": m.params.rows,
                "verify": m.verify,
                "verify_hashes": m.params.verify_hashes,
            }),
        );
        o.note(format!(
            "{} dropped as near-duplicates",
            thousands(s.documents_dropped)
        ));
    } else {
        o.note(format!(
            "{} dropped ({}, {} with every paragraph seen)",
            thousands(s.documents_dropped),
            count(s.documents_dropped_duplicate, "duplicate", "duplicates"),
            thousands(s.documents_dropped_all_paragraphs)
        ));
    }
    if let Some(u) = s.documents_dropped_unverified.filter(|&u| u > 0) {
        // Their original is another worker's or an earlier run's document, whose
        // signature this worker does not hold (docs/minhash.md).
        o.note(format!(
            "{} unverified (original not kept by this worker)",
            thousands(u)
        ));
    }
    if s.documents_dropped_url_filter > 0 {
        o.note(format!(
            "{} URL-filtered",
            thousands(s.documents_dropped_url_filter)
        ));
    }
    if let (Some(spans), Some(bytes)) = (s.spans_removed, s.span_bytes_removed) {
        spans_removed_note(&mut o, spans, bytes);
    }
    if minhash.is_none() {
        o.note(format!(
            "{} of {} retained ({:.2}%)",
            thousands(s.paragraphs_retained),
            count(s.paragraphs_read, "paragraph", "paragraphs"),
            pct(s.paragraphs_retained, s.paragraphs_read)
        ));
        o.note(count(
            s.url_title_repeats,
            "URL+title repeat",
            "URL+title repeats",
        ));
    }
    if s.bad_records > 0 {
        o.note(count(s.bad_records, "bad record", "bad records"));
    }
    if s.keys_counted {
        o.note(format!(
            "{} ({:.2} bytes per key)",
            count(s.keys_stored, "key stored", "keys stored"),
            s.bytes_per_key
        ));
    } else {
        // Redis keeps no count: say so rather than claim none.
        o.note("keys stored not counted by this store".to_string());
    }
    if !s.issues.is_empty() {
        let list: Vec<String> = s.issues.iter().map(|(k, v)| format!("{k} {v}")).collect();
        o.note(format!("input problems: {}", list.join(", ")));
    }
    if persisted.loaded_keys > 0 {
        o.note(format!(
            "store loaded ({})",
            count(persisted.loaded_keys, "key", "keys")
        ));
    }
    if persisted.journal_records_replayed > 0 || persisted.recorded_chunks > 0 {
        o.note(format!(
            "restored ({}, {} with recorded decisions)",
            count(
                persisted.journal_records_replayed,
                "journal record",
                "journal records"
            ),
            count(persisted.recorded_chunks as u64, "chunk", "chunks")
        ));
    }
    if let Some(saved) = &persisted.saved {
        o.note(format!(
            "store saved ({}, {} bytes)",
            count(saved.keys, "key", "keys"),
            thousands(saved.bytes)
        ));
    }
    o.note(format!(
        "{:.1} MB/s, {:.3} s on {}",
        s.mb_per_second,
        s.seconds,
        count(s.threads as u64, "thread", "threads")
    ));
    if s.cpu_seconds > 0.0 {
        // The part no added thread can take (`RunStats::ordered_share`).
        o.note(format!(
            "ordered step {:.1}% of {:.2} s CPU",
            100.0 * s.ordered_share,
            s.cpu_seconds
        ));
    }
    o.figure(
        "persistence",
        serde_json::json!({
            "store_dir": store,
            "loaded_keys": persisted.loaded_keys,
            "load_seconds": persisted.load_seconds,
            "journal_records_replayed": persisted.journal_records_replayed,
            "recorded_chunks": persisted.recorded_chunks,
            "saved_keys": persisted.saved.as_ref().map(|s| s.keys),
            "snapshot_bytes": persisted.saved.as_ref().map(|s| s.bytes),
            "save_seconds": persisted.saved.as_ref().map(|s| s.seconds),
            "decision_logs_written": persisted.logs_written,
        }),
    );
    o.status = i32::from(s.had_input_problems());
    Ok(o)
}

/// Substring mode's part of a summary (`dedup --substr`, `batch run --substr`).
pub(crate) fn spans_removed_note(o: &mut Outcome, spans: u64, bytes: u64) {
    o.note(format!(
        "{} removed inside documents ({})",
        count(spans, "repeated span", "repeated spans"),
        count(bytes, "byte", "bytes")
    ));
}

/// Ends the summary line of `dedup`, `minhash` and `similar` with the command
/// that shows the run whose outputs are at `run` as a page (with its `--json`
/// file, unless that lies inside `run`): for people, not a figure. Left out when
/// the run wrote nothing `webdedup report` reads (`reportable`: side files, or
/// its summary to a file).
pub fn see_report(o: &mut Outcome, run: &Path, json: &JsonOut, reportable: bool) {
    let json_file = json.json.as_deref().filter(|_| !json.to_stdout());
    if !reportable && json_file.is_none() {
        return;
    }
    let mut paths = vec![shell_word(run)];
    paths.extend(json_file.filter(|j| !j.starts_with(run)).map(shell_word));
    o.note(format!(
        "see it: webdedup report {} -o report.html",
        paths.join(" ")
    ));
}

fn shell_word(p: &Path) -> String {
    webdedup_report::shell_word(&p.display().to_string())
}

/// `dedup --format wikilinks`: rows, not documents.
pub fn wikilinks_outcome(s: &RunStats) -> Result<Outcome> {
    let mut o = with_figures("dedup", s)?;
    o.count("rows_read", s.paragraphs_read, "row read", "rows read")
        .number(s.paragraphs_retained, "kept")
        .number(s.paragraphs_thrown_away, "dropped")
        .number(
            s.issues.get("short-row").copied().unwrap_or(0),
            "passed through (short)",
        );
    o.status = i32::from(s.had_input_problems());
    Ok(o)
}

/// `check`'s outcome: status 1 on any mismatch.
pub fn check_outcome(r: &CheckReport) -> Result<Outcome> {
    let mut o = with_figures("check", r)?;
    o.count("references", r.references, "reference", "references")
        .number(r.checked, "checked")
        .number(r.confirmed, "confirmed");
    if r.partial > 0 || r.unconfirmed > 0 {
        o.note(format!(
            "{} partial, {} unconfirmed (near mode)",
            thousands(r.partial),
            thousands(r.unconfirmed)
        ));
    }
    if r.unknown_original > 0 {
        o.note(count(
            r.unknown_original,
            "unknown original",
            "unknown originals",
        ));
    }
    o.note(count(r.mismatches.len() as u64, "mismatch", "mismatches"));
    o.status = i32::from(!r.mismatches.is_empty());
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_of_everything_is_singular_and_minhash_leaves_out_paragraphs() {
        let s = RunStats {
            threads: 1,
            files: 1,
            documents_read: 2,
            documents_kept: 1,
            documents_dropped: 1,
            documents_dropped_duplicate: 1,
            paragraphs_read: 1,
            paragraphs_retained: 1,
            url_title_repeats: 1,
            ..Default::default()
        };
        let p = PersistReport::default();
        let dedup = run_outcome("dedup", &s, &p, None, None).unwrap().summary();
        for part in [
            "1 file,",
            "(1 duplicate,",
            "1 of 1 paragraph retained",
            "1 URL+title repeat,",
            "on 1 thread",
        ] {
            assert!(dedup.contains(part), "{part}: {dedup}");
        }
        let settings = MinHashOptions {
            params: Default::default(),
            verify: Some(0.8),
        };
        let minhash = run_outcome("minhash", &s, &p, None, Some(&settings))
            .unwrap()
            .summary();
        assert!(!minhash.contains("paragraph"), "{minhash}");
        assert!(!minhash.contains("URL+title"), "{minhash}");
        let figures = run_outcome("minhash", &s, &p, None, Some(&settings))
            .unwrap()
            .figures();
        assert_eq!(figures["command"], "minhash");
        assert_eq!(figures["documents_read"], 2);
        assert_eq!(figures["minhash"]["verify"], 0.8);
        assert_eq!(figures["minhash"]["bands"], settings.params.bands);
    }

    #[test]
    fn the_summary_says_how_to_see_the_run() {
        let mut json = JsonOut::default();
        let hint = |json: &JsonOut, reportable| {
            let mut o = Outcome::new("dedup");
            see_report(&mut o, Path::new("out dir"), json, reportable);
            o.summary()
        };
        assert_eq!(hint(&json, false), "webdedup dedup: ");
        assert_eq!(
            hint(&json, true),
            "webdedup dedup: see it: webdedup report 'out dir' -o report.html"
        );
        json.json = Some("run.json".into());
        assert!(hint(&json, false).ends_with("report 'out dir' run.json -o report.html"));
        json.json = Some("out dir/run.json".into());
        assert!(hint(&json, true).ends_with("report 'out dir' -o report.html"));
        let mut o = Outcome::new("dedup");
        see_report(&mut o, Path::new("out"), &json, true);
        assert!(o.figures().as_object().unwrap().len() == 2, "not a figure");
    }
}
