//! Fuzzes the vertical reader and the policy: any bytes, cut into chunks of a
//! size taken from the input, must be planned and decided without a panic, and the
//! rendered output must be a subsequence of the input's lines.
//! Run: cargo install cargo-fuzz && cd fuzz && cargo +nightly fuzz run vertical

#![no_main]
use libfuzzer_sys::fuzz_target;
use webdedup_dedup::plan::{ChunkPlan, Planner};
use webdedup_dedup::policy::{decide, ChunkContext, Decisions, Scratch};
use webdedup_dedup::render::render;
use webdedup_dedup::report::ChunkStats;
use webdedup_dedup::Options;
use webdedup_formats::vertical::ChunkReader;
use webdedup_store::MemStore;

fuzz_target!(|data: &[u8]| {
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
        .unwrap();
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
        let mut lines = chunk.data.split(|&b| b == b'\n');
        for line in out.split(|&b| b == b'\n') {
            assert!(lines.any(|l| l == line));
        }
    }
});
