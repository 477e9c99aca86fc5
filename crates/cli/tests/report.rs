//! `webdedup report` opened in a real browser (Debian's chromium, headless): on
//! the shipped JSON Lines sample, after `dedup` (feedback mode), `minhash` and
//! `similar --clusters`, the figures the page shows (its `data-figure` cells and
//! chart bars, read from the DOM chromium builds) equal the runs' own `--json`;
//! nothing on the page is loaded from the network; screenshots at a desktop and
//! a phone width are written as PNGs; sampled MinHash drops and feedback
//! paragraphs are shown beside their originals, the changed words marked; the
//! most repeated paragraphs are counted as the `.dropped` files say; the
//! `--verify` line and the runs' command lines are those of their summaries. Without chromium the test fails, saying
//! how to install it (`scripts/deps.sh chromium`).

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// Runs chromium headless on `page` with `args`; returns its stdout and stderr.
fn chromium(profile: &Path, page: &Path, args: &[&str]) -> (String, String) {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            // Any request that leaves the page fails instead of reaching a network.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run chromium ({e}): install it with `scripts/deps.sh chromium`")
        });
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The attributes of every `<tag ...>` opening tag of `dom`, in order.
fn tags(dom: &str, tag: &str) -> Vec<BTreeMap<String, String>> {
    let open = format!("<{tag} ");
    let mut all = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find(&open) {
        let after = &rest[at + open.len()..];
        let end = after.find('>').expect("a tag ends");
        let mut attrs = BTreeMap::new();
        let mut s = &after[..end];
        while let Some(eq) = s.find("=\"") {
            let name = s[..eq].trim().to_owned();
            let v = &s[eq + 2..];
            let close = v.find('"').expect("a quoted value ends");
            attrs.insert(name, v[..close].to_owned());
            s = &v[close + 1..];
        }
        all.push(attrs);
        rest = &after[end..];
    }
    all
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn png_width(path: &Path) -> u32 {
    let png = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(png.len() > 2000, "{}: {} bytes", path.display(), png.len());
    assert_eq!(
        &png[..8],
        b"\x89PNG\r\n\x1a\n",
        "{}: not a PNG",
        path.display()
    );
    u32::from_be_bytes(png[16..20].try_into().unwrap())
}

/// `webdedup COMMAND -i INPUT -o OUTPUT -q --json JSON EXTRA...`, which must
/// succeed; returns its `--json`.
fn run_json(command: &str, input: &Path, output: &Path, json: &Path, extra: &[&str]) -> Value {
    let mut args = command_args(command, input, output, &["--json", s(json)]);
    args.extend_from_slice(extra);
    ok(&webdedup(&args));
    self::json(json)
}

/// `webdedup report INPUTS... -o PAGE EXTRA...`.
fn report(inputs: &[&Path], page: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["report"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["-o", s(page)]);
    args.extend_from_slice(extra);
    webdedup(&args)
}

/// Feedback references of a run's `.dropped` files: (dropped, original) each.
fn feedback_references(run: &Path) -> Vec<(String, String)> {
    let mut refs = Vec::new();
    for (rel, bytes) in tree(run) {
        if !rel.ends_with(".dropped") {
            continue;
        }
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some(r) = line
                .strip_prefix("<t>")
                .and_then(|l| l.strip_suffix("</f>"))
            {
                let (d, o) = r.split_once('\t').expect("DROPPED TAB ORIGINAL");
                refs.push((d.to_owned(), o.to_owned()));
            }
        }
    }
    refs
}

#[test]
fn the_report_of_the_sample_in_a_real_browser() {
    let has_chromium = Command::new("chromium").arg("--version").output();
    assert!(
        has_chromium.is_ok_and(|o| o.status.success()),
        "chromium is not installed: the report's browser test needs it; install it with `scripts/deps.sh chromium`"
    );
    let t = tempfile::tempdir().unwrap();
    let (exact, mh) = (t.path().join("exact"), t.path().join("mh"));
    let exact_json = t.path().join("exact.json");
    let sample = jsonl_sample_dir();
    let exact_figures = run_json("dedup", &sample, &exact, &exact_json, &["-d", "-f"]);
    std::fs::create_dir_all(&mh).unwrap();
    let mh_json = mh.join("run.json");
    let mh_figures = run_json("minhash", &sample, &mh, &mh_json, &["-d"]);
    let clusters = t.path().join("clusters.tsv");
    let similar_json = t.path().join("similar.json");
    let similar = run_json(
        "similar",
        &sample,
        &clusters,
        &similar_json,
        &["--clusters", "-k", "6"],
    );

    let page = t.path().join("report.html");
    let report_json = t.path().join("report.json");
    let o = report(
        &[&exact, &exact_json, &mh, &clusters],
        &page,
        &["--json", s(&report_json), "--source", s(&sample)],
    );
    ok(&o);
    assert_eq!(json(&report_json)["runs"], 2);

    let profile = t.path().join("chromium-profile");
    let (dom, log) = chromium(&profile, &page, &["--dump-dom"]);
    assert!(
        dom.contains("webdedup report"),
        "no page in the DOM:\n{dom}"
    );
    assert!(!log.contains("CONSOLE"), "console messages:\n{log}");

    // Every figure on the page that comes from a run's .dd lists equals its --json.
    let runs = [(s(&exact), &exact_figures), (s(&mh), &mh_figures)];
    let cells = tags(&dom, "td");
    for (label, figures) in &runs {
        let mine: Vec<_> = cells
            .iter()
            .filter(|c| c.get("data-run").map(String::as_str) == Some(label))
            .collect();
        let from_dd: Vec<_> = mine.iter().filter(|c| c["data-source"] == "dd").collect();
        assert!(
            from_dd.len() >= 9,
            "{label}: {} figures from .dd",
            from_dd.len()
        );
        for c in mine
            .iter()
            .filter(|c| matches!(c["data-source"].as_str(), "dd" | "summary"))
        {
            let name = &c["data-figure"];
            assert_eq!(
                c["data-value"].parse::<u64>().ok(),
                figures[name].as_u64(),
                "{label}: {name} on the page and in --json"
            );
        }
    }
    let figure = |run: &str, name: &str| {
        cells
            .iter()
            .find(|c| {
                c.get("data-run").map(String::as_str) == Some(run)
                    && c.get("data-figure").map(String::as_str) == Some(name)
            })
            .unwrap_or_else(|| panic!("{run}: no {name} on the page"))["data-value"]
            .parse::<u64>()
            .unwrap()
    };
    // One .pairs line per document MinHash dropped.
    assert_eq!(
        Some(figure(runs[1].0, "minhash_pairs")),
        mh_figures["documents_dropped"].as_u64()
    );
    // The charts: MinHash similarity over every pair; SimHash cluster members (the
    // documents `similar` clustered under a leader) by their distance.
    let sum = |chart_bars: &[BTreeMap<String, String>]| -> u64 {
        chart_bars
            .iter()
            .map(|b| b["data-count"].parse::<u64>().unwrap())
            .sum()
    };
    let charts = tags(&dom, "svg");
    let names: Vec<&str> = charts.iter().map(|c| c["data-chart"].as_str()).collect();
    assert_eq!(
        names,
        ["minhash-similarity", "simhash-distance", "cluster-size"]
    );
    // The bars of chart `i` (charts and their bars are in DOM order).
    let split = |i: usize| -> Vec<BTreeMap<String, String>> {
        let mut rest = dom.as_str();
        for _ in 0..i {
            rest = &rest[rest.find("</svg>").unwrap() + "</svg>".len()..];
        }
        tags(&rest[..rest.find("</svg>").unwrap()], "rect")
    };
    assert_eq!(
        Some(sum(&split(0))),
        mh_figures["documents_dropped"].as_u64()
    );
    assert!(similar["near_duplicates"].as_u64().unwrap() > 0);
    assert_eq!(Some(sum(&split(1))), similar["near_duplicates"].as_u64());

    // The MinHash chart's dashed line is the run's --verify.
    let verify = mh_figures["minhash"]["verify"].as_f64().unwrap();
    assert!(
        dom.contains(&format!(">--verify {verify}</text>")),
        "no --verify line"
    );

    // Drops beside their originals: MinHash's (the drop's text found in the
    // inputs, its original's in the kept outputs) and feedback's (the dropped
    // paragraph in its .dropped file, its original in the inputs by files.idx),
    // the changes counted and the similarity given.
    let refs = feedback_references(&exact);
    let examples: Vec<_> = tags(&dom, "div")
        .into_iter()
        .filter(|d| d.get("class").map(String::as_str) == Some("example"))
        .collect();
    let (paragraphs, documents): (Vec<_>, Vec<_>) = examples
        .iter()
        .partition(|e| refs.contains(&(e["data-doc"].clone(), e["data-original"].clone())));
    assert_eq!(
        (documents.len(), paragraphs.len()),
        (12, 12),
        "the default samples of drops"
    );
    assert_eq!(dom.matches("data-added=").count(), examples.len());
    assert!(dom.contains("<ins>") && dom.contains("<del>"));
    for e in &examples {
        let similarity: f64 = e["data-similarity"].parse().unwrap();
        assert!((0.0..=1.0).contains(&similarity), "{e:?}");
    }
    // Exact mode: a dropped paragraph has its original's words (normalization aside).
    for e in &paragraphs {
        assert!(e["data-similarity"].parse::<f64>().unwrap() > 0.5, "{e:?}");
    }

    // The most repeated paragraphs: each count is the references to its original
    // in the .dropped files, and they are the largest counts there.
    let mut per_original: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, original) in &refs {
        *per_original.entry(original).or_default() += 1;
    }
    assert!(!per_original.contains_key("0:0"), "every original is known");
    let rows: Vec<_> = cells
        .iter()
        .filter(|c| c.get("data-figure").map(String::as_str) == Some("paragraph_drops"))
        .collect();
    assert_eq!(rows.len(), per_original.len().min(50), "--top rows");
    for c in &rows {
        assert_eq!(
            c["data-value"].parse::<u64>().ok(),
            per_original.get(c["data-original"].as_str()).copied()
        );
        assert_eq!(c["data-exact"], "true");
    }
    let mut counts: Vec<u64> = per_original.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let shown: Vec<u64> = rows
        .iter()
        .map(|c| c["data-value"].parse().unwrap())
        .collect();
    assert_eq!(shown, counts[..rows.len()]);
    assert_eq!(
        Some(figure(runs[0].0, "feedback_references")),
        Some(refs.len() as u64)
    );

    // The runs' exact command lines, from their summaries.
    for (label, figures) in &runs {
        let argv: Vec<&str> = figures["command_line"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            dom.contains(&argv.join(" ")),
            "{label}: no command line {argv:?}"
        );
    }

    // Nothing is loaded from elsewhere: no script, stylesheet or image by address.
    for tag in ["script", "link", "img", "iframe", "object", "embed"] {
        assert!(!dom.contains(&format!("<{tag}")), "<{tag}> in the page");
    }
    for attrs in [
        "src=",
        "href=\"http",
        "href=\"//",
        "url(http",
        "url(//",
        "@import",
    ] {
        assert!(!dom.contains(attrs), "{attrs} in the page");
    }
    for a in tags(&dom, "a") {
        assert!(a["href"].starts_with('#'), "a link off the page: {:?}", a);
    }

    // Screenshots at a desktop and a phone width.
    for width in [1280u32, 390] {
        let png = t.path().join(format!("report-{width}.png"));
        chromium(
            &profile,
            &page,
            &[
                &format!("--window-size={width},1600"),
                &format!("--screenshot={}", png.display()),
            ],
        );
        assert_eq!(png_width(&png), width, "{}", png.display());
    }
}

/// The command line's conventions: `-i` is the positional inputs' alias (the same
/// page), an unreadable line is reported as `FILE:LINE` with exit status 1, a
/// directory without run outputs or a missing input is fatal (2) with one
/// `webdedup: error:` line and no page; and `dedup`'s summary names the report
/// command of its run.
#[test]
fn inputs_exit_statuses_and_messages() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    std::fs::create_dir_all(run.join("cc-1")).unwrap();
    let dd = run.join("cc-1/p.dedup.dd");
    std::fs::write(
        &dd,
        "<dd id=\"a\" url=\"https://x.org/a\" title=\"\" status=\"K\"/>\n<dd id=\"b\" url=\"https://x.org/b\" title=\"\" status=\"D\"/>\n",
    )
    .unwrap();
    let (a, b) = (t.path().join("a.html"), t.path().join("b.html"));
    let o = report(&[&run], &a, &["-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "-q: {}", stderr(&o));
    let o = webdedup(&["report", "-i", s(&run), "-o", s(&b)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("webdedup report: 1 run, "),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(&a), read(&b));
    assert!(
        read(&a).contains("data-figure=\"documents_dropped\" data-source=\"dd\" data-value=\"1\"")
    );

    std::fs::write(
        &dd,
        "<dd url=\"\" title=\"\" status=\"K\"/>\n<dd status=\"??\"/>\n",
    )
    .unwrap();
    let o = report(&[&run], &a, &["-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("webdedup: {}:2: unknown status '??'\n", dd.display())
    );

    let empty = t.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "x").unwrap();
    let c = t.path().join("c.html");
    for input in [empty, t.path().join("missing")] {
        let o = report(&[&input], &c, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.starts_with("webdedup: error: ") && err.lines().count() == 1,
            "{err}"
        );
        assert!(!c.exists());
    }

    // A run's summary says how to see it, and the command it gives works.
    let input = one_doc_input(t.path(), "in");
    let out = t.path().join("out");
    let o = webdedup(&["dedup", s(&input), "-o", s(&out), "-d"]);
    ok(&o);
    assert_says(
        &o,
        &format!("see it: webdedup report {} -o report.html", s(&out)),
    );
    ok(&report(&[&out], &t.path().join("see.html"), &["-q"]));
}

/// A `warc dedup` run's page gives the archive's totals (records, responses,
/// revisit records written, bytes before and after) as its `--json` says them.
#[test]
fn a_warc_dedup_run_has_the_archive_totals_of_its_summary() {
    let t = tempfile::tempdir().unwrap();
    let (out, json_path, page) = (
        t.path().join("out"),
        t.path().join("run.json"),
        t.path().join("r.html"),
    );
    let archive = sample_dir().parent().unwrap().join("sqlite-recrawl");
    ok(&webdedup(&[
        "warc",
        "dedup",
        s(&archive),
        "-o",
        s(&out),
        "--json",
        s(&json_path),
    ]));
    ok(&report(&[&out, &json_path], &page, &[]));
    let summary = json(&json_path);
    assert!(
        summary["revisits_written"].as_u64().unwrap() > 0,
        "{summary}"
    );
    let cells = tags(&read(&page), "td");
    for figure in [
        "records",
        "responses",
        "revisits_written",
        "bytes_in",
        "bytes_out",
    ] {
        let cell = cells
            .iter()
            .find(|a| a.get("data-figure").map(String::as_str) == Some(figure))
            .unwrap_or_else(|| panic!("no {figure} on the page"));
        assert_eq!(cell["data-value"], summary[figure].to_string(), "{figure}");
        assert_eq!(cell["data-source"], "summary", "{figure}");
    }
}
