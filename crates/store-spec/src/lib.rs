//! A key set's identity, and where it lives and how it is opened: the crate below
//! `webdedup_dedup` that every front door (the `webdedup` command line, the Python
//! module, batch mode, `--store` runs) opens stores through, so the choices that
//! give a store its meaning (namespace, key kind, normalization, layout) are made
//! in one place.
//!
//! * [`identity::store_identity`]: the settings a key set records, built from a
//!   plain description of its keys ([`identity::Keys`]).
//! * [`StoreSpec::open`]: the one way to open a store: in this process, a store
//!   directory (its snapshot, [`files::SNAPSHOT_FILE`]), Redis / Valkey
//!   (`redis://...`), or the hash servers of a block map.
//! * [`KeySet`]: which keys (the vertical dedup keys of `webdedup dedup`, MinHash
//!   band keys, or the URL+digest versions of `cdx dups` / `warc dedup`) and their
//!   settings. Each key set has its own namespace in Redis, so commands sharing a
//!   database never mix keys or refuse each other's settings.
//! * [`files`]: the names of a store directory's files.
//! * A layout the user did not name is adopted from the store: a Redis key set made
//!   with `--capacity N` is opened as it is by a run without `--capacity`; a run
//!   naming another layout is refused, naming the flag.
//!
//! ```
//! use webdedup_store_spec::{KeySet, OpenOptions, StoreSpec};
//! let opened = StoreSpec::Memory
//!     .open(&KeySet::archive(), &OpenOptions::default())
//!     .unwrap();
//! let store = opened.into_store();
//! let mut seen = Vec::new();
//! store.test_and_insert(&[7, 7], &mut seen).unwrap();
//! assert_eq!(seen, [false, true]);
//! ```

pub mod files;
pub mod identity;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;
/// A store URL as messages show it (the password hidden).
pub use webdedup_redis::redacted;
use webdedup_store::{MemStore, SnapshotInfo, Store, StoreMeta};

/// Where the keys live.
#[derive(Clone, Debug)]
pub enum StoreSpec {
    /// In this process only.
    Memory,
    /// A store directory: its snapshot ([`files::SNAPSHOT_FILE`]) is loaded if
    /// present. (`dedup --store DIR` also journals there: `webdedup_dedup::persist`.)
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

use identity::Keys;
/// The key kind of `cdx dups` / `warc dedup`.
pub use identity::ARCHIVE_KEY_KIND;

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
    /// No lines on stderr while an unreachable hash server is retried (Python:
    /// stderr is the caller's).
    pub quiet: bool,
}

/// An opened store, and what the user should be told about it.
pub struct Opened {
    pub store: OpenedStore,
    /// The snapshot a store directory held (keys, load time); `None`: the store
    /// began empty, or lives outside this process.
    pub loaded: Option<SnapshotInfo>,
    /// E.g. that a new Redis key set got the default layout.
    pub note: Option<String>,
}

/// Where an opened store's keys are: this process's own table (which its owner
/// may save as a snapshot), or outside it.
pub enum OpenedStore {
    Embedded(MemStore),
    Remote(Box<dyn Store>),
}

impl Opened {
    /// The store, whichever kind it is.
    pub fn into_store(self) -> Box<dyn Store> {
        match self.store {
            OpenedStore::Embedded(m) => Box::new(m),
            OpenedStore::Remote(r) => r,
        }
    }

    /// The embedded table of a [`StoreSpec::Memory`] or [`StoreSpec::Dir`] store.
    pub fn into_embedded(self) -> Result<MemStore> {
        match self.store {
            OpenedStore::Embedded(m) => Ok(m),
            OpenedStore::Remote(_) => anyhow::bail!("the store lives outside this process"),
        }
    }
}

impl StoreSpec {
    /// Whether a `--store` value names an external engine rather than a directory.
    pub fn is_engine_url(value: &str) -> bool {
        ["redis://", "rediss://", "valkey://", "valkeys://"]
            .iter()
            .any(|p| value.starts_with(p))
    }

    /// This process's own store: kept in `dir` between runs, if given.
    pub fn embedded(dir: Option<&Path>) -> StoreSpec {
        dir.map_or(StoreSpec::Memory, |d| StoreSpec::Dir(d.to_owned()))
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
        let remote = |store: Box<dyn Store>, note| Opened {
            store: OpenedStore::Remote(store),
            loaded: None,
            note,
        };
        match self {
            StoreSpec::Memory => Ok(open_embedded(None, keys, opts)?),
            StoreSpec::Dir(d) => Ok(open_embedded(Some(d), keys, opts)?),
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
                Ok(remote(Box::new(store), note))
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
                    verbose: !opts.quiet,
                    ..Default::default()
                };
                let store = webdedup_net::RemoteStore::connect(
                    server_map,
                    keys.meta.clone(),
                    client,
                    opts.salt,
                )
                .with_context(|| format!("cannot use the servers of {}", map.display()))?;
                Ok(remote(Box::new(store), None))
            }
        }
    }
}

/// The embedded store: the snapshot of `dir` if it holds one (its settings must
/// equal `keys`'; a refusal names the snapshot), else an empty store with room
/// for `opts.capacity` keys.
fn open_embedded(dir: Option<&Path>, keys: &KeySet, opts: &OpenOptions) -> Result<Opened> {
    let room = opts.capacity.unwrap_or(0) as usize;
    let snap = dir.map(|d| d.join(files::SNAPSHOT_FILE));
    let (store, loaded) = match snap {
        Some(p) if p.exists() => {
            let (store, info) = MemStore::load(&p, &keys.meta, room)?;
            (store, Some(info))
        }
        _ => (MemStore::with_capacity(keys.meta.blocks, room), None),
    };
    Ok(Opened {
        store: OpenedStore::Embedded(store),
        loaded,
        note: None,
    })
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

    fn vertical(normalization: webdedup_text::Normalization) -> KeySet {
        let keys = Keys::Vertical {
            normalization,
            near: None,
        };
        KeySet::of(&keys, 1999)
    }

    #[test]
    fn key_sets_of_different_commands_have_different_namespaces() {
        let d = vertical(webdedup_text::Normalization::Loose);
        let a = KeySet::archive();
        assert_ne!(d.namespace, a.namespace);
        assert_ne!(d.meta.key_kind, a.meta.key_kind);
    }

    #[test]
    fn a_directory_store_round_trips_and_refuses_other_settings() {
        let dir = tempfile::tempdir().unwrap();
        let spec = StoreSpec::Dir(dir.path().to_owned());
        let keys = vertical(webdedup_text::Normalization::Loose);
        let open = |keys: &KeySet| spec.open(keys, &OpenOptions::default());
        let first = open(&keys).unwrap();
        assert!(first.loaded.is_none());
        let m = first.into_embedded().unwrap();
        m.insert_all(&[1, 2, 3]);
        m.save(&dir.path().join(files::SNAPSHOT_FILE), &keys.meta)
            .unwrap();
        let again = open(&keys).unwrap();
        assert_eq!(again.loaded.as_ref().map(|i| i.keys), Some(3));
        assert_eq!(again.into_embedded().unwrap().len(), 3);
        let other = vertical(webdedup_text::Normalization::None);
        let e = open(&other).err().expect("other settings are refused");
        assert!(format!("{e:#}").contains("normalization"), "{e:#}");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(1_048_576), "1,048,576");
        assert_eq!(thousands(999), "999");
    }
}
