//! A deterministic sample of drops to show beside their originals: the
//! documents whose ids hash lowest (xxh3), so the same run always shows the
//! same examples, spread over the whole run, in memory for `k` of them only.

use crate::hist::Pair;
use crate::html::{escape, table};
use std::collections::BTreeMap;
use xxhash_rust::xxh3::xxh3_64;

/// A sampled MinHash drop: the `.pairs` file it came from (relative to the run
/// directory) and its line.
#[derive(Clone, Debug, PartialEq)]
pub struct SampledPair {
    pub rel: String,
    pub pair: Pair,
}

/// The `k` pairs with the lowest hashes seen so far.
#[derive(Debug, Default)]
pub struct Sampler {
    k: usize,
    kept: BTreeMap<(u64, String), SampledPair>,
}

impl Sampler {
    pub fn new(k: usize) -> Sampler {
        Sampler {
            k,
            kept: BTreeMap::new(),
        }
    }

    /// Offers a pair of the `.pairs` file `rel`.
    pub fn offer_pair(&mut self, rel: &str, pair: Pair) {
        if self.k == 0 {
            return;
        }
        let key = (xxh3_64(pair.doc.as_bytes()), format!("{rel}\t{}", pair.doc));
        if self.kept.len() >= self.k {
            match self.kept.last_key_value() {
                Some((last, _)) if *last > key => {}
                _ => return,
            }
        }
        self.kept.insert(
            key,
            SampledPair {
                rel: rel.to_owned(),
                pair,
            },
        );
        if self.kept.len() > self.k {
            self.kept.pop_last();
        }
    }

    /// The sample, in hash order.
    pub fn pairs(&self) -> impl Iterator<Item = &SampledPair> {
        self.kept.values()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }
}

/// The sampled drops as a table (document, original, similarity, file).
pub fn pairs_table(d: &crate::analyze::RunData) -> String {
    let rows: Vec<String> = d
        .samples
        .pairs()
        .map(|p| {
            format!(
                "<td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{}</td>",
                escape(&p.pair.doc),
                escape(&p.pair.original),
                p.pair.jaccard.map_or("-".into(), |j| format!("{j:.3}")),
                escape(&p.rel)
            )
        })
        .collect();
    format!(
        "<p class=\"note\">{} drops sampled by the hash of their ids (the same every time).</p>",
        rows.len()
    ) + &table(&["dropped", "original", "Jaccard", "pairs file"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(doc: &str) -> Pair {
        Pair {
            doc: doc.into(),
            original: "o".into(),
            jaccard: Some(0.9),
        }
    }

    #[test]
    fn the_sample_does_not_depend_on_the_order_seen() {
        let docs: Vec<String> = (0..200).map(|i| format!("doc{i}")).collect();
        let mut a = Sampler::new(5);
        let mut b = Sampler::new(5);
        for d in &docs {
            a.offer_pair("x.pairs", pair(d));
        }
        for d in docs.iter().rev() {
            b.offer_pair("x.pairs", pair(d));
        }
        let ids = |s: &Sampler| s.pairs().map(|p| p.pair.doc.clone()).collect::<Vec<_>>();
        assert_eq!(a.pairs().count(), 5);
        assert_eq!(ids(&a), ids(&b));
        let mut lowest: Vec<&String> = docs.iter().collect();
        lowest.sort_by_key(|d| xxh3_64(d.as_bytes()));
        assert_eq!(
            ids(&a),
            lowest[..5]
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        );
        assert!(Sampler::new(0).is_empty());
    }
}
