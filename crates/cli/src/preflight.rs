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
/// under `output`. Nothing to do is not a success: a typo in a path, or a crawl not
/// yet copied, must not pass for a finished run.
pub fn has_input_files(inputs: &[PathBuf], output: &Path) -> Result<()> {
    for input in inputs {
        let listing = webdedup_dedup::runner::list_inputs(std::slice::from_ref(input), output)
            .with_context(|| format!("cannot list input {}", input.display()))?;
        if listing.files.is_empty() {
            bail!("no input files in {}", input.display());
        }
    }
    Ok(())
}
