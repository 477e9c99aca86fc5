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
    let input = common::one_doc_input(tmp.path(), "in");
    // Retrying with growing delays: a line once they reach a second, then the error.
    let out = tmp.path().join("out");
    let o = common::dedup(
        &input,
        &out,
        &["-s", common::s(&map), "--server-timeout", "6"],
    );
    common::assert_fails_saying(&o, 2, "; retrying");
    assert_escaped("worker", &common::stderr(&o));

    let o = Command::new(env!("CARGO_BIN_EXE_webdedup"))
        .args(["status", "-m"])
        .arg(&map)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(table.starts_with("SERVER"), "{table}");
    assert_escaped("status", &table);
}
