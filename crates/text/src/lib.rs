//! Text side of webdedup: how a piece of text becomes a 64-bit key.
//!
//! * [`normalize`]: the `loose` / `none` normalizations, applied word by word as a
//!   paragraph is read, so no intermediate string of the raw text is ever built.
//! * [`choices`]: settings chosen by name ([`named_choices!`]: one table gives an
//!   enum its names, aliases, parsing and the message listing the choices).
//! * [`shown`]: text quoted in messages (input, addresses), control characters
//!   escaped so a terminal shows them instead of obeying them.
//! * [`keys`]: the key kinds (paragraph, document, URL+title, ...) and their hashes.
//!   Each kind hashes with its own xxh3 seed, so the kinds share one store without
//!   ever colliding on purpose (a one-paragraph document and its paragraph have
//!   different keys).
//!
//! ```
//! use webdedup_text::{key, normalize::normalize, KeyKind, Normalization};
//! // `loose`: lowercase, digits to 0, punctuation gone, whitespace collapsed.
//! let a = normalize("The  price: 42 EUR!", Normalization::Loose);
//! assert_eq!(a, "the price 00 eur");
//! assert_eq!(a, normalize("the PRICE 17 eur", Normalization::Loose));
//! // One text, two kinds: two different keys.
//! assert_ne!(key(KeyKind::Paragraph, a.as_bytes()), key(KeyKind::Document, a.as_bytes()));
//! ```

pub mod choices;
pub mod keys;
pub mod normalize;
pub mod shown;

pub use keys::{key, KeyKind, StreamKey};
pub use normalize::{Normalization, TextBuilder};
