//! Batch mode end to end with the real binary: outputs equal `webdedup dedup`'s for
//! any task count and order, tasks killed and relaunched (a simulated Slurm array),
//! incremental runs with a store, settings checks.

mod common;
use common::*;
use std::path::Path;
use std::process::Command;

fn stream(input: &Path, out: &Path, extra: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut args = vec!["--dd", "-t", "1"];
    args.extend_from_slice(extra);
    let o = dedup(input, out, &args);
    ok(&o);
    tree(out)
}

#[test]
fn batch_run_equals_stream_mode_for_any_task_count() {
    let tmp = tempfile::tempdir().unwrap();
    for doc_check in ["all", "url-title"] {
        let want = stream(
            &sample_dir(),
            &tmp.path().join(format!("stream-{doc_check}")),
            &["--doc-check", doc_check],
        );
        for tasks in ["1", "2", "5"] {
            let out = tmp.path().join(format!("out-{doc_check}-{tasks}"));
            let work = tmp.path().join(format!("work-{doc_check}-{tasks}"));
            let o = batch(
                &batch_run_args(
                    &sample_dir(),
                    &out,
                    &work,
                    &[
                        "-t",
                        "2",
                        "--task-count",
                        tasks,
                        "--dd",
                        "--partitions",
                        "7",
                        "--doc-check",
                        doc_check,
                    ],
                ),
                None,
            );
            ok(&o);
            assert!(
                tree(&out) == want,
                "doc-check {doc_check}, {tasks} tasks: outputs differ from stream mode"
            );
            // The filter phase used the hash phase's plans, every one of them.
            let said = stderr(&o);
            let counts = said
                .split(" kept plans reused")
                .next()
                .and_then(|s| s.rsplit(", ").next())
                .and_then(|s| s.split_once(" of "))
                .map(|(r, k)| (r.parse::<u64>().unwrap(), k.parse::<u64>().unwrap()));
            let (reused, kept) = counts.unwrap_or_else(|| panic!("no plan counts in: {said}"));
            assert!(kept > 0 && reused == kept, "{said}");
        }
    }
    // Without the cache the outputs are the same.
    let out = tmp.path().join("no-cache");
    let work = tmp.path().join("work-no-cache");
    let o = batch(
        &batch_run_args(
            &sample_dir(),
            &out,
            &work,
            &["--plan-cache-mib", "0", "--dd"],
        ),
        None,
    );
    ok(&o);
    assert_says(&o, "0 of 0 kept plans reused");
    assert!(tree(&out) == stream(&sample_dir(), &tmp.path().join("stream-plain"), &[]));
}

/// The phase commands of an exact-mode batch run in their order, each with its
/// name: hash, the three resolve stages, and `filter` (the given arguments).
fn exact_phases<'a>(filter: &[&'a str]) -> Vec<(&'static str, Vec<&'a str>)> {
    vec![
        ("hash", vec!["hash"]),
        ("url-title", vec!["resolve", "--stage", "url-title"]),
        ("docs", vec!["resolve", "--stage", "docs"]),
        ("paras", vec!["resolve", "--stage", "paras"]),
        ("filter", filter.to_vec()),
    ]
}

/// A Slurm array simulated by a loop: every task of every phase as its own process,
/// in shuffled order, some killed at a fault point and relaunched.
#[test]
fn simulated_slurm_array_with_killed_tasks_equals_stream_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let want = stream(&sample_dir(), &tmp.path().join("stream"), &[]);
    let (out, work) = (tmp.path().join("out"), tmp.path().join("work"));
    let sample = sample_dir();
    let kills = [
        ("hash", 0, "batch-hash-written:1"),
        ("hash", 3, "batch-hash-published:1"),
        ("url-title", 1, "batch-resolve-partition:2"),
        ("paras", 2, "batch-resolve-published:1"),
        ("filter", 1, "batch-filter-written:1"),
    ];
    simulated_slurm_array(
        &exact_phases(&["filter", "-o", s(&out), "--dd"]),
        &phase_args(&[], &sample, &work, &["--partitions", "9"]),
        &[2, 0, 3, 1],
        &kills,
        &[],
    );
    assert!(tree(&out) == want, "outputs differ from stream mode");
}

#[test]
fn crawl_by_crawl_with_a_store_equals_stream_mode_outputs_and_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let crawls = ["cc-2023-14", "cc-2023-50", "cc-2024-33"];
    for (i, crawl) in crawls.iter().enumerate() {
        let input = sample_dir().join(crawl);
        let s_out = tmp.path().join(format!("s{i}"));
        let o = dedup(
            &input,
            &s_out,
            &["--store", tmp.path().join("s-store").to_str().unwrap()],
        );
        ok(&o);
        let b_out = tmp.path().join(format!("b{i}"));
        let o = batch(
            &batch_run_args(
                &input,
                &b_out,
                &tmp.path().join(format!("w{i}")),
                &[
                    "-t",
                    "2",
                    "--store",
                    tmp.path().join("b-store").to_str().unwrap(),
                ],
            ),
            None,
        );
        ok(&o);
        assert!(
            tree(&s_out) == tree(&b_out),
            "crawl {crawl}: outputs differ"
        );
    }
    let store = |name: &str| tmp.path().join(name);
    assert_same_store(&store("b-store"), &store("s-store"), "crawl by crawl");
}

#[test]
fn a_work_directory_refuses_other_settings_and_missing_phases() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    let sample = sample_dir();
    let hash = |extra: &[&str]| {
        batch(
            &phase_args(
                &["hash"],
                &sample,
                &work,
                &[&FIRST_OF_TWO_TASKS[..], extra].concat(),
            ),
            None,
        )
    };
    ok(&hash(&[]));
    assert_fails_saying(
        &hash(&["--min-para-chars", "80"]),
        2,
        "min-para-chars '50' in the store, '80' in this run",
    );
    // Resolve before hash task 1 finished: a clear error naming it.
    let o = batch(
        &phase_args(
            &["resolve", "--stage", "url-title"],
            &sample,
            &work,
            &FIRST_OF_TWO_TASKS,
        ),
        None,
    );
    assert_fails_saying(&o, 2, "hash task 1 of 2 has not finished");
    let o = batch(
        &phase_args(
            &["hash"],
            Path::new("x"),
            &work,
            &["--task-count", "2", "--task-index", "2"],
        ),
        None,
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn two_copies_of_every_task_running_at_once_still_equal_stream_mode() {
    // Spark's speculative execution and retries can run one task twice at once.
    let tmp = tempfile::tempdir().unwrap();
    let want = stream(&sample_dir(), &tmp.path().join("stream"), &[]);
    let (out, work) = (tmp.path().join("out"), tmp.path().join("work"));
    let sample = sample_dir();
    for (_, phase) in exact_phases(&["filter", "-o", s(&out), "--dd"]) {
        let mut children = Vec::new();
        for t in ["0", "1", "0", "1"] {
            let args = phase_args(
                &phase,
                &sample,
                &work,
                &["--task-count", "2", "--task-index", t, "--partitions", "5"],
            );
            let mut c = Command::new(env!("CARGO_BIN_EXE_webdedup"));
            children.push(c.arg("batch").args(args).spawn().unwrap());
        }
        for mut c in children {
            assert!(c.wait().unwrap().success(), "{phase:?}");
        }
    }
    assert!(tree(&out) == want, "outputs differ from stream mode");
}

/// (id, status) of every `.dd` line under `out`, files in sorted order.
fn dd_statuses(out: &Path) -> Vec<(String, String)> {
    dd_lines(out)
        .iter()
        .map(|l| (attr(l, "id").unwrap(), attr(l, "status").unwrap()))
        .collect()
}

/// `--doc-check none`: paragraphs only. A repeated document is never dropped whole
/// (its paragraphs go one by one: `E`, not `D`), a repeated document of short
/// paragraphs is kept, and neither URL+title nor document keys are asked or
/// stored; the same in stream mode (any thread count), in batch mode (any task
/// count) and across runs with a store directory.
#[test]
fn doc_check_none_decides_paragraphs_only_in_stream_and_batch_mode_with_any_store() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let long = |w: &str| [w; 12].join(" ");
    let rec = |id: &str, url: Option<&str>, text: String| {
        let mut v = serde_json::json!({"id": id, "text": text});
        if let Some(u) = url {
            v["url"] = u.into();
            v["title"] = "t".into();
        }
        v.to_string() + "\n"
    };
    let input = t.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let (p1, p2) = (long("alpha"), long("beta"));
    std::fs::write(
        input.join("a.jsonl"),
        [
            rec("first", Some("u"), format!("{p1}\n{p2}")),
            rec("copy", Some("u"), format!("{p1}\n{p2}")),
            rec("same-url", Some("u"), long("gamma")),
        ]
        .concat(),
    )
    .unwrap();
    std::fs::write(
        input.join("b.jsonl"),
        [
            rec("short", Some("v"), "see also".into()),
            rec("short-copy", Some("v"), "see also".into()),
            rec("mixed", None, format!("{p1}\n{}", long("delta"))),
        ]
        .concat(),
    )
    .unwrap();
    let ids = ["first", "copy", "same-url", "short", "short-copy", "mixed"];
    let statuses = |out: &Path| {
        let got = dd_statuses(out);
        assert_eq!(got.iter().map(|(i, _)| i.as_str()).collect::<Vec<_>>(), ids);
        got.into_iter().map(|(_, s)| s).collect::<Vec<_>>()
    };
    let stats = |json: &Path| -> serde_json::Value { serde_json::from_str(&read(json)).unwrap() };
    let none = ["--doc-check", "none"];

    // Stream mode: the decisions, and the keys asked.
    let json = t.join("none.json");
    let want = stream(
        &input,
        &t.join("s1"),
        &[&none[..], &["--json", json.to_str().unwrap()]].concat(),
    );
    assert_eq!(statuses(&t.join("s1")), ["K", "E", "K", "K", "K", "1/2"]);
    let st = stats(&json);
    assert_eq!(st["keys_stored"], 4, "only the four long paragraphs: {st}");
    assert_eq!(st["url_title_repeats"], 0, "{st}");
    assert_eq!(st["documents_dropped_duplicate"], 0, "{st}");
    // The same input with the default check does drop documents whole.
    stream(&input, &t.join("all"), &[]);
    assert_eq!(statuses(&t.join("all")), ["K", "D", "K", "K", "D", "1/2"]);
    // Any thread count.
    let two = dedup(
        &input,
        &t.join("s2"),
        &[&["--dd", "-t", "2"], &none[..]].concat(),
    );
    ok(&two);
    assert!(tree(&t.join("s2")) == want, "-t 2 differs from -t 1");

    // Batch mode, any task count.
    for tasks in ["1", "2"] {
        let out = t.join(format!("b{tasks}"));
        let work = t.join(format!("w{tasks}"));
        let args = batch_run_args(
            &input,
            &out,
            &work,
            &["--task-count", tasks, "--partitions", "3", "--dd"],
        );
        let o = batch(&[&args[..], &none[..]].concat(), None);
        ok(&o);
        assert!(
            tree(&out) == want,
            "batch, {tasks} tasks: differs from stream mode"
        );
    }

    // A store directory, two runs over the same input: in the second every long
    // paragraph is seen; the short-only documents still ask nothing and stay.
    for run in 0..2 {
        let s_out = t.join(format!("store-s{run}"));
        let json = t.join(format!("store-{run}.json"));
        let o = dedup(
            &input,
            &s_out,
            &[
                &[
                    "--dd",
                    "-t",
                    "1",
                    "--store",
                    t.join("s-store").to_str().unwrap(),
                ][..],
                &["--json", json.to_str().unwrap()],
                &none[..],
            ]
            .concat(),
        );
        ok(&o);
        let expected: &[&str] = if run == 0 {
            &["K", "E", "K", "K", "K", "1/2"]
        } else {
            &["E", "E", "E", "K", "K", "E"]
        };
        assert_eq!(statuses(&s_out), expected, "run {run} with a store");
        assert_eq!(stats(&json)["keys_stored"], 4, "run {run}");
        let b_out = t.join(format!("store-b{run}"));
        let (work, b_store) = (t.join(format!("store-w{run}")), t.join("b-store"));
        let args = batch_run_args(
            &input,
            &b_out,
            &work,
            &[
                "--task-count",
                "2",
                "--dd",
                "--store",
                b_store.to_str().unwrap(),
            ],
        );
        let o = batch(&[&args[..], &none[..]].concat(), None);
        ok(&o);
        assert!(
            tree(&s_out) == tree(&b_out),
            "run {run}: batch differs from stream"
        );
    }
    assert_same_store(&t.join("b-store"), &t.join("s-store"), "--doc-check none");
}

/// Every temporary name (`NAME.tmp.PID.N`) under `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    walk(dir, |p| {
        let temporary = p.to_string_lossy().contains(".tmp.");
        if temporary {
            found.push(p.display().to_string());
        }
        !temporary
    });
    found
}

/// Issue 27 D10: a disk-full error leaves no staging folder behind, and staging
/// folders that dead attempts left (killed processes, older versions) are
/// removed by the next `batch run`, which then succeeds.
#[test]
fn a_full_disk_leaves_no_staging_and_the_next_run_sweeps_stale_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let want = stream(&sample_dir(), &tmp.path().join("stream"), &[]);
    let (out, work) = (tmp.path().join("out"), tmp.path().join("work"));
    let sample = sample_dir();
    let args = batch_run_args(
        &sample,
        &out,
        &work,
        &[
            "-t",
            "2",
            "--task-count",
            "3",
            "--partitions",
            "4",
            "--dd",
            "-q",
        ],
    );
    // The 5th write of a batch file fails half-way, as on a full disk.
    for fault in ["batch-write:5:enospc", "batch-write:30:enospc"] {
        let o = batch(&args, Some(fault));
        assert_eq!(o.status.code(), Some(2), "{fault}: {}", stderr(&o));
        assert_says(&o, "No space left on device");
        assert_eq!(
            temporaries(&work),
            Vec::<String>::new(),
            "{fault}: left behind"
        );
    }
    // What a killed attempt leaves: a staging folder and a temporary file.
    let stale = work.join("hash").join("task-1.tmp.4000000.0");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("docs-0.run"), b"half").unwrap();
    std::fs::write(work.join("verdicts-x.tmp.4000000.3"), b"half").unwrap();
    let o = batch(&args, None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        temporaries(&work),
        Vec::<String>::new(),
        "stale staging kept"
    );
    assert!(tree(&out) == want, "outputs differ from stream mode");
}

/// Issue 27 D11: two `batch run` on one work folder at once: the second is
/// refused at once (status 2) with a message naming the work folder and the
/// first one's pid, instead of failing later on a file the other one replaced.
/// Phase commands (a job array's tasks) still share a work folder, but not with
/// a `batch run`.
#[test]
fn a_second_batch_run_on_a_work_folder_in_use_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = sample_dir();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let want = stream(&sample, &tmp.path().join("stream"), &[]);
    let run = |work: &str, out: &str| {
        Command::new(env!("CARGO_BIN_EXE_webdedup"))
            .args([
                "batch",
                "run",
                "-q",
                "--dd",
                "-t",
                "1",
                "-i",
                &s(&sample),
                "-w",
                work,
                "-o",
                out,
            ])
            .spawn()
            .unwrap()
    };
    // The first run is caught (SIGSTOP) while it holds the work folder: it wrote
    // its pid into the lock file, and the lock is still taken. A run that ended
    // before it was caught is tried again, in a new work folder.
    let mut attempt = 0;
    let (mut first, work, out) = loop {
        attempt += 1;
        let work = s(&tmp.path().join(format!("work{attempt}")));
        let out = s(&tmp.path().join(format!("out{attempt}")));
        let mut first = run(&work, &out);
        let pid = first.id();
        let lock = Path::new(&work).join("lock");
        while first.try_wait().unwrap().is_none()
            && std::fs::read_to_string(&lock)
                .ok()
                .map(|t| t.trim().to_owned())
                != Some(pid.to_string())
        {
            std::hint::spin_loop();
        }
        // SAFETY: signals to our own child.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        let held = std::fs::File::open(&lock).is_ok_and(|f| {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own; dropped (unlocked) after.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 }
        });
        if first.try_wait().unwrap().is_none() && held {
            break (first, work, out);
        }
        unsafe { libc::kill(pid as i32, libc::SIGCONT) };
        let _ = first.wait();
        assert!(attempt < 50, "the first run never caught holding its lock");
    };
    let pid = first.id();
    let out2 = tmp.path().join("out-second");
    let second = batch(
        &["run", "-q", "-i", &s(&sample), "-w", &work, "-o", &s(&out2)],
        None,
    );
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    let e = stderr(&second);
    assert!(
        e.contains(&format!(
            "work folder {work} is in use by another batch run (pid {pid})"
        )),
        "{e}"
    );
    assert!(!out2.exists(), "the refused run wrote outputs");
    let phase = batch(
        &["hash", "-i", &s(&sample), "-w", &work, "--task-index", "0"],
        None,
    );
    assert_fails_saying(&phase, 2, "in use by another batch run");
    // The first one goes on and finishes, its outputs those of stream mode.
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(pid as i32, libc::SIGCONT) };
    assert!(first.wait().unwrap().success());
    assert!(
        tree(Path::new(&out)) == want,
        "outputs differ from stream mode"
    );
}

/// Issue 27: `-q`, `--progress`, `--json` as in every command that reads inputs
/// (docs/cli.md), for each phase command too.
#[test]
fn phase_commands_take_the_reporting_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = sample_dir();
    let (work, out) = (tmp.path().join("work"), tmp.path().join("out"));
    let json = tmp.path().join("figures.json");
    let t = ["--task-count", "1", "--task-index", "0"];
    for (_, p) in exact_phases(&["filter", "-o", s(&out)]) {
        let run = |extra: &[&str]| {
            batch(
                &phase_args(&p, &sample, &work, &[&t[..], extra].concat()),
                None,
            )
        };
        let o = run(&["-q", "--progress", "never"]);
        assert_eq!(o.status.code(), Some(0), "{p:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{p:?}: -q shows nothing");
        let loud = run(&["--json", s(&json)]);
        assert_eq!(loud.status.code(), Some(0), "{p:?}: {}", stderr(&loud));
        assert!(
            stderr(&loud).contains("already finished"),
            "{p:?}: {}",
            stderr(&loud)
        );
        let v: serde_json::Value = serde_json::from_str(&read(&json)).unwrap();
        assert_eq!(v["status"], 0, "{v}");
        assert_eq!(v["already_finished"], true, "{v}");
    }
    let store = tmp.path().join("store");
    let o = batch(
        &phase_args(&["publish"], &sample, &work, &["--store", s(&store), "-q"]),
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "publish -q shows nothing");
}

/// `--mark` (attributes beside inputs written as read) in batch mode, as `dedup
/// --mark` writes it.
#[test]
fn batch_run_with_mark_equals_stream_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let want = stream(&jsonl_sample_dir(), &tmp.path().join("stream"), &["--mark"]);
    assert!(want.iter().any(|(n, _)| n.ends_with(".attributes.jsonl")));
    let (out, work) = (tmp.path().join("out"), tmp.path().join("work"));
    let args = ["-t", "2", "--task-count", "3", "--dd", "--mark"];
    ok(&batch(
        &batch_run_args(&jsonl_sample_dir(), &out, &work, &args),
        None,
    ));
    assert_same_files("--mark", &tree(&out), &want);
}
