//! Where each input's output goes, for commands that write one output per input
//! file named on the command line (`warc dedup`, `similar --dedup`): the rule that
//! no two inputs ever share an output.
//!
//! The rule: an output keeps its input's file name (`OUT/crawl.warc.gz`). When two
//! inputs share a file name (`ca/crawl.warc.gz`, `cb/crawl.warc.gz`), every output
//! is named by its input's path below the inputs' deepest common directory
//! (`OUT/ca/crawl.warc.gz`, `OUT/cb/crawl.warc.gz`), so they are kept apart. An
//! input given twice (under any spelling of its path) would be written twice to
//! one place: that is refused, before anything is written, naming both and the
//! output. (`webdedup dedup` walks one input directory and keeps relative paths
//! already; it needs no plan.)

use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Why inputs cannot be given one output each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputPlanError {
    /// Two inputs would be written to one output.
    Collision {
        first: PathBuf,
        second: PathBuf,
        output: PathBuf,
        /// Whether the two are one file (the same path, or two paths to one file).
        same_file: bool,
    },
    /// An input path without a file name (`dir/..`): its output cannot be named.
    NoFileName(PathBuf),
}

impl fmt::Display for OutputPlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputPlanError::Collision {
                first,
                second,
                output,
                same_file,
            } => {
                write!(
                    f,
                    "inputs {} and {} would both be written to {}",
                    first.display(),
                    second.display(),
                    output.display()
                )?;
                if *same_file {
                    write!(f, " (the same file given twice: give it once)")?;
                }
                Ok(())
            }
            OutputPlanError::NoFileName(p) => write!(
                f,
                "{} has no file name to name its output after",
                p.display()
            ),
        }
    }
}

impl std::error::Error for OutputPlanError {}

/// The output path of every input under `out_dir` (see the module docs), in input
/// order, or the first collision.
pub fn plan_outputs(inputs: &[PathBuf], out_dir: &Path) -> Result<Vec<PathBuf>, OutputPlanError> {
    if let Some(p) = inputs.iter().find(|p| p.file_name().is_none()) {
        return Err(OutputPlanError::NoFileName(p.clone()));
    }
    // One file under two spellings (`x.warc`, `./x.warc`, a symlink): refused, as
    // its two outputs would only be copies of each other.
    let mut by_file: HashMap<PathBuf, &PathBuf> = HashMap::new();
    for input in inputs {
        let Ok(real) = std::fs::canonicalize(input) else {
            continue;
        };
        if let Some(first) = by_file.insert(real, input) {
            return Err(OutputPlanError::Collision {
                first: first.clone(),
                second: input.clone(),
                output: out_dir.join(file_name(input)),
                same_file: true,
            });
        }
    }
    let names: Vec<PathBuf> = inputs.iter().map(|p| PathBuf::from(file_name(p))).collect();
    let rels = if all_distinct(&names) {
        names
    } else {
        below_common_dir(inputs)
    };
    let mut seen: HashMap<&PathBuf, &PathBuf> = HashMap::new();
    for (rel, input) in rels.iter().zip(inputs) {
        if let Some(first) = seen.insert(rel, input) {
            return Err(OutputPlanError::Collision {
                first: first.clone(),
                second: input.clone(),
                output: out_dir.join(rel),
                same_file: lexical_absolute(first) == lexical_absolute(input),
            });
        }
    }
    Ok(rels.into_iter().map(|r| out_dir.join(r)).collect())
}

/// Checked first in [`plan_outputs`]: every input has one.
fn file_name(p: &Path) -> &std::ffi::OsStr {
    p.file_name().unwrap_or_default()
}

fn all_distinct(names: &[PathBuf]) -> bool {
    let mut sorted: Vec<&PathBuf> = names.iter().collect();
    sorted.sort();
    sorted.windows(2).all(|w| w[0] != w[1])
}

/// `p` made absolute, with `.` dropped and `..` taken back lexically: how the user
/// spelled it, so outputs mirror the paths they gave (symlinks are not followed).
fn lexical_absolute(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Each input's path below the deepest directory common to all inputs. Distinct
/// paths give distinct results, since one prefix is removed from all.
fn below_common_dir(inputs: &[PathBuf]) -> Vec<PathBuf> {
    let abs: Vec<PathBuf> = inputs.iter().map(|p| lexical_absolute(p)).collect();
    let parents: Vec<Vec<Component>> = abs
        .iter()
        .map(|p| {
            p.parent()
                .map(|d| d.components().collect())
                .unwrap_or_default()
        })
        .collect();
    let mut common = parents.first().map_or(0, |d| d.len());
    for d in &parents[1..] {
        common = common.min(
            d.iter()
                .zip(&parents[0])
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    abs.iter()
        .map(|p| p.components().skip(common).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn distinct_names_keep_their_names() {
        let got = plan_outputs(&paths(&["a/x.warc.gz", "b/y.warc.gz"]), Path::new("out")).unwrap();
        assert_eq!(got, paths(&["out/x.warc.gz", "out/y.warc.gz"]));
    }

    #[test]
    fn shared_names_are_kept_apart_by_their_paths() {
        let got = plan_outputs(
            &paths(&[
                "crawls/ca/crawl.warc.gz",
                "crawls/cb/crawl.warc.gz",
                "crawls/z.warc",
            ]),
            Path::new("out"),
        )
        .unwrap();
        assert_eq!(
            got,
            paths(&["out/ca/crawl.warc.gz", "out/cb/crawl.warc.gz", "out/z.warc"])
        );
        // `..` and `.` are taken back, so the names stay below the output directory.
        let got = plan_outputs(
            &paths(&["./ca/../ca/crawl.warc.gz", "../x/cb/crawl.warc.gz"]),
            Path::new("out"),
        )
        .unwrap();
        assert!(got
            .iter()
            .all(|p| p.components().all(|c| matches!(c, Component::Normal(_)))));
        assert_ne!(got[0], got[1]);
    }

    #[test]
    fn a_path_given_twice_is_refused_naming_both_and_the_output() {
        let e = plan_outputs(
            &paths(&["ca/crawl.warc.gz", "ca/crawl.warc.gz"]),
            Path::new("out"),
        )
        .unwrap_err();
        assert!(matches!(
            e,
            OutputPlanError::Collision {
                same_file: true,
                ..
            }
        ));
        let msg = e.to_string();
        assert_eq!(
            msg,
            "inputs ca/crawl.warc.gz and ca/crawl.warc.gz would both be written to \
             out/crawl.warc.gz (the same file given twice: give it once)"
        );
    }

    #[test]
    fn one_file_under_two_spellings_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.warc");
        std::fs::write(&f, b"").unwrap();
        let other = dir.path().join(".").join("x.warc");
        let e = plan_outputs(&[f.clone(), other.clone()], Path::new("out")).unwrap_err();
        assert_eq!(
            e,
            OutputPlanError::Collision {
                first: f,
                second: other,
                output: PathBuf::from("out/x.warc"),
                same_file: true
            }
        );
    }

    #[test]
    fn an_input_without_a_file_name_is_refused() {
        let e = plan_outputs(&paths(&["a/x", "c/.."]), Path::new("out")).unwrap_err();
        assert_eq!(e, OutputPlanError::NoFileName(PathBuf::from("c/..")));
    }
}
