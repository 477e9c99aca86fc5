//! Feedback mode's report of substring mode (`STEM.dedup.spans`): one line per
//! removed stretch, `FILE:LINE:START-END TAB FILE:LINE:START`, the stretch (its
//! document's line in the input, and `--mark`'s characters of its text) and where
//! its first copy starts, files named by their ids as in `.dropped` (`files.idx`
//! maps them to paths); `-` when the first copy's location is not known (a key
//! stored by a run that kept no locations).

use super::decide::{doc_units, line_and_char};
use crate::plan::ChunkPlan;
use crate::policy::Decisions;
use std::io::Write;
use webdedup_store::Location;

/// Appends the report lines of a decided chunk of input file `file` to `out`.
pub fn spans_lines(plan: &ChunkPlan, dec: &Decisions, file: u64, out: &mut Vec<u8>) {
    let mut next = 0;
    for doc in &plan.docs {
        let units = doc_units(plan, doc.paras.clone());
        while let Some(r) = dec.cut_units.get(next).filter(|r| r.start < units.end) {
            let original = dec.cut_originals.get(next).copied();
            next += 1;
            let (Some(a), Some(b)) = (
                plan.token_chars.get(r.start),
                plan.token_chars.get(r.end - 1),
            ) else {
                continue;
            };
            let _ = write!(out, "{file:016x}:{}:{}-{}\t", doc.line, a.start, b.end);
            match original {
                Some(o) if o != Location::UNKNOWN => {
                    let (line, char) = line_and_char(o);
                    let _ = writeln!(out, "{:016x}:{line}:{char}", o.file);
                }
                _ => out.extend_from_slice(b"-\n"),
            }
        }
    }
}
