//! Repeated spans inside documents (substring mode), streamed on the key store.
//!
//! A document's text is cut into units, its words as written ([`tokens`]); every
//! window of `k` consecutive units gets a key, a rolling hash of their hashes. Storing every
//! window would cost a key a token, so only a sample is stored: robust winnowing
//! (Schleimer, Wilkerson, Aiken 2003) keeps, of each run of `w` consecutive window
//! keys, the smallest (the rightmost of equals), and records a position once however
//! many runs pick it: about 2/(w+1) of the windows. Every selected window is asked
//! test-and-insert; the union of the windows whose keys were seen before (in the
//! store, or earlier in the same request) is the document's removed part, the first
//! copy kept, but for stretches shorter than `min_bytes` bytes of text (ExactSubstr
//! strikes nothing shorter than its length; a short stretch of equal units is
//! where windows and bytes disagree most).
//!
//! **Guarantee.** Let a span of at least `k + w - 1` units occur in an earlier
//! document (or earlier in the same one). Its later copy has at least `w` windows;
//! the runs of `w` windows lying inside it pick the same positions in both copies
//! (the same keys in the same order), so those windows were stored by the first copy
//! and are seen in the second. Successive picks are at most `w` windows apart and a
//! window is `k >= w` tokens long, so their union is one stretch: the whole span is
//! removed but for at most `w - 1` units at each end (where the runs that pick
//! reach outside the span), if that stretch's units hold at least `min_bytes`
//! bytes (whitespace not counted). Nothing else is removed: every removed unit lies in a window of `k` units
//! seen before (up to 64-bit key collisions), in a stretch of at least `min_bytes`.

pub mod decide;
pub mod report;
pub mod tokens;
pub mod units;

pub use crate::options::SubstrParams;
use std::ops::Range;
use tokens::{Token, Tokenizer, LINE_START};
use webdedup_store::{Store, StoreError};
use webdedup_text::{key, KeyKind};

/// Odd, so that multiplying by it is a bijection of u64 (the rolling hash loses
/// nothing of the oldest token until it leaves the window).
const BASE: u64 = 0x9E37_79B9_7F4A_7C15;

/// The key of every window of `k` consecutive `hashes`, in order, into `out`
/// (cleared first; empty when there are fewer than `k`): a polynomial rolling
/// hash mod 2^64 of the unit hashes, the first one's [`tokens::LINE_START`] bit
/// left out (whether a window follows a line break or a space is no part of it),
/// mixed through xxh3 with the window kind's seed so that window keys are uniform
/// and never meet other kinds' keys.
pub fn window_keys(hashes: &[u64], k: usize, out: &mut Vec<u64>) {
    out.clear();
    if k == 0 || hashes.len() < k {
        return;
    }
    let top = BASE.wrapping_pow((k - 1) as u32);
    let mut h = hashes[..k]
        .iter()
        .fold(0u64, |h, &t| h.wrapping_mul(BASE).wrapping_add(t));
    let first_apart = |h: u64, first: u64| h.wrapping_sub((first & LINE_START).wrapping_mul(top));
    out.push(mix(first_apart(h, hashes[0])));
    for (i, (&old, &new)) in hashes.iter().zip(&hashes[k..]).enumerate() {
        h = h
            .wrapping_sub(old.wrapping_mul(top))
            .wrapping_mul(BASE)
            .wrapping_add(new);
        out.push(mix(first_apart(h, hashes[i + 1])));
    }
}

fn mix(h: u64) -> u64 {
    key(KeyKind::SubstrWindow, &h.to_le_bytes())
}

/// Robust winnowing: the positions of the smallest key of every run of `w`
/// consecutive `keys` (the rightmost of equals), each position once, in order, into
/// `out` (cleared first). Fewer than `w` keys: the position of their smallest.
pub fn winnow(keys: &[u64], w: usize, out: &mut Vec<u32>) {
    out.clear();
    if keys.is_empty() || w == 0 {
        return;
    }
    let w = w.min(keys.len());
    let rightmost_min = |r: Range<usize>| {
        r.rev()
            .min_by_key(|&i| keys[i])
            .expect("a winnowing run is not empty")
    };
    let mut m = rightmost_min(0..w);
    out.push(m as u32);
    for end in w + 1..=keys.len() {
        let start = end - w;
        if m < start {
            m = rightmost_min(start..end);
        } else if keys[end - 1] <= keys[m] {
            m = end - 1;
        }
        if out.last() != Some(&(m as u32)) {
            out.push(m as u32);
        }
    }
}

/// Bytes of text of the units `lens` (each unit's bytes; the whitespace between
/// them not counted, so that a stretch counts the same in every format): a
/// stretch's length as [`SubstrParams::min_bytes`] counts it.
pub fn stretch_bytes(lens: &[u32]) -> usize {
    lens.iter().map(|&l| l as usize).sum()
}

/// The union of the `k`-unit windows starting at the `selected` positions whose
/// key was `seen`, as unit ranges in order, into `out` (cleared first); stretches
/// shorter than `params.min_bytes` (`lens`: each unit's bytes of text) left out.
pub fn removed_tokens(
    selected: &[u32],
    seen: &[bool],
    params: SubstrParams,
    lens: &[u32],
    out: &mut Vec<Range<usize>>,
) {
    out.clear();
    for (&s, _) in selected.iter().zip(seen).filter(|(_, &seen)| seen) {
        let r = s as usize..s as usize + params.k;
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out.retain(|r| stretch_bytes(&lens[r.clone()]) >= params.min_bytes);
}

/// One document's tokens, window keys and picks; reusable.
#[derive(Default)]
pub struct DocWindows {
    pub tokens: Vec<Token>,
    hashes: Vec<u64>,
    lens: Vec<u32>,
    windows: Vec<u64>,
    /// The picked windows' positions (token indexes of their first tokens).
    pub selected: Vec<u32>,
    /// The picked windows' keys: what the store is asked.
    pub keys: Vec<u64>,
    removed: Vec<Range<usize>>,
}

impl DocWindows {
    /// Cuts `text` into tokens and picks its windows' keys (see the module docs).
    pub fn pick(&mut self, text: &str, params: SubstrParams, tokenizer: &mut Tokenizer) {
        tokenizer.tokens(text, &mut self.tokens);
        self.hashes.clear();
        self.hashes.extend(self.tokens.iter().map(|t| t.hash));
        self.lens.clear();
        self.lens
            .extend(self.tokens.iter().map(|t| t.bytes.len() as u32));
        window_keys(&self.hashes, params.k, &mut self.windows);
        winnow(&self.windows, params.w, &mut self.selected);
        self.keys.clear();
        let windows = &self.windows;
        self.keys
            .extend(self.selected.iter().map(|&s| windows[s as usize]));
    }

    /// The byte ranges of the text to remove, given the store's verdict on each of
    /// [`Self::keys`], into `out` (cleared first): from the first byte of a removed
    /// stretch's first token to the last byte of its last token.
    pub fn removed_bytes(
        &mut self,
        seen: &[bool],
        params: SubstrParams,
        out: &mut Vec<Range<usize>>,
    ) {
        removed_tokens(&self.selected, seen, params, &self.lens, &mut self.removed);
        out.clear();
        let tokens = &self.tokens;
        out.extend(
            self.removed
                .iter()
                .map(|r| tokens[r.start].bytes.start..tokens[r.end - 1].bytes.end),
        );
    }
}

/// Substring dedup of whole texts one at a time against a store: what the engine
/// does a chunk at a time, for tests, benchmarks and callers that hold texts.
pub struct TextDedup<'a> {
    store: &'a dyn Store,
    params: SubstrParams,
    tokenizer: Tokenizer,
    doc: DocWindows,
    seen: Vec<bool>,
}

impl<'a> TextDedup<'a> {
    pub fn new(store: &'a dyn Store, params: SubstrParams) -> Self {
        TextDedup {
            store,
            params,
            tokenizer: Tokenizer::new(),
            doc: DocWindows::default(),
            seen: Vec::new(),
        }
    }

    /// Stores `text`'s picked windows and gives the byte ranges of it that repeat
    /// what came before, into `out` (cleared first). Returns the keys asked.
    pub fn dedup(&mut self, text: &str, out: &mut Vec<Range<usize>>) -> Result<usize, StoreError> {
        self.doc.pick(text, self.params, &mut self.tokenizer);
        self.store.test_and_insert(&self.doc.keys, &mut self.seen)?;
        self.doc.removed_bytes(&self.seen, self.params, out);
        Ok(self.doc.keys.len())
    }
}

/// `text` without the byte ranges `removed` (in order, not overlapping).
pub fn strike_text(text: &str, removed: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in removed {
        out.push_str(&text[at..r.start]);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests;
