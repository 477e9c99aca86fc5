//! Checks every command makes before it creates anything: the inputs named on the
//! command line exist, and an input directory holds something to do. Both failures
//! are usage errors (exit status 2), so a run that cannot start leaves no output
//! behind (`simhash nothere -o m.tsv` creates no `m.tsv`).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Each path exists (`-`, standard input, always does).
pub fn inputs_exist<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    for p in paths {
        if p.as_os_str() == "-" {
            continue;
        }
        std::fs::metadata(p).with_context(|| format!("cannot read input {}", p.display()))?;
    }
    Ok(())
}

/// Every input directory holds at least one input file, leaving out anything
/// under `output` (the command's output, when it writes one). Nothing to do is not
/// a success: a typo in a path, or a crawl not yet copied, must not pass for a
/// finished run. Files and `-` are inputs of their own and need no check.
pub fn has_input_files(inputs: &[PathBuf], output: Option<&Path>) -> Result<()> {
    for input in inputs {
        if input.as_os_str() == "-" || !input.is_dir() {
            continue;
        }
        let opts = webdedup_formats::input::ListOptions {
            exclude: output,
            ..Default::default()
        };
        let listing = webdedup_formats::input::list_inputs(std::slice::from_ref(input), &opts)
            .with_context(|| format!("cannot list input {}", input.display()))?;
        if listing.files.is_empty() {
            bail!("no input files in {}", input.display());
        }
    }
    Ok(())
}
