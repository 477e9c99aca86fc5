//! `webdedup batch --minhash` with the real binary: the bytes of `webdedup minhash`
//! (outputs, `.pairs` reports, `.dd`, `files.idx`) for any task count, thread count,
//! partition count and `--verify`, and from a simulated Slurm array whose tasks are
//! killed at fault points and relaunched.

mod common;
use common::*;
use std::path::Path;

/// `webdedup minhash` on one thread: the reference.
fn stream(input: &Path, out: &Path, extra: &[&str]) -> Vec<(String, Vec<u8>)> {
    let mut args = command_args("minhash", input, out, &["--dd", "-t", "1"]);
    args.extend_from_slice(extra);
    let o = webdedup(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    tree(out)
}

fn pairs_lines(t: &[(String, Vec<u8>)]) -> usize {
    t.iter()
        .filter(|(n, _)| n.ends_with(".pairs"))
        .map(|(_, b)| b.iter().filter(|&&c| c == b'\n').count())
        .sum()
}

#[test]
fn batch_run_equals_stream_mode_for_tasks_threads_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let (vert, jsonl) = (sample_dir(), jsonl_sample_dir());
    let cases: Vec<(&Path, Vec<&str>, Vec<&str>)> = vec![
        (&vert, vec![], vec!["-t", "1"]),
        (&vert, vec![], vec!["-t", "2"]),
        (
            &vert,
            vec![],
            vec!["-t", "2", "--task-count", "5", "--partitions", "7"],
        ),
        (
            &vert,
            vec!["--verify", "0"],
            vec!["-t", "2", "--task-count", "3", "--chunk-bytes", "20000"],
        ),
        (
            &vert,
            vec!["--verify", "0.9", "--bands", "8", "--rows", "14"],
            vec!["-t", "1", "--task-count", "4", "--partitions", "3"],
        ),
        (
            &jsonl,
            vec![],
            vec!["-t", "2", "--task-count", "3", "--partitions", "5"],
        ),
    ];
    for (i, (input, settings, layout)) in cases.iter().enumerate() {
        let want = stream(input, &tmp.path().join(format!("s{i}")), settings);
        assert!(
            pairs_lines(&want) > 50,
            "case {i}: the sample has near-duplicates"
        );
        let (out, work) = (
            tmp.path().join(format!("b{i}")),
            tmp.path().join(format!("w{i}")),
        );
        let mut args = batch_run_args(input, &out, &work, &["--minhash", "--dd", "-q"]);
        args.extend_from_slice(settings);
        args.extend_from_slice(layout);
        let o = batch(&args, None);
        assert!(o.status.success(), "case {i}: {}", stderr(&o));
        let got = tree(&out);
        let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&got), names(&want), "case {i}: file names");
        for ((n, a), (_, b)) in got.iter().zip(&want) {
            assert!(
                a == b,
                "case {i} ({settings:?} {layout:?}): {n} differs from stream mode"
            );
        }
    }
}

/// A Slurm array simulated by a loop: every task of every phase as its own process,
/// in shuffled order, some killed at a fault point and relaunched; a finished task
/// is skipped when launched again.
#[test]
fn simulated_slurm_array_with_killed_tasks_equals_stream_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let want = stream(&sample_dir(), &tmp.path().join("stream"), &[]);
    let (out, work) = (tmp.path().join("out"), tmp.path().join("work"));
    let n = 4;
    let common = |task: usize| -> Vec<String> {
        [
            "--minhash",
            "-i",
            sample_dir().to_str().unwrap(),
            "-w",
            work.to_str().unwrap(),
            "--task-count",
            &n.to_string(),
            "--task-index",
            &task.to_string(),
            "--partitions",
            "9",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let order = [2, 0, 3, 1];
    let kills = [
        ("hash", 0, "batch-hash-written:1"),
        ("hash", 3, "batch-hash-published:1"),
        ("bands", 1, "batch-resolve-partition:2"),
        ("bands", 2, "batch-resolve-published:1"),
        ("pick", 0, "batch-resolve-partition:1"),
        ("filter", 1, "batch-filter-written:1"),
    ];
    let o_str = out.to_str().unwrap().to_string();
    let phases: Vec<(&str, Vec<&str>)> = vec![
        ("hash", vec!["hash"]),
        ("bands", vec!["resolve", "--stage", "bands"]),
        ("pick", vec!["resolve", "--stage", "pick"]),
        ("filter", vec!["filter", "-o", &o_str, "--dd"]),
    ];
    for (phase, head) in &phases {
        for &t in &order {
            let mut args: Vec<String> = head.iter().map(|s| s.to_string()).collect();
            args.extend(common(t));
            let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            if *phase == "pick" && t != 0 {
                let o = batch(&args, None);
                assert!(
                    o.status.success() && stderr(&o).contains("nothing to do"),
                    "{}",
                    stderr(&o)
                );
                continue;
            }
            let fault = kills
                .iter()
                .find(|(p, task, _)| p == phase && *task == t)
                .map(|(_, _, fault)| *fault);
            batch_task_killed_and_relaunched(&args, fault, &format!("{phase} task {t}"));
        }
    }
    assert!(tree(&out) == want, "outputs differ from stream mode");
}

#[test]
fn work_directories_refuse_other_modes_settings_and_missing_phases() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let input = sample_dir();
    let common = [
        "-i",
        input.to_str().unwrap(),
        "-w",
        work.to_str().unwrap(),
        "--task-count",
        "2",
        "--task-index",
        "0",
    ];
    let run = |head: &[&str], extra: &[&str]| {
        let mut a: Vec<&str> = head.to_vec();
        a.extend_from_slice(&common);
        a.extend_from_slice(extra);
        batch(&a, None)
    };
    // MinHash settings without --minhash are refused, not ignored.
    let o = run(&["hash"], &["--verify", "0.5"]);
    assert!(
        !o.status.success() && stderr(&o).contains("--minhash"),
        "{}",
        stderr(&o)
    );
    let o = run(&["hash"], &["--minhash"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Another --verify is another work directory.
    let o = run(&["hash"], &["--minhash", "--verify", "0.5"]);
    assert!(
        !o.status.success() && stderr(&o).contains("verify=0.8"),
        "{}",
        stderr(&o)
    );
    // A stage before the one it needs names the missing task.
    let o = run(&["resolve", "--stage", "bands"], &["--minhash"]);
    assert!(
        !o.status.success() && stderr(&o).contains("hash task 1 of 2 has not finished"),
        "{}",
        stderr(&o)
    );
    let o = run(&["resolve", "--stage", "pick"], &["--minhash"]);
    assert!(
        !o.status.success() && stderr(&o).contains("bands task 0 of 2 has not finished"),
        "{}",
        stderr(&o)
    );
    // Exact stages on a MinHash directory, and the other way round.
    let o = run(&["resolve", "--stage", "docs"], &["--minhash"]);
    assert!(
        !o.status.success() && stderr(&o).contains("MinHash work directory"),
        "{}",
        stderr(&o)
    );
    let exact = tmp.path().join("exact");
    let o = batch(
        &[
            "resolve",
            "--stage",
            "bands",
            "-i",
            input.to_str().unwrap(),
            "-w",
            exact.to_str().unwrap(),
            "--task-index",
            "0",
        ],
        None,
    );
    assert!(
        !o.status.success() && stderr(&o).contains("is a MinHash stage"),
        "{}",
        stderr(&o)
    );
    // No store of earlier runs yet: refused, not ignored.
    let o = run(
        &["resolve", "--stage", "bands"],
        &[
            "--minhash",
            "--store",
            tmp.path().join("st").to_str().unwrap(),
        ],
    );
    assert!(
        !o.status.success() && stderr(&o).contains("--store"),
        "{}",
        stderr(&o)
    );
    let o = run(&["hash"], &["--minhash", "--normalize", "none"]);
    assert!(
        !o.status.success() && stderr(&o).contains("loose"),
        "{}",
        stderr(&o)
    );
}
