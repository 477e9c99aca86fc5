//! `webdedup dedup`.

use crate::conventions::{Reporting, Threads};
use crate::flags::defs::{
    BlocksFlag, ChunkBytesFlag, FeedbackFlag, MarkFlag, MaxLineBytesFlag, NearShapeFlags,
    NormalizeFlag, OutputFlags, PiecesFlags, SubstrFlag, MINHASH_PINS_NORMALIZATION,
    SUBSTR_PINS_NORMALIZATION,
};
use crate::flags::inputs::Inputs;
use crate::read_args::ReadArgs;
use crate::{EXIT_INPUT_PROBLEMS, EXIT_STOPPED};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use webdedup_dedup::Persistence;
use webdedup_dedup::{NearRules, PolicyChoices, RunConfig, RunState};
use webdedup_store::SyncMode;
use webdedup_store_spec::StoreSpec;
use webdedup_text::shown::escape_controls;

#[derive(Args, Debug)]
#[command(mut_arg("substr", |a| a.conflicts_with("near")))]
pub struct DedupArgs {
    #[command(flatten)]
    pub(crate) input: Inputs,
    #[command(flatten)]
    pub(crate) out: OutputFlags,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    normalize: NormalizeFlag,
    #[command(flatten)]
    pieces: PiecesFlags,
    #[command(flatten)]
    report: Reporting,
    #[command(flatten)]
    blocks: BlocksFlag,
    /// The number of keys expected: the embedded store preallocates room for them;
    /// a new Redis key set is laid out for them (default about 1,048,576 keys; the
    /// layout is then fixed, and later runs without --capacity adopt it).
    #[arg(long, value_name = "N")]
    capacity: Option<usize>,
    /// Input problems printed per file; the rest are counted in the summary.
    #[arg(long, default_value_t = webdedup_dedup::options::DEFAULT_REPORT_LIMIT, value_name = "N")]
    report_limit: usize,
    #[command(flatten)]
    chunk_bytes: ChunkBytesFlag,
    #[command(flatten)]
    max_line_bytes: MaxLineBytesFlag,
    /// Keep the store in DIR between runs: load `DIR/store.snap` if present,
    /// journal to `DIR/journal` while running, save at the end. Or a Redis / Valkey
    /// URL, `redis://HOST:PORT[,HOST:PORT...]` (`valkey://`, `rediss://` for TLS):
    /// the key set then lives there (single node or Cluster).
    #[arg(long, value_name = "DIR|URL")]
    store: Option<PathBuf>,
    /// A file holding the Redis / Valkey password (first line).
    #[arg(long, value_name = "FILE")]
    store_password_file: Option<PathBuf>,
    /// Ask the hash servers of block map MAP (`webdedup server`, `webdedup
    /// distribute`) instead of keeping the keys in this process.
    #[arg(
        short = 's',
        long = "servers",
        value_name = "MAP",
        conflicts_with = "store"
    )]
    servers: Option<PathBuf>,
    /// The servers' shared secret (first line of FILE).
    #[arg(long, value_name = "FILE", requires = "servers")]
    auth_token_file: Option<PathBuf>,
    /// Give up on a server that stays unreachable this many seconds.
    #[arg(long, default_value_t = webdedup_net::client::DEFAULT_GIVE_UP_AFTER.as_secs(), value_name = "SECONDS")]
    server_timeout: u64,
    /// Finish an interrupted run (same command plus `-r`): finished outputs are
    /// skipped, unfinished ones redone with the decisions already taken.
    #[arg(short = 'r', long)]
    restore: bool,
    /// Durability of the journal and outputs: `always` (fsync every journal
    /// record), `batch` (group commit within 50 ms; outputs and snapshot fsynced),
    /// `off` (no fsync: survives a killed process, not a power failure).
    /// `--fsync` alone means `always`.
    #[arg(long, value_name = "MODE", default_value = "batch", num_args = 0..=1, default_missing_value = "always")]
    fsync: SyncMode,
    /// Near-duplicate paragraphs too (onion's method): a long paragraph is dropped
    /// when more than --threshold of its tokens are covered by word n-grams seen
    /// before.
    #[arg(short = 'n', long)]
    near: bool,
    #[command(flatten)]
    near_shape: NearShapeFlags,
    /// Also drop short runs of kept paragraphs between dropped ones (near mode).
    #[arg(long, requires = "near")]
    smooth: bool,
    /// Longest run, in tokens, that smoothing drops (default 20; with --smooth or
    /// --near-rules onion).
    #[arg(long, value_name = "TOKENS")]
    max_stub: Option<usize>,
    /// Whose near-mode rules: `webdedup` (ours) or `onion` (onion 1.2's exact
    /// decisions: tokens as written, every paragraph judged by n-grams alone, its
    /// smoothing on unless --no-smooth).
    #[arg(
        long,
        default_value_t = NearRules::default(),
        value_name = "RULES",
        requires = "near"
    )]
    near_rules: NearRules,
    /// No smoothing with --near-rules onion (onion's -m).
    #[arg(long, conflicts_with = "smooth")]
    no_smooth: bool,
    /// Drop documents whose URL matches a rule of FILE (status U), before any
    /// store request. One rule a line: URL, `host:H`, `domain:D`, `prefix:P`, `re:REGEX`.
    #[arg(long = "url-filter", value_name = "FILE")]
    url_filter: Option<PathBuf>,
    #[command(flatten)]
    feedback_flag: FeedbackFlag,
    #[command(flatten)]
    substr_flag: SubstrFlag,
    #[command(flatten)]
    mark_flag: MarkFlag,
    #[command(flatten)]
    read: ReadArgs,
}

pub fn run(args: &DedupArgs) -> Result<u8> {
    run_mode(args, None, false)
}

/// `dedup`, or with `minhash` set, `webdedup minhash` (the same inputs, stores,
/// outputs, restore and exit statuses; see `crate::minhash`).
pub(crate) fn run_mode(
    args: &DedupArgs,
    minhash: Option<webdedup_dedup::options::MinHashOptions>,
    clusters: bool,
) -> Result<u8> {
    let minhash_mode = minhash.is_some();
    if minhash_mode {
        if args.near
            || args.feedback_flag.feedback
            || args.substr_flag.substr.is_some()
            || args.read.wikilinks()
        {
            anyhow::bail!("minhash judges whole documents: -n/--near, -f/--feedback, --substr and --format wikilinks do not apply");
        }
        args.normalize.refuse_for(MINHASH_PINS_NORMALIZATION)?;
        if args
            .store
            .as_deref()
            .and_then(|s| s.to_str())
            .is_some_and(StoreSpec::is_engine_url)
        {
            anyhow::bail!("minhash needs the location of each band key's first document (to name originals and verify them), which the Redis / Valkey backend does not keep; use the embedded store (--store DIR) or the hash servers (-s MAP)");
        }
    }
    if args.substr_flag.substr.is_some() {
        args.normalize.refuse_for(SUBSTR_PINS_NORMALIZATION)?;
    }
    if args.blocks.blocks == 0 {
        anyhow::bail!("--blocks must be at least 1");
    }
    // Defaults, limits and the rules between the policy options: one library
    // function, the one the Python module calls.
    let mut options = PolicyChoices {
        normalization: Some(args.normalize.normalization),
        min_para_chars: Some(args.pieces.min_para_chars),
        doc_check: Some(args.pieces.doc_check),
        near: args.near,
        ngram: Some(args.near_shape.ngram),
        threshold: Some(args.near_shape.threshold),
        smooth: args.smooth,
        max_stub: args.max_stub,
        near_rules: Some(args.near_rules),
        no_smooth: args.no_smooth,
        feedback: args.feedback_flag.feedback,
    }
    .options()
    .map_err(anyhow::Error::msg)?;
    let mut input_problems = false;
    let url_filter = match &args.url_filter {
        None => None,
        Some(path) => {
            let (filter, problems) = webdedup_dedup::UrlFilter::load(path)
                .with_context(|| format!("cannot read URL filter {}", path.display()))?;
            for p in &problems {
                eprintln!("{}", escape_controls(p));
            }
            input_problems |= !problems.is_empty();
            Some(Arc::new(filter))
        }
    };
    let threads = args.threads.count();
    let cfg = RunConfig {
        inputs: args.input.paths.clone(),
        output: args.out.output.clone(),
        threads,
        options: {
            options.url_filter = url_filter;
            if let Some(m) = minhash {
                options.mode = webdedup_dedup::options::Mode::MinHash(m);
            }
            if let Some(p) = args.substr_flag.substr {
                options.mode = webdedup_dedup::options::Mode::Substr {
                    params: p,
                    feedback: args.feedback_flag.feedback,
                };
            }
            options
        },
        read: args.read.settings()?,
        dd: args.out.dd,
        compress: args.out.compress.fixed,
        compress_auto: args.out.compress.auto,
        report_limit: args.report_limit,
        chunk_bytes: args.chunk_bytes.get(),
        max_line_bytes: args.max_line_bytes.get(),
        sync: args.fsync != SyncMode::Off,
        mark: args.mark_flag.mark,
        clusters,
    };
    let persistence = Persistence {
        store_dir: args.store.clone(),
        restore: args.restore,
        fsync: args.fsync,
        blocks: args.blocks.blocks,
        capacity: args.capacity.unwrap_or(0),
    };
    // SIGTERM, SIGINT, SIGHUP: stop reading, finish what is in flight, save. A second
    // one exits at once (the journal still allows --restore). SIGPIPE is ignored by
    // the Rust runtime already (writes then fail with an error instead).
    let stop = Arc::new(AtomicBool::new(false));
    let which = Arc::new(AtomicUsize::new(0));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, stop.clone())
            .context("cannot install a signal handler")?;
        signal_hook::flag::register(sig, stop.clone())
            .context("cannot install a signal handler")?;
        signal_hook::flag::register_usize(sig, which.clone(), sig as usize)
            .context("cannot install a signal handler")?;
    }
    // Problem lines name input files and may quote input: never raw control bytes.
    let report = |line: &str| eprintln!("{}", escape_controls(line));
    if args.read.wikilinks() {
        return run_wikilinks(args, &cfg, &report, input_problems);
    }
    // The store identity of these options (the one function every store kind and
    // front door uses): a store of other keys is refused, whichever it is.
    let keys = webdedup_dedup::identity::key_set(&cfg.options, args.blocks.blocks);
    let capacity = args.capacity.map(|c| c as u64);
    let engine = args
        .store
        .as_deref()
        .filter(|s| s.to_str().is_some_and(StoreSpec::is_engine_url));
    // The run's own state, and the progress bar it is shown on (both gone before
    // the summary is printed).
    let what = if cfg.options.minhash().is_some() {
        "minhash"
    } else {
        "dedup"
    };
    let bar = Arc::new(args.report.bytes_progress(what, &args.input, 1));
    let state = RunState::new(&cfg.options).with_progress(bar.clone());
    let (stats, persisted) = if let Some(map) = &args.servers {
        let spec = StoreSpec::Servers {
            map: map.clone(),
            token_file: args.auth_token_file.clone(),
            give_up_after: std::time::Duration::from_secs(args.server_timeout),
        };
        let open = |salt| {
            // Before the worker's own connections: a server may have a single slot.
            crate::remote::check_server_ids(
                &args.out.output,
                map,
                args.auth_token_file.as_deref(),
                std::time::Duration::from_secs(args.server_timeout),
                args.restore,
            )?;
            crate::remote::open(&spec, &keys, capacity, salt)
        };
        (
            run_on_external(args, &cfg, &state, &stop, &report, open)?,
            Default::default(),
        )
    } else if let Some(url) = engine {
        if args.feedback_flag.feedback {
            anyhow::bail!("feedback mode (-f) needs first-seen locations, which Redis does not keep; use the embedded store or the hash servers");
        }
        let spec = StoreSpec::from_store_arg(
            url,
            crate::remote::read_password(args.store_password_file.as_deref())?,
        );
        let open = |salt| crate::remote::open(&spec, &keys, capacity, salt);
        (
            run_on_external(args, &cfg, &state, &stop, &report, open)?,
            Default::default(),
        )
    } else {
        webdedup_dedup::run_persistent(&cfg, &persistence, &state, Some(&stop), &report)?
    };
    drop((state, bar));
    // A Redis URL's password never reaches the figures.
    let store = args
        .store
        .as_ref()
        .map(|d| webdedup_store_spec::redacted(&d.display().to_string()));
    let command = if minhash_mode { "minhash" } else { "dedup" };
    let mut outcome =
        crate::summaries::run_outcome(command, &stats, &persisted, store, cfg.options.minhash())?;
    let side_files = minhash_mode || args.out.dd || args.feedback_flag.feedback;
    crate::summaries::see_report(
        &mut outcome,
        &args.out.output,
        &args.report.json,
        side_files,
    );
    if input_problems {
        outcome.status = i32::from(EXIT_INPUT_PROBLEMS);
    }
    let code = args.report.finish(&outcome)?;
    if stats.interrupted {
        let sig = which.load(Ordering::SeqCst);
        eprintln!(
            "webdedup: stopped by a signal with unfinished outputs{}; finish with the same command plus --restore",
            if persisted.logs_written > 0 {
                format!(" ({} decision logs written)", persisted.logs_written)
            } else {
                String::new()
            }
        );
        return Ok(if sig > 0 {
            (128 + sig) as u8
        } else {
            EXIT_STOPPED
        });
    }
    Ok(code)
}

/// `--format wikilinks`: rows through the embedded store, one thread.
fn run_wikilinks(
    args: &DedupArgs,
    cfg: &RunConfig,
    report: &(dyn Fn(&str) + Sync),
    input_problems: bool,
) -> Result<u8> {
    if args.store.is_some() || args.restore {
        anyhow::bail!(
            "--format wikilinks keeps its store in memory: --store and --restore are not supported"
        );
    }
    if args.substr_flag.substr.is_some() {
        anyhow::bail!("--format wikilinks has no documents: --substr does not apply");
    }
    if args.url_filter.is_some() || args.out.dd {
        anyhow::bail!("--format wikilinks has no documents: --url-filter and --dd do not apply");
    }
    if let Some(why) = webdedup_dedup::wikilinks::unsupported(cfg.options.near()) {
        anyhow::bail!("{why}");
    }
    let store =
        webdedup_store::MemStore::with_capacity(args.blocks.blocks, args.capacity.unwrap_or(0));
    let stats = webdedup_dedup::wikilinks::run(cfg, &store, report)?;
    let mut outcome = crate::summaries::wikilinks_outcome(&stats)?;
    if input_problems {
        outcome.status = i32::from(EXIT_INPUT_PROBLEMS);
    }
    args.report.finish(&outcome)
}

/// `--store redis://...` or `--servers MAP`: the key set lives outside this
/// process. Crash safety comes from the store's own persistence plus idempotent
/// requests: with `--restore`, finished outputs are skipped and the others redone
/// with the interrupted run's salt, so their requests are answered from the
/// store's retry records.
fn run_on_external(
    args: &DedupArgs,
    cfg: &RunConfig,
    state: &RunState,
    stop: &AtomicBool,
    report: &(dyn Fn(&str) + Sync),
    open: impl FnOnce(u64) -> Result<Box<dyn webdedup_store::Store>>,
) -> Result<webdedup_dedup::RunStats> {
    let salt = crate::remote::run_salt(&args.out.output, args.restore)?;
    let _lock = webdedup_store::DirLock::acquire(
        &args
            .out
            .output
            .join(webdedup_store_spec::files::OUTPUT_LOCK_FILE),
    )?;
    let store = match open(salt) {
        Ok(s) => s,
        Err(e) => {
            // Nothing was asked yet, so nothing can be resumed: the fresh run id and
            // the lock would only be debris (and keep a new output directory alive).
            if !args.restore {
                let _ = std::fs::remove_file(args.out.output.join(crate::remote::RUN_ID_FILE));
            }
            let _ = std::fs::remove_file(_lock.path());
            return Err(e);
        }
    };
    let dur = webdedup_dedup::Durability {
        journal: None,
        recorded: None,
        // MinHash mode redoes every output on restore (the side store of kept
        // documents is rebuilt; keys the interrupted attempt inserted are told
        // apart by their locations, see `policy::minhash`).
        skip_finished: args.restore && cfg.options.minhash().is_none(),
        finished: None,
        stop: Some(stop),
        plans: None,
    };
    let state = state.clone().salted(salt);
    let stats = webdedup_dedup::run_with(cfg, store.as_ref(), &state, &dur, report)?;
    if !stats.interrupted {
        let _ = std::fs::remove_file(_lock.path());
    }
    Ok(stats)
}
