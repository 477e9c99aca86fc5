//! The table that chose the defaults (issue 32): stream-mode MinHash with each
//! verification (signature bits kept per value, estimate threshold, or the exact
//! Jaccard of the two documents' shingle sets) and band settings, beside rensa and
//! datatrove run on the same documents, all scored by the same two rules.
//!
//! * **Earlier-document rule** (issue 32's): a document *should* be dropped when an
//!   earlier document (any) has true Jaccard >= 0.8 with it, and *may* be when one
//!   has >= 0.6. Recall = dropped and should / should; precision = dropped and may /
//!   dropped (a drop between 0.6 and 0.8 is justified, not counted wrong).
//! * **Kept-original rule** (the main table's dropped view): right when an earlier
//!   document the method itself kept has true Jaccard >= 0.8.

use crate::signatures::{band_keys, est, shingle_sets, Sigs};
use crate::stream::{prf, score_dropped, stream_verified, Truth};
use rayon::prelude::*;
use std::collections::HashMap;
use webdedup_minhash::{Banding, Normalization, Shingling, Sketch};
use webdedup_study::{jaccard, truth_pairs, Doc, Score};

/// Lower bound of a justified drop in the earlier-document rule.
const JUSTIFIED: f64 = 0.6;

/// Per document: an earlier document has true Jaccard >= the threshold (`should`),
/// or >= [`JUSTIFIED`] (`may`).
pub(crate) struct Earlier {
    should: Vec<bool>,
    may: Vec<bool>,
}

impl Earlier {
    pub(crate) fn new(truth: &Truth) -> Earlier {
        let earlier = |pairs: &[(u32, u32)]| {
            let mut v = vec![false; truth.sets.len()];
            for &(_, j) in pairs {
                v[j as usize] = true;
            }
            v
        };
        Earlier {
            should: earlier(&truth.pairs),
            may: earlier(&truth_pairs(&truth.sets, JUSTIFIED)),
        }
    }

    /// `P/R/F1` of the dropped documents by the earlier-document rule.
    pub(crate) fn score(&self, dropped: &[bool]) -> String {
        let (mut drops, mut justified, mut should, mut found) = (0, 0, 0, 0);
        for (d, &x) in dropped.iter().enumerate() {
            drops += x as usize;
            justified += (x && self.may[d]) as usize;
            should += self.should[d] as usize;
            found += (x && self.should[d]) as usize;
        }
        let p = if drops == 0 {
            1.0
        } else {
            justified as f64 / drops as f64
        };
        let r = if should == 0 {
            1.0
        } else {
            found as f64 / should as f64
        };
        let f1 = if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        };
        format!("{p:.4}/{r:.4}/**{f1:.4}**")
    }
}

/// How a band match is verified.
#[derive(Clone, Copy)]
enum Check {
    /// The estimate from the low `bits` of each signature value, corrected for
    /// chance agreement, at least the threshold (32: the full values).
    Bits(u32, f64),
    /// The exact Jaccard of the two documents' shingle sets.
    Exact(f64),
    /// The estimate from a second signature (the crate's sketch, same values)
    /// of the ground truth's own word 5-grams: words lowercased but digits and
    /// punctuation inside words kept, where the shingles fold digits to 0 and
    /// drop punctuation.
    Verbatim(f64),
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Check::Bits(b, j) => write!(f, "estimate, {b} bits a value, >= {j}"),
            Check::Exact(j) => write!(f, "exact shingle Jaccard >= {j}"),
            Check::Verbatim(j) => {
                write!(f, "estimate from a signature of unfolded 5-grams, >= {j}")
            }
        }
    }
}

/// One row group of the table: (hashes, bands, rows), the shingles'
/// normalization and the checks tried on them.
type Options = ((usize, usize, usize), Normalization, Vec<Check>);

/// The options measured.
fn options() -> Vec<Options> {
    let bits_at = |j: f64| [8, 16, 32].map(|b| Check::Bits(b, j));
    let mut all = Vec::new();
    for shape in [
        (112, 14, 8),
        (128, 16, 8),
        (128, 14, 8),
        (256, 14, 8),
        (256, 16, 8),
        (256, 20, 8),
    ] {
        let mut checks = Vec::new();
        for j in [0.8, 0.75, 0.7] {
            checks.extend(bits_at(j));
        }
        checks.extend([Check::Exact(0.8), Check::Exact(0.75), Check::Exact(0.7)]);
        checks.extend([
            Check::Verbatim(0.8),
            Check::Verbatim(0.75),
            Check::Verbatim(0.7),
        ]);
        all.push((shape, Normalization::Loose, checks));
    }
    // Digits kept in the shingles (`lower`, the default since): band keys and
    // verification from the same signature.
    for shape in [(112, 14, 8), (128, 16, 8)] {
        let mut checks = Vec::new();
        for j in [0.8, 0.75] {
            checks.extend([Check::Bits(8, j), Check::Bits(32, j), Check::Exact(j)]);
        }
        all.push((shape, Normalization::Lower, checks));
    }
    all
}

/// The rows of a peer run's export file `dir/name`, split at tabs.
pub(crate) fn read_tsv(dir: &str, name: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(format!("{dir}/{name}"))
        .unwrap_or_else(|e| panic!("{dir}/{name}: {e}"))
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// A document's number from its (file rank, line index) as exports write them.
pub(crate) fn numbering(docs: &[Doc]) -> impl Fn(&str, &str) -> usize {
    let number: HashMap<(u32, u32), usize> = docs
        .iter()
        .enumerate()
        .map(|(n, d)| ((d.file, d.index), n))
        .collect();
    move |r: &str, i: &str| number[&(r.parse().unwrap(), i.parse().unwrap())]
}

/// Dropped documents of a peer run (`removed.tsv` and `ids.tsv` of its export,
/// in (file rank, line index) terms), checked against the study's numbering.
pub(crate) fn peer_removed(dir: &str, docs: &[Doc]) -> Vec<bool> {
    let at = numbering(docs);
    let ids = read_tsv(dir, "ids.tsv");
    assert_eq!(ids.len(), docs.len(), "{dir}: another number of documents");
    for row in &ids {
        assert_eq!(
            docs[at(&row[0], &row[1])].id,
            row[2],
            "{dir}: numbering differs at {row:?}"
        );
    }
    let mut removed = vec![false; docs.len()];
    for r in read_tsv(dir, "removed.tsv") {
        removed[at(&r[0], &r[1])] = true;
    }
    removed
}

/// The kept-original rule for a run known only by what it removed.
fn kept_original_rule(truth: &Truth, removed: &[bool]) -> Score {
    let decisions: Vec<Option<u32>> = removed.iter().map(|&r| r.then_some(u32::MAX)).collect();
    score_dropped(truth, &decisions, |_| true).0
}

/// Prints the options table; `sigs(hashes)` gives the crate's signatures of every
/// document with that many values; `peers` are (name, removed documents).
pub(crate) fn options_table(
    docs: &[Doc],
    truth: &Truth,
    mut sigs: impl FnMut(usize, Normalization) -> Sigs,
    peers: &[(String, Vec<bool>)],
) {
    let earlier = Earlier::new(truth);
    let mut shingles: Option<(Normalization, Vec<Vec<u64>>)> = None;
    let mut verbatim: Option<(usize, Sigs)> = None;
    println!(
        "### Verification and band options, stream mode, beside rensa and datatrove (issue 32)\n"
    );
    println!("Documents in input order, keep-first. Earlier-document rule: a drop is right when an earlier document has word 5-gram Jaccard >= {} with it, justified (not wrong) at >= {JUSTIFIED}; recall over the documents that have such an earlier document at >= {}. Kept-original rule: the main table's dropped view. Side store: signature bytes kept per kept document.\n", 0.8, 0.8);
    println!("| method | hashes = bands x rows | verification | dropped, earlier-document rule: P/R/F1 | dropped, kept-original rule: P/R/F1 | side store bytes |\n|---|---|---|---|---|---|");
    for (name, removed) in peers {
        println!(
            "| {name} | | | {} | {} | |",
            earlier.score(removed),
            prf(&kept_original_rule(truth, removed))
        );
    }
    let mut last: Option<(usize, Normalization, Sigs)> = None;
    for ((hashes, bands, rows), norm, checks) in options() {
        if last.as_ref().is_none_or(|l| (l.0, l.1) != (hashes, norm)) {
            last = Some((hashes, norm, sigs(hashes, norm)));
        }
        if shingles.as_ref().is_none_or(|s| s.0 != norm) {
            shingles = Some((norm, shingle_sets(docs, Shingling::Words(5), norm)));
        }
        let s = &last.as_ref().expect("just set").2;
        let shingles = &shingles.as_ref().expect("just set").1;
        let keys = band_keys(s, Banding { bands, rows });
        for check in checks {
            let dec = match check {
                Check::Bits(bits, j) => {
                    let low = low_bits(s, bits);
                    let chance = if bits == 32 {
                        0.0
                    } else {
                        0.5f64.powi(bits as i32)
                    };
                    stream_verified(&keys, |d, o| {
                        (est(&low, d, o) - chance) / (1.0 - chance) >= j
                    })
                }
                Check::Exact(j) => stream_verified(&keys, |d, o| {
                    jaccard(&shingles[d as usize], &shingles[o as usize]) >= j
                }),
                Check::Verbatim(j) => {
                    if verbatim.as_ref().is_none_or(|v| v.0 != hashes) {
                        verbatim = Some((hashes, verbatim_sigs(truth, hashes)));
                    }
                    let v = &verbatim.as_ref().expect("just set").1;
                    stream_verified(&keys, |d, o| est(v, d, o) >= j)
                }
            };
            let dropped: Vec<bool> = dec.iter().map(Option::is_some).collect();
            let bytes = match check {
                Check::Bits(b, _) => format!("{}", hashes * b as usize / 8),
                Check::Exact(_) => "shingle set".into(),
                Check::Verbatim(_) => format!("{}", hashes * 4),
            };
            println!(
                "| webdedup fss words:5 norm={norm} | {hashes} = {bands} x {rows} | {check} | {} | {} | {bytes} |",
                earlier.score(&dropped),
                prf(&score_dropped(truth, &dec, |_| true).0)
            );
        }
    }
    println!();
}

/// The low `bits` of every signature value.
fn low_bits(sigs: &Sigs, bits: u32) -> Sigs {
    let mask = if bits == 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    };
    sigs.iter()
        .map(|s| s.as_ref().map(|s| s.iter().map(|v| v & mask).collect()))
        .collect()
}

/// Signatures of `hashes` values (the crate's sketch) of the ground truth's word
/// 5-gram sets.
fn verbatim_sigs(truth: &Truth, hashes: usize) -> Sigs {
    truth
        .sets
        .par_iter()
        .map_init(
            || Sketch::new(hashes),
            |sk, set| {
                sk.clear();
                set.iter().for_each(|&g| sk.push(g));
                let mut out = Vec::new();
                sk.finish(&mut out).then_some(out)
            },
        )
        .collect()
}
