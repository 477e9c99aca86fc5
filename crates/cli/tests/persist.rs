//! Persistence and crash safety, end to end with the real binary: incremental runs
//! against a kept store, kill (fault injection and SIGKILL) then `--restore`, clean
//! stops by signal, and damaged snapshots and journals.
//!
//! The rule checked everywhere: after a crash at any point and a restore, the
//! outputs and the saved store are byte-identical to an uninterrupted run.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_webdedup")
}

/// A small corpus cut from the shipped sample: three crawls of two files each (one
/// gzipped), the first documents of each sample file, so runs take a fraction of a
/// second in debug builds and still have plenty of duplicates across crawls.
fn corpus() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("webdedup-persist-corpus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
            let (text, starts) = common::sample_crawl_docs(crawl);
            let (a, b, c) = (starts[0], starts[14], starts[28]);
            std::fs::create_dir_all(dir.join(crawl)).unwrap();
            std::fs::write(dir.join(crawl).join("a.vert"), &text[a..b]).unwrap();
            std::fs::write(dir.join(crawl).join("b.vert.gz"), gzip(&text[b..c])).unwrap();
        }
        dir
    })
}

/// Output files (relative path, bytes) and the saved snapshot.
type State = (Vec<(String, Vec<u8>)>, Option<Vec<u8>>);

struct Run {
    out: PathBuf,
    store: PathBuf,
    args: Vec<String>,
}

impl Run {
    fn new(root: &Path, name: &str, extra: &[&str]) -> Run {
        let out = root.join(format!("{name}-out"));
        let store = root.join(format!("{name}-store"));
        let mut args: Vec<String> = vec![
            "dedup".into(),
            "-i".into(),
            corpus().to_str().unwrap().into(),
            "-o".into(),
            out.to_str().unwrap().into(),
            "-q".into(),
            "--dd".into(),
            "--chunk-bytes".into(),
            "10000".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        Run { out, store, args }
    }

    fn with_store(mut self) -> Run {
        self.args.push("--store".into());
        self.args.push(self.store.to_str().unwrap().into());
        self
    }

    fn command(&self, restore: bool, fault: Option<&str>) -> Command {
        let mut c = Command::new(bin());
        c.args(&self.args);
        if restore {
            c.arg("--restore");
        }
        match fault {
            Some(f) => c.env("WEBDEDUP_FAULT", f),
            None => c.env_remove("WEBDEDUP_FAULT"),
        };
        c
    }

    fn run(&self, restore: bool, fault: Option<&str>) -> Output {
        self.command(restore, fault).output().unwrap()
    }

    /// Restores the run (no fault) and asserts it ends with `want`'s outputs and
    /// store.
    fn restores_to(&self, what: &str, want: &State) {
        let o = self.run(true, None);
        assert!(o.status.success(), "{what}: restore failed: {}", stderr(&o));
        assert_same(what, &self.state(), want);
    }

    fn state(&self) -> State {
        (
            tree(&self.out),
            std::fs::read(self.store.join("store.snap")).ok(),
        )
    }
}

fn reference(root: &Path, store: bool) -> State {
    let mut r = Run::new(root, if store { "ref-store" } else { "ref" }, &["-t", "2"]);
    if store {
        r = r.with_store();
    }
    let _ = std::fs::remove_dir_all(&r.out);
    let _ = std::fs::remove_dir_all(&r.store);
    let o = r.run(false, None);
    ok(&o);
    r.state()
}

fn assert_same(what: &str, got: &State, want: &State) {
    assert_same_files(what, &got.0, &want.0);
    assert!(got.1 == want.1, "{what}: saved store differs");
}

/// Crash at a fault point, then restore (repeatedly if the restore itself is
/// given faults), and compare with the uninterrupted run.
fn crash_and_restore(root: &Path, name: &str, extra: &[&str], store: bool, faults: &[&str]) {
    let want = reference(root, store);
    let mut r = Run::new(root, name, extra);
    if store {
        r = r.with_store();
    }
    let mut restore = false;
    for f in faults {
        let o = r.run(restore, Some(f));
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains("fault injection: abort at"),
            "{name}: fault {f} was not reached (status {:?}): {err}",
            o.status
        );
        restore = true;
    }
    r.restores_to(name, &want);
}

#[test]
fn kill_at_fault_points_then_restore_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str])] = &[
        ("journal-record:1", &["-t", "1"]),
        ("journal-record:7", &["-t", "2"]),
        ("journal-record:30", &["-t", "1", "--fsync", "off"]),
        ("journal-torn:1", &["-t", "2"]),
        ("journal-torn:12", &["-t", "1"]),
        ("journal-torn:25", &["-t", "2", "--fsync", "always"]),
        ("commit:3", &["-t", "1"]),
        ("commit:20", &["-t", "2"]),
        ("output-bytes:1", &["-t", "2"]),
        ("output-bytes:150000", &["-t", "1"]),
        ("output-bytes:200000", &["-t", "2", "--fsync", "off"]),
        ("journal-sync:1", &["-t", "1"]),
        ("journal-sync:4", &["-t", "2"]),
        ("rename:1", &["-t", "2"]),
        ("rename:3", &["-t", "1"]),
        ("renamed:2", &["-t", "2"]),
        ("renamed:6", &["-t", "1"]),
        ("snapshot-mid:1", &["-t", "2"]),
        ("snapshot-renamed:1", &["-t", "1"]),
        ("journal-create:1", &["-t", "1"]),
    ];
    for (i, (fault, extra)) in cases.iter().enumerate() {
        crash_and_restore(dir.path(), &format!("case{i}"), extra, true, &[fault]);
    }
}

#[test]
fn kill_without_a_store_dir_resumes_from_the_output_journal() {
    let dir = tempfile::tempdir().unwrap();
    for (i, f) in [
        "journal-record:9",
        "journal-torn:4",
        "rename:2",
        "output-bytes:250000",
    ]
    .iter()
    .enumerate()
    {
        crash_and_restore(
            dir.path(),
            &format!("nostore{i}"),
            &["-t", "2"],
            false,
            &[f],
        );
    }
}

/// The references of `.dropped` lines (feedback mode) that name an original.
fn named_originals(state: &State) -> usize {
    state
        .0
        .iter()
        .filter(|f| f.0.ends_with(".dropped"))
        .flat_map(|f| {
            String::from_utf8_lossy(&f.1)
                .into_owned()
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .filter(|l| l.starts_with("<t>") && !l.contains("\t0:0"))
        .count()
}

/// Issue 27 FB: feedback mode's `.dropped` lines name each dropped paragraph's
/// original by where its key was first seen. The store kept that in memory only:
/// after a kill or a stop by signal and `--restore`, replayed paragraphs (and
/// repeats of keys the journal or snapshot brought back) named `0:0`, and the
/// restore exited 0. The journal's decision records and the store directory now
/// carry the locations: the outputs are byte-identical to an uninterrupted run's
/// and `webdedup check` confirms every reference.
#[test]
fn feedback_references_survive_a_kill_or_a_stop_and_a_restore() {
    let dir = tempfile::tempdir().unwrap();
    // Exact mode with and without a store directory; near mode (its probes are
    // answered with originals too).
    for (store, near) in [(true, false), (false, false), (true, true)] {
        let mode: &[&str] = if near {
            &["-t", "2", "-f", "-n"]
        } else {
            &["-t", "2", "-f"]
        };
        let new = |name: &str| {
            let r = Run::new(dir.path(), name, mode);
            if store {
                r.with_store()
            } else {
                r
            }
        };
        let reference = new(&format!("fb-ref-{store}-{near}"));
        let o = reference.run(false, None);
        ok(&o);
        let want = reference.state();
        assert!(
            named_originals(&want) > 50,
            "the reference names few originals"
        );
        for (i, fault) in [
            "journal-record:9",
            "journal-torn:14",
            "commit:20",
            "renamed:3",
            "stop:9",
            "stop:30",
        ]
        .iter()
        .enumerate()
        {
            let what = format!("store {store}, near {near}, {fault}");
            let r = new(&format!("fb{i}-{store}-{near}"));
            let o = r.run(false, Some(fault));
            if fault.starts_with("stop") {
                assert!(
                    matches!(o.status.code(), Some(0) | Some(3)),
                    "{what}: {}",
                    stderr(&o)
                );
            } else {
                assert!(
                    stderr(&o).contains("fault injection: abort at"),
                    "{what}: {}",
                    stderr(&o)
                );
            }
            r.restores_to(&what, &want);
            let mut check = Command::new(bin());
            check.args(["check", "-i", corpus().to_str().unwrap(), "-o"]);
            check.arg(&r.out);
            if near {
                check.arg("--near");
            }
            let o = check.output().unwrap();
            assert!(
                o.status.success(),
                "{what}: check: {}{}",
                stderr(&o),
                String::from_utf8_lossy(&o.stdout)
            );
            assert!(
                !r.store.join("store.locations").exists(),
                "{what}: the finished run left its locations"
            );
        }
    }
}

#[test]
fn crashes_during_restores_still_converge() {
    let dir = tempfile::tempdir().unwrap();
    crash_and_restore(
        dir.path(),
        "multi",
        &["-t", "2"],
        true,
        &[
            "journal-record:5",
            "journal-torn:6",
            "rename:1",
            "commit:4",
            "snapshot-mid:1",
        ],
    );
    // A clean stop (decision logs + snapshot), then a crash in the restore.
    let want = reference(dir.path(), true);
    let r = Run::new(dir.path(), "stop-then-crash", &["-t", "1"]).with_store();
    let o = r.run(false, Some("stop:9"));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let logs = tree(&r.out)
        .into_iter()
        .filter(|f| f.0.ends_with(".dedup.log"))
        .count();
    assert_eq!(logs, 1, "one unfinished output, one decision log");
    assert!(
        !r.store.join("journal").exists(),
        "journal removed after the save"
    );
    let o = r.run(true, Some("journal-record:3"));
    assert!(!o.status.success());
    let o = r.run(true, Some("stop-logs:1"));
    assert!(
        stderr(&o).contains("abort") || o.status.code() == Some(0),
        "{}",
        stderr(&o)
    );
    r.restores_to("stop-then-crash", &want);
}

#[test]
fn clean_stops_at_many_points_then_restore() {
    let dir = tempfile::tempdir().unwrap();
    let want = reference(dir.path(), true);
    for n in [1, 5, 17, 33] {
        let r = Run::new(dir.path(), &format!("stop{n}"), &["-t", "2"]).with_store();
        let o = r.run(false, Some(&format!("stop:{n}")));
        assert!(
            matches!(o.status.code(), Some(0) | Some(3)),
            "{}",
            stderr(&o)
        );
        r.restores_to(&format!("stop:{n}"), &want);
    }
}

/// Deterministic pseudo-random numbers (no dependency): xorshift.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, max: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % max.max(1)
    }
}

#[test]
fn sigkill_and_sigterm_from_outside_at_random_times() {
    let dir = tempfile::tempdir().unwrap();
    let want = reference(dir.path(), true);
    // How long an uninterrupted run takes here, to aim the signals inside it.
    let t = std::time::Instant::now();
    let probe = Run::new(dir.path(), "probe", &["-t", "2"]).with_store();
    assert!(probe.run(false, None).status.success());
    let mut span = (t.elapsed().as_millis() as u64).max(20);
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let (mut interrupted, mut runs) = (0, 0);
    // At least 8 runs and 3 of them hit mid-way: the probe may have run slower
    // than the runs after it (other tests beside it), so the window shrinks after
    // each run the signal came too late for.
    for i in 0..24 {
        if i >= 8 && interrupted >= 3 {
            break;
        }
        runs += 1;
        let ms = rng.below(span);
        let r = Run::new(
            dir.path(),
            &format!("kill{i}"),
            &["-t", if i % 2 == 0 { "1" } else { "2" }],
        )
        .with_store();
        let signal = if i % 3 == 2 {
            libc_sig::TERM
        } else {
            libc_sig::KILL
        };
        let mut child = r
            .command(false, None)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        if signal == libc_sig::KILL {
            let _ = child.kill(); // SIGKILL; fails only if it already exited
        } else {
            let st = Command::new("kill")
                .args([&format!("-{signal}"), &child.id().to_string()])
                .status()
                .expect("the kill command");
            // It fails only if the process already exited.
            let _ = st;
        }
        let status = child.wait().unwrap();
        interrupted += !status.success() as usize;
        if status.success() {
            span = (span * 2 / 3).max(5);
        }
        if signal == libc_sig::TERM {
            // Finished before the signal, stopped cleanly (128 + 15), or killed
            // before the handler was installed.
            use std::os::unix::process::ExitStatusExt;
            assert!(
                status.success() || status.code() == Some(143) || status.signal() == Some(15),
                "SIGTERM after {ms} ms: {status:?}"
            );
        }
        // Restore until done (a run that had already finished restores as a no-op).
        r.restores_to(&format!("signal {signal} after {ms} ms"), &want);
    }
    assert!(
        interrupted >= 3,
        "only {interrupted} of {runs} runs were hit mid-way"
    );
}

mod libc_sig {
    pub const KILL: &str = "KILL";
    pub const TERM: &str = "TERM";
}

#[test]
fn crawl_by_crawl_equals_one_run_over_all() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all");
    let store_all = dir.path().join("store-all");
    let store_inc = dir.path().join("store-inc");
    ok(&dedup(corpus(), &all, &["--dd", "--store", s(&store_all)]));
    for crawl in ["cc-2023-14", "cc-2023-50", "cc-2024-33"] {
        let out = dir.path().join("inc").join(crawl);
        let o = dedup(
            &corpus().join(crawl),
            &out,
            &["--dd", "-t", "1", "--store", s(&store_inc)],
        );
        ok(&o);
    }
    let a = tree(&all);
    let b = tree(&dir.path().join("inc"));
    assert_eq!(a, b, "file for file, the same outputs");
    assert!(a.iter().any(|f| f.1.is_empty() || f.0.ends_with(".dd")));
    assert_same_store(&store_inc, &store_all, "crawl by crawl");
    // A second pass over a crawl already seen keeps nothing of it.
    let again = dir.path().join("again");
    let crawl = corpus().join("cc-2023-14");
    let o = webdedup(&[
        "dedup",
        "--dd",
        s(&crawl),
        "-o",
        s(&again),
        "--store",
        s(&store_inc),
    ]);
    assert!(o.status.success());
    assert_says(&o, "documents read, 0 kept");
}

#[test]
fn damaged_state_gives_clear_errors_never_a_smaller_store() {
    let dir = tempfile::tempdir().unwrap();
    let r = Run::new(dir.path(), "d", &["-t", "1"]).with_store();
    assert!(r.run(false, None).status.success());
    let snap = r.store.join("store.snap");
    let good = std::fs::read(&snap).unwrap();
    for (what, bytes) in [
        ("flipped", {
            let mut b = good.clone();
            b[good.len() / 2] ^= 4;
            b
        }),
        ("truncated", good[..good.len() - 30].to_vec()),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&snap, &bytes).unwrap();
        let o = r.run(false, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {e}");
        assert!(
            e.contains("store.snap") && e.contains("offset"),
            "{what}: {e}"
        );
        assert!(!e.contains("panicked"), "{what}: {e}");
    }
    std::fs::write(&snap, &good).unwrap();
    // Settings travel with the store.
    let mut other = Run::new(dir.path(), "d", &["-t", "1", "--normalize", "none"]).with_store();
    other.out = r.out.clone();
    let o = other.run(false, None);
    assert_fails_saying(&o, 2, "'loose'");
    assert_says(&o, "'none'");

    // A damaged decision log (left by a clean stop): an error naming the offset.
    let g = Run::new(dir.path(), "g", &["-t", "1"]).with_store();
    assert_eq!(g.run(false, Some("stop:4")).status.code(), Some(3));
    let log = tree(&g.out)
        .into_iter()
        .find(|f| f.0.ends_with(".dedup.log"))
        .expect("a decision log");
    let mut b = log.1.clone();
    let mid = b.len() / 2;
    b[mid] ^= 1;
    std::fs::write(g.out.join(&log.0), &b).unwrap();
    let o = g.run(true, None);
    assert_fails_saying(&o, 2, ".dedup.log");
    assert_says(&o, "byte offset");

    // A journal damaged before its last record: an error naming the offset.
    let j = Run::new(dir.path(), "j", &["-t", "1"]).with_store();
    let o = j.run(false, Some("journal-record:20"));
    assert!(!o.status.success());
    let jp = j.store.join("journal");
    let mut b = std::fs::read(&jp).unwrap();
    let at = b.len() / 3;
    b[at] ^= 0x20;
    std::fs::write(&jp, &b).unwrap();
    let o = j.run(true, None);
    assert_fails_saying(&o, 2, "journal");
    assert_says(&o, "byte offset");
    assert_no_panic(&o);
}

#[test]
fn leftover_state_needs_restore_and_the_same_settings() {
    let dir = tempfile::tempdir().unwrap();
    let r = Run::new(dir.path(), "l", &["-t", "1"]).with_store();
    assert!(!r.run(false, Some("journal-record:10")).status.success());
    let o = r.run(false, None);
    assert_fails_saying(&o, 2, "--restore");
    let mut changed =
        Run::new(dir.path(), "l", &["-t", "1", "--min-para-chars", "80"]).with_store();
    changed.out = r.out.clone();
    let o = changed.run(true, None);
    assert_fails_saying(&o, 2, "min-para-chars '50'");
    assert_says(&o, "'80' now");
    // One process at a time per store directory.
    let held = webdedup_store::DirLock::acquire(&r.store.join("lock")).unwrap();
    let o = r.run(true, None);
    assert_fails_saying(&o, 2, "another webdedup process");
    drop(held);
    assert!(r.run(true, None).status.success());
    // The torn tail of a journal is reported, and the restore completes.
    let t = Run::new(dir.path(), "t", &["-t", "1"]).with_store();
    assert!(!t.run(false, Some("journal-torn:5")).status.success());
    let o = t.run(true, None);
    assert!(
        o.status.success() && stderr(&o).contains("torn"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn near_mode_kill_then_restore_is_byte_identical() {
    // Near mode asks test-only and insert rounds too: the decision records must
    // replay them all, and the store must end with the same n-gram keys.
    let dir = tempfile::tempdir().unwrap();
    let want = {
        let r = Run::new(dir.path(), "near-ref", &["-t", "2", "-n", "--smooth"]).with_store();
        let o = r.run(false, None);
        ok(&o);
        r.state()
    };
    for (i, (fault, threads)) in [
        ("journal-record:5", "1"),
        ("commit:9", "2"),
        ("output-bytes:100000", "1"),
        ("renamed:2", "2"),
    ]
    .iter()
    .enumerate()
    {
        let r = Run::new(
            dir.path(),
            &format!("near{i}"),
            &["-t", threads, "-n", "--smooth"],
        )
        .with_store();
        let o = r.run(false, Some(fault));
        assert!(
            !o.status.success() && stderr(&o).contains("fault injection: abort at"),
            "fault {fault} not reached: {}",
            stderr(&o)
        );
        r.restores_to(&format!("near mode, {fault}"), &want);
    }
}

/// Issue 16 F3: a run killed right after finishing outputs, then the journal's last
/// record damaged (a flipped byte, not a crash). That record must never be one the
/// finished outputs depend on: the restore ends with the uninterrupted run's store and
/// outputs, or refuses (exit 2) saying what is damaged and what to do. Never a
/// silently smaller store.
#[test]
fn damaged_last_record_after_finished_outputs_never_shrinks_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let want = reference(dir.path(), true);
    for (i, fault) in ["renamed:2", "renamed:5"].iter().enumerate() {
        // The last record flipped: dropped as torn, and the restore is exact.
        let r = Run::new(dir.path(), &format!("flip-last{i}"), &["-t", "1"]).with_store();
        assert!(!r.run(false, Some(fault)).status.success());
        let jp = r.store.join("journal");
        let mut b = std::fs::read(&jp).unwrap();
        let last = b.len() - 1;
        b[last] ^= 0x40;
        std::fs::write(&jp, &b).unwrap();
        let o = r.run(true, None);
        assert!(o.status.success(), "{fault}: {}", stderr(&o));
        assert_says(&o, "torn");
        assert_same(&format!("{fault}, last record flipped"), &r.state(), &want);
    }

    // The same without a store directory (the journal in the output directory).
    let want_nostore = reference(dir.path(), false);
    let r = Run::new(dir.path(), "flip-last-nostore", &["-t", "2"]);
    assert!(!r.run(false, Some("renamed:3")).status.success());
    let jp = r.out.join(".webdedup.journal");
    let mut b = std::fs::read(&jp).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0x40;
    std::fs::write(&jp, &b).unwrap();
    let o = r.run(true, None);
    ok(&o);
    assert_same("no store, last record flipped", &r.state(), &want_nostore);

    // The record of the finished output's last chunk damaged (it is no longer the
    // last one): refused, naming the journal and the offset, saying what to do.
    let r = Run::new(dir.path(), "flip-chunk", &["-t", "1"]).with_store();
    assert!(!r.run(false, Some("renamed:2")).status.success());
    let jp = r.store.join("journal");
    let mut b = std::fs::read(&jp).unwrap();
    let (_, recs) = journal_records(&b);
    let chunk = recs[recs.len() - 2].clone();
    b[chunk.end - 1] ^= 0x40;
    std::fs::write(&jp, &b).unwrap();
    let o = r.run(true, None);
    assert_fails_saying(&o, 2, "journal");
    assert_says(&o, &format!("byte offset {}", chunk.start));
    assert_says(&o, "without --restore");
    assert_no_panic(&o);

    // The journal cut short after a finished output's records (a truncated copy):
    // the finished output's last records may be gone, so the restore refuses. The
    // cut removes the last finish mark and what follows it (records of the next
    // output may follow: the journal is written beside the renames).
    let r = Run::new(dir.path(), "cut", &["-t", "1"]).with_store();
    assert!(!r.run(false, Some("renamed:2")).status.success());
    let jp = r.store.join("journal");
    let b = std::fs::read(&jp).unwrap();
    let (_, recs) = journal_records(&b);
    // payload = u32 tag_len, then the tag, whose first byte is its kind.
    let kind = |rec: &std::ops::Range<usize>| b[rec.start + 16];
    const FINISH_MARK: u8 = 2;
    let mark = recs.iter().rposition(|r| kind(r) == FINISH_MARK).unwrap();
    assert_ne!(
        kind(&recs[mark - 1]),
        FINISH_MARK,
        "a chunk record before it"
    );
    std::fs::write(&jp, &b[..recs[mark].start]).unwrap();
    let o = r.run(true, None);
    assert_fails_saying(&o, 2, "journal");
    assert_says(&o, "finished");
    assert_says(&o, "without --restore");
}

/// The modes of `--store DIR` runs: `dedup` exact, near and feedback, and `minhash`
/// (name, command, options).
const MODES: &[(&str, &str, &[&str])] = &[
    ("exact", "dedup", &[]),
    ("near", "dedup", &["-n", "--smooth"]),
    ("feedback", "dedup", &["-f"]),
    ("minhash", "minhash", &[]),
];

/// A run of `command` in a mode of [`MODES`] with a store directory, one thread.
fn mode_run(root: &Path, name: &str, command: &str, extra: &[&str]) -> Run {
    let mut args = vec!["-t", "1"];
    args.extend_from_slice(extra);
    let mut r = Run::new(root, name, &args).with_store();
    r.args[0] = command.into();
    r
}

/// Files by relative path, as [`tree`] lists them.
type Files = Vec<(String, Vec<u8>)>;

/// The outputs and what the store directory saved (snapshot, MinHash side store).
fn saved_state(r: &Run) -> (Files, Files) {
    let saved = tree(&r.store)
        .into_iter()
        .filter(|f| f.0 == "store.snap" || f.0 == "minhash.kept")
        .collect();
    (tree(&r.out), saved)
}

/// Replaces the directory `dir` by the files `files` (from [`tree`]).
fn put_tree(dir: &Path, files: &[(String, Vec<u8>)]) {
    let _ = std::fs::remove_dir_all(dir);
    for (name, bytes) in files {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
    std::fs::create_dir_all(dir).unwrap();
}

/// Issue 27 D4: a journal cut exactly at a record boundary (a truncated copy, not a
/// crash: an append-only file has no end mark) may remove every record of an output
/// already finished. Before, `--restore` then exited 0 with a smaller store (only the
/// header left: the journal counted as empty) and later outputs kept duplicates. At
/// every boundary the restore is now exact or refused with exit 2 saying what to do,
/// in every mode.
#[test]
fn journal_cut_at_every_record_boundary_restores_exactly_or_refuses() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, command, extra) in MODES {
        let reference = mode_run(dir.path(), &format!("{mode}-ref"), command, extra);
        let o = reference.run(false, None);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let want = saved_state(&reference);
        let r = mode_run(dir.path(), &format!("{mode}-cut"), command, extra);
        let o = r.run(false, Some("renamed:3"));
        assert_says(&o, "fault injection");
        let (out, store) = (tree(&r.out), tree(&r.store));
        let journal = std::fs::read(r.store.join("journal")).unwrap();
        let (_, records) = journal_records(&journal);
        let cuts = std::iter::once(records[0].start).chain(records.iter().map(|r| r.end));
        let (mut exact, mut refused) = (0, 0);
        for cut in cuts {
            put_tree(&r.out, &out);
            put_tree(&r.store, &store);
            std::fs::write(r.store.join("journal"), &journal[..cut]).unwrap();
            let o = r.run(true, None);
            let e = stderr(&o);
            match o.status.code() {
                Some(0) => {
                    let got = saved_state(&r);
                    let what = format!("{mode}, journal cut at byte {cut}");
                    assert_same(&what, &(got.0, None), &(want.0.clone(), None));
                    assert!(got.1 == want.1, "{what}: the saved store differs");
                    exact += 1;
                }
                Some(2) => {
                    assert!(
                        e.contains("journal") && e.contains("without --restore"),
                        "{mode}, cut at {cut}: {e}"
                    );
                    refused += 1;
                }
                _ => panic!("{mode}, cut at {cut}: {:?} {e}", o.status),
            }
        }
        assert!(
            exact > 0 && refused > 0,
            "{mode}: {exact} exact, {refused} refused"
        );
    }
}

/// `--restore` after a run that finished, or after a kill once every output was
/// finished (while saving the store, before removing the journal), changes no output
/// and no byte of the store, in every mode (issue 27 D1 was `minhash`).
#[test]
fn restore_after_a_finished_run_changes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let inodes = |out: &Path| -> Vec<(String, u64)> {
        tree(out)
            .into_iter()
            .filter(|f| f.0.contains(".dedup"))
            .map(|f| {
                let ino = std::fs::metadata(out.join(&f.0)).unwrap().ino();
                (f.0, ino)
            })
            .collect()
    };
    for (mode, command, extra) in MODES {
        let reference = mode_run(dir.path(), &format!("{mode}-ref"), command, extra);
        let o = reference.run(false, None);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let want = saved_state(&reference);
        let mut faults = vec![None, Some("snapshot-mid:1"), Some("snapshot-renamed:1")];
        if *command == "minhash" {
            faults.push(Some("minhash-kept:1"));
        }
        for (i, fault) in faults.into_iter().enumerate() {
            let r = mode_run(dir.path(), &format!("{mode}-{i}"), command, extra);
            let o = r.run(false, fault);
            assert_eq!(o.status.success(), fault.is_none(), "{}", stderr(&o));
            let before = inodes(&r.out);
            let what = format!("{mode}, {}", fault.unwrap_or("a finished run"));
            for _ in 0..2 {
                let o = r.run(true, None);
                assert!(o.status.success(), "{what}: {}", stderr(&o));
                let got = saved_state(&r);
                assert_same(&what, &(got.0, None), &(want.0.clone(), None));
                assert!(got.1 == want.1, "{what}: the saved store differs");
                assert_eq!(
                    inodes(&r.out),
                    before,
                    "{what}: an output was written again"
                );
            }
        }
    }
}

/// A fresh run into a directory holding an earlier run's outputs writes them all
/// again; killed and restored, it must too (its journal's start record lists them):
/// before, the restore skipped them as finished and kept the earlier run's bytes.
#[test]
fn outputs_of_an_earlier_run_are_written_again_by_a_restore() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, command, extra) in MODES {
        let reference = mode_run(dir.path(), &format!("{mode}-ref"), command, extra);
        assert!(reference.run(false, None).status.success());
        let want = saved_state(&reference);
        let r = mode_run(dir.path(), &format!("{mode}-stale"), command, extra);
        // The earlier run: the second over a store that holds the input already,
        // so its outputs are (mostly) empty.
        let mut earlier = mode_run(dir.path(), &format!("{mode}-earlier"), command, extra);
        let o_at = earlier.args.iter().position(|a| a == "-o").unwrap();
        earlier.args[o_at + 1] = r.out.to_str().unwrap().into();
        for _ in 0..2 {
            let o = earlier.run(false, None);
            assert!(o.status.success(), "{mode}: {}", stderr(&o));
        }
        assert!(tree(&r.out) != want.0, "{mode}: the earlier outputs differ");
        let o = r.run(false, Some("renamed:2"));
        assert_says(&o, "fault injection");
        let o = r.run(true, None);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        let got = saved_state(&r);
        assert_same(mode, &(got.0, None), &(want.0.clone(), None));
        assert!(got.1 == want.1, "{mode}: the saved store differs");
    }
}

/// A torn last record that was a finished output's finish mark is accepted (the
/// output's records are all before it) and written again by the restore: a crash
/// during that restore and another restore must still find the output finished.
#[test]
fn a_torn_finish_mark_is_put_back_for_later_restores() {
    let dir = tempfile::tempdir().unwrap();
    let want = reference(dir.path(), true);
    // fsync off: outputs are renamed in the write gate, right after their mark.
    let r = Run::new(dir.path(), "torn-mark", &["-t", "1", "--fsync", "off"]).with_store();
    assert!(!r.run(false, Some("renamed:2")).status.success());
    let jp = r.store.join("journal");
    let mut b = std::fs::read(&jp).unwrap();
    let last = journal_records(&b).1.pop().unwrap();
    const FINISH_MARK: u8 = 2;
    assert_eq!(
        b[last.start + 16],
        FINISH_MARK,
        "the journal ends with a mark"
    );
    b[last.end - 1] ^= 0x40;
    std::fs::write(&jp, &b).unwrap();
    let o = r.run(true, Some("renamed:1"));
    assert_says(&o, "fault injection");
    r.restores_to("torn mark, crash in the restore", &want);
}

/// The same with a clean stop (a signal) instead of a kill: the stop keeps the
/// journal while an earlier run's output is still to be written again (a restore
/// without it would take that output for finished).
#[test]
fn outputs_of_an_earlier_run_are_written_again_after_a_clean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let want = reference(dir.path(), true);
    let r = Run::new(dir.path(), "stale-stop", &["-t", "1"]).with_store();
    let mut earlier = Run::new(dir.path(), "stale-stop-earlier", &["-t", "1"]).with_store();
    let o_at = earlier.args.iter().position(|a| a == "-o").unwrap();
    earlier.args[o_at + 1] = r.out.to_str().unwrap().into();
    earlier.out = r.out.clone();
    for _ in 0..2 {
        assert!(earlier.run(false, None).status.success());
    }
    let o = r.run(false, Some("stop:5"));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    r.restores_to("clean stop over an earlier run's outputs", &want);
}
