//! The mode over files: every input read through the one reader of its format
//! ([`webdedup_formats::texts`]), the repeated spans of the whole corpus found
//! ([`crate::rule`]), and each input written again in its format without them
//! ([`webdedup_formats::strike`]), or only the spans reported.

use crate::corpus::Corpus;
use crate::rule::{repeated_spans, Settings};
use std::io::{self, BufRead, BufReader};
use std::ops::Range;
use std::path::{Path, PathBuf};
use webdedup_formats::chunk::Chunk;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::parquet::RowSlice;
use webdedup_formats::parquet_out::ParquetOut;
use webdedup_formats::problems::Problems;
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_formats::strike::{write_struck, StruckRows};
use webdedup_formats::texts::{read_texts_to, Layout, Text, TextSink};
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
    /// The documents of input `file` (they are read file after file).
    pub fn docs_of(&self, file: usize) -> &[DocSpans] {
        let from = self.docs.partition_point(|d| d.file < file);
        let to = self.docs.partition_point(|d| d.file <= file);
        &self.docs[from..to]
    }
}

/// Reads `path` item by item in its format (sniffed or as `reading` says),
/// into the sink `sink` makes for that format.
fn read_file<S: TextSink>(
    path: &Path,
    reading: &Reading,
    problems: &Problems,
    sink: impl FnOnce(DocFormat) -> io::Result<S>,
) -> io::Result<S> {
    let (stream, compression) = webdedup_formats::open_input(path)?;
    let mut stream = BufReader::with_capacity(1 << 18, stream);
    let format = reading.read.resolve(stream.fill_buf()?);
    let mut sink = sink(format.clone())?;
    read_texts_to(
        path,
        &format,
        stream,
        compression,
        reading.max_line_bytes,
        problems,
        &mut sink,
    )?;
    Ok(sink)
}

/// The documents of one input as [`find`] reads them: their texts (into the
/// corpus) and their entries.
struct Gather<'a> {
    file: usize,
    corpus: &'a mut Corpus,
    docs: &'a mut Vec<DocSpans>,
}

impl TextSink for Gather<'_> {
    fn text(&mut self, t: Text<'_>, _layout: &Layout) {
        if let Text::Doc { id, text, .. } = t {
            self.corpus.push(text);
            self.docs.push(DocSpans {
                file: self.file,
                id,
                len: text.len(),
                spans: Vec::new(),
            });
        }
    }
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
        let gather = Gather {
            file,
            corpus: &mut corpus,
            docs: &mut found.docs,
        };
        read_file(path, reading, problems, |_| Ok(gather))
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

/// Where an input's documents go: bytes (JSON Lines, WET, verticals) or row
/// groups (Parquet; the output is made with the first row group's schema).
enum Main {
    Bytes(AtomicOutput),
    Parquet(Option<ParquetOut<AtomicOutput>>),
}

/// One input written again without its spans ([`write`]).
struct Rewrite<'a> {
    path: &'a Path,
    out_path: &'a Path,
    format: DocFormat,
    compression: OutputCompression,
    /// The input's documents, in order.
    docs: std::slice::Iter<'a, DocSpans>,
    main: Main,
    rows: StruckRows,
    buf: Vec<u8>,
    failed: io::Result<()>,
}

impl Rewrite<'_> {
    fn doc(&mut self, raw: &[u8], text: &str, line: u64, layout: &Layout) -> io::Result<()> {
        let spans = self.docs.next().map_or(&[][..], |d| &d.spans[..]);
        if let Main::Parquet(_) = self.main {
            self.rows.push(line, text, spans);
            return Ok(());
        }
        self.buf.clear();
        write_struck(&self.format, raw, text, spans, layout, &mut self.buf).map_err(|e| {
            io::Error::other(format!(
                "{}:{}{line}: {e}",
                self.path.display(),
                self.format.at()
            ))
        })?;
        self.bytes()
    }

    /// Writes `buf` (bytes formats).
    fn bytes(&mut self) -> io::Result<()> {
        match &mut self.main {
            Main::Bytes(out) => out.write_all(&self.buf),
            Main::Parquet(_) => Ok(()),
        }
    }

    fn rows(&mut self, chunk: &Chunk) -> io::Result<()> {
        let (Main::Parquet(out), Some(slice)) = (&mut self.main, chunk.extra.get::<RowSlice>())
        else {
            return Ok(());
        };
        if out.is_none() {
            let file = AtomicOutput::create(self.out_path, self.compression)?;
            *out = Some(ParquetOut::create(file, &slice.source)?);
        }
        let rows = self.rows.encode(slice)?;
        if let Some(out) = out {
            out.append(rows)?;
        }
        Ok(())
    }

    fn finish(self) -> io::Result<()> {
        self.failed?;
        match self.main {
            Main::Bytes(out) => out.finish(false),
            Main::Parquet(Some(out)) => out.finish()?.finish(false),
            // A Parquet input without row groups: no output.
            Main::Parquet(None) => Ok(()),
        }
    }
}

impl TextSink for Rewrite<'_> {
    fn text(&mut self, t: Text<'_>, layout: &Layout) {
        if self.failed.is_err() {
            return;
        }
        self.failed = match t {
            Text::Doc {
                text, raw, line, ..
            } => self.doc(raw, text, line, layout),
            Text::Other { raw } => {
                self.buf.clear();
                self.buf.extend_from_slice(raw);
                self.bytes()
            }
        };
    }

    fn chunk_end(&mut self, chunk: &Chunk) {
        if self.failed.is_ok() {
            self.failed = self.rows(chunk);
        }
    }
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
    for dir in outputs.iter().filter_map(|o| o.parent()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    // The first pass reported the input's problems.
    let quiet = Problems::quiet();
    for (file, (path, out_path)) in files.iter().zip(outputs).enumerate() {
        let docs = found.docs_of(file);
        let rewrite = |format: DocFormat| -> io::Result<Rewrite> {
            let main = match format {
                DocFormat::Parquet(_) => Main::Parquet(None),
                _ => Main::Bytes(AtomicOutput::create(out_path, compression)?),
            };
            Ok(Rewrite {
                path,
                out_path,
                format,
                compression,
                docs: docs.iter(),
                main,
                rows: StruckRows::default(),
                buf: Vec::new(),
                failed: Ok(()),
            })
        };
        read_file(path, reading, &quiet, rewrite)?.finish()?;
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
