//! Which files make up each run: side files found by their suffix (`*.dd`,
//! `*.pairs`, `*.dropped`), `--json` summaries (`*.json` beside them or named on
//! the command line) and `similar` outputs (`*.tsv`, told apart by their content
//! later). Names are never rebuilt from inputs: output names differ by format
//! (`REL.dedup` for verticals, `STEM.dedup.EXT` for the others), suffixes do not.

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Feedback mode's index of the inputs' paths, at the top of the run directory.
pub const FILES_INDEX: &str = "files.idx";

/// A file of a run with its path below the run directory (`/`-separated), which
/// gives its crawl (the first directory) and its language (a directory named so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFile {
    pub path: PathBuf,
    pub rel: String,
}

/// The files of one run, each list in sorted relative-path order (the order the
/// commands process their inputs in), so every figure and sample is deterministic.
#[derive(Clone, Debug, Default)]
pub struct RunFiles {
    /// The run directory as given (or the first file named when no directory
    /// came before it).
    pub label: String,
    pub dd: Vec<RunFile>,
    pub pairs: Vec<RunFile>,
    pub dropped: Vec<RunFile>,
    /// Kept outputs (`*.dedup`, `*.dedup.EXT`): their sizes are the bytes after.
    pub outputs: Vec<RunFile>,
    pub summaries: Vec<PathBuf>,
    /// Candidate `similar` outputs (`*.tsv`): pairs, clusters or a dedup report.
    pub similar: Vec<PathBuf>,
    /// Feedback mode's `files.idx` (the inputs' paths by file id), at the top.
    pub files_index: Option<PathBuf>,
}

/// What a file of a run directory is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Dd,
    Pairs,
    Dropped,
    Output,
    Summary,
    Similar,
    Other,
}

/// The kind of the file named `name`.
pub fn kind_of(name: &str) -> Kind {
    if name.starts_with('.') || name.ends_with(".tmp") {
        // Journals, run ids and unfinished outputs are not results.
        return Kind::Other;
    }
    if name.ends_with(".dd") {
        Kind::Dd
    } else if name.ends_with(".pairs") {
        Kind::Pairs
    } else if name.ends_with(".dropped") {
        Kind::Dropped
    } else if name.ends_with(".json") {
        Kind::Summary
    } else if name.ends_with(".tsv") {
        Kind::Similar
    } else if is_output(name) {
        Kind::Output
    } else {
        Kind::Other
    }
}

/// `X.dedup` or `X.dedup.EXT` (a compressed or reformatted output), but not the
/// side files `--mark` and signals leave (`.attributes.jsonl`, `.log`).
fn is_output(name: &str) -> bool {
    let Some(at) = name.rfind(".dedup") else {
        return false;
    };
    let tail = &name[at + ".dedup".len()..];
    tail.is_empty() || (tail.starts_with('.') && !tail.starts_with(".attributes") && tail != ".log")
}

/// Groups the command line's paths into runs: a directory is a run; a file
/// belongs to the run directory named before it (`out1/ out1.json out2/
/// out2.json`), or starts a run of its own when none came before.
pub fn group(inputs: &[PathBuf]) -> Result<Vec<RunFiles>> {
    let mut runs: Vec<RunFiles> = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .with_context(|| format!("cannot read input {}", input.display()))?;
        if meta.is_dir() {
            let mut run = RunFiles {
                label: input.display().to_string(),
                ..Default::default()
            };
            let mut files = Vec::new();
            walk(input, "", &mut files)?;
            files.sort_by(|a, b| a.rel.cmp(&b.rel));
            for f in files {
                let name = f.rel.rsplit('/').next().unwrap_or(&f.rel).to_owned();
                match kind_of(&name) {
                    Kind::Dd => run.dd.push(f),
                    Kind::Pairs => run.pairs.push(f),
                    Kind::Dropped => run.dropped.push(f),
                    Kind::Output => run.outputs.push(f),
                    Kind::Summary => run.summaries.push(f.path),
                    Kind::Similar => run.similar.push(f.path),
                    Kind::Other if f.rel == FILES_INDEX => run.files_index = Some(f.path),
                    Kind::Other => {}
                }
            }
            runs.push(run);
            continue;
        }
        if runs.is_empty() {
            runs.push(RunFiles {
                label: input.display().to_string(),
                ..Default::default()
            });
        }
        let run = runs.last_mut().expect("a run was just made");
        let name = input.file_name().map(|n| n.to_string_lossy().into_owned());
        match name.as_deref().map(kind_of) {
            Some(Kind::Summary) => run.summaries.push(input.clone()),
            // Any other file: a `similar` output whatever its name (`-o pairs.txt`).
            _ => run.similar.push(input.clone()),
        }
    }
    Ok(runs)
}

/// Every regular file below `dir`, with its relative path.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<RunFile>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let path = entry.path();
        let meta =
            std::fs::metadata(&path).with_context(|| format!("cannot read {}", path.display()))?;
        if meta.is_dir() {
            if !name.starts_with('.') {
                walk(&path, &rel, out)?;
            }
        } else if meta.is_file() {
            out.push(RunFile { path, rel });
        }
    }
    Ok(())
}

/// The crawl of a file: the first directory of its relative path (`cc-2023-14`
/// for `cc-2023-14/part-0.jsonl.dedup.dd`), `.` for a file at the top.
pub fn crawl_of(rel: &str) -> &str {
    match rel.split_once('/') {
        Some((first, _)) => first,
        None => ".",
    }
}

/// The language a file's path names: a directory `lang=xx` / `language=xx`, or
/// one that is a language tag (`en`, `de`, `pt-BR`, `zh_Hans`); the last such
/// directory wins.
pub fn language_of(rel: &str) -> Option<String> {
    let mut dirs: Vec<&str> = rel.split('/').collect();
    dirs.pop();
    dirs.iter().rev().find_map(|d| {
        let tag = d
            .strip_prefix("lang=")
            .or_else(|| d.strip_prefix("language="))
            .unwrap_or(d);
        is_language_tag(tag).then(|| tag.to_owned())
    })
}

/// The language a URL's path names: its first segment that is a language tag
/// (`https://help.example.org/7.4/de/text/x.html`: `de`).
pub fn language_in_url(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    path.split('/')
        .skip(1)
        .find(|seg| is_language_tag(seg))
        .map(str::to_owned)
}

/// Two lowercase letters, optionally followed by `-`/`_` and a region (2
/// uppercase letters) or a script (a capital and 3 lowercase letters).
fn is_language_tag(s: &str) -> bool {
    let (lang, sub) = match s.find(['-', '_']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let lang_ok = lang.len() == 2 && lang.bytes().all(|b| b.is_ascii_lowercase());
    let sub_ok = match sub {
        None => true,
        Some(r) if r.len() == 2 => r.bytes().all(|b| b.is_ascii_uppercase()),
        Some(r) if r.len() == 4 => {
            r.as_bytes()[0].is_ascii_uppercase() && r[1..].bytes().all(|b| b.is_ascii_lowercase())
        }
        Some(_) => false,
    };
    lang_ok && sub_ok
}

/// Calls `each(line_number, line)` for every line of `f` (compression sniffed).
pub fn for_lines(f: &RunFile, mut each: impl FnMut(u64, &[u8])) -> Result<()> {
    let (r, _) = webdedup_formats::input::open_input(&f.path)
        .with_context(|| format!("cannot open {}", f.path.display()))?;
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let got = r
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("cannot read {}", f.path.display()))?;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        each(n, &buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_suffix_in_both_naming_schemes() {
        assert_eq!(kind_of("part-0.vert.dedup"), Kind::Output);
        assert_eq!(kind_of("part-0.dedup.jsonl.gz"), Kind::Output);
        assert_eq!(kind_of("part-0.jsonl.dedup.gz"), Kind::Output);
        assert_eq!(kind_of("part-0.dedup.parquet"), Kind::Output);
        assert_eq!(kind_of("part-0.jsonl.dedup.dd"), Kind::Dd);
        assert_eq!(kind_of("part-0.dedup.dd"), Kind::Dd);
        assert_eq!(kind_of("part-0.dedup.pairs"), Kind::Pairs);
        assert_eq!(kind_of("part-0.vert.dedup.dropped"), Kind::Dropped);
        assert_eq!(kind_of("part-0.dedup.attributes.jsonl"), Kind::Other);
        assert_eq!(kind_of("part-0.vert.dedup.log"), Kind::Other);
        assert_eq!(kind_of("part-0.vert.dedup.tmp"), Kind::Other);
        assert_eq!(kind_of(".webdedup.journal"), Kind::Other);
        assert_eq!(kind_of("files.idx"), Kind::Other);
        assert_eq!(kind_of("run.json"), Kind::Summary);
        assert_eq!(kind_of("simhash-dropped.tsv"), Kind::Similar);
    }

    #[test]
    fn crawls_and_languages_from_paths() {
        assert_eq!(crawl_of("cc-2023-14/part-0.jsonl.dedup.dd"), "cc-2023-14");
        assert_eq!(crawl_of("part-0.dedup.dd"), ".");
        assert_eq!(
            language_of("cc-1/de/part-0.dedup.dd").as_deref(),
            Some("de")
        );
        assert_eq!(
            language_of("cc-1/lang=pt-BR/x.dd").as_deref(),
            Some("pt-BR")
        );
        assert_eq!(language_of("zh_Hans/x.dd").as_deref(), Some("zh_Hans"));
        // Not a language: three letters, digits, the file's own name.
        assert_eq!(language_of("out/cc-2023-14/x.dd"), None);
        assert_eq!(language_of("en.dd"), None);
        assert_eq!(language_of("EN/x.dd"), None);
        let url = "https://help.libreoffice.org/7.4/ru/text/x.html";
        assert_eq!(language_in_url(url).as_deref(), Some("ru"));
        let url = "https://debian-handbook.info/browse/zh-CN/stable/x.html";
        assert_eq!(language_in_url(url).as_deref(), Some("zh-CN"));
        // The host is not a path segment.
        assert_eq!(language_in_url("https://de/docs/3.9/x.html"), None);
    }

    #[test]
    fn files_follow_the_run_directory_before_them() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::create_dir_all(a.join("cc-1")).unwrap();
        std::fs::write(a.join("cc-1/p.jsonl.dedup.dd"), "").unwrap();
        std::fs::write(a.join("cc-1/p.jsonl.dedup"), "").unwrap();
        std::fs::write(a.join(".webdedup.journal"), "").unwrap();
        std::fs::write(a.join("files.idx"), "").unwrap();
        let s = t.path().join("a.json");
        std::fs::write(&s, "{}").unwrap();
        let lone = t.path().join("pairs.txt");
        std::fs::write(&lone, "").unwrap();
        let runs = group(&[lone.clone(), a.clone(), s.clone()]).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].similar, vec![lone]);
        assert_eq!(runs[1].dd.len(), 1);
        assert_eq!(runs[1].dd[0].rel, "cc-1/p.jsonl.dedup.dd");
        assert_eq!(runs[1].outputs.len(), 1);
        assert_eq!(runs[1].summaries, vec![s]);
        assert_eq!(runs[1].files_index, Some(a.join("files.idx")));
    }
}
