//! A run's outputs: their names, the inputs listed once, the files index, and
//! how a finished output is made durable and put in place.

use crate::policy::file_id;
use crate::report::RunStats;
use anyhow::{anyhow, Context, Result};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use webdedup_formats::input::{split_document_name, InputFile, Listing};
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::{open_file, Compression};
use webdedup_store::{fault, Journal};

/// The per-file decision log of an unfinished output: `OUT/STEM.dedup.log` (without
/// the input's and the output's compression suffixes). It is named after the input,
/// not the output: the output's compression may depend on the format read
/// (`--compress auto`), which a stopped run need not know for every file.
pub fn log_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".log")
}

/// A file that goes with an output: `OUT/STEM.dedup` and `suffix`.
fn beside_output(out_dir: &Path, rel: &Path, suffix: &str) -> PathBuf {
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The bytes that name an input file in decision records.
pub fn rel_bytes(rel: &Path) -> &[u8] {
    rel.as_os_str().as_encoded_bytes()
}

/// The input files of a run (see [`webdedup_formats::input`]: files, directories
/// searched recursively, `-` for standard input, in the order given), leaving out
/// anything under `exclude` (the output directory). Non-regular files found in a
/// directory are in `skipped`, for the caller to report.
pub fn list_inputs(inputs: &[PathBuf], exclude: &Path) -> Result<Listing> {
    let opts = webdedup_formats::input::ListOptions {
        exclude: Some(exclude),
        ..Default::default()
    };
    webdedup_formats::input::list_inputs(inputs, &opts).map_err(anyhow::Error::from)
}

/// Reports the inputs a listing skipped (before the run reads anything).
pub fn report_skipped(listing: &Listing, report: &(dyn Fn(&str) + Sync)) {
    for s in &listing.skipped {
        report(&s.to_string());
    }
}

/// Counts the inputs a listing skipped as input problems of the run.
pub fn count_skipped(listing: &Listing, stats: &mut RunStats) {
    if !listing.skipped.is_empty() {
        *stats.issues.entry("skipped-input".into()).or_default() += listing.skipped.len() as u64;
    }
}

/// The output of input `REL`: `OUT/STEM.dedup.EXT` plus the output compression's
/// suffix (`part.parquet` -> `part.dedup.parquet`, `part.jsonl.gz` ->
/// `part.dedup.jsonl.gz`); a vertical's is `OUT/REL.dedup` (the KNOT worker's name),
/// REL without its compression suffix.
pub fn output_path(out_dir: &Path, rel: &Path, compress: OutputCompression) -> PathBuf {
    // The format's extension after `.dedup`, so that `*.parquet` globs and tools
    // that go by extension find the output (verticals have none).
    let (_, extension, _) = split_document_name(rel.as_os_str().as_encoded_bytes());
    let mut name = output_stem(out_dir, rel).into_os_string();
    name.push(extension);
    name.push(compress.suffix());
    PathBuf::from(name)
}

/// The `.dd` list that goes with an output: `OUT/STEM.dedup.dd`, never compressed.
pub fn dd_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".dd")
}

/// `--mark`'s attributes file: `OUT/STEM.dedup.attributes.jsonl`, never compressed.
pub fn attributes_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".attributes.jsonl")
}

/// Feedback mode's dropped paragraphs: `OUT/STEM.dedup.dropped`, never compressed.
pub fn dropped_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".dropped")
}

/// Substring mode's report in feedback mode: `OUT/STEM.dedup.spans` (each removed
/// span and its first copy, `policy::substr::report`), never compressed.
pub fn spans_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".spans")
}

/// MinHash mode's pairs report: `OUT/STEM.dedup.pairs` (`DOC TAB ORIGINAL TAB
/// JACCARD` per dropped document), never compressed.
pub fn pairs_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".pairs")
}

/// MinHash `--clusters`: `OUT/STEM.dedup.clusters` (`DOC TAB CLUSTER` per
/// document), never compressed.
pub fn clusters_path(out_dir: &Path, rel: &Path) -> PathBuf {
    beside_output(out_dir, rel, ".clusters")
}

/// Feedback mode's index of input file ids: `OUT/files.idx`, one `ID TAB REL` a line.
pub const FILES_INDEX: &str = "files.idx";

/// Writes `OUT/files.idx` for `files` (atomically).
pub fn write_files_index(out_dir: &Path, files: &[InputFile]) -> Result<()> {
    write_files_index_of(out_dir, files.iter().map(|f| rel_bytes(&f.rel)))
}

/// Writes `OUT/files.idx` for inputs named by their paths relative to the input
/// directory (atomically).
pub fn write_files_index_of<'a>(
    out_dir: &Path,
    rels: impl IntoIterator<Item = &'a [u8]>,
) -> Result<()> {
    let path = out_dir.join(FILES_INDEX);
    let mut text = Vec::new();
    for rel in rels {
        text.extend_from_slice(format!("{:016x}\t", file_id(rel)).as_bytes());
        text.extend_from_slice(rel);
        text.push(b'\n');
    }
    let mut out = AtomicOutput::create(&path, OutputCompression::None)
        .with_context(|| format!("cannot create {}", path.display()))?;
    out.write_all(&text)
        .with_context(|| format!("cannot write {}", path.display()))?;
    out.finish(false)
        .with_context(|| format!("cannot finish {}", path.display()))
}

/// `OUT/STEM.dedup`, what every file of input `REL` is named after: REL without
/// its compression suffix and its format's extension
/// ([`split_document_name`]; verticals have none).
pub(crate) fn output_stem(out_dir: &Path, rel: &Path) -> PathBuf {
    let (stem, _, _) = split_document_name(rel.as_os_str().as_encoded_bytes());
    // SAFETY: only ASCII suffixes were cut, so the rest is valid encoded bytes.
    let mut name = unsafe { OsString::from_encoded_bytes_unchecked(stem.to_vec()) };
    name.push(".dedup");
    out_dir.join(name)
}

/// Two inputs whose outputs would have the same name (`a.vert` and `a.vert.gz`):
/// an error naming both, since one output would silently replace the other.
pub(crate) fn check_output_names(files: &[InputFile], out_dir: &Path) -> Result<()> {
    let mut seen = std::collections::HashMap::new();
    for f in files {
        let out = output_stem(out_dir, &f.rel);
        if let Some(other) = seen.insert(out.clone(), &f.path) {
            anyhow::bail!(
                "inputs {} and {} would both be written to {}; rename one of them",
                other.display(),
                f.path.display(),
                out.display()
            );
        }
    }
    Ok(())
}

/// Whether an input compressed `input` (found by content) goes to an output
/// compressed `output` unchanged.
pub(crate) fn same_compression(input: Compression, output: OutputCompression) -> bool {
    matches!(
        (input, output),
        (Compression::None, OutputCompression::None)
            | (Compression::Gzip, OutputCompression::Gzip)
            | (Compression::Zstd, OutputCompression::Zstd)
    )
}

/// A new output at `path` holding the first `len` bytes of `file` decompressed:
/// the chunks of a copied input written so far, which were read unchanged.
pub(crate) fn write_prefix(
    file: &InputFile,
    path: &Path,
    compress: OutputCompression,
    len: u64,
) -> Result<AtomicOutput> {
    let mut out = AtomicOutput::create(path, compress)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let (reader, _) =
        open_file(file, None).with_context(|| format!("cannot read {}", file.path.display()))?;
    let copied = std::io::copy(&mut reader.take(len), &mut out)
        .with_context(|| format!("cannot read {} again", file.path.display()))?;
    if copied != len {
        return Err(anyhow!(
            "{}: changed while it was read (to be written unchanged)",
            file.path.display()
        ));
    }
    Ok(out)
}

/// A complete output, to be made durable and renamed into place.
pub(crate) struct Finish {
    pub(crate) main: AtomicOutput,
    pub(crate) attrs: Option<AtomicOutput>,
    /// The file's decision log, removed once the output is in place.
    pub(crate) log: PathBuf,
    pub(crate) dd: Option<AtomicOutput>,
    pub(crate) dropped: Option<AtomicOutput>,
    pub(crate) clusters: Option<AtomicOutput>,
}

/// Syncs the journal (the decisions behind the output must be durable before it
/// counts as finished: a restore skips finished outputs), then flushes, syncs (when
/// `sync`) and renames the `.dd` and the output, and removes the file's decision log.
pub(crate) fn finish_file(f: Finish, journal: Option<&Journal>, sync: bool) -> Result<()> {
    if let Some(j) = journal {
        j.sync().context("cannot sync the journal")?;
    }
    fault::hit("rename");
    // The `.dd` and `.dropped` first: a file is finished when its main output exists.
    if let Some(d) = f.dropped {
        let path = d.path().to_owned();
        d.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    if let Some(c) = f.clusters {
        let path = c.path().to_owned();
        c.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    if let Some(a) = f.attrs {
        let path = a.path().to_owned();
        a.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    if let Some(dd) = f.dd {
        let path = dd.path().to_owned();
        dd.finish(sync)
            .with_context(|| format!("cannot finish {}", path.display()))?;
    }
    let path = f.main.path().to_owned();
    f.main
        .finish(sync)
        .with_context(|| format!("cannot finish {}", path.display()))?;
    fault::hit("renamed");
    if f.log.exists() {
        webdedup_store::journal::remove_durably(&f.log)?;
    }
    Ok(())
}
