//! From document text to feature hashes: the tokenizers, word shingles and the
//! feature hash. Everything here is part of the pinned algorithm (see `docs/simhash.md`):
//! changing it changes every fingerprint, so the settings are written into the
//! headers of fingerprint files and of the index.
//!
//! * `unicode`: the text lowercased (`str::to_lowercase`), then the Unicode (UAX #29)
//!   words that contain at least one letter or digit (`unicode_words`).
//! * `charabia`: the charabia tokenizer (built without the downloaded Japanese/Korean
//!   dictionaries), word tokens only, their lemma (charabia's normalized form) trimmed,
//!   empty ones dropped — the source system's choice. Chinese is segmented by jieba.
//! * `chars:N`: the text normalized by webdedup's `loose` normalization with all
//!   whitespace removed, then every window of `N` consecutive characters (a text
//!   shorter than `N` characters gives one token, the whole text).
//!
//! Features are the shingles of `S` consecutive tokens (a text with fewer than `S`
//! tokens gives one feature made of all of them); the feature hash is xxh3-64 (seed 0)
//! of the shingle's tokens joined by one space. With `weights=count` each occurrence
//! weighs 1 (weight = count); with `weights=distinct` each distinct feature weighs 1.

use crate::core::Accumulator;
use std::fmt;
use std::str::FromStr;
use unicode_segmentation::UnicodeSegmentation;
use webdedup_text::{Normalization, TextBuilder};
use xxhash_rust::xxh3::xxh3_64;

/// How text becomes tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tokenizer {
    Unicode,
    Charabia,
    Chars(usize),
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tokenizer::Unicode => f.write_str("unicode"),
            Tokenizer::Charabia => f.write_str("charabia"),
            Tokenizer::Chars(n) => write!(f, "chars:{n}"),
        }
    }
}

impl FromStr for Tokenizer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "unicode" => Ok(Tokenizer::Unicode),
            "charabia" => Ok(Tokenizer::Charabia),
            _ => {
                if let Some(n) = s.strip_prefix("chars:") {
                    match n.parse::<usize>() {
                        Ok(n) if (1..=64).contains(&n) => Ok(Tokenizer::Chars(n)),
                        _ => Err(format!("bad character n-gram size in '{s}' (expected chars:N with 1 <= N <= 64)")),
                    }
                } else {
                    Err(format!(
                        "unknown tokenizer '{s}' (expected unicode, charabia or chars:N)"
                    ))
                }
            }
        }
    }
}

/// How features weigh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Weights {
    /// Weight = number of occurrences of the feature in the document.
    #[default]
    Count,
    /// Every distinct feature weighs 1 (the document as a set, like Jaccard).
    Distinct,
}

webdedup_text::named_choices! {
    Weights, "weights", quote "", {
        Count => "count",
        Distinct => "distinct",
    }
}

/// The settings that decide a fingerprint. Written into fingerprint-file and index
/// headers as `tokenizer=... shingle=... weights=... hash=xxh3-64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Settings {
    pub tokenizer: Tokenizer,
    pub shingle: usize,
    pub weights: Weights,
}

impl Settings {
    pub fn new(tokenizer: Tokenizer, shingle: usize, weights: Weights) -> Settings {
        Settings {
            tokenizer,
            shingle,
            weights,
        }
    }
}

/// Defaults, chosen from the quality study (docs/simhash.md, BENCHMARKS part): on
/// web3, unicode / distinct / 5 has the best F1 against word 5-gram Jaccard >= 0.8.
pub const DEFAULT_TOKENIZER: Tokenizer = Tokenizer::Unicode;
pub const DEFAULT_SHINGLE: usize = 5;
pub const DEFAULT_WEIGHTS: Weights = Weights::Distinct;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tokenizer: DEFAULT_TOKENIZER,
            shingle: DEFAULT_SHINGLE,
            weights: DEFAULT_WEIGHTS,
        }
    }
}

impl Settings {
    /// `tokenizer=unicode shingle=3 weights=count hash=xxh3-64`
    pub fn describe(&self) -> String {
        format!(
            "tokenizer={} shingle={} weights={} hash=xxh3-64",
            self.tokenizer, self.shingle, self.weights
        )
    }

    /// Parses what [`describe`](Self::describe) writes, with the command line's
    /// checks (a header is trusted no more than a flag): every key once at most,
    /// none missing, none unknown.
    pub fn parse(s: &str) -> Result<Settings, String> {
        let (mut tok, mut sh, mut hash, mut weights) = (None, None, None, None);
        for w in s.split_whitespace() {
            let Some((k, v)) = w.split_once('=') else {
                return Err(format!("'{w}' in settings '{s}' is not KEY=VALUE"));
            };
            match k {
                "tokenizer" => tok = Some(v.parse::<Tokenizer>()?),
                "shingle" => sh = Some(parse_shingle(v)?),
                "hash" => hash = Some(v.to_string()),
                "weights" => weights = Some(v.parse::<Weights>()?),
                _ => {
                    return Err(format!(
                        "unknown setting '{k}' in '{s}' (expected tokenizer, shingle, weights and hash)"
                    ))
                }
            }
        }
        match (tok, sh, weights, hash.as_deref()) {
            (Some(tokenizer), Some(shingle), Some(weights), Some("xxh3-64")) => Ok(Settings {
                tokenizer,
                shingle,
                weights,
            }),
            (_, _, _, Some(h)) if h != "xxh3-64" => Err(format!("unknown feature hash '{h}'")),
            _ => Err(format!("incomplete settings '{s}'")),
        }
    }
}

/// Largest `--shingle` (and `shingle=` of a header).
pub const MAX_SHINGLE: usize = 64;

/// A shingle size: `--shingle` and the `shingle=` of every header.
pub fn parse_shingle(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_SHINGLE).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}' is not a shingle size between 1 and {MAX_SHINGLE}"
        )),
    }
}

/// Turns documents into fingerprints, reusing its buffers. One per thread.
pub struct Fingerprinter {
    settings: Settings,
    /// The text the tokens are slices of (lowercased / normalized / lemmas).
    buf: String,
    spans: Vec<(u32, u32)>,
    scratch: Vec<u8>,
    /// Spans of the tokens in `scratch` (tokens joined by spaces).
    joined: Vec<(u32, u32)>,
    /// The features to accumulate (each distinct one once with `weights=distinct`).
    feats: Vec<u64>,
    distinct: DistinctSet,
    norm: TextBuilder,
    acc: Accumulator,
}

impl Fingerprinter {
    pub fn new(settings: Settings) -> Self {
        assert!(settings.shingle >= 1, "shingle size must be at least 1");
        Fingerprinter {
            settings,
            buf: String::new(),
            spans: Vec::new(),
            scratch: Vec::new(),
            joined: Vec::new(),
            feats: Vec::new(),
            distinct: DistinctSet::default(),
            norm: TextBuilder::new(Normalization::Loose),
            acc: Accumulator::new(),
        }
    }

    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// The fingerprint of `text`, or `None` when it has no token (empty document).
    pub fn fingerprint(&mut self, text: &str) -> Option<u64> {
        self.tokenize(text);
        if self.spans.is_empty() {
            return None;
        }
        Some(self.accumulate())
    }

    /// The fingerprint of the current tokens under the current settings.
    fn accumulate(&mut self) -> u64 {
        let mut acc = std::mem::take(&mut self.acc);
        acc.clear();
        let mut feats = std::mem::take(&mut self.feats);
        feats.clear();
        match self.settings.weights {
            Weights::Count => self.for_each_feature(|h| feats.push(h)),
            Weights::Distinct => {
                // Each distinct feature once: sums are the same in any order, so a
                // set that keeps first occurrences is enough (no sort).
                let mut set = std::mem::take(&mut self.distinct);
                set.start(self.feature_count());
                let mut crowded = false;
                self.for_each_feature(|h| match set.insert(h) {
                    Some(true) => feats.push(h),
                    Some(false) => {}
                    None => {
                        crowded = true;
                        feats.push(h)
                    }
                });
                set.clear();
                self.distinct = set;
                if crowded {
                    // Hashes crafted to share their low bits would make the set
                    // quadratic: sort instead (the same distinct features).
                    feats.sort_unstable();
                    feats.dedup();
                }
            }
        }
        acc.push_all(&feats);
        self.feats = feats;
        let h = acc.finish();
        self.acc = acc;
        h
    }

    /// Fingerprints of `text` for several shingle sizes, tokenizing once (studies).
    pub fn fingerprints_multi(&mut self, text: &str, shingles: &[usize]) -> Vec<Option<u64>> {
        self.tokenize(text);
        let keep = self.settings;
        let out = shingles
            .iter()
            .map(|&sh| {
                if self.spans.is_empty() {
                    return None;
                }
                self.settings.shingle = sh.max(1);
                Some(self.accumulate())
            })
            .collect();
        self.settings = keep;
        out
    }

    /// The feature hashes of `text` in order (for tests and studies).
    pub fn features(&mut self, text: &str) -> Vec<u64> {
        self.tokenize(text);
        let mut v = Vec::new();
        self.for_each_feature(|h| v.push(h));
        v
    }

    /// The tokens of `text` (for tests and documentation).
    pub fn tokens(&mut self, text: &str) -> Vec<String> {
        self.tokenize(text);
        self.spans
            .iter()
            .map(|&(a, b)| self.buf[a as usize..b as usize].to_string())
            .collect()
    }

    fn tokenize(&mut self, text: &str) {
        self.buf.clear();
        self.spans.clear();
        match self.settings.tokenizer {
            Tokenizer::Unicode => {
                lowercase_into(text, &mut self.buf);
                uax29_words(&self.buf, &mut self.spans);
            }
            Tokenizer::Charabia => {
                use charabia::Tokenize;
                for t in text.tokenize() {
                    if !t.is_word() {
                        continue;
                    }
                    let l = t.lemma().trim();
                    if l.is_empty() {
                        continue;
                    }
                    let a = self.buf.len();
                    self.buf.push_str(l);
                    self.spans.push((a as u32, self.buf.len() as u32));
                }
            }
            Tokenizer::Chars(n) => {
                self.norm.clear();
                self.norm.push_word(text.as_bytes(), false);
                // Loose normalization of valid UTF-8 is valid UTF-8.
                let t = std::str::from_utf8(self.norm.text()).unwrap_or("");
                self.buf.extend(t.chars().filter(|c| !c.is_whitespace()));
                let starts: Vec<u32> = self
                    .buf
                    .char_indices()
                    .map(|(i, _)| i as u32)
                    .chain([self.buf.len() as u32])
                    .collect();
                let chars = starts.len() - 1;
                if chars == 0 {
                } else if chars <= n {
                    self.spans.push((0, self.buf.len() as u32));
                } else {
                    for i in 0..=chars - n {
                        self.spans.push((starts[i], starts[i + n]));
                    }
                }
            }
        }
    }

    /// How many features [`for_each_feature`](Self::for_each_feature) will give.
    fn feature_count(&self) -> usize {
        let (n, s) = (self.spans.len(), self.settings.shingle);
        match n {
            0 => 0,
            _ if s == 1 => n,
            _ if n <= s => 1,
            _ => n - s + 1,
        }
    }

    fn for_each_feature(&mut self, mut f: impl FnMut(u64)) {
        let s = self.settings.shingle;
        let buf = self.buf.as_bytes();
        let spans = &self.spans;
        if spans.is_empty() {
            return;
        }
        if s == 1 {
            for &(a, b) in spans {
                f(xxh3_64(&buf[a as usize..b as usize]));
            }
            return;
        }
        let windows = if spans.len() <= s {
            1
        } else {
            spans.len() - s + 1
        };
        let w = s.min(spans.len());
        // All tokens joined by one space, once: every shingle is then a contiguous
        // slice of it (no per-shingle copy). Tokens that already follow each other
        // with one space between them in `buf` (most do) are copied as one run.
        self.scratch.clear();
        self.joined.clear();
        let (mut run_a, mut run_b) = (spans[0].0 as usize, spans[0].1 as usize);
        let mut run_at = 0; // where the run starts in `scratch`
        self.joined.push((0, (run_b - run_a) as u32));
        for &(a, b) in &spans[1..] {
            let (a, b) = (a as usize, b as usize);
            if a != run_b + 1 || buf[run_b] != b' ' {
                self.scratch.extend_from_slice(&buf[run_a..run_b]);
                self.scratch.push(b' ');
                (run_a, run_at) = (a, self.scratch.len());
            }
            run_b = b;
            let at = run_at + (a - run_a);
            self.joined.push((at as u32, (at + b - a) as u32));
        }
        self.scratch.extend_from_slice(&buf[run_a..run_b]);
        for i in 0..windows {
            let a = self.joined[i].0 as usize;
            let b = self.joined[i + w - 1].1 as usize;
            f(xxh3_64(&self.scratch[a..b]));
        }
    }
}

/// A set of 64-bit feature hashes for one document at a time: open addressing with
/// linear probing at most half full, in a table kept between documents (only the
/// slots used are cleared). Feature hashes are xxh3 outputs, so their low bits index
/// the table directly.
#[derive(Default)]
struct DistinctSet {
    slots: Vec<u64>,
    /// Slots used by the current document.
    used: Vec<u32>,
    /// 0 marks an empty slot, so the value 0 is kept as a flag.
    has_zero: bool,
}

impl DistinctSet {
    /// Makes room for `n` values.
    fn start(&mut self, n: usize) {
        let want = (2 * n).next_power_of_two().max(64);
        if self.slots.len() < want {
            self.slots = vec![0; want];
        }
    }

    /// Adds `h`; whether it was not there yet, or `None` (and `h` not added) when
    /// its probe sequence is abnormally long (the caller then deduplicates another
    /// way), so that no input makes a document quadratic.
    #[inline]
    fn insert(&mut self, h: u64) -> Option<bool> {
        /// At most half full, a probe sequence of random hashes is a few slots.
        const MAX_PROBES: usize = 128;
        if h == 0 {
            return Some(!std::mem::replace(&mut self.has_zero, true));
        }
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        for _ in 0..MAX_PROBES {
            let s = self.slots[i];
            if s == h {
                return Some(false);
            }
            if s == 0 {
                self.slots[i] = h;
                self.used.push(i as u32);
                return Some(true);
            }
            i = (i + 1) & mask;
        }
        None
    }

    fn clear(&mut self) {
        for &i in &self.used {
            self.slots[i as usize] = 0;
        }
        self.used.clear();
        self.has_zero = false;
    }
}

/// Appends `text.to_lowercase()` to `out`, faster: ASCII runs are copied and lowercased
/// in bulk, other characters one by one with `char::to_lowercase`. That equals
/// `str::to_lowercase` except for its one context rule (Greek final sigma), so text
/// with a capital sigma takes `str::to_lowercase` itself.
pub fn lowercase_into(text: &str, out: &mut String) {
    if text.contains('Σ') {
        out.push_str(&text.to_lowercase());
        return;
    }
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        i += ascii_run(&b[i..]);
        if i > start {
            let at = out.len();
            out.push_str(&text[start..i]);
            out[at..].make_ascii_lowercase();
        }
        if i < b.len() {
            let c = text[i..].chars().next().expect("char boundary");
            out.extend(c.to_lowercase());
            i += c.len_utf8();
        }
    }
}

/// Length of the ASCII prefix of `b`, eight bytes at a time.
#[inline]
fn ascii_run(b: &[u8]) -> usize {
    let mut i = 0;
    for w in b.chunks_exact(8) {
        let x = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        let high = x & 0x8080_8080_8080_8080;
        if high != 0 {
            return i + (high.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + b[i..].iter().take_while(|c| c.is_ascii()).count()
}

/// Appends the spans of `unicode_words(text)` to `spans`, with a fast path for ASCII.
///
/// The text is cut into chunks at ASCII whitespace that is followed by an ASCII byte
/// (or the end): UAX #29 always breaks there (before a whitespace character, and
/// after one unless an Extend/Format/ZWJ character follows, which is never ASCII), so
/// the words of the whole text are the words of its chunks. ASCII chunks are
/// segmented by [`ascii_words`]; the others by `unicode-segmentation`.
pub fn uax29_words(text: &str, spans: &mut Vec<(u32, u32)>) {
    let b = text.as_bytes();
    let mut start = 0;
    // The SCAN classes of the chunk's bytes, or-ed.
    let mut seen = 0u8;
    for (i, &c) in b.iter().enumerate() {
        let k = SCAN[c as usize];
        if k == S_SPACE && b.get(i + 1).is_none_or(|n| n.is_ascii()) {
            chunk_words(text, start, i, seen, spans);
            start = i + 1;
            seen = 0;
        } else {
            seen |= k;
        }
    }
    chunk_words(text, start, b.len(), seen, spans);
}

// Byte classes of the chunk scan. A chunk made only of ASCII letters and digits
// (most chunks: a whole word) is one word; an ASCII chunk without any (a
// punctuation token) has none.
const S_SPACE: u8 = 1; // ASCII whitespace (`u8::is_ascii_whitespace`)
const S_OTHER: u8 = 2; // any other ASCII byte that is not a letter or digit
const S_HIGH: u8 = 4; // a byte of a non-ASCII character
const S_ALNUM: u8 = 8; // an ASCII letter or digit

static SCAN: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = if b >= 0x80 {
            S_HIGH
        } else if b.is_ascii_whitespace() {
            S_SPACE
        } else if b.is_ascii_alphanumeric() {
            S_ALNUM
        } else {
            S_OTHER
        };
        c += 1;
    }
    t
};

/// The words of the chunk `text[a..e]` whose bytes have the SCAN classes `seen`.
#[inline]
fn chunk_words(text: &str, a: usize, e: usize, seen: u8, spans: &mut Vec<(u32, u32)>) {
    if seen == S_ALNUM {
        // Only letters and digits: WB5, WB8, WB9, WB10 keep them together.
        spans.push((a as u32, e as u32));
    } else if seen & S_HIGH != 0 {
        other_words(text, a, e, spans);
    } else if seen & S_ALNUM != 0 {
        // ASCII with punctuation: words are the segments with a letter or digit
        // (a chunk without letters or digits has none).
        ascii_words(&text.as_bytes()[a..e], a, spans);
    }
}

/// The words of a chunk with non-ASCII characters.
#[inline(never)]
fn other_words(text: &str, a: usize, e: usize, spans: &mut Vec<(u32, u32)>) {
    if !simple_words(&text[a..e], a, spans) {
        let chunk = &text[a..e];
        let base = chunk.as_ptr() as usize;
        for w in chunk.unicode_words() {
            let s = a + (w.as_ptr() as usize - base);
            spans.push((s as u32, (s + w.len()) as u32));
        }
    }
}

// Word_Break classes (UAX #29) of ASCII characters and of the other characters
// `simple_class` knows.
const OT: u8 = 0; // Other
const AL: u8 = 1; // ALetter
const NU: u8 = 2; // Numeric
const EX: u8 = 3; // ExtendNumLet: _
const ML: u8 = 4; // MidLetter: :
const MB: u8 = 5; // MidNumLet or Single_Quote: . '
const MN: u8 = 6; // MidNum: , ;
const ID: u8 = 7; // Other, but a letter: Han ideographs and Hiragana, one word each
const KA: u8 = 8; // Katakana (letters only)

/// Whether a character of class `k` makes its segment a word (`unicode_words` keeps
/// the segments with an alphanumeric character).
#[inline]
fn is_alnum(k: u8) -> bool {
    (1u32 << (k & 31)) & (1 << AL | 1 << NU | 1 << ID | 1 << KA) != 0
}

static WB: [u8; 128] = {
    let mut t = [OT; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = if b.is_ascii_alphabetic() {
            AL
        } else if b.is_ascii_digit() {
            NU
        } else {
            match b {
                b'_' => EX,
                b':' => ML,
                b'.' | b'\'' => MB,
                b',' | b';' => MN,
                _ => OT,
            }
        };
        c += 1;
    }
    t
};

/// The Word_Break class of characters whose rules the ASCII classes cover: ASCII,
/// Latin-1, Latin Extended-A/B, Greek and Cyrillic letters (ALetter, no special
/// rule), Han ideographs and Hiragana (Other, but letters), Katakana letters, the
/// typographic apostrophes (MidNumLet), full-width CJK punctuation (MidNum, MidLetter,
/// MidNumLet or Other) and a few common symbols (Other). Never Extend, Format or ZWJ
/// (which attach to the previous character), never a letter that is not alphabetic.
/// `None` for anything else. (The proptests below check these against
/// `unicode-segmentation`.)
#[inline]
fn simple_class(c: char) -> Option<u8> {
    Some(match c {
        '\0'..='\x7f' => WB[c as usize],
        '\u{d7}' | '\u{f7}' => return None,
        '\u{c0}'..='\u{24f}' | '\u{400}'..='\u{481}' | '\u{48a}'..='\u{52f}' => AL,
        '\u{386}'
        | '\u{388}'..='\u{38a}'
        | '\u{38c}'
        | '\u{38e}'..='\u{3a1}'
        | '\u{3a3}'..='\u{3f5}'
        | '\u{3f7}'..='\u{3ff}'
        | '\u{3005}' => AL,
        '\u{3041}'..='\u{3096}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' => ID,
        '\u{30a1}'..='\u{30fa}' | '\u{30fc}'..='\u{30ff}' => KA,
        '\u{2018}' | '\u{2019}' | '\u{ff0e}' => MB,
        '\u{ff0c}' | '\u{ff1b}' => MN,
        '\u{ff1a}' => ML,
        '¶' | '§' | '—' | '–' | '“' | '”' | '„' | '«' | '»' | '©' | '®' | '°' | '\u{a0}' | '…'
        | '•' | '€' | '™' | '、' | '。' | '「' | '」' | '『' | '』' | '（' | '）' | '！' | '？'
        | '・' => OT,
        // Arrows, box drawing.
        '\u{2190}'..='\u{21ff}' | '\u{2500}'..='\u{257f}' => OT,
        _ => return None,
    })
}

/// UAX #29 words of a chunk made only of [`simple_class`] characters, by the same
/// rules as [`ascii_words`]. Returns false (and adds nothing) otherwise.
fn simple_words(chunk: &str, base: usize, spans: &mut Vec<(u32, u32)>) -> bool {
    let len = spans.len();
    let chars = chunk
        .char_indices()
        .map(|(i, c)| simple_class(c).map(|k| (base + i, k)));
    if segment(chars, base + chunk.len(), spans) {
        true
    } else {
        spans.truncate(len);
        false
    }
}

/// UAX #29 words of an ASCII string (rules WB5-WB13b; the others never apply to ASCII
/// without whitespace), keeping the segments that contain a letter or digit, as
/// `unicode_words` does. `base` is added to the spans.
pub fn ascii_words(s: &[u8], base: usize, spans: &mut Vec<(u32, u32)>) {
    // `segment` over bytes, without its per-character Option.
    let mut classes = s.iter().map(|&c| WB[(c & 0x7f) as usize]);
    let Some(mut a) = classes.next() else {
        return;
    };
    let mut b = classes.next().unwrap_or(NONE);
    let mut back2 = NONE;
    let mut seg_start = 0;
    let mut has_alnum = is_alnum(a);
    for i in 1..s.len() {
        let c = classes.next().unwrap_or(NONE);
        if !keep_together(back2, a, b, c) {
            if has_alnum {
                spans.push(((base + seg_start) as u32, (base + i) as u32));
            }
            seg_start = i;
            has_alnum = false;
        }
        has_alnum |= is_alnum(b);
        (back2, a, b) = (a, b, c);
    }
    if has_alnum {
        spans.push(((base + seg_start) as u32, (base + s.len()) as u32));
    }
}

/// The class of a position before the start or past the end: equals none.
const NONE: u8 = u8::MAX;

/// Rules WB5-WB13b: whether the boundary between `a` and `b` is no word break, given
/// the classes `back2` before `a` and `c` after `b` (NONE at the ends).
#[inline]
fn keep_together(back2: u8, a: u8, b: u8, c: u8) -> bool {
    match KEEP[(a & 15) as usize][(b & 15) as usize] {
        K_YES => true,
        K_NO => false,
        K_IF_NEXT_AL => c == AL,
        K_IF_BACK_AL => back2 == AL,
        K_IF_NEXT_NU => c == NU,
        _ => back2 == NU,
    }
}

// What KEEP says about a boundary.
const K_NO: u8 = 0;
const K_YES: u8 = 1;
const K_IF_NEXT_AL: u8 = 2;
const K_IF_BACK_AL: u8 = 3;
const K_IF_NEXT_NU: u8 = 4;
const K_IF_BACK_NU: u8 = 5;

/// Rules WB5-WB13b as a table by (class before, class after) (one load instead of a
/// chain of comparisons: this runs for every byte of ASCII chunks with punctuation).
/// 16 x 16, so that indexing by `class & 15` needs no bounds check.
// One branch per rule of the standard, even where two give the same answer.
#[allow(clippy::if_same_then_else)]
static KEEP: [[u8; 16]; 16] = {
    let mut t = [[K_NO; 16]; 16];
    let mut a = 0;
    while a < 9 {
        let mut b = 0;
        while b < 9 {
            let (x, y) = (a as u8, b as u8);
            let (x_alnum, y_alnum) = (x == AL || x == NU, y == AL || y == NU);
            t[a][b] = if x_alnum && y_alnum {
                K_YES // WB5, WB8, WB9, WB10
            } else if (x_alnum || x == EX || x == KA) && y == EX {
                K_YES // WB13a
            } else if x == EX && (y_alnum || y == KA) {
                K_YES // WB13b
            } else if x == KA && y == KA {
                K_YES // WB13
            } else if x == AL && (y == ML || y == MB) {
                K_IF_NEXT_AL // WB6
            } else if (x == ML || x == MB) && y == AL {
                K_IF_BACK_AL // WB7
            } else if x == NU && (y == MN || y == MB) {
                K_IF_NEXT_NU // WB12
            } else if (x == MN || x == MB) && y == NU {
                K_IF_BACK_NU // WB11
            } else {
                K_NO
            };
            b += 1;
        }
        a += 1;
    }
    t
};

/// The word rules ([`keep_together`]) over characters given as `Some((byte offset,
/// class))` in order, `end` being the offset after the last one; pushes the spans of
/// the segments with a letter or digit. Stops and returns false at the first `None` (a character it does
/// not know), having maybe pushed some spans already. Each character is looked at
/// once: the classes around the boundary roll along in locals.
#[inline]
fn segment(
    mut chars: impl Iterator<Item = Option<(usize, u8)>>,
    end: usize,
    spans: &mut Vec<(u32, u32)>,
) -> bool {
    let (mut seg_start, mut a) = match chars.next() {
        None => return true,
        Some(None) => return false,
        Some(Some(x)) => x,
    };
    // Before the boundary at `at`: back2, a; after it: b (at `at`), c.
    let (mut at, mut b) = match chars.next() {
        None => (end, NONE),
        Some(None) => return false,
        Some(Some(x)) => x,
    };
    let mut back2 = NONE;
    let mut has_alnum = is_alnum(a);
    while b != NONE {
        let (next_at, c) = match chars.next() {
            None => (end, NONE),
            Some(None) => return false,
            Some(Some(x)) => x,
        };
        let keep = keep_together(back2, a, b, c);
        if !keep {
            if has_alnum {
                spans.push((seg_start as u32, at as u32));
            }
            seg_start = at;
            has_alnum = false;
        }
        has_alnum |= is_alnum(b);
        (back2, a, b, at) = (a, b, c, next_at);
    }
    if has_alnum {
        spans.push((seg_start as u32, end as u32));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{hamming, simhash};

    fn fp(tok: Tokenizer, shingle: usize) -> Fingerprinter {
        Fingerprinter::new(Settings {
            tokenizer: tok,
            shingle,
            weights: Weights::Count,
        })
    }

    #[test]
    fn tokenizer_names_round_trip() {
        for t in ["unicode", "charabia", "chars:3"] {
            assert_eq!(t.parse::<Tokenizer>().unwrap().to_string(), t);
        }
        assert!("chars:0".parse::<Tokenizer>().is_err());
        assert!("chars:x".parse::<Tokenizer>().is_err());
        assert!("icu".parse::<Tokenizer>().is_err());
        let s = Settings {
            tokenizer: Tokenizer::Chars(2),
            shingle: 4,
            weights: Weights::Count,
        };
        assert_eq!(Settings::parse(&s.describe()).unwrap(), s);
        assert!(Settings::parse("tokenizer=unicode shingle=3 hash=fnv").is_err());
        assert!(Settings::parse("tokenizer=unicode").is_err());
    }

    #[test]
    fn unicode_tokens_are_lowercased_uax29_words() {
        let mut f = fp(Tokenizer::Unicode, 1);
        assert_eq!(
            f.tokens("The QUICK, brown fox can't 3.14 — Příliš!"),
            ["the", "quick", "brown", "fox", "can't", "3.14", "příliš"]
        );
        assert!(f.tokens("  ... ¶ —  ").is_empty());
    }

    fn reference_words(t: &str) -> Vec<&str> {
        t.unicode_words().collect()
    }

    fn fast_words(t: &str) -> Vec<&str> {
        let mut spans = Vec::new();
        uax29_words(t, &mut spans);
        spans
            .iter()
            .map(|&(a, b)| &t[a as usize..b as usize])
            .collect()
    }

    #[test]
    fn ascii_fast_path_equals_unicode_segmentation_examples() {
        for t in [
            "a.b.c a:b a'b 3.14 1,000,000 1;2 a.1 1.a _a a_ __ _1_ a__b 'a' a.. ..a a..b 1..2 can't. e.g. x:y:z",
            "hello, world! (foo) [bar] {baz} a-b a/b a+b #1 $2 %3 ^ & * = ~ ` | \\ < > ?",
            "Příliš žluťoučký kůň — úpěl ďábelské ódy ¶ 中文分词 日本語のテキスト カタカナ",
            "a \u{301}b x\u{200d}y e\u{301}.f mixed ascii and ünïcödé words.",
            "Příliš žluťoučký kůň úpěl ďábelské ódy. Größe: 3,5 m² — «Привет, мир!» ¶ § © ° 1.ž ž.1 ž'ž ж:ж",
            "",
            "   ",
            "\r\n\ta\r\nb\n\n",
        ] {
            assert_eq!(fast_words(t), reference_words(t), "{t:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn ascii_fast_path_equals_unicode_segmentation(t in "[a-cA-C0-2_:.',;\\- \t\n\"!é\u{301}]{0,24}") {
            proptest::prop_assert_eq!(fast_words(&t), reference_words(&t));
        }

        #[test]
        fn simple_fast_path_equals_unicode_segmentation(
            t in "[a-b0-1_:.',; \"!éÿĀžƀɏжЯёӿ×÷¶§—–“”„«»©®°·\u{ad}\u{2019}\u{483}\u{301}\u{200d}ª中ア]{0,20}"
        ) {
            proptest::prop_assert_eq!(fast_words(&t), reference_words(&t));
        }

        #[test]
        fn lowercase_into_equals_to_lowercase(t in "[aZ0 .ÉéŽİIΣσςΑ ΒΓ\u{130}\u{1e9e}ǅǄЖж\u{301}中]{0,16}") {
            let mut out = String::from("x");
            lowercase_into(&t, &mut out);
            proptest::prop_assert_eq!(out, format!("x{}", t.to_lowercase()));
        }

        #[test]
        fn simple_only_chunks_equal_unicode_segmentation(t in "[a0_:.',; éžƀжЯ¶—«°]{0,30}") {
            proptest::prop_assert_eq!(fast_words(&t), reference_words(&t));
        }

        // The Greek, CJK and punctuation classes of `simple_class`, with characters
        // just outside its ranges (which must take the general path).
        #[test]
        fn greek_cjk_and_punctuation_classes_equal_unicode_segmentation(
            t in "[a1_:.,' \t→⇿\u{218f}─╿\u{2580}αΩάΐ\u{385}\u{386}\u{387}\u{3f5}\u{3f6}\u{3ff}ԯ\u{530}中丂\u{3400}\u{4dbf}\u{4dc0}\u{9fff}ぁゖ\u{3097}\u{3099}゛ァヺ\u{30a0}・ーヿ々\u{2018}\u{2019}\u{2024}，；：．０\u{a0}…•€™、。「」（）！？\u{200d}]{0,24}"
        ) {
            proptest::prop_assert_eq!(fast_words(&t), reference_words(&t));
        }
    }

    #[test]
    fn feature_hash_is_xxh3_of_space_joined_shingle() {
        let mut f = fp(Tokenizer::Unicode, 2);
        let feats = f.features("A b, C");
        assert_eq!(feats, vec![xxh3_64(b"a b"), xxh3_64(b"b c")]);
        // Fewer tokens than the shingle: one feature of all of them.
        let mut f3 = fp(Tokenizer::Unicode, 5);
        assert_eq!(f3.features("a b"), vec![xxh3_64(b"a b")]);
        assert_eq!(f3.fingerprint("a b"), Some(simhash(&[xxh3_64(b"a b")])));
        assert_eq!(f3.fingerprint(" , "), None);
    }

    #[test]
    fn pinned_fingerprints() {
        // Test vectors written into docs/simhash.md; they change only if the algorithm does.
        let text = "i think a is the best";
        let mut u1 = fp(Tokenizer::Unicode, 1);
        let h1 = u1.fingerprint(text).unwrap();
        let expect1 =
            simhash(&["i", "think", "a", "is", "the", "best"].map(|w| xxh3_64(w.as_bytes())));
        assert_eq!(h1, expect1);
        let mut u3 = fp(Tokenizer::Unicode, 3);
        let h3 = u3.fingerprint(text).unwrap();
        assert_eq!(
            h3,
            simhash(
                &["i think a", "think a is", "a is the", "is the best"]
                    .map(|w| xxh3_64(w.as_bytes()))
            )
        );
        assert_eq!((h1, h3), (0xa286_9500_0cb3_0a2c, 0x1ea9_6c01_42ac_5510));
    }

    #[test]
    fn distinct_set_gives_up_on_crowded_probes() {
        let mut set = DistinctSet::default();
        set.start(1000);
        // Values sharing their low bits all probe from one slot: after a bounded
        // number of probes the set refuses rather than going quadratic.
        let crowded: Vec<u64> = (1..1000u64).map(|i| i << 40).collect();
        let answers: Vec<Option<bool>> = crowded.iter().map(|&h| set.insert(h)).collect();
        assert!(answers[..100].iter().all(|a| *a == Some(true)));
        assert!(answers.contains(&None));
        assert_eq!(set.insert(crowded[5]), Some(false));
        assert_eq!(set.insert(0), Some(true));
        assert_eq!(set.insert(0), Some(false));
        set.clear();
        assert_eq!(set.insert(crowded[5]), Some(true));
    }

    #[test]
    fn distinct_weights_ignore_repetition() {
        let d = |t: &str| {
            Fingerprinter::new(Settings::new(Tokenizer::Unicode, 1, Weights::Distinct))
                .fingerprint(t)
        };
        assert_eq!(d("x x x x y z"), d("z y x"));
        assert_eq!(
            d("x y z"),
            Some(simhash(&[xxh3_64(b"x"), xxh3_64(b"y"), xxh3_64(b"z")]))
        );
        let c = |t: &str| {
            Fingerprinter::new(Settings::new(Tokenizer::Unicode, 1, Weights::Count)).fingerprint(t)
        };
        assert_eq!(
            c("x x x x y z"),
            Some(simhash(
                &[xxh3_64(b"x"); 4]
                    .iter()
                    .chain(&[xxh3_64(b"y"), xxh3_64(b"z")])
                    .copied()
                    .collect::<Vec<_>>()
            ))
        );
        assert_ne!(c("x x x x y z"), c("x y z"));
        assert_eq!("distinct".parse::<Weights>().unwrap(), Weights::Distinct);
    }

    #[test]
    fn multi_shingle_equals_single() {
        let t = "one two three four five six seven, eight nine ten";
        let multi = fp(Tokenizer::Unicode, 1).fingerprints_multi(t, &[1, 2, 3, 5, 20]);
        for (i, sh) in [1, 2, 3, 5, 20].into_iter().enumerate() {
            assert_eq!(multi[i], fp(Tokenizer::Unicode, sh).fingerprint(t));
        }
        assert_eq!(
            fp(Tokenizer::Unicode, 1).fingerprints_multi("...", &[1, 2]),
            vec![None, None]
        );
    }

    #[test]
    fn default_settings_vectors() {
        // Written into docs/simhash.md; they change only if the algorithm does.
        let d = Settings::default();
        assert_eq!(
            d.describe(),
            "tokenizer=unicode shingle=5 weights=distinct hash=xxh3-64"
        );
        let mut f = Fingerprinter::new(d);
        assert_eq!(
            f.fingerprint("i think a is the best"),
            Some(0x0805_2102_0033_08c4)
        );
        assert_eq!(
            f.fingerprint("i think b is the best"),
            Some(0x0080_6241_0306_3042)
        );
        let zh = Settings {
            tokenizer: Tokenizer::Charabia,
            ..d
        };
        assert_eq!(
            Fingerprinter::new(zh).fingerprint("我们在北京大学学习自然语言处理。"),
            Some(0x5220_0c41_8277_96c8)
        );
        let ja = Settings {
            tokenizer: Tokenizer::Chars(2),
            ..d
        };
        assert_eq!(
            Fingerprinter::new(ja).fingerprint("日本語のテキストを文字のNグラムで処理します。"),
            Some(0xf36e_8916_e40d_1b26)
        );
    }

    #[test]
    fn chars_ngrams_ignore_whitespace_and_punctuation() {
        let mut f = fp(Tokenizer::Chars(2), 1);
        assert_eq!(
            f.tokens("日本語の 文章。"),
            ["日本", "本語", "語の", "の文", "文章"]
        );
        assert_eq!(f.tokens("Ab"), ["ab"]);
        assert_eq!(f.tokens("a"), ["a"]);
        assert!(f.tokens("。 、").is_empty());
    }

    #[test]
    fn charabia_segments_chinese() {
        let mut f = fp(Tokenizer::Charabia, 1);
        let toks = f.tokens("我们在北京大学学习自然语言处理。");
        // jieba segmentation: multi-character words, no punctuation.
        assert!(toks.len() >= 4 && toks.len() < 15, "{toks:?}");
        assert!(toks.iter().any(|t| t.chars().count() >= 2), "{toks:?}");
        assert!(!toks.iter().any(|t| t == "。"));
        let en = f.tokens("Hello World");
        assert_eq!(en, ["hello", "world"]);
    }

    #[test]
    fn cjk_fingerprints_are_stable_and_local() {
        let zh = "Debian 是一个自由的操作系统，由全球的志愿者共同开发和维护。它包含了数以万计的软件包，用户可以通过软件包管理系统方便地安装和升级软件。";
        let zh2 = "Debian 是一个自由的操作系统，由全球的志愿者共同开发和维护。它包含了数以千计的软件包，用户可以通过软件包管理系统方便地安装和升级软件。";
        let ja = "Debian は自由なオペレーティングシステムです。世界中のボランティアによって開発され、数万のソフトウェアパッケージを含んでいます。パッケージ管理システムを使って簡単にインストールできます。";
        let ja2 = "Debian は自由なオペレーティングシステムです。世界中のボランティアによって開発され、数千のソフトウェアパッケージを含んでいます。パッケージ管理システムを使って簡単にインストールできます。";
        let other = "PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.";
        for (tok, a, b) in [
            (Tokenizer::Charabia, zh, zh2),
            (Tokenizer::Chars(2), ja, ja2),
        ] {
            let mut f = fp(tok, 2);
            let ha = f.fingerprint(a).unwrap();
            // Same text, fresh or reused fingerprinter: same fingerprint.
            assert_eq!(fp(tok, 2).fingerprint(a).unwrap(), ha);
            assert_eq!(f.fingerprint(a).unwrap(), ha);
            let hb = f.fingerprint(b).unwrap();
            let ho = f.fingerprint(other).unwrap();
            assert!(
                hamming(ha, hb) < hamming(ha, ho),
                "{tok}: near {} far {}",
                hamming(ha, hb),
                hamming(ha, ho)
            );
            assert!(
                hamming(ha, hb) <= 16,
                "{tok}: one-character edit moved {} bits",
                hamming(ha, hb)
            );
        }
        // Pinned CJK values: a change of charabia's segmentation would show here.
        let hzh = fp(Tokenizer::Charabia, 2).fingerprint(zh).unwrap();
        let hja = fp(Tokenizer::Chars(2), 2).fingerprint(ja).unwrap();
        assert_eq!((hzh, hja), (0x0832_a621_8943_d856, 0x1358_d814_9f65_a9e3));
    }
}
