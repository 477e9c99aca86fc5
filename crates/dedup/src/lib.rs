//! The KNOT dedup policy over verticals, and the stream runner.
//!
//! Data flows one way: a [`Chunk`](webdedup_formats::chunk::Chunk) of input is
//! walked once by the [`plan`] module (keys of every document and paragraph), the
//! [`policy`] module asks the store and decides what is kept, [`render`] writes the
//! kept bytes ([`write_back`] makes Parquet row groups and WET records of them), and [`runner`] drives all of it over a directory with threads while
//! keeping the output identical to a sequential pass.
//!
//! ```
//! // The options every front door builds, with their defaults and limits.
//! use webdedup_dedup::PolicyChoices;
//! let opts = PolicyChoices { near: true, ..Default::default() }.options().unwrap();
//! assert_eq!((opts.min_para_chars, opts.near().unwrap().ngram), (50, 7));
//! ```

pub mod batch;
pub mod check;
pub mod engine;
pub mod identity;
pub mod options;
pub mod persist;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod render;
pub mod report;
pub mod resume;
pub mod runner;
pub mod state;
pub mod url_filter;
pub mod wikilinks;
pub mod write_back;

pub use options::{DocCheck, Mode, NearOptions, NearRules, Options, PolicyChoices};
pub use persist::{run_persistent, Persistence};
pub use progress::{Progress, RunProgress};
pub use report::RunStats;
pub use runner::{run, run_with, Durability, RunConfig};
pub use state::RunState;
pub use url_filter::UrlFilter;

#[cfg(test)]
mod tests;
