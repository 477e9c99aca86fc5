//! The persisted fingerprint index (`similar --index DIR`): the fingerprints and ids of
//! every document kept so far, so a new batch is checked against all earlier ones.
//!
//! One snapshot file, `DIR/simhash.idx`, written to `simhash.idx.tmp`, synced, then
//! renamed over the old one (a crash leaves the old or the new index, never a mix):
//!
//! ```text
//! magic      8 bytes  "WDSIMIX\x01"
//! hlen       u32 LE   length of the header text
//! header     UTF-8    "format=1 tokenizer=unicode shingle=3 hash=xxh3-64 count=N"
//! N records           u64 LE fingerprint, u32 LE id length, id bytes (insertion order)
//! checksum   u64 LE   xxh3-64 of everything before it
//! ```
//!
//! The search tables are not stored: they are rebuilt at load for the `k` of the run
//! (so one index serves any `k`), in about a second per 10M fingerprints per table.

use crate::cluster::IndexView;
use crate::search::{Plan, TableSet};
use crate::tokenize::Settings;
#[cfg(test)]
use crate::tokenize::Weights;
use anyhow::{bail, Context, Result};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

pub const MAGIC: &[u8; 8] = b"WDSIMIX\x01";
pub const FILE_NAME: &str = "simhash.idx";

pub struct FpIndex {
    dir: PathBuf,
    pub settings: Settings,
    /// In insertion order.
    pub fps: Vec<u64>,
    pub ids: Vec<String>,
    /// (value, position), sorted by value.
    by_value: Vec<(u64, u32)>,
    tables: Option<TableSet>,
}

impl FpIndex {
    /// Opens `dir`'s index, or starts an empty one with `settings` if there is none.
    /// An existing index with other settings is refused.
    pub fn open_or_create(dir: &Path, settings: Settings) -> Result<FpIndex> {
        let path = dir.join(FILE_NAME);
        let mut ix = FpIndex {
            dir: dir.to_path_buf(),
            settings,
            fps: Vec::new(),
            ids: Vec::new(),
            by_value: Vec::new(),
            tables: None,
        };
        if !path.exists() {
            return Ok(ix);
        }
        let bytes = fs::read(&path).with_context(|| format!("reading index {}", path.display()))?;
        let bad = |why: &str| anyhow::anyhow!("index {} is damaged: {why}", path.display());
        if bytes.len() < 8 + 4 + 8 || &bytes[..8] != MAGIC {
            return Err(bad("not a webdedup SimHash index (bad magic)"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        if xxh3_64(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
            return Err(bad("checksum mismatch (truncated or corrupted)"));
        }
        let hlen = u32::from_le_bytes(body[8..12].try_into().unwrap()) as usize;
        let header = body
            .get(12..12 + hlen)
            .ok_or_else(|| bad("header truncated"))?;
        let header = std::str::from_utf8(header).map_err(|_| bad("header is not UTF-8"))?;
        let mut count = None;
        for w in header.split_whitespace() {
            match w.split_once('=') {
                Some(("format", v)) if v != "1" => bail!(
                    "index {} has format {v}; this build reads format 1",
                    path.display()
                ),
                Some(("count", v)) => count = v.parse::<usize>().ok(),
                _ => {}
            }
        }
        // The index's own keys apart, the header is the fingerprint settings.
        let settings_words: Vec<&str> = header
            .split_whitespace()
            .filter(|w| !w.starts_with("format=") && !w.starts_with("count="))
            .collect();
        let stored = Settings::parse(&settings_words.join(" ")).map_err(|e| bad(&e))?;
        if stored != settings {
            bail!(
                "index {} was built with {}, but this run uses {}: use the same --tokenizer/--shingle or another index",
                path.display(),
                stored.describe(),
                settings.describe()
            );
        }
        let count = count.ok_or_else(|| bad("header has no count"))?;
        let mut p = 12 + hlen;
        // A record takes at least 12 bytes: never trust `count` beyond what the file holds.
        let cap = count.min(body.len() / 12);
        ix.fps.reserve(cap);
        ix.ids.reserve(cap);
        for _ in 0..count {
            let rec = body.get(p..p + 12).ok_or_else(|| bad("record truncated"))?;
            let fp = u64::from_le_bytes(rec[..8].try_into().unwrap());
            let len = u32::from_le_bytes(rec[8..12].try_into().unwrap()) as usize;
            let id = body
                .get(p + 12..p + 12 + len)
                .ok_or_else(|| bad("record truncated"))?;
            ix.fps.push(fp);
            ix.ids.push(String::from_utf8_lossy(id).into_owned());
            p += 12 + len;
        }
        if p != body.len() {
            return Err(bad("trailing bytes after the records"));
        }
        ix.by_value = ix
            .fps
            .iter()
            .enumerate()
            .map(|(i, &f)| (f, i as u32))
            .collect();
        ix.by_value.sort_unstable();
        Ok(ix)
    }

    pub fn len(&self) -> usize {
        self.fps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    /// Builds the search tables for distance `k`.
    pub fn prepare(&mut self, k: u32) {
        let mut distinct: Vec<u64> = self.by_value.iter().map(|e| e.0).collect();
        distinct.dedup();
        self.tables = Some(TableSet::build(
            Plan::choose_for_queries(distinct.len(), k),
            &distinct,
        ));
    }

    /// The view the clustering uses (after [`prepare`](Self::prepare)).
    pub fn view(&self) -> Option<IndexView<'_>> {
        self.tables.as_ref().map(|t| IndexView {
            tables: t,
            by_value: &self.by_value,
        })
    }

    /// Appends documents (kept ones of a batch).
    pub fn add(&mut self, fps: &[u64], ids: &[String]) {
        let base = self.fps.len();
        self.fps.extend_from_slice(fps);
        self.ids.extend_from_slice(ids);
        self.by_value
            .extend(fps.iter().enumerate().map(|(i, &f)| (f, (base + i) as u32)));
        self.by_value.sort_unstable();
        self.tables = None;
    }

    /// Writes the snapshot atomically.
    pub fn save(&self) -> Result<()> {
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let path = self.dir.join(FILE_NAME);
        let tmp = self.dir.join(format!("{FILE_NAME}.tmp"));
        let write = || -> std::io::Result<()> {
            let file = fs::File::create(&tmp)?;
            let mut w = BufWriter::with_capacity(
                1 << 20,
                HashingWriter {
                    inner: file,
                    hash: Xxh3::new(),
                },
            );
            let header = format!(
                "format=1 {} count={}",
                self.settings.describe(),
                self.fps.len()
            );
            w.write_all(MAGIC)?;
            w.write_all(&(header.len() as u32).to_le_bytes())?;
            w.write_all(header.as_bytes())?;
            for (fp, id) in self.fps.iter().zip(&self.ids) {
                w.write_all(&fp.to_le_bytes())?;
                w.write_all(&(id.len() as u32).to_le_bytes())?;
                w.write_all(id.as_bytes())?;
            }
            let mut hw = w.into_inner().map_err(|e| e.into_error())?;
            let sum = hw.hash.digest();
            hw.inner.write_all(&sum.to_le_bytes())?;
            hw.inner.sync_all()?;
            Ok(())
        };
        write().with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, &path)
            .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        if let Ok(d) = fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

struct HashingWriter {
    inner: fs::File,
    hash: Xxh3,
}

impl Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize::Tokenizer;

    #[test]
    fn round_trip_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let s = Settings {
            tokenizer: Tokenizer::Unicode,
            shingle: 3,
            weights: Weights::Count,
        };
        let mut ix = FpIndex::open_or_create(dir.path(), s).unwrap();
        assert!(ix.is_empty());
        ix.add(
            &[5, 1, 0xffff_0000_0000_0000],
            &["a".into(), "b\tc".into(), "é".into()],
        );
        ix.save().unwrap();
        let mut back = FpIndex::open_or_create(dir.path(), s).unwrap();
        assert_eq!(back.fps, vec![5, 1, 0xffff_0000_0000_0000]);
        assert_eq!(back.ids, vec!["a", "b\tc", "é"]);
        back.prepare(2);
        let v = back.view().unwrap();
        let mut out = Vec::new();
        v.tables.query(4, &mut out);
        out.sort_unstable();
        assert_eq!(out, vec![(1, 2), (5, 1)]);

        // Other settings are refused with a message naming both.
        let other = Settings {
            tokenizer: Tokenizer::Chars(3),
            shingle: 3,
            weights: Weights::Count,
        };
        let err = FpIndex::open_or_create(dir.path(), other)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("tokenizer=unicode") && err.contains("tokenizer=chars:3"),
            "{err}"
        );

        // A truncated or flipped file is refused, not misread.
        let path = dir.path().join(FILE_NAME);
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(FpIndex::open_or_create(dir.path(), s)
            .err()
            .unwrap()
            .to_string()
            .contains("damaged"));
        let mut flipped = bytes.clone();
        flipped[30] ^= 1;
        fs::write(&path, &flipped).unwrap();
        assert!(FpIndex::open_or_create(dir.path(), s).is_err());
        fs::write(&path, &bytes).unwrap();
        assert_eq!(FpIndex::open_or_create(dir.path(), s).unwrap().len(), 3);
    }
}
