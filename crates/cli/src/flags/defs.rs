//! The flags more than one command takes, each defined once as a small clap group
//! that the commands flatten (as ripgrep defines every flag once in
//! `flags/defs.rs`). Defaults are the constants of the library crates that own
//! them, the ones the Python module falls back on: no default is a literal here.
//! The argument ids are the fields' names, so a command can still word a help or
//! hide a flag with `mut_arg` (`minhash` hides the paragraph options).

use clap::Args;
use std::path::PathBuf;
use webdedup_dedup::options::{
    SubstrParams, DEFAULT_MIN_PARA_CHARS, DEFAULT_NGRAM, DEFAULT_THRESHOLD,
};
use webdedup_dedup::DocCheck;
use webdedup_formats::chunk::{DEFAULT_CHUNK_BYTES, DEFAULT_MAX_LINE_BYTES};
use webdedup_formats::output::OutputCompression;
use webdedup_formats::read::ReadChoices;
use webdedup_store::DEFAULT_BLOCKS;
use webdedup_text::Normalization;

/// `--normalize` (`dedup`, `minhash`, `batch`, `check`).
#[derive(Args, Debug, Clone)]
pub struct NormalizeFlag {
    /// Text normalization before hashing: `loose` (lowercase, digits to 0, no
    /// punctuation or symbols, collapsed whitespace), `lower` (`loose` keeping
    /// digits) or `none`; `check` takes the checked run's.
    #[arg(long = "normalize", default_value_t = Normalization::default(), value_name = "MODE")]
    pub normalization: Normalization,
}

/// Modes whose keys do not follow `--normalize`: MinHash's signatures (pinned to
/// `loose`; their shingles have `--shingle-norm`) and substring mode's units
/// (words as written).
pub const MINHASH_PINS_NORMALIZATION: &str =
    "minhash signatures are pinned to the loose normalization";
pub const SUBSTR_PINS_NORMALIZATION: &str = "substring mode hashes words as written";

impl NormalizeFlag {
    /// Refuses a `--normalize` other than the default for a mode whose keys do
    /// not follow it, rather than ignoring it.
    pub fn refuse_for(&self, mode: &str) -> anyhow::Result<()> {
        if self.normalization != Normalization::default() {
            anyhow::bail!("{mode}: --normalize does not apply");
        }
        Ok(())
    }
}

/// `--input-format`, `--text-field` and `--id-field` (`dedup`, `minhash`, `batch`,
/// `check`, `simhash`, `similar`): how a file is read and which fields hold a
/// document's text and id. `simhash` and `similar` name their own formats.
#[derive(Args, Debug, Clone)]
pub struct DocFormatFlags {
    /// Input format: `auto` (sniffed from each file's first bytes: `PAR1`
    /// Parquet, `WARC/` WET, `{` JSON Lines, else vertical), `vertical`, `jsonl`,
    /// `parquet` (the JSON Lines options name its columns), `wet` (Common Crawl
    /// WET: a document a `conversion` record), or `wikilinks` (never sniffed;
    /// `dedup` only).
    #[arg(long = "input-format", alias = "format", default_value = "auto", value_name = "FORMAT",
          value_parser = ["auto", "vertical", "vert", "jsonl", "json", "parquet", "wet", "wikilinks"])]
    pub input_format: String,
    /// JSON Lines: the field holding the text (default `text`; a dotted path
    /// reaches nested fields).
    #[arg(long, value_name = "FIELD")]
    pub text_field: Option<String>,
    /// JSON Lines: the field holding the document id (default `id`; documents
    /// without one are named FILE:LINE).
    #[arg(long, value_name = "FIELD")]
    pub id_field: Option<String>,
}

impl DocFormatFlags {
    /// The text and id fields, as the one reader takes them
    /// ([`ReadChoices::settings`] checks them); the format is each command's.
    pub fn fields(&self) -> ReadChoices {
        ReadChoices {
            text_field: self.text_field.clone(),
            id_field: self.id_field.clone(),
            ..Default::default()
        }
    }
}

/// `--max-line-bytes` (`dedup`, `minhash`, `batch`, `check`, `simhash`, `similar`).
#[derive(Args, Debug, Clone)]
pub struct MaxLineBytesFlag {
    /// Lines longer than this are dropped and reported; `check` takes the checked
    /// run's.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    pub max_line_bytes: usize,
}

impl MaxLineBytesFlag {
    /// The limit, at least 1.
    pub fn get(&self) -> usize {
        self.max_line_bytes.max(1)
    }
}

/// `--chunk-bytes` (`dedup`, `minhash`, `batch`).
#[derive(Args, Debug, Clone)]
pub struct ChunkBytesFlag {
    /// Bytes of input handed to a thread at a time (documents never straddle
    /// chunks; fixed for a batch work directory).
    #[arg(long, default_value_t = DEFAULT_CHUNK_BYTES, value_name = "BYTES")]
    pub chunk_bytes: usize,
}

impl ChunkBytesFlag {
    /// The chunk size, at least 1.
    pub fn get(&self) -> usize {
        self.chunk_bytes.max(1)
    }
}

/// `--blocks` (`dedup`, `minhash`, `batch`).
#[derive(Args, Debug, Clone)]
pub struct BlocksFlag {
    /// Blocks of the key space (fixed once a store is saved).
    #[arg(long, default_value_t = DEFAULT_BLOCKS, value_name = "N")]
    pub blocks: u32,
}

/// `--min-para-chars` and `--doc-check` (`dedup`, `batch`): which pieces of a
/// document are looked up.
#[derive(Args, Debug, Clone)]
pub struct PiecesFlags {
    /// Paragraphs with fewer characters are short: they ride along with the next
    /// long paragraph instead of being looked up.
    #[arg(long, default_value_t = DEFAULT_MIN_PARA_CHARS, value_name = "N")]
    pub min_para_chars: usize,
    /// Test the whole-document key of `all` documents, only of those whose
    /// URL+title repeated (`url-title`, the KNOT worker's shortcut), or of none
    /// (`none`: paragraphs only, no document or URL+title key, as dolma's
    /// paragraph dedup).
    #[arg(long, default_value_t = DocCheck::default(), value_name = "WHICH")]
    pub doc_check: DocCheck,
}

/// `--ngram` and `--threshold` of near mode (`dedup -n`, `check --near`).
#[derive(Args, Debug, Clone)]
pub struct NearShapeFlags {
    /// Words per n-gram (near mode).
    #[arg(long, default_value_t = DEFAULT_NGRAM, value_name = "N", requires = "near")]
    pub ngram: usize,
    /// Share of a paragraph's tokens that seen n-grams must cover, exclusive (near
    /// mode).
    #[arg(long, default_value_t = DEFAULT_THRESHOLD, value_name = "SHARE", requires = "near")]
    pub threshold: f64,
}

/// Where and how the outputs are written (`dedup`, `minhash`, `batch filter`,
/// `batch run`).
#[derive(Args, Debug, Clone)]
pub struct OutputFlags {
    /// Output directory: one output per input file `REL`, `STEM.dedup.EXT` (its
    /// format's extension kept: `part.parquet` -> `part.dedup.parquet`) or for a
    /// vertical `REL.dedup`, and its side files `STEM.dedup.dd`, ...
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Also write `STEM.dedup.dd`: one `<dd url=".." title=".." status=".."/>` per
    /// input document.
    #[arg(short = 'd', long = "dd")]
    pub dd: bool,
    /// Compress outputs: `auto` (outputs of other formats than verticals like their
    /// inputs' names say, verticals plain), `zst`, `gz` or `none`.
    #[arg(long, default_value = "auto", value_name = "KIND")]
    pub compress: Compress,
}

/// `--compress`: `auto` (the default) compresses the outputs of JSON Lines as
/// their inputs' names say (`.gz`, `.zst`) and leaves verticals plain (as the
/// KNOT tools read them); `zst`, `gz` or `none` for every output.
#[derive(Clone, Copy, Debug)]
pub struct Compress {
    pub fixed: OutputCompression,
    pub auto: bool,
}

impl std::str::FromStr for Compress {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(Compress {
                fixed: OutputCompression::None,
                auto: true,
            });
        }
        Ok(Compress {
            fixed: s
                .parse()
                .map_err(|e: String| e.replace("or none", "none or auto"))?,
            auto: false,
        })
    }
}

/// `-f` (`dedup`; `batch` with `--substr`).
#[derive(Args, Debug, Clone)]
pub struct FeedbackFlag {
    /// Feedback mode: write each dropped paragraph to `STEM.dedup.dropped` after a
    /// `<t>FILE:REC\tFILE:REC</f>` line naming it and its original; `files.idx` maps
    /// file ids to paths. Check the claims with `webdedup check`. With --substr:
    /// `STEM.dedup.spans` instead, each removed span and its first copy
    /// (docs/substr.md).
    #[arg(short = 'f', long)]
    pub feedback: bool,
}

/// `--substr[=K,W]` (`dedup`, `batch`).
#[derive(Args, Debug, Clone)]
pub struct SubstrFlag {
    /// Substring mode: remove repeated spans inside documents (docs/substr.md).
    /// Windows of K words (as written), one key stored of each run of W windows: a
    /// span of at least K+W-1 words seen before is removed (the first copy kept),
    /// but for at most W-1 words at each end; stretches under B bytes are kept
    /// (default 80). `--substr` alone means `--substr=10,4,80`.
    #[arg(
        long,
        value_name = "K,W[,B]",
        num_args = 0..=1,
        default_missing_value = SubstrParams::DEFAULT_ARG,
        require_equals = true,
        value_parser = SubstrParams::parse
    )]
    pub substr: Option<SubstrParams>,
}

/// `--mark` (`dedup`, `batch filter`, `batch run`).
#[derive(Args, Debug, Clone)]
pub struct MarkFlag {
    /// Remove nothing: write every input unchanged and, beside each output, its
    /// decisions in dolma's attributes layout (`STEM.dedup.attributes.jsonl`: one
    /// line a record, character spans of duplicate paragraphs and of documents
    /// dropped whole).
    #[arg(long)]
    pub mark: bool,
}
