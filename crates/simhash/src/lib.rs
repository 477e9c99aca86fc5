//! SimHash near-duplicate documents.
pub mod core;
pub mod tokenize;
