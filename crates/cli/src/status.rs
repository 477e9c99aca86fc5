//! `webdedup status` (the seed's `dedup_check.py`): are the servers of a map up,
//! and how far is a run over an input directory?

use crate::flags::inputs::{Inputs, INPUTS, INPUT_ALIAS};
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use webdedup_dedup::runner::{list_inputs, log_path, output_path};
use webdedup_formats::output::OutputCompression;
use webdedup_formats::summary::Outcome;
use webdedup_text::shown::escape_controls;

#[derive(Args, Debug)]
#[command(mut_arg(INPUTS, |a| a.help("The inputs of the run (files or directories, as given to `dedup`; with --output: count its finished outputs)").requires("output")), mut_arg(INPUT_ALIAS, |a| a.requires("output")))]
pub struct StatusArgs {
    /// The block map whose servers to ask.
    #[arg(short = 'm', long = "map", value_name = "FILE")]
    map: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) input: Inputs<false>,
    /// Output directory of the run (with its inputs: count finished outputs).
    #[arg(short = 'o', long, value_name = "DIR", requires = "inputs_given")]
    pub(crate) output: Option<PathBuf>,
    /// The servers' shared secret.
    #[arg(long, value_name = "FILE")]
    auth_token_file: Option<PathBuf>,
    // The findings as JSON (`--json -`: on standard output instead of the table).
    #[command(flatten)]
    json: crate::conventions::JsonOut,
}

#[derive(Default, serde::Serialize)]
struct FileCounts {
    total: usize,
    finished: usize,
    unfinished: usize,
    missing: usize,
}

fn files(input: &[PathBuf], output: &Path) -> Result<FileCounts> {
    let inputs = list_inputs(input, output)?.files;
    let mut c = FileCounts {
        total: inputs.len(),
        ..Default::default()
    };
    for f in &inputs {
        let outs: Vec<PathBuf> = [
            OutputCompression::None,
            OutputCompression::Gzip,
            OutputCompression::Zstd,
        ]
        .iter()
        .map(|&z| output_path(output, &f.rel, z))
        .collect();
        if log_path(output, &f.rel).exists() {
            c.unfinished += 1;
        } else if outs.iter().any(|o| o.exists()) {
            c.finished += 1;
        } else {
            c.missing += 1;
        }
    }
    Ok(c)
}

fn pct(n: usize, total: usize) -> f64 {
    crate::summaries::pct(n as u64, total as u64)
}

pub fn run(args: &StatusArgs) -> Result<u8> {
    if args.map.is_none() && args.input.is_empty() {
        anyhow::bail!(
            "give a block map (-m) and/or the run's inputs and output directory (PATH... -o DIR)"
        );
    }
    let mut wrong = false;
    let servers = match &args.map {
        Some(m) => {
            let map = webdedup_store::server_map::ServerMap::read(m)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let opts = webdedup_net::ClientOptions {
                secret: args
                    .auth_token_file
                    .as_deref()
                    .map(webdedup_net::auth::Secret::read)
                    .transpose()?,
                connect_timeout: std::time::Duration::from_secs(3),
                ..Default::default()
            };
            let reports = webdedup_net::status::probe(&map, &opts);
            wrong |= reports.iter().any(|r| !r.healthy() || r.note.is_some());
            reports
        }
        None => Vec::new(),
    };
    let counts = match (args.input.is_empty(), &args.output) {
        (false, Some(o)) => {
            let c = files(&args.input, o)?;
            wrong |= c.missing > 0 || c.unfinished > 0;
            Some(c)
        }
        _ => None,
    };
    // The findings as every command gives its figures: with the command and status.
    let mut outcome = Outcome::new("status");
    outcome
        .figure("servers", serde_json::to_value(&servers)?)
        .figure("files", serde_json::to_value(&counts)?)
        .figure("ok", !wrong);
    outcome.status = i32::from(wrong);
    args.json.write(&outcome.figures())?;
    // Written as a whole, so a closed pipe is one error (never a panic).
    let mut text = String::new();
    if !args.json.to_stdout() {
        if !servers.is_empty() {
            text += &format!(
                "{:<28} {:<10} {:>14} {:<8} NOTE\n",
                "SERVER", "STATE", "KEYS", "JOURNAL"
            );
            // Addresses come from the map file and notes from the network: their
            // control characters never reach the terminal raw.
            for r in &servers {
                text += &format!(
                    "{:<28} {:<10} {:>14} {:<8} {}\n",
                    escape_controls(&r.server),
                    escape_controls(&r.state),
                    r.keys.map_or("-".into(), |k| k.to_string()),
                    r.journal_present
                        .map_or("-", |j| if j { "present" } else { "none" }),
                    escape_controls(r.note.as_deref().unwrap_or(""))
                );
            }
        }
        if let Some(c) = &counts {
            text += &format!(
                "Files: {} total, {} finished ({:.1}%), {} unfinished ({:.1}%), {} missing ({:.1}%)\n",
                c.total,
                c.finished,
                pct(c.finished, c.total),
                c.unfinished,
                pct(c.unfinished, c.total),
                c.missing,
                pct(c.missing, c.total)
            );
        }
    }
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("cannot write to stdout")?;
    Ok(crate::conventions::exit_status(outcome.status))
}
