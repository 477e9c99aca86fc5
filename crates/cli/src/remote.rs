//! External stores for the CLI: `--store redis://...` (Redis / Valkey), and the
//! run salt that keeps one run's retry records from answering another.

use anyhow::{Context, Result};
use std::path::Path;
use webdedup_redis::{RedisSettings, RedisStore};
use webdedup_store::Store;

/// Whether `--store` names an external engine rather than a directory.
pub fn is_engine_url(store: &Path) -> bool {
    store.to_str().is_some_and(|s| {
        ["redis://", "rediss://", "valkey://", "valkeys://"]
            .iter()
            .any(|p| s.starts_with(p))
    })
}

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

/// Reads a password file (first line, trimmed).
pub fn read_password(file: Option<&Path>) -> Result<Option<String>> {
    file.map(|f| {
        std::fs::read_to_string(f)
            .with_context(|| format!("cannot read password file {}", f.display()))
            .map(|s| s.lines().next().unwrap_or("").trim().to_owned())
    })
    .transpose()
}

/// Opens `url` for keys of `key_kind` normalized with `normalization`.
#[allow(clippy::too_many_arguments)]
pub fn open_redis(
    url: &Path,
    password_file: Option<&Path>,
    normalization: &str,
    key_kind: &str,
    expected_keys: u64,
    blocks: u32,
    salt: u64,
) -> Result<Box<dyn Store>> {
    let url = url.to_str().context("the store URL is not UTF-8")?;
    let password = read_password(password_file)?;
    let settings = RedisSettings::for_keys("xxh3-64", normalization, key_kind, expected_keys);
    let store = RedisStore::open(url, password.as_deref(), settings, blocks, salt)
        .with_context(|| format!("cannot use the store {url}"))?;
    Ok(Box::new(store))
}

/// The key set of `cdx dups` / `warc dedup`: one (urlkey, payload digest) key per
/// version, the same in both commands, so they may share a database.
pub const ARCHIVE_KEY_KIND: &str = "url+digest-v1 (urlkey SPACE digest; xxh3 seed url+dgst)";

/// The external store a `cdx` / `warc` command names with `--store`, if any.
pub fn archive_store(args: Option<&webdedup_archive::StoreArgs>) -> Result<Option<Box<dyn Store>>> {
    let Some(a) = args else { return Ok(None) };
    let Some(url) = &a.store else { return Ok(None) };
    if !is_engine_url(Path::new(url)) {
        anyhow::bail!("--store takes a redis://, valkey:// or rediss:// URL here, not '{url}'");
    }
    // Archive requests carry no batch identity: no salt needed.
    open_redis(
        Path::new(url),
        a.store_password_file.as_deref(),
        "none",
        ARCHIVE_KEY_KIND,
        1 << 28,
        webdedup_store::DEFAULT_BLOCKS,
        0,
    )
    .map(Some)
}

/// `dedup -s MAP`: the hash servers of a block map as the store.
pub fn open_servers(
    map: &Path,
    token: Option<&Path>,
    cfg: &webdedup_dedup::RunConfig,
    blocks: u32,
    timeout_seconds: u64,
    salt: u64,
) -> Result<Box<dyn Store>> {
    let server_map =
        webdedup_store::server_map::ServerMap::read(map).map_err(|e| anyhow::anyhow!("{e}"))?;
    let opts = webdedup_net::ClientOptions {
        secret: token.map(webdedup_net::auth::Secret::read).transpose()?,
        give_up_after: std::time::Duration::from_secs(timeout_seconds),
        ..Default::default()
    };
    let meta = webdedup_dedup::persist::store_meta(cfg, blocks);
    let store = webdedup_net::RemoteStore::connect(server_map, meta, opts, salt)
        .with_context(|| format!("cannot use the servers of {}", map.display()))?;
    Ok(Box::new(store))
}
