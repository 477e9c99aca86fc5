//! Flags of `webdedup simhash` and `webdedup similar`, turned into the options of
//! `webdedup_simhash`.

use crate::flags::defs::{DocFormatFlags, MaxLineBytesFlag};
use crate::flags::inputs::{Inputs, INPUTS};
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use webdedup_simhash::input::{InputFormat, ReadOptions};
use webdedup_simhash::run::{parse_shingle, DocOptions, FpFormat, DEFAULT_MAX_DISTANCE};
use webdedup_simhash::search::MAX_K;
use webdedup_simhash::tokenize::{Settings, Tokenizer, Weights, DEFAULT_SHINGLE};
use webdedup_simhash::{SimhashOptions, SimilarOptions};

/// `--input-format` of `simhash` and `similar`: the formats of the one document
/// reader, and the inputs only they read.
const INPUT_FORMAT_HELP: &str = "Input format: auto (sniffed from each file's first \
    bytes: `PAR1` Parquet, `WARC/` WET, `<` vertical, `{` JSON Lines, a fingerprint file, \
    else lines), vertical, jsonl, parquet, wet, lines (one document per line), file (one \
    document per file), fingerprints (TSV written by `simhash`)";

/// Options shared by both commands: how documents are read and fingerprinted.
#[derive(Args, Debug, Clone)]
#[command(mut_arg("input_format", |a| a
    .help(INPUT_FORMAT_HELP)
    // `--format` is `simhash`'s output layout.
    .alias(None::<&'static str>)
    .value_parser(|s: &str| s.parse::<InputFormat>().map(|_| s.to_owned()))))]
pub struct DocFlags {
    #[command(flatten)]
    pub read: DocFormatFlags,
    /// Tokenizer: unicode (UAX #29 words), charabia (offline features: Chinese via
    /// jieba, no Japanese/Korean dictionaries), chars:N (character N-grams).
    #[arg(long, default_value = "unicode", value_name = "TOKENIZER")]
    pub tokenizer: Tokenizer,
    /// Features are shingles of this many consecutive tokens.
    #[arg(long, default_value_t = DEFAULT_SHINGLE, value_name = "N", value_parser = parse_shingle)]
    pub shingle: usize,
    /// Feature weights: count (occurrences) or distinct (each distinct feature once).
    #[arg(long, default_value = "distinct", value_name = "WEIGHTS")]
    pub weights: Weights,
    #[command(flatten)]
    pub max_line_bytes: MaxLineBytesFlag,
}

impl DocFlags {
    /// The options, on `threads` workers; field names are checked as every
    /// command's are.
    fn options(&self, threads: usize) -> Result<DocOptions> {
        let fields = self.read.fields().settings().map_err(anyhow::Error::msg)?;
        Ok(DocOptions {
            read: ReadOptions {
                format: self.read.input_format.parse().map_err(anyhow::Error::msg)?,
                fields: fields.jsonl,
                max_line_bytes: self.max_line_bytes.get(),
            },
            settings: Settings::new(self.tokenizer, self.shingle, self.weights),
            threads: Some(threads),
            // The command line reports problems always; the summary is its own.
            quiet: false,
        })
    }
}

/// `--format` of `simhash`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FpFormatFlag {
    Tsv,
    Csv,
    Jsonl,
}

impl From<FpFormatFlag> for FpFormat {
    fn from(f: FpFormatFlag) -> Self {
        match f {
            FpFormatFlag::Tsv => FpFormat::Tsv,
            FpFormatFlag::Csv => FpFormat::Csv,
            FpFormatFlag::Jsonl => FpFormat::Jsonl,
        }
    }
}

/// `webdedup simhash`: one 64-bit SimHash per document.
#[derive(Args, Debug, Clone)]
pub struct SimhashFlags {
    #[command(flatten)]
    pub files: Inputs,
    #[command(flatten)]
    pub doc: DocFlags,
    /// Output format. tsv: `ID HEX SIGNED P1 P2 P3 P4` after a `# webdedup-simhash v1
    /// SETTINGS` line; csv: the same columns with a header row; jsonl: one object per
    /// document.
    #[arg(long, value_enum, default_value = "tsv")]
    pub format: FpFormatFlag,
    /// Output file (default: standard output); `.gz` / `.zst` names are compressed.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// TSV: leave out the `# webdedup-simhash` settings line.
    #[arg(long)]
    pub no_header: bool,
}

impl SimhashFlags {
    pub fn options(&self, threads: usize) -> Result<SimhashOptions> {
        Ok(SimhashOptions {
            files: self.files.paths.clone(),
            doc: self.doc.options(threads)?,
            format: self.format.into(),
            output: self.output.clone(),
            no_header: self.no_header,
        })
    }
}

/// `webdedup similar`: near-duplicate pairs, clusters or a deduplicated copy.
#[derive(Args, Debug, Clone)]
#[command(mut_arg(INPUTS, |a| a.help("Inputs: fingerprint files written by `webdedup simhash`, or documents: files, directories (searched recursively) or `-` (not with --dedup)")))]
pub struct SimilarFlags {
    #[command(flatten)]
    pub files: Inputs,
    /// Maximal Hamming distance of near-duplicates.
    #[arg(short = 'k', long = "max-distance", value_name = "K", default_value_t = DEFAULT_MAX_DISTANCE, value_parser = clap::value_parser!(u32).range(0..=MAX_K as i64))]
    pub k: u32,
    #[command(flatten)]
    pub doc: DocFlags,
    /// Write clusters (`LEADER_ID MEMBER_ID DISTANCE`, leader first) instead of pairs
    /// (`ID ID DISTANCE`).
    #[arg(long, conflicts_with = "dedup")]
    pub clusters: bool,
    /// Write the inputs back without their near-duplicates into --output-dir (the
    /// first document of each cluster survives), plus a report of what was dropped.
    #[arg(long, requires = "output_dir")]
    pub dedup: bool,
    /// Directory for the deduplicated inputs (same file names and compression;
    /// paths below the inputs' common directory when names repeat). Needs --dedup.
    #[arg(long, value_name = "DIR", requires = "dedup")]
    pub output_dir: Option<PathBuf>,
    /// Dedup report `DROPPED_ID KEPT_ID DISTANCE FILE LINE` (default:
    /// OUTPUT_DIR/simhash-dropped.tsv).
    #[arg(long, value_name = "FILE", requires = "dedup")]
    pub report: Option<PathBuf>,
    /// Persisted index: the batch is checked against every document indexed before,
    /// then its kept documents are added.
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// With --index: check only, do not add the batch.
    #[arg(long, requires = "index")]
    pub no_update: bool,
    /// Pairs or clusters output (default: standard output).
    #[arg(short, long, value_name = "FILE", conflicts_with = "dedup")]
    pub output: Option<PathBuf>,
}

impl SimilarFlags {
    pub fn options(&self, threads: usize) -> Result<SimilarOptions> {
        Ok(SimilarOptions {
            files: self.files.paths.clone(),
            k: self.k,
            doc: self.doc.options(threads)?,
            clusters: self.clusters,
            dedup: self.dedup,
            output_dir: self.output_dir.clone(),
            report: self.report.clone(),
            index: self.index.clone(),
            no_update: self.no_update,
            output: self.output.clone(),
        })
    }
}
