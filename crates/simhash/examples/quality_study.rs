//! Quality study: SimHash near-duplicates against exact word 5-gram Jaccard >= 0.8.
//!
//! `cargo run --release -p webdedup-simhash --example quality_study -- [--threshold 0.8] FILES...`
//!
//! Ground truth: every pair of documents whose sets of word 5-grams have Jaccard
//! similarity >= threshold, computed exactly (`webdedup-study`, shared with the
//! MinHash study; its docs say what a word is).
//!
//! Predictions: pairs within Hamming distance k of the SimHash fingerprints, for
//! k = 0..=6 and each tokenizer x shingle setting. Prints markdown tables: overall
//! precision / recall / F1, per language (pairs whose two documents share the `lang`
//! attribute), and ten false positives and ten false negatives at the setting given
//! by --show TOKENIZER/SHINGLE/K/WEIGHTS (default unicode/5/9/distinct).
use rayon::prelude::*;
use std::time::Instant;
use webdedup_simhash::search::pairs_within as predicted;
use webdedup_simhash::tokenize::{Fingerprinter, Settings, Tokenizer, Weights};
use webdedup_study::{grams, jaccard, load_docs, score, truth_pairs};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut threshold = 0.8;
    let mut show = (Tokenizer::Unicode, 5usize, 9u32);
    let mut show_w = Weights::Distinct;
    let mut weight_list = vec![Weights::Count, Weights::Distinct];
    while args.first().is_some_and(|a| a.starts_with("--")) {
        let a = args.remove(0);
        let v = args.remove(0);
        match a.as_str() {
            "--threshold" => threshold = v.parse().unwrap(),
            "--weights" => weight_list = v.split(',').map(|w| w.parse().unwrap()).collect(),
            "--show" => {
                let p: Vec<&str> = v.split('/').collect();
                show = (
                    p[0].parse().unwrap(),
                    p[1].parse().unwrap(),
                    p[2].parse().unwrap(),
                );
                if let Some(w) = p.get(3) {
                    show_w = w.parse().unwrap();
                }
            }
            _ => panic!("unknown option {a}"),
        }
    }
    let t0 = Instant::now();
    let docs = load_docs(&args);
    let sets: Vec<Vec<u64>> = docs.par_iter().map(|d| grams(&d.text)).collect();
    let truth: Vec<(u32, u32)> = truth_pairs(&sets, threshold)
        .into_iter()
        .filter(|&(i, j)| !sets[i as usize].is_empty() && !sets[j as usize].is_empty())
        .collect();
    let mut langs: Vec<String> = docs.iter().map(|d| d.lang.clone()).collect();
    langs.sort();
    langs.dedup();
    println!("## Quality study\n");
    println!(
        "{} documents from {} files; ground truth: {} pairs with word 5-gram Jaccard >= {threshold} (exact); {:.1} s to read and compute it.\n",
        docs.len(),
        args.len(),
        truth.len(),
        t0.elapsed().as_secs_f64()
    );
    let mut lang_line = String::from("Ground-truth pairs per language (both documents):");
    for l in &langs {
        let n = truth
            .iter()
            .filter(|&&(i, j)| docs[i as usize].lang == *l && docs[j as usize].lang == *l)
            .count();
        let d = docs.iter().filter(|d| d.lang == *l).count();
        lang_line.push_str(&format!(" {l} {n} ({d} docs);"));
    }
    println!("{lang_line}\n");

    let shingles = [1usize, 2, 3, 4, 5];
    let tokenizers = [
        Tokenizer::Unicode,
        Tokenizer::Charabia,
        Tokenizer::Chars(2),
        Tokenizer::Chars(3),
        Tokenizer::Chars(5),
    ];
    let ks: Vec<u32> = (0..=12).collect();
    let mut table: Vec<(String, Vec<String>)> = Vec::new();
    let mut best: Vec<(f64, String)> = Vec::new();
    let mut per_lang_rows = Vec::new();
    let mut shown = None;
    for tok in tokenizers {
        for &weights in &weight_list {
            let t = Instant::now();
            let fps: Vec<Vec<Option<u64>>> = docs
                .par_iter()
                .map_init(
                    || Fingerprinter::new(Settings::new(tok, 1, weights)),
                    |f, d| f.fingerprints_multi(&d.text, &shingles),
                )
                .collect();
            let tok_secs = t.elapsed().as_secs_f64();
            for (si, &sh) in shingles.iter().enumerate() {
                let col: Vec<Option<u64>> = fps.iter().map(|v| v[si]).collect();
                let mut cells = Vec::new();
                let mut too_many = false;
                for &k in &ks {
                    if too_many {
                        cells.push("-".into());
                        continue;
                    }
                    let pred = predicted(&col, k);
                    // Precision is already hopeless; larger k only costs time and memory.
                    too_many = pred.len() > 20 * truth.len();
                    let s = score(&truth, &pred, |_| true);
                    cells.push(format!("{:.3}/{:.3}/**{:.3}**", s.p(), s.r(), s.f1()));
                    best.push((s.f1(), format!("{tok}/{weights}/{sh}/k={k}")));
                    let mut row = format!("| {tok} | {weights} | {sh} | {k} |");
                    for l in &langs {
                        let sl = score(&truth, &pred, |&(i, j)| {
                            docs[i as usize].lang == *l && docs[j as usize].lang == *l
                        });
                        row.push_str(&format!(" {:.2}/{:.2}/{:.2} |", sl.p(), sl.r(), sl.f1()));
                    }
                    per_lang_rows.push((s.f1(), tok, sh, k, row));
                    if (tok, sh, k) == show && weights == show_w {
                        shown = Some((col.clone(), pred));
                    }
                }
                table.push((format!("| {tok} | {weights} | {sh} |"), cells));
            }
            eprintln!("{tok} {weights}: fingerprints for 5 shingle sizes in {tok_secs:.1} s");
        }
    }
    for (title, range) in [
        ("k = 0..6", 0..7),
        ("k = 7..12 (beyond the issue's range)", 7..13),
    ] {
        println!("### Precision / recall / F1, all languages, {title}\n");
        println!(
            "| tokenizer | weights | shingle | {} |",
            ks[range.clone()]
                .iter()
                .map(|k| format!("k={k} P/R/F1"))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        println!("|---|---|---|{}", "---|".repeat(range.len()));
        for (head, cells) in &table {
            println!("{head} {} |", cells[range.clone()].join(" | "));
        }
        println!();
    }
    best.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
    println!(
        "\nBest settings by F1: {}\n",
        best.iter()
            .take(8)
            .map(|(f, s)| format!("{s} {f:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    println!(
        "### Per language (P/R/F1), unicode / charabia / chars:3, shingles 1, 3, 5, k = 3, 6, 9 (languages without ground-truth pairs show P = 0 as soon as anything is predicted)
"
    );
    println!(
        "| tokenizer | weights | shingle | k | {} |",
        langs.join(" | ")
    );
    println!("|---|---|---|---|{}", "---|".repeat(langs.len()));
    for (_, tok, sh, k, row) in &per_lang_rows {
        if [3, 6, 9].contains(k)
            && (*sh == 1 || *sh == 3 || *sh == 5)
            && matches!(
                tok,
                Tokenizer::Unicode | Tokenizer::Charabia | Tokenizer::Chars(3)
            )
        {
            println!("{row}");
        }
    }

    if let Some((col, pred)) = shown {
        let (tok, sh, k) = show;
        let truth_set: std::collections::HashSet<(u32, u32)> = truth.iter().copied().collect();
        let pred_set: std::collections::HashSet<(u32, u32)> = pred.iter().copied().collect();
        let line = |&(i, j): &(u32, u32)| {
            let (a, b) = (&docs[i as usize], &docs[j as usize]);
            let d = match (col[i as usize], col[j as usize]) {
                (Some(x), Some(y)) => (x ^ y).count_ones().to_string(),
                _ => "-".into(),
            };
            format!(
                "| {} | {} | {} | {} | {:.3} | {} | {} / {} |",
                a.id,
                b.id,
                a.lang,
                d,
                jaccard(&sets[i as usize], &sets[j as usize]),
                sets[i as usize].len().min(sets[j as usize].len()),
                a.url,
                b.url
            )
        };
        // Spread the examples over the list (not only the first ids).
        let fps: Vec<&(u32, u32)> = pred.iter().filter(|p| !truth_set.contains(p)).collect();
        let fns: Vec<&(u32, u32)> = truth.iter().filter(|p| !pred_set.contains(p)).collect();
        for (name, list) in [("false positives", fps), ("false negatives", fns)] {
            println!(
                "\n### Ten {name} at {tok} weights={show_w} shingle={sh} k={k} (of {})\n",
                list.len()
            );
            println!("| id | id | lang | hamming | 5-gram Jaccard | smaller set | urls |\n|---|---|---|---|---|---|---|");
            let step = (list.len() / 10).max(1);
            for p in list.iter().step_by(step).take(10) {
                println!("{}", line(p));
            }
        }
    }
    eprintln!("total {:.1} s", t0.elapsed().as_secs_f64());
}
