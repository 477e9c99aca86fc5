//! ExactSubstr's rule (Lee et al. 2022, "Deduplicating Training Data Makes
//! Language Models Better"; google-research/deduplicate-text-datasets) as a
//! batch mode: a suffix array over a corpus' texts finds every byte span of at
//! least L bytes that occurs twice or more; every copy is struck, or all but the
//! first.
//!
//! * [`corpus`]: the texts as one byte string with separators.
//! * [`sarray`]: positions in suffix-array order, in shards of bounded size
//!   merged (construction by `libsais`).
//! * [`rule`]: the repeated windows and the spans they cover in each text.
//! * [`job`]: a whole run as the command line and Python ask for it.
//! * [`run`]: the mode over files: read every format through
//!   `webdedup_formats::texts`, write each document back in its format without
//!   its spans (`webdedup_formats::strike`).

pub mod corpus;
pub mod job;
pub mod rule;
pub mod run;
pub mod sarray;

pub use corpus::Corpus;
pub use rule::{repeated_spans, Keep, Settings, DEFAULT_LENGTH};

#[cfg(test)]
mod tests;
