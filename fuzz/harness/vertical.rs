//! The vertical reader and the policy on arbitrary bytes, shared by the cargo-fuzz
//! target `vertical` and the corpus replay test of `webdedup-dedup`
//! (`crates/dedup/tests/fuzz_corpus.rs`), so both check exactly the same thing.
//!
//! The first two bytes choose the chunk size and the line-length limit; the rest is
//! the input. Every chunk must be planned and decided without a panic, and the
//! rendered output must be a subsequence of the chunk's lines, line ends included
//! (dedup removes, it never rewrites).

use webdedup_dedup::plan::{ChunkPlan, Planner};
use webdedup_dedup::policy::{decide, ChunkContext, Decisions, Scratch};
use webdedup_dedup::render::render;
use webdedup_dedup::report::ChunkStats;
use webdedup_dedup::Options;
use webdedup_formats::chunk::ChunkReader;
use webdedup_store::MemStore;

/// Runs one input; panics (with the reason) when an invariant does not hold.
pub fn run(data: &[u8]) {
    let (sizes, body) = data.split_at(data.len().min(2));
    let target = 1 + sizes.first().copied().unwrap_or(0) as usize * 16;
    let max_line = 1 + sizes.get(1).copied().unwrap_or(255) as usize * 4;
    let opts = Options::default();
    let store = MemStore::new(7);
    let mut planner = Planner::new(&opts);
    let (mut plan, mut scratch, mut dec) = (
        ChunkPlan::default(),
        Scratch::default(),
        Decisions::default(),
    );
    let mut reader = ChunkReader::with_sizes(body, target, max_line);
    while let Some(chunk) = reader.next_chunk() {
        planner.plan(&chunk, &mut plan);
        decide(
            &plan,
            ChunkContext::default(),
            &store,
            &opts,
            &mut scratch,
            &mut dec,
        )
        .expect("the embedded store never fails");
        let mut out = Vec::new();
        render(
            &chunk.data,
            &plan,
            &dec,
            &mut out,
            None,
            None,
            &mut ChunkStats::default(),
        );
        // Lines with their line ends: an empty output is no line (plain `split`
        // would make it one empty line, which an input without empty lines lacks),
        // and a kept line keeps its line end or, last in the input, its lack of one.
        let mut lines = chunk.data.split_inclusive(|&b| b == b'\n');
        for line in out.split_inclusive(|&b| b == b'\n') {
            assert!(
                lines.any(|l| l == line),
                "an output line that is not the next input line: {:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
