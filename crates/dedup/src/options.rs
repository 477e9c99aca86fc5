//! Settings of the dedup policy.

use crate::url_filter::UrlFilter;
use std::sync::Arc;
use webdedup_text::Normalization;

/// Which documents get their whole-content key tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DocCheck {
    /// Every document (the default): identical documents are dropped whole.
    #[default]
    All,
    /// Only documents whose URL+title was seen before, as the KNOT worker does to
    /// save store requests. The first copy of a document then never stores its
    /// document key, so a second copy under another URL is caught paragraph by
    /// paragraph (status `E`) instead of whole (status `D`).
    UrlTitle,
    /// No document is tested, and no URL+title key is asked either: paragraphs
    /// only (what dolma's `dedupe` does in paragraph mode). A document is never
    /// dropped whole as a duplicate; one whose every paragraph repeated is emptied
    /// (status `E`), and one without long paragraphs is always kept.
    None,
}

webdedup_text::named_choices! {
    DocCheck, "document check", quote "'", {
        All => "all",
        UrlTitle => "url-title",
        None => "none",
    }
}

/// Whose rules near mode follows (`--near-rules`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum NearRules {
    /// Ours (the default): tokens are the words of the normalized text, documents
    /// and long paragraphs are first tested by their exact keys, short paragraphs
    /// ride along with the next long one.
    #[default]
    Webdedup,
    /// onion 1.2's, so that its users get its decisions: tokens are the token lines
    /// as written (punctuation counts, no case or digit folding, the whole line),
    /// every paragraph is judged by its n-grams alone (no exact keys, no short
    /// paragraphs), the threshold is compared as onion does, smoothing is onion's
    /// (on unless turned off; a document's edges count as dropped neighbours), and
    /// a document with no kept paragraph that has tokens is dropped whole.
    Onion,
}

webdedup_text::named_choices! {
    NearRules, "near rules", quote "'", {
        Webdedup => "webdedup",
        Onion => "onion",
    }
}

/// Near-duplicate paragraphs by word n-grams (onion's method).
#[derive(Clone, Debug, PartialEq)]
pub struct NearOptions {
    /// Words per n-gram.
    pub ngram: usize,
    /// A long paragraph is a near duplicate when more than this share of its tokens
    /// is covered by n-grams seen before.
    pub threshold: f64,
    /// Drop short runs of kept paragraphs between dropped ones.
    pub smooth: bool,
    /// Longest run (in tokens) that smoothing drops.
    pub max_stub: usize,
    /// Whose rules: ours or onion's.
    pub rules: NearRules,
}

impl NearOptions {
    /// The limits every front door (`dedup`, `check`, Python's `Dedup`) enforces,
    /// in one place: `ngram` from 1 to 64 words, `threshold` at least 0 and below 1.
    /// The message names the values as the command line does (`--ngram`).
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=64).contains(&self.ngram) {
            return Err(format!(
                "--ngram must be between 1 and 64, not {}",
                self.ngram
            ));
        }
        if !(0.0..1.0).contains(&self.threshold) {
            return Err(format!(
                "--threshold must be at least 0 and below 1, not {}",
                self.threshold
            ));
        }
        Ok(())
    }
}

impl Default for NearOptions {
    fn default() -> Self {
        NearOptions {
            ngram: DEFAULT_NGRAM,
            threshold: DEFAULT_THRESHOLD,
            smooth: false,
            max_stub: DEFAULT_MAX_STUB,
            rules: NearRules::Webdedup,
        }
    }
}

/// Paragraphs with fewer characters are short (`--min-para-chars`).
pub const DEFAULT_MIN_PARA_CHARS: usize = 50;
/// Words per n-gram in near mode (`--ngram`).
pub const DEFAULT_NGRAM: usize = 7;
/// Share of a paragraph's tokens that seen n-grams must cover (`--threshold`).
pub const DEFAULT_THRESHOLD: f64 = 0.5;
/// Longest run, in tokens, that smoothing drops (`--max-stub`).
pub const DEFAULT_MAX_STUB: usize = 20;
/// Input problems printed per file (`--report-limit`); the rest are counted.
pub const DEFAULT_REPORT_LIMIT: usize = 20;

/// The policy options as a front door names them: the command line's flags and
/// the Python module's keyword arguments both become one of these, and
/// [`PolicyChoices::options`] turns it into [`Options`]. A `None` takes the
/// default; the limits and the rules between options are checked here only, so
/// a bad value gets the same message from every front door (naming the command
/// line's flag, e.g. `--ngram`).
///
/// ```
/// use webdedup_dedup::options::PolicyChoices;
/// let ok = PolicyChoices { near: true, ngram: Some(5), ..Default::default() };
/// assert_eq!(ok.options().unwrap().near().unwrap().ngram, 5);
/// let bad = PolicyChoices { near: true, ngram: Some(0), ..Default::default() };
/// assert_eq!(bad.options().unwrap_err(), "--ngram must be between 1 and 64, not 0");
/// ```
#[derive(Clone, Debug, Default)]
pub struct PolicyChoices {
    pub normalization: Option<Normalization>,
    pub min_para_chars: Option<usize>,
    pub doc_check: Option<DocCheck>,
    /// Near-duplicate paragraphs too.
    pub near: bool,
    pub ngram: Option<usize>,
    pub threshold: Option<f64>,
    pub smooth: bool,
    /// Only with `smooth` or onion's rules.
    pub max_stub: Option<usize>,
    pub near_rules: Option<NearRules>,
    /// Onion's rules without their smoothing (onion's `-m`).
    pub no_smooth: bool,
    pub feedback: bool,
}

impl PolicyChoices {
    /// The near-mode options (also when `near` is off: the limits hold for every
    /// value given, so a run and its `check` refuse the same ones).
    pub fn near_options(&self) -> Result<NearOptions, String> {
        let rules = self.near_rules.unwrap_or_default();
        let onion = rules == NearRules::Onion;
        if self.max_stub.is_some() && !(self.smooth || onion) {
            return Err("--max-stub applies with --smooth or --near-rules onion".into());
        }
        if self.no_smooth && !onion {
            return Err(
                "--no-smooth applies with --near-rules onion (smoothing is off by default)".into(),
            );
        }
        if self.no_smooth && self.smooth {
            return Err("--smooth and --no-smooth contradict each other".into());
        }
        let near = NearOptions {
            ngram: self.ngram.unwrap_or(DEFAULT_NGRAM),
            threshold: self.threshold.unwrap_or(DEFAULT_THRESHOLD),
            // onion smooths unless told not to (its -m).
            smooth: self.smooth || (onion && !self.no_smooth),
            max_stub: self.max_stub.unwrap_or(DEFAULT_MAX_STUB),
            rules,
        };
        near.validate()?;
        Ok(near)
    }

    /// The options, checked (the URL filter and MinHash are the caller's to add).
    pub fn options(&self) -> Result<Options, String> {
        let near = self.near_options()?;
        if near.rules == NearRules::Onion && self.feedback {
            return Err("--near-rules onion does not support feedback mode (-f) yet".into());
        }
        let d = Options::default();
        Ok(Options {
            normalization: self.normalization.unwrap_or(d.normalization),
            min_para_chars: self.min_para_chars.unwrap_or(d.min_para_chars),
            doc_check: self.doc_check.unwrap_or(d.doc_check),
            mode: if self.near {
                Mode::Near {
                    near,
                    feedback: self.feedback,
                }
            } else {
                Mode::Exact {
                    feedback: self.feedback,
                }
            },
            ..d
        })
    }
}

/// MinHash stream mode (`webdedup minhash`): whole documents, dropped when one of
/// their LSH band keys was inserted by an earlier kept document (see
/// `policy::minhash`). Settings only: the kept documents and batch mode's
/// decisions belong to the run (`state::RunState`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinHashOptions {
    pub params: webdedup_minhash::Params,
    /// Drop only when the estimated Jaccard similarity with the named original is at
    /// least this (`--verify J`); None: every band match drops.
    pub verify: Option<f64>,
}

/// The MinHash settings as every front door takes them (the command line's
/// `--shingles`, `--shingle-norm`, `--hashes`, `--bands`, `--rows`, `--verify`; the Python module's
/// keyword arguments): None is the default, and [`MinHashChoices::options`] checks
/// them, so all refuse the same values with the same message.
///
/// ```
/// use webdedup_dedup::options::MinHashChoices;
/// let ok = MinHashChoices { verify: Some(0.0), ..Default::default() }.options().unwrap();
/// assert_eq!((ok.params.bands, ok.verify), (webdedup_minhash::DEFAULT_BANDS, None));
/// let bad = MinHashChoices { verify: Some(1.5), ..Default::default() };
/// assert_eq!(bad.options().unwrap_err(), "--verify must be between 0 and 1 (0: off)");
/// ```
#[derive(Clone, Debug, Default)]
pub struct MinHashChoices {
    pub shingles: Option<webdedup_minhash::Shingling>,
    /// The shingles' normalization: `lower` (digits kept) or `loose`.
    pub shingle_norm: Option<Normalization>,
    pub hashes: Option<usize>,
    pub bands: Option<usize>,
    pub rows: Option<usize>,
    /// 0 turns verification off.
    pub verify: Option<f64>,
    /// Values of the verification sketch (0: the signature's own).
    pub verify_hashes: Option<usize>,
}

impl MinHashChoices {
    /// The options of MinHash mode, or why the settings are refused.
    pub fn options(&self) -> Result<MinHashOptions, String> {
        use webdedup_minhash as m;
        let params = m::Params {
            shingling: self.shingles.unwrap_or(m::DEFAULT_SHINGLING),
            norm: self.shingle_norm.unwrap_or(m::DEFAULT_NORM),
            hashes: self.hashes.unwrap_or(m::DEFAULT_HASHES),
            bands: self.bands.unwrap_or(m::DEFAULT_BANDS),
            rows: self.rows.unwrap_or(m::DEFAULT_ROWS),
            verify_hashes: self.verify_hashes.unwrap_or(m::DEFAULT_VERIFY_HASHES),
        };
        params.validate()?;
        let verify = self.verify.unwrap_or(m::DEFAULT_VERIFY);
        if !(0.0..=1.0).contains(&verify) {
            return Err("--verify must be between 0 and 1 (0: off)".into());
        }
        Ok(MinHashOptions {
            params,
            verify: (verify > 0.0).then_some(verify),
        })
    }
}

/// Substring mode's window and winnowing sizes, in units and windows, and the
/// shortest stretch it removes, in bytes of text (`dedup --substr=K,W[,B]`;
/// `policy::substr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubstrParams {
    /// Units a window (its key covers them).
    pub k: usize,
    /// Windows a winnowing run (one key stored per run, at most).
    pub w: usize,
    /// A removed stretch shorter than this many bytes of text (its units' bytes,
    /// the whitespace between them not counted) is kept: ExactSubstr's rule strikes
    /// nothing shorter than its length. Decides nothing about the keys stored.
    pub min_bytes: usize,
}

impl SubstrParams {
    /// [`Self::DEFAULT`] as the command line writes it (`--substr` alone).
    pub const DEFAULT_ARG: &'static str = "10,4";
    /// 80 bytes of words, about ExactSubstr's usual 100 bytes of English text with
    /// its spaces.
    pub const DEFAULT_MIN_BYTES: usize = 80;
    /// 10 units and runs of 4: every repeated span of 13 units or more is found;
    /// 2/5 of the windows stored; stretches under 80 bytes kept. Chosen by
    /// measuring (docs/substr.md, Figures): on the shared corpus its removed
    /// characters agree with ExactSubstr's keep-first answer at L = 100 with
    /// precision 0.995 and recall 0.957.
    pub const DEFAULT: SubstrParams = SubstrParams {
        k: 10,
        w: 4,
        min_bytes: Self::DEFAULT_MIN_BYTES,
    };
    /// Largest `k` taken (a window's hash costs nothing more, but spans longer than
    /// this are what paragraph mode is for).
    pub const MAX_K: usize = 1000;

    /// Checks `1 <= w <= k <= MAX_K`: with `w > k` successive picks could leave
    /// holes inside a repeated span. The shortest stretch removed is the default's.
    pub fn new(k: usize, w: usize) -> Result<Self, String> {
        if k == 0 || k > Self::MAX_K {
            return Err(format!("K must be 1 to {}, not {k}", Self::MAX_K));
        }
        if w == 0 || w > k {
            return Err(format!(
                "W must be 1 to K ({k}), not {w}: with W > K a repeated span could keep holes"
            ));
        }
        Ok(SubstrParams {
            k,
            w,
            min_bytes: Self::DEFAULT_MIN_BYTES,
        })
    }

    /// These settings, removing stretches of at least `min_bytes` bytes of text.
    pub fn with_min_bytes(self, min_bytes: usize) -> Self {
        SubstrParams { min_bytes, ..self }
    }

    /// `K,W` or `K,W,B` as the command line gives it (`--substr=10,4,80`),
    /// checked as [`Self::new`].
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("--substr takes K,W or K,W,B (whole numbers, as 10,4 or 10,4,80), not '{s}'")
        };
        let numbers = s
            .split(',')
            .map(|n| n.trim().parse::<usize>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?;
        match numbers[..] {
            [k, w] => Self::new(k, w),
            [k, w, b] => Ok(Self::new(k, w)?.with_min_bytes(b)),
            _ => Err(bad()),
        }
    }

    /// The length in units from which a repeated span is always found.
    pub fn min_span(&self) -> usize {
        self.k + self.w - 1
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// URL+title, document and paragraph keys, compared exactly (the default).
    Exact {
        /// Feedback mode (`-f`): remember where keys were first seen and write
        /// every dropped paragraph with a reference to its original.
        feedback: bool,
    },
    /// The exact keys, and long paragraphs judged by word n-gram overlap too (`-n`).
    Near {
        near: NearOptions,
        /// Feedback mode, as in [`Mode::Exact`] (webdedup's near rules only).
        feedback: bool,
    },
    /// Whole documents judged by LSH band keys only (`webdedup minhash`): no
    /// URL+title, document or paragraph keys.
    MinHash(MinHashOptions),
    /// Repeated spans inside documents, by winnowed windows of tokens
    /// (`dedup --substr K,W`; `policy::substr`): no other keys.
    Substr {
        params: SubstrParams,
        /// Feedback mode (`-f`): window keys remember where they were first seen,
        /// and every removed span is listed with its first copy (`STEM.dedup.spans`).
        feedback: bool,
    },
}

impl Default for Mode {
    fn default() -> Self {
        Mode::Exact { feedback: false }
    }
}

/// The policy's settings: plain values, the same for every chunk of a run (what a
/// run accumulates while it runs is its `state::RunState`).
#[derive(Clone, Debug)]
pub struct Options {
    pub normalization: Normalization,
    /// A paragraph is long when its raw text has at least this many characters.
    pub min_para_chars: usize,
    pub doc_check: DocCheck,
    pub mode: Mode,
    /// Documents whose URL matches are dropped before any store request.
    pub url_filter: Option<Arc<UrlFilter>>,
}

impl Options {
    /// MinHash mode with `m`, the other settings their defaults.
    pub fn for_minhash(m: MinHashOptions) -> Self {
        Options {
            mode: Mode::MinHash(m),
            ..Options::default()
        }
    }

    /// Near mode's settings (`-n`), if on.
    pub fn near(&self) -> Option<&NearOptions> {
        match &self.mode {
            Mode::Near { near, .. } => Some(near),
            _ => None,
        }
    }

    /// Feedback mode (`-f`): keys remember where they were first seen.
    pub fn feedback(&self) -> bool {
        matches!(
            self.mode,
            Mode::Exact { feedback: true }
                | Mode::Near { feedback: true, .. }
                | Mode::Substr { feedback: true, .. }
        )
    }

    /// MinHash mode's settings, if on.
    pub fn minhash(&self) -> Option<&MinHashOptions> {
        match &self.mode {
            Mode::MinHash(m) => Some(m),
            _ => None,
        }
    }

    /// Substring mode's window and winnowing sizes, if on.
    pub fn substr(&self) -> Option<SubstrParams> {
        match &self.mode {
            Mode::Substr { params, .. } => Some(*params),
            _ => None,
        }
    }

    /// Near mode with onion's rules (`-n --near-rules onion`).
    pub fn onion_rules(&self) -> bool {
        self.near().is_some_and(|n| n.rules == NearRules::Onion)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            normalization: Normalization::Loose,
            min_para_chars: DEFAULT_MIN_PARA_CHARS,
            doc_check: DocCheck::All,
            mode: Mode::default(),
            url_filter: None,
        }
    }
}
