//! The page's sections, each only where the runs have its data. Every figure
//! is written with `data-run`, `data-figure`, `data-source` (`dd`, `summary`,
//! `pairs`, `dropped`, `files`) and its exact `data-value`, so a program (the
//! browser test) reads the same numbers a person sees.

use crate::analyze::RunData;
use crate::hist::{trimmed, SIMILARITY_BINS};
use crate::html::{escape, table, Section};
use crate::similar::SimilarKind;
use crate::svg::{bar_chart, Marker};
use crate::tally::{Groups, Tally};
use std::fmt::Write as _;
use webdedup_formats::summary::thousands;

/// A table cell holding figure `name` of run `run`.
pub fn figure_cell(run: &str, name: &str, value: u64, source: &str) -> String {
    format!(
        "<td data-run=\"{}\" data-figure=\"{}\" data-source=\"{source}\" data-value=\"{value}\">{}</td>",
        escape(run),
        escape(name),
        thousands(value)
    )
}

fn percent(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// `12.3 MB` (decimal units, as the summaries).
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn card(value: &str, what: &str) -> String {
    format!(
        "<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>",
        escape(value),
        escape(what)
    )
}

/// The sections of one run; `prefix` makes their ids unique among several runs.
pub fn run_sections(d: &RunData, prefix: &str, top: usize, has_sources: bool) -> Vec<Section> {
    let title = |t: &str| {
        if prefix.is_empty() {
            t.to_owned()
        } else {
            format!("{}: {t}", d.label)
        }
    };
    let mut out = vec![Section {
        id: format!("{prefix}totals"),
        title: title("Totals"),
        body: totals(d),
        priority: 0,
    }];
    if d.dd_files > 0 && d.crawls.by.len() > 1 {
        let rows = group_rows(d, &d.crawls, usize::MAX, true);
        out.push(Section {
            id: format!("{prefix}crawls"),
            title: title("By crawl (input directory)"),
            body: table(&group_head("crawl", true), &rows),
            priority: 1,
        });
    }
    if let Some(s) = charts(d) {
        out.push(Section {
            id: format!("{prefix}charts"),
            title: title("Similarity"),
            body: s,
            priority: 1,
        });
    }
    if d.dd_files > 0 && d.languages.by.keys().any(|k| k != "(not said)") {
        out.push(Section {
            id: format!("{prefix}languages"),
            title: title("By language"),
            body: "<p class=\"note\">The language a directory of the path names (<code>de/</code>, <code>lang=de</code>), else the first language tag among the URL's path segments (<code>/7.4/de/text/</code>).</p>".to_owned()
                + &table(&group_head("language", false), &group_rows(d, &d.languages, top, false)),
            priority: 2,
        });
    }
    if d.dd_files > 0 {
        out.push(Section {
            id: format!("{prefix}domains"),
            title: title("By domain"),
            body: format!(
                "<p class=\"note\">The {} domains with most documents (hosts of the <code>.dd</code> URLs, without <code>www.</code>).</p>",
                top.min(d.domains.by.len())
            ) + &table(&group_head("domain", false), &group_rows(d, &d.domains, top, false)),
            priority: 2,
        });
    }
    if !d.feedback.repeats.is_empty() {
        out.push(Section {
            id: format!("{prefix}repeats"),
            title: title("Most repeated paragraphs"),
            body: repeats(d, top),
            priority: 2,
        });
    }
    if !d.samples.is_empty() {
        out.push(Section {
            id: format!("{prefix}examples"),
            title: title("MinHash drops beside their originals"),
            body: crate::examples::minhash_html(&d.samples, &d.texts, has_sources),
            priority: 3,
        });
    }
    if !d.feedback.samples.is_empty() {
        out.push(Section {
            id: format!("{prefix}paragraph-examples"),
            title: title("Dropped paragraphs beside their originals"),
            body: crate::feedback::examples_html(&d.feedback, has_sources),
            priority: 3,
        });
    }
    if !d.summaries.is_empty() {
        out.push(Section {
            id: format!("{prefix}settings"),
            title: title("Settings and command lines"),
            body: settings(d),
            priority: 1,
        });
    }
    out
}

/// The figures of a `warc dedup` summary that make a web archive's totals (the
/// rest are shown with the settings).
const WARC_DEDUP_FIGURES: [&str; 8] = [
    "records",
    "responses",
    "revisits_written",
    "duplicates_kept",
    "revisits_retargeted",
    "revisits_unresolved",
    "bytes_in",
    "bytes_out",
];

fn totals(d: &RunData) -> String {
    let run = &d.label;
    let summary = d.run_summary();
    let from_summary = |k: &str| summary.and_then(|s| s.count(k));
    let mut s = String::new();
    let (read, kept, dropped) = if d.dd_files > 0 {
        (
            d.total.documents_read,
            d.total.documents_kept(),
            d.total.documents_dropped(),
        )
    } else {
        (
            from_summary("documents_read").unwrap_or(0),
            from_summary("documents_kept").unwrap_or(0),
            from_summary("documents_dropped").unwrap_or(0),
        )
    };
    s.push_str("<div class=\"cards\">");
    if d.dd_files > 0 || summary.is_some() {
        s.push_str(&card(&thousands(read), "documents read"));
        s.push_str(&card(
            &format!("{:.1}%", percent(kept, read)),
            "documents kept",
        ));
        s.push_str(&card(
            &format!("{:.1}%", percent(dropped, read)),
            "documents removed",
        ));
    }
    if let (Some(i), Some(o)) = (from_summary("bytes_in"), from_summary("bytes_out")) {
        s.push_str(&card(
            &format!("{} → {}", mb(i), mb(o)),
            "bytes before → after",
        ));
    }
    if let (Some(r), Some(k)) = (
        from_summary("paragraphs_read"),
        from_summary("paragraphs_retained"),
    ) {
        s.push_str(&card(
            &format!("{:.1}%", percent(r - k.min(r), r)),
            "paragraphs removed",
        ));
    }
    let warc = d.warc_summary();
    if let Some(w) = warc {
        let (responses, revisits) = (
            w.count("responses").unwrap_or(0),
            w.count("revisits_written").unwrap_or(0),
        );
        s.push_str(&card(
            &thousands(w.count("records").unwrap_or(0)),
            "WARC records read",
        ));
        s.push_str(&card(
            &format!("{:.1}%", percent(revisits, responses)),
            "responses replaced by revisit records",
        ));
        if let (Some(i), Some(o)) = (w.count("bytes_in"), w.count("bytes_out")) {
            s.push_str(&card(
                &format!("{} → {}", mb(i), mb(o)),
                "archive bytes before → after",
            ));
        }
    }
    s.push_str("</div>\n");
    let mut rows = Vec::new();
    let mut row = |what: &str, name: &str, value: u64, source: &str| {
        rows.push(format!(
            "<td>{}</td>{}<td class=\"text\">{}</td>",
            escape(what),
            figure_cell(run, name, value, source),
            source_note(source)
        ));
    };
    if d.dd_files > 0 {
        for (name, value) in d.total.figures() {
            row(&name.replace('_', " "), name, value, "dd");
        }
    }
    if let Some(sm) = summary {
        let mut keys: Vec<&str> = Vec::new();
        if d.dd_files == 0 {
            keys.extend(Tally::default().figures().iter().map(|(k, _)| *k));
        }
        keys.extend([
            "paragraphs_read",
            "paragraphs_retained",
            "paragraphs_thrown_away",
            "url_title_repeats",
            "bytes_in",
            "bytes_out",
            "keys_stored",
            "store_bytes",
            "documents_dropped_unverified",
        ]);
        for k in keys {
            if let Some(v) = sm.count(k) {
                row(&k.replace('_', " "), k, v, "summary");
            }
        }
    }
    if let Some(w) = warc {
        for k in WARC_DEDUP_FIGURES {
            if let Some(v) = w.count(k) {
                row(&k.replace('_', " "), k, v, "summary");
            }
        }
    }
    if !d.output_bytes.is_empty() {
        row(
            "output bytes on disk",
            "output_bytes_on_disk",
            d.output_bytes.values().sum(),
            "files",
        );
    }
    if d.pairs_files > 0 {
        row(
            "MinHash pairs (.pairs lines)",
            "minhash_pairs",
            d.pairs.similarity.total() + d.pairs.unknown,
            "pairs",
        );
    }
    if !d.feedback.files.is_empty() {
        row(
            "feedback references (.dropped)",
            "feedback_references",
            d.feedback.references,
            "dropped",
        );
    }
    if rows.is_empty() {
        s.push_str("<p class=\"note\">No <code>.dd</code> lists and no <code>--json</code> run summary: run <code>dedup</code> / <code>minhash</code> with <code>-d</code> and <code>--json FILE</code> (<code>warc dedup</code> with <code>--json FILE</code>) for these figures.</p>");
    } else {
        s.push_str(&table(&["figure", "value", "from"], &rows));
    }
    s
}

/// Paragraph texts are cut to this many characters in the table.
const REPEAT_CHARS: usize = 300;

/// The `top` paragraphs dropped most often, with where each was first seen.
fn repeats(d: &RunData, top: usize) -> String {
    let fb = &d.feedback;
    let shown = fb.repeats.top(top);
    let mut s = format!(
        "<p class=\"note\">The {} paragraphs dropped most often, counted per original (the paragraph every copy refers to) in the <code>.dropped</code> files of feedback mode (<code>-f</code>); a paragraph whose original is not known (<code>0:0</code>) is counted by its text. Counts are exact up to {} distinct paragraphs; beyond, a count marked ≤ is at most that (Space-Saving).</p>",
        shown.len(),
        thousands(crate::feedback::MAX_REPEATS as u64)
    );
    let rows: Vec<String> = shown
        .iter()
        .map(|r| {
            let text = fb.texts.get(&r.first).map_or(String::new(), |t| {
                let mut cut: String = t.chars().take(REPEAT_CHARS).collect();
                if cut.len() < t.len() {
                    cut.push('…');
                }
                cut
            });
            let first = &fb.files[r.first.0];
            format!(
                "<td data-run=\"{}\" data-figure=\"paragraph_drops\" data-source=\"dropped\" data-value=\"{}\" data-original=\"{}\" data-exact=\"{}\">{}{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\"><code>{}:{}</code></td>",
                escape(&d.label),
                r.count,
                escape(&r.original),
                r.error == 0,
                if r.error == 0 { "" } else { "≤ " },
                thousands(r.count),
                escape(&text),
                escape(&fb.first_seen(&r.original)),
                escape(&first.rel),
                r.first.1
            )
        })
        .collect();
    s.push_str(&table(
        &[
            "copies dropped",
            "paragraph (its first dropped copy)",
            "first seen",
            "first dropped at",
        ],
        &rows,
    ));
    s
}

fn source_note(source: &str) -> &'static str {
    match source {
        "dd" => "counted in the <code>.dd</code> lists",
        "summary" => "the run's <code>--json</code> summary",
        "pairs" => "the <code>.pairs</code> files",
        "dropped" => "the <code>.dropped</code> files",
        _ => "the output files",
    }
}

/// The head of a table of groups (`first` names them), with the outputs' bytes
/// for crawls.
fn group_head(first: &str, with_bytes: bool) -> Vec<&str> {
    let mut h = vec![
        first,
        "documents",
        "kept whole",
        "kept partly",
        "removed",
        "removed %",
        "",
    ];
    if with_bytes {
        h.push("output bytes");
    }
    h
}

fn group_rows(d: &RunData, g: &Groups, top: usize, with_bytes: bool) -> Vec<String> {
    let (mut shown, rest) = g.top(top);
    if with_bytes {
        // Crawls in their own order (their names sort by date), not by size.
        shown.sort_by(|a, b| a.0.cmp(b.0));
    }
    let mut rows: Vec<String> = shown
        .iter()
        .map(|(k, t)| group_row(d, k, t, with_bytes))
        .collect();
    if let Some((n, t)) = rest {
        rows.push(group_row(d, &format!("({n} more)"), &t, false));
    }
    rows
}

fn group_row(d: &RunData, key: &str, t: &Tally, with_bytes: bool) -> String {
    let removed = percent(t.documents_dropped(), t.documents_read);
    let mut r = format!(
        "<td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{removed:.1}%</td><td class=\"text\"><span class=\"share\" style=\"width:{}px\"></span></td>",
        escape(key),
        thousands(t.documents_read),
        thousands(t.documents_kept_whole),
        thousands(t.documents_kept_partly),
        thousands(t.documents_dropped()),
        (removed * 0.8).round()
    );
    if with_bytes {
        let _ = write!(
            r,
            "<td>{}</td>",
            thousands(d.output_bytes.get(key).copied().unwrap_or(0))
        );
    }
    r
}

fn charts(d: &RunData) -> Option<String> {
    let mut s = String::new();
    if d.pairs_files > 0 {
        let verify = d.summaries.iter().find_map(|s| s.verify());
        let marker = verify.map(|v| Marker {
            at_bin: v * SIMILARITY_BINS as f64,
            label: format!("--verify {v}"),
        });
        let _ = write!(
            s,
            "<h3>MinHash: estimated Jaccard similarity of each drop to its original</h3><p class=\"note\">{} pairs{}; {}</p>",
            thousands(d.pairs.similarity.total()),
            if d.pairs.unknown > 0 { format!(", {} without an estimate (<code>-</code>: unverified)", thousands(d.pairs.unknown)) } else { String::new() },
            if verify.is_some() { "the dashed line is the run's <code>--verify</code>." } else { "the run's <code>--verify</code> is not in its summary (default 0.8): drops below it are LSH matches of <code>--verify 0</code>." }
        );
        s.push_str(&bar_chart(
            "minhash-similarity",
            &d.pairs.similarity,
            "Jaccard estimate",
            marker.as_ref(),
        ));
    }
    for (path, st) in &d.similar {
        let name = path.display().to_string();
        let _ = write!(
            s,
            "<h3>SimHash ({}): <code>{}</code></h3><p class=\"note\">{} lines{}</p>",
            st.kind.name(),
            escape(&name),
            thousands(st.lines),
            if st.kind == SimilarKind::Clusters {
                format!(", {} clusters", thousands(st.cluster_count))
            } else {
                String::new()
            }
        );
        s.push_str(&bar_chart(
            "simhash-distance",
            &trimmed(&st.distances, 4),
            "Hamming distance (bits)",
            None,
        ));
        if st.kind == SimilarKind::Clusters {
            s.push_str(&bar_chart(
                "cluster-size",
                &trimmed(&st.clusters, 3),
                "cluster size (documents)",
                None,
            ));
        }
    }
    (!s.is_empty()).then_some(s)
}

fn settings(d: &RunData) -> String {
    let mut s = String::new();
    for sm in &d.summaries {
        let _ = write!(
            s,
            "<h3>{} <span class=\"muted\">(<code>{}</code>)</span></h3>",
            escape(&sm.command()),
            escape(&sm.path.display().to_string())
        );
        match sm.command_line() {
            Some(cl) => {
                let _ = write!(s, "<pre data-command-line>{}</pre>", escape(&cl));
            }
            None => s.push_str("<p class=\"note\">This summary holds no command line.</p>"),
        }
        let rows: Vec<String> = sm
            .rows()
            .iter()
            .map(|(k, v)| {
                format!(
                    "<td>{}</td><td class=\"text\">{}</td>",
                    escape(k),
                    escape(v)
                )
            })
            .collect();
        s.push_str(&table(&["field", "value"], &rows));
    }
    s
}

/// The overview of several runs (crawl after crawl on one `--store`): their
/// documents and the store's keys and bytes per key after each.
pub fn runs_overview(runs: &[RunData]) -> Section {
    let rows: Vec<String> = runs
        .iter()
        .map(|d| {
            let sm = d.run_summary();
            let (read, kept, dropped) = if d.dd_files > 0 {
                (d.total.documents_read, d.total.documents_kept(), d.total.documents_dropped())
            } else {
                let c = |k| sm.and_then(|s| s.count(k)).unwrap_or(0);
                (c("documents_read"), c("documents_kept"), c("documents_dropped"))
            };
            let keys = sm.and_then(|s| s.count("keys_stored"));
            let per_key = sm
                .and_then(|s| s.value.get("bytes_per_key"))
                .and_then(serde_json::Value::as_f64);
            format!(
                "<td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{}</td>",
                escape(&d.label),
                thousands(read),
                thousands(kept),
                thousands(dropped),
                percent(dropped, read),
                keys.map_or("-".into(), thousands),
                per_key.map_or("-".into(), |b| format!("{b:.2}"))
            )
        })
        .collect();
    Section {
        id: "runs".into(),
        title: "Runs".into(),
        body: table(
            &[
                "run",
                "documents",
                "kept",
                "removed",
                "removed %",
                "keys stored",
                "bytes per key",
            ],
            &rows,
        ),
        priority: 0,
    }
}
