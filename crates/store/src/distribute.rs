//! Assigning blocks to servers (`webdedup distribute`, seed section 2.3).
//!
//! [`remainder`] is the seed's method: block `b` goes to server `b mod n`; a server
//! added as index `k` takes the blocks `b` with `b mod n == k`; the blocks of a
//! removed server are dealt out the same way; then, unless `quick`, any server at
//! least 5% over its ideal load hands its excess to the least loaded servers.
//!
//! [`balanced`] does better: it moves the fewest blocks any assignment can move
//! while every server ends within one block of its ideal (weighted) load. The
//! proof is short: a server keeping `t_i` blocks must lose `max(0, c_i - t_i)` of
//! its `c_i`, and a removed server loses all; choosing which servers get the
//! rounded-up targets by largest `c_i - floor(ideal_i)` minimizes that sum; and
//! moving exactly the surplus into the deficits attains it. The tests check it by
//! brute force on small cases.

use crate::server_map::{ServerAddr, ServerEntry, ServerMap};
use std::fmt;

/// The seed's report of a redistribution.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub from: usize,
    pub to: usize,
    pub blocks: u32,
    /// Blocks whose owner (by address) changed.
    pub moved: u32,
    /// Mean absolute aberrancy, in blocks.
    pub avg_aberrancy: f64,
    /// The signed aberrancy of largest magnitude, in blocks.
    pub max_aberrancy: i64,
}

/// `%g` with six significant digits (C++ iostream's default), as the seed prints.
pub fn six_significant(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |x: f64| six_significant(x * 100.0 / self.blocks as f64);
        writeln!(f, "Servers: {} -> {}", self.from, self.to)?;
        writeln!(
            f,
            "Blocks to be redistributed: {} ({}%)",
            self.moved,
            pct(self.moved as f64)
        )?;
        // The seed's layout, with the plural right ("1 block", not "1 blocks").
        let blocks = |n: i64| if n.abs() == 1 { "block" } else { "blocks" };
        let avg = self.avg_aberrancy.trunc() as i64;
        writeln!(
            f,
            "Average aberrancy: {avg} {}({}%)",
            blocks(avg),
            pct(self.avg_aberrancy)
        )?;
        writeln!(
            f,
            "Max. aberrancy: {} {}({}%)",
            self.max_aberrancy,
            blocks(self.max_aberrancy),
            pct(self.max_aberrancy as f64)
        )
    }
}

/// Compares `next` with `prev` (None: a first distribution, every block moves).
/// A server's aberrancy is its block count minus floor(blocks / servers).
pub fn report(prev: Option<&ServerMap>, next: &ServerMap) -> Report {
    let moved = match prev {
        None => next.blocks,
        Some(p) => (0..next.blocks as usize)
            .filter(|&b| {
                p.servers[p.owner[b] as usize].addr != next.servers[next.owner[b] as usize].addr
            })
            .count() as u32,
    };
    let n = next.servers.len();
    let floor = (next.blocks / n as u32) as i64;
    let ab: Vec<i64> = next.counts().iter().map(|&c| c as i64 - floor).collect();
    let avg = ab.iter().map(|a| a.abs() as f64).sum::<f64>() / n as f64;
    // The first of the largest magnitude.
    let max = ab
        .iter()
        .copied()
        .fold(0i64, |m, a| if a.abs() > m.abs() { a } else { m });
    Report {
        from: prev.map_or(0, |p| p.servers.len()),
        to: n,
        blocks: next.blocks,
        moved,
        avg_aberrancy: avg,
        max_aberrancy: max,
    }
}

fn without_excluded(servers: &[ServerEntry], excluded: &[ServerAddr]) -> Vec<ServerEntry> {
    servers
        .iter()
        .filter(|s| !excluded.contains(&s.addr))
        .cloned()
        .collect()
}

/// The servers of the new map: those of the previous one that stay (in their
/// order), then the new ones (in the list's order).
fn ordered(prev: Option<&ServerMap>, servers: &[ServerEntry]) -> Vec<ServerEntry> {
    let mut out: Vec<ServerEntry> = Vec::new();
    if let Some(p) = prev {
        for e in &p.servers {
            if let Some(s) = servers.iter().find(|s| s.addr == e.addr) {
                out.push(s.clone());
            }
        }
    }
    for s in servers {
        if !out.iter().any(|o| o.addr == s.addr) {
            out.push(s.clone());
        }
    }
    out
}

/// Ideal (weighted) loads.
fn ideals(servers: &[ServerEntry], blocks: u32) -> Vec<f64> {
    let total: f64 = servers.iter().map(|s| s.weight).sum();
    servers
        .iter()
        .map(|s| blocks as f64 * s.weight / total)
        .collect()
}

/// The seed's remainder method (see the module docs). `full` ignores `prev`'s
/// assignment (a fresh distribution over the new list, in its order).
pub fn remainder(
    prev: Option<&ServerMap>,
    servers: &[ServerEntry],
    excluded: &[ServerAddr],
    blocks: u32,
    quick: bool,
    full: bool,
) -> Result<ServerMap, String> {
    let list = without_excluded(servers, excluded);
    if list.is_empty() {
        return Err("no servers left to own the blocks".into());
    }
    let incremental = prev.filter(|_| !full);
    let list = match incremental {
        Some(p) => ordered(Some(p), &list),
        None => list,
    };
    let n = list.len() as u32;
    let mut owner: Vec<u32> = (0..blocks).map(|b| b % n).collect();
    if let Some(p) = incremental {
        if p.blocks != blocks {
            return Err(format!(
                "the map has {} blocks, not {blocks}: blocks are fixed once used",
                p.blocks
            ));
        }
        // Index in the new list of each previous server (None: removed).
        let to_new: Vec<Option<u32>> = p
            .servers
            .iter()
            .map(|e| list.iter().position(|s| s.addr == e.addr).map(|i| i as u32))
            .collect();
        let survivors = to_new.iter().flatten().count() as u32;
        for b in 0..blocks {
            let r = b % n;
            owner[b as usize] = match to_new[p.owner[b as usize] as usize] {
                // A new server (index >= survivors) takes its remainder class.
                Some(_) if r >= survivors => r,
                Some(i) => i,
                None => r,
            };
        }
    }
    let mut map = ServerMap {
        blocks,
        servers: list,
        owner,
    };
    if !quick {
        optimise(&mut map);
    }
    Ok(map)
}

/// The seed's optimisation: a server at least 5% over its ideal load gives its
/// excess (its highest blocks) to the least loaded servers.
fn optimise(map: &mut ServerMap) {
    let ideal = ideals(&map.servers, map.blocks);
    let mut counts = map.counts();
    for s in 0..map.servers.len() {
        if (counts[s] as f64) < ideal[s] * 1.05 || counts[s] == 0 {
            continue;
        }
        let keep = ideal[s].ceil() as u32;
        let mut excess = counts[s].saturating_sub(keep);
        for b in (0..map.blocks as usize).rev() {
            if excess == 0 {
                break;
            }
            if map.owner[b] as usize != s {
                continue;
            }
            // The least loaded server relative to its ideal.
            let to = (0..map.servers.len())
                .min_by(|&x, &y| {
                    (counts[x] as f64 - ideal[x]).total_cmp(&(counts[y] as f64 - ideal[y]))
                })
                .unwrap();
            if to == s || counts[to] as f64 + 1.0 > ideal[to].ceil() {
                break;
            }
            map.owner[b] = to as u32;
            counts[s] -= 1;
            counts[to] += 1;
            excess -= 1;
        }
    }
}

/// Per-server targets within one block of the ideal, the rounded-up ones given
/// to the servers that hold the most beyond their floor (fewest moves).
fn targets(servers: &[ServerEntry], blocks: u32, current: &[u32]) -> Vec<u32> {
    let ideal = ideals(servers, blocks);
    let mut t: Vec<u32> = ideal.iter().map(|x| x.floor() as u32).collect();
    let mut left = blocks - t.iter().sum::<u32>();
    let mut order: Vec<usize> = (0..servers.len())
        .filter(|&i| ideal[i].fract() > 1e-9)
        .collect();
    order.sort_by(|&a, &b| {
        let gain = |i: usize| current[i] as i64 - t[i] as i64;
        gain(b)
            .cmp(&gain(a))
            .then(ideal[b].fract().total_cmp(&ideal[a].fract()))
            .then(a.cmp(&b))
    });
    for i in order {
        if left == 0 {
            break;
        }
        t[i] += 1;
        left -= 1;
    }
    // Rounding error of the weights: hand out what is left in order.
    let mut i = 0;
    while left > 0 {
        t[i % servers.len()] += 1;
        left -= 1;
        i += 1;
    }
    t
}

/// The fewest moves with every server within one block of its ideal load.
pub fn balanced(
    prev: Option<&ServerMap>,
    servers: &[ServerEntry],
    excluded: &[ServerAddr],
    blocks: u32,
) -> Result<ServerMap, String> {
    let list = ordered(prev, &without_excluded(servers, excluded));
    if list.is_empty() {
        return Err("no servers left to own the blocks".into());
    }
    if let Some(p) = prev {
        if p.blocks != blocks {
            return Err(format!(
                "the map has {} blocks, not {blocks}: blocks are fixed once used",
                p.blocks
            ));
        }
    }
    let n = list.len();
    // Current owner in the new list's indices.
    let cur: Vec<Option<usize>> = match prev {
        Some(p) => {
            let to_new: Vec<Option<usize>> = p
                .servers
                .iter()
                .map(|e| list.iter().position(|s| s.addr == e.addr))
                .collect();
            p.owner.iter().map(|&o| to_new[o as usize]).collect()
        }
        None => vec![None; blocks as usize],
    };
    let mut current = vec![0u32; n];
    for c in cur.iter().flatten() {
        current[*c] += 1;
    }
    let t = targets(&list, blocks, &current);
    let mut kept = vec![0u32; n];
    let mut owner = vec![u32::MAX; blocks as usize];
    let mut free = Vec::new();
    for b in 0..blocks as usize {
        match cur[b] {
            Some(s) if kept[s] < t[s] => {
                kept[s] += 1;
                owner[b] = s as u32;
            }
            _ => free.push(b),
        }
    }
    let mut s = 0;
    for b in free {
        while kept[s] >= t[s] {
            s += 1;
        }
        owner[b] = s as u32;
        kept[s] += 1;
    }
    Ok(ServerMap {
        blocks,
        servers: list,
        owner,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn servers(n: usize) -> Vec<ServerEntry> {
        (0..n)
            .map(|i| ServerEntry {
                addr: ServerAddr {
                    host: format!("s{i}"),
                    port: 1234,
                },
                weight: 1.0,
            })
            .collect()
    }

    #[test]
    fn full_redistribution_reports_as_the_seed_with_plurals_right() {
        let two = remainder(None, &servers(2), &[], 1999, false, true).unwrap();
        let ten = remainder(Some(&two), &servers(10), &[], 1999, false, true).unwrap();
        assert_eq!(
            report(Some(&two), &ten).to_string(),
            "Servers: 2 -> 10\nBlocks to be redistributed: 1599 (79.99%)\nAverage aberrancy: 0 blocks(0.0450225%)\nMax. aberrancy: 1 block(0.050025%)\n"
        );
        let eleven = remainder(Some(&ten), &servers(11), &[], 1999, false, true).unwrap();
        assert_eq!(
            report(Some(&ten), &eleven).to_string(),
            "Servers: 10 -> 11\nBlocks to be redistributed: 1809 (90.4952%)\nAverage aberrancy: 0 blocks(0.0363818%)\nMax. aberrancy: 1 block(0.050025%)\n"
        );
    }

    #[test]
    fn an_added_server_takes_its_remainder_class() {
        // The seed's example: 10 -> 11 servers over 100 blocks, quick.
        let ten = remainder(None, &servers(10), &[], 100, true, false).unwrap();
        let eleven = remainder(Some(&ten), &servers(11), &[], 100, true, false).unwrap();
        assert_eq!(
            eleven.blocks_of(10),
            vec![10, 21, 32, 43, 54, 65, 76, 87, 98]
        );
        assert_eq!(report(Some(&ten), &eleven).moved, 9);
        // An incremental step moves far fewer blocks than a full one.
        let ten = remainder(None, &servers(10), &[], 1999, false, false).unwrap();
        let inc = report(
            Some(&ten),
            &remainder(Some(&ten), &servers(11), &[], 1999, false, false).unwrap(),
        );
        assert!(inc.moved < 200, "{inc}");
        assert!(inc.max_aberrancy.abs() <= 10, "{inc}");
    }

    #[test]
    fn optimisation_caps_the_overloaded_and_quick_does_not() {
        // The remainder rule ignores weights: a heavy server added to three light
        // ones gets a quarter of the blocks unless the 5% rule evens it out.
        let three = remainder(None, &servers(3), &[], 1999, false, true).unwrap();
        let mut four = servers(4);
        four[3].weight = 3.0;
        let quick = remainder(Some(&three), &four, &[], 1999, true, false).unwrap();
        let opt = remainder(Some(&three), &four, &[], 1999, false, false).unwrap();
        let (rq, ro) = (report(Some(&three), &quick), report(Some(&three), &opt));
        assert!(ro.moved > rq.moved, "{rq}{ro}");
        let ideal = ideals(&opt.servers, 1999);
        let over = |m: &ServerMap| {
            m.counts()
                .iter()
                .zip(&ideal)
                .any(|(&c, &i)| c as f64 >= i * 1.05)
        };
        assert!(over(&quick), "{:?}", quick.counts());
        assert!(!over(&opt), "{:?}", opt.counts());
    }

    #[test]
    fn excluded_servers_lose_every_block() {
        let three = remainder(None, &servers(3), &[], 1999, false, true).unwrap();
        let ex = [servers(3)[1].addr.clone()];
        for m in [
            remainder(Some(&three), &servers(3), &ex, 1999, false, false).unwrap(),
            balanced(Some(&three), &servers(3), &ex, 1999).unwrap(),
        ] {
            assert_eq!(m.servers.len(), 2);
            assert!(m.index_of(&ex[0]).is_none());
            assert!(
                m.counts().iter().all(|&c| c == 999 || c == 1000),
                "{:?}",
                m.counts()
            );
        }
    }

    #[test]
    fn six_significant_digits_like_iostream() {
        assert_eq!(six_significant(79.99), "79.99");
        assert_eq!(six_significant(0.9 * 100.0 / 1999.0), "0.0450225");
        assert_eq!(six_significant(100.0 / 1999.0), "0.050025");
        assert_eq!(six_significant(-50.0 * 100.0 / 1999.0), "-2.50125");
        assert_eq!(six_significant(182.0 * 100.0 / 1999.0), "9.10455");
        assert_eq!(six_significant(100.0), "100");
    }

    /// Every assignment with each server within one block of the ideal, by brute force.
    fn brute_min_moves(prev: &ServerMap, n: usize) -> u32 {
        let blocks = prev.blocks as usize;
        let ideal = blocks as f64 / n as f64;
        let mut best = u32::MAX;
        let mut a = vec![0usize; blocks];
        loop {
            let mut c = vec![0usize; n];
            a.iter().for_each(|&s| c[s] += 1);
            if c.iter().all(|&x| (x as f64 - ideal).abs() < 1.0) {
                let moved = (0..blocks)
                    .filter(|&b| {
                        prev.servers.get(prev.owner[b] as usize).map(|e| &e.addr)
                            != Some(&servers(n)[a[b]].addr)
                    })
                    .count() as u32;
                best = best.min(moved);
            }
            let mut i = 0;
            while i < blocks {
                a[i] += 1;
                if a[i] < n {
                    break;
                }
                a[i] = 0;
                i += 1;
            }
            if i == blocks {
                return best;
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn balanced_moves_no_more_than_any_balanced_assignment(
            blocks in 1u32..=8, old_n in 1usize..=4, new_n in 1usize..=3, seed in any::<u64>(),
        ) {
            let mut x = seed | 1;
            let owner = (0..blocks).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x % old_n as u64) as u32 }).collect();
            let prev = ServerMap { blocks, servers: servers(old_n), owner };
            let next = balanced(Some(&prev), &servers(new_n), &[], blocks).unwrap();
            let ideal = blocks as f64 / new_n as f64;
            prop_assert!(next.counts().iter().all(|&c| (c as f64 - ideal).abs() < 1.0));
            prop_assert_eq!(report(Some(&prev), &next).moved, brute_min_moves(&prev, new_n));
        }

        #[test]
        fn balanced_attains_the_lower_bound_with_weights(
            old_n in 1usize..=12, new_n in 1usize..=12, weights in proptest::collection::vec(1u32..=4, 12), seed in any::<u64>(),
        ) {
            let blocks = 1999;
            let mut x = seed | 1;
            let owner = (0..blocks).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x % old_n as u64) as u32 }).collect();
            let prev = ServerMap { blocks, servers: servers(old_n), owner };
            let mut list = servers(new_n);
            list.iter_mut().zip(&weights).for_each(|(s, &w)| s.weight = w as f64);
            let next = balanced(Some(&prev), &list, &[], blocks).unwrap();
            let ideal = ideals(&next.servers, blocks);
            let counts = next.counts();
            prop_assert!(counts.iter().zip(&ideal).all(|(&c, &i)| (c as f64 - i).abs() < 1.0 + 1e-9), "{:?} {:?}", counts, ideal);
            // Lower bound: blocks of removed servers, plus each staying server's
            // surplus over the largest target it may have (ceil of its ideal).
            let prev_counts = prev.counts();
            let bound: u32 = prev.servers.iter().enumerate().map(|(i, e)| match next.index_of(&e.addr) {
                None => prev_counts[i],
                Some(j) => prev_counts[i].saturating_sub(ideal[j].ceil() as u32),
            }).sum();
            let moved = report(Some(&prev), &next).moved;
            prop_assert!(moved >= bound);
            // And only surplus moves: nothing that could stay is moved.
            let surplus: u32 = prev.servers.iter().enumerate().map(|(i, e)| match next.index_of(&e.addr) {
                None => prev_counts[i],
                Some(j) => prev_counts[i].saturating_sub(counts[j]),
            }).sum();
            prop_assert_eq!(moved, surplus);
        }
    }
}
