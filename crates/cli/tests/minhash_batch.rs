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
    ok(&o);
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
        assert_same_files(
            &format!("case {i} ({settings:?} {layout:?}), against stream mode"),
            &tree(&out),
            &want,
        );
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
    let sample = sample_dir();
    let kills = [
        ("hash", 0, "batch-hash-written:1"),
        ("hash", 3, "batch-hash-published:1"),
        ("bands", 1, "batch-resolve-partition:2"),
        ("bands", 2, "batch-resolve-published:1"),
        ("pick", 0, "batch-resolve-partition:1"),
        ("filter", 1, "batch-filter-written:1"),
    ];
    let phases = [
        ("hash", vec!["hash"]),
        ("bands", vec!["resolve", "--stage", "bands"]),
        ("pick", vec!["resolve", "--stage", "pick"]),
        ("filter", vec!["filter", "-o", s(&out), "--dd"]),
    ];
    simulated_slurm_array(
        &phases,
        &phase_args(&["--minhash"], &sample, &work, &["--partitions", "9"]),
        &[2, 0, 3, 1],
        &kills,
        &["pick"],
    );
    assert!(tree(&out) == want, "outputs differ from stream mode");
}

#[test]
fn work_directories_refuse_other_modes_settings_and_missing_phases() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let input = sample_dir();
    let run = |head: &[&str], extra: &[&str]| {
        batch(
            &phase_args(
                head,
                &input,
                &work,
                &[&FIRST_OF_TWO_TASKS[..], extra].concat(),
            ),
            None,
        )
    };
    // MinHash settings without --minhash are refused, not ignored.
    assert_refused(&run(&["hash"], &["--verify", "0.5"]), "--minhash");
    ok(&run(&["hash"], &["--minhash"]));
    // Another --verify is another work directory.
    assert_refused(
        &run(&["hash"], &["--minhash", "--verify", "0.5"]),
        "verify=0.8",
    );
    // A stage before the one it needs names the missing task.
    assert_refused(
        &run(&["resolve", "--stage", "bands"], &["--minhash"]),
        "hash task 1 of 2 has not finished",
    );
    assert_refused(
        &run(&["resolve", "--stage", "pick"], &["--minhash"]),
        "bands task 0 of 2 has not finished",
    );
    // Exact stages on a MinHash directory, and the other way round.
    assert_refused(
        &run(&["resolve", "--stage", "docs"], &["--minhash"]),
        "MinHash work directory",
    );
    let exact = tmp.path().join("exact");
    let o = batch(
        &phase_args(
            &["resolve", "--stage", "bands"],
            &input,
            &exact,
            &["--task-index", "0"],
        ),
        None,
    );
    assert_refused(&o, "is a MinHash stage");
    // No store of earlier runs yet: refused, not ignored.
    let store = tmp.path().join("st");
    assert_refused(
        &run(
            &["resolve", "--stage", "bands"],
            &["--minhash", "--store", s(&store)],
        ),
        "--store",
    );
    assert_refused(
        &run(&["hash"], &["--minhash", "--normalize", "none"]),
        "loose",
    );
}
