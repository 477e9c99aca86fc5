//! webdedup's key set on Redis or Valkey, single node or Cluster.
//!
//! # Layout (memory-lean buckets)
//!
//! A plain `SET key NX` costs about 68 bytes a key on Redis 7. Here the top
//! `bucket_bits` of a key choose a *bucket*, a Redis set named
//! `wd:{T}:B` (B the bucket number in hex, T = B mod 16 its hash tag; `wd:NS:{T}:B`
//! in a namespace, see below), and the
//! remaining `64 - bucket_bits` bits are the member, written as a decimal integer.
//! Redis keeps a set of integers as an *intset* (a sorted array of 8-byte
//! integers) while it has at most `set-max-intset-entries` members, so a key costs
//! 8 bytes plus its share of the bucket's overhead (about 60-90 bytes per bucket).
//! `bucket_bits` is chosen at creation from the expected key count (about 1,000
//! keys a bucket; [`DEFAULT_EXPECTED_KEYS`] when none is given) and recorded; a
//! later open that names no count adopts it, one that names a count of another
//! layout is refused. Raise `set-max-intset-entries` to 4096 or more so buckets
//! stay intsets as the store grows past its planned size.
//!
//! # Namespaces
//!
//! Each key set lives under its own prefix, so the key sets of different commands
//! (the vertical dedup keys of `webdedup dedup`, the URL+digest versions of `cdx
//! dups` / `warc dedup`) share a database without ever mixing or refusing each
//! other's settings: the default namespace (`""`) is `wd:` (the names of earlier
//! versions), namespace `NS` is `wd:NS:`.
//!
//! # Requests
//!
//! A batch is one `EVALSHA` call on a single node; in Cluster mode it is split by
//! hash tag (a script may touch one slot only) and sent as one pipeline, each node
//! getting its share at once. The
//! script runs `SMISMEMBER` and `SADD` per bucket and returns one verdict byte per
//! key. Repeats inside a batch are answered locally (the second is "seen"), so a
//! batch behaves as if its keys were asked one by one.
//!
//! # Idempotent retries
//!
//! A request with a [`BatchId`] (a test and insert, or a test only) stores its
//! verdicts under `wd:{T}:r:STREAM:SEQ:P` (one per script call, same slot as its
//! buckets), in the same script call as the inserts, with a TTL (7 days); a retry
//! finds the record and gets the first answers. So a worker that crashed after its inserts and reruns with `--restore`
//! does not see its own keys as duplicates. The record is per tag group: a crash
//! between groups leaves some groups recorded and others not asked, and a retry
//! answers each group as its first attempt did.
//!
//! # Settings
//!
//! `wd:settings` (`wd:NS:settings`) holds the store identity of its namespace
//! (hash, normalization, key kind, block count: the run's `StoreMeta`) and its
//! layout; opening it with other settings is refused as every store refuses them
//! ([`StoreMeta::mismatch`]), naming the setting and both values.
//!
//! ```
//! // A key set laid out for about a million keys: 2^11 buckets (up to ~1,000 keys each).
//! assert_eq!(webdedup_redis::bucket_bits_for(1 << 20), 11);
//! ```

use parking_lot::Mutex;
use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{Client, Connection, ConnectionLike, Script, Value};
use std::collections::HashMap;
use std::time::Duration;
use webdedup_store::{Answer, BatchId, Request, Store, StoreError, StoreMeta};

/// Hash tags: buckets with the same tag share a Cluster slot (and a script call
/// in Cluster mode, where a script may touch one slot only). Few tags keep the
/// number of calls (and retry records) per request small; 16 spread well enough
/// over the masters of a small Cluster.
const TAGS: u64 = 16;
/// How long the verdicts of a request are kept for retries.
const RETRY_TTL_SECONDS: u64 = 7 * 24 * 3600;
/// Keys per script call (bounded so one call never blocks the server for long).
const MAX_KEYS_PER_CALL: usize = 4096;

/// The script: KEYS = record key, then the buckets; ARGV = ttl (0: no record), then
/// mode ("i" insert, "t" test only), then for each bucket its member count, then
/// the members, bucket by bucket. Returns one byte per member, '1' = seen.
const SCRIPT: &str = r#"
local ttl = tonumber(ARGV[1])
if ttl > 0 then
  local v = redis.call('GET', KEYS[1])
  if v then return v end
end
local insert = ARGV[2] == 'i'
local out = {}
local nb = #KEYS - 1
local pos = 3 + nb
for b = 1, nb do
  local n = tonumber(ARGV[2 + b])
  local members = {}
  for i = 1, n do members[i] = ARGV[pos + i - 1] end
  pos = pos + n
  local present = redis.call('SMISMEMBER', KEYS[b + 1], unpack(members))
  for i = 1, n do out[#out + 1] = (present[i] == 1) and '1' or '0' end
  if insert then redis.call('SADD', KEYS[b + 1], unpack(members)) end
end
local s = table.concat(out)
if ttl > 0 then redis.call('SET', KEYS[1], s, 'EX', ttl) end
return s
"#;

/// The key count a new key set is laid out for when none is given: 2,048
/// buckets, about 180 KB of bucket overhead, so a small run costs about 8 bytes a
/// key plus a few; every bucket stays within Redis's default
/// `set-max-intset-entries` (512) up to about a million keys, and within 4096 up
/// to about eight million. Larger key sets should name their size on first use.
pub const DEFAULT_EXPECTED_KEYS: u64 = 1 << 20;

/// The store's settings, recorded in the database and compared on open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisSettings {
    /// The key set's identity (the run's `StoreMeta`), compared as every store
    /// compares it ([`StoreMeta::mismatch`]).
    pub meta: StoreMeta,
    /// The key set's namespace (`""`: the default one, `wd:`; else `wd:NS:`).
    pub namespace: String,
    /// Top bits of a key that choose its bucket; `None`: the database's (or, for a
    /// new key set, those of [`DEFAULT_EXPECTED_KEYS`]).
    pub bucket_bits: Option<u32>,
}

/// Top bits of a key that choose its bucket, for about `expected_keys` keys:
/// about 1,000 keys a bucket.
pub fn bucket_bits_for(expected_keys: u64) -> u32 {
    let buckets = (expected_keys / 1000).max(1);
    (64 - buckets.leading_zeros()).clamp(4, 40)
}

fn layout_text(bits: u32) -> String {
    format!("buckets-v1 bits={bits} tags={TAGS}")
}

/// The bucket bits of a recorded layout (`buckets-v1 bits=N tags=16`).
fn parse_layout(text: &str) -> Option<u32> {
    let mut f = text.split_whitespace();
    if f.next()? != "buckets-v1" {
        return None;
    }
    let bits = f.next()?.strip_prefix("bits=")?.parse().ok()?;
    (f.next()? == format!("tags={TAGS}")).then_some(bits)
}

impl RedisSettings {
    /// Settings for about `expected_keys` keys (`None`: adopt the database's
    /// layout), in the default namespace.
    pub fn for_keys(meta: &StoreMeta, expected_keys: Option<u64>) -> Self {
        RedisSettings {
            meta: meta.clone(),
            namespace: String::new(),
            bucket_bits: expected_keys.map(bucket_bits_for),
        }
    }

    /// The same settings in namespace `ns`.
    pub fn in_namespace(mut self, ns: &str) -> Self {
        self.namespace = ns.into();
        self
    }

    /// The prefix of every key of this key set.
    fn prefix(&self) -> String {
        if self.namespace.is_empty() {
            "wd:".into()
        } else {
            format!("wd:{}:", self.namespace)
        }
    }
}

// One per open connection: boxing the larger variant would save nothing that matters.
#[allow(clippy::large_enum_variant)]
enum Conn {
    Node(Connection),
    Cluster(ClusterConnection),
}

impl Conn {
    fn con(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Conn::Node(c) => c,
            Conn::Cluster(c) => c,
        }
    }
}

enum Target {
    Node(Client),
    Cluster(ClusterClient),
}

/// A [`Store`] on Redis / Valkey.
pub struct RedisStore {
    target: Target,
    describe: String,
    settings: RedisSettings,
    /// `wd:` or `wd:NS:`.
    prefix: String,
    /// The layout in use (the database's, or the one this open recorded).
    bucket_bits: u32,
    /// Whether this open created the key set (recorded its settings).
    created: bool,
    /// Mixed into every [`BatchId::stream`]: a fresh run must not be answered from
    /// an earlier run's records (the CLI keeps it in the output directory).
    salt: u64,
    pool: Mutex<Vec<Conn>>,
    script: Script,
    blocks: u32,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("{what}: {e}"))
}

/// `url` as it may be shown (messages, notes, errors): the password of
/// `[user]:password@` replaced by `***`, so a secret in a `--store` URL never
/// reaches a terminal or a log. The one function every message naming a store URL
/// goes through.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The hosts follow the last '@' (a password may hold '@' itself).
    match rest.rsplit_once('@') {
        Some((auth, hosts)) => {
            let user = auth.split_once(':').map_or("", |(u, _)| u);
            format!("{scheme}://{user}:***@{hosts}")
        }
        None => url.to_owned(),
    }
}

/// `redis://`, `valkey://` or `rediss://` (TLS), with one or more `HOST:PORT`
/// separated by commas; `user:password@` may precede the first host.
fn parse_url(url: &str, password: Option<&str>) -> Result<(Vec<String>, bool), StoreError> {
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        StoreError::Mismatch(format!("'{}' is not a redis:// URL", redacted(url)))
    })?;
    let tls = match scheme {
        "redis" | "valkey" => false,
        "rediss" | "valkeys" => true,
        other => {
            return Err(StoreError::Mismatch(format!(
                "unknown scheme '{other}://' (expected redis://, valkey:// or rediss://)"
            )))
        }
    };
    let (auth, hosts) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a.to_owned()), h),
        None => (None, rest),
    };
    let hosts = hosts.trim_end_matches('/');
    let mut out = Vec::new();
    for h in hosts.split(',').filter(|h| !h.is_empty()) {
        let h = if h.contains(':') {
            h.to_owned()
        } else {
            format!("{h}:6379")
        };
        let auth = match (&auth, password) {
            (_, Some(p)) => format!(":{}@", p),
            (Some(a), None) => format!("{a}@"),
            (None, None) => String::new(),
        };
        out.push(format!(
            "{}://{auth}{h}/",
            if tls { "rediss" } else { "redis" }
        ));
    }
    if out.is_empty() {
        return Err(StoreError::Mismatch(format!(
            "'{}' names no host",
            redacted(url)
        )));
    }
    Ok((out, tls))
}

impl RedisStore {
    /// Opens the store at `url` (see [`parse_url`]), refusing a database whose
    /// recorded settings differ from `settings` (recording them if there are none).
    /// More than one host, or a node with Cluster mode on, gives the Cluster client.
    pub fn open(
        url: &str,
        password: Option<&str>,
        settings: RedisSettings,
        salt: u64,
    ) -> Result<RedisStore, StoreError> {
        let (nodes, _) = parse_url(url, password)?;
        let describe = redacted(url);
        let first = Client::open(nodes[0].as_str()).map_err(|e| unavailable(&describe, e))?;
        let mut probe = first
            .get_connection_with_timeout(Duration::from_secs(5))
            .map_err(|e| unavailable(&describe, e))?;
        let info: String = redis::cmd("INFO")
            .arg("cluster")
            .query(&mut probe)
            .map_err(|e| unavailable(&describe, e))?;
        let cluster = nodes.len() > 1 || info.contains("cluster_enabled:1");
        let target = if cluster {
            Target::Cluster(
                ClusterClient::builder(nodes.clone())
                    .connection_timeout(Duration::from_secs(5))
                    .response_timeout(Duration::from_secs(30))
                    .retries(3)
                    .build()
                    .map_err(|e| unavailable(&describe, e))?,
            )
        } else {
            Target::Node(first)
        };
        let prefix = settings.prefix();
        let blocks = settings.meta.blocks;
        let mut store = RedisStore {
            target,
            describe,
            settings,
            prefix,
            bucket_bits: 0,
            created: false,
            salt,
            pool: Mutex::new(Vec::new()),
            script: Script::new(SCRIPT),
            blocks,
        };
        store.check_settings()?;
        store.load_script()?;
        Ok(store)
    }

    /// Top bits of a key that choose its bucket, as recorded in the database.
    pub fn bucket_bits(&self) -> u32 {
        self.bucket_bits
    }

    /// Whether this open created the key set (nothing was recorded before).
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether the Cluster client is in use.
    pub fn is_cluster(&self) -> bool {
        matches!(self.target, Target::Cluster(_))
    }

    fn connect(&self) -> Result<Conn, StoreError> {
        match &self.target {
            Target::Node(c) => c
                .get_connection_with_timeout(Duration::from_secs(5))
                .map(|c| {
                    let _ = c.set_read_timeout(Some(Duration::from_secs(60)));
                    Conn::Node(c)
                }),
            Target::Cluster(c) => c.get_connection().map(Conn::Cluster),
        }
        .map_err(|e| unavailable(&self.describe, e))
    }

    /// Runs `f` on a pooled connection; a connection that failed is dropped.
    fn with_conn<R>(
        &self,
        f: impl FnOnce(&mut dyn ConnectionLike) -> redis::RedisResult<R>,
    ) -> Result<R, StoreError> {
        self.with_raw(|c| f(c.con()))
    }

    fn with_raw<R>(
        &self,
        f: impl FnOnce(&mut Conn) -> redis::RedisResult<R>,
    ) -> Result<R, StoreError> {
        let mut conn = match self.pool.lock().pop() {
            Some(c) => c,
            None => self.connect()?,
        };
        match f(&mut conn) {
            Ok(r) => {
                self.pool.lock().push(conn);
                Ok(r)
            }
            Err(e) => Err(unavailable(&self.describe, e)),
        }
    }

    /// Records the settings in a new key set, or compares them with the recorded
    /// ones; a run that names no layout adopts the recorded one.
    fn check_settings(&mut self) -> Result<(), StoreError> {
        let key = format!("{}settings", self.prefix);
        let have: HashMap<String, String> =
            self.with_conn(|c| redis::cmd("HGETALL").arg(&key).query(c))?;
        let mine = &self.settings.meta;
        let blocks = mine.blocks.to_string();
        let fixed = [
            ("hash", mine.hash.clone()),
            ("normalization", mine.normalization.clone()),
            ("key_kind", mine.key_kind.clone()),
            ("blocks", blocks.clone()),
        ];
        if have.is_empty() {
            self.bucket_bits = self
                .settings
                .bucket_bits
                .unwrap_or_else(|| bucket_bits_for(DEFAULT_EXPECTED_KEYS));
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&key);
            for (k, v) in &fixed {
                cmd.arg(*k).arg(v);
            }
            cmd.arg("layout").arg(layout_text(self.bucket_bits));
            self.created = true;
            return self.with_conn(|c| cmd.query::<()>(c));
        }
        let field = |k: &str| have.get(k).cloned().unwrap_or_else(|| "(none)".into());
        // Key sets made before the block count was recorded: it never changed
        // their keys, so they adopt this run's (recorded below).
        let recorded_blocks = have
            .get("blocks")
            .map_or(Some(mine.blocks), |b| b.parse().ok());
        let stored = StoreMeta {
            hash: field("hash"),
            normalization: field("normalization"),
            key_kind: field("key_kind"),
            // An unreadable count is a mismatch (0 is no run's).
            blocks: recorded_blocks.unwrap_or(0),
        };
        let store = format!(
            "{}{}",
            self.describe,
            if self.settings.namespace.is_empty() {
                String::new()
            } else {
                format!(" (key set '{}')", self.settings.namespace)
            }
        );
        if let Some(m) = mine.mismatch(&stored, &store) {
            return Err(StoreError::Mismatch(m));
        }
        let recorded = have.get("layout").map(String::as_str).unwrap_or("(none)");
        let layout = match (parse_layout(recorded), self.settings.bucket_bits) {
            (Some(bits), None) => Ok(bits),
            (Some(bits), Some(want)) if bits == want => Ok(bits),
            (Some(bits), Some(want)) => Err(format!(
                "layout '{recorded}' in the store (made for about {} keys), '{}' for \
                 the capacity this run names (--capacity): drop --capacity to use the \
                 store's layout, or use another database for this one",
                1000u64 << (bits - 1),
                layout_text(want)
            )),
            (None, _) => Err(format!(
                "layout '{recorded}' in the store, which this version cannot read"
            )),
        };
        match layout {
            Ok(bits) => self.bucket_bits = bits,
            Err(m) => {
                return Err(StoreError::Mismatch(format!(
                    "{store} holds keys laid out otherwise: {m}"
                )))
            }
        }
        if !have.contains_key("blocks") {
            self.with_conn(|c| {
                redis::cmd("HSET")
                    .arg(&key)
                    .arg("blocks")
                    .arg(&blocks)
                    .query::<()>(c)
            })?;
        }
        Ok(())
    }

    /// Bytes of memory the server reports in use (`INFO memory`, summed over the
    /// masters of a Cluster when reachable through this client).
    pub fn used_memory(&self) -> Result<u64, StoreError> {
        let info: Value = self.with_conn(|c| redis::cmd("INFO").arg("memory").query(c))?;
        let mut total = 0;
        let mut add = |s: &str| {
            for line in s.lines() {
                if let Some(v) = line.strip_prefix("used_memory:") {
                    total += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        };
        match info {
            Value::BulkString(b) => add(&String::from_utf8_lossy(&b)),
            Value::VerbatimString { text, .. } => add(&text),
            Value::Map(m) => {
                for (_, v) in m {
                    if let Value::BulkString(b) = v {
                        add(&String::from_utf8_lossy(&b));
                    } else if let Value::VerbatimString { text, .. } = v {
                        add(&text);
                    }
                }
            }
            _ => {}
        }
        Ok(total)
    }

    fn bucket_of(&self, key: u64) -> (u64, u64) {
        let bits = self.bucket_bits;
        let bucket = key >> (64 - bits);
        let member = key & (u64::MAX >> bits);
        (bucket, member)
    }

    /// Asks the keys (each distinct) and pushes their verdicts in order.
    fn run_scripts(
        &self,
        keys: &[u64],
        insert: bool,
        id: Option<BatchId>,
        out: &mut [bool],
    ) -> Result<(), StoreError> {
        // Group by tag (one slot each), then by bucket; remember where each key's
        // answer goes.
        // On a single node one call takes every tag (no slot rule there).
        let cluster = self.is_cluster();
        let mut groups: HashMap<u64, Vec<(u64, u64, usize)>> = HashMap::new();
        for (i, &k) in keys.iter().enumerate() {
            let (bucket, member) = self.bucket_of(k);
            let group = if cluster { bucket % TAGS } else { 0 };
            groups.entry(group).or_default().push((bucket, member, i));
        }
        let mut tags: Vec<u64> = groups.keys().copied().collect();
        tags.sort_unstable();
        let mut calls: Vec<(redis::Cmd, Vec<usize>)> = Vec::new();
        for tag in tags {
            let mut items = groups.remove(&tag).unwrap_or_default();
            items.sort_unstable();
            for (part, chunk) in items.chunks(MAX_KEYS_PER_CALL).enumerate() {
                let record = match id {
                    Some(id) => format!(
                        "{}{{{tag:x}}}:r:{:x}:{:x}:{part}",
                        self.prefix,
                        id.stream ^ self.salt,
                        id.seq
                    ),
                    None => format!("{}{{{tag:x}}}:r:-", self.prefix),
                };
                let mut buckets: Vec<(u64, usize)> = Vec::new();
                for &(b, _, _) in chunk {
                    match buckets.last_mut() {
                        Some((lb, n)) if *lb == b => *n += 1,
                        _ => buckets.push((b, 1)),
                    }
                }
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(self.script.get_hash())
                    .arg(buckets.len() + 1)
                    .arg(record);
                for &(b, _) in &buckets {
                    cmd.arg(format!("{}{{{:x}}}:{b:x}", self.prefix, b % TAGS));
                }
                // A test keeps its record too: near mode tests a chunk's n-grams,
                // then inserts the kept ones; a retried test must not find them.
                let ttl = if id.is_some() { RETRY_TTL_SECONDS } else { 0 };
                cmd.arg(ttl).arg(if insert { "i" } else { "t" });
                for &(_, n) in &buckets {
                    cmd.arg(n);
                }
                for &(_, m, _) in chunk {
                    cmd.arg(m);
                }
                calls.push((cmd, chunk.iter().map(|&(_, _, i)| i).collect()));
            }
        }
        // One pipeline: every call in flight at once (the Cluster pipeline sends each
        // node its share and reads the answers back in order).
        let answers: Vec<Vec<u8>> = self.with_raw(|conn| match conn {
            Conn::Node(c) => {
                let mut pipe = redis::pipe();
                for (cmd, _) in &calls {
                    pipe.add_command(cmd.clone());
                }
                pipe.query::<Vec<Vec<u8>>>(c)
            }
            Conn::Cluster(c) => {
                let mut pipe = redis::cluster::cluster_pipe();
                for (cmd, _) in &calls {
                    pipe.add_command(cmd.clone());
                }
                pipe.query::<Vec<Vec<u8>>>(c)
            }
        })?;
        for ((_, idx), ans) in calls.iter().zip(answers) {
            if ans.len() != idx.len() {
                return Err(StoreError::Unavailable(format!(
                    "{}: a script answered {} verdicts for {} keys (a retry record of other settings?)",
                    self.describe,
                    ans.len(),
                    idx.len()
                )));
            }
            for (&i, &b) in idx.iter().zip(&ans) {
                out[i] = b == b'1';
            }
        }
        Ok(())
    }

    fn request(
        &self,
        keys: &[u64],
        seen: &mut Vec<bool>,
        insert: bool,
        id: Option<BatchId>,
    ) -> Result<(), StoreError> {
        seen.clear();
        seen.resize(keys.len(), false);
        if keys.is_empty() {
            return Ok(());
        }
        // A key repeated inside the batch: its first occurrence is asked, the later
        // ones are seen (sequential semantics) when inserting.
        let mut first: HashMap<u64, usize> = HashMap::with_capacity(keys.len());
        let mut distinct = Vec::with_capacity(keys.len());
        let mut slot = Vec::with_capacity(keys.len());
        for (i, &k) in keys.iter().enumerate() {
            match first.get(&k) {
                Some(&j) => slot.push((i, Some(j))),
                None => {
                    first.insert(k, distinct.len());
                    slot.push((i, None));
                    distinct.push(k);
                }
            }
        }
        let mut answers = vec![false; distinct.len()];
        self.run_scripts(&distinct, insert, id, &mut answers)?;
        let mut next = 0;
        for (i, repeat) in slot {
            seen[i] = match repeat {
                Some(j) => insert || answers[j],
                None => {
                    next += 1;
                    answers[next - 1]
                }
            };
        }
        Ok(())
    }

    fn load_script(&self) -> Result<(), StoreError> {
        // EVALSHA fails on a node that lacks the script: load it everywhere first.
        match &self.target {
            Target::Node(_) => self.with_conn(|c| {
                redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(SCRIPT)
                    .query::<String>(c)
            })?,
            Target::Cluster(_) => self.with_conn(|c| {
                redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(SCRIPT)
                    .query::<Value>(c)
                    .map(|_| String::new())
            })?,
        };
        Ok(())
    }
}

impl Store for RedisStore {
    fn ask(&self, req: Request<'_>, out: &mut Answer<'_>) -> Result<(), StoreError> {
        let op = req.op();
        if op.located() {
            return Err(op.unsupported());
        }
        self.retrying(|s| s.request(req.keys(), out.seen, op.inserts(), req.id()))
    }

    fn len(&self) -> u64 {
        // Not kept: counting would scan every bucket.
        0
    }

    fn counts_keys(&self) -> bool {
        false
    }

    fn memory_bytes(&self) -> u64 {
        0
    }

    fn blocks(&self) -> u32 {
        self.blocks
    }
}

impl RedisStore {
    /// Runs a request; on a missing script (a restarted or new node) loads it and
    /// tries once more. Other errors are final: the caller stops with a clear error
    /// rather than guess verdicts.
    fn retrying(
        &self,
        mut f: impl FnMut(&Self) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        match f(self) {
            Err(StoreError::Unavailable(m)) if m.contains("NOSCRIPT") || m.contains("NoScript") => {
                self.load_script()?;
                f(self)
            }
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> StoreMeta {
        StoreMeta {
            hash: "x".into(),
            normalization: "y".into(),
            blocks: 3,
            key_kind: "z".into(),
        }
    }

    #[test]
    fn urls_name_hosts_scheme_and_password() {
        let (n, tls) = parse_url("redis://a:1,b:2", None).unwrap();
        assert_eq!(n, ["redis://a:1/", "redis://b:2/"]);
        assert!(!tls);
        let (n, tls) = parse_url("rediss://u:pw@h", None).unwrap();
        assert_eq!(n, ["rediss://u:pw@h:6379/"]);
        assert!(tls);
        let (n, _) = parse_url("valkey://h:7000", Some("s3cret")).unwrap();
        assert_eq!(n, ["redis://:s3cret@h:7000/"]);
        assert!(parse_url("http://h", None).is_err());
        assert!(parse_url("redis://", None).is_err());
    }

    #[test]
    fn shown_urls_hide_the_password() {
        assert_eq!(redacted("redis://:s3cret@h:1"), "redis://:***@h:1");
        assert_eq!(redacted("rediss://u:p@ss@h,g:2"), "rediss://u:***@h,g:2");
        assert_eq!(redacted("redis://h:1"), "redis://h:1");
        assert_eq!(redacted("not a url"), "not a url");
        let e = parse_url("redis://:s3cret@", None)
            .err()
            .unwrap()
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn bucket_bits_grow_with_the_expected_key_count() {
        let s = bucket_bits_for;
        assert_eq!(s(0), 4);
        assert!(s(2_000_000) >= 10 && s(2_000_000) <= 12);
        assert!(s(1 << 36) > s(1 << 30));
        assert_eq!(RedisSettings::for_keys(&meta(), None).bucket_bits, None);
    }

    #[test]
    fn layouts_read_back_and_namespaces_prefix_keys() {
        assert_eq!(parse_layout(&layout_text(19)), Some(19));
        assert_eq!(parse_layout("buckets-v2 bits=19 tags=16"), None);
        assert_eq!(parse_layout("buckets-v1 bits=19 tags=8"), None);
        let s = RedisSettings::for_keys(&meta(), None);
        assert_eq!(s.prefix(), "wd:");
        assert_eq!(s.in_namespace("archive").prefix(), "wd:archive:");
    }
}
