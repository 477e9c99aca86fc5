//! SimHash near-duplicate documents.
pub mod cluster;
pub mod core;
pub mod index;
pub mod input;
pub mod run;
pub mod search;
pub mod tokenize;

pub use run::{
    run_simhash, run_similar, simhash_outcome, similar_outcome, SimhashArgs, SimilarArgs,
};
