//! SimHash near-duplicate documents.
pub mod core;
pub mod search;
pub mod tokenize;
