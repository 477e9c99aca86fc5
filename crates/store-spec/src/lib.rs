//! Where a key set lives, and how it is opened: one function, [`StoreSpec::open`],
//! that the `webdedup` command line and the Python module both call, so the
//! choices that give a store its meaning (namespace, key kind, normalization,
//! layout) are made in one place.
//!
//! * [`StoreSpec`]: in this process, a store directory (`store.snap`), Redis /
//!   Valkey (`redis://...`), or the hash servers of a block map.
//! * [`KeySet`]: which keys (the vertical dedup keys of `webdedup dedup`, or the
//!   URL+digest versions of `cdx dups` / `warc dedup`) and their settings. Each
//!   key set has its own namespace in Redis, so commands sharing a database never
//!   mix keys or refuse each other's settings.
//! * A layout the user did not name is adopted from the store: a Redis key set made
//!   with `--capacity N` is opened as it is by a run without `--capacity`; a run
//!   naming another layout is refused, naming the flag.
//!
//! ```
//! use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};
//! let opened = StoreSpec::Memory
//!     .open(&KeySet::archive(), &OpenOptions::default())
//!     .unwrap();
//! let mut seen = Vec::new();
//! opened.store.test_and_insert(&[7, 7], &mut seen).unwrap();
//! assert_eq!(seen, [false, true]);
//! ```

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
/// A store URL as messages show it (the password hidden).
pub use webdedup_redis::redacted;
use webdedup_store::{MemStore, Store, StoreMeta};

/// Where the keys live.
#[derive(Clone, Debug)]
pub enum StoreSpec {
    /// In this process only.
    Memory,
    /// A store directory: `DIR/store.snap` is loaded if present. (The command
    /// line's `dedup --store DIR` also journals there: `webdedup_dedup::persist`.)
    Dir(PathBuf),
    /// Redis or Valkey: `redis://HOST:PORT[,HOST:PORT...]`, `valkey://`, `rediss://`.
    Redis {
        url: String,
        password: Option<String>,
    },
    /// The hash servers of a block map (`webdedup server`, `webdedup distribute`).
    Servers {
        map: PathBuf,
        token_file: Option<PathBuf>,
        /// How long a server may stay unreachable before requests fail.
        give_up_after: Duration,
    },
}

/// Which keys a store holds, and the settings that give them their meaning.
#[derive(Clone, Debug)]
pub struct KeySet {
    pub meta: StoreMeta,
    /// The key set's namespace in a shared database (Redis).
    pub namespace: &'static str,
}

/// The key kind of `cdx dups` / `warc dedup` (see `webdedup_dedup::identity`).
pub use webdedup_dedup::identity::ARCHIVE_KEY_KIND;
use webdedup_dedup::identity::{self, Keys};

impl KeySet {
    /// The key set of `keys` in `blocks` blocks, in the default namespace: its
    /// settings are the store identity ([`identity::store_identity`], the one
    /// function every front door and store kind uses).
    pub fn of(keys: &Keys, blocks: u32) -> KeySet {
        KeySet {
            meta: identity::store_identity(keys, blocks),
            namespace: "",
        }
    }

    /// The keys of a `webdedup dedup` / `minhash` run with `options` (Python's
    /// `Dedup` and `MinHashDedup` too).
    pub fn for_run(options: &webdedup_dedup::Options, blocks: u32) -> KeySet {
        KeySet::of(&identity::keys_of(options), blocks)
    }

    /// The versions of `cdx dups` and `warc dedup`: namespace `archive`.
    pub fn archive() -> KeySet {
        KeySet {
            meta: identity::store_identity(&Keys::Archive, webdedup_store::DEFAULT_BLOCKS),
            namespace: "archive",
        }
    }
}

/// How to open: the capacity the user named (if any) and the run's salt.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Expected keys, as named by the user (`--capacity`, Python `capacity=`):
    /// room preallocated in memory; for a new Redis key set, its layout. `None`
    /// adopts an existing layout (or the default for a new one).
    pub capacity: Option<u64>,
    /// Mixed into the ids of idempotent requests (Redis, servers): a fresh run must
    /// not be answered from an earlier run's retry records.
    pub salt: u64,
}

/// An opened store, and what the user should be told about it.
pub struct Opened {
    pub store: Box<dyn Store>,
    /// E.g. that a new Redis key set got the default layout.
    pub note: Option<String>,
}

impl StoreSpec {
    /// Whether a `--store` value names an external engine rather than a directory.
    pub fn is_engine_url(value: &str) -> bool {
        ["redis://", "rediss://", "valkey://", "valkeys://"]
            .iter()
            .any(|p| value.starts_with(p))
    }

    /// A `--store` value: a Redis / Valkey URL, or a store directory.
    pub fn from_store_arg(value: &Path, password: Option<String>) -> StoreSpec {
        match value.to_str().filter(|s| Self::is_engine_url(s)) {
            Some(url) => StoreSpec::Redis {
                url: url.to_owned(),
                password,
            },
            None => StoreSpec::Dir(value.to_owned()),
        }
    }

    /// Opens the store for `keys`. Settings recorded in the store are compared
    /// with `keys` (a mismatch is an error naming both values); a layout the user
    /// did not name is adopted.
    pub fn open(&self, keys: &KeySet, opts: &OpenOptions) -> Result<Opened> {
        let plain = |store: Box<dyn Store>| Opened { store, note: None };
        match self {
            StoreSpec::Memory => Ok(plain(Box::new(open_embedded(None, keys, opts)?))),
            StoreSpec::Dir(d) => Ok(plain(Box::new(open_embedded(Some(d), keys, opts)?))),
            StoreSpec::Redis { url, password } => {
                let settings = webdedup_redis::RedisSettings::for_keys(&keys.meta, opts.capacity)
                    .in_namespace(keys.namespace);
                let store =
                    webdedup_redis::RedisStore::open(url, password.as_deref(), settings, opts.salt)
                        .with_context(|| format!("cannot use the store {}", redacted(url)))?;
                let note = (store.created() && opts.capacity.is_none()).then(|| {
                    format!(
                        "{}: a new key set{}, laid out for about {} keys ({} buckets); \
                         the layout is fixed once made: for more keys, name them with \
                         --capacity when a database is first used",
                        redacted(url),
                        if keys.namespace.is_empty() {
                            String::new()
                        } else {
                            format!(" ('{}')", keys.namespace)
                        },
                        thousands(webdedup_redis::DEFAULT_EXPECTED_KEYS),
                        thousands(1 << store.bucket_bits())
                    )
                });
                Ok(Opened {
                    store: Box::new(store),
                    note,
                })
            }
            StoreSpec::Servers {
                map,
                token_file,
                give_up_after,
            } => {
                let server_map = webdedup_store::server_map::ServerMap::read(map)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                let client = webdedup_net::ClientOptions {
                    secret: token_file
                        .as_deref()
                        .map(webdedup_net::auth::Secret::read)
                        .transpose()?,
                    give_up_after: *give_up_after,
                    ..Default::default()
                };
                let store = webdedup_net::RemoteStore::connect(
                    server_map,
                    keys.meta.clone(),
                    client,
                    opts.salt,
                )
                .with_context(|| format!("cannot use the servers of {}", map.display()))?;
                Ok(plain(Box::new(store)))
            }
        }
    }
}

/// The embedded store: the snapshot of `dir` if it holds one (its settings must
/// equal `keys`'), else an empty store with room for `opts.capacity` keys.
pub fn open_embedded(dir: Option<&Path>, keys: &KeySet, opts: &OpenOptions) -> Result<MemStore> {
    let room = opts.capacity.unwrap_or(0) as usize;
    let snap = dir.map(|d| d.join(webdedup_dedup::persist::SNAPSHOT_FILE));
    match snap {
        Some(p) if p.exists() => Ok(MemStore::load(&p, &keys.meta, room)
            .with_context(|| format!("cannot load {}", p.display()))?
            .0),
        _ => Ok(MemStore::with_capacity(keys.meta.blocks, room)),
    }
}

/// A password file: its first line, trimmed.
pub fn read_password(file: Option<&Path>) -> Result<Option<String>> {
    file.map(|f| {
        std::fs::read_to_string(f)
            .with_context(|| format!("cannot read password file {}", f.display()))
            .map(|s| s.lines().next().unwrap_or("").trim().to_owned())
    })
    .transpose()
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_values_are_urls_or_directories() {
        assert!(matches!(
            StoreSpec::from_store_arg(Path::new("redis://h:1"), None),
            StoreSpec::Redis { .. }
        ));
        assert!(matches!(
            StoreSpec::from_store_arg(Path::new("hashes/"), None),
            StoreSpec::Dir(_)
        ));
    }

    #[test]
    fn key_sets_of_different_commands_have_different_namespaces() {
        let d = KeySet::for_run(&Default::default(), 1999);
        let a = KeySet::archive();
        assert_ne!(d.namespace, a.namespace);
        assert_ne!(d.meta.key_kind, a.meta.key_kind);
    }

    #[test]
    fn a_directory_store_round_trips_and_refuses_other_settings() {
        let dir = tempfile::tempdir().unwrap();
        let keys = KeySet::for_run(&Default::default(), 1999);
        let m = open_embedded(Some(dir.path()), &keys, &OpenOptions::default()).unwrap();
        m.insert_all(&[1, 2, 3]);
        m.save(&dir.path().join("store.snap"), &keys.meta).unwrap();
        let again = open_embedded(Some(dir.path()), &keys, &OpenOptions::default()).unwrap();
        assert_eq!(again.len(), 3);
        let other = KeySet::for_run(
            &webdedup_dedup::Options {
                normalization: webdedup_text::Normalization::None,
                ..Default::default()
            },
            1999,
        );
        let e = open_embedded(Some(dir.path()), &other, &OpenOptions::default())
            .err()
            .expect("other settings are refused");
        assert!(format!("{e:#}").contains("normalization"), "{e:#}");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(1_048_576), "1,048,576");
        assert_eq!(thousands(999), "999");
    }
}
