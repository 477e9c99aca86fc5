//! The `webdedup simhash` and `webdedup similar` commands: their options and entry
//! points (the binary keeps the flags and turns them into these options).
//!
//! Exit codes: `Ok(0)` all input fine, `Ok(1)` some input was reported bad (and
//! skipped) but the rest was processed, `Err(_)` fatal (the binary exits with 2).

use crate::cluster::{Leader, Neighbours};
use crate::core::{parts, to_hex, to_signed};
use crate::fingerprints::{FpHeader, FP_HEADER_PREFIX};
use crate::index::FpIndex;
use crate::input::{read_items, Compression, FileInfo, InputFormat, ReadOptions};
use crate::item::Item;
use crate::tokenize::{Fingerprinter, Settings};
use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_formats::problems::Problems;
use webdedup_formats::read::FormatChoice;
use webdedup_formats::summary::{count, thousands, Outcome};

/// Options shared by both commands: how documents are read and fingerprinted.
/// The command line's flags (in the binary) become these; [`Default`] gives the
/// command line's defaults.
#[derive(Debug, Clone, Default)]
pub struct DocOptions {
    /// How files are read: the format (`auto`: sniffed from content), the fields
    /// of JSON Lines and Parquet, the line length limit (`--max-line-bytes`, as
    /// `webdedup dedup`'s).
    pub read: ReadOptions,
    /// How a text becomes a fingerprint: tokenizer, shingle size (1 to 64, see
    /// [`parse_shingle`]) and weights.
    pub settings: Settings,
    /// Worker threads (None: all cores).
    pub threads: Option<usize>,
    /// Do not print the per-line problem messages (they are still counted), nor
    /// the summary of [`run_simhash`] / [`run_similar`]. For library callers: the
    /// command line reports problems always and shows the summary itself.
    pub quiet: bool,
}

/// A shingle size as given on a command line (the same check as every header's).
pub use crate::tokenize::parse_shingle;

impl DocOptions {
    fn pool(&self) -> Result<rayon::ThreadPool> {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(n) = self.threads {
            b = b.num_threads(n.max(1));
        }
        b.build().context("starting worker threads")
    }
}

/// The layout of `simhash`'s output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FpFormat {
    /// `ID HEX SIGNED P1 P2 P3 P4` after a `# webdedup-simhash v1 SETTINGS` line.
    #[default]
    Tsv,
    /// The same columns with a header row.
    Csv,
    /// One JSON object per document.
    Jsonl,
}

/// `webdedup simhash`: one 64-bit SimHash per document.
#[derive(Debug, Clone, Default)]
pub struct SimhashOptions {
    /// Inputs: files, directories (searched recursively) or `-` (standard input).
    pub files: Vec<PathBuf>,
    /// How documents are read and fingerprinted.
    pub doc: DocOptions,
    /// Output layout.
    pub format: FpFormat,
    /// Output file (None: standard output); `.gz` / `.zst` names are compressed.
    pub output: Option<PathBuf>,
    /// TSV: leave out the `# webdedup-simhash` settings line.
    pub no_header: bool,
}

/// The largest Hamming distance `similar` searches within unless told otherwise.
pub const DEFAULT_MAX_DISTANCE: u32 = 3;

/// `webdedup similar`: near-duplicate pairs, clusters or a deduplicated copy.
#[derive(Debug, Clone)]
pub struct SimilarOptions {
    /// Inputs: fingerprint files written by `simhash`, or documents: files,
    /// directories or `-` (not with `dedup`).
    pub files: Vec<PathBuf>,
    /// Maximal Hamming distance of near-duplicates (at most [`crate::search::MAX_K`]).
    pub k: u32,
    /// How documents are read and fingerprinted.
    pub doc: DocOptions,
    /// Write clusters (`LEADER_ID MEMBER_ID DISTANCE`) instead of pairs.
    pub clusters: bool,
    /// Write the inputs back without their near-duplicates into `output_dir`.
    pub dedup: bool,
    /// Directory for the deduplicated inputs (needed by `dedup`).
    pub output_dir: Option<PathBuf>,
    /// Dedup report (None: OUTPUT_DIR/simhash-dropped.tsv).
    pub report: Option<PathBuf>,
    /// Persisted index the batch is checked against, then added to.
    pub index: Option<PathBuf>,
    /// With `index`: check only, do not add the batch.
    pub no_update: bool,
    /// Pairs or clusters output (None: standard output).
    pub output: Option<PathBuf>,
}

impl Default for SimilarOptions {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            k: DEFAULT_MAX_DISTANCE,
            doc: DocOptions::default(),
            clusters: false,
            dedup: false,
            output_dir: None,
            report: None,
            index: None,
            no_update: false,
            output: None,
        }
    }
}

/// A fingerprinted document.
#[derive(Clone, Debug)]
pub struct DocRec {
    pub id: String,
    pub fp: u64,
    pub file: u32,
    pub line: u64,
    /// Ordinal of the document among the file's documents (including unfingerprinted
    /// ones), for writing the file back.
    pub item: u32,
}

struct Pending {
    id: String,
    text: String,
    fp: Option<u64>,
    line: u64,
    item: u32,
}

const BATCH_BYTES: usize = 8 << 20;
const BATCH_DOCS: usize = 20_000;

/// Reads and fingerprints `files`, calling `emit` per fingerprinted document in
/// input order (a file's documents at once). Files are processed `threads` at a
/// time in parallel (and the documents of each file in parallel batches); results
/// are emitted in order. Empty
/// documents are reported and skipped. Returns one [`FileInfo`] per file.
fn fingerprint_files(
    accept_fingerprints: bool,
    files: &[PathBuf],
    ropts: &ReadOptions,
    settings: Settings,
    problems: &Problems,
    pool: &rayon::ThreadPool,
    mut emit: impl FnMut(Vec<DocRec>) -> Result<()>,
) -> Result<Vec<FileInfo>> {
    let mut infos = Vec::with_capacity(files.len());
    let window = pool.current_num_threads().max(1);
    let quiet = problems.quiet;
    for (w, chunk) in files.chunks(window).enumerate() {
        let results: Vec<(FileInfo, Vec<DocRec>, Problems)> = pool.install(|| {
            chunk
                .par_iter()
                .enumerate()
                .map(|(j, path)| {
                    let fi = (w * window + j) as u32;
                    let p = Problems::new(quiet);
                    let mut docs = Vec::new();
                    let info = fingerprint_file(
                        accept_fingerprints,
                        fi,
                        path,
                        ropts,
                        settings,
                        &p,
                        &mut docs,
                    );
                    (info, docs, p)
                })
                .collect()
        });
        for (info, docs, p) in results {
            problems.absorb(p);
            emit(docs)?;
            infos.push(info);
        }
    }
    Ok(infos)
}

/// The settings all fingerprints of a `similar` run were made with: fingerprint files
/// name theirs in their headers, documents are fingerprinted with the command line's.
/// A header this version cannot read (another format version, an unknown hash or
/// tokenizer) or other settings than the first input's are fatal: such fingerprints
/// are not comparable, and comparing them would give plausible-looking nonsense.
/// Fingerprint files without a header are taken as made with the run's settings.
fn common_settings(files: &[PathBuf], infos: &[FileInfo], cli: Settings) -> Result<Settings> {
    // The reference: the first input that says which settings it has.
    let mut reference: Option<(Settings, String)> = None;
    for (info, path) in infos.iter().zip(files) {
        if reference.is_some() {
            break;
        }
        if info.format == InputFormat::Fingerprints {
            reference = info.headers.iter().find_map(|(line, h)| match h {
                FpHeader::Known(s) => Some((*s, format!("{}:{line}", path.display()))),
                FpHeader::Unknown { .. } => None,
            });
        } else if info.opened {
            reference = Some((
                cli,
                format!(
                    "the documents of {}, fingerprinted with the command line's settings",
                    path.display()
                ),
            ));
        }
    }
    let (want, source) = reference.unwrap_or((cli, "the command line".into()));
    for (info, path) in infos.iter().zip(files) {
        if info.format != InputFormat::Fingerprints {
            if info.opened && cli != want {
                bail!(
                    "{}: documents are fingerprinted with the command line's settings {}, but this run \
                     compares fingerprints made with {want_s} ({source}): fingerprints of different \
                     settings cannot be compared (give the same --tokenizer/--shingle/--weights)",
                    path.display(),
                    cli.describe(),
                    want_s = want.describe(),
                );
            }
            continue;
        }
        for (line, header) in &info.headers {
            match header {
                FpHeader::Known(s) if *s == want => {}
                FpHeader::Known(s) => bail!(
                    "{}:{line}: fingerprints made with {}, but this run compares fingerprints made \
                     with {} ({source}): fingerprints of different settings cannot be compared (file refused)",
                    path.display(),
                    s.describe(),
                    want.describe(),
                ),
                FpHeader::Unknown { text, reason } => bail!(
                    "{}:{line}: the fingerprint header says '{}', which this version cannot \
                     read ({}); this run compares fingerprints made with {} ({source}): \
                     fingerprints of other settings cannot be compared (file refused; fingerprint \
                     the documents again with this version's `webdedup simhash`)",
                    path.display(),
                    // No terminal control bytes from the file (and no `\'` for
                    // the quotes a reason has).
                    webdedup_text::shown::escape_controls(text),
                    webdedup_text::shown::escape_controls(reason),
                    want.describe(),
                ),
            }
        }
    }
    Ok(want)
}

/// One file: its fingerprinted documents, in order, appended to `out`.
#[allow(clippy::too_many_arguments)]
fn fingerprint_file(
    accept_fingerprints: bool,
    fi: u32,
    path: &Path,
    ropts: &ReadOptions,
    settings: Settings,
    problems: &Problems,
    out: &mut Vec<DocRec>,
) -> FileInfo {
    let mut batch: Vec<Pending> = Vec::new();
    let mut bytes = 0usize;
    let mut item = 0u32;
    let flush = |batch: &mut Vec<Pending>, out: &mut Vec<DocRec>| {
        let fps: Vec<Option<u64>> = batch
            .par_iter()
            .map_init(
                || Fingerprinter::new(settings),
                |f, p| p.fp.or_else(|| f.fingerprint(&p.text)),
            )
            .collect();
        for (p, fp) in batch.drain(..).zip(fps) {
            match fp {
                Some(fp) => out.push(DocRec {
                    id: p.id,
                    fp,
                    file: fi,
                    line: p.line,
                    item: p.item,
                }),
                None => problems.report(
                    path,
                    Some(p.line),
                    "empty document: no tokens (not fingerprinted)",
                ),
            }
        }
    };
    let mut refused = false;
    let info = read_items(path, ropts, problems, |it| {
        if refused {
            return;
        }
        match it {
            Item::Doc { id, text, line, .. } => {
                bytes += text.len();
                batch.push(Pending {
                    id,
                    text: text.to_string(),
                    fp: None,
                    line,
                    item,
                });
                item += 1;
            }
            Item::Fingerprint { id, fp, line, .. } => {
                if !accept_fingerprints {
                    refused = true;
                    problems.report(
                        path,
                        Some(line),
                        "this is a fingerprint file (ID TAB 16 hex digits); `simhash` reads documents: \
                         use --input-format lines to fingerprint its lines (file skipped)",
                    );
                    return;
                }
                if batch.is_empty() {
                    // Nothing waits to be fingerprinted before it: straight out.
                    out.push(DocRec {
                        id,
                        fp,
                        file: fi,
                        line,
                        item,
                    });
                    item += 1;
                    return;
                }
                batch.push(Pending {
                    id,
                    text: String::new(),
                    fp: Some(fp),
                    line,
                    item,
                });
                item += 1;
            }
            Item::Other { .. } => return,
        }
        if bytes >= BATCH_BYTES || batch.len() >= BATCH_DOCS {
            flush(&mut batch, out);
            bytes = 0;
        }
    });
    flush(&mut batch, out);
    info
}

/// TSV fields cannot hold tabs or line breaks: they become spaces.
fn tsv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\t', '\n', '\r']) {
        s.replace(['\t', '\n', '\r'], " ").into()
    } else {
        s.into()
    }
}

fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// An output: a file written atomically (compressed by its suffix) or stdout.
// One per run: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum Out {
    File(AtomicOutput),
    Stdout(BufWriter<io::Stdout>),
}

impl Out {
    fn open(path: Option<&Path>) -> Result<Out> {
        Ok(match path {
            None => Out::Stdout(BufWriter::with_capacity(1 << 16, io::stdout())),
            Some(p) => {
                let name = p.to_string_lossy();
                let c = if name.ends_with(".gz") {
                    OutputCompression::Gzip
                } else if name.ends_with(".zst") {
                    OutputCompression::Zstd
                } else {
                    OutputCompression::None
                };
                Out::File(
                    AtomicOutput::create(p, c)
                        .with_context(|| format!("creating {}", p.display()))?,
                )
            }
        })
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Out::File(o) => o.write_all(b),
            Out::Stdout(w) => w.write_all(b),
        }
    }

    fn finish(self) -> Result<()> {
        match self {
            Out::File(o) => {
                let p = o.path().to_path_buf();
                o.finish(false)
                    .with_context(|| format!("writing {}", p.display()))
            }
            Out::Stdout(mut w) => w.flush().context("writing standard output"),
        }
    }
}

/// The files to read for the command line's inputs, through the one input layer
/// (`webdedup_formats::input`): directories searched recursively, `-` standard
/// input (where `stdin`), FIFOs and the like inside directories reported and
/// skipped. An input that cannot be listed (missing) is reported and skipped too:
/// the rest is processed.
fn expand_inputs(inputs: &[PathBuf], stdin: bool, problems: &Problems) -> Result<Vec<PathBuf>> {
    let opts = webdedup_formats::input::ListOptions {
        stdin,
        ..Default::default()
    };
    if inputs.iter().filter(|i| i.as_os_str() == "-").count() > 1 {
        bail!("standard input (-) is given more than once");
    }
    let mut files = Vec::new();
    for input in inputs {
        if input.as_os_str() != "-" {
            if let Err(e) = std::fs::metadata(input) {
                problems.report(input, None, format_args!("cannot open: {e}"));
                continue;
            }
        }
        let listing = webdedup_formats::input::list_inputs(std::slice::from_ref(input), &opts)?;
        for s in &listing.skipped {
            problems.report(&s.path, None, format_args!("{}: skipped", s.reason));
        }
        files.extend(listing.files.into_iter().map(|f| f.path));
    }
    Ok(files)
}

/// Runs `webdedup simhash` and prints its summary (unless `quiet`); returns the
/// exit code.
pub fn run_simhash(args: &SimhashOptions) -> Result<i32> {
    Ok(show_summary(simhash_outcome(args)?, args.doc.quiet))
}

/// Prints `o`'s summary unless `quiet`; its exit code.
fn show_summary(o: Outcome, quiet: bool) -> i32 {
    if !quiet {
        eprintln!("{}", o.summary());
    }
    o.status
}

/// Runs `webdedup simhash`; what it did is in the [`Outcome`].
pub fn simhash_outcome(args: &SimhashOptions) -> Result<Outcome> {
    let settings = args.doc.settings;
    let pool = args.doc.pool()?;
    let problems = Problems::new(args.doc.quiet);
    let files = expand_inputs(&args.files, true, &problems)?;
    let mut out = Out::open(args.output.as_deref())?;
    match args.format {
        FpFormat::Tsv if !args.no_header => {
            out.write_all(format!("{FP_HEADER_PREFIX}{}\n", settings.describe()).as_bytes())?
        }
        FpFormat::Csv => out.write_all(b"id,simhash,signed,part1,part2,part3,part4\n")?,
        _ => {}
    }
    let start = Instant::now();
    let mut n = 0u64;
    let mut line = String::new();
    let infos = fingerprint_files(
        false,
        &files,
        &args.doc.read,
        settings,
        &problems,
        &pool,
        |docs| {
            use std::fmt::Write as _;
            for d in docs {
                line.clear();
                let p = parts(d.fp);
                match args.format {
                    FpFormat::Tsv | FpFormat::Csv => {
                        let (sep, id) = match args.format {
                            FpFormat::Csv => (',', csv_field(&d.id)),
                            _ => ('\t', tsv_field(&d.id)),
                        };
                        let (hex, signed) = (to_hex(d.fp), to_signed(d.fp));
                        let _ = writeln!(
                            line,
                            "{id}{sep}{hex}{sep}{signed}{sep}{}{sep}{}{sep}{}{sep}{}",
                            p[0], p[1], p[2], p[3]
                        );
                    }
                    FpFormat::Jsonl => {
                        let v = serde_json::json!({"id": d.id, "simhash": to_hex(d.fp), "signed": to_signed(d.fp), "parts": p});
                        let _ = writeln!(line, "{v}");
                    }
                }
                n += 1;
                out.write_all(line.as_bytes())
                    .context("writing fingerprints")?;
            }
            Ok(())
        },
    )?;
    out.finish()?;
    let _ = infos;
    let secs = start.elapsed().as_secs_f64();
    let mut o = Outcome::new("simhash");
    o.count("files", files.len() as u64, "file", "files")
        .note(format!(
            "{} fingerprinted ({})",
            count(n, "document", "documents"),
            settings.describe()
        ))
        .figure("documents", n)
        .figure("settings", settings.describe())
        .count("problems", problems.count(), "problem", "problems")
        .figure("seconds", secs)
        .note(format!("{secs:.2} s"));
    o.status = i32::from(problems.count() > 0);
    Ok(o)
}

/// Runs `webdedup similar` and prints its summary (unless `quiet`); returns the
/// exit code.
pub fn run_similar(args: &SimilarOptions) -> Result<i32> {
    Ok(show_summary(similar_outcome(args)?, args.doc.quiet))
}

/// Runs `webdedup similar`; what it did is in the [`Outcome`].
pub fn similar_outcome(args: &SimilarOptions) -> Result<Outcome> {
    if args.k > crate::search::MAX_K {
        bail!(
            "a maximal distance of {} bits is more than this search handles ({})",
            args.k,
            crate::search::MAX_K
        );
    }
    if args.dedup && args.output_dir.is_none() {
        bail!("--dedup needs --output-dir (the directory for the deduplicated inputs)");
    }
    let pool = args.doc.pool()?;
    let problems = Problems::new(args.doc.quiet);
    // --dedup reads every input a second time: not standard input.
    let files = expand_inputs(&args.files, !args.dedup, &problems)?;
    let start = Instant::now();
    // Where each deduplicated copy goes, checked before anything is read or
    // written: the rule every command with one output per input follows.
    let out_paths = match (&args.dedup, &args.output_dir) {
        (true, Some(dir)) => webdedup_formats::output_plan::plan_outputs(&files, dir)?,
        _ => Vec::new(),
    };
    for (path, target) in files.iter().zip(&out_paths) {
        if target.exists() && target.canonicalize().ok() == path.canonicalize().ok() {
            bail!("--output-dir would overwrite the input {}", path.display());
        }
    }
    let settings_cli = args.doc.settings;
    let mut docs: Vec<DocRec> = Vec::new();
    let infos = fingerprint_files(
        true,
        &files,
        &args.doc.read,
        settings_cli,
        &problems,
        &pool,
        |mut file_docs| {
            if docs.is_empty() {
                docs = file_docs; // one file (the usual case): no copy
            } else {
                docs.append(&mut file_docs);
            }
            Ok(())
        },
    )?;
    let settings = common_settings(&files, &infos, settings_cli)?;

    let mut index = match &args.index {
        Some(dir) => {
            let mut ix = FpIndex::open_or_create(dir, settings)?;
            pool.install(|| ix.prepare(args.k));
            Some(ix)
        }
        None => None,
    };
    let nb = pool.install(|| {
        let fps: Vec<u64> = docs.par_iter().map(|d| d.fp).collect();
        Neighbours::build(
            &fps,
            args.k,
            index.as_ref().and_then(|ix| ix.view()).as_ref(),
        )
    });
    let assign = pool.install(|| nb.clusters());
    let id_of = |l: Leader| -> &str {
        match l {
            Leader::Batch(i) => &docs[i].id,
            Leader::Indexed(p) => &index.as_ref().expect("indexed leader without index").ids[p],
        }
    };
    let dropped = assign.iter().filter(|a| a.is_some()).count();
    let mut n_pairs = 0usize;

    if args.dedup {
        let dir = args
            .output_dir
            .as_deref()
            .context("--dedup needs --output-dir (the directory for the deduplicated inputs)")?;
        if let Some((path, _)) = files
            .iter()
            .zip(&infos)
            .find(|(_, i)| i.format == InputFormat::Documents(FormatChoice::Parquet))
        {
            // A Parquet row has no bytes of its own to copy: writing the file again
            // without some rows is `webdedup dedup`'s and `minhash`'s writer's job.
            bail!(
                "{}: --dedup writes verticals, JSON Lines, WET and text files; a Parquet \
                 file is rewritten by `webdedup minhash` (near-duplicate documents, same outputs \
                 for every format)",
                path.display()
            );
        }
        let report_path = args
            .report
            .clone()
            .unwrap_or_else(|| dir.join("simhash-dropped.tsv"));
        let mut report = Out::open(Some(&report_path))?;
        for (d, a) in docs.iter().zip(&assign) {
            if let Some((l, dist)) = a {
                let line = format!(
                    "{}\t{}\t{dist}\t{}\t{}\n",
                    tsv_field(&d.id),
                    tsv_field(id_of(*l)),
                    tsv_field(&files[d.file as usize].to_string_lossy()),
                    d.line
                );
                report.write_all(line.as_bytes())?;
            }
        }
        report.finish()?;
        write_dedup(&files, &out_paths, &args.doc.read, &docs, &assign, &infos)?;
    } else {
        let mut out = Out::open(args.output.as_deref())?;
        if args.clusters {
            let mut members: Vec<Vec<(usize, u32)>> = vec![Vec::new(); docs.len()];
            let mut idx_members: std::collections::BTreeMap<usize, Vec<(usize, u32)>> =
                Default::default();
            for (i, a) in assign.iter().enumerate() {
                match a {
                    Some((Leader::Batch(l), d)) => members[*l].push((i, *d)),
                    Some((Leader::Indexed(p), d)) => {
                        idx_members.entry(*p).or_default().push((i, *d))
                    }
                    None => {}
                }
            }
            let mut write_cluster = |leader: &str, m: &[(usize, u32)]| -> Result<()> {
                let mut s = format!("{}\t{}\t0\n", tsv_field(leader), tsv_field(leader));
                for &(i, d) in m {
                    s.push_str(&format!(
                        "{}\t{}\t{d}\n",
                        tsv_field(leader),
                        tsv_field(&docs[i].id)
                    ));
                }
                out.write_all(s.as_bytes())?;
                Ok(())
            };
            for (p, m) in &idx_members {
                write_cluster(id_of(Leader::Indexed(*p)), m)?;
            }
            for (l, m) in members.iter().enumerate() {
                if !m.is_empty() {
                    write_cluster(&docs[l].id, m)?;
                }
            }
        } else {
            let pairs = pool.install(|| nb.pairs());
            for (a, b, d) in pairs {
                n_pairs += 1;
                out.write_all(
                    format!("{}\t{}\t{d}\n", tsv_field(id_of(a)), tsv_field(id_of(b))).as_bytes(),
                )?;
            }
        }
        out.finish()?;
    }

    let mut indexed_before = 0;
    if let Some(ix) = index.as_mut() {
        indexed_before = ix.len();
        if !args.no_update {
            let kept: Vec<usize> = (0..docs.len()).filter(|&i| assign[i].is_none()).collect();
            let fps: Vec<u64> = kept.iter().map(|&i| docs[i].fp).collect();
            let ids: Vec<String> = kept.iter().map(|&i| docs[i].id.clone()).collect();
            ix.add(&fps, &ids);
            ix.save()?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let mut o = Outcome::new("similar");
    o.count("documents", docs.len() as u64, "document", "documents")
        .note(format!("k={}", args.k))
        .figure("k", args.k)
        .note(format!(
            "{} dropped/clustered",
            count(dropped as u64, "near-duplicate", "near-duplicates")
        ))
        .figure("near_duplicates", dropped as u64)
        .note(format!("{} kept", thousands((docs.len() - dropped) as u64)))
        .figure("kept", (docs.len() - dropped) as u64);
    if !args.dedup && !args.clusters {
        o.count("pairs", n_pairs as u64, "pair", "pairs");
    }
    if let Some(ix) = &index {
        o.note(format!(
            "index {} -> {}",
            thousands(indexed_before as u64),
            count(ix.len() as u64, "document", "documents")
        ))
        .figure("index_before", indexed_before as u64)
        .figure("index_after", ix.len() as u64);
    }
    o.count("problems", problems.count(), "problem", "problems")
        .figure("seconds", secs)
        .note(format!("{secs:.2} s"));
    o.status = i32::from(problems.count() > 0);
    Ok(o)
}

/// Second pass: copies every input to `dir` without its dropped documents.
fn write_dedup(
    files: &[PathBuf],
    targets: &[PathBuf],
    ropts: &ReadOptions,
    docs: &[DocRec],
    assign: &[Option<(Leader, u32)>],
    infos: &[FileInfo],
) -> Result<()> {
    let mut di = 0usize;
    for (fi, path) in files.iter().enumerate() {
        let info = &infos[fi];
        if !info.opened {
            continue;
        }
        let comp = match info.compression {
            Compression::None => OutputCompression::None,
            Compression::Gzip => OutputCompression::Gzip,
            Compression::Zstd => OutputCompression::Zstd,
        };
        let target = &targets[fi];
        let mut out = AtomicOutput::create(target, comp)
            .with_context(|| format!("creating {}", target.display()))?;
        let mut opts = ropts.clone();
        opts.format = info.format; // same reading as the first pass
        let mut item = 0u32;
        let mut err: io::Result<()> = Ok(());
        let quiet = Problems::quiet();
        read_items(path, &opts, &quiet, |it| {
            let (raw, is_doc) = match it {
                Item::Doc { raw, .. } | Item::Fingerprint { raw, .. } => (raw, true),
                Item::Other { raw } => (raw, false),
            };
            let mut keep = true;
            if is_doc {
                while di < docs.len() && (docs[di].file as usize) == fi && docs[di].item < item {
                    di += 1;
                }
                if di < docs.len() && docs[di].file as usize == fi && docs[di].item == item {
                    keep = assign[di].is_none();
                }
                item += 1;
            }
            if keep && err.is_ok() {
                err = out.write_all(raw);
            }
        });
        while di < docs.len() && docs[di].file as usize == fi {
            di += 1;
        }
        err.with_context(|| format!("writing {}", target.display()))?;
        out.finish(false)
            .with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(())
}
