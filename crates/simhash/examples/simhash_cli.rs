//! Stand-in for the `webdedup` binary until the `cli` crate wires these subcommands
//! in: `simhash_cli simhash ...` / `simhash_cli similar ...` (used by bench/simhash.sh).
use clap::Parser;
use webdedup_simhash::{run_simhash, run_similar, SimhashArgs, SimilarArgs};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand)]
enum Cmd {
    /// One 64-bit SimHash per document.
    Simhash(SimhashArgs),
    /// Near-duplicate pairs, clusters, dedup, index.
    Similar(SimilarArgs),
}

fn main() {
    let r = match Cli::parse().cmd {
        Cmd::Simhash(a) => run_simhash(&a),
        Cmd::Similar(a) => run_similar(&a),
    };
    std::process::exit(match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("webdedup: error: {e:#}");
            2
        }
    });
}
