//! Formats webdedup reads and writes.
//!
//! * [`input`]: opening plain, gzip or zstd files (detected by magic bytes).
//! * [`output`]: writing outputs atomically, optionally compressed.
//! * [`output_plan`]: one output per input file, never two inputs to one output.
//! * [`shown`]: input quoted in messages, with control characters escaped.
//! * [`vertical`]: the vertical format (one token per line, `<doc>` / `<p>`
//!   structures), read in chunks that end at document boundaries.

pub mod arc;
pub mod cdx;
pub mod input;
pub mod output;
pub mod output_plan;
pub mod shown;
pub mod vertical;
pub mod warc;

pub use input::{open_input, Compression};
