//! All pairs of fingerprints within Hamming distance `k`: permuted-block tables
//! (Manku, Jain, Das Sarma, "Detecting near-duplicates for web crawling", WWW 2007).
//!
//! The 64 bits are split into `b > k` blocks. Two fingerprints within `k` bits differ
//! in at most `k` blocks, so they agree on at least `b - k` of them. For every choice
//! of `b - k` blocks ("prefix blocks") there is one table: the fingerprints with their
//! bits permuted so that the prefix blocks come first, sorted. Pairs within `k` then
//! share the permuted prefix in at least one table, and only fingerprints with an equal
//! prefix are compared. `b` is picked from `n` and `k` by a cost model
//! ([`Plan::choose`]): more blocks mean longer prefixes (fewer candidates) but
//! `C(b, k)` tables.
//!
//! Each pair is reported once: by the first table (in plan order) whose prefix
//! blocks are all among the blocks the pair agrees on.
//!
//! Input values must be distinct (callers collapse exact duplicates first: they are
//! all at distance 0 and would make the candidate groups quadratic).

use rayon::prelude::*;

/// Largest `k` accepted (tables grow as `C(b, k)`).
pub const MAX_K: u32 = 12;

#[derive(Clone, Debug)]
struct Table {
    /// The permutation as bit-range moves `(source low bit, width, target low bit)`,
    /// with neighbouring blocks that stay neighbours merged into one move.
    moves: Vec<(u32, u32, u32)>,
    /// Bit set of the prefix blocks.
    mask: u32,
    prefix_bits: u32,
}

/// Blocks and tables for one search.
#[derive(Clone, Debug)]
pub struct Plan {
    k: u32,
    /// (lowest bit, width) of each block, block 0 = most significant.
    blocks: Vec<(u32, u32)>,
    tables: Vec<Table>,
    /// For every set of agreeing blocks: the first table it matches.
    first_table: Vec<u16>,
}

fn binom(n: u64, k: u64) -> u64 {
    let mut r = 1u64;
    for i in 0..k.min(n - k) {
        r = r * (n - i) / (i + 1);
    }
    r
}

impl Plan {
    /// A plan with `b` blocks for distance `k` (`k < b <= 64`, at most 16 blocks when
    /// `k > 0`).
    pub fn new(k: u32, b: u32) -> Plan {
        assert!(
            b > k && b <= 16,
            "bad plan: k={k} blocks={b} (need k < blocks <= 16)"
        );
        let base = 64 / b;
        let extra = 64 % b;
        let mut blocks = Vec::with_capacity(b as usize);
        let mut hi = 64;
        for j in 0..b {
            let w = base + (j < extra) as u32;
            hi -= w;
            blocks.push((hi, w));
        }
        let keep = (b - k) as usize;
        let mut tables = Vec::new();
        // All `keep`-subsets of blocks in lexicographic order.
        let mut comb: Vec<usize> = (0..keep).collect();
        loop {
            let mut order = comb.clone();
            order.extend((0..b as usize).filter(|j| !comb.contains(j)));
            let mask = comb.iter().fold(0u32, |m, &j| m | 1 << j);
            let prefix_bits = comb.iter().map(|&j| blocks[j].1).sum();
            let mut moves: Vec<(u32, u32, u32)> = Vec::new();
            let mut pos = 64;
            for &j in &order {
                let (lo, w) = blocks[j];
                pos -= w;
                match moves.last_mut() {
                    // The previous move's source and target both start right above
                    // this block's: extend it downwards.
                    Some(m) if m.0 == lo + w && m.2 == pos + w => {
                        m.0 = lo;
                        m.1 += w;
                        m.2 = pos;
                    }
                    _ => moves.push((lo, w, pos)),
                }
            }
            tables.push(Table {
                moves,
                mask,
                prefix_bits,
            });
            // next combination
            let mut i = keep;
            loop {
                if i == 0 {
                    break;
                }
                i -= 1;
                if comb[i] < b as usize - keep + i {
                    comb[i] += 1;
                    for j in i + 1..keep {
                        comb[j] = comb[j - 1] + 1;
                    }
                    i = usize::MAX;
                    break;
                }
            }
            if i != usize::MAX {
                break;
            }
        }
        // first_table[agree] = the lowest index of a table whose prefix blocks are all
        // in `agree`: a table's own mask gives its index, supersets take the minimum
        // over their subsets with one block fewer.
        let mut first_table = vec![u16::MAX; 1usize << b];
        for (i, t) in tables.iter().enumerate() {
            first_table[t.mask as usize] = i as u16;
        }
        for agree in 0..1usize << b {
            let mut best = first_table[agree];
            let mut bits = agree;
            while bits != 0 {
                let j = bits & bits.wrapping_neg();
                best = best.min(first_table[agree & !j]);
                bits &= bits - 1;
            }
            first_table[agree] = best;
        }
        Plan {
            k,
            blocks,
            tables,
            first_table,
        }
    }

    /// Picks the block count for `n` distinct fingerprints and distance `k` by
    /// estimated work: per table, a sort (~`SORT` per value) plus the comparisons in
    /// equal-prefix groups (~`n / 2^prefix` per value for random fingerprints).
    pub fn choose(n: usize, k: u32) -> Plan {
        assert!(k <= MAX_K, "k={k} is above the supported maximum {MAX_K}");
        if k == 0 {
            return Plan::new(0, 1);
        }
        const SORT: f64 = 12.0;
        const CMP: f64 = 1.0;
        let n = n.max(1) as f64;
        let mut best = (f64::INFINITY, k + 1);
        for b in k + 1..=16 {
            let t = binom(b as u64, k as u64) as f64;
            let avg_prefix = 64.0 * (b - k) as f64 / b as f64;
            let cost = t * (SORT + CMP * n / 2f64.powf(avg_prefix) / 2.0);
            if cost < best.0 {
                best = (cost, b);
            }
        }
        Plan::new(k, best.1)
    }

    /// Picks the block count for answering single queries against `n` indexed
    /// fingerprints: per table a binary search (~30 steps) plus the scan of the
    /// query's prefix group (~`n / 2^prefix`). Memory grows with the table count
    /// (8 bytes per fingerprint per table), so ties go to fewer tables.
    pub fn choose_for_queries(n: usize, k: u32) -> Plan {
        assert!(k <= MAX_K, "k={k} is above the supported maximum {MAX_K}");
        if k == 0 {
            return Plan::new(0, 1);
        }
        let n = n.max(1) as f64;
        let mut best = (f64::INFINITY, k + 1);
        for b in k + 1..=16 {
            let t = binom(b as u64, k as u64) as f64;
            let avg_prefix = 64.0 * (b - k) as f64 / b as f64;
            // Per table: ~2 cache misses (directory, first value) worth ~200
            // sequential comparisons, then the scan of the prefix group.
            let cost = t * (200.0 + n / 2f64.powf(avg_prefix));
            if cost < best.0 {
                best = (cost, b);
            }
        }
        Plan::new(k, best.1)
    }

    pub fn k(&self) -> u32 {
        self.k
    }
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }
    pub fn tables(&self) -> usize {
        self.tables.len()
    }
    /// Shortest prefix of any table, in bits.
    pub fn min_prefix_bits(&self) -> u32 {
        self.tables
            .iter()
            .map(|t| t.prefix_bits)
            .min()
            .unwrap_or(64)
    }

    #[inline]
    fn permute(&self, t: usize, x: u64) -> u64 {
        let mut out = 0u64;
        for &(lo, w, pos) in &self.tables[t].moves {
            out |= ((x >> lo) & mask(w)) << pos;
        }
        out
    }

    #[inline]
    fn unpermute(&self, t: usize, y: u64) -> u64 {
        let mut x = 0u64;
        for &(lo, w, pos) in &self.tables[t].moves {
            x |= ((y >> pos) & mask(w)) << lo;
        }
        x
    }

    /// Whether table `t` is the first table that brings `a` and `b` together.
    #[inline]
    fn is_first_table(&self, t: usize, a: u64, b: u64) -> bool {
        let d = a ^ b;
        let mut agree = 0u32;
        for (j, &(lo, w)) in self.blocks.iter().enumerate() {
            agree |= (((d >> lo) & mask(w)) == 0) as u32 * (1 << j);
        }
        self.first_table[agree as usize] as usize == t
    }

    /// Table `t`: the pairs (a, b, distance) with `a < b`, within `k`, first seen here.
    fn table_pairs(&self, t: usize, values: &[u64], out: &mut Vec<(u64, u64, u32)>) {
        let mut perm: Vec<u64> = values.iter().map(|&x| self.permute(t, x)).collect();
        radix_sort_u64(&mut perm);
        let shift = 64 - self.tables[t].prefix_bits;
        let prefix = |y: u64| if shift >= 64 { 0 } else { y >> shift };
        let mut i = 0;
        while i < perm.len() {
            let p = prefix(perm[i]);
            let mut j = i + 1;
            while j < perm.len() && prefix(perm[j]) == p {
                j += 1;
            }
            if j - i > 1 {
                for x in i..j {
                    for y in x + 1..j {
                        // Permutation preserves Hamming distance.
                        let d = (perm[x] ^ perm[y]).count_ones();
                        if d <= self.k {
                            let a = self.unpermute(t, perm[x]);
                            let b = self.unpermute(t, perm[y]);
                            if self.is_first_table(t, a, b) {
                                out.push(if a < b { (a, b, d) } else { (b, a, d) });
                            }
                        }
                    }
                }
            }
            i = j;
        }
    }

    /// All pairs of `values` (distinct) within `k`, as `(a, b, distance)` with `a < b`,
    /// sorted. Runs on the current rayon pool.
    pub fn all_pairs(&self, values: &[u64]) -> Vec<(u64, u64, u32)> {
        if self.k == 0 {
            return Vec::new();
        }
        let mut pairs: Vec<(u64, u64, u32)> = (0..self.tables.len())
            .into_par_iter()
            .map(|t| {
                let mut out = Vec::new();
                self.table_pairs(t, values, &mut out);
                out
            })
            .flatten()
            .collect();
        pairs.par_sort_unstable();
        pairs
    }

    /// Searches `query` against values sorted per table (see [`TableSet`]); `dir`
    /// maps the top `dir_bits` bits of a permuted value to its first position.
    fn query_table(
        &self,
        t: usize,
        sorted: &[u64],
        dir: &[u32],
        dir_bits: u32,
        query: u64,
        out: &mut Vec<(u64, u32)>,
    ) {
        let y = self.permute(t, query);
        let bits = self.tables[t].prefix_bits;
        let shift = 64 - bits;
        let lo_key = if bits == 0 { 0 } else { (y >> shift) << shift };
        let h = (y >> (64 - dir_bits)) as usize;
        let (a, b) = (dir[h] as usize, dir[h + 1] as usize);
        let start = a + sorted[a..b].partition_point(|&v| v < lo_key);
        for &v in &sorted[start..] {
            if bits != 0 && (v >> shift) != (y >> shift) {
                break;
            }
            let d = (v ^ y).count_ones();
            if d <= self.k {
                let a = self.unpermute(t, v);
                if self.is_first_table(t, a, query) {
                    out.push((a, d));
                }
            }
        }
    }
}

#[inline]
fn mask(w: u32) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// Sorts by the top 16 bits with one counting pass, then each bucket in cache.
pub fn radix_sort_u64(v: &mut Vec<u64>) {
    if v.len() < 1 << 16 {
        v.sort_unstable();
        return;
    }
    let mut counts = vec![0usize; 1 << 16];
    for &x in v.iter() {
        counts[(x >> 48) as usize] += 1;
    }
    let mut starts = Vec::with_capacity(counts.len() + 1);
    let mut s = 0;
    for &c in &counts {
        starts.push(s);
        s += c;
    }
    starts.push(s);
    let mut out = vec![0u64; v.len()];
    let mut pos = starts.clone();
    for &x in v.iter() {
        let b = (x >> 48) as usize;
        out[pos[b]] = x;
        pos[b] += 1;
    }
    for w in starts.windows(2) {
        out[w[0]..w[1]].sort_unstable();
    }
    *v = out;
}

/// Fingerprints kept sorted in every table of a plan, for queries one at a time
/// (the persisted index).
#[derive(Clone, Debug)]
pub struct TableSet {
    pub plan: Plan,
    /// One sorted permuted copy per table.
    pub sorted: Vec<Vec<u64>>,
    /// Per table: first position of each value of the top `dir_bits` bits (+ end).
    dirs: Vec<Vec<u32>>,
    dir_bits: u32,
}

fn directory(sorted: &[u64], bits: u32) -> Vec<u32> {
    let mut dir = vec![0u32; (1usize << bits) + 1];
    for &v in sorted {
        dir[(v >> (64 - bits)) as usize + 1] += 1;
    }
    for i in 1..dir.len() {
        dir[i] += dir[i - 1];
    }
    dir
}

/// Directory size: about one value per entry, between 8 and 24 bits, and never more
/// bits than the shortest prefix (so one entry never splits a prefix group's start).
fn dir_bits(n: usize, plan: &Plan) -> u32 {
    let want = (usize::BITS - n.max(1).leading_zeros()).clamp(8, 24);
    want.min(plan.min_prefix_bits()).max(1)
}

impl TableSet {
    /// Builds the tables over distinct `values`.
    pub fn build(plan: Plan, values: &[u64]) -> TableSet {
        let sorted: Vec<Vec<u64>> = (0..plan.tables())
            .into_par_iter()
            .map(|t| {
                let mut v: Vec<u64> = values.iter().map(|&x| plan.permute(t, x)).collect();
                radix_sort_u64(&mut v);
                v
            })
            .collect();
        let mut ts = TableSet {
            plan,
            sorted,
            dirs: Vec::new(),
            dir_bits: 1,
        };
        ts.rebuild_dirs();
        ts
    }

    fn rebuild_dirs(&mut self) {
        self.dir_bits = dir_bits(self.len(), &self.plan);
        let bits = self.dir_bits;
        self.dirs = self.sorted.par_iter().map(|s| directory(s, bits)).collect();
    }

    pub fn len(&self) -> usize {
        self.sorted.first().map_or(0, |v| v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indexed values within `k` of `query`, with their distance, each once.
    /// With `k == 0` plans the single table holds the values themselves.
    pub fn query(&self, query: u64, out: &mut Vec<(u64, u32)>) {
        out.clear();
        if self.plan.k == 0 {
            if self.sorted[0].binary_search(&query).is_ok() {
                out.push((query, 0));
            }
            return;
        }
        for t in 0..self.plan.tables() {
            self.plan
                .query_table(t, &self.sorted[t], &self.dirs[t], self.dir_bits, query, out);
        }
    }

    /// Adds distinct new values (not already present) to every table.
    pub fn insert(&mut self, values: &[u64]) {
        let plan = &self.plan;
        self.sorted.par_iter_mut().enumerate().for_each(|(t, s)| {
            let mut add: Vec<u64> = values.iter().map(|&x| plan.permute(t, x)).collect();
            radix_sort_u64(&mut add);
            *s = merge_sorted(s, &add);
        });
        self.rebuild_dirs();
    }

    /// The values in table 0 order, unpermuted.
    pub fn values(&self) -> impl Iterator<Item = u64> + '_ {
        self.sorted[0].iter().map(|&y| self.plan.unpermute(0, y))
    }
}

fn merge_sorted(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Reference: every pair by brute force (tests and small inputs).
pub fn brute_force_pairs(values: &[u64], k: u32) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::new();
    for i in 0..values.len() {
        for j in i + 1..values.len() {
            let d = (values[i] ^ values[j]).count_ones();
            if d <= k {
                let (a, b) = (values[i].min(values[j]), values[i].max(values[j]));
                out.push((a, b, d));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Pairs of documents (i < j) whose fingerprints are within `k` bits (`None`: a
/// document without one), sorted: what the quality studies score.
pub fn pairs_within(fps: &[Option<u64>], k: u32) -> Vec<(u32, u32)> {
    let mut by: std::collections::HashMap<u64, Vec<u32>> = Default::default();
    for (i, f) in fps.iter().enumerate() {
        if let Some(f) = f {
            by.entry(*f).or_default().push(i as u32);
        }
    }
    let mut uniq: Vec<u64> = by.keys().copied().collect();
    uniq.sort_unstable();
    let mut out = Vec::new();
    for m in by.values() {
        for x in 0..m.len() {
            for y in x + 1..m.len() {
                out.push((m[x].min(m[y]), m[x].max(m[y])));
            }
        }
    }
    for (a, b, _) in Plan::choose(uniq.len(), k).all_pairs(&uniq) {
        for &i in &by[&a] {
            for &j in &by[&b] {
                out.push((i.min(j), i.max(j)));
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            // splitmix64
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn flip(&mut self, x: u64, bits: u32) -> u64 {
            let mut y = x;
            while (y ^ x).count_ones() < bits {
                y ^= 1 << (self.next() % 64);
            }
            y
        }
    }

    fn distinct(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Random values plus planted clusters at every distance 0..=k+2.
    fn planted(seed: u64, n: usize, k: u32) -> Vec<u64> {
        let mut r = Rng(seed);
        let mut v: Vec<u64> = (0..n).map(|_| r.next()).collect();
        for c in 0..n / 10 {
            let base = v[c];
            for d in 1..=k + 2 {
                v.push(r.flip(base, d));
            }
        }
        // Low-entropy values too: few bits set, so prefixes collide a lot.
        for _ in 0..n / 10 {
            v.push(r.next() & r.next() & r.next() & r.next());
        }
        distinct(v)
    }

    #[test]
    fn plans_are_sane() {
        for k in 1..=6 {
            for b in k + 1..=(k + 6).min(16) {
                let p = Plan::new(k, b);
                assert_eq!(p.tables() as u64, binom(b as u64, k as u64));
                assert_eq!(p.blocks.iter().map(|b| b.1).sum::<u32>(), 64);
                let mut r = Rng(k as u64 * 100 + b as u64);
                for t in 0..p.tables() {
                    for _ in 0..20 {
                        let x = r.next();
                        assert_eq!(p.unpermute(t, p.permute(t, x)), x);
                    }
                }
            }
        }
        let p = Plan::choose(10_000_000, 3);
        assert_eq!((p.blocks(), p.tables()), (5, 10));
        assert!(Plan::choose(100, 3).tables() <= 10);
    }

    #[test]
    fn all_pairs_equals_brute_force() {
        for k in 0..=7 {
            let values = planted(k as u64 + 1, 1000, k);
            let expect = brute_force_pairs(&values, k);
            assert!(
                k == 0 || expect.len() >= 100 * k as usize,
                "planted pairs missing for k={k}"
            );
            // The chosen plan and every other block count give the same pairs.
            assert_eq!(
                Plan::choose(values.len(), k).all_pairs(&values),
                expect,
                "k={k}"
            );
            if k > 0 {
                for b in k + 1..=(k + 3).min(16) {
                    assert_eq!(Plan::new(k, b).all_pairs(&values), expect, "k={k} b={b}");
                }
            }
        }
    }

    #[test]
    fn radix_path_equals_brute_force() {
        // Above the radix threshold, with a plan whose prefix is shorter than 16 bits.
        let k = 4;
        let values = planted(99, 70_000, k);
        let mut shuffled: Vec<u64> = values.iter().map(|&v| v.rotate_left(17) ^ 0x5555).collect();
        radix_sort_u64(&mut shuffled);
        let mut expect: Vec<u64> = values.iter().map(|&v| v.rotate_left(17) ^ 0x5555).collect();
        expect.sort_unstable();
        assert_eq!(shuffled, expect);
        // Every planted neighbour of the first 300 cluster centres is found.
        let got = Plan::new(k, 6).all_pairs(&values);
        assert!(got.len() > 1000);
        let got_set: std::collections::HashSet<(u64, u64)> =
            got.iter().map(|&(a, b, _)| (a, b)).collect();
        let sample: Vec<u64> = values.iter().copied().step_by(40).collect();
        for &(a, b, d) in &brute_force_pairs(&sample, k) {
            assert!(got_set.contains(&(a, b)), "missed {a:016x} {b:016x} at {d}");
        }
        // And nothing reported is wrong or repeated.
        assert!(got
            .iter()
            .all(|&(a, b, d)| a < b && (a ^ b).count_ones() == d && d <= k));
        assert_eq!(got_set.len(), got.len());
    }

    #[test]
    fn table_set_queries_equal_brute_force() {
        for k in [0u32, 1, 3, 6] {
            let values = planted(7 + k as u64, 2000, k);
            let (old, new) = values.split_at(values.len() / 2);
            let mut ts = TableSet::build(Plan::choose(old.len(), k), &old[..old.len() / 2]);
            ts.insert(&old[old.len() / 2..]);
            assert_eq!(ts.len(), old.len());
            let mut got = Vec::new();
            let mut r = Rng(5);
            for &q in new
                .iter()
                .chain(old.iter().take(50))
                .chain([r.flip(old[3], k)].iter())
            {
                ts.query(q, &mut got);
                got.sort_unstable();
                let mut expect: Vec<(u64, u32)> = old
                    .iter()
                    .map(|&v| (v, (v ^ q).count_ones()))
                    .filter(|&(_, d)| d <= k)
                    .collect();
                expect.sort_unstable();
                assert_eq!(got, expect, "k={k} q={q:016x}");
            }
        }
    }
}
