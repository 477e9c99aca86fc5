//! The flags of the commands whose work lives in a library crate (`simhash`,
//! `similar`, `cdx *`, `warc *`): clap stays in the binary, as ripgrep keeps its
//! flags in `crates/core/flags/`. Each flags struct turns into the library's plain
//! options with `options()`; the shared options (`-t`, `-q`, `--progress`,
//! `--json`) come from [`crate::conventions`].

pub mod archive;
pub mod defs;
pub mod inputs;
pub mod simhash;
