//! `webdedup distribute` (the seed's `distribute`, section 2.3): writes a block map.

use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use webdedup_store::distribute::{balanced, remainder, report};
use webdedup_store::server_map::{read_servers_file, ServerMap};

#[derive(Args, Debug)]
pub struct DistributeArgs {
    /// Servers file: one `host[:port]` a line, optionally followed by a weight.
    #[arg(short = 's', long = "servers", value_name = "FILE")]
    servers: Option<PathBuf>,
    /// The map in use now (its servers are used when -s is not given).
    #[arg(short = 'i', long = "input", value_name = "FILE")]
    input: Option<PathBuf>,
    /// Where to write the new map (default: standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Blocks of the key space (fixed once a map is used).
    #[arg(short = 'b', long = "blocks", value_name = "N")]
    blocks: Option<u32>,
    /// No optimisation after the remainder rule (fewest moves, uneven loads).
    #[arg(long, short_alias = 'q')]
    quick: bool,
    /// A fresh distribution, ignoring the current assignment.
    #[arg(long, short_alias = 'f')]
    full: bool,
    /// Servers file of servers to take out (they hand their blocks over).
    #[arg(short = 'E', long = "exclude", value_name = "FILE")]
    exclude: Option<PathBuf>,
    /// Fewest moves with every server within one block of its (weighted) ideal.
    #[arg(long, conflicts_with_all = ["quick", "full"])]
    balanced: bool,
    /// Write the KNOT clients' layout instead of the readable one.
    #[arg(long)]
    knot: bool,
    /// Print the report only.
    #[arg(long = "dry-run", short_alias = 'd')]
    dry_run: bool,
}

pub fn run(args: &DistributeArgs) -> Result<u8> {
    let prev = args
        .input
        .as_deref()
        .map(ServerMap::read)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let blocks = match (&prev, args.blocks) {
        (Some(p), Some(b)) if p.blocks != b => {
            bail!(
                "{} has {} blocks, not {b}: blocks are fixed once used",
                args.input.as_ref().unwrap().display(),
                p.blocks
            )
        }
        (Some(p), _) => p.blocks,
        (None, b) => b.unwrap_or(webdedup_store::DEFAULT_BLOCKS),
    };
    if blocks == 0 {
        bail!("--blocks must be at least 1");
    }
    let servers = match (&args.servers, &prev) {
        (Some(f), _) => read_servers_file(f).map_err(|e| anyhow::anyhow!("{e}"))?,
        (None, Some(p)) => p.servers.clone(),
        (None, None) => bail!("give a servers file (-s) or the map in use (-i)"),
    };
    let excluded: Vec<_> = match &args.exclude {
        Some(f) => read_servers_file(f)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .into_iter()
            .map(|e| e.addr)
            .collect(),
        None => Vec::new(),
    };
    let next = if args.balanced {
        balanced(prev.as_ref(), &servers, &excluded, blocks)
    } else {
        remainder(
            prev.as_ref(),
            &servers,
            &excluded,
            blocks,
            args.quick,
            args.full,
        )
    }
    .map_err(|e| anyhow::anyhow!(e))?;
    // Before the report: a map that cannot be written is refused first.
    let text = if args.knot {
        next.to_knot_text().map_err(anyhow::Error::msg)?
    } else {
        next.to_text()
    };
    // The report goes to stderr: the seed sends the map to stdout.
    eprint!("{}", report(prev.as_ref(), &next));
    if args.dry_run {
        return Ok(crate::EXIT_OK);
    }
    match &args.output {
        Some(f) => {
            std::fs::write(f, text).with_context(|| format!("cannot write {}", f.display()))?
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write to stdout")?,
    }
    Ok(crate::EXIT_OK)
}
