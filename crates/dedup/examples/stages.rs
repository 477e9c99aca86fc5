//! Times the stages of a one-thread dedup pass over a directory of verticals
//! (read, parse only, plan, plan + decide), to see where the time goes.
//! Usage: cargo run --release -p webdedup-dedup --example stages -- DIR

use std::time::Instant;
use webdedup_dedup::plan::{ChunkPlan, Planner};
use webdedup_dedup::policy::{decide, Decisions, Scratch};
use webdedup_dedup::runner::list_inputs;
use webdedup_dedup::Options;
use webdedup_formats::chunk::{Chunk, ChunkReader, Issue};
use webdedup_formats::vertical::{parse_chunk, Sink};
use webdedup_store::MemStore;

struct Nothing(u64);
impl Sink for Nothing {
    fn doc_start(&mut self, _: std::ops::Range<usize>, _: u64, _: &[u8]) {}
    fn structure(&mut self, _: std::ops::Range<usize>) {}
    fn para_start(&mut self, _: usize, _: u64, _: bool) {}
    fn word(&mut self, w: &[u8], _: bool, _: u64) {
        self.0 += w.len() as u64;
    }
    fn para_end(&mut self, _: usize) {}
    fn doc_end(&mut self, _: Option<std::ops::Range<usize>>) {}
    fn issue(&mut self, _: Issue) {}
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: stages DIR");
    let files = list_inputs(&[dir.into()], "/nonexistent".as_ref())
        .unwrap()
        .files;
    let t = Instant::now();
    let mut chunks: Vec<Chunk> = Vec::new();
    for f in &files {
        let (r, _) = webdedup_formats::open_input(&f.path).unwrap();
        let mut cr = ChunkReader::new(r);
        while let Some(c) = cr.next_chunk() {
            chunks.push(c);
        }
    }
    let bytes: usize = chunks.iter().map(|c| c.data.len()).sum();
    let mb = bytes as f64 / 1e6;
    let report = |name: &str, t: Instant| {
        let s = t.elapsed().as_secs_f64();
        println!("{name:<16} {s:.3} s  {:.0} MB/s", mb / s);
    };
    report("read+chunk", t);
    let t = Instant::now();
    let mut n = Nothing(0);
    for c in &chunks {
        parse_chunk(c, &mut n);
    }
    report("parse", t);
    let opts = Options::default();
    let mut planner = Planner::new(&opts);
    let mut plan = ChunkPlan::default();
    let t = Instant::now();
    for c in &chunks {
        planner.plan(c, &mut plan);
    }
    report("plan", t);
    let store = MemStore::default();
    let (mut scratch, mut dec) = (Scratch::default(), Decisions::default());
    let t = Instant::now();
    for c in &chunks {
        planner.plan(c, &mut plan);
        decide(
            &plan,
            Default::default(),
            &store,
            &opts,
            &mut scratch,
            &mut dec,
        )
        .unwrap();
    }
    report("plan+decide", t);
    println!("words bytes {}", n.0);
}
