//! The mode over files: every input read through the one reader of its format
//! ([`webdedup_formats::texts`]), the repeated spans of the whole corpus found
//! ([`crate::rule`]), and each input written again in its format without them
//! ([`webdedup_formats::strike`]), or only the spans reported.

use crate::corpus::Corpus;
use crate::rule::{repeated_spans, Settings};
use std::io::{self, BufRead, BufReader};
use std::ops::Range;
use std::path::{Path, PathBuf};
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::problems::Problems;
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_formats::strike::{check_writable, write_struck};
use webdedup_formats::texts::{read_texts, Text};
use webdedup_text::shown::escape_tsv;

/// How inputs are read.
#[derive(Clone, Debug)]
pub struct Reading {
    pub read: ReadSettings,
    pub max_line_bytes: usize,
}

impl Default for Reading {
    /// Formats sniffed, default fields, the default line limit.
    fn default() -> Self {
        Reading {
            read: ReadSettings::default(),
            max_line_bytes: webdedup_formats::chunk::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// The files of `inputs` (directories walked in sorted relative-path order),
/// for the tools that take inputs without the command line's checks.
pub fn input_files(inputs: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let listing = webdedup_formats::list_inputs(inputs, &Default::default())?;
    Ok(listing.files.into_iter().map(|f| f.path).collect())
}

/// One document of the corpus and the spans struck from its text.
#[derive(Clone, Debug)]
pub struct DocSpans {
    /// Which input (its index).
    pub file: usize,
    pub id: String,
    /// Bytes of its text.
    pub len: usize,
    pub spans: Vec<Range<usize>>,
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Found {
    pub docs: Vec<DocSpans>,
    /// Bytes of text read.
    pub text_bytes: u64,
}

impl Found {
    pub fn spans(&self) -> u64 {
        self.docs.iter().map(|d| d.spans.len() as u64).sum()
    }
    pub fn bytes_struck(&self) -> u64 {
        let len = |r: &Range<usize>| (r.end - r.start) as u64;
        self.docs.iter().flat_map(|d| &d.spans).map(len).sum()
    }
    pub fn docs_changed(&self) -> u64 {
        self.docs.iter().filter(|d| !d.spans.is_empty()).count() as u64
    }
}

/// Reads `path` item by item in its format (sniffed or as `reading` says).
fn read_file(
    path: &Path,
    reading: &Reading,
    problems: &Problems,
    f: &mut impl FnMut(&DocFormat, Text<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let (stream, compression) = webdedup_formats::open_input(path)?;
    let mut stream = BufReader::with_capacity(1 << 18, stream);
    let format = reading.read.resolve(stream.fill_buf()?);
    let mut failed = Ok(());
    read_texts(
        path,
        &format,
        stream,
        compression,
        reading.max_line_bytes,
        problems,
        &mut |t| {
            if failed.is_ok() {
                failed = f(&format, t);
            }
        },
    )?;
    failed
}

/// The repeated spans of the documents of `files`, read in order.
pub fn find(
    files: &[PathBuf],
    reading: &Reading,
    settings: &Settings,
    problems: &Problems,
) -> io::Result<Found> {
    let mut corpus = Corpus::new();
    let mut found = Found::default();
    for (file, path) in files.iter().enumerate() {
        read_file(path, reading, problems, &mut |_, t| {
            if let Text::Doc { id, text, .. } = t {
                corpus.push(text);
                found.docs.push(DocSpans {
                    file,
                    id,
                    len: text.len(),
                    spans: Vec::new(),
                });
            }
            Ok(())
        })
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    found.text_bytes = found.docs.iter().map(|d| d.len as u64).sum();
    for (d, spans) in found
        .docs
        .iter_mut()
        .zip(repeated_spans(&corpus, settings)?)
    {
        d.spans = spans;
    }
    Ok(found)
}

/// Writes each of `files` to its output in `outputs` in its own format, the
/// documents without the spans `found` gives them (read again, in the order
/// [`find`] read them).
pub fn write(
    files: &[PathBuf],
    outputs: &[PathBuf],
    reading: &Reading,
    found: &Found,
    compression: OutputCompression,
) -> io::Result<()> {
    for path in files {
        let (stream, _) = webdedup_formats::open_input(path)?;
        let mut stream = BufReader::new(stream);
        let format = reading.read.resolve(stream.fill_buf()?);
        check_writable(&format)
            .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    }
    for dir in outputs.iter().filter_map(|o| o.parent()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    let mut docs = found.docs.iter();
    // The first pass reported the input's problems.
    let quiet = Problems::quiet();
    let mut buf = Vec::new();
    for (path, out_path) in files.iter().zip(outputs) {
        let mut out = AtomicOutput::create(out_path, compression)?;
        read_file(path, reading, &quiet, &mut |format, t| {
            buf.clear();
            match t {
                Text::Doc {
                    text, raw, line, ..
                } => {
                    let spans = docs.next().map_or(&[][..], |d| &d.spans[..]);
                    write_struck(format, raw, text, spans, &mut buf).map_err(|e| {
                        io::Error::other(format!("{}:{}{line}: {e}", path.display(), format.at()))
                    })?;
                }
                Text::Other { raw } => buf.extend_from_slice(raw),
            }
            out.write_all(&buf)
        })?;
        out.finish(false)?;
    }
    Ok(())
}

/// The spans as TSV lines: `FILE\tID\tSTART\tEND` (byte offsets in the text).
pub fn spans_tsv(files: &[PathBuf], found: &Found, out: &mut impl io::Write) -> io::Result<()> {
    for d in &found.docs {
        for s in &d.spans {
            writeln!(
                out,
                "{}\t{}\t{}\t{}",
                files[d.file].display(),
                escape_tsv(&d.id),
                s.start,
                s.end
            )?;
        }
    }
    Ok(())
}
