//! Writing in input order: each chunk's journal record, then its outputs; a
//! file's outputs finished once its last chunk is written. Keeps the run's figures.

use super::config::RunConfig;
use super::order::{as_read, Job};
use super::outputs::{
    attributes_path, clusters_path, dd_path, dropped_path, finish_file, log_path, output_path,
    pairs_path, rel_bytes, same_compression, spans_path, write_prefix, Finish,
};
use super::worker::Worker;
use crate::progress::{Progress, RunProgress};
use crate::report::RunStats;
use crate::resume::encode_finished;
use anyhow::{anyhow, Context, Result};
use std::fs;
use webdedup_formats::chunk::Issue;
use webdedup_formats::input::InputFile;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::parquet::RowSlice;
use webdedup_formats::parquet_out::{ParquetOut, RowGroupOut};
use webdedup_formats::read::DocFormat;
use webdedup_store::{fault, Journal};

/// The main output of one input file, as its format is written.
pub(crate) enum MainOut {
    /// The rendered bytes of each chunk appended (verticals, JSON Lines, WET).
    Bytes(AtomicOutput),
    /// Encoded row groups appended, the footer written at the end.
    Parquet(ParquetOut<AtomicOutput>),
}

/// The open outputs of the file being written.
pub(crate) struct Outputs {
    main: MainOut,
    dd: Option<AtomicOutput>,
    dropped: Option<AtomicOutput>,
    attrs: Option<AtomicOutput>,
    clusters: Option<AtomicOutput>,
}

/// Writes outputs in input order and keeps the run's figures.
pub(crate) struct Writer<'a> {
    pub(crate) cfg: &'a RunConfig,
    pub(crate) journal: Option<&'a Journal>,
    /// With fsync, finished outputs go to a background thread, so that fsyncing a
    /// file does not hold up the writing of the next one.
    pub(crate) finisher: Option<crossbeam_channel::Sender<Finish>>,
    pub(crate) files: &'a [InputFile],
    /// By file: decided again but not written ([`Finished::Replay`]).
    pub(crate) replay: &'a [bool],
    /// Replayed files done.
    pub(crate) replayed: u64,
    pub(crate) report: &'a (dyn Fn(&str) + Sync),
    pub(crate) current: Option<Outputs>,
    pub(crate) issues_in_file: u64,
    pub(crate) stats: RunStats,
    pub(crate) progress: Option<&'a dyn Progress>,
    pub(crate) files_done: u64,
}

impl Writer<'_> {
    pub(crate) fn write(&mut self, job: &Job, w: &mut Worker) -> Result<()> {
        let file = &self.files[job.file];
        if self.replay[job.file] {
            // Its decisions went into the store; its finished output stays as it is.
            if job.chunk.as_ref().map_or(true, |c| c.last) {
                self.replayed += 1;
                self.tick();
            }
            return Ok(());
        }
        let chunk = match &job.chunk {
            Ok(c) => c,
            Err(e) => {
                (self.report)(&format!(
                    "{}: cannot read: {e}; no output written",
                    file.path.display()
                ));
                self.stats.files += 1;
                self.stats.files_unreadable += 1;
                self.tick();
                return Ok(());
            }
        };
        if job.first {
            if self.journal.is_some() {
                // An earlier run's output goes before this file's finish mark can be
                // journaled: an output a restore finds with a mark is then this
                // run's (the mark precedes the rename).
                for old in self.cfg.output_candidates(&file.rel) {
                    if old.exists() {
                        webdedup_store::journal::remove_durably(&old)
                            .with_context(|| format!("cannot replace {}", old.display()))?;
                    }
                }
            }
            let compress = self.cfg.output_compression(&file.rel, &job.format);
            let out = output_path(&self.cfg.output, &file.rel, compress);
            let dd_out = dd_path(&self.cfg.output, &file.rel);
            let dd = if self.cfg.dd {
                Some(
                    AtomicOutput::create(&dd_out, OutputCompression::None)
                        .with_context(|| format!("cannot create {}", dd_out.display()))?,
                )
            } else {
                None
            };
            let side = if self.cfg.options.minhash().is_some() {
                Some(pairs_path(&self.cfg.output, &file.rel))
            } else if self.cfg.options.feedback() && self.cfg.options.substr().is_some() {
                Some(spans_path(&self.cfg.output, &file.rel))
            } else if self.cfg.options.feedback() {
                Some(dropped_path(&self.cfg.output, &file.rel))
            } else {
                None
            };
            let dropped = if let Some(p) = side {
                Some(
                    AtomicOutput::create(&p, OutputCompression::None)
                        .with_context(|| format!("cannot create {}", p.display()))?,
                )
            } else {
                None
            };
            // Side files are never compressed.
            let side_file = |p: std::path::PathBuf| {
                AtomicOutput::create(&p, OutputCompression::None)
                    .with_context(|| format!("cannot create {}", p.display()))
            };
            let attrs = (self.cfg.mark)
                .then(|| side_file(attributes_path(&self.cfg.output, &file.rel)))
                .transpose()?;
            let clusters = (self.cfg.clusters && self.cfg.options.minhash().is_some())
                .then(|| side_file(clusters_path(&self.cfg.output, &file.rel)))
                .transpose()?;
            let created = |c| {
                AtomicOutput::create(&out, c)
                    .with_context(|| format!("cannot create {}", out.display()))
            };
            let main = match (&job.format, chunk.extra.get::<RowSlice>()) {
                (DocFormat::Parquet(_), Some(slice)) => MainOut::Parquet(
                    ParquetOut::create(created(OutputCompression::None)?, &slice.source)
                        .with_context(|| format!("cannot create {}", out.display()))?,
                ),
                // Each record is its own gzip member, compressed by the worker.
                (DocFormat::Wet { .. }, _) if compress == OutputCompression::Gzip => {
                    MainOut::Bytes(created(OutputCompression::None)?)
                }
                // `--mark` on an input whose output has its compression: the
                // output is the input file's bytes (copied, not compressed again).
                _ if self.cfg.mark
                    && as_read(job)
                    && !file.is_stdin()
                    && fs::metadata(&file.path).is_ok_and(|m| m.is_file())
                    && same_compression(job.compression, compress) =>
                {
                    match AtomicOutput::copy_of(&out, &file.path) {
                        Ok(copy) => MainOut::Bytes(copy),
                        // Written as read instead (that reports what is wrong).
                        Err(_) => MainOut::Bytes(created(compress)?),
                    }
                }
                _ => MainOut::Bytes(created(compress)?),
            };
            self.current = Some(Outputs {
                main,
                dd,
                dropped,
                attrs,
                clusters,
            });
            self.issues_in_file = 0;
        }
        // The chunk's keys and verdicts reach the journal in input order, before
        // its output (the journal is a prefix of the committed chunks).
        if let (Some(j), false) = (self.journal, w.record.is_empty()) {
            j.append_encoded(&w.record)
                .context("cannot write the journal")?;
        }
        self.report_issues(file, &job.format, &w.engine.plan.issues);
        let Outputs {
            main,
            dd,
            dropped,
            attrs,
            clusters,
        } = self
            .current
            .as_mut()
            .ok_or_else(|| anyhow!("internal: no open output for {}", file.path.display()))?;
        let written = match main {
            MainOut::Bytes(main) => {
                let bytes = if self.cfg.mark && as_read(job) {
                    &chunk.data
                } else {
                    &w.engine.rendered.out
                };
                // A copied input that is not read as it is (a line dropped as too
                // long, a read error): written as read after all, from the start.
                if main.is_copy() && (!chunk.skipped_lines.is_empty() || !chunk.issues.is_empty()) {
                    let compress = self.cfg.output_compression(&file.rel, &job.format);
                    let (path, len) = (main.path().to_owned(), main.bytes());
                    main.discard();
                    *main = write_prefix(file, &path, compress, len)?;
                }
                main.write_all(bytes)
                    .with_context(|| format!("cannot write {}", main.path().display()))?;
                bytes.len() as u64
            }
            MainOut::Parquet(p) => p
                .append(
                    w.engine
                        .rendered
                        .row_group
                        .take()
                        .unwrap_or(RowGroupOut::Empty),
                )
                .with_context(|| format!("cannot write the output of {}", file.path.display()))?,
        };
        if fault::armed() && fault::reached("output-bytes", written) {
            fault::crash("output-bytes");
        }
        if let Some(a) = attrs {
            a.write_all(&w.engine.rendered.attrs)
                .with_context(|| format!("cannot write {}", a.path().display()))?;
        }
        if let Some(dd) = dd {
            dd.write_all(&w.engine.rendered.dd)
                .with_context(|| format!("cannot write {}", dd.path().display()))?;
        }
        if let Some(d) = dropped {
            d.write_all(&w.engine.rendered.side)
                .with_context(|| format!("cannot write {}", d.path().display()))?;
        }
        if let Some(c) = clusters {
            c.write_all(&w.engine.rendered.clusters)
                .with_context(|| format!("cannot write {}", c.path().display()))?;
        }
        // Dropped lines were read too: "MB in" is the input's size.
        self.stats.bytes_in += chunk.data.len() as u64 + chunk.dropped_bytes;
        self.stats.bytes_out += written;
        self.stats.add_chunk(&w.engine.rendered.stats);
        if chunk.last {
            // The finish mark goes after the file's last record and before the sync
            // that precedes the rename: a finished output's records are then never
            // the journal's last one, which a restore may drop as torn.
            if let Some(j) = self.journal {
                let mut tag = Vec::new();
                encode_finished(rel_bytes(&file.rel), job.index + 1, &mut tag);
                j.append(&tag, &[]).context("cannot write the journal")?;
            }
            let Outputs {
                main,
                dd,
                dropped,
                attrs,
                clusters,
            } = self.current.take().expect("checked above");
            let main = match main {
                MainOut::Bytes(m) => m,
                MainOut::Parquet(p) => p.finish().with_context(|| {
                    format!("cannot finish the output of {}", file.path.display())
                })?,
            };
            let done = Finish {
                main,
                attrs,
                log: log_path(&self.cfg.output, &file.rel),
                dd,
                dropped,
                clusters,
            };
            match &self.finisher {
                Some(tx) => tx
                    .send(done)
                    .map_err(|_| anyhow!("internal: the output finisher stopped"))?,
                None => finish_file(done, self.journal, self.cfg.sync)?,
            }
            self.stats.files += 1;
            if self.issues_in_file > 0 {
                self.stats.files_with_issues += 1;
                let hidden = self
                    .issues_in_file
                    .saturating_sub(self.cfg.report_limit as u64);
                if hidden > 0 {
                    (self.report)(&format!(
                        "{}: {hidden} more input problems not shown",
                        file.path.display()
                    ));
                }
            }
            self.tick();
        } else {
            self.show_progress();
        }
        Ok(())
    }

    fn report_issues(&mut self, file: &InputFile, format: &DocFormat, issues: &[Issue]) {
        for issue in issues {
            *self
                .stats
                .issues
                .entry(issue.kind.name().to_string())
                .or_default() += 1;
            if self.issues_in_file < self.cfg.report_limit as u64 {
                // A line, a Parquet row, a WET record's offset.
                (self.report)(&format!(
                    "{}:{}{}: {}",
                    file.path.display(),
                    format.at(),
                    issue.line,
                    issue.kind
                ));
            }
            self.issues_in_file += 1;
        }
    }

    /// One more input file done.
    fn tick(&mut self) {
        self.files_done += 1;
        self.show_progress();
    }

    fn show_progress(&self) {
        if let Some(p) = self.progress {
            p.update(&RunProgress {
                files_done: self.files_done,
                files: self.files.len() as u64,
                bytes_in: self.stats.bytes_in,
                documents_kept: self.stats.documents_kept,
                documents_dropped: self.stats.documents_dropped,
            });
        }
    }
}
