//! Random damage for the file formats' robustness tests (journal, snapshot): a few
//! bytes changed, maybe a cut, and what a load of the damaged file may answer.

use crate::StoreError;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::fs;
use std::path::Path;

/// Up to three bytes changed (position, xor mask), maybe a cut; positions and
/// cut are taken modulo the file's length.
#[derive(Clone, Debug)]
pub struct Damage {
    edits: Vec<(usize, u8)>,
    cut: Option<usize>,
}

pub fn damage() -> impl Strategy<Value = Damage> {
    (
        proptest::collection::vec((0usize..1 << 20, 1u8..=255), 1..4),
        proptest::option::of(0usize..1 << 20),
    )
        .prop_map(|(edits, cut)| Damage { edits, cut })
}

/// Writes a file with `write` (into a fresh folder), applies `damage` to it and
/// loads it back with `load`: `None` where the load refused it as damaged or
/// mismatched, the loaded value where the damage went unseen (the caller checks
/// it); any other error fails the test.
pub fn reload_damaged<T>(
    damage: &Damage,
    write: impl FnOnce(&Path),
    load: impl FnOnce(&Path) -> Result<T, StoreError>,
) -> Result<Option<T>, TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged");
    write(&path);
    let mut b = fs::read(&path).unwrap();
    for (at, x) in &damage.edits {
        let i = at % b.len();
        b[i] ^= x;
    }
    if let Some(c) = damage.cut {
        b.truncate(c % b.len());
    }
    fs::write(&path, &b).unwrap();
    match load(&path) {
        Ok(v) => Ok(Some(v)),
        Err(StoreError::Corrupt { .. }) | Err(StoreError::Mismatch(_)) => Ok(None),
        Err(e) => Err(TestCaseError::fail(format!("unexpected error {e}"))),
    }
}
