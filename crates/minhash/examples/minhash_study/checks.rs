//! The study's side tables: datatrove's results, estimate errors, band
//! probabilities on synthetic pairs, b-bit verification and examples.

use crate::options::{numbering, peer_removed, read_tsv};
use crate::signatures::{candidates, est, shingle_sets, signatures, Densified, Method, Sigs};
use crate::stream::{prf, score_dropped, stream_verified, Shown, Truth};
use std::collections::HashSet;
use webdedup_minhash::reference::{Classic, SplitMix64};
use webdedup_minhash::{estimate_jaccard, Banding, Params, Sketch};
use webdedup_study::{jaccard, score, truth_pairs, Doc, Score};

/// datatrove's results (exported by bench/datatrove_minhash.py) in the main
/// table's form. Its candidates are the pairs that share a bucket; its dropped view
/// counts a removed document as right when a document datatrove kept, anywhere in
/// the input (its clusters have no order), is a true partner, and a kept document
/// as a miss when an earlier kept one is.
pub(crate) fn datatrove_row(dir: &str, docs: &[Doc], truth: &Truth) -> String {
    let removed = peer_removed(dir, docs);
    let at = numbering(docs);
    let mut cand: Vec<(u32, u32)> = read_tsv(dir, "candidates.tsv")
        .iter()
        .map(|r| {
            let (a, b) = (at(&r[0], &r[1]) as u32, at(&r[2], &r[3]) as u32);
            (a.min(b), a.max(b))
        })
        .collect();
    cand.sort_unstable();
    cand.dedup();
    let s = score(&truth.pairs, &cand, |_| true);
    let mut ds = Score::default();
    for d in 0..docs.len() {
        let kept_partner = |earlier: bool| {
            truth.adj[d]
                .iter()
                .any(|&e| !removed[e as usize] && (!earlier || (e as usize) < d))
        };
        match (removed[d], removed[d] || kept_partner(true)) {
            (true, _) if kept_partner(false) => ds.tp += 1,
            (true, _) => ds.fp += 1,
            (false, true) => ds.fn_ += 1,
            (false, false) => {}
        }
    }
    format!(
        "| datatrove 0.10.1 MinHash (5-grams, 64-bit xxhash) | 112 = 14 x 8 | 0.719 | {} | {} | – | – | {} (clusters: {} removed) | – | – |",
        cand.len(),
        prf(&s),
        prf(&ds),
        removed.iter().filter(|r| **r).count()
    )
}

pub(crate) const METHODS: [Method; 3] = [Method::Fss, Method::Od, Method::Classic];

/// Bias and spread of the estimated Jaccard (each method, the `show` hashes)
/// against the exact Jaccard of the same shingle sets, over the pairs whose
/// ground-truth Jaccard is >= 0.5.
pub(crate) fn estimate_errors(docs: &[Doc], truth: &Truth, show: Params) -> Vec<Vec<u64>> {
    let shingle_sets = shingle_sets(docs, show.shingling, show.norm);
    let wide = truth_pairs(&truth.sets, 0.5);
    println!(
        "### Jaccard estimates against the exact Jaccard of the same shingle sets ({})\n",
        show.describe()
    );
    println!("Pairs with ground-truth Jaccard >= 0.5 ({}), grouped by the exact Jaccard of their {} shingle sets and by the smaller set's size. Bias = mean(estimate - exact) and RMSE per method; `binomial` is sqrt(J(1-J)/k), the RMSE of classic MinHash in theory.\n", wide.len(), show.shingling);
    println!("| exact J | smaller set | pairs | fss bias / RMSE | od bias / RMSE | classic bias / RMSE | binomial |\n|---|---|---|---|---|---|---|");
    let sigs: Vec<Sigs> = METHODS
        .iter()
        .map(|&m| signatures(docs, m, show.shingling, show.norm, show.hashes))
        .collect();
    let sizes = [(0usize, 112usize), (112, 500), (500, usize::MAX)];
    // [J bucket][size bucket] -> (exact, estimates per method)
    type Cell = Vec<(f64, [f64; 3])>;
    let mut buckets: Vec<Vec<Cell>> = vec![vec![Vec::new(); sizes.len()]; 5];
    for &(i, j) in &wide {
        let (a, b) = (&shingle_sets[i as usize], &shingle_sets[j as usize]);
        if a.is_empty() || b.is_empty() {
            continue;
        }
        let exact = jaccard(a, b);
        let jb = ((exact * 10.0) as usize).clamp(5, 9) - 5;
        let small = a.len().min(b.len());
        let sb = sizes
            .iter()
            .position(|&(lo, hi)| small >= lo && small < hi)
            .unwrap();
        let e = [
            est(&sigs[0], i, j),
            est(&sigs[1], i, j),
            est(&sigs[2], i, j),
        ];
        buckets[jb][sb].push((exact, e));
    }
    for (jb, row) in buckets.iter().enumerate() {
        for (sb, v) in row.iter().enumerate() {
            if v.is_empty() {
                continue;
            }
            let n = v.len() as f64;
            let cells: Vec<String> = (0..3)
                .map(|m| {
                    let bias = v.iter().map(|x| x.1[m] - x.0).sum::<f64>() / n;
                    let rmse = (v.iter().map(|x| (x.1[m] - x.0).powi(2)).sum::<f64>() / n).sqrt();
                    format!("{bias:+.3} / {rmse:.3}")
                })
                .collect();
            let binom =
                (v.iter().map(|x| x.0 * (1.0 - x.0)).sum::<f64>() / n / show.hashes as f64).sqrt();
            let lo = 0.5 + jb as f64 / 10.0;
            let range = match jb {
                0 => "< 0.6".to_string(),
                4 => ">= 0.9".to_string(),
                _ => format!("{lo:.1}..{:.1}", lo + 0.1),
            };
            let (slo, shi) = sizes[sb];
            let size = if shi == usize::MAX {
                format!(">= {slo}")
            } else {
                format!("{slo}..{shi}")
            };
            println!(
                "| {range} | {size} | {} | {} | {binom:.3} |",
                v.len(),
                cells.join(" | ")
            );
        }
    }
    println!();
    shingle_sets
}

/// Synthetic pairs of n-element sets with exact Jaccard s: the share that shares a
/// band (each method) against 1 - (1 - s^R)^B, and the estimates' bias and RMSE.
pub(crate) fn synthetic_bands() {
    let p = Params::default();
    let b = p.banding();
    let classic = Classic::new(p.hashes);
    let od = Densified { k: p.hashes };
    let trials = 1000;
    println!(
        "### Synthetic pairs ({} hashes, {} x {}; {trials} pairs per cell, random 64-bit elements)\n",
        p.hashes, p.bands, p.rows
    );
    println!("Pairs of n-element sets with intersection m = round(2ns/(1+s)); s' = m/(2n-m) is their exact Jaccard. Share of pairs that share a band, fss / od / classic, and the formula 1-(1-s'^R)^B (binomial standard error of a share: at most 0.016).\n");
    let ns = [5usize, 20, 50, 100, 1000];
    let targets = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9];
    println!(
        "| s | {} |\n|---|{}",
        ns.iter()
            .map(|n| format!("n = {n}"))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(ns.len())
    );
    // Per n: sum of error, squared error and J(1-J) per method.
    let mut errs = vec![[(0.0f64, 0.0f64); 3]; ns.len()];
    let mut var = vec![0.0f64; ns.len()];
    for target in targets {
        let mut cells = Vec::new();
        for (ni, &n) in ns.iter().enumerate() {
            let m = ((2.0 * n as f64 * target) / (1.0 + target)).round() as usize;
            let s_exact = m as f64 / (2 * n - m) as f64;
            let mut rng = SplitMix64(n as u64 * 1000 + (target * 100.0) as u64);
            let mut hits = [0usize; 3];
            let mut sk = Sketch::new(p.hashes);
            for _ in 0..trials {
                let common: Vec<u64> = (0..m).map(|_| rng.next()).collect();
                let a: Vec<u64> = common
                    .iter()
                    .copied()
                    .chain((m..n).map(|_| rng.next()))
                    .collect();
                let bb: Vec<u64> = common
                    .iter()
                    .copied()
                    .chain((m..n).map(|_| rng.next()))
                    .collect();
                let mut fss = |xs: &[u64]| {
                    sk.clear();
                    xs.iter().for_each(|&x| sk.push(x));
                    let mut o = Vec::new();
                    sk.finish(&mut o);
                    o
                };
                let pairs = [
                    (fss(&a), fss(&bb)),
                    (
                        od.signature(a.iter().copied()).unwrap(),
                        od.signature(bb.iter().copied()).unwrap(),
                    ),
                    (
                        classic.signature(a.iter().copied()).unwrap(),
                        classic.signature(bb.iter().copied()).unwrap(),
                    ),
                ];
                for (mi, (x, y)) in pairs.iter().enumerate() {
                    hits[mi] += shares_band(x, y, b) as usize;
                    let e = estimate_jaccard(x, y) - s_exact;
                    errs[ni][mi].0 += e;
                    errs[ni][mi].1 += e * e;
                }
                var[ni] += s_exact * (1.0 - s_exact);
            }
            let t = trials as f64;
            cells.push(format!(
                "{:.3} / {:.3} / {:.3} ({:.3}; s' {s_exact:.3})",
                hits[0] as f64 / t,
                hits[1] as f64 / t,
                hits[2] as f64 / t,
                b.probability(s_exact)
            ));
        }
        println!("| {target} | {} |", cells.join(" | "));
    }
    println!("\nJaccard estimates on the same pairs (all s pooled): bias / RMSE per method; `binomial` = sqrt(mean s'(1-s')/k).\n");
    println!("| n | fss | od | classic | binomial |\n|---|---|---|---|---|");
    let total = (trials * targets.len()) as f64;
    for (ni, &n) in ns.iter().enumerate() {
        let cells: Vec<String> = errs[ni]
            .iter()
            .map(|&(e, e2)| format!("{:+.4} / {:.4}", e / total, (e2 / total).sqrt()))
            .collect();
        println!(
            "| {n} | {} | {:.4} |",
            cells.join(" | "),
            (var[ni] / total / p.hashes as f64).sqrt()
        );
    }
    println!();
}

pub(crate) fn shares_band(a: &[u32], b: &[u32], banding: Banding) -> bool {
    a.chunks_exact(banding.rows)
        .zip(b.chunks_exact(banding.rows))
        .take(banding.bands)
        .any(|(x, y)| x == y)
}

/// Verification from the low b bits of each signature value (what a side store of
/// signatures would keep): the share of equal b-bit values, corrected for chance
/// agreement, `(f - 2^-b) / (1 - 2^-b)`.
pub(crate) fn bbit_verification(truth: &Truth, sigs: &Sigs, keys: &[Vec<u64>], verify: f64) {
    println!("### Verification from b-bit signatures (the side store of `--verify`)\n");
    println!("Candidates verified with the low b bits of each of the signature's values (estimate corrected for chance agreement, (f - 2^-b)/(1 - 2^-b)); default settings, J >= {verify}.\n");
    println!("| bits per value | side store per kept document | pairs: verified P/R/F1 | dropped: verified P/R/F1 |\n|---|---|---|---|");
    let k = sigs.iter().flatten().next().map_or(0, |s| s.len());
    for bits in [32u32, 16, 8, 4] {
        let mask = if bits == 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        let low: Sigs = sigs
            .iter()
            .map(|s| s.as_ref().map(|s| s.iter().map(|v| v & mask).collect()))
            .collect();
        let chance = if bits == 32 {
            0.0
        } else {
            1.0 / (1u64 << bits) as f64
        };
        let corrected = |a: u32, b: u32| (est(&low, a, b) - chance) / (1.0 - chance);
        let cand = candidates(
            keys,
            keys.iter().map(|k| k.len()).max().unwrap_or(0),
            usize::MAX,
        )
        .unwrap();
        let v: Vec<(u32, u32)> = cand
            .iter()
            .copied()
            .filter(|&(a, b)| corrected(a, b) >= verify)
            .collect();
        let s = score(&truth.pairs, &v, |_| true);
        // The stream with b-bit verification.
        let dec = stream_verified(keys, |d, o| corrected(d, o) >= verify);
        let (ds, _) = score_dropped(truth, &dec, |_| true);
        println!(
            "| {bits} | {} bytes | {} | {} |",
            k * bits as usize / 8,
            prf(&s),
            prf(&ds)
        );
    }
    println!();
}

/// Ten false positives and ten false negatives of the verified pair view at `show`.
pub(crate) fn examples(
    shingle_sets: &[Vec<u64>],
    docs: &[Doc],
    truth: &Truth,
    shown: &Shown,
    show: Params,
    verify: f64,
) {
    let Shown {
        sigs,
        keys,
        pairs: pred,
    } = shown;
    let truth_set: HashSet<(u32, u32)> = truth.pairs.iter().copied().collect();
    let pred_set: HashSet<(u32, u32)> = pred.iter().copied().collect();
    let line = |&(i, j): &(u32, u32)| {
        let (a, b) = (&docs[i as usize], &docs[j as usize]);
        let shared = keys[i as usize]
            .iter()
            .zip(&keys[j as usize])
            .filter(|(x, y)| x == y)
            .count();
        format!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {shared} | {} / {} | {} / {} |",
            a.id,
            b.id,
            a.lang,
            jaccard(&truth.sets[i as usize], &truth.sets[j as usize]),
            jaccard(&shingle_sets[i as usize], &shingle_sets[j as usize]),
            est(sigs, i, j),
            truth.sets[i as usize].len(),
            truth.sets[j as usize].len(),
            a.url,
            b.url
        )
    };
    let fps: Vec<&(u32, u32)> = pred.iter().filter(|p| !truth_set.contains(p)).collect();
    let fns: Vec<&(u32, u32)> = truth
        .pairs
        .iter()
        .filter(|p| !pred_set.contains(p))
        .collect();
    for (name, list) in [("false positives", fps), ("false negatives", fns)] {
        println!(
            "### Ten {name} of the verified pairs (estimated J >= {verify}) at {} (of {})\n",
            show.describe(),
            list.len()
        );
        println!("| id | id | lang | true J (5-grams) | exact J of the shingles | estimated J | bands shared | 5-grams | urls |\n|---|---|---|---|---|---|---|---|---|");
        let step = (list.len() / 10).max(1);
        for p in list.iter().step_by(step).take(10) {
            println!("{}", line(p));
        }
        println!();
    }
}
