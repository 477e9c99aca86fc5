//! The inputs of a command, taken one way by every command: positional paths,
//! with `-i/--input PATH...` as an alias (the older form of `dedup`, `minhash`,
//! `batch`, `check`, `status` and `warc dedup`). Both forms may be mixed on one
//! command line; the inputs keep the order they were given in, since the first
//! copy of a document is the one kept.

use clap::{Arg, ArgAction, ArgGroup, ArgMatches, Args, Command, FromArgMatches};
use std::path::PathBuf;

/// The positional inputs' argument id (for `mut_arg` in a command that words
/// their help for itself).
pub const INPUTS: &str = "inputs";
/// The `-i/--input` alias's argument id.
pub const INPUT_ALIAS: &str = "input";
/// The group of both (for `requires`).
const GIVEN: &str = "inputs_given";

/// Inputs, in the order given. `REQUIRED = false` for commands that work without
/// inputs too (`status -m MAP`, `cdx dates --merge`).
#[derive(Debug, Clone, Default)]
pub struct Inputs<const REQUIRED: bool = true> {
    pub paths: Vec<PathBuf>,
}

impl<const REQUIRED: bool> Inputs<REQUIRED> {
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

impl<const REQUIRED: bool> std::ops::Deref for Inputs<REQUIRED> {
    type Target = [PathBuf];
    fn deref(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl<const REQUIRED: bool> Args for Inputs<REQUIRED> {
    fn augment_args(cmd: Command) -> Command {
        let paths = |a: Arg| {
            a.value_name("PATH")
                .num_args(1..)
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
        };
        let positional = paths(Arg::new(INPUTS));
        // Not a required group: clap would show `<PATH|--input <PATH>...>` in the
        // usage line, and the older form stays out of the help.
        let positional = if REQUIRED {
            positional.required_unless_present(INPUT_ALIAS)
        } else {
            positional
        };
        cmd.arg(positional.help(
            "Inputs: files, directories (searched recursively, files in sorted \
             relative-path order) or `-` for standard input, read in the order given; \
             plain, gzip or zstd, detected by content",
        ))
        .arg(
            paths(Arg::new(INPUT_ALIAS))
                .short('i')
                .long("input")
                .help("The same as the positional inputs (the older form)")
                .hide(true),
        )
        .group(
            ArgGroup::new(GIVEN)
                .args([INPUTS, INPUT_ALIAS])
                .multiple(true),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<const REQUIRED: bool> FromArgMatches for Inputs<REQUIRED> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        // Each value with its position on the command line, so that
        // `a -i b c` reads a, b, c.
        let mut at: Vec<(usize, PathBuf)> = Vec::new();
        for id in [INPUTS, INPUT_ALIAS] {
            if let (Some(values), Some(indices)) = (m.get_many::<PathBuf>(id), m.indices_of(id)) {
                at.extend(indices.zip(values.cloned()));
            }
        }
        at.sort_by_key(|(i, _)| *i);
        Ok(Inputs {
            paths: at.into_iter().map(|(_, p)| p).collect(),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser, Debug)]
    struct Cmd {
        #[command(flatten)]
        inputs: Inputs,
    }

    fn parse(args: &[&str]) -> Result<Vec<String>, clap::Error> {
        use clap::Parser;
        let c = Cmd::try_parse_from(std::iter::once("cmd").chain(args.iter().copied()))?;
        Ok(c.inputs
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect())
    }

    #[test]
    fn positional_and_alias_mix_in_the_order_given() {
        assert_eq!(parse(&["a", "b"]).unwrap(), ["a", "b"]);
        assert_eq!(parse(&["-i", "a", "b"]).unwrap(), ["a", "b"]);
        assert_eq!(parse(&["a", "-i", "b", "c"]).unwrap(), ["a", "b", "c"]);
        assert_eq!(
            parse(&["-i", "a", "--input", "b", "c"]).unwrap(),
            ["a", "b", "c"]
        );
        assert_eq!(parse(&["--input=a", "b"]).unwrap(), ["a", "b"]);
    }

    #[test]
    fn inputs_are_required_unless_the_command_says_otherwise() {
        assert!(parse(&[]).is_err());
        #[derive(clap::Parser, Debug)]
        struct Optional {
            #[command(flatten)]
            inputs: Inputs<false>,
        }
        use clap::Parser;
        assert!(Optional::try_parse_from(["cmd"]).unwrap().inputs.is_empty());
    }
}
