//! Settings of the dedup policy.

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

#[derive(Clone, Debug)]
pub struct Options {
    pub normalization: Normalization,
    /// A paragraph is long when its raw text has at least this many characters.
    pub min_para_chars: usize,
    pub doc_check: DocCheck,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            normalization: Normalization::Loose,
            min_para_chars: 50,
            doc_check: DocCheck::All,
        }
    }
}
