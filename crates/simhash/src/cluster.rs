//! From fingerprints in input order to near-duplicate pairs and clusters.
//!
//! Clusters do not chain: documents are taken in input order, and a document joins a
//! cluster only if it is within `k` of the cluster's first member (its *leader*);
//! otherwise it becomes the leader of a new cluster. Among several leaders within
//! `k` it joins the nearest, ties going to the earliest. Documents of a persisted
//! index count as earlier than the whole batch, and are all leaders.
//!
//! Exact duplicates are collapsed first (search runs over distinct values), then
//! expanded back to documents.

use crate::search::{Plan, TableSet};
use rayon::prelude::*;

/// The leader a document was assigned to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Leader {
    /// An indexed document (its position in the index, in insertion order).
    Indexed(usize),
    /// An earlier document of the batch (its input ordinal).
    Batch(usize),
}

/// What the persisted index contributes to a search: the tables and a lookup from
/// value to index position.
pub struct IndexView<'a> {
    pub tables: &'a TableSet,
    /// (value, position), sorted by value.
    pub by_value: &'a [(u64, u32)],
}

impl IndexView<'_> {
    fn position(&self, v: u64) -> usize {
        let i = self.by_value.partition_point(|e| e.0 < v);
        self.by_value[i].1 as usize
    }
}

/// The neighbourhood structure of a batch.
pub struct Neighbours {
    /// Per document: index of its value in `uniq`.
    doc_u: Vec<u32>,
    /// Documents per distinct value, in input order (CSR).
    mem_start: Vec<u32>,
    mem: Vec<u32>,
    /// Neighbours of each distinct value within the batch: (other value index, d) (CSR).
    adj_start: Vec<u32>,
    adj: Vec<(u32, u32)>,
    /// Neighbours of each distinct value in the index: (index position, d) (CSR).
    hit_start: Vec<u32>,
    hits: Vec<(u32, u32)>,
}

/// Compressed rows: `items` grouped by their first field (a row index below `n`),
/// each row keeping the items' order (a counting sort: one pass to count, one to
/// place).
fn csr<T: Copy + Default>(n: usize, items: &[(u32, T)]) -> (Vec<u32>, Vec<T>) {
    let mut start = vec![0u32; n + 1];
    for &(u, _) in items {
        start[u as usize + 1] += 1;
    }
    for i in 1..=n {
        start[i] += start[i - 1];
    }
    let mut out = vec![T::default(); items.len()];
    let mut next = start.clone();
    for &(u, t) in items {
        out[next[u as usize] as usize] = t;
        next[u as usize] += 1;
    }
    (start, out)
}

impl Neighbours {
    /// Builds the structure for `fps` (in input order) at distance `k`. Runs on the
    /// current rayon pool; the result does not depend on the number of threads.
    pub fn build(fps: &[u64], k: u32, index: Option<&IndexView<'_>>) -> Neighbours {
        // (value, document) sorted: the distinct values in order, and each value's
        // documents in input order (the pairs are distinct, so an unstable sort is
        // deterministic).
        let mut by_value: Vec<(u64, u32)> = fps
            .par_iter()
            .enumerate()
            .map(|(i, &f)| (f, i as u32))
            .collect();
        by_value.par_sort_unstable();
        let mem: Vec<u32> = by_value.par_iter().map(|e| e.1).collect();
        let mut mem_start: Vec<u32> = (0..by_value.len())
            .into_par_iter()
            .filter(|&i| i == 0 || by_value[i].0 != by_value[i - 1].0)
            .map(|i| i as u32)
            .collect();
        let uniq: Vec<u64> = mem_start
            .par_iter()
            .map(|&s| by_value[s as usize].0)
            .collect();
        mem_start.push(by_value.len() as u32);
        drop(by_value);
        // Per document, its value's index: every value's members get it (a scatter,
        // in parallel over values through relaxed atomic stores to distinct slots).
        let doc_u: Vec<u32> = {
            use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
            let slots: Vec<AtomicU32> = (0..fps.len()).map(|_| AtomicU32::new(0)).collect();
            mem_start.par_windows(2).enumerate().for_each(|(u, w)| {
                for &m in &mem[w[0] as usize..w[1] as usize] {
                    slots[m as usize].store(u as u32, Relaxed);
                }
            });
            slots.into_par_iter().map(AtomicU32::into_inner).collect()
        };
        let pairs = Plan::choose(uniq.len(), k).all_pairs(&uniq);
        let idx = |v: u64| uniq.partition_point(|&x| x < v) as u32;
        let adj_items: Vec<(u32, (u32, u32))> = pairs
            .par_iter()
            .flat_map_iter(|&(a, b, d)| {
                let (ia, ib) = (idx(a), idx(b));
                [(ia, (ib, d)), (ib, (ia, d))]
            })
            .collect();
        let (adj_start, adj) = csr(uniq.len(), &adj_items);
        let mut hit_items = Vec::new();
        if let Some(ix) = index {
            if !ix.tables.is_empty() {
                let per: Vec<Vec<(u32, (u32, u32))>> = uniq
                    .par_iter()
                    .enumerate()
                    .map_init(Vec::new, |out, (u, &v)| {
                        ix.tables.query(v, out);
                        out.iter()
                            .map(|&(w, d)| (u as u32, (ix.position(w) as u32, d)))
                            .collect()
                    })
                    .collect();
                hit_items = per.into_iter().flatten().collect();
            }
        }
        let (hit_start, hits) = csr(uniq.len(), &hit_items);
        Neighbours {
            doc_u,
            mem_start,
            mem,
            adj_start,
            adj,
            hit_start,
            hits,
        }
    }

    fn members(&self, u: usize) -> &[u32] {
        &self.mem[self.mem_start[u] as usize..self.mem_start[u + 1] as usize]
    }
    fn adj(&self, u: usize) -> &[(u32, u32)] {
        &self.adj[self.adj_start[u] as usize..self.adj_start[u + 1] as usize]
    }
    fn hits(&self, u: usize) -> &[(u32, u32)] {
        &self.hits[self.hit_start[u] as usize..self.hit_start[u + 1] as usize]
    }

    /// Whether the documents of value `u` need the sequential pass of
    /// [`clusters`](Self::clusters): a value with one document and no neighbour,
    /// in the batch or the index, is a leader whatever came before it.
    fn is_alone(&self, u: usize) -> bool {
        self.mem_start[u + 1] - self.mem_start[u] == 1
            && self.adj_start[u] == self.adj_start[u + 1]
            && self.hit_start[u] == self.hit_start[u + 1]
    }

    /// Per document: `None` for a leader (kept), or its leader and distance.
    ///
    /// Documents are taken in input order, but only those with an exact duplicate or
    /// a neighbour can join a cluster or be joined; the others (most of a large
    /// batch) are found in parallel and skipped by the sequential pass.
    pub fn clusters(&self) -> Vec<Option<(Leader, u32)>> {
        let n_u = self.mem_start.len() - 1;
        let alone: Vec<bool> = (0..n_u).into_par_iter().map(|u| self.is_alone(u)).collect();
        let busy: Vec<u32> = self
            .doc_u
            .par_iter()
            .enumerate()
            .filter(|&(_, &u)| !alone[u as usize])
            .map(|(i, _)| i as u32)
            .collect();
        drop(alone);
        let mut out: Vec<Option<(Leader, u32)>> = Vec::new();
        out.par_extend((0..self.doc_u.len()).into_par_iter().map(|_| None));
        let mut leader_of: Vec<u32> = vec![u32::MAX; n_u];
        for i in busy {
            let i = i as usize;
            let u = self.doc_u[i] as usize;
            let mut best: Option<(u32, Leader)> = None;
            let mut consider = |d: u32, l: Leader| {
                if best.is_none_or(|b| (d, l) < b) {
                    best = Some((d, l));
                }
            };
            for &(pos, d) in self.hits(u) {
                consider(d, Leader::Indexed(pos as usize));
            }
            if leader_of[u] != u32::MAX {
                consider(0, Leader::Batch(leader_of[u] as usize));
            }
            for &(v, d) in self.adj(u) {
                if leader_of[v as usize] != u32::MAX {
                    consider(d, Leader::Batch(leader_of[v as usize] as usize));
                }
            }
            match best {
                Some((d, l)) => out[i] = Some((l, d)),
                None => leader_of[u] = i as u32,
            }
        }
        out
    }

    /// All pairs within `k`: `(earlier, later, distance)`, sorted; batch documents by
    /// ordinal, indexed ones as `Leader::Indexed` (always earlier).
    pub fn pairs(&self) -> Vec<(Leader, Leader, u32)> {
        let n_u = self.mem_start.len() - 1;
        let mut out: Vec<(Leader, Leader, u32)> = (0..n_u)
            .into_par_iter()
            .with_min_len(1 << 14)
            .fold(Vec::new, |mut out, u| {
                if self.is_alone(u) {
                    return out;
                }
                let m = self.members(u);
                for (x, &a) in m.iter().enumerate() {
                    for &b in &m[x + 1..] {
                        out.push((Leader::Batch(a as usize), Leader::Batch(b as usize), 0));
                    }
                    for &(pos, d) in self.hits(u) {
                        out.push((Leader::Indexed(pos as usize), Leader::Batch(a as usize), d));
                    }
                }
                for &(v, d) in self.adj(u) {
                    if (v as usize) > u {
                        for &a in m {
                            for &b in self.members(v as usize) {
                                let (a, b) = (a.min(b), a.max(b));
                                out.push((Leader::Batch(a as usize), Leader::Batch(b as usize), d));
                            }
                        }
                    }
                }
                out
            })
            .flatten_iter()
            .collect();
        out.par_sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    fn b(i: usize) -> Option<(Leader, u32)> {
        Some((Leader::Batch(i), 0))
    }

    #[test]
    fn clusters_do_not_chain() {
        // A=0, B within 2 of A, C within 2 of B but 4 from A.
        let a = 0u64;
        let bb = 0b11;
        let c = 0b1111;
        let n = Neighbours::build(&[a, bb, c], 2, None);
        let cl = n.clusters();
        assert_eq!(cl, vec![None, Some((Leader::Batch(0), 2)), None]);
        // Pairs are reported for both near pairs, not for A-C.
        assert_eq!(
            n.pairs(),
            vec![
                (Leader::Batch(0), Leader::Batch(1), 2),
                (Leader::Batch(1), Leader::Batch(2), 2)
            ]
        );
    }

    #[test]
    fn exact_duplicates_and_nearest_leader() {
        // doc0 = x, doc1 = y (far), doc2 = x, doc3 near both x (2 bits) and y (1 bit).
        let x = 0u64;
        let y = 0b111u64;
        let z = 0b011u64; // d(x,z)=2, d(y,z)=1
        let n = Neighbours::build(&[x, 0xffff_0000_ffff_0000, x, y, z], 3, None);
        // y is within 3 of x, so it joins x; z joins x too (y is not a leader).
        assert_eq!(
            n.clusters(),
            vec![
                None,
                None,
                b(0),
                Some((Leader::Batch(0), 3)),
                Some((Leader::Batch(0), 2))
            ]
        );
        let n = Neighbours::build(&[y, x, z], 2, None);
        // x is 3 from y: its own leader. z: 1 from y, 2 from x -> nearest is y.
        assert_eq!(n.clusters(), vec![None, None, Some((Leader::Batch(0), 1))]);
    }

    #[test]
    fn ties_go_to_the_earliest_and_index_counts_first() {
        let x = 0b0011u64;
        let y = 0b1100u64;
        let z = 0b0101u64; // 2 from both
        let n = Neighbours::build(&[y, x, z], 2, None);
        assert_eq!(n.clusters()[2], Some((Leader::Batch(0), 2)));
        let idx_vals = [x];
        let ts = TableSet::build(Plan::choose_for_queries(1, 2), &idx_vals);
        let by_value = [(x, 0u32)];
        let view = IndexView {
            tables: &ts,
            by_value: &by_value,
        };
        let n = Neighbours::build(&[y, z, x], 2, Some(&view));
        // y: 4 from x -> leader. z: 2 from both -> the indexed one is earlier. x: in the index.
        assert_eq!(
            n.clusters(),
            vec![
                None,
                Some((Leader::Indexed(0), 2)),
                Some((Leader::Indexed(0), 0))
            ]
        );
        assert_eq!(
            n.pairs(),
            vec![
                (Leader::Indexed(0), Leader::Batch(1), 2),
                (Leader::Indexed(0), Leader::Batch(2), 0),
                (Leader::Batch(0), Leader::Batch(1), 2),
                (Leader::Batch(1), Leader::Batch(2), 2)
            ]
        );
    }

    #[test]
    fn clusters_match_a_quadratic_reference() {
        let mut rng = XorShift(1);
        let mut next = || rng.next_u64();
        let bases: Vec<u64> = (0..30).map(|_| next()).collect();
        let fps: Vec<u64> = (0..600)
            .map(|_| {
                let mut x = bases[(next() % 30) as usize];
                for _ in 0..next() % 5 {
                    x ^= 1 << (next() % 64);
                }
                x
            })
            .collect();
        let k = 3;
        let got = Neighbours::build(&fps, k, None).clusters();
        let mut leaders: Vec<usize> = Vec::new();
        for (i, &f) in fps.iter().enumerate() {
            let best = leaders
                .iter()
                .map(|&l| ((fps[l] ^ f).count_ones(), l))
                .filter(|&(d, _)| d <= k)
                .min();
            match best {
                Some((d, l)) => assert_eq!(got[i], Some((Leader::Batch(l), d)), "doc {i}"),
                None => {
                    assert_eq!(got[i], None, "doc {i}");
                    leaders.push(i);
                }
            }
        }
        let pairs = Neighbours::build(&fps, k, None).pairs();
        let mut expect = Vec::new();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                let d = (fps[i] ^ fps[j]).count_ones();
                if d <= k {
                    expect.push((Leader::Batch(i), Leader::Batch(j), d));
                }
            }
        }
        assert_eq!(pairs, expect);
    }
}
