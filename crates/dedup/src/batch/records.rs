//! The records batch mode's phases pass each other: keys that may be asked, where
//! they are, sorted and encoded compactly in run files.

use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

/// A key that may be asked: where (file rank, index among its kind's keys in that
/// file) and, for paragraphs, in which document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Rec {
    pub(super) key: u64,
    pub(super) file: u32,
    pub(super) seq: u32,
    pub(super) doc: u32,
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn get_varint(data: &[u8], pos: &mut usize) -> Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*pos).ok_or_else(|| anyhow!("truncated record"))?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    bail!("bad varint")
}

/// Bits needed for `v` (0 for 0).
pub(super) fn width(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Sorted records, bit-packed behind a small header and a checksum:
///
/// ```text
/// varint count   (then, if count > 0:)
/// u8 rice_k  u8 file_bits  u8 seq_bits  u8 doc_bits (255: doc equals seq)
/// bits: key 0 in 64 bits, then per record: key gap (Rice, k = rice_k; 0 for a
///       repeated key) after the first, file, seq, doc (fixed widths)
/// u64 xxh3 of everything before
/// ```
///
/// Keys in a run are uniform over u64, so a gap costs about 66 - log2(count)
/// bits; positions take only the bits their largest value needs.
pub(super) fn encode(recs: &[Rec]) -> Vec<u8> {
    let mut out = Vec::with_capacity(recs.len() * 10 + 24);
    put_varint(&mut out, recs.len() as u64);
    if let Some(first) = recs.first() {
        let gaps: Vec<u64> = recs.windows(2).map(|w| w[1].key - w[0].key).collect();
        let k = webdedup_store::bits::best_rice_k(&gaps);
        let max = |f: fn(&Rec) -> u32| recs.iter().map(|r| f(r) as u64).max().unwrap_or(0);
        let (file_bits, seq_bits) = (width(max(|r| r.file)), width(max(|r| r.seq)));
        let doc_is_seq = recs.iter().all(|r| r.doc == r.seq);
        let doc_bits = if doc_is_seq { 0 } else { width(max(|r| r.doc)) };
        out.extend_from_slice(&[
            k as u8,
            file_bits as u8,
            seq_bits as u8,
            if doc_is_seq { 255 } else { doc_bits as u8 },
        ]);
        let mut w = webdedup_store::bits::BitWriter::with_capacity(recs.len() * 10);
        w.put_wide(first.key, 64);
        for (i, r) in recs.iter().enumerate() {
            if i > 0 {
                w.rice(gaps[i - 1], k);
            }
            w.put(r.file as u64, file_bits);
            w.put(r.seq as u64, seq_bits);
            if !doc_is_seq {
                w.put(r.doc as u64, doc_bits);
            }
        }
        out.extend_from_slice(&w.finish());
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The body of a file the batch phases write: `magic` (8 bytes naming the kind of
/// file, a `what`, or none), the content, and the xxh3-64 of both at the end,
/// checked. The body keeps its magic.
pub(super) fn read_checked(path: &Path, magic: &[u8], what: &str) -> Result<Vec<u8>> {
    let mut data =
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let bad = |why: &str| anyhow!("{}: {why}", path.display());
    if data.len() < magic.len() + 8 {
        return Err(bad("truncated"));
    }
    let (body, sum) = data.split_at(data.len() - 8);
    if xxhash_rust::xxh3::xxh3_64(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
        return Err(bad(
            "checksum mismatch (damaged file; rerun the task that wrote it)",
        ));
    }
    if !body.starts_with(magic) {
        return Err(bad(&format!("not a {what}")));
    }
    data.truncate(data.len() - 8);
    Ok(data)
}

pub(super) fn decode(path: &Path, out: &mut Vec<Rec>) -> Result<()> {
    let body = &read_checked(path, b"", "run")?[..];
    let bad = |why: &str| anyhow!("{}: {why}", path.display());
    let mut pos = 0;
    let n = get_varint(body, &mut pos).map_err(|e| bad(&e.to_string()))?;
    if n == 0 {
        return Ok(());
    }
    let head = body
        .get(pos..pos + 4)
        .ok_or_else(|| bad("truncated header"))?;
    let (k, file_bits, seq_bits) = (head[0] as u32, head[1] as u32, head[2] as u32);
    let (doc_is_seq, doc_bits) = if head[3] == 255 {
        (true, 0)
    } else {
        (false, head[3] as u32)
    };
    if k > 63 || file_bits > 32 || seq_bits > 32 || doc_bits > 32 {
        return Err(bad("bad field widths"));
    }
    let bits = &body[pos + 4..];
    // Every record takes at least one bit: a count beyond that is damage.
    if n > bits.len() as u64 * 8 {
        return Err(bad("more records than bits"));
    }
    let mut r = webdedup_store::bits::BitReader::new(bits);
    let mut key = r.get_wide(64);
    for i in 0..n {
        if i > 0 {
            let gap = r.rice(k).ok_or_else(|| bad("truncated record"))?;
            key = key
                .checked_add(gap)
                .ok_or_else(|| bad("keys out of order"))?;
        }
        let file = r.get(file_bits) as u32;
        let seq = r.get(seq_bits) as u32;
        let doc = if doc_is_seq {
            seq
        } else {
            r.get(doc_bits) as u32
        };
        out.push(Rec {
            key,
            file,
            seq,
            doc,
        });
    }
    if r.position().div_ceil(8) != bits.len() {
        return Err(bad("records and length disagree"));
    }
    Ok(())
}
