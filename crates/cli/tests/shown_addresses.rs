//! D7 (issue 27): a block map is input, so a server address in it may hold control
//! characters (escape sequences, a bell). The worker's "unreachable
//! ... retrying" lines and the `status` table show them escaped, never raw.

mod common;

use std::path::Path;
use std::process::Command;

/// A map whose one server's address holds escape sequences and a bell
/// (it resolves nowhere, so a worker keeps retrying it).
fn hostile_map(dir: &Path) -> std::path::PathBuf {
    let map = dir.join("map");
    std::fs::write(
        &map,
        "blocks 1999\nserver 0 bad\x1b]0;owned\x07\x1b[31mhost:1234 weight 1\n0-1998 0\n",
    )
    .unwrap();
    map
}

fn assert_escaped(what: &str, text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what}: raw control characters: {text:?}"
    );
    assert!(
        text.contains("bad\\x1b]0;owned\\x07\\x1b[31mhost"),
        "{what}: {text:?}"
    );
}

#[test]
fn server_addresses_are_escaped_in_retry_lines_and_the_status_table() {
    let tmp = tempfile::tempdir().unwrap();
    let map = hostile_map(tmp.path());
    let input = tmp.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("a.vert"),
        "<doc id=\"1\">\n<p>\nword\n</p>\n</doc>\n",
    )
    .unwrap();
    // Retrying with growing delays: a line once they reach a second, then the error.
    let o = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(["dedup", "-q", "-i"])
        .arg(&input)
        .arg("-o")
        .arg(tmp.path().join("out"))
        .arg("-s")
        .arg(&map)
        .args(["--server-timeout", "6"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = common::stderr(&o);
    assert!(err.contains("; retrying"), "{err}");
    assert_escaped("worker", &err);

    let o = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(["status", "-m"])
        .arg(&map)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(table.starts_with("SERVER"), "{table}");
    assert_escaped("status", &table);
}
