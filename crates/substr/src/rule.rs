//! ExactSubstr's rule: which bytes of each text lie in a span of at least
//! `length` bytes that occurs more than once in the corpus.
//!
//! A span of `length` or more bytes repeats exactly when each of its windows of
//! `length` bytes does, so it is enough to find the repeated windows: they are
//! runs of neighbours in suffix-array order sharing their first `length` bytes.
//! [`Keep::None`] strikes every copy (their tool's `collect`); [`Keep::First`]
//! keeps the first copy in corpus order and strikes the windows that occurred
//! before, which is the union of `[p, p + LPF(p))` over the positions whose
//! longest previous factor `LPF(p)` is at least `length`.

use crate::corpus::{Corpus, SEPARATOR};
use crate::sarray::for_each_sorted;
use std::io;
use std::ops::Range;

/// Which copies of a repeated span are struck.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Keep {
    /// Every copy (ExactSubstr's tool).
    #[default]
    None,
    /// All but the first in corpus order.
    First,
}

/// The rule's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The shortest span struck, in bytes (their tool's `--length-threshold`).
    pub length: usize,
    pub keep: Keep,
    /// Positions of the suffix arrays in memory at once
    /// ([`crate::sarray::for_each_sorted`]).
    pub shard_bytes: usize,
    /// Threads building shards at once (they share `shard_bytes`).
    pub threads: usize,
}

/// The default shortest span: 100 bytes, as their tool's examples.
pub const DEFAULT_LENGTH: usize = 100;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            length: DEFAULT_LENGTH,
            keep: Keep::None,
            shard_bytes: usize::MAX,
            threads: 1,
        }
    }
}

/// A set of positions of the corpus, one bit each.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    /// The set positions in `range`, in order.
    fn iter(&self, range: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        range.filter(move |&i| self.0[i / 64] & (1 << (i % 64)) != 0)
    }
}

/// The spans to strike from each text of `corpus` (offsets in the text,
/// sorted, merged).
pub fn repeated_spans(corpus: &Corpus, settings: &Settings) -> io::Result<Vec<Vec<Range<usize>>>> {
    Ok(struck(corpus, settings, false)?.spans)
}

/// The spans to strike from each text, and where the first copy of each span's
/// first window is.
#[derive(Debug, Default)]
pub struct Struck {
    /// Per text: offsets in the text, sorted, merged.
    pub spans: Vec<Vec<Range<usize>>>,
    /// Per text and span (when asked for): the position in the corpus of the
    /// first occurrence of the window the span starts with (with every copy
    /// struck, the first copy is struck too, and may be the span itself).
    pub firsts: Vec<Vec<usize>>,
}

/// [`repeated_spans`], with the first copies when `firsts` (8 bytes of memory a
/// struck position).
pub fn struck(corpus: &Corpus, settings: &Settings, firsts: bool) -> io::Result<Struck> {
    let text = &corpus.bytes[..];
    let l = settings.length.max(1);
    let mut struck = Bits::new(text.len());
    // Struck positions and the first position of their window, when asked.
    let mut first_of: Vec<(u32, u32)> = Vec::new();
    // The run of positions sharing their first `l` bytes being read.
    let mut group: Vec<usize> = Vec::new();
    let mut flush = |group: &mut Vec<usize>, struck: &mut Bits| {
        if group.len() >= 2 {
            let first = *group.iter().min().unwrap_or(&0);
            for &p in group.iter() {
                if settings.keep == Keep::None || p != first {
                    struck.set(p);
                    if firsts {
                        // Positions fit in u32 (`for_each_sorted` checks).
                        first_of.push((p as u32, first as u32));
                    }
                }
            }
        }
        group.clear();
    };
    for_each_sorted(text, l, settings.shard_bytes, settings.threads, |p| {
        // A window that is not inside one text repeats nothing.
        let w = match text.get(p..p + l) {
            Some(w) if !w.contains(&SEPARATOR) => w,
            _ => return,
        };
        if let Some(&g) = group.first() {
            if text[g..g + l] != *w {
                flush(&mut group, &mut struck);
            }
        }
        group.push(p);
    })?;
    flush(&mut group, &mut struck);
    first_of.sort_unstable();
    let first = |p: usize| {
        let i = first_of.partition_point(|&(q, _)| (q as usize) < p);
        first_of.get(i).map_or(p, |&(_, f)| f as usize)
    };
    let mut out = Struck::default();
    for i in 0..corpus.len() {
        let r = corpus.text_range(i);
        let mut spans: Vec<Range<usize>> = Vec::new();
        let mut starts = Vec::new();
        for p in struck.iter(r.clone()) {
            let s = p - r.start;
            match spans.last_mut() {
                Some(last) if s <= last.end => last.end = s + l,
                _ => {
                    spans.push(s..s + l);
                    if firsts {
                        starts.push(first(p));
                    }
                }
            }
        }
        out.spans.push(spans);
        out.firsts.push(starts);
    }
    Ok(out)
}
