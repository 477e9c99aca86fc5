//! The mode over files: every input read through the one reader of its format
//! ([`webdedup_formats::texts`]), the repeated spans of the whole corpus found
//! ([`crate::rule`]), and each input written again in its format without them
//! ([`webdedup_formats::strike`]), or only the spans reported.

use crate::corpus::Corpus;
use crate::rule::{struck, Settings};
use rayon::prelude::*;
use std::io::{self, BufRead, BufReader, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use webdedup_formats::chunk::Chunk;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::parquet::RowSlice;
use webdedup_formats::parquet_out::ParquetOut;
use webdedup_formats::problems::Problems;
use webdedup_formats::read::{DocFormat, ReadSettings};
use webdedup_formats::strike::{
    write_struck, StruckRows, DOCUMENT_ATTRIBUTE, PARAGRAPH_ATTRIBUTE, SPANS_ATTRIBUTE,
};
use webdedup_formats::texts::{read_texts_to, Layout, Source, Text, TextSink};
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
    /// Where it is in its input (line, row or offset, as its format counts).
    pub line: u64,
    /// Bytes of its text.
    pub len: usize,
    /// Characters of its text.
    pub chars: usize,
    /// Byte offsets in its text.
    pub spans: Vec<Range<usize>>,
    /// The spans in characters of its text (each widened to whole characters).
    pub span_chars: Vec<Range<usize>>,
    /// When asked for: per span, the first copy of its first window (the
    /// document's index in [`Found::docs`] and the character it starts at).
    pub firsts: Vec<(usize, usize)>,
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
    let source = Source {
        path,
        format: &format,
        stream,
        compression,
    };
    read_texts_to(source, reading.max_line_bytes, problems, &mut sink)?;
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
        if let Text::Doc { id, text, line, .. } = t {
            self.corpus.push(text);
            self.docs.push(DocSpans {
                file: self.file,
                id,
                line,
                len: text.len(),
                chars: text.chars().count(),
                spans: Vec::new(),
                span_chars: Vec::new(),
                firsts: Vec::new(),
            });
        }
    }
}

/// The repeated spans of the documents of `files`, read in order, with their
/// first copies when `firsts`. Files are read by `settings.threads` threads
/// at once, their texts put together in input order.
pub fn find(
    files: &[PathBuf],
    reading: &Reading,
    settings: &Settings,
    firsts: bool,
    problems: &Problems,
) -> io::Result<Found> {
    let quiet = problems.quiet;
    let read_one = |(file, path): (usize, &PathBuf)| {
        let (mut corpus, mut docs) = (Corpus::new(), Vec::new());
        let found_here = Problems::new(quiet);
        let gather = Gather {
            file,
            corpus: &mut corpus,
            docs: &mut docs,
        };
        read_file(path, reading, &found_here, |_| Ok(gather))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok((corpus, docs, found_here))
    };
    let parts: Vec<io::Result<(Corpus, Vec<DocSpans>, Problems)>> =
        in_parallel(settings.threads, || {
            files.par_iter().enumerate().map(read_one).collect()
        })?;
    let mut corpus = Corpus::new();
    let mut found = Found::default();
    for part in parts {
        let (c, docs, p) = part?;
        corpus.append(c);
        found.docs.extend(docs);
        problems.absorb(p);
    }
    found.text_bytes = found.docs.iter().map(|d| d.len as u64).sum();
    let struck = struck(&corpus, settings, firsts)?;
    let text = |i: usize| {
        // The corpus holds the documents' `&str`s end to end.
        std::str::from_utf8(&corpus.bytes[corpus.text_range(i)]).unwrap_or_default()
    };
    for (i, (d, (spans, starts))) in found
        .docs
        .iter_mut()
        .zip(struck.spans.into_iter().zip(struck.firsts))
        .enumerate()
    {
        d.span_chars = char_offsets(text(i), &spans);
        d.spans = spans;
        d.firsts = starts
            .into_iter()
            .map(|p| {
                let j = corpus.text_of(p);
                let at = p - corpus.text_range(j).start;
                (j, chars_before(text(j), at))
            })
            .collect();
    }
    Ok(found)
}

/// The characters of `text` before byte `at` (a byte inside a character counts
/// as its character's start).
fn chars_before(text: &str, at: usize) -> usize {
    let mut a = at.min(text.len());
    while !text.is_char_boundary(a) {
        a -= 1;
    }
    text[..a].chars().count()
}

/// Byte ranges of `text` (sorted) in characters, each widened to whole
/// characters.
fn char_offsets(text: &str, spans: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut byte, mut chars) = (0, 0);
    let mut to = |b: usize| {
        let mut b = b.min(text.len());
        while !text.is_char_boundary(b) {
            b += 1;
        }
        if b < byte {
            // Only a widened start can fall before the last end counted.
            return chars - text[b..byte].chars().count();
        }
        chars += text[byte..b].chars().count();
        byte = b;
        chars
    };
    spans
        .iter()
        .map(|s| {
            let mut a = s.start.min(text.len());
            while !text.is_char_boundary(a) {
                a -= 1;
            }
            let start = to(a);
            start..to(s.end)
        })
        .collect()
}

/// The outputs of one input.
#[derive(Clone, Debug)]
pub struct FileOutputs {
    /// Its documents in its format (without their spans, or as read with `mark`).
    pub main: PathBuf,
    /// `--mark`: the spans as dolma attributes, one line a document.
    pub attributes: Option<PathBuf>,
    /// The report: each span and where its first copy is.
    pub report: Option<PathBuf>,
}

/// How outputs are written.
#[derive(Clone, Debug, Default)]
pub struct Writing {
    pub compression: OutputCompression,
    /// Nothing struck: the inputs as read, the spans in the attributes.
    pub mark: bool,
    /// The id naming each input in reports (as `files.idx` lists them).
    pub file_ids: Vec<u64>,
    /// Inputs written at once.
    pub threads: usize,
    /// Finishing an interrupted run: an input whose outputs are all in place
    /// (each renamed into place whole, the main one last) is not written again.
    pub restore: bool,
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
    /// Nothing struck (`--mark`).
    mark: bool,
    main: Main,
    rows: StruckRows,
    buf: Vec<u8>,
    failed: io::Result<()>,
}

impl Rewrite<'_> {
    fn doc(&mut self, raw: &[u8], text: &str, line: u64, layout: &Layout) -> io::Result<()> {
        let spans = match self.docs.next() {
            Some(d) if !self.mark => &d.spans[..],
            _ => &[][..],
        };
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

/// Writes each of `files` to its outputs in their own format, the documents
/// without the spans `found` gives them (read again, in the order [`find`]
/// read them), and their attributes and report.
pub fn write(
    files: &[PathBuf],
    outputs: &[FileOutputs],
    reading: &Reading,
    found: &Found,
    writing: &Writing,
) -> io::Result<()> {
    for dir in outputs.iter().filter_map(|o| o.main.parent()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    let written: Vec<io::Result<()>> = in_parallel(writing.threads, || {
        (files.par_iter().zip(outputs).enumerate())
            .map(|(file, (path, outs))| write_file(path, outs, reading, found, file, writing))
            .collect()
    })?;
    written.into_iter().collect()
}

/// Runs `work` on a pool of `threads` threads.
fn in_parallel<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> io::Result<T> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(io::Error::other)?;
    Ok(pool.install(work))
}

/// The outputs of input `file` (see [`write`]).
fn write_file(
    path: &Path,
    outs: &FileOutputs,
    reading: &Reading,
    found: &Found,
    file: usize,
    writing: &Writing,
) -> io::Result<()> {
    let docs = found.docs_of(file);
    let side = [&outs.attributes, &outs.report];
    if writing.restore
        && outs.main.exists()
        && side.iter().all(|p| p.as_ref().is_none_or(|p| p.exists()))
    {
        return Ok(());
    }
    if let Some(p) = &outs.attributes {
        let mut out = AtomicOutput::create(p, OutputCompression::None)?;
        out.write_all(&attributes(docs))?;
        out.finish(false)?;
    }
    if let Some(p) = &outs.report {
        let mut out = AtomicOutput::create(p, OutputCompression::None)?;
        out.write_all(&report(found, docs, &writing.file_ids))?;
        out.finish(false)?;
    }
    let compression = writing.compression;
    let rewrite = |format: DocFormat| -> io::Result<Rewrite> {
        let main = match format {
            DocFormat::Parquet(_) => Main::Parquet(None),
            _ => Main::Bytes(AtomicOutput::create(&outs.main, compression)?),
        };
        Ok(Rewrite {
            path,
            out_path: &outs.main,
            format,
            compression,
            docs: docs.iter(),
            mark: writing.mark,
            main,
            rows: StruckRows::default(),
            buf: Vec::new(),
            failed: Ok(()),
        })
    };
    // The first pass reported the input's problems.
    read_file(path, reading, &Problems::quiet(), rewrite)?.finish()
}

/// `--mark`'s attributes of `docs`: one line a document, dolma's layout, as
/// `dedup --substr --mark` writes them (`write_back`): the spans struck, and the
/// whole document when they cover all of it.
pub fn attributes(docs: &[DocSpans]) -> Vec<u8> {
    let mut out = Vec::new();
    for d in docs {
        out.extend_from_slice(b"{\"id\":");
        // Serialising a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &d.id);
        let _ = write!(
            out,
            ",\"attributes\":{{\"{PARAGRAPH_ATTRIBUTE}\":[],\"{DOCUMENT_ATTRIBUTE}\":["
        );
        let whole = d.span_chars.len() == 1 && d.span_chars[0] == (0..d.chars) && d.chars > 0;
        if whole {
            let _ = write!(out, "[0,{},1.0]", d.chars);
        }
        let _ = write!(out, "],\"{SPANS_ATTRIBUTE}\":[");
        for (i, c) in d.span_chars.iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            let _ = write!(out, "{comma}[{},{},1.0]", c.start, c.end);
        }
        out.extend_from_slice(b"]}}\n");
    }
    out
}

/// The report of `docs` (documents of `found`): one line a span,
/// `FILE:LINE:START-END TAB FILE:LINE:START` as `dedup --substr -f` writes it,
/// the span (its input's id, its document's line, characters of its text) and
/// where the first copy of its first window starts; `-` when not known.
pub fn report(found: &Found, docs: &[DocSpans], file_ids: &[u64]) -> Vec<u8> {
    let id = |file: usize| file_ids.get(file).copied().unwrap_or(0);
    let mut out = Vec::new();
    for d in docs {
        for (i, c) in d.span_chars.iter().enumerate() {
            let _ = write!(
                out,
                "{:016x}:{}:{}-{}\t",
                id(d.file),
                d.line,
                c.start,
                c.end
            );
            match d
                .firsts
                .get(i)
                .and_then(|&(j, at)| Some((found.docs.get(j)?, at)))
            {
                Some((o, at)) => {
                    let _ = writeln!(out, "{:016x}:{}:{at}", id(o.file), o.line);
                }
                None => out.extend_from_slice(b"-\n"),
            }
        }
    }
    out
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
