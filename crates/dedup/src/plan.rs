//! Walks a chunk once and records, for every document and paragraph, its byte
//! ranges and keys: everything the policy needs, nothing copied. The chunk's
//! format's reader drives the walk ([`DocFormat::parse`] calls this module's
//! [`DocSink`]), so plans, and everything after them, are the same for every
//! format.

use crate::options::{DocCheck, Options};
use crate::policy::substr::units::{Planning, SubstrUnits, UnitsOut};
use crate::url_filter::UrlFilter;
use std::ops::Range;
use std::sync::Arc;
use webdedup_formats::chunk::{Chunk, Issue, IssueKind};
use webdedup_formats::doc::{DocMeta, DocSink};
use webdedup_formats::read::DocFormat;
use webdedup_formats::vertical;
use webdedup_formats::whole_para::WholePara;
use webdedup_text::normalize::Cuts;
use webdedup_text::{key, KeyKind, Normalization, StreamKey, TextBuilder};

/// Marks a piece that belongs to the document, not to a paragraph.
pub const DOC_LEVEL: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct ParaPlan {
    pub key: u64,
    pub long: bool,
    /// Its tokens in [`ChunkPlan::tokens`] (near mode only; empty otherwise).
    pub tokens: Range<u32>,
}

/// A contiguous run of a document's bytes: written when the document is, if
/// `para == DOC_LEVEL`; else, when `sep`, only when paragraph `para` and a later
/// paragraph of the document are both kept (the break between two lines of a JSON
/// text); else when paragraph `para` is kept.
#[derive(Clone, Debug)]
pub struct Piece {
    pub range: Range<usize>,
    pub para: u32,
    pub sep: bool,
}

/// What a plan's entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    Document,
    /// A record that is not a document (a bad JSON line): no keys, written as it is
    /// unless `dropped` (`--drop-bad-records`).
    BadRecord {
        dropped: bool,
    },
    /// A record that is not a document and not bad (a WET `warcinfo` record): no
    /// keys, always written as it is, not counted.
    Other,
}

#[derive(Clone, Debug)]
pub struct DocPlan {
    pub line: u64,
    pub kind: DocKind,
    /// Its URL and title, in [`ChunkPlan::meta`] (empty where the format has none).
    pub url: Range<u32>,
    pub title: Range<u32>,
    /// Its id in [`ChunkPlan::meta`], where the format has ids and this document
    /// one (else `FILE:LINE` names it in `.dd` lines).
    pub id: Option<Range<u32>>,
    /// Its format names documents (JSON Lines): `.dd` lines carry ids.
    pub named: bool,
    /// It has both a URL and a title (every vertical document: missing attributes
    /// read as empty, as the KNOT worker reads them), so `url_title_key` is asked.
    /// Without them the URL+title shortcut does not apply: with `--doc-check
    /// url-title` the document key is then always tested.
    pub has_url_title: bool,
    pub url_title_key: u64,
    /// 0 with `--doc-check none` (not computed: nothing asks it).
    pub doc_key: u64,
    /// Indexes into [`ChunkPlan::paras`].
    pub paras: Range<usize>,
    /// Indexes into [`ChunkPlan::pieces`].
    pub pieces: Range<usize>,
    /// Its URL matched the URL filter: dropped before any store request.
    pub filtered: bool,
    /// MinHash mode: its band keys in [`ChunkPlan::bands`] and its verification
    /// bytes in [`ChunkPlan::sigs`] (both empty when it has no shingle; the bytes
    /// also without `--verify`).
    pub bands: Range<u32>,
    pub sig: Range<u32>,
    /// MinHash mode: characters of its paragraphs' text as read (`--keep longest`).
    pub text_chars: u64,
}

impl DocPlan {
    /// Neither filtered nor a bad record: its keys are asked.
    pub fn live(&self) -> bool {
        !self.filtered && self.kind == DocKind::Document
    }
}

#[derive(Debug, Default)]
pub struct ChunkPlan {
    pub docs: Vec<DocPlan>,
    pub paras: Vec<ParaPlan>,
    pub pieces: Vec<Piece>,
    pub issues: Vec<Issue>,
    /// Near mode: the hash of every token (normalized word) of the chunk, in order;
    /// substring mode: of every unit ([`crate::policy::substr::tokens`]).
    pub tokens: Vec<u64>,
    /// Substring mode: the text bytes of each of [`Self::tokens`] (what a removed
    /// stretch's length is counted in).
    pub token_len: Vec<u32>,
    /// Substring mode: the input bytes of each of [`Self::tokens`] in the chunk's
    /// data (a vertical's token: its whole line), what removing it removes.
    pub token_bytes: Vec<Range<usize>>,
    /// Substring mode with `--mark`: the characters of each of [`Self::tokens`] in
    /// its document's text.
    pub token_chars: Vec<Range<u32>>,
    /// URLs, titles and ids of the documents (see [`DocPlan`]).
    pub meta: String,
    /// MinHash mode: the band keys of every document, in order.
    pub bands: Vec<u64>,
    /// MinHash mode: every document's verification bytes
    /// (`MinHasher::verification`).
    pub sigs: Vec<u8>,
    /// `--mark` only: each paragraph's characters in its document's text.
    pub para_chars: Vec<Range<u32>>,
    /// `--mark` only: each entry's text length in characters (0 for records that
    /// are not documents).
    pub doc_chars: Vec<u32>,
}

impl ChunkPlan {
    pub fn clear(&mut self) {
        self.tokens.clear();
        self.token_len.clear();
        self.token_bytes.clear();
        self.token_chars.clear();
        self.docs.clear();
        self.paras.clear();
        self.pieces.clear();
        self.issues.clear();
        self.meta.clear();
        self.bands.clear();
        self.sigs.clear();
        self.para_chars.clear();
        self.doc_chars.clear();
    }

    /// An empty plan with room for as many entries as this one has (a plan
    /// kept whole is replaced by one that need not grow by doubling).
    pub fn sized_alike(&self) -> ChunkPlan {
        ChunkPlan {
            docs: Vec::with_capacity(self.docs.len()),
            paras: Vec::with_capacity(self.paras.len()),
            pieces: Vec::with_capacity(self.pieces.len()),
            tokens: Vec::with_capacity(self.tokens.len()),
            meta: String::with_capacity(self.meta.len()),
            bands: Vec::with_capacity(self.bands.len()),
            sigs: Vec::with_capacity(self.sigs.len()),
            ..ChunkPlan::default()
        }
    }

    pub fn meta_of(&self, r: &Range<u32>) -> &str {
        &self.meta[r.start as usize..r.end as usize]
    }
}

/// Builds a [`ChunkPlan`]; reusable across chunks to keep its buffers.
pub struct Planner {
    min_para_chars: usize,
    text: TextBuilder,
    doc_hash: StreamKey,
    doc_has_para: bool,
    para_start: usize,
    last_invalid_line: u64,
    chunk_start: usize,
    /// Near mode: hash every token.
    tokens: bool,
    /// Near mode with onion's rules: tokens as written, no exact keys.
    onion: bool,
    /// The chunk being planned is a vertical (onion's tokens are its lines).
    vertical: bool,
    para_tokens: u32,
    url_filter: Option<Arc<UrlFilter>>,
    /// MinHash mode: signatures of whole documents from their normalized text.
    minhash: Option<webdedup_minhash::MinHasher>,
    /// MinHash mode: the document's normalized paragraphs, one space between them.
    doc_text: Vec<u8>,
    /// MinHash mode: characters of the document's paragraphs as read.
    doc_chars: u64,
    /// `--mark`: record character offsets and vertical ids.
    marks: bool,
    /// Document keys are asked (`--doc-check` is not `none`): with `none` no
    /// decision reads them, and hashing every text twice would be wasted.
    doc_keys: bool,
    /// Substring mode: the units of every word, with their input bytes.
    substr: Option<SubstrUnits>,
    /// Paragraphs a reader can give whole are normalized from their bytes at
    /// once, not word by word (off: to compare the two).
    whole_paras: bool,
}

impl Planner {
    pub fn new(opts: &Options) -> Self {
        Planner {
            min_para_chars: opts.min_para_chars,
            // MinHash's shingles have their own normalization (its settings').
            text: TextBuilder::new(opts.minhash().map_or(opts.normalization, |m| m.params.norm)),
            doc_hash: StreamKey::new(KeyKind::Document),
            doc_has_para: false,
            para_start: 0,
            last_invalid_line: 0,
            chunk_start: 0,
            tokens: opts.near().is_some(),
            onion: opts.onion_rules(),
            vertical: true,
            para_tokens: 0,
            url_filter: opts.url_filter.clone(),
            minhash: opts.minhash().map(|m| {
                let mut h = webdedup_minhash::MinHasher::new(m.params)
                    .expect("MinHash settings are checked when they are made");
                h.set_verifying(m.verify.is_some());
                h
            }),
            doc_text: Vec::new(),
            doc_chars: 0,
            marks: false,
            doc_keys: opts.doc_check != DocCheck::None && opts.substr().is_none(),
            substr: opts.substr().map(|_| SubstrUnits::new()),
            whole_paras: true,
        }
    }

    /// Whether paragraphs a reader can give whole are taken so (the default);
    /// off, every word comes one by one (the tests and the `stages` example
    /// compare the two: same plans, different speed).
    pub fn with_whole_paras(mut self, on: bool) -> Self {
        self.whole_paras = on;
        self
    }

    /// Also records what `--mark` needs: character offsets of paragraphs, and the
    /// ids of vertical documents (their `id` attribute).
    pub fn with_marks(mut self, on: bool) -> Self {
        self.marks = on;
        self
    }

    /// Plans `chunk` (a vertical) into `out` (cleared first).
    pub fn plan(&mut self, chunk: &Chunk, out: &mut ChunkPlan) {
        self.plan_as(&DocFormat::Vertical, chunk, out)
    }

    /// Plans `chunk`, read as `format`, into `out` (cleared first).
    pub fn plan_as(&mut self, format: &DocFormat, chunk: &Chunk, out: &mut ChunkPlan) {
        out.clear();
        self.last_invalid_line = 0;
        self.chunk_start = 0;
        self.vertical = matches!(format, DocFormat::Vertical);
        let mut sink = PlanSink {
            planner: self,
            plan: out,
            data: &chunk.data,
        };
        format.parse(chunk, &mut sink);
    }
}

pub use crate::policy::substr::tokens::token_hash;

/// onion's tokens of a vertical paragraph's bytes: every line that does not start
/// with `<`, whole and as written (all its columns, a `\r` included; a blank line is
/// an empty token), hashed with [`token_hash`]. Tags and glue are not tokens.
pub fn onion_tokens(para: &[u8], out: &mut Vec<u64>) {
    let para = para.strip_suffix(b"\n").unwrap_or(para);
    if para.is_empty() {
        return;
    }
    for line in para.split(|&b| b == b'\n') {
        if line.first() != Some(&b'<') {
            out.push(token_hash(line));
        }
    }
}

/// The key of the n-gram made of `tokens` (their hashes, in order): its own key
/// space (`KeyKind::NGram`), so it never meets paragraph or document keys.
#[inline]
pub fn ngram_key(tokens: &[u64]) -> u64 {
    let mut buf = [0u8; 8 * 16];
    if tokens.len() <= 16 {
        for (i, t) in tokens.iter().enumerate() {
            buf[i * 8..i * 8 + 8].copy_from_slice(&t.to_le_bytes());
        }
        return key(KeyKind::NGram, &buf[..tokens.len() * 8]);
    }
    let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    key(KeyKind::NGram, &bytes)
}

/// The key of a document's `url TAB title` (unescaped attribute values of a
/// vertical `<doc>` line).
pub fn url_title_key(attrs: &[u8]) -> u64 {
    let url = vertical::attr(attrs, b"url").unwrap_or_default();
    let title = vertical::attr(attrs, b"title").unwrap_or_default();
    url_title_key_of(&url, &title)
}

/// The key of `url TAB title`.
pub fn url_title_key_of(url: &str, title: &str) -> u64 {
    let mut buf = Vec::with_capacity(url.len() + title.len() + 1);
    buf.extend_from_slice(url.as_bytes());
    buf.push(b'\t');
    buf.extend_from_slice(title.as_bytes());
    key(KeyKind::UrlTitle, &buf)
}

/// Substring mode's view of the plan's unit lists.
fn units_out(plan: &mut ChunkPlan) -> UnitsOut<'_> {
    UnitsOut {
        tokens: &mut plan.tokens,
        token_len: &mut plan.token_len,
        token_bytes: &mut plan.token_bytes,
        token_chars: &mut plan.token_chars,
    }
}

struct PlanSink<'a> {
    planner: &'a mut Planner,
    plan: &'a mut ChunkPlan,
    /// The chunk's bytes (onion's tokens are read from a vertical paragraph's lines).
    data: &'a [u8],
}

impl PlanSink<'_> {
    /// MinHash mode: the band keys and signature bytes of the document just ended
    /// (from its normalized paragraphs), appended to the plan; their ranges.
    fn signature(&mut self) -> (Range<u32>, Range<u32>) {
        let (b0, s0) = (self.plan.bands.len() as u32, self.plan.sigs.len() as u32);
        let p = &mut *self.planner;
        if let Some(m) = p.minhash.as_mut() {
            let banding = m.params().banding();
            if let Some(sig) = m.signature_loose(&p.doc_text) {
                banding.keys(sig, &mut self.plan.bands);
                self.plan.sigs.extend_from_slice(m.verification());
            }
        }
        (
            b0..self.plan.bands.len() as u32,
            s0..self.plan.sigs.len() as u32,
        )
    }

    fn push_meta(&mut self, s: &str) -> Range<u32> {
        let start = self.plan.meta.len() as u32;
        self.plan.meta.push_str(s);
        start..self.plan.meta.len() as u32
    }
}

impl DocSink for PlanSink<'_> {
    fn doc_start(&mut self, header: Range<usize>, line: u64, meta: &DocMeta<'_>) {
        let (url, title) = (meta.url(), meta.title());
        let has_url_title = url.is_some() && title.is_some();
        let url = url.unwrap_or_default();
        let title = title.unwrap_or_default();
        let filtered = self
            .planner
            .url_filter
            .as_ref()
            .is_some_and(|f| f.matches(&url));
        let (url_range, title_range) = (self.push_meta(&url), self.push_meta(&title));
        let id = match meta {
            DocMeta::Attrs(a) if self.planner.marks => {
                vertical::attr(a, b"id").map(|id| self.push_meta(&id))
            }
            _ => meta.id().map(|id| self.push_meta(id)),
        };
        if self.planner.marks {
            self.plan.doc_chars.push(0);
        }
        let p = &mut *self.planner;
        p.doc_hash.reset();
        p.doc_has_para = false;
        p.doc_text.clear();
        p.doc_chars = 0;
        let pieces = self.plan.pieces.len();
        self.plan.pieces.push(Piece {
            range: header,
            para: DOC_LEVEL,
            sep: false,
        });
        self.plan.docs.push(DocPlan {
            line,
            kind: DocKind::Document,
            url: url_range,
            title: title_range,
            id,
            named: meta.named(),
            has_url_title,
            url_title_key: if has_url_title {
                url_title_key_of(&url, &title)
            } else {
                0
            },
            doc_key: 0,
            paras: self.plan.paras.len()..self.plan.paras.len(),
            pieces: pieces..pieces,
            filtered,
            bands: 0..0,
            sig: 0..0,
            text_chars: 0,
        });
    }

    fn structure(&mut self, range: Range<usize>) {
        self.plan.pieces.push(Piece {
            range,
            para: DOC_LEVEL,
            sep: false,
        });
    }

    fn separator(&mut self, range: Range<usize>) {
        // Between the paragraph just planned and the next one.
        let para = self.plan.paras.len().saturating_sub(1) as u32;
        self.plan.pieces.push(Piece {
            range,
            para,
            sep: true,
        });
    }

    fn para_start(&mut self, start: usize, _line: u64, _implicit: bool) {
        self.planner.para_start = start;
        self.planner.text.clear();
        self.planner.para_tokens = self.plan.tokens.len() as u32;
        if let Some(u) = &mut self.planner.substr {
            u.para_start();
        }
    }

    #[inline]
    fn word(&mut self, word: &[u8], glued: bool, line: u64) {
        let p = &mut *self.planner;
        if let Some(u) = &mut p.substr {
            let how = Planning {
                vertical: p.vertical,
                marks: p.marks,
            };
            u.word(word, glued, self.data, how, &mut units_out(self.plan));
        }
        if p.onion {
            // No text to build: onion's tokens are taken at `para_end`, from the
            // lines of a vertical, or here, as written, from other formats' text.
            if !p.vertical {
                self.plan.tokens.extend(
                    word.split(u8::is_ascii_whitespace)
                        .filter(|t| !t.is_empty())
                        .map(token_hash),
                );
            }
            if std::str::from_utf8(word).is_err() && p.last_invalid_line != line {
                p.last_invalid_line = line;
                self.plan.issues.push(Issue {
                    line,
                    kind: IssueKind::InvalidUtf8,
                });
            }
            return;
        }
        let valid = p.text.push_word(word, glued);
        if !valid && p.last_invalid_line != line {
            p.last_invalid_line = line;
            self.plan.issues.push(Issue {
                line,
                kind: IssueKind::InvalidUtf8,
            });
        }
    }

    #[inline]
    fn word_str(&mut self, word: &str, glued: bool, line: u64) {
        if self.planner.onion {
            return self.word(word.as_bytes(), glued, line);
        }
        if let Some(u) = &mut self.planner.substr {
            let how = Planning {
                vertical: self.planner.vertical,
                marks: self.planner.marks,
            };
            u.word(
                word.as_bytes(),
                glued,
                self.data,
                how,
                &mut units_out(self.plan),
            );
        }
        self.planner.text.push_str_word(word, glued);
    }

    fn takes_whole_paras(&self) -> bool {
        let p = &self.planner;
        // Onion's tokens and substring mode's units are per word; `none` joins
        // words by exactly one space, not by their whitespace.
        p.whole_paras && !p.onion && p.substr.is_none() && p.text.mode() != Normalization::None
    }

    #[inline]
    fn whole_para(&mut self, para: &WholePara<'_>) {
        let (starts, back, len) = para.glue_cuts();
        let cuts = Cuts { starts, back, len };
        let text = &mut self.planner.text;
        text.push_cut_text(para.text(), cuts, para.word_count(), para.raw_chars());
    }

    fn para_end(&mut self, end: usize) {
        let p = &mut *self.planner;
        if p.onion {
            if p.vertical {
                onion_tokens(&self.data[p.para_start..end], &mut self.plan.tokens);
            }
            // Every paragraph is judged (onion has no short paragraphs) and no
            // exact key is asked.
            let idx = self.plan.paras.len() as u32;
            self.plan.paras.push(ParaPlan {
                key: 0,
                long: true,
                tokens: p.para_tokens..self.plan.tokens.len() as u32,
            });
            self.plan.pieces.push(Piece {
                range: p.para_start..end,
                para: idx,
                sep: false,
            });
            return;
        }
        if let Some(u) = &mut p.substr {
            u.para_end(
                &self.data[p.para_start..end],
                p.para_start,
                &mut units_out(self.plan),
            );
        }
        let text = p.text.text();
        if p.tokens {
            // Tokens are the words of the normalized text (punctuation alone makes
            // none; glued vertical tokens make one, as the same text does in any
            // other format), so n-grams see the text the paragraph key does.
            for t in text
                .split(u8::is_ascii_whitespace)
                .filter(|t| !t.is_empty())
            {
                self.plan.tokens.push(token_hash(t));
            }
        }
        // MinHash mode asks no document or paragraph keys: only the text is kept.
        let minhash = p.minhash.is_some();
        if minhash {
            p.doc_chars += p.text.raw_chars() as u64;
            if !text.is_empty() {
                // Joined by one space: still exactly loose-normalized text.
                if !p.doc_text.is_empty() {
                    p.doc_text.push(b' ');
                }
                p.doc_text.extend_from_slice(text);
            }
        } else if p.doc_keys {
            if p.doc_has_para {
                p.doc_hash.update(b"\n");
            }
            p.doc_has_para = true;
            p.doc_hash.update(text);
        }
        let idx = self.plan.paras.len() as u32;
        self.plan.paras.push(ParaPlan {
            key: if minhash || p.substr.is_some() {
                0
            } else {
                key(KeyKind::Paragraph, text)
            },
            // (With no minimum, not counted.)
            long: p.min_para_chars == 0 || p.text.raw_chars() >= p.min_para_chars,
            tokens: p.para_tokens..self.plan.tokens.len() as u32,
        });
        self.plan.pieces.push(Piece {
            range: p.para_start..end,
            para: idx,
            sep: false,
        });
    }

    fn doc_end(&mut self, close: Option<Range<usize>>) {
        if let Some(r) = close {
            self.plan.pieces.push(Piece {
                range: r,
                para: DOC_LEVEL,
                sep: false,
            });
        }
        let (paras, pieces) = (self.plan.paras.len(), self.plan.pieces.len());
        let (bands, sig) = self.signature();
        if let Some(doc) = self.plan.docs.last_mut() {
            doc.doc_key = if self.planner.doc_keys {
                self.planner.doc_hash.finish()
            } else {
                0
            };
            doc.paras.end = paras;
            doc.pieces.end = pieces;
            doc.bands = bands;
            doc.sig = sig;
            doc.text_chars = self.planner.doc_chars;
        }
    }

    fn passthrough(&mut self, range: Range<usize>, line: u64, dropped: bool) {
        self.record(range, line, DocKind::BadRecord { dropped });
    }

    fn other(&mut self, range: Range<usize>, line: u64) {
        self.record(range, line, DocKind::Other);
    }

    fn issue(&mut self, issue: Issue) {
        self.plan.issues.push(issue);
    }

    fn wants_chars(&self) -> bool {
        self.planner.marks
    }

    fn para_chars(&mut self, chars: Range<u64>) {
        self.plan
            .para_chars
            .push(chars.start as u32..chars.end as u32);
        if let (Some(_), Some(p)) = (&self.planner.substr, self.plan.paras.last()) {
            let units = p.tokens.start as usize..p.tokens.end as usize;
            if let Some(c) = self.plan.token_chars.get_mut(units) {
                SubstrUnits::para_chars(c, chars.start as u32);
            }
        }
    }

    fn text_chars(&mut self, len: u64) {
        if let Some(c) = self.plan.doc_chars.last_mut() {
            *c = len as u32;
        }
    }
}

impl PlanSink<'_> {
    /// An entry for a record that is not a document (no keys).
    fn record(&mut self, range: Range<usize>, line: u64, kind: DocKind) {
        if self.planner.marks {
            self.plan.doc_chars.push(0);
        }
        let (paras, pieces) = (self.plan.paras.len(), self.plan.pieces.len());
        self.plan.pieces.push(Piece {
            range,
            para: DOC_LEVEL,
            sep: false,
        });
        self.plan.docs.push(DocPlan {
            line,
            kind,
            url: 0..0,
            title: 0..0,
            id: None,
            named: true,
            has_url_title: false,
            url_title_key: 0,
            doc_key: 0,
            paras: paras..paras,
            pieces: pieces..pieces + 1,
            filtered: false,
            bands: 0..0,
            sig: 0..0,
            text_chars: 0,
        });
    }
}

/// Plans kept between two passes over the same input (a local `batch run`: the hash
/// phase plans every chunk, the filter phase would plan it again). A plan is used
/// only for a chunk with the same file, index and bytes (xxh3-64 of its data), so
/// a chunking that differs is planned afresh, never misapplied. Bounded: past
/// `budget` bytes nothing more is kept, and those chunks are planned again.
pub struct PlanCache {
    inner: parking_lot::Mutex<PlanCacheInner>,
    budget: usize,
    /// The plans are for a run with `--mark` (planned with its characters).
    marks: bool,
}

#[derive(Default)]
struct PlanCacheInner {
    plans: std::collections::HashMap<(Vec<u8>, u64), (u64, ChunkPlan)>,
    bytes: usize,
    kept: u64,
    reused: u64,
}

impl ChunkPlan {
    /// Bytes its buffers hold (what keeping it costs).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.docs.capacity() * size_of::<DocPlan>()
            + self.paras.capacity() * size_of::<ParaPlan>()
            + self.pieces.capacity() * size_of::<Piece>()
            + self.issues.capacity() * size_of::<Issue>()
            + self.tokens.capacity() * size_of::<u64>()
            + self.token_len.capacity() * size_of::<u32>()
            + self.token_bytes.capacity() * size_of::<Range<usize>>()
            + self.token_chars.capacity() * size_of::<Range<u32>>()
            + self.meta.capacity()
            + self.bands.capacity() * size_of::<u64>()
            + self.sigs.capacity()
            + self.para_chars.capacity() * size_of::<Range<u32>>()
            + self.doc_chars.capacity() * size_of::<u32>()
    }
}

impl PlanCache {
    pub fn new(budget: usize) -> Self {
        PlanCache {
            inner: Default::default(),
            budget,
            marks: false,
        }
    }

    /// Plans kept for a run with `--mark` (`mark`): planned with its characters.
    pub fn for_marks(mut self, mark: bool) -> Self {
        self.marks = mark;
        self
    }

    /// Whether the plans are for a run with `--mark`.
    pub fn marks(&self) -> bool {
        self.marks
    }

    /// Keeps `plan` of chunk `index` of file `rel` (whose bytes are `data`); false
    /// when over the budget (the plan is dropped).
    pub fn put(&self, rel: &[u8], index: u64, data: &[u8], plan: ChunkPlan) -> bool {
        let bytes = plan.heap_bytes() + rel.len() + 64;
        let mut g = self.inner.lock();
        if g.bytes + bytes > self.budget {
            return false;
        }
        g.bytes += bytes;
        g.kept += 1;
        g.plans.insert(
            (rel.to_vec(), index),
            (xxhash_rust::xxh3::xxh3_64(data), plan),
        );
        true
    }

    /// Takes the plan kept for these bytes into `plan`; false if there is none.
    pub fn take(&self, rel: &[u8], index: u64, data: &[u8], plan: &mut ChunkPlan) -> bool {
        let mut g = self.inner.lock();
        let Some((hash, kept)) = g.plans.remove(&(rel.to_vec(), index)) else {
            return false;
        };
        g.bytes = g.bytes.saturating_sub(kept.heap_bytes() + rel.len() + 64);
        drop(g);
        if hash != xxhash_rust::xxh3::xxh3_64(data) {
            return false;
        }
        *plan = kept;
        self.inner.lock().reused += 1;
        true
    }

    /// Plans kept so far, and how many of them were used.
    pub fn counts(&self) -> (u64, u64) {
        let g = self.inner.lock();
        (g.kept, g.reused)
    }

    /// Plans kept now.
    pub fn len(&self) -> usize {
        self.inner.lock().plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
