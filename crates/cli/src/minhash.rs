//! `webdedup minhash`: MinHash LSH stream mode over `dedup`'s machinery.
//!
//! It is `dedup` with another policy (`webdedup_dedup::policy::minhash`): the same
//! inputs and formats, threads, stores (embedded, `--store DIR`, `-s MAP`),
//! journal and `--restore`, outputs, `.dd`, `--json`, progress and exit statuses,
//! so it takes `dedup`'s options (those of paragraph modes are refused) plus the
//! MinHash settings below.

use crate::dedup::DedupArgs;
use anyhow::Result;
use clap::Args;
use webdedup_dedup::batch::Keep;
use webdedup_dedup::options::{MinHashChoices, MinHashOptions};
use webdedup_minhash::{Normalization, Shingling};

#[derive(Args, Debug)]
// `dedup`'s paragraph options are refused here: hidden from the help.
#[command(
    mut_arg("near", |a| a.hide(true)),
    mut_arg("ngram", |a| a.hide(true)),
    mut_arg("threshold", |a| a.hide(true)),
    mut_arg("smooth", |a| a.hide(true)),
    mut_arg("max_stub", |a| a.hide(true)),
    mut_arg("feedback", |a| a.hide(true)),
    mut_arg("min_para_chars", |a| a.hide(true)),
    mut_arg("doc_check", |a| a.hide(true)),
    mut_arg("normalization", |a| a.hide(true)),
    mut_arg("restore", |a| a.help("Finish an interrupted run (same command plus `-r`): the input is run again from its start on the store as it was before the run, giving the bytes of an uninterrupted run"))
)]
#[command(after_help = "\
Banding: two documents of Jaccard similarity s share at least one band with
probability 1 - (1 - s^R)^B; the S-curve is steepest at (1/B)^(1/R): 0.72 for the
defaults (14 bands x 8 rows), chosen by the quality study with --verify 0.8
(F1 0.97 on web3 for word 5-gram Jaccard >= 0.8). Outputs per input, named as
dedup's (`part.jsonl.gz`: STEM `part`; a vertical `part.vert`: STEM `part.vert`):
STEM.dedup.EXT (kept documents, byte for byte; a vertical's is STEM.dedup),
STEM.dedup.pairs (DOC TAB ORIGINAL TAB JACCARD per dropped document), STEM.dedup.dd
with -d, STEM.dedup.clusters (DOC TAB CLUSTER per document) with --clusters.")]
pub struct MinhashArgs {
    #[command(flatten)]
    pub dedup: DedupArgs,
    #[command(flatten)]
    pub settings: MinHashSettings,
}

/// The MinHash settings, shared by `webdedup minhash` and `webdedup batch --minhash`.
#[derive(Args, Debug, Clone)]
pub struct MinHashSettings {
    /// Shingles: `auto:N` (per document: `chars:N` when at least a third of its
    /// letters are Han, kana, Thai, Lao, Khmer, Myanmar or Tibetan, else `words:N`),
    /// `words:N` (N normalized words; `N` alone means the same) or `chars:N` (N
    /// characters, spaces removed). A store records them and refuses others.
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_SHINGLING, value_name = "KIND:N")]
    shingles: Shingling,
    /// The text's normalization before shingling: `lower` (lowercase, punctuation
    /// and symbols dropped, digits kept: pages that differ only in their numbers
    /// are not copies) or `loose` (the same with every digit written 0, the default
    /// before). A store records it and refuses the other.
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_NORM, value_name = "MODE")]
    shingle_norm: Normalization,
    /// Signature values (one-permutation MinHash with rehashing rounds, pinned `fss-v1`).
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_HASHES, value_name = "K")]
    hashes: usize,
    /// LSH bands (each one 64-bit key in the store).
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_BANDS, value_name = "B")]
    bands: usize,
    /// Signature values per band.
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_ROWS, value_name = "R")]
    rows: usize,
    /// Drop a matching document only when its Jaccard similarity with the original,
    /// estimated from the two signatures, is at least J (0: every band match drops).
    /// Keeps 1 byte per signature value of every kept document in the side store
    /// (a temporary file beside the outputs, not in memory).
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_VERIFY, value_name = "J")]
    verify: f64,
    /// Values of the verification sketch `--verify` estimates from (1 byte each in
    /// the side store), a second sketch of the same shingles; 0: the low bytes of
    /// the signature's own values (the default before). A store records it and
    /// refuses another.
    #[arg(long, default_value_t = webdedup_minhash::DEFAULT_VERIFY_HASHES, value_name = "V")]
    verify_hashes: usize,
    /// Which copy of near-duplicates survives (batch mode): `first` (input order),
    /// `longest` (most characters of text), `newest:FIELD` (latest ISO 8601 date in
    /// FIELD), `max:FIELD` (greatest number in FIELD); ties in input order. Stream
    /// mode keeps the first.
    #[arg(long, default_value = "first", value_name = "POLICY")]
    pub keep: Keep,
    /// Also write `STEM.dedup.clusters` (`DOC TAB CLUSTER` for every document: the
    /// name of its cluster's kept document, itself when kept) and, with `--mark`,
    /// the cluster as an attribute.
    #[arg(long)]
    pub clusters: bool,
}

impl MinHashSettings {
    /// The options of MinHash mode, or why the settings are refused.
    pub fn options(&self) -> Result<MinHashOptions> {
        // One check for every front door (the Python module's too).
        MinHashChoices {
            shingles: Some(self.shingles),
            shingle_norm: Some(self.shingle_norm),
            hashes: Some(self.hashes),
            bands: Some(self.bands),
            rows: Some(self.rows),
            verify: Some(self.verify),
            verify_hashes: Some(self.verify_hashes),
        }
        .options()
        .map_err(anyhow::Error::msg)
    }
}

pub fn run(args: &MinhashArgs) -> Result<u8> {
    let keep = &args.settings.keep;
    if keep.ranks() {
        anyhow::bail!(
            "--keep {keep}: stream mode keeps the first copy in input order (it decides \
             each document before later ones are read); to choose among copies use \
             `webdedup batch run --minhash --keep {keep}`"
        );
    }
    crate::dedup::run_mode(
        &args.dedup,
        Some(args.settings.options()?),
        args.settings.clusters,
    )
}
