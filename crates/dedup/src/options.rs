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
}

impl std::str::FromStr for DocCheck {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(DocCheck::All),
            "url-title" => Ok(DocCheck::UrlTitle),
            other => Err(format!(
                "unknown document check '{other}' (expected 'all' or 'url-title')"
            )),
        }
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
            ngram: 7,
            threshold: 0.5,
            smooth: false,
            max_stub: 20,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub normalization: Normalization,
    /// A paragraph is long when its raw text has at least this many characters.
    pub min_para_chars: usize,
    pub doc_check: DocCheck,
    /// Near-duplicate mode (`-n`): paragraphs judged by n-gram overlap as well.
    pub near: Option<NearOptions>,
    /// Documents whose URL matches are dropped before any store request.
    pub url_filter: Option<Arc<UrlFilter>>,
    /// Feedback mode (`-f`): remember where keys were first seen and write every
    /// dropped paragraph with a reference to its original.
    pub feedback: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            normalization: Normalization::Loose,
            min_para_chars: 50,
            doc_check: DocCheck::All,
            near: None,
            url_filter: None,
            feedback: false,
        }
    }
}
