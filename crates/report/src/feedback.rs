//! Feedback mode's `.dropped` files (`dedup -f`, exact and near mode): each
//! `<t>DROPPED\tORIGINAL</f>` line names a dropped paragraph (`FILEID:REC`, the
//! lines after it) and the paragraph it repeats, first seen at `ORIGINAL`
//! (paragraph REC of the input file `files.idx` names FILEID). From them, in one
//! streamed pass: the references counted, the paragraphs repeated most (counted
//! per original, bounded: see [`Repeats`]) and a deterministic sample of drops;
//! then the top paragraphs' and the sampled drops' texts, and (with `--source`)
//! the originals' texts from the run's inputs.

use crate::discover::{for_lines, RunFile};
use crate::examples::{beside_html, expand, Beside, Sampler, Similarity, NOT_IN_OUTPUTS};
use crate::paragraphs::{dropped_text, each_paragraph, format_of_output};
use crate::problems::Problems;
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use webdedup_formats::read::DocFormat;
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// Distinct paragraphs counted one by one; beyond, the least counted gives its
/// place to the new one (Space-Saving), so every paragraph repeated more than
/// (references / this) times is still found.
pub const MAX_REPEATS: usize = 100_000;
/// Bytes of a `.dropped` body kept to show (longer paragraphs are cut).
const MAX_BODY: usize = 64 << 10;

/// `FILEID:REC` (`0:0`: the original is not known).
pub fn parse_location(s: &str) -> Option<(u64, u64)> {
    let (f, r) = s.split_once(':')?;
    Some((u64::from_str_radix(f, 16).ok()?, r.parse().ok()?))
}

/// A reference line's dropped and original locations, or why it is not one.
pub fn parse_reference(line: &[u8]) -> Result<(String, String), String> {
    let line = String::from_utf8_lossy(line);
    let refs = line
        .trim_end()
        .strip_prefix("<t>")
        .and_then(|h| h.strip_suffix("</f>"))
        .and_then(|h| h.split_once('\t'))
        .filter(|(d, o)| parse_location(d).is_some() && parse_location(o).is_some());
    match refs {
        Some((d, o)) => Ok((d.to_owned(), o.to_owned())),
        None => Err("not a <t>DROPPED<TAB>ORIGINAL</f> line (FILEID:REC each)".into()),
    }
}

/// A paragraph's count: `count` drops at most, `count - error` at least (exact
/// when `error` is 0), its original and where its first counted drop is
/// (`.dropped` file, line of its reference).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repeat {
    pub count: u64,
    pub error: u64,
    pub original: String,
    pub first: (usize, u64),
}

/// The most dropped paragraphs, counted per original (a paragraph whose original
/// is not known, `0:0`, by its text), in memory for [`MAX_REPEATS`] of them.
#[derive(Debug)]
pub struct Repeats {
    cap: usize,
    by_key: HashMap<u64, Repeat>,
    by_count: BTreeSet<(u64, u64)>,
}

impl Default for Repeats {
    fn default() -> Repeats {
        Repeats::with_cap(MAX_REPEATS)
    }
}

impl Repeats {
    pub fn with_cap(cap: usize) -> Repeats {
        Repeats {
            cap: cap.max(1),
            by_key: HashMap::new(),
            by_count: BTreeSet::new(),
        }
    }

    /// One drop of the paragraph `key`.
    pub fn add(&mut self, key: u64, original: &str, first: (usize, u64)) {
        if let Some(r) = self.by_key.get_mut(&key) {
            self.by_count.remove(&(r.count, key));
            r.count += 1;
            self.by_count.insert((r.count, key));
            return;
        }
        let mut error = 0;
        if self.by_key.len() >= self.cap {
            // The least counted (ties: the lowest key) makes room.
            let (least, gone) = self.by_count.pop_first().expect("the table is full");
            self.by_key.remove(&gone);
            error = least;
        }
        self.by_key.insert(
            key,
            Repeat {
                count: error + 1,
                error,
                original: original.to_owned(),
                first,
            },
        );
        self.by_count.insert((error + 1, key));
    }

    /// The `n` most dropped paragraphs (ties: the first dropped first).
    pub fn top(&self, n: usize) -> Vec<&Repeat> {
        let mut all: Vec<&Repeat> = self.by_key.values().collect();
        all.sort_by(|a, b| b.count.cmp(&a.count).then(a.first.cmp(&b.first)));
        all.truncate(n);
        all
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// A sampled feedback drop: its reference, where it is, its text and (found in
/// the run's inputs) its original's.
#[derive(Clone, Debug, Default)]
pub struct SampledDrop {
    pub at: String,
    pub dropped: String,
    pub original: String,
    pub text: Option<String>,
    pub original_text: Option<String>,
}

/// What a run's `.dropped` files say.
#[derive(Debug, Default)]
pub struct Feedback {
    pub files: Vec<RunFile>,
    pub references: u64,
    pub repeats: Repeats,
    pub samples: Sampler<SampledDrop>,
    /// The texts of the top repeats' first drops, by their place.
    pub texts: HashMap<(usize, u64), String>,
    /// `files.idx`: the inputs' paths (relative to the run's input) by file id.
    pub names: HashMap<u64, String>,
}

/// The block of a `.dropped` file being read: its reference and body.
struct Block {
    line: u64,
    dropped: String,
    original: String,
    body: Vec<u8>,
    /// Its place in the sample, if it enters it.
    sampled: Option<(u64, String)>,
}

impl Block {
    /// The body is kept for the paragraph's key (original not known) or the sample.
    fn keeps_body(&self) -> bool {
        self.original == "0:0" || self.sampled.is_some()
    }
}

/// The format of the `.dropped` file `f`'s paragraphs: its kept output's, else
/// guessed from its first body line.
fn format_of(f: &RunFile, outputs: &[RunFile], first_body: &[u8]) -> DocFormat {
    let stem = f.rel.strip_suffix(".dropped").unwrap_or(&f.rel);
    let output = outputs
        .iter()
        .find(|o| o.rel == stem || o.rel.strip_prefix(stem).is_some_and(|t| t.starts_with('.')));
    match output {
        Some(o) => format_of_output(&o.rel),
        None if first_body.starts_with(b"<") => DocFormat::Vertical,
        None => format_of_output(".dedup.jsonl"),
    }
}

impl Feedback {
    pub fn new(examples: usize) -> Feedback {
        Feedback {
            samples: Sampler::new(examples),
            ..Default::default()
        }
    }

    /// Reads the `.dropped` file `f` (one of the run's, whose kept outputs are
    /// `outputs`).
    pub fn read(
        &mut self,
        f: &RunFile,
        outputs: &[RunFile],
        problems: &mut Problems,
    ) -> Result<()> {
        let index = self.files.len();
        self.files.push(f.clone());
        let mut block: Option<Block> = None;
        let mut format: Option<DocFormat> = None;
        let mut in_file = 0;
        for_lines(f, |n, line| {
            if !line.starts_with(b"<t>") {
                if let Some(b) = block.as_mut().filter(|b| b.keeps_body()) {
                    format.get_or_insert_with(|| format_of(f, outputs, line));
                    if b.body.len() + line.len() <= MAX_BODY {
                        b.body.extend_from_slice(line);
                    }
                }
                return;
            }
            if let Some(b) = block.take() {
                self.finish(index, b, format.as_ref());
            }
            match parse_reference(line) {
                Ok((dropped, original)) => {
                    self.references += 1;
                    let sampled = self.samples.admits(&f.rel, &dropped);
                    block = Some(Block {
                        line: n,
                        dropped,
                        original,
                        body: Vec::new(),
                        sampled,
                    });
                }
                Err(reason) => problems.add(&f.path, n, &reason, &mut in_file),
            }
        })?;
        if let Some(b) = block.take() {
            self.finish(index, b, format.as_ref());
        }
        Ok(())
    }

    /// Counts a block read whole, and samples it.
    fn finish(&mut self, file: usize, b: Block, format: Option<&DocFormat>) {
        let key = if b.original == "0:0" {
            xxh3_64_with_seed(&b.body, 1)
        } else {
            xxh3_64(b.original.as_bytes())
        };
        self.repeats.add(key, &b.original, (file, b.line));
        if let Some(place) = b.sampled {
            let text = format.and_then(|f| dropped_text(f, &b.body));
            self.samples.insert(
                place,
                SampledDrop {
                    at: format!("{}:{}", self.files[file].rel, b.line),
                    dropped: b.dropped,
                    original: b.original,
                    text,
                    original_text: None,
                },
            );
        }
    }

    /// Reads the texts the page shows: the `top` repeats' first drops (a second
    /// pass over the `.dropped` files that hold them), and the sampled drops'
    /// originals from `sources` (the run's inputs) by `files.idx`.
    pub fn find_texts(
        &mut self,
        top: usize,
        outputs: &[RunFile],
        files_index: Option<&Path>,
        sources: &[PathBuf],
    ) -> Result<()> {
        let mut wanted: BTreeMap<usize, HashSet<u64>> = BTreeMap::new();
        for r in self.repeats.top(top) {
            wanted.entry(r.first.0).or_default().insert(r.first.1);
        }
        for (file, lines) in wanted {
            let f = self.files[file].clone();
            let mut current: Option<(u64, Vec<u8>)> = None;
            let mut found: Vec<(u64, Vec<u8>)> = Vec::new();
            let mut format = None;
            for_lines(&f, |n, line| {
                if line.starts_with(b"<t>") {
                    found.extend(current.take());
                    if lines.contains(&n) {
                        current = Some((n, Vec::new()));
                    }
                } else if let Some((_, body)) = current.as_mut() {
                    format.get_or_insert_with(|| format_of(&f, outputs, line));
                    if body.len() + line.len() <= MAX_BODY {
                        body.extend_from_slice(line);
                    }
                }
            })?;
            found.extend(current.take());
            for (line, body) in found {
                if let Some(text) = format.as_ref().and_then(|fm| dropped_text(fm, &body)) {
                    self.texts.insert((file, line), text);
                }
            }
        }
        if let Some(p) = files_index {
            self.names = read_files_index(p)?;
        }
        if !sources.is_empty() && !self.samples.is_empty() {
            self.find_originals(sources)?;
        }
        Ok(())
    }

    /// The sampled drops' originals, each input file read once, up to the last
    /// paragraph wanted of it.
    fn find_originals(&mut self, sources: &[PathBuf]) -> Result<()> {
        let mut wanted: HashMap<String, BTreeSet<u64>> = HashMap::new();
        for d in self.samples.items() {
            if let Some((file, record)) = parse_location(&d.original) {
                if let Some(rel) = self.names.get(&file) {
                    wanted.entry(rel.clone()).or_default().insert(record);
                }
            }
        }
        let mut texts: HashMap<(String, u64), String> = HashMap::new();
        for input in expand(sources) {
            let rel = input.rel.to_string_lossy().into_owned();
            let Some(records) = wanted.get(&rel) else {
                continue;
            };
            let last = records.last().copied().unwrap_or(0);
            each_paragraph(&input.path, |record, text| {
                if records.contains(&record) {
                    texts.insert((rel.clone(), record), text.to_owned());
                }
                record < last
            })?;
        }
        let names = &self.names;
        for d in self.samples.items_mut() {
            d.original_text = parse_location(&d.original)
                .and_then(|(file, record)| Some((names.get(&file)?.clone(), record)))
                .and_then(|k| texts.get(&k).cloned());
        }
        Ok(())
    }

    /// Where a paragraph was first seen, as the page says it.
    pub fn first_seen(&self, original: &str) -> String {
        match parse_location(original) {
            Some((0, 0)) | None => "before this run (an earlier run's store), or not known".into(),
            Some((file, record)) => match self.names.get(&file) {
                Some(rel) => format!("{rel}, paragraph {record}"),
                None => format!("{original} (not in files.idx)"),
            },
        }
    }
}

/// The sampled drops beside their originals (the originals' texts from the
/// run's inputs, with `--source`).
pub fn examples_html(fb: &Feedback, has_sources: bool) -> String {
    let items: Vec<Beside<'_>> = fb
        .samples
        .items()
        .map(|d| Beside {
            dropped: &d.dropped,
            original: &d.original,
            at: &d.at,
            similarity: Similarity::Words,
            original_text: d.original_text.as_deref(),
            original_missing: if has_sources {
                "not found in the inputs given with <code>--source</code> (an original from before this run is in no input)"
            } else {
                NOT_IN_OUTPUTS
            },
            dropped_text: d.text.as_deref(),
            dropped_missing: "no paragraph after the reference",
        })
        .collect();
    let note = " Drops are paragraphs named by their input file's id and paragraph number (<code>files.idx</code> maps ids to paths); the similarity is their words' in common.";
    beside_html(note, &items)
}

/// `files.idx`: `ID<TAB>PATH` a line, the id 16 hex digits.
pub fn read_files_index(path: &Path) -> Result<HashMap<u64, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut names = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let parsed = line
            .split_once('\t')
            .and_then(|(id, rel)| Some((u64::from_str_radix(id, 16).ok()?, rel)));
        let Some((id, rel)) = parsed else {
            bail!("{}:{}: expected 'ID<TAB>PATH'", path.display(), i + 1);
        };
        names.insert(id, rel.to_owned());
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let (d, o) =
            parse_reference(b"<t>76d0503e832a6acd:284\t76d0503e832a6acd:283</f>\n").unwrap();
        assert_eq!(
            (d.as_str(), o.as_str()),
            ("76d0503e832a6acd:284", "76d0503e832a6acd:283")
        );
        assert_eq!(parse_location(&o), Some((0x76d0503e832a6acd, 283)));
        assert!(parse_reference(b"<t>a:1</f>").is_err());
        assert!(parse_reference(b"<t>zz:1\t0:0</f>").is_err());
        assert_eq!(parse_location("0:0"), Some((0, 0)));
    }

    #[test]
    fn repeats_per_original_and_unknown_originals_by_text() {
        let text =
            "<t>a:5\tb:1</f>\nsame \\\"words\\\"\n<t>a:6\tb:1</f>\nsame \\\"words\\\"\nrider\n\
                    <t>a:7\t0:0</f>\nold\n<t>a:8\t0:0</f>\nold\n<t>a:9\tb:2</f>\nother\n<t>bad\n";
        let (_t, path) = crate::temp_file("p.dedup.dropped", text);
        let f = RunFile {
            path: path.clone(),
            rel: "p.dedup.dropped".into(),
        };
        let outputs = [RunFile {
            path: path.with_file_name("p.dedup.jsonl.gz"),
            rel: "p.dedup.jsonl.gz".into(),
        }];
        let mut fb = Feedback::new(10);
        let mut problems = Problems::default();
        fb.read(&f, &outputs, &mut problems).unwrap();
        assert_eq!(fb.references, 5);
        assert_eq!(problems.count, 1, "{:?}", problems.shown);
        let top: Vec<(&str, u64)> = fb
            .repeats
            .top(5)
            .iter()
            .map(|r| (r.original.as_str(), r.count))
            .collect();
        assert_eq!(top, [("b:1", 2), ("0:0", 2), ("b:2", 1)]);
        fb.find_texts(1, &outputs, None, &[]).unwrap();
        assert_eq!(fb.texts.values().collect::<Vec<_>>(), ["same \"words\""]);
        let sampled: Vec<Option<&str>> = fb.samples.items().map(|d| d.text.as_deref()).collect();
        assert_eq!(sampled.len(), 5);
        assert!(sampled.contains(&Some("old")) && sampled.contains(&Some("same \"words\"")));
        assert_eq!(
            fb.first_seen("0:0"),
            "before this run (an earlier run's store), or not known"
        );
    }

    #[test]
    fn counts_are_exact_until_the_table_is_full() {
        let mut r = Repeats::with_cap(2);
        for (i, key) in [1, 2, 1, 1, 2].into_iter().enumerate() {
            r.add(key, &format!("o{key}"), (0, i as u64));
        }
        let top = r.top(5);
        assert_eq!(
            (top[0].original.as_str(), top[0].count, top[0].error),
            ("o1", 3, 0)
        );
        assert_eq!((top[1].count, top[1].error), (2, 0));
        // A third paragraph takes the place of the least counted, counting from it.
        r.add(3, "o3", (0, 9));
        let top = r.top(5);
        assert_eq!(top.len(), 2);
        assert_eq!(
            (top[1].original.as_str(), top[1].count, top[1].error),
            ("o3", 3, 2)
        );
        assert_eq!(top[0].original, "o1");
    }
}
