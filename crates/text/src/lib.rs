//! Text side of webdedup: how a piece of text becomes a 64-bit key.
//!
//! * [`normalize`]: the `loose` / `none` normalizations, applied word by word as a
//!   paragraph is read, so no intermediate string of the raw text is ever built.
//! * [`keys`]: the key kinds (paragraph, document, URL+title, ...) and their hashes.
//!   Each kind hashes with its own xxh3 seed, so the kinds share one store without
//!   ever colliding on purpose (a one-paragraph document and its paragraph have
//!   different keys).

pub mod keys;
pub mod normalize;

pub use keys::{key, KeyKind, StreamKey};
pub use normalize::{Normalization, TextBuilder};
