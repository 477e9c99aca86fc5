//! Formats webdedup reads and writes.
//!
//! * [`input`]: the one input layer: files, directories and `-` listed, plain,
//!   gzip or zstd streams opened (detected by magic bytes).
//! * [`output`]: writing outputs atomically, optionally compressed.
//! * [`vertical`]: the vertical format (one token per line, `<doc>` / `<p>`
//!   structures), read in chunks that end at document boundaries.

pub mod arc;
pub mod cdx;
pub mod input;
pub mod output;
pub mod vertical;
pub mod warc;

pub use input::{list_inputs, open_file, open_input, Compression, InputFile, ListOptions};
