//! The corpus' positions in suffix-array order, built in shards of bounded size
//! and merged, as ExactSubstr's tool does (`make-part`, then `merge`).
//!
//! Only the order of the first `length` bytes of each suffix matters to the rule
//! (a repeat is a run of neighbours sharing those bytes), so a shard's suffix
//! array is built over its own bytes and the `length` bytes after them: its
//! suffixes are then in the order of their first `length` bytes, and the merge
//! compares those bytes alone. One shard (the corpus fits the memory given)
//! needs no merge and writes nothing to disk.

use rayon::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};

/// Bytes of memory a shard's construction takes per byte of the shard: the
/// bytes (read from the corpus) and a 32-bit suffix array entry.
pub const BYTES_PER_SHARD_BYTE: usize = 4;

/// The suffix array of `text` (positions as `u32`).
pub fn suffix_array(text: &[u8]) -> io::Result<Vec<u32>> {
    if text.len() > i32::MAX as usize {
        return Err(io::Error::other(format!(
            "a shard of {} bytes is over the suffix array's 2 GiB: give less memory",
            text.len()
        )));
    }
    let sa = libsais::SuffixArrayConstruction::for_text(text)
        .in_owned_buffer32()
        .single_threaded()
        .run()
        .map_err(|e| io::Error::other(format!("suffix array construction failed: {e:?}")))?
        .into_vec();
    // libsais gives non-negative `i32` positions.
    Ok(sa.into_iter().map(|p| p as u32).collect())
}

/// Hands every position of `text` to `f`, in the order of the first `length`
/// bytes of the suffix starting there (ties in any order), building suffix
/// arrays of at most `shard_bytes` positions in all at a time: one over the
/// whole text when it fits, else shards of `shard_bytes / threads` built by
/// `threads` threads at once. The order is the same for any `threads`.
pub fn for_each_sorted(
    text: &[u8],
    length: usize,
    shard_bytes: usize,
    threads: usize,
    mut f: impl FnMut(usize),
) -> io::Result<()> {
    if text.len() > u32::MAX as usize {
        return Err(io::Error::other(format!(
            "a corpus of {} bytes is over the 4 GiB this mode indexes",
            text.len()
        )));
    }
    let shard_bytes = shard_bytes.max(1);
    if text.len() <= shard_bytes {
        for p in suffix_array(text)? {
            f(p as usize);
        }
        return Ok(());
    }
    let threads = threads.clamp(1, shard_bytes);
    let shard_bytes = shard_bytes / threads;
    let starts: Vec<usize> = (0..text.len()).step_by(shard_bytes).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(io::Error::other)?;
    let built: Vec<io::Result<Shard>> = pool.install(|| {
        starts
            .par_iter()
            .map(|&start| shard(text, start, (start + shard_bytes).min(text.len()), length))
            .collect()
    });
    let mut shards = built.into_iter().collect::<io::Result<Vec<Shard>>>()?;
    let window = |p: usize| &text[p..(p + length).min(text.len())];
    let mut heap = BinaryHeap::new();
    for (i, s) in shards.iter_mut().enumerate() {
        if let Some(p) = s.next()? {
            heap.push(Reverse((window(p), p, i)));
        }
    }
    while let Some(Reverse((_, p, i))) = heap.pop() {
        f(p);
        if let Some(q) = shards[i].next()? {
            heap.push(Reverse((window(q), q, i)));
        }
    }
    Ok(())
}

/// The positions `start..end` of `text` sorted by their first `length` bytes,
/// written to a temporary file.
fn shard(text: &[u8], start: usize, end: usize, length: usize) -> io::Result<Shard> {
    let sa = suffix_array(&text[start..(end + length).min(text.len())])?;
    let mut file = BufWriter::new(tempfile::tempfile()?);
    for p in sa.into_iter().filter(|&p| (p as usize) < end - start) {
        file.write_all(&(start as u32 + p).to_le_bytes())?;
    }
    let mut file = file.into_inner().map_err(|e| e.into_error())?;
    io::Seek::rewind(&mut file)?;
    Ok(Shard(BufReader::with_capacity(1 << 20, file)))
}

/// A shard's sorted positions read back.
struct Shard(BufReader<File>);

impl Shard {
    fn next(&mut self) -> io::Result<Option<usize>> {
        let mut b = [0u8; 4];
        match self.0.read_exact(&mut b) {
            Ok(()) => Ok(Some(u32::from_le_bytes(b) as usize)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(e),
        }
    }
}
