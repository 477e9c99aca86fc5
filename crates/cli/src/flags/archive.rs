//! Flags of `webdedup cdx ...` and `webdedup warc ...`, turned into the options of
//! `webdedup_archive`.

use super::inputs::{Inputs, INPUTS};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use webdedup_archive::{
    index, util, CdxDatesOptions, CdxDupsOptions, CdxRevisitsOptions, DedupBy, IndexFormat,
    WarcDedupOptions, WarcIndexOptions,
};

/// The help of `cdx dups` and `cdx revisits` inputs.
const CDX_FILES: &str =
    "CDX (legend or 7/9/10/11/12/13/14 fields) or CDXJ files; gzip/zstd detected; `-` is stdin";

/// Where the "seen" set lives, for the commands that can share it.
#[derive(Debug, Args, Default, Clone)]
pub struct StoreFlags {
    /// Keep the seen versions in Redis / Valkey, `redis://HOST:PORT[,HOST:PORT...]`
    /// (`valkey://`, `rediss://` for TLS), shared with other runs; default: in memory.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// A file holding the Redis / Valkey password (first line).
    #[arg(long, value_name = "FILE")]
    pub store_password_file: Option<PathBuf>,
}

/// `cdx dups`.
#[derive(Debug, Args, Clone)]
#[command(mut_arg(INPUTS, |a| a.value_name("FILES").help(CDX_FILES)))]
pub struct DupsFlags {
    #[command(flatten)]
    pub files: Inputs,
    /// Print the original CDX lines instead of `urlkey sha1:DIGEST timestamp`.
    #[arg(long)]
    pub lines: bool,
    /// Output file (default stdout); `.gz` / `.zst` compress.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreFlags,
}

impl DupsFlags {
    pub fn options(&self) -> CdxDupsOptions {
        CdxDupsOptions {
            files: self.files.paths.clone(),
            lines: self.lines,
            output: self.output.clone(),
        }
    }
}

/// `cdx revisits`.
#[derive(Debug, Args, Clone)]
#[command(mut_arg(INPUTS, |a| a.value_name("FILES").help(CDX_FILES)))]
pub struct RevisitsFlags {
    #[command(flatten)]
    pub files: Inputs,
    /// Also count lines whose file name is `-` as revisits (pywb's rule).
    #[arg(long)]
    pub filename_dash: bool,
    /// Print the original CDX lines instead of `urlkey sha1:DIGEST timestamp`.
    #[arg(long)]
    pub lines: bool,
    /// Output file (default stdout); `.gz` / `.zst` compress.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl RevisitsFlags {
    pub fn options(&self) -> CdxRevisitsOptions {
        CdxRevisitsOptions {
            files: self.files.paths.clone(),
            filename_dash: self.filename_dash,
            lines: self.lines,
            output: self.output.clone(),
        }
    }
}

/// `cdx dates`.
#[derive(Debug, Args, Clone)]
#[command(mut_arg(INPUTS, |a| a.value_name("FILES").help("CDX / CDXJ files; gzip/zstd detected; `-` is stdin. Optional with --merge")))]
pub struct DatesFlags {
    #[command(flatten)]
    pub files: Inputs<false>,
    /// Dates files (`urlkey sha1:DIGEST DATE...`, e.g. an earlier output) or `.dup`
    /// files of `cdx dups` to merge with; repeatable.
    #[arg(long, value_name = "DATES", required_unless_present = "inputs_given")]
    pub merge: Vec<PathBuf>,
    /// Memory for the sort buffer (e.g. 512M, 2G).
    #[arg(long, default_value = "1G", value_name = "SIZE", value_parser = util::parse_size)]
    pub memory: u64,
    /// Directory for sort runs (default: the system temporary directory).
    #[arg(long, value_name = "DIR")]
    pub tmp_dir: Option<PathBuf>,
    /// Output file (default stdout); `.gz` / `.zst` compress.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl DatesFlags {
    pub fn options(&self) -> CdxDatesOptions {
        CdxDatesOptions {
            files: self.files.paths.clone(),
            merge: self.merge.clone(),
            memory: self.memory,
            tmp_dir: self.tmp_dir.clone(),
            output: self.output.clone(),
        }
    }
}

/// `--format` of `warc index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IndexFormatFlag {
    /// `urlkey timestamp {json}` (cdxj-indexer's default).
    Cdxj,
    /// ` CDX N b a m s k r M S V g` (cdxj-indexer --cdx11).
    Cdx11,
}

impl From<IndexFormatFlag> for IndexFormat {
    fn from(f: IndexFormatFlag) -> Self {
        match f {
            IndexFormatFlag::Cdxj => IndexFormat::Cdxj,
            IndexFormatFlag::Cdx11 => IndexFormat::Cdx11,
        }
    }
}

/// `warc index`.
#[derive(Debug, Args, Clone)]
#[command(mut_arg(INPUTS, |a| a.value_name("FILES").help("WARC or ARC files: gzip per record, whole-file gzip or uncompressed")))]
pub struct IndexFlags {
    #[command(flatten)]
    pub files: Inputs,
    /// Index format: `cdxj` (as cdxj-indexer) or `cdx11` (11-field CDX with its
    /// legend, as `cdxj-indexer -11`).
    #[arg(long, value_enum, default_value = "cdxj")]
    pub format: IndexFormatFlag,
    /// Record types to index, comma-separated (warcinfo, response, resource,
    /// request, metadata, revisit, conversion, continuation), or `all`.
    #[arg(long, default_value = "response,revisit,resource,metadata", value_name = "TYPES", value_parser = index::parse_records)]
    pub records: String,
    /// Output file (default stdout); `.gz` / `.zst` compress.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl IndexFlags {
    /// The options, with the files indexed in parallel on `threads`.
    pub fn options(&self, threads: usize) -> WarcIndexOptions {
        WarcIndexOptions {
            files: self.files.paths.clone(),
            format: self.format.into(),
            records: self.records.clone(),
            threads: Some(threads),
            output: self.output.clone(),
        }
    }
}

/// `--by` of `warc dedup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DedupByFlag {
    /// Same payload digest, whatever the URL.
    Digest,
    /// Same SURT url key and payload digest.
    #[value(name = "url+digest")]
    UrlDigest,
}

impl From<DedupByFlag> for DedupBy {
    fn from(b: DedupByFlag) -> Self {
        match b {
            DedupByFlag::Digest => DedupBy::Digest,
            DedupByFlag::UrlDigest => DedupBy::UrlDigest,
        }
    }
}

/// `warc dedup`.
#[derive(Debug, Args, Clone)]
#[command(mut_arg(INPUTS, |a| a.value_name("FILES").help("WARC files or directories (searched recursively), processed in order (earlier captures are the originals)")))]
pub struct WarcDedupFlags {
    #[command(flatten)]
    pub files: Inputs,
    /// Output file (one input) or directory (several inputs, or an existing
    /// directory): files keep their names.
    #[arg(short, long, value_name = "PATH")]
    pub output: PathBuf,
    /// What makes two responses duplicates.
    #[arg(long, value_enum, default_value = "digest")]
    pub by: DedupByFlag,
    /// First-capture locations: loaded when the file exists, saved (merged) at the
    /// end, so later crawls dedup against earlier ones.
    #[arg(long, value_name = "FILE")]
    pub locations: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreFlags,
}

impl WarcDedupFlags {
    pub fn options(&self) -> WarcDedupOptions {
        WarcDedupOptions {
            inputs: self.files.paths.clone(),
            output: self.output.clone(),
            by: self.by.into(),
            locations: self.locations.clone(),
        }
    }
}
