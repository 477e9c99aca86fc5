//! `webdedup to-jsonl` (hidden): verticals to JSON Lines by the shared corpus's
//! rules (`webdedup_formats::convert`), for samples and equivalence checks.

use crate::flags::inputs::Inputs;
use crate::{EXIT_INPUT_PROBLEMS, EXIT_OK};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use webdedup_formats::input::{list_inputs, open_file, Compression, ListOptions};
use webdedup_formats::output::{AtomicOutput, OutputCompression};

#[derive(Args, Debug)]
pub struct ToJsonlArgs {
    #[command(flatten)]
    pub(crate) input: Inputs,
    /// Output directory: `REL` with `.vert` made `.jsonl`, compressed as the input.
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
}

/// `cc/part-0.vert.gz` -> `cc/part-0.jsonl.gz`.
fn output_name(rel: &std::path::Path) -> PathBuf {
    let s = rel.to_string_lossy();
    let (stem, suffix) = match ["gz", "zst", "zstd"]
        .iter()
        .find_map(|c| s.strip_suffix(&format!(".{c}")).map(|st| (st, c)))
    {
        Some((st, c)) => (st.to_string(), format!(".{c}")),
        None => (s.to_string(), String::new()),
    };
    let stem = stem.strip_suffix(".vert").unwrap_or(&stem).to_string();
    PathBuf::from(format!("{stem}.jsonl{suffix}"))
}

pub fn run(args: &ToJsonlArgs) -> Result<u8> {
    let opts = ListOptions {
        exclude: Some(&args.output),
        ..Default::default()
    };
    let listing = list_inputs(&args.input.paths, &opts)?;
    let mut problems = !listing.skipped.is_empty();
    for s in &listing.skipped {
        eprintln!("{s}");
    }
    for f in &listing.files {
        let (reader, compression) =
            open_file(f, None).with_context(|| format!("cannot open {}", f.display()))?;
        let path = args.output.join(output_name(&f.rel));
        let mut out = AtomicOutput::create(
            &path,
            match compression {
                Compression::None => OutputCompression::None,
                Compression::Gzip => OutputCompression::Gzip,
                Compression::Zstd => OutputCompression::Zstd,
            },
        )
        .with_context(|| format!("cannot create {}", path.display()))?;
        let mut buf = Vec::new();
        let stats = webdedup_formats::convert::vertical_to_jsonl(reader, &mut buf)
            .with_context(|| format!("cannot convert {}", f.display()))?;
        for i in &stats.issues {
            eprintln!("{}:{}: {}", f.display(), i.line, i.kind);
        }
        problems |= !stats.issues.is_empty();
        out.write_all(&buf)
            .and_then(|_| out.finish(false))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(if problems {
        EXIT_INPUT_PROBLEMS
    } else {
        EXIT_OK
    })
}
