//! Reading in input order: every chunk of every file numbered, and the gate that
//! lets threads through in that order.

use super::config::RunConfig;
use super::cores::Idle;
use parking_lot::{Condvar, Mutex};
use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use webdedup_formats::chunk::{BufferPool, Chunk};
use webdedup_formats::input::InputFile;
use webdedup_formats::read::{DocFormat, DocReader, ReadSettings};
use webdedup_formats::{open_file, Compression};

pub(crate) struct Job {
    pub(crate) seq: u64,
    pub(crate) file: usize,
    /// The file's format (named, or sniffed from its first bytes).
    pub(crate) format: DocFormat,
    /// Index of the chunk in its file.
    pub(crate) index: u64,
    pub(crate) first: bool,
    /// The input's compression, found by content (`--mark` copies an input whose
    /// output has the same one).
    pub(crate) compression: Compression,
    /// None when the file could not be opened.
    pub(crate) chunk: Result<Chunk, String>,
}

/// Whether `--mark` writes the job's input as it was read (the line formats; Parquet
/// and WET write rows and records again).
pub(crate) fn as_read(job: &Job) -> bool {
    matches!(job.format, DocFormat::Vertical | DocFormat::Jsonl(_))
}

/// Opens an input (see [`open_file`]) and decides its document format: the one
/// `read` names, or the one its first decompressed bytes suggest. The reader
/// still starts at the first byte.
pub fn open_documents<'a>(
    f: &InputFile,
    read: &ReadSettings,
    stop: Option<&'a AtomicBool>,
) -> std::io::Result<(DocFormat, BufReader<Box<dyn Read + Send + 'a>>)> {
    let (reader, _) = open_file(f, stop)?;
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let format = read.resolve(r.fill_buf()?);
    Ok((format, r))
}

/// The reader of an input's chunks of whole documents, in its format (named, or
/// sniffed from its first decompressed bytes); Parquet and WET are opened again
/// by path ([`DocFormat::reader`]).
pub fn open_doc_reader<'a>(
    f: &InputFile,
    read: &ReadSettings,
    stop: Option<&'a AtomicBool>,
    chunk_bytes: usize,
    max_line: usize,
) -> std::io::Result<(DocFormat, DocReader<DocStream<'a>>)> {
    open_doc_reader_as(f, read, stop, chunk_bytes, max_line).map(|(f, r, _)| (f, r))
}

/// [`open_doc_reader`], also saying how the input is compressed (by content).
pub(crate) fn open_doc_reader_as<'a>(
    f: &InputFile,
    read: &ReadSettings,
    stop: Option<&'a AtomicBool>,
    chunk_bytes: usize,
    max_line: usize,
) -> std::io::Result<(DocFormat, DocReader<DocStream<'a>>, Compression)> {
    let (reader, compression) = open_file(f, stop)?;
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let format = read.resolve(r.fill_buf()?);
    let reader = format
        .reader(f, r, compression, chunk_bytes, max_line)
        .map_err(|e| std::io::Error::new(e.kind(), e.to_string()))?;
    Ok((format, reader, compression))
}

/// A decompressed input stream.
pub type DocStream<'a> = BufReader<Box<dyn Read + Send + 'a>>;

/// Sends every chunk of every file, numbered in order, until `send` refuses or
/// `stop` says so.
pub(crate) fn read_jobs(
    files: &[InputFile],
    cfg: &RunConfig,
    pool: &Arc<BufferPool>,
    stop: &(dyn Fn() -> bool + Sync),
    dur_stop: Option<&AtomicBool>,
    mut send: impl FnMut(Job) -> bool,
) {
    let mut seq = 0u64;
    for (i, f) in files.iter().enumerate() {
        if stop() {
            return;
        }
        match open_doc_reader_as(f, &cfg.read, dur_stop, cfg.chunk_bytes, cfg.max_line_bytes) {
            // A signal ended the wait for a stream: the file stays unfinished.
            Err(_) if stop() => return,
            Err(e) => {
                if !send(Job {
                    seq,
                    file: i,
                    format: DocFormat::Vertical,
                    index: 0,
                    first: true,
                    compression: Compression::None,
                    chunk: Err(e.to_string()),
                }) {
                    return;
                }
                seq += 1;
            }
            Ok((format, reader, compression)) => {
                let mut chunks = reader.with_pool(pool.clone());
                let mut first = true;
                let mut index = 0;
                while let Some(chunk) = chunks.next_chunk() {
                    if stop()
                        || !send(Job {
                            seq,
                            file: i,
                            format: format.clone(),
                            index,
                            first,
                            compression,
                            chunk: Ok(chunk),
                        })
                    {
                        return;
                    }
                    seq += 1;
                    index += 1;
                    first = false;
                }
            }
        }
    }
}

/// Numbers paragraphs within each input file (feedback records, from 1): advanced
/// in the commit gate, so in input order.
#[derive(Default)]
pub(crate) struct RecordCounter {
    next: u64,
}

impl RecordCounter {
    /// The record number of the job's first paragraph; counts its `paras`.
    pub(crate) fn next(&mut self, job: &Job, paras: usize) -> u64 {
        if job.first {
            self.next = 1;
        }
        let first = self.next;
        self.next += paras as u64;
        first
    }
}

/// Lets threads through one at a time, in sequence-number order. A thread
/// that must wait for its turn gives its core up meanwhile ([`Idle`]).
pub(crate) struct Gate<T> {
    /// The sequence number whose turn it is.
    turn: Mutex<u64>,
    cv: Condvar,
    /// Locked only by the thread whose turn it is: a thread waiting for its
    /// turn never waits on the work of another's.
    value: Mutex<T>,
}

impl<T> Gate<T> {
    pub(crate) fn new(value: T) -> Self {
        Gate {
            turn: Mutex::new(0),
            cv: Condvar::new(),
            value: Mutex::new(value),
        }
    }

    /// Runs `f` when it is `seq`'s turn, then lets `seq + 1` through.
    pub(crate) fn pass<R>(&self, seq: u64, f: impl FnOnce(&mut T) -> R) -> R {
        wait_turn(&self.turn, &self.cv, seq);
        let r = f(&mut self.value.lock());
        *self.turn.lock() = seq + 1;
        self.cv.notify_all();
        r
    }

    pub(crate) fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

/// Waits until `turn` is `seq`, the calling thread's core given up while it
/// waits (see [`super::cores`]).
pub(crate) fn wait_turn(turn: &Mutex<u64>, cv: &Condvar, seq: u64) {
    let mut t = turn.lock();
    if *t == seq {
        return;
    }
    let idle = Idle::begin();
    while *t != seq {
        cv.wait(&mut t);
    }
    drop(t);
    idle.end();
}
