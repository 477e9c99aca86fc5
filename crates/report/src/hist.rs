//! Histograms streamed from side files: MinHash pair similarity (`.pairs`),
//! SimHash Hamming distances and cluster sizes (`similar`'s pairs, clusters and
//! dedup report). Each is a fixed array of counts, whatever the run's size.

/// Counts in labelled bins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    pub labels: Vec<String>,
    pub counts: Vec<u64>,
}

impl Histogram {
    pub fn new(labels: Vec<String>) -> Histogram {
        let counts = vec![0; labels.len()];
        Histogram { labels, counts }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Bins of MinHash similarity: 0.00-0.05, ..., 0.95-1.00 (1.00 in the last).
pub const SIMILARITY_BINS: usize = 20;

/// MinHash pairs of a run: the similarity histogram, and the pairs whose
/// Jaccard is not known (`-`: dropped unverified, or `--verify 0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairStats {
    pub similarity: Histogram,
    pub unknown: u64,
}

impl Default for PairStats {
    fn default() -> PairStats {
        let labels = (0..SIMILARITY_BINS)
            .map(|i| format!("{:.2}", i as f64 / SIMILARITY_BINS as f64))
            .collect();
        PairStats {
            similarity: Histogram::new(labels),
            unknown: 0,
        }
    }
}

/// One `.pairs` line: `DOC TAB ORIGINAL TAB JACCARD` (`-` when not known).
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub doc: String,
    pub original: String,
    pub jaccard: Option<f64>,
}

/// Reads a `.pairs` line, or says why it is not one.
pub fn parse_pair(line: &str) -> Result<Pair, String> {
    let mut f = line.trim_end_matches(['\n', '\r']).split('\t');
    let (Some(doc), Some(original), Some(j), None) = (f.next(), f.next(), f.next(), f.next())
    else {
        return Err("not DOC TAB ORIGINAL TAB JACCARD".into());
    };
    let jaccard = match j {
        "-" => None,
        _ => match j.parse::<f64>() {
            Ok(v) if (0.0..=1.0).contains(&v) => Some(v),
            _ => return Err(format!("Jaccard '{j}' is not a number from 0 to 1")),
        },
    };
    Ok(Pair {
        doc: doc.to_owned(),
        original: original.to_owned(),
        jaccard,
    })
}

impl PairStats {
    pub fn add(&mut self, jaccard: Option<f64>) {
        match jaccard {
            Some(j) => {
                let bin = ((j * SIMILARITY_BINS as f64) as usize).min(SIMILARITY_BINS - 1);
                self.similarity.counts[bin] += 1;
            }
            None => self.unknown += 1,
        }
    }
}

/// Hamming distances of 64-bit fingerprints: 0 to 64.
pub fn distance_histogram() -> Histogram {
    Histogram::new((0..=64).map(|d| d.to_string()).collect())
}

/// Cluster sizes on a doubling scale: 2, 3-4, 5-8, ..., then one open bin.
pub fn cluster_size_histogram() -> Histogram {
    let mut labels = vec!["2".to_owned()];
    for b in 1..12 {
        labels.push(format!("{}-{}", (1u64 << b) + 1, 1u64 << (b + 1)));
    }
    labels.push(format!("{}+", (1u64 << 12) + 1));
    Histogram::new(labels)
}

/// The bin of a cluster of `size` (at least 2) in [`cluster_size_histogram`].
pub fn cluster_size_bin(size: u64, bins: usize) -> usize {
    if size <= 2 {
        return 0;
    }
    // 3-4 is bin 1, 5-8 bin 2, 9-16 bin 3: the bit length of size - 1, minus 1.
    let bin = (64 - (size - 1).leading_zeros()) as usize - 1;
    bin.min(bins - 1)
}

/// Drops the empty bins at the end of a histogram (distances beyond the run's
/// `k`), keeping at least `min` bins.
pub fn trimmed(h: &Histogram, min: usize) -> Histogram {
    let last = h.counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    let n = last.max(min).min(h.counts.len());
    Histogram {
        labels: h.labels[..n].to_vec(),
        counts: h.counts[..n].to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_lines() {
        let p = parse_pair("a\tb\t0.830\n").unwrap();
        assert_eq!((p.doc.as_str(), p.original.as_str()), ("a", "b"));
        assert_eq!(p.jaccard, Some(0.83));
        assert_eq!(parse_pair("a\tb\t-").unwrap().jaccard, None);
        assert!(parse_pair("a\tb").is_err());
        assert!(parse_pair("a\tb\t1.5").is_err());
        assert!(parse_pair("a\tb\tx").is_err());
    }

    #[test]
    fn similarity_bins_include_both_ends() {
        let mut s = PairStats::default();
        for j in [Some(0.0), Some(0.8), Some(0.849), Some(1.0), None] {
            s.add(j);
        }
        assert_eq!(s.similarity.counts[0], 1);
        assert_eq!(s.similarity.counts[16], 2);
        assert_eq!(s.similarity.counts[19], 1);
        assert_eq!(s.similarity.labels[16], "0.80");
        assert_eq!(s.unknown, 1);
    }

    #[test]
    fn cluster_sizes_double() {
        let h = cluster_size_histogram();
        assert_eq!(&h.labels[..4], ["2", "3-4", "5-8", "9-16"]);
        let n = h.labels.len();
        assert_eq!(cluster_size_bin(2, n), 0);
        assert_eq!(cluster_size_bin(3, n), 1);
        assert_eq!(cluster_size_bin(4, n), 1);
        assert_eq!(cluster_size_bin(5, n), 2);
        assert_eq!(cluster_size_bin(16, n), 3);
        assert_eq!(cluster_size_bin(17, n), 4);
        assert_eq!(cluster_size_bin(u64::MAX, n), n - 1);
        assert!(h.labels[n - 1].ends_with('+'));
    }

    #[test]
    fn trimming_keeps_a_minimum() {
        let mut h = distance_histogram();
        h.counts[2] = 5;
        assert_eq!(trimmed(&h, 4).labels, ["0", "1", "2", "3"]);
        assert_eq!(trimmed(&h, 1).counts, [0, 0, 5]);
    }
}
