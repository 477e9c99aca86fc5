//! The restore matrix (issue 27, item 2): every command that writes outputs x every
//! store it takes x every fault ends in one of two ways: outputs and store
//! byte-identical to an uninterrupted run, or exit 2 with a message that says what to
//! do (and doing it then gives the uninterrupted run's bytes). Never exit 0 with
//! anything less.
//!
//! One table (`matrix!` below) lists the cells; each is its own `#[test]`, named
//! `COMMAND_STORE_FAULT`, and `docs/restore.md` lists the same cells (a test keeps
//! the two in step). One runner per fault kind, one setup per store kind; the
//! processes are real (`webdedup`, `redis-server`, `webdedup server` on loopback).
//! Random choices (kill points, disk limits, journal cuts) come from a generator
//! seeded by the cell's name, so a failing cell fails the same way again.

mod common;
mod server_procs;

use common::{free_port, journal_records, read, tree};
use server_procs::Cluster;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------
// The cells

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Cmd {
    /// `dedup` (exact mode).
    Exact,
    /// `dedup -n --smooth`.
    Near,
    /// `dedup -f`.
    Feedback,
    /// `minhash`.
    Minhash,
    /// `dedup --substr=8,4`.
    Substr,
    /// `batch run` (its phases: hash, resolve, filter, publish).
    Batch,
    /// `batch run --minhash`.
    BatchMinhash,
    /// `warc dedup` (its state: `--locations FILE`, and the key set when on Redis).
    Warc,
    /// `similar --dedup` (its state: `--index DIR`, the "Dir" store).
    Similar,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum StoreKind {
    /// No store flag: the store lives in the process.
    Embedded,
    /// `--store DIR` (`--index DIR` for `similar`).
    Dir,
    /// `--store redis://...`: a real redis-server (AOF, `appendfsync always`).
    Redis,
    /// `-s MAP`: two real `webdedup server` processes that journal and save.
    Servers,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// A run that finished, then the same command with `-r` (or again, for commands
    /// whose tasks are idempotent and have no `-r`).
    Finished,
    /// kill -9 at 3 seeded random points (fault injection, `WEBDEDUP_FAULT`; a
    /// SIGKILL after a seeded delay for commands without injection points), then
    /// `-r` (or the same command again).
    Kill,
    /// The store process (Redis, a hash server) killed -9 and restarted mid-run.
    StoreRestart,
    /// The store process killed -9 mid-run and not restarted (then, once it is back,
    /// what the message says).
    StoreKilled,
    /// Disk full: injected ENOSPC where files are written atomically
    /// (`snapshot-mid`, `journal-create`), and a file-size limit (`ulimit -f`, writes
    /// fail with EFBIG) at seeded random sizes for every other file; then `-r`.
    DiskFull,
    /// A run killed after finishing outputs, its journal cut at every record boundary
    /// and inside seeded records, then `-r`.
    JournalCut,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    /// Following the fault with `-r` (or the same command) ends with exit 0 and the
    /// uninterrupted run's outputs and store.
    Identical,
    /// The faulted run (or its `-r`) exits 2 with a message saying what to do, and
    /// doing it gives the uninterrupted run's bytes. Exit 0 is allowed only with
    /// those bytes.
    Refused,
    /// Either, case by case (journal cuts: identical where the records the finished
    /// outputs depend on are intact, refused where they are not).
    Either,
}

/// One test per cell.
macro_rules! matrix {
    ($($name:ident: $cmd:ident $store:ident $fault:ident => $want:ident;)*) => {
        /// Every cell of the matrix: (test name, command, store, fault, guarantee).
        const CELLS: &[(&str, Cmd, StoreKind, Fault, Want)] = &[
            $((stringify!($name), Cmd::$cmd, StoreKind::$store, Fault::$fault, Want::$want),)*
        ];
        $(
            #[test]
            fn $name() {
                run_cell(stringify!($name), Cmd::$cmd, StoreKind::$store, Fault::$fault, Want::$want);
            }
        )*
    };
}

matrix! {
    // dedup, exact mode
    exact_embedded_finished: Exact Embedded Finished => Identical;
    exact_embedded_kill: Exact Embedded Kill => Identical;
    exact_embedded_disk_full: Exact Embedded DiskFull => Refused;
    exact_embedded_journal_cut: Exact Embedded JournalCut => Either;
    exact_dir_finished: Exact Dir Finished => Identical;
    exact_dir_kill: Exact Dir Kill => Identical;
    exact_dir_disk_full: Exact Dir DiskFull => Refused;
    exact_dir_journal_cut: Exact Dir JournalCut => Either;
    exact_redis_finished: Exact Redis Finished => Identical;
    exact_redis_kill: Exact Redis Kill => Identical;
    exact_redis_store_restart: Exact Redis StoreRestart => Either;
    exact_redis_store_killed: Exact Redis StoreKilled => Refused;
    exact_redis_disk_full: Exact Redis DiskFull => Refused;
    exact_servers_finished: Exact Servers Finished => Identical;
    exact_servers_kill: Exact Servers Kill => Identical;
    exact_servers_store_restart: Exact Servers StoreRestart => Either;
    exact_servers_store_killed: Exact Servers StoreKilled => Refused;
    exact_servers_disk_full: Exact Servers DiskFull => Refused;

    // dedup, near mode
    near_embedded_finished: Near Embedded Finished => Identical;
    near_embedded_kill: Near Embedded Kill => Identical;
    near_embedded_disk_full: Near Embedded DiskFull => Refused;
    near_embedded_journal_cut: Near Embedded JournalCut => Either;
    near_dir_finished: Near Dir Finished => Identical;
    near_dir_kill: Near Dir Kill => Identical;
    near_dir_disk_full: Near Dir DiskFull => Refused;
    near_dir_journal_cut: Near Dir JournalCut => Either;
    near_redis_finished: Near Redis Finished => Identical;
    near_redis_kill: Near Redis Kill => Identical;
    near_redis_store_restart: Near Redis StoreRestart => Either;
    near_redis_store_killed: Near Redis StoreKilled => Refused;
    near_redis_disk_full: Near Redis DiskFull => Refused;
    near_servers_finished: Near Servers Finished => Identical;
    near_servers_kill: Near Servers Kill => Identical;
    near_servers_store_restart: Near Servers StoreRestart => Either;
    near_servers_store_killed: Near Servers StoreKilled => Refused;
    near_servers_disk_full: Near Servers DiskFull => Refused;

    // dedup, feedback mode (not on Redis: refused, it keeps no locations)
    feedback_embedded_finished: Feedback Embedded Finished => Identical;
    feedback_embedded_kill: Feedback Embedded Kill => Identical;
    feedback_embedded_disk_full: Feedback Embedded DiskFull => Refused;
    feedback_embedded_journal_cut: Feedback Embedded JournalCut => Either;
    feedback_dir_finished: Feedback Dir Finished => Identical;
    feedback_dir_kill: Feedback Dir Kill => Identical;
    feedback_dir_disk_full: Feedback Dir DiskFull => Refused;
    feedback_dir_journal_cut: Feedback Dir JournalCut => Either;
    feedback_servers_finished: Feedback Servers Finished => Identical;
    feedback_servers_kill: Feedback Servers Kill => Identical;
    feedback_servers_store_restart: Feedback Servers StoreRestart => Either;
    feedback_servers_store_killed: Feedback Servers StoreKilled => Refused;
    feedback_servers_disk_full: Feedback Servers DiskFull => Refused;

    // dedup, substring mode
    substr_embedded_finished: Substr Embedded Finished => Identical;
    substr_embedded_kill: Substr Embedded Kill => Identical;
    substr_dir_finished: Substr Dir Finished => Identical;
    substr_dir_kill: Substr Dir Kill => Identical;
    substr_redis_finished: Substr Redis Finished => Identical;
    substr_redis_kill: Substr Redis Kill => Identical;
    substr_servers_finished: Substr Servers Finished => Identical;
    substr_servers_kill: Substr Servers Kill => Identical;

    // minhash (not on Redis: refused, it keeps no locations)
    minhash_embedded_finished: Minhash Embedded Finished => Identical;
    minhash_embedded_kill: Minhash Embedded Kill => Identical;
    minhash_embedded_disk_full: Minhash Embedded DiskFull => Refused;
    minhash_embedded_journal_cut: Minhash Embedded JournalCut => Either;
    minhash_dir_finished: Minhash Dir Finished => Identical;
    minhash_dir_kill: Minhash Dir Kill => Identical;
    minhash_dir_disk_full: Minhash Dir DiskFull => Refused;
    minhash_dir_journal_cut: Minhash Dir JournalCut => Either;
    minhash_servers_finished: Minhash Servers Finished => Identical;
    minhash_servers_kill: Minhash Servers Kill => Identical;
    minhash_servers_store_restart: Minhash Servers StoreRestart => Either;
    minhash_servers_store_killed: Minhash Servers StoreKilled => Refused;
    minhash_servers_disk_full: Minhash Servers DiskFull => Refused;

    // batch run (its tasks are idempotent: the restore is the same command again)
    batch_embedded_finished: Batch Embedded Finished => Identical;
    batch_embedded_kill: Batch Embedded Kill => Identical;
    batch_embedded_disk_full: Batch Embedded DiskFull => Refused;
    batch_dir_finished: Batch Dir Finished => Identical;
    batch_dir_kill: Batch Dir Kill => Identical;
    batch_dir_disk_full: Batch Dir DiskFull => Refused;
    batch_minhash_embedded_finished: BatchMinhash Embedded Finished => Identical;
    batch_minhash_embedded_kill: BatchMinhash Embedded Kill => Identical;
    batch_minhash_embedded_disk_full: BatchMinhash Embedded DiskFull => Refused;

    // warc dedup (no -r: the same command again)
    warc_embedded_kill: Warc Embedded Kill => Identical;
    warc_embedded_disk_full: Warc Embedded DiskFull => Refused;
    warc_redis_kill: Warc Redis Kill => Identical;
    warc_redis_store_restart: Warc Redis StoreRestart => Either;
    warc_redis_store_killed: Warc Redis StoreKilled => Refused;
    warc_redis_disk_full: Warc Redis DiskFull => Refused;

    // similar --dedup (no -r: the same command again)
    similar_embedded_finished: Similar Embedded Finished => Identical;
    similar_embedded_kill: Similar Embedded Kill => Identical;
    similar_embedded_disk_full: Similar Embedded DiskFull => Refused;
    similar_dir_kill: Similar Dir Kill => Identical;
    similar_dir_disk_full: Similar Dir DiskFull => Refused;
}

/// docs/restore.md lists every cell of the matrix by its test name, and no other.
#[test]
fn the_docs_table_lists_every_cell() {
    let doc = read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/restore.md"));
    for (name, ..) in CELLS {
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/restore.md does not list the cell `{name}`"
        );
    }
}

// ---------------------------------------------------------------------------------
// Inputs

fn tmp_root() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webdedup-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Three crawls of two vertical files each, cut from the shipped sample (the first 14
/// documents of each sample file): runs take a fraction of a second in debug builds
/// and hold duplicates within and across crawls.
fn corpus() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tmp_root().join("corpus");
        for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
            let (text, starts) = common::sample_crawl_docs(crawl);
            let (a, b, c) = (starts[0], starts[7], starts[14]);
            std::fs::create_dir_all(dir.join(crawl)).unwrap();
            std::fs::write(dir.join(crawl).join("a.vert"), &text[a..b]).unwrap();
            std::fs::write(dir.join(crawl).join("b.vert"), &text[b..c]).unwrap();
        }
        dir
    })
}

/// Five WARC files of 60 responses each, payloads drawn from 80 bodies, so most
/// later captures are revisits of earlier ones.
fn warcs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tmp_root().join("warcs");
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for f in 0..5 {
            let mut bytes = Vec::new();
            for i in 0..60 {
                let body_no = rng.below(80);
                let body = format!("<html>{}</html>", format!("body {body_no} ").repeat(150));
                let date = format!("2024-01-{:02}T00:{:02}:{:02}Z", f + 1, i / 60, i % 60);
                bytes.extend(common::warc_response(
                    &format!("http://example.com/{f}/{i}"),
                    &date,
                    &body,
                ));
            }
            std::fs::write(dir.join(format!("crawl-{f}.warc")), bytes).unwrap();
        }
        dir
    })
}

/// Deterministic pseudo-random numbers (no dependency): xorshift.
struct Rng(u64);

impl Rng {
    fn seeded(name: &str) -> Rng {
        Rng(xxhash_rust::xxh3::xxh3_64(name.as_bytes()) | 1)
    }

    fn below(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % max.max(1)
    }

    /// In `lo..=hi`.
    fn within(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

// ---------------------------------------------------------------------------------
// Stores

/// A redis-server on loopback with an append-only file synced on every write, so a
/// kill -9 and a restart lose nothing it acknowledged (as `docs/dedup.md` asks of a
/// production setup). Killed on drop.
struct Redis {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Redis {
    fn start() -> Redis {
        let mut r = Redis {
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        r.spawn();
        r
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ])
            .args(["--set-max-intset-entries", "4096", "--dir"])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (scripts/deps.sh installs it)");
        self.child = Some(child);
        let start = Instant::now();
        while self.cli(&["PING"]).trim() != "PONG" {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn cli(&self, args: &[&str]) -> String {
        let o = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli (scripts/deps.sh installs it)");
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Every key of webdedup's key sets (not the per-run retry records), each with
    /// its type and sorted members: the store's content, as one comparable text.
    fn dump(&self) -> Vec<u8> {
        const SCRIPT: &str = "local ks = redis.call('KEYS', 'wd:*') table.sort(ks) \
            local out = {} for _, k in ipairs(ks) do \
              if not string.find(k, ':r:', 1, true) then \
                local t = redis.call('TYPE', k)['ok'] local v = {} \
                if t == 'set' then v = redis.call('SMEMBERS', k) table.sort(v) \
                elseif t == 'hash' then local h = redis.call('HGETALL', k) \
                  for i = 1, #h, 2 do table.insert(v, h[i] .. '=' .. h[i + 1]) end table.sort(v) \
                elseif t == 'string' then v = {redis.call('GET', k)} end \
                table.insert(out, k .. ' ' .. t .. ' ' .. table.concat(v, ',')) \
              end end return out";
        let text = self.cli(&["EVAL", SCRIPT, "0"]);
        assert!(!text.contains("ERR"), "redis dump: {text}");
        text.into_bytes()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Two hash servers that journal and save (`-i/-o s-PORT.snap`) under
/// `dir/servers`, blocks split between them.
fn servers(dir: &Path) -> Cluster {
    let dir = dir.join("servers");
    std::fs::create_dir_all(&dir).unwrap();
    Cluster::persistent(&dir, 2)
}

/// Where a cell's store lives.
enum Store {
    Embedded,
    Dir(PathBuf),
    Redis(Redis),
    Servers(Cluster),
}

impl Store {
    fn kill9(&mut self) {
        match self {
            Store::Redis(r) => r.kill9(),
            Store::Servers(s) => s.servers[0].kill9(),
            _ => unreachable!("no store process"),
        }
    }

    fn restart(&mut self) {
        match self {
            Store::Redis(r) => r.spawn(),
            Store::Servers(s) => {
                s.restart(0);
            }
            _ => unreachable!("no store process"),
        }
    }
}

// ---------------------------------------------------------------------------------
// One run of a cell's command

/// Outputs (relative path, bytes; without the run id of runs on remote stores) and
/// the store's content.
#[derive(Clone, PartialEq)]
struct State {
    outputs: Vec<(String, Vec<u8>)>,
    store: Vec<(String, Vec<u8>)>,
}

struct Ran {
    status: ExitStatus,
    stderr: String,
}

impl Ran {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// A command on a store, in a directory of its own.
struct Ctx {
    cmd: Cmd,
    dir: tempfile::TempDir,
    store: Store,
    out: PathBuf,
}

impl Ctx {
    fn new(cmd: Cmd, kind: StoreKind) -> Ctx {
        let dir = tempfile::tempdir_in(tmp_root()).unwrap();
        let store = match kind {
            StoreKind::Embedded => Store::Embedded,
            StoreKind::Dir => Store::Dir(dir.path().join("store")),
            StoreKind::Redis => Store::Redis(Redis::start()),
            StoreKind::Servers => Store::Servers(servers(dir.path())),
        };
        let out = dir.path().join("out");
        Ctx {
            cmd,
            dir,
            store,
            out,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The journal of a `dedup` / `minhash` run (in the store directory, else in the
    /// output directory).
    fn journal(&self) -> PathBuf {
        match &self.store {
            Store::Dir(d) => d.join("journal"),
            _ => self.out.join(".webdedup.journal"),
        }
    }

    /// The command line; `restore`: what finishes an interrupted run.
    fn args(&self, restore: bool) -> Vec<OsString> {
        let mut a: Vec<OsString> = Vec::new();
        let strs =
            |a: &mut Vec<OsString>, items: &[&str]| a.extend(items.iter().map(OsString::from));
        let (input, out) = (corpus().as_os_str(), self.out.as_os_str());
        match self.cmd {
            Cmd::Exact | Cmd::Near | Cmd::Feedback | Cmd::Minhash | Cmd::Substr => {
                let sub = if self.cmd == Cmd::Minhash {
                    "minhash"
                } else {
                    "dedup"
                };
                strs(
                    &mut a,
                    &[sub, "-q", "--dd", "--chunk-bytes", "20000", "-t", "2"],
                );
                a.extend(["-i".into(), input.into(), "-o".into(), out.into()]);
                match self.cmd {
                    Cmd::Near => strs(&mut a, &["-n", "--smooth"]),
                    Cmd::Substr => strs(&mut a, &["--substr=8,4"]),
                    Cmd::Feedback => strs(&mut a, &["-f"]),
                    _ => {}
                }
            }
            Cmd::Batch | Cmd::BatchMinhash => {
                strs(
                    &mut a,
                    &["batch", "run", "-q", "--dd", "--chunk-bytes", "20000"],
                );
                strs(&mut a, &["--task-count", "2", "-t", "2"]);
                a.extend(["-i".into(), input.into(), "-o".into(), out.into()]);
                a.extend(["-w".into(), self.path("work").into()]);
                if self.cmd == Cmd::BatchMinhash {
                    strs(&mut a, &["--minhash"]);
                }
            }
            Cmd::Warc => {
                strs(&mut a, &["warc", "dedup", "-q", "--locations"]);
                a.push(self.path("locations.tsv").into());
                a.extend(["-o".into(), out.into(), warcs().into()]);
            }
            Cmd::Similar => {
                strs(
                    &mut a,
                    &["similar", "-q", "--dedup", "-t", "2", "--output-dir"],
                );
                a.extend([out.into(), input.into()]);
            }
        }
        match &self.store {
            Store::Embedded => {}
            Store::Dir(d) => {
                let flag = if self.cmd == Cmd::Similar {
                    "--index"
                } else {
                    "--store"
                };
                a.extend([flag.into(), d.into()]);
            }
            Store::Redis(r) => {
                a.extend(["--store".into(), r.url().into()]);
                if self.cmd != Cmd::Warc {
                    strs(&mut a, &["--capacity", "100000"]);
                }
            }
            Store::Servers(s) => {
                a.extend(["-s".into(), s.map.as_os_str().into()]);
                strs(&mut a, &["--server-timeout", "3"]);
            }
        }
        if restore && has_restore_flag(self.cmd) {
            strs(&mut a, &["-r"]);
        }
        a
    }

    /// The command, its stderr into a file (a pipe nobody reads could fill).
    fn command(&self, restore: bool, fault: Option<&str>, kib_limit: Option<u64>) -> Command {
        let mut c = match kib_limit {
            // A file-size limit: writes past it fail with EFBIG, as on a full disk
            // (SIGXFSZ ignored, which exec keeps).
            Some(kib) => {
                let mut c = Command::new("bash");
                c.args([
                    "-c",
                    &format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\" \"$@\""),
                    env!("CARGO_BIN_EXE_webdedup"),
                ]);
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_webdedup")),
        };
        c.args(self.args(restore));
        match fault {
            Some(f) => c.env("WEBDEDUP_FAULT", f),
            None => c.env_remove("WEBDEDUP_FAULT"),
        };
        c.stdin(Stdio::null()).stdout(Stdio::null());
        c
    }

    fn spawn(&self, restore: bool, fault: Option<&str>, kib: Option<u64>) -> (Child, PathBuf) {
        let err = self.path(&format!("stderr-{}", unique()));
        let child = self
            .command(restore, fault, kib)
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        (child, err)
    }

    fn run_with(&self, restore: bool, fault: Option<&str>, kib: Option<u64>) -> Ran {
        let (child, err) = self.spawn(restore, fault, kib);
        finish(child, &err)
    }

    fn run(&self) -> Ran {
        self.run_with(false, None, None)
    }

    fn restore(&self) -> Ran {
        self.run_with(true, None, None)
    }

    fn state(&mut self) -> State {
        let outputs = if self.out.exists() {
            tree(&self.out)
                .into_iter()
                .filter(|(n, _)| !n.ends_with(".webdedup.run-id"))
                .collect()
        } else {
            Vec::new()
        };
        let store = match &mut self.store {
            Store::Embedded => match self.cmd {
                Cmd::Warc => file_state(&self.dir.path().join("locations.tsv")),
                _ => Vec::new(),
            },
            Store::Dir(d) if d.exists() => {
                tree(d).into_iter().filter(|(n, _)| n != "lock").collect()
            }
            Store::Dir(_) => Vec::new(),
            Store::Redis(r) => {
                let mut s = vec![("redis".to_string(), r.dump())];
                if self.cmd == Cmd::Warc {
                    s.extend(file_state(&self.dir.path().join("locations.tsv")));
                }
                s
            }
            Store::Servers(s) => {
                let keys = s.saved_keys();
                vec![(
                    "servers".to_string(),
                    keys.iter().flat_map(|k| k.to_le_bytes()).collect(),
                )]
            }
        };
        State { outputs, store }
    }
}

fn file_state(p: &Path) -> Vec<(String, Vec<u8>)> {
    match std::fs::read(p) {
        Ok(b) => vec![(p.file_name().unwrap().to_string_lossy().into_owned(), b)],
        Err(_) => Vec::new(),
    }
}

fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `dedup` and `minhash` finish with `-r`; the others by running again.
fn has_restore_flag(cmd: Cmd) -> bool {
    matches!(
        cmd,
        Cmd::Exact | Cmd::Near | Cmd::Feedback | Cmd::Minhash | Cmd::Substr
    )
}

/// Waits for a run (at most two minutes: a hung run fails its cell).
fn finish(mut child: Child, err: &Path) -> Ran {
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a run did not end within 120 s: {}", read(err));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ran {
        status,
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
    }
}

// ---------------------------------------------------------------------------------
// The uninterrupted runs

struct Reference {
    state: State,
    /// How long it ran (to aim signals inside a run).
    took: Duration,
}

/// The uninterrupted run of a command on a store kind, made once per test binary.
fn reference(cmd: Cmd, kind: StoreKind) -> Arc<Reference> {
    type Slot = Arc<OnceLock<Arc<Reference>>>;
    static REFS: OnceLock<Mutex<HashMap<(Cmd, StoreKind), Slot>>> = OnceLock::new();
    let slot = REFS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((cmd, kind))
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let mut c = Ctx::new(cmd, kind);
        let t = Instant::now();
        let r = c.run();
        let took = t.elapsed();
        assert_eq!(r.code(), Some(0), "reference run: {}", r.stderr);
        let state = c.state();
        assert!(
            !state.outputs.is_empty(),
            "reference run wrote no output: {}",
            r.stderr
        );
        Arc::new(Reference { state, took })
    })
    .clone()
}

// ---------------------------------------------------------------------------------
// Checks

/// How a run ended, checked against the rule: exit 0 only with the uninterrupted
/// run's bytes, or exit 2 with a message that says what to do.
#[derive(Debug, PartialEq)]
enum Ending {
    Identical,
    Refused,
}

fn differences(got: &State, want: &State) -> String {
    let mut d = Vec::new();
    let names = |t: &[(String, Vec<u8>)]| t.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    for (what, g, w) in [
        ("output", &got.outputs, &want.outputs),
        ("store", &got.store, &want.store),
    ] {
        if names(g) != names(w) {
            d.push(format!(
                "{what} files: {:?} instead of {:?}",
                names(g),
                names(w)
            ));
        }
        for (a, b) in g.iter().zip(w.iter()) {
            if a.0 == b.0 && a.1 != b.1 {
                if std::env::var_os("MATRIX_KEEP").is_some() {
                    let n = unique();
                    std::fs::write(tmp_root().join(format!("got-{n}")), &a.1).unwrap();
                    std::fs::write(tmp_root().join(format!("want-{n}")), &b.1).unwrap();
                }
                d.push(format!(
                    "{what} {} differs ({} bytes instead of {})",
                    a.0,
                    a.1.len(),
                    b.1.len()
                ));
            }
        }
    }
    d.join("; ")
}

thread_local! {
    /// What a cell found wrong that does not stop it from going on (a refusal whose
    /// message does not say what to do): reported when the cell ends, so its
    /// failure also tells whether doing the obvious thing restores the bytes.
    static LATER: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn fail_later(what: String) {
    LATER.with(|l| l.borrow_mut().push(what));
}

/// Runs one round of a cell; a failed round is reported when the cell ends, so the
/// other rounds (kill points, journal cuts) still run and a failure lists them all.
fn attempt<T>(f: impl FnOnce() -> T) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(t) => Some(t),
        Err(e) => {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a round failed".into());
            fail_later(msg);
            None
        }
    }
}

/// The hints a refusal's message gives: the flag or the action that finishes the run.
fn says_what_to_do(stderr: &str) -> bool {
    let e = stderr.to_lowercase();
    e.contains("webdedup: error:")
        && [
            "--restore",
            " -r",
            "again",
            "remove",
            "start over",
            "restart",
        ]
        .iter()
        .any(|h| e.contains(h))
}

/// Checks the end of a run that follows a fault (`what` says which), reading the
/// state only when the run claims success.
fn conclude(c: &mut Ctx, r: &Ran, want: &State, what: &str) -> Ending {
    match r.code() {
        Some(0) => {
            let got = c.state();
            let d = differences(&got, want);
            assert!(
                d.is_empty(),
                "{what}: exit 0 with outputs or store unlike an uninterrupted run's: {d}\n{}",
                r.stderr
            );
            Ending::Identical
        }
        Some(2) => {
            if !says_what_to_do(&r.stderr) {
                fail_later(format!(
                    "{what}: exit 2 without saying what to do: {}",
                    r.stderr.trim_end()
                ));
            }
            assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
            Ending::Refused
        }
        _ => panic!(
            "{what}: ended with {:?}, neither 0 nor 2: {}",
            r.status, r.stderr
        ),
    }
}

/// A run that was killed (or ended by itself: then it must have finished cleanly).
fn killed_or_finished(c: &mut Ctx, r: &Ran, want: &State, what: &str) -> bool {
    if r.status.success() {
        let d = differences(&c.state(), want);
        assert!(d.is_empty(), "{what}: finished before the fault with: {d}");
        return false;
    }
    let aborted = r.stderr.contains("fault injection: abort at");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        aborted || r.status.signal().is_some(),
        "{what}: ended with {:?} instead of being killed: {}",
        r.status,
        r.stderr
    );
    true
}

// ---------------------------------------------------------------------------------
// The runners, one per fault kind

fn run_cell(name: &str, cmd: Cmd, kind: StoreKind, fault: Fault, want: Want) {
    let reference = reference(cmd, kind);
    let mut rng = Rng::seeded(name);
    let started = Instant::now();
    match fault {
        Fault::Finished => finished_then_restore(cmd, kind, &reference, want),
        Fault::Kill => kill_then_restore(cmd, kind, &reference, &mut rng),
        Fault::StoreRestart => store_process_fault(cmd, kind, &reference, want, true),
        Fault::StoreKilled => store_process_fault(cmd, kind, &reference, want, false),
        Fault::DiskFull => disk_full(cmd, kind, &reference, &mut rng),
        Fault::JournalCut => journal_cut(cmd, kind, &reference, &mut rng),
    }
    eprintln!("cell {name}: {:.1} s", started.elapsed().as_secs_f64());
    let later = LATER.with(|l| std::mem::take(&mut *l.borrow_mut()));
    assert!(later.is_empty(), "{}", later.join("\n"));
}

fn expect(want: Want, got: Ending, what: &str) {
    match (want, got) {
        (Want::Identical, Ending::Refused) => {
            panic!("{what}: refused where the run must end identical")
        }
        (Want::Refused | Want::Either, _) | (Want::Identical, Ending::Identical) => {}
    }
}

fn finished_then_restore(cmd: Cmd, kind: StoreKind, reference: &Reference, want: Want) {
    let mut c = Ctx::new(cmd, kind);
    let r = c.run();
    assert_eq!(r.code(), Some(0), "{}", r.stderr);
    let r = c.restore();
    let end = conclude(&mut c, &r, &reference.state, "restore after a finished run");
    expect(want, end, "restore after a finished run");
}

/// The fault points a command passes, with the range of counts to draw from.
fn kill_points(cmd: Cmd, kind: StoreKind) -> Vec<(&'static str, u64, u64)> {
    let mut p = Vec::new();
    match cmd {
        Cmd::Exact | Cmd::Near | Cmd::Feedback | Cmd::Minhash | Cmd::Substr => {
            p.extend([
                ("commit", 1, 24),
                // Up to the reference's output bytes (see `kill_then_restore`).
                ("output-bytes", 1, 0),
                ("rename", 1, 6),
                ("renamed", 1, 6),
            ]);
            if matches!(kind, StoreKind::Embedded | StoreKind::Dir) {
                p.extend([
                    ("journal-record", 1, 24),
                    ("journal-torn", 1, 24),
                    ("journal-sync", 1, 6),
                ]);
            }
            if kind == StoreKind::Dir {
                p.extend([
                    ("snapshot-mid", 1, 1),
                    ("snapshot-renamed", 1, 1),
                    ("journal-create", 1, 1),
                ]);
            }
        }
        Cmd::Batch | Cmd::BatchMinhash => {
            p.extend([
                ("batch-hash-written", 1, 2),
                ("batch-hash-published", 1, 2),
                ("batch-resolve-partition", 1, 40),
                ("batch-resolve-published", 1, 6),
                ("batch-filter-written", 1, 2),
            ]);
            if kind == StoreKind::Dir {
                p.extend([("snapshot-mid", 1, 1), ("snapshot-renamed", 1, 1)]);
            }
        }
        // No injection points: SIGKILL from outside.
        Cmd::Warc | Cmd::Similar => {}
    }
    p
}

/// Three kills at seeded points, each in a fresh directory and store, then the
/// restore: it must end with the uninterrupted run's bytes. Without injection points
/// the kill is a SIGKILL at a seeded moment; a run that ended first shrinks the
/// window (the reference may have run slower), up to eight tries for three hits.
fn kill_then_restore(cmd: Cmd, kind: StoreKind, reference: &Reference, rng: &mut Rng) {
    let points = kill_points(cmd, kind);
    let mut span = reference.took.as_millis() as u64;
    let mut hit = 0;
    for round in 0..8 {
        if hit == 3 || (!points.is_empty() && round == 3) {
            break;
        }
        let mut c = Ctx::new(cmd, kind);
        let (r, what) = if points.is_empty() {
            let ms = rng.below(span);
            let (mut child, err) = c.spawn(false, None, None);
            std::thread::sleep(Duration::from_millis(ms));
            let _ = child.kill(); // fails only if it already exited
            (finish(child, &err), format!("SIGKILL after {ms} ms"))
        } else {
            let (point, lo, mut hi) = points[rng.below(points.len() as u64) as usize];
            if hi == 0 {
                hi = reference
                    .state
                    .outputs
                    .iter()
                    .map(|(_, b)| b.len() as u64)
                    .sum();
            }
            let f = format!("{point}:{}", rng.within(lo, hi));
            (c.run_with(false, Some(&f), None), f)
        };
        let what = format!("round {round}, {what}");
        if !killed_or_finished(&mut c, &r, &reference.state, &what) {
            span = (span * 2 / 3).max(5);
            continue;
        }
        hit += 1;
        attempt(|| {
            let r = c.restore();
            let end = conclude(&mut c, &r, &reference.state, &format!("restore, {what}"));
            expect(Want::Identical, end, &what);
        });
    }
    // Runs that finished before their fault are checked too, but a cell whose
    // faults never hit tests nothing.
    assert!(hit > 0, "no kill hit a run");
}

/// Output files a run has finished (its outputs under their final names).
fn finished_outputs(cmd: Cmd, out: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![out.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if match cmd {
                Cmd::Warc => name.ends_with(".warc"),
                _ => name.ends_with(".dedup"),
            } {
                n += 1;
            }
        }
    }
    n
}

/// The store process killed -9 while the run is stopped (SIGSTOP) after its first
/// finished output, so the kill falls mid-run whatever the machine's speed; the run
/// then goes on (SIGCONT). With `restart`, the store is back 200 ms later; without,
/// only after the run has ended, before what its message says is done.
fn store_process_fault(
    cmd: Cmd,
    kind: StoreKind,
    reference: &Reference,
    want: Want,
    restart: bool,
) {
    let mut c = Ctx::new(cmd, kind);
    let (mut child, err) = c.spawn(false, None, None);
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the run ended ({status}) before its first output was finished: {}",
                read(&err)
            );
        }
        if finished_outputs(cmd, &c.out) >= 1 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no output finished"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    signal(&child, libc::SIGSTOP);
    let total = reference
        .state
        .outputs
        .iter()
        .filter(|(n, _)| finished_outputs_name(cmd, n))
        .count();
    assert!(
        finished_outputs(cmd, &c.out) < total,
        "the run finished before it could be stopped"
    );
    c.store.kill9();
    // The run goes on against the dead store for a while (its requests fail, it
    // reconnects or gives up) before the store is back.
    signal(&child, libc::SIGCONT);
    if restart {
        std::thread::sleep(Duration::from_millis(200));
        c.store.restart();
    }
    let r = finish(child, &err);
    let what = if restart {
        "store killed and restarted mid-run"
    } else {
        "store killed mid-run"
    };
    if !restart {
        assert_eq!(
            r.code(),
            Some(2),
            "{what}: the run must stop with exit 2: {}",
            r.stderr
        );
        c.store.restart();
    }
    let mut end = conclude(&mut c, &r, &reference.state, what);
    if end == Ending::Refused {
        // What the message says: the same command with -r (or again).
        let r = c.restore();
        end = conclude(&mut c, &r, &reference.state, &format!("{what}, then -r"));
        assert_eq!(end, Ending::Identical, "{what}: -r refused: {}", r.stderr);
        end = Ending::Refused;
    }
    expect(want, end, what);
}

fn finished_outputs_name(cmd: Cmd, name: &str) -> bool {
    match cmd {
        Cmd::Warc => name.ends_with(".warc"),
        _ => name.ends_with(".dedup"),
    }
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on the pid of a child not yet reaped (it cannot be reused).
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({sig})");
}

/// Disk-full faults, two per cell: injected ENOSPC at a seeded point where the
/// command writes a file atomically (if it has any), and a file-size limit at a
/// seeded size below the largest output. The run must stop with exit 2 naming the error (or, if no write reached
/// the limit, end identical); once there is room, `-r` ends identical.
fn disk_full(cmd: Cmd, kind: StoreKind, reference: &Reference, rng: &mut Rng) {
    let mut enospc: Vec<&str> = Vec::new();
    if has_restore_flag(cmd) && matches!(kind, StoreKind::Embedded | StoreKind::Dir) {
        enospc.push("journal-create:1:enospc");
    }
    if kind == StoreKind::Dir && !matches!(cmd, Cmd::Similar) {
        enospc.push("snapshot-mid:1:enospc");
    }
    let largest = reference
        .state
        .outputs
        .iter()
        .map(|(_, b)| b.len() as u64)
        .max()
        .unwrap_or(0);
    let mut refused = 0;
    // One ENOSPC point (a seeded one) where there are any, and a size limit.
    let enospc = (!enospc.is_empty()).then(|| enospc[rng.below(enospc.len() as u64) as usize]);
    for round in 0..2 {
        let mut c = Ctx::new(cmd, kind);
        let (fault, kib) = match enospc.filter(|_| round == 0) {
            Some(f) => (Some(f), None),
            None => (None, Some(rng.within(1, (largest / 1024).max(2)))),
        };
        let what = match (fault, kib) {
            (Some(f), _) => format!("round {round}, {f}"),
            (_, Some(k)) => format!("round {round}, files limited to {k} KiB"),
            _ => unreachable!(),
        };
        let end = attempt(|| {
            let r = c.run_with(false, fault, kib);
            let end = conclude(&mut c, &r, &reference.state, &what);
            if end == Ending::Refused {
                let e = r.stderr.to_lowercase();
                if !(e.contains("no space left") || e.contains("file too large")) {
                    fail_later(format!(
                        "{what}: the message does not name the error: {}",
                        r.stderr
                    ));
                }
                let r = c.restore();
                let end = conclude(&mut c, &r, &reference.state, &format!("{what}, then -r"));
                assert_eq!(end, Ending::Identical, "{what}: -r refused: {}", r.stderr);
            }
            end
        });
        refused += usize::from(end != Some(Ending::Identical));
    }
    assert!(refused > 0, "no disk-full fault was reached");
}

fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    if !from.exists() {
        return;
    }
    std::fs::create_dir_all(to).unwrap();
    for (rel, bytes) in tree(from) {
        let p = to.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

/// A run killed after its second finished output; its journal then cut at every
/// record boundary and inside two seeded records, each time on a copy of the
/// crash's state, and restored. A refusal must say to start over without `-r`, and
/// doing so must give the uninterrupted run's bytes.
fn journal_cut(cmd: Cmd, kind: StoreKind, reference: &Reference, rng: &mut Rng) {
    let mut c = Ctx::new(cmd, kind);
    let r = c.run_with(false, Some("renamed:2"), None);
    assert!(
        r.stderr.contains("fault injection: abort at"),
        "not killed: {}",
        r.stderr
    );
    let journal = c.journal();
    let full = std::fs::read(&journal).expect("the killed run's journal");
    let store_dir = match &c.store {
        Store::Dir(d) => Some(d.clone()),
        _ => None,
    };
    let (crash_out, crash_store) = (c.path("crash-out"), c.path("crash-store"));
    copy_dir(&c.out, &crash_out);
    if let Some(d) = &store_dir {
        copy_dir(d, &crash_store);
    }
    let (header, records) = journal_records(&full);
    let mut cuts: Vec<(usize, String)> = vec![(header, "after the header".into())];
    for (i, rec) in records.iter().enumerate() {
        cuts.push((rec.end, format!("after record {i}")));
    }
    for _ in 0..2 {
        let i = rng.below(records.len() as u64) as usize;
        let rec = &records[i];
        let at = rec.start + 1 + rng.below((rec.len() - 1) as u64) as usize;
        cuts.push((at, format!("inside record {i} (byte {at})")));
    }
    let (mut identical, mut refused, mut failed) = (0, 0, 0);
    for (at, where_) in cuts {
        copy_dir(&crash_out, &c.out);
        if let Some(d) = &store_dir {
            copy_dir(&crash_store, d);
        }
        std::fs::write(&journal, &full[..at]).unwrap();
        let what = format!("journal of {} records cut {where_}", records.len());
        let end = attempt(|| {
            let r = c.restore();
            let end = conclude(&mut c, &r, &reference.state, &what);
            if end == Ending::Refused {
                if !r.stderr.contains("without --restore") {
                    fail_later(format!(
                        "{what}: the refusal does not say to start over: {}",
                        r.stderr
                    ));
                }
                // What it says: remove the journal and the outputs, run again.
                std::fs::remove_file(&journal).unwrap();
                std::fs::remove_dir_all(&c.out).unwrap();
                let r = c.run();
                let again = conclude(
                    &mut c,
                    &r,
                    &reference.state,
                    &format!("{what}, started over"),
                );
                assert_eq!(again, Ending::Identical, "{what}: starting over refused");
            }
            end
        });
        match end {
            Some(Ending::Identical) => identical += 1,
            Some(Ending::Refused) => refused += 1,
            None => failed += 1,
        }
    }
    eprintln!("{identical} cuts restored identical, {refused} refused, {failed} failed");
}
