//! `webdedup similar`'s outputs, told apart by their content (their names are the
//! user's): pairs `A TAB B TAB DISTANCE`, clusters `LEADER TAB MEMBER TAB
//! DISTANCE` (the leader's own line first), the dedup report `DROPPED TAB KEPT
//! TAB DISTANCE TAB FILE TAB LINE`. Fingerprint files and anything else are not
//! theirs and are left out.

use crate::hist::{cluster_size_bin, cluster_size_histogram, distance_histogram, Histogram};
use crate::problems::Problems;
use anyhow::{Context, Result};
use std::io::{BufRead, BufReader};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimilarKind {
    Pairs,
    Clusters,
    Dropped,
}

impl SimilarKind {
    pub fn name(self) -> &'static str {
        match self {
            SimilarKind::Pairs => "pairs",
            SimilarKind::Clusters => "clusters",
            SimilarKind::Dropped => "dedup report",
        }
    }
}

/// What one `similar` output holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimilarStats {
    pub kind: SimilarKind,
    /// Lines read (pairs, cluster members with their leaders, dropped documents).
    pub lines: u64,
    /// Hamming distances (of pairs, members to their leader, drops to the kept).
    pub distances: Histogram,
    /// Cluster sizes (clusters only).
    pub clusters: Histogram,
    pub cluster_count: u64,
}

/// The kind a data line's fields say, if any.
fn kind_of(fields: &[&str]) -> Option<SimilarKind> {
    let distance_ok = |d: &str| d.parse::<u8>().is_ok_and(|d| d <= 64);
    match fields {
        [a, b, d] if distance_ok(d) => Some(if a == b {
            SimilarKind::Clusters
        } else {
            SimilarKind::Pairs
        }),
        [_, _, d, _, line] if distance_ok(d) && line.parse::<u64>().is_ok() => {
            Some(SimilarKind::Dropped)
        }
        _ => None,
    }
}

/// Reads `path` (compression sniffed) if it is a `similar` output, else `None`.
pub fn read(path: &Path, problems: &mut Problems) -> Result<Option<SimilarStats>> {
    let (r, _) = webdedup_formats::input::open_input(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut lines = BufReader::new(r);
    let mut stats: Option<SimilarStats> = None;
    let (mut leader, mut size) = (String::new(), 0u64);
    let mut line = String::new();
    let (mut n, mut in_file) = (0u64, 0u64);
    loop {
        line.clear();
        let got = lines
            .read_line(&mut line)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if got == 0 {
            break;
        }
        n += 1;
        let text = line.trim_end_matches(['\n', '\r']);
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = text.split('\t').collect();
        let s = match &mut stats {
            Some(s) => s,
            None => match kind_of(&fields) {
                Some(kind) => stats.insert(SimilarStats {
                    kind,
                    lines: 0,
                    distances: distance_histogram(),
                    clusters: cluster_size_histogram(),
                    cluster_count: 0,
                }),
                // Not a `similar` output (a fingerprint file, notes): left out.
                None => return Ok(None),
            },
        };
        let fits = kind_of(&fields).is_some_and(|k| {
            k == s.kind || (s.kind == SimilarKind::Clusters && k == SimilarKind::Pairs)
        });
        if !fits {
            problems.add(
                path,
                n,
                &format!("not a line of {}", s.kind.name()),
                &mut in_file,
            );
            continue;
        }
        s.lines += 1;
        let d: usize = fields[2].parse().unwrap_or(0);
        if s.kind == SimilarKind::Clusters && fields[0] == fields[1] {
            // A leader's own line opens its cluster.
            if size > 1 {
                s.count_cluster(size);
            }
            leader.clear();
            leader.push_str(fields[0]);
            size = 1;
            continue;
        }
        if s.kind == SimilarKind::Clusters && fields[0] != leader {
            problems.add(
                path,
                n,
                "member line outside its leader's cluster",
                &mut in_file,
            );
            continue;
        }
        size += 1;
        s.distances.counts[d] += 1;
    }
    if let Some(s) = &mut stats {
        if size > 1 {
            s.count_cluster(size);
        }
    }
    Ok(stats)
}

impl SimilarStats {
    fn count_cluster(&mut self, size: u64) {
        let n = self.clusters.counts.len();
        self.clusters.counts[cluster_size_bin(size, n)] += 1;
        self.cluster_count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> (Option<SimilarStats>, Problems) {
        let t = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(t.path(), text).unwrap();
        let mut p = Problems::default();
        (read(t.path(), &mut p).unwrap(), p)
    }

    #[test]
    fn pairs_give_distances() {
        let (s, p) = read_text("a\tb\t0\na\tc\t3\nb\tc\t3\n");
        let s = s.unwrap();
        assert_eq!(s.kind, SimilarKind::Pairs);
        assert_eq!(&s.distances.counts[..4], [1, 0, 0, 2]);
        assert_eq!(p.count, 0);
    }

    #[test]
    fn clusters_give_sizes_and_member_distances() {
        let (s, _) = read_text("a\ta\t0\na\tb\t1\na\tc\t2\nd\td\t0\nd\te\t0\n");
        let s = s.unwrap();
        assert_eq!(s.kind, SimilarKind::Clusters);
        assert_eq!(s.cluster_count, 2);
        assert_eq!(&s.clusters.counts[..2], [1, 1]);
        assert_eq!(&s.distances.counts[..3], [1, 1, 1]);
    }

    #[test]
    fn dedup_reports_and_strangers() {
        let (s, _) = read_text("x\ty\t2\tcrawl/a.jsonl\t7\n");
        assert_eq!(s.unwrap().kind, SimilarKind::Dropped);
        let fps = "# webdedup-simhash v1 tokenizer=unicode\nv.txt:1\t08052102003308c4\t577904419663972548\t2053\t8450\t51\t2244\n";
        assert_eq!(read_text(fps).0, None);
        let (s, p) = read_text("a\tb\t1\nrubbish\n");
        assert_eq!(s.unwrap().lines, 1);
        assert_eq!(p.count, 1);
        assert!(
            p.shown[0].ends_with(":2: not a line of pairs"),
            "{:?}",
            p.shown
        );
    }
}
