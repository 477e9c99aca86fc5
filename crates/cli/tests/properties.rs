//! Properties of `webdedup dedup` over the shipped sample (real web-like text).

mod common;
use common::*;

#[test]
fn output_is_the_same_for_any_thread_count_and_chunk_size() {
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("t1");
    let o = dedup(&sample_dir(), &reference, &["--threads", "1", "--dd"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let expected = tree(&reference);
    assert_eq!(expected.len(), 6);
    for (i, extra) in [
        ["--threads", "4", "--chunk-bytes", "20000"],
        ["--threads", "2", "--chunk-bytes", "1"],
        ["--threads", "1", "--chunk-bytes", "65536"],
    ]
    .iter()
    .enumerate()
    {
        let out = dir.path().join(format!("run{i}"));
        let mut args = extra.to_vec();
        args.push("--dd");
        assert!(dedup(&sample_dir(), &out, &args).status.success());
        assert!(tree(&out) == expected, "outputs differ with {extra:?}");
    }
}

#[test]
fn every_output_line_is_an_input_line_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    assert!(dedup(&sample_dir(), &out, &[]).status.success());
    let mut dropped_something = false;
    for (rel, bytes) in tree(&out) {
        let input = sample_dir().join(rel.replace(".dedup", ".gz"));
        let (mut r, _) = webdedup_formats::open_input(&input).unwrap();
        let mut inp = Vec::new();
        std::io::Read::read_to_end(&mut r, &mut inp).unwrap();
        let mut in_lines = inp.split(|&b| b == b'\n');
        for line in bytes.split(|&b| b == b'\n') {
            assert!(
                in_lines.any(|l| l == line),
                "{rel}: output line {:?} is not a later input line",
                String::from_utf8_lossy(line)
            );
        }
        dropped_something |= bytes.len() < inp.len();
    }
    assert!(dropped_something, "the sample has duplicates to drop");
}

#[test]
fn a_second_pass_over_the_outputs_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    assert!(dedup(&sample_dir(), &first, &[]).status.success());
    assert!(dedup(&first, &second, &[]).status.success());
    let a = tree(&first);
    let b = tree(&second);
    assert_eq!(a.len(), b.len());
    for ((ra, da), (rb, db)) in a.iter().zip(&b) {
        assert_eq!(format!("{ra}.dedup"), *rb);
        assert!(da == db, "{ra} changed on the second pass");
    }
}
