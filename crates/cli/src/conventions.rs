//! The conventions every subcommand follows (docs/cli.md), written once: the
//! shared options as flattened clap groups ([`Threads`], [`Reporting`]), the exit
//! statuses, the progress bar and where a run's summary and figures go. A command
//! flattens the groups it needs; it never defines `-t`, `-q`, `--progress` or
//! `--json` itself, so they cannot drift apart.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use webdedup_formats::summary::Outcome;

/// Exit status: everything read cleanly.
pub const EXIT_OK: u8 = 0;
/// Exit status: some input was rejected or repaired (reported on stderr); the rest
/// was processed.
pub const EXIT_INPUT_PROBLEMS: u8 = 1;
/// Exit status: the run could not be done (bad usage, a missing input, nothing to
/// do, an unwritable output, ...).
pub const EXIT_FATAL: u8 = 2;
/// Exit status: stopped before the end (by a signal: then 128 + its number);
/// finish with `--restore`.
pub const EXIT_STOPPED: u8 = 3;

/// `-t/--threads`: worker threads.
#[derive(Args, Debug, Clone, Default)]
pub struct Threads {
    /// Worker threads (default: all cores); the outputs are the same for any value.
    #[arg(short = 't', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
}

impl Threads {
    /// The number given, or the number of cores; at least 1.
    pub fn count(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1)
    }
}

/// `--progress`: when to draw a progress bar on stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ProgressWhen {
    /// When stderr is a terminal.
    #[default]
    Auto,
    /// Also when stderr is not a terminal (a log): a line a second.
    Always,
    /// Never.
    Never,
}

/// `-q/--quiet`, `--progress`, `--json`: what a run shows besides its outputs.
#[derive(Args, Debug, Clone, Default)]
pub struct Reporting {
    /// No progress bar and no summary (input problems are still reported, and the
    /// exit status still tells).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Progress bar on stderr: `auto` (when stderr is a terminal), `always` (into
    /// a log too: a line a second) or `never`.
    #[arg(long = "progress", value_enum, default_value_t = ProgressWhen::Auto, value_name = "WHEN")]
    pub progress: ProgressWhen,
    #[command(flatten)]
    pub json: JsonOut,
}

/// `--json FILE|-`: a run's figures (or a report's findings) as one JSON object.
#[derive(Args, Debug, Clone, Default)]
pub struct JsonOut {
    /// Write the run's figures as a JSON object to FILE (`-`: standard output, for
    /// commands whose output is not there).
    #[arg(long = "json", value_name = "FILE|-")]
    pub json: Option<PathBuf>,
}

impl JsonOut {
    /// Whether the JSON goes to standard output (`--json -`).
    pub fn to_stdout(&self) -> bool {
        self.json.as_deref().is_some_and(|p| p.as_os_str() == "-")
    }

    /// Writes `value` where `--json` says (nothing without it).
    pub fn write(&self, value: &serde_json::Value) -> Result<()> {
        let Some(path) = &self.json else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(value).context("cannot write JSON")? + "\n";
        if self.to_stdout() {
            std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .context("cannot write to stdout")
        } else {
            std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
        }
    }
}

impl Reporting {
    /// Whether to draw a progress bar.
    pub fn progress_bar(&self) -> bool {
        !self.quiet
            && match self.progress {
                ProgressWhen::Auto => std::io::stderr().is_terminal(),
                ProgressWhen::Always => true,
                ProgressWhen::Never => false,
            }
    }

    /// `--json -` where the command's output goes to standard output too would
    /// mix the two: refused before anything runs.
    pub fn check_json_target(&self, output_on_stdout: bool) -> Result<()> {
        if output_on_stdout && self.json_to_stdout() {
            bail!("--json - writes to standard output, where this command's output goes: give its output a file (-o FILE) or --json a FILE");
        }
        Ok(())
    }

    fn json_to_stdout(&self) -> bool {
        self.json.to_stdout()
    }

    /// Writes `value` where `--json` says (nothing without it).
    pub fn write_json(&self, value: &serde_json::Value) -> Result<()> {
        self.json.write(value)
    }

    /// Shows a library command's outcome: its summary on stderr (unless quiet),
    /// its figures where `--json` says. Returns its exit status.
    pub fn finish(&self, outcome: &Outcome) -> Result<u8> {
        if !self.quiet {
            line_to_stderr(&outcome.summary());
        }
        let mut figures = outcome.figures();
        if let Some(m) = figures.as_object_mut() {
            // The exact command (a store URL's password hidden), for a report.
            let argv: Vec<String> = std::env::args_os()
                .map(|a| webdedup_store_spec::redacted(&a.to_string_lossy()))
                .collect();
            m.insert("command_line".into(), argv.into());
        }
        self.write_json(&figures)?;
        Ok(exit_status(outcome.status))
    }

    /// Runs a library command under the conventions: `--json -` checked against
    /// `output_on_stdout`, a progress bar over `inputs` (read `passes` times)
    /// while it runs, then its outcome shown ([`Self::finish`]).
    pub fn run(
        &self,
        what: &str,
        inputs: &[PathBuf],
        passes: u64,
        output_on_stdout: bool,
        run: impl FnOnce() -> Result<Outcome>,
    ) -> Result<u8> {
        self.check_json_target(output_on_stdout)?;
        let outcome = {
            let _bar = self.bytes_progress(what, inputs, passes);
            run()?
        };
        self.finish(&outcome)
    }

    /// A progress bar over the bytes the input layer reads
    /// ([`webdedup_formats::input::bytes_read`]), `passes` times the inputs' sizes
    /// long (commands that read their inputs twice); hidden unless
    /// [`Self::progress_bar`]. It is cleared when the returned guard is dropped.
    pub fn bytes_progress(&self, what: &str, inputs: &[PathBuf], passes: u64) -> BytesProgress {
        if !self.progress_bar() {
            return BytesProgress::default();
        }
        let total: u64 = input_bytes(inputs) * passes.max(1);
        let target = if std::io::stderr().is_terminal() {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            // `--progress always` into a log: a line a second.
            indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(LogLines), 1)
        };
        let bar = indicatif::ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec}, ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(what.to_owned());
        let stop = Arc::new(AtomicBool::new(false));
        let start = webdedup_formats::input::bytes_read();
        let ticker = {
            let (bar, stop) = (bar.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let done = webdedup_formats::input::bytes_read() - start;
                    // A stream (standard input, a pipe) has no size: the bar grows.
                    if done > bar.length().unwrap_or(0) {
                        bar.set_length(done);
                    }
                    bar.set_position(done);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        BytesProgress {
            what: what.to_owned(),
            bar: Some(bar),
            stop,
            ticker: Some(ticker),
        }
    }
}

/// A progress bar drawn into a log (stderr not a terminal): each redraw one line,
/// no cursor movement.
#[derive(Debug)]
struct LogLines;

impl indicatif::TermLike for LogLines {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.write_str(s)
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        if s.trim().is_empty() {
            return Ok(());
        }
        line_to_stderr(s);
        Ok(())
    }
    fn clear_line(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Writes `s` and its newline to stderr in one write: stderr is unbuffered, and
/// `eprintln!` writes the text and the newline apart, so a line printed to stdout
/// by the same command (or a `head` after it) could land between them.
fn line_to_stderr(s: &str) {
    let mut line = String::with_capacity(s.len() + 1);
    line.push_str(s);
    line.push('\n');
    // Nothing better to do when stderr is gone.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The library crates' exit codes (0, 1) as a process status; anything else is fatal.
pub fn exit_status(code: i32) -> u8 {
    u8::try_from(code)
        .ok()
        .filter(|&c| c <= EXIT_INPUT_PROBLEMS)
        .unwrap_or(EXIT_FATAL)
}

/// The bytes of the files under `inputs` (directories searched; `-` and missing
/// inputs count 0).
fn input_bytes(inputs: &[PathBuf]) -> u64 {
    fn walk(p: &Path) -> u64 {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => std::fs::read_dir(p)
                .map(|d| d.flatten().map(|e| walk(&e.path())).sum())
                .unwrap_or(0),
            Ok(m) if m.is_file() => m.len(),
            _ => 0,
        }
    }
    inputs.iter().map(|p| walk(p)).sum()
}

/// The progress bar of a running command (see [`Reporting::bytes_progress`]).
#[derive(Debug, Default)]
pub struct BytesProgress {
    /// What the command is doing (the bar's message, before a run's figures).
    what: String,
    bar: Option<indicatif::ProgressBar>,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Drop for BytesProgress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The stream runner's figures after the bar's bytes: files done, documents
/// kept and dropped.
impl webdedup_dedup::Progress for BytesProgress {
    fn update(&self, at: &webdedup_dedup::RunProgress) {
        if let Some(b) = &self.bar {
            b.set_message(format!(
                "{}: {}/{} files, documents kept {} dropped {}",
                self.what, at.files_done, at.files, at.documents_kept, at.documents_dropped
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_codes_map_to_statuses() {
        assert_eq!(exit_status(0), EXIT_OK);
        assert_eq!(exit_status(1), EXIT_INPUT_PROBLEMS);
        assert_eq!(exit_status(7), EXIT_FATAL);
        assert_eq!(exit_status(-1), EXIT_FATAL);
    }

    #[test]
    fn json_to_stdout_is_refused_where_the_output_goes() {
        let r = Reporting {
            json: JsonOut {
                json: Some("-".into()),
            },
            ..Default::default()
        };
        assert!(r.check_json_target(true).is_err());
        assert!(r.check_json_target(false).is_ok());
        let f = Reporting {
            json: JsonOut {
                json: Some("stats.json".into()),
            },
            ..Default::default()
        };
        assert!(f.check_json_target(true).is_ok());
    }
}
