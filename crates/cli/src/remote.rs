//! External stores for the CLI (`--store redis://...`, `--servers MAP`), opened
//! through `webdedup_store_spec`, and the run salt that keeps one run's retry
//! records from answering another.

use anyhow::{Context, Result};
use std::collections::HashMap;
use std::path::Path;
use webdedup_store::Store;
pub use webdedup_store_spec::read_password;
use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};
use webdedup_text::shown::escape_controls;

/// The file in an output directory that holds its run's salt.
pub const RUN_ID_FILE: &str = ".webdedup.run-id";

/// The salt of the run writing `output`: a fresh one for a fresh run, the
/// interrupted run's with `--restore` (so its retried requests are recognised).
pub fn run_salt(output: &Path, restore: bool) -> Result<u64> {
    let path = output.join(RUN_ID_FILE);
    if restore {
        if let Ok(text) = std::fs::read_to_string(&path) {
            // The salt is the first line (the servers' key set ids follow).
            let first = text.lines().next().unwrap_or_default();
            return u64::from_str_radix(first.trim(), 16)
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

/// Records, in the run id file of the run writing `output` (after its salt: a
/// line `server ADDR ID` each), the key set id of each server of `map`; with
/// `restore`, checks instead that the servers serve the key sets the interrupted
/// run began on. A server that came back without its files forgot keys that run
/// was told about, so a restore could not give an uninterrupted run's outputs.
pub fn check_server_ids(
    output: &Path,
    map: &Path,
    token_file: Option<&Path>,
    give_up_after: std::time::Duration,
    restore: bool,
) -> Result<()> {
    let server_map =
        webdedup_store::server_map::ServerMap::read(map).map_err(|e| anyhow::anyhow!("{e}"))?;
    let opts = webdedup_net::ClientOptions {
        secret: token_file
            .map(webdedup_net::auth::Secret::read)
            .transpose()?,
        give_up_after,
        ..Default::default()
    };
    let ids = webdedup_net::store_ids(&server_map, &opts)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot use the servers of {}", map.display()))?;
    let path = output.join(RUN_ID_FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let recorded: HashMap<&str, &str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("server "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    if restore && !recorded.is_empty() {
        for (s, id) in server_map.servers.iter().zip(&ids) {
            let (addr, now) = (s.addr.to_string(), format!("{id:016x}"));
            // A server the run did not begin on (a migration since) has nothing to
            // compare with.
            if let Some(then) = recorded.get(addr.as_str()).filter(|&&t| t != now) {
                anyhow::bail!(
                    "--restore: hash server {addr} serves another key set than when the run \
                     began ({now}, was {then}: restarted without its snapshot and journal?); \
                     the keys it forgot would change decisions. Bring it back with its \
                     files, or run again without --restore on fresh servers"
                );
            }
        }
        return Ok(());
    }
    let mut lines = text.lines().next().unwrap_or_default().to_string();
    lines.push('\n');
    for (s, id) in server_map.servers.iter().zip(&ids) {
        lines.push_str(&format!("server {} {id:016x}\n", s.addr));
    }
    std::fs::write(&path, lines).with_context(|| format!("cannot write {}", path.display()))
}

/// Opens the store `spec` for `keys`, printing what the user should know about it
/// (e.g. the layout a new Redis key set got).
pub fn open(
    spec: &StoreSpec,
    keys: &KeySet,
    capacity: Option<u64>,
    salt: u64,
) -> Result<Box<dyn Store>> {
    let opts = OpenOptions {
        capacity,
        salt,
        ..Default::default()
    };
    let mut opened = spec.open(keys, &opts)?;
    if let Some(note) = opened.note.take() {
        eprintln!("webdedup: note: {}", escape_controls(&note));
    }
    Ok(opened.into_store())
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
