//! External stores for the CLI (`--store redis://...`, `--servers MAP`), opened
//! through `webdedup_store_spec`, and the run salt that keeps one run's retry
//! records from answering another.

use anyhow::{Context, Result};
use std::path::Path;
use webdedup_formats::shown::escape_controls;
use webdedup_store::Store;
pub use webdedup_store_spec::read_password;
use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};

/// The file in an output directory that holds its run's salt.
pub const RUN_ID_FILE: &str = ".webdedup.run-id";

/// The salt of the run writing `output`: a fresh one for a fresh run, the
/// interrupted run's with `--restore` (so its retried requests are recognised).
pub fn run_salt(output: &Path, restore: bool) -> Result<u64> {
    let path = output.join(RUN_ID_FILE);
    if restore {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return u64::from_str_radix(text.trim(), 16)
                .with_context(|| format!("{}: not a run id", path.display()));
        }
    }
    let seed = format!(
        "{:?} {} {:?}",
        std::time::SystemTime::now(),
        std::process::id(),
        output
    );
    let salt = xxhash_rust::xxh3::xxh3_64(seed.as_bytes());
    std::fs::create_dir_all(output)
        .with_context(|| format!("cannot create output directory {}", output.display()))?;
    std::fs::write(&path, format!("{salt:016x}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(salt)
}

/// Opens the store `spec` for `keys`, printing what the user should know about it
/// (e.g. the layout a new Redis key set got).
pub fn open(
    spec: &StoreSpec,
    keys: &KeySet,
    capacity: Option<u64>,
    salt: u64,
) -> Result<Box<dyn Store>> {
    let opened = spec.open(keys, &OpenOptions { capacity, salt })?;
    if let Some(note) = opened.note {
        eprintln!("webdedup: note: {}", escape_controls(&note));
    }
    Ok(opened.store)
}

/// The external store a `cdx` / `warc` command names with `--store`, if any: the
/// archive key set (its own namespace, so a database `dedup` uses too is shared
/// without clashes).
pub fn archive_store(
    args: Option<&crate::flags::archive::StoreFlags>,
) -> Result<Option<Box<dyn Store>>> {
    let Some(a) = args else { return Ok(None) };
    let Some(url) = &a.store else { return Ok(None) };
    if !StoreSpec::is_engine_url(url) {
        anyhow::bail!(
            "--store takes a redis://, valkey:// or rediss:// URL here, not '{}'",
            webdedup_store_spec::redacted(url)
        );
    }
    let spec = StoreSpec::Redis {
        url: url.clone(),
        password: read_password(a.store_password_file.as_deref())?,
    };
    // Archive requests carry no batch identity: no salt needed.
    open(&spec, &KeySet::archive(), None, 0).map(Some)
}
