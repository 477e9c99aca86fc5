//! The archive commands' inputs through the one input layer
//! (`webdedup_formats::input`): directories searched recursively where a command
//! reads a stream of files, FIFOs and the like inside them reported and skipped.

use crate::util::Report;
use std::path::PathBuf;
use webdedup_formats::input::{list_inputs, ListOptions};

/// The files to read for `inputs`. `dirs`: directories are searched (else a
/// directory is an error saying that the command reads files); `stdin`: `-` is
/// standard input (else an error). A missing input stays in the list: opening it
/// reports it as bad input, and the rest is processed.
pub fn expand(
    inputs: &[PathBuf],
    dirs: bool,
    stdin: bool,
    report: &mut Report,
) -> anyhow::Result<Vec<PathBuf>> {
    let opts = ListOptions {
        dirs,
        stdin,
        exclude: None,
    };
    let mut files = Vec::with_capacity(inputs.len());
    for input in inputs {
        if input.as_os_str() != "-" && std::fs::metadata(input).is_err() {
            files.push(input.clone());
            continue;
        }
        let listing = list_inputs(std::slice::from_ref(input), &opts)?;
        for s in &listing.skipped {
            report.bad(s.path.display(), format_args!("{}: skipped", s.reason));
        }
        files.extend(listing.files.into_iter().map(|f| f.path));
    }
    Ok(files)
}
