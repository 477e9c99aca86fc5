//! A whole run of the mode as the command line and Python ask for it: the
//! choices checked, each input's outputs named (by the caller: `dedup`'s names),
//! the spans found, the outputs written.

use crate::rule::{Keep, Settings};
use crate::run::{find, write, FileOutputs, Found, Reading, Writing};
use crate::sarray::BYTES_PER_SHARD_BYTE;
use std::io;
use std::path::{Path, PathBuf};
use webdedup_formats::input::InputFile;
use webdedup_formats::output::OutputCompression;
use webdedup_formats::problems::Problems;

/// What a run is asked, as the command line's flags say it.
#[derive(Clone, Debug)]
pub struct Choices {
    /// `--length`: the shortest span struck, in bytes.
    pub length: usize,
    pub keep_first: bool,
    /// `--max-memory`: MB for the suffix arrays (None: one over the whole corpus).
    pub max_memory: Option<usize>,
    pub threads: usize,
    pub mark: bool,
    /// `-f`: the report of each span's first copy.
    pub feedback: bool,
    pub restore: bool,
}

impl Choices {
    /// The rule's settings, or why the choices are refused.
    pub fn settings(&self) -> Result<Settings, String> {
        if self.length == 0 {
            return Err("--length 0: the shortest span struck is at least 1 byte".into());
        }
        let shard_bytes = match self.max_memory {
            Some(0) => return Err("--max-memory 0: give the suffix arrays at least 1 MB".into()),
            Some(mb) => mb.saturating_mul(1 << 20) / BYTES_PER_SHARD_BYTE,
            None => usize::MAX,
        };
        let keep = if self.keep_first {
            Keep::First
        } else {
            Keep::None
        };
        Ok(Settings {
            length: self.length,
            keep,
            shard_bytes,
            threads: self.threads.max(1),
        })
    }
}

/// Which output of an input a name is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Main,
    Attributes,
    Report,
}

/// A run: its inputs, their outputs, its settings.
pub struct Job {
    pub files: Vec<PathBuf>,
    pub outputs: Vec<FileOutputs>,
    pub reading: Reading,
    pub settings: Settings,
    pub writing: Writing,
    pub feedback: bool,
}

impl Job {
    /// The run over `files` (listed by the input layer) with `choices`; `name`
    /// names an output of an input (by its relative path), `id` the input in
    /// reports (as `files.idx` will list it).
    pub fn new(
        files: &[InputFile],
        choices: &Choices,
        reading: Reading,
        name: &dyn Fn(&Path, Output) -> PathBuf,
        id: &dyn Fn(&Path) -> u64,
    ) -> Result<Job, String> {
        let outputs = files
            .iter()
            .map(|f| FileOutputs {
                main: name(&f.rel, Output::Main),
                attributes: choices.mark.then(|| name(&f.rel, Output::Attributes)),
                report: choices.feedback.then(|| name(&f.rel, Output::Report)),
            })
            .collect();
        Ok(Job {
            files: files.iter().map(|f| f.path.clone()).collect(),
            outputs,
            reading,
            settings: choices.settings()?,
            writing: Writing {
                compression: OutputCompression::None,
                mark: choices.mark,
                file_ids: files.iter().map(|f| id(&f.rel)).collect(),
                threads: choices.threads.max(1),
                restore: choices.restore,
            },
            feedback: choices.feedback,
        })
    }

    /// Finds the spans and writes the outputs; input problems go to `problems`.
    pub fn run(&self, problems: &Problems) -> io::Result<Found> {
        let found = find(
            &self.files,
            &self.reading,
            &self.settings,
            self.feedback,
            problems,
        )?;
        write(
            &self.files,
            &self.outputs,
            &self.reading,
            &found,
            &self.writing,
        )?;
        Ok(found)
    }
}
