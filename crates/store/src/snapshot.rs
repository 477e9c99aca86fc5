//! Snapshots: a store's keys on disk, compact, checked, written atomically.
//!
//! Layout (all integers little-endian; see docs/dev/design.md for the rationale):
//!
//! ```text
//! header   "WDDSNAP\0"  u32 version=1  u32 fields_len  fields  u32 crc32c(everything before)
//!          fields = u32 blocks, u64 keys, str hash, str normalization, str key_kind, str creator
//!          str = u16 length + UTF-8 bytes
//! section  (one per block, blocks 0..B in order)
//!          u32 block  u64 count  u8 rice_k  u64 payload_len  payload  u32 crc32c(section before it)
//! trailer  "WDDSEND\0"  u64 keys  u32 crc32c(trailer before it)
//! ```
//!
//! Every key of block `b` is `b (mod blocks)`, so a section stores only the sorted
//! quotients `q = key / blocks`, as gaps (`q0`, then `q[i] - q[i-1] - 1`) in a Rice
//! code with the parameter `rice_k` that is cheapest for that block: a gap `g` is
//! `g >> k` zero bits, a one bit, and the `k` low bits of `g`, packed LSB first.
//! At 10M keys in 1999 blocks that is about 42 bits (5.3 bytes) a key. The bytes
//! depend on the key set only (no timestamp): the same keys give the same file.

use crate::bits::{best_rice_k, BitReader, BitWriter};
use crate::mem::MemStore;
use crate::table::{mix, Table};
use crate::{fault, Store, StoreError};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

pub const SNAPSHOT_MAGIC: &[u8; 8] = b"WDDSNAP\0";
const TRAILER_MAGIC: &[u8; 8] = b"WDDSEND\0";
pub const SNAPSHOT_VERSION: u32 = 1;
const SECTION_HEAD: usize = 4 + 8 + 1 + 8;
const MAX_STR: usize = 4096;

/// The settings that give a store's keys their meaning. A snapshot (and a journal)
/// records them and refuses to be used with different ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreMeta {
    /// Hash function of the keys, e.g. `xxh3-64`.
    pub hash: String,
    /// Text normalization before hashing, e.g. `loose`.
    pub normalization: String,
    pub blocks: u32,
    /// What the keys are (which key kinds, which seeds), e.g. `vertical-v1`.
    pub key_kind: String,
}

impl StoreMeta {
    /// The one refusal of a store whose recorded settings (`stored`) differ from
    /// this run's (`self`), or None: `STORE holds keys made with other settings:
    /// SETTING 'STORED' in the store, 'THIS' in this run; ...`. Every store kind
    /// (snapshot, journal, Redis, hash servers) refuses with it, so a mismatch reads
    /// the same whichever store it is.
    ///
    /// A key kind may carry attributes, `KIND + NAME=VALUE + ...` (near mode's
    /// n-gram size): when only they differ, each is named as a setting of its own.
    pub fn mismatch(&self, stored: &StoreMeta, store: &str) -> Option<String> {
        let mut diffs = Vec::new();
        let mut cmp = |name: &str, this: &str, there: &str| {
            if this != there {
                diffs.push(setting_differs(name, there, this));
            }
        };
        cmp("hash", &self.hash, &stored.hash);
        cmp("normalization", &self.normalization, &stored.normalization);
        cmp(
            "block count",
            &self.blocks.to_string(),
            &stored.blocks.to_string(),
        );
        let (mine, theirs) = (
            key_kind_parts(&self.key_kind),
            key_kind_parts(&stored.key_kind),
        );
        if mine.0 != theirs.0 {
            cmp("key kind", &self.key_kind, &stored.key_kind);
        } else {
            let mut names: Vec<&str> = mine.1.iter().chain(&theirs.1).map(|a| a.0).collect();
            names.sort_unstable();
            names.dedup();
            for name in names {
                cmp(name, attribute(&mine.1, name), attribute(&theirs.1, name));
            }
        }
        (!diffs.is_empty()).then(|| refusal(store, &diffs))
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.blocks.to_le_bytes());
        put_str(out, &self.hash);
        put_str(out, &self.normalization);
        put_str(out, &self.key_kind);
    }

    pub(crate) fn decode(r: &mut Cursor) -> Result<StoreMeta, String> {
        let blocks = r.u32()?;
        let hash = r.str()?;
        let normalization = r.str()?;
        let key_kind = r.str()?;
        if blocks == 0 {
            return Err("block count 0".into());
        }
        Ok(StoreMeta {
            hash,
            normalization,
            blocks,
            key_kind,
        })
    }
}

/// One setting that differs, as every store's refusal names it.
pub fn setting_differs(name: &str, stored: &str, this: &str) -> String {
    format!("{name} '{stored}' in the store, '{this}' in this run")
}

/// The refusal of `store` whose recorded settings differ (`diffs`, each made by
/// [`setting_differs`]): the one message format of every store kind.
pub fn refusal(store: &str, diffs: &[String]) -> String {
    format!(
        "{store} holds keys made with other settings: {}",
        diffs.join("; ")
    )
}

/// The value of attribute `name`, or `none`.
fn attribute<'a>(attrs: &[(&'a str, &'a str)], name: &str) -> &'a str {
    attrs.iter().find(|a| a.0 == name).map_or("none", |a| a.1)
}

/// A key kind's base and its `NAME=VALUE` attributes (`KIND + NAME=VALUE + ...`).
fn key_kind_parts(kind: &str) -> (&str, Vec<(&str, &str)>) {
    let mut parts = kind.split(" + ");
    let base = parts.next().unwrap_or("");
    let attrs = parts
        .map(|a| a.split_once('=').unwrap_or((a, "")))
        .collect();
    (base, attrs)
}

pub(crate) fn put_str(out: &mut Vec<u8>, s: &str) {
    let b = &s.as_bytes()[..s.len().min(MAX_STR)];
    out.extend_from_slice(&(b.len() as u16).to_le_bytes());
    out.extend_from_slice(b);
}

/// A bounds-checked reader over bytes; errors say what was cut short.
pub(crate) struct Cursor<'a> {
    pub data: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        Cursor { data, pos }
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.data.len() - self.pos < n {
            return Err(format!(
                "truncated: {n} bytes needed, {} left",
                self.data.len() - self.pos
            ));
        }
        let b = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }
    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()))
    }
    pub fn str(&mut self) -> Result<String, String> {
        let n = self.u16()? as usize;
        let b = self.bytes(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| "text field is not UTF-8".to_string())
    }
}

/// Figures of one save or load.
#[derive(Clone, Debug, Default)]
pub struct SnapshotInfo {
    pub keys: u64,
    pub bytes: u64,
    pub seconds: f64,
}

impl SnapshotInfo {
    pub fn bytes_per_key(&self) -> f64 {
        if self.keys == 0 {
            0.0
        } else {
            self.bytes as f64 / self.keys as f64
        }
    }
}

/// The first 16 bytes of a snapshot or a journal (`what`): its magic, its
/// format version (this program's `version` only) and the length of the settings
/// fields that follow, returned.
pub(crate) fn header_fields_len(
    head: &[u8],
    magic: &[u8],
    version: u32,
    what: &str,
    corrupt: impl Fn(u64, String) -> StoreError,
) -> Result<u64, StoreError> {
    if &head[..8] != magic {
        return Err(corrupt(0, format!("not a webdedup {what} (bad magic)")));
    }
    let found = u32::from_le_bytes(head[8..12].try_into().unwrap());
    if found != version {
        return Err(corrupt(
            8,
            format!("{what} format version {found}, this program reads {version}"),
        ));
    }
    Ok(u32::from_le_bytes(head[12..16].try_into().unwrap()) as u64)
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |error| StoreError::Io {
        path: path.to_owned(),
        error,
    }
}

fn threads_for(work: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(work)
        .max(1)
}

/// Sorts values spread about uniformly over `u64` (mixed keys) in linear time:
/// one counting pass on the top bits into about one bucket per value, a scatter,
/// then each (tiny) bucket sorted on its own. Skewed input stays correct, only
/// slower (big buckets use the standard sort).
pub(crate) fn sort_uniform<'a>(v: &[u64], s: &'a mut SortScratch) -> &'a [u64] {
    let n = v.len();
    s.tmp.clear();
    if n < 256 {
        s.tmp.extend_from_slice(v);
        s.tmp.sort_unstable();
        return &s.tmp;
    }
    let bits = n.next_power_of_two().trailing_zeros() - 1;
    let shift = 64 - bits;
    let starts = &mut s.starts;
    starts.clear();
    starts.resize(1usize << bits, 0);
    for &x in v {
        starts[(x >> shift) as usize] += 1;
    }
    let mut sum = 0;
    for c in starts.iter_mut() {
        let here = *c;
        *c = sum;
        sum += here;
    }
    s.tmp.resize(n, 0);
    let out = &mut s.tmp[..];
    for &x in v {
        let b = (x >> shift) as usize;
        out[starts[b] as usize] = x;
        starts[b] += 1;
    }
    // Values are out of order only inside their bucket: one insertion-sort pass
    // finishes, unless the input is skewed (then the standard sort takes over).
    let mut moves = 0usize;
    for i in 1..n {
        let x = out[i];
        let mut j = i;
        while j > 0 && out[j - 1] > x {
            out[j] = out[j - 1];
            j -= 1;
        }
        out[j] = x;
        moves += i - j;
        if moves > 8 * n {
            out.sort_unstable();
            break;
        }
    }
    &s.tmp
}

/// Buffers reused by [`sort_uniform`] (fresh large allocations may be mmaps, faulted
/// in page by page: reusing them avoids that).
#[derive(Default)]
pub(crate) struct SortScratch {
    starts: Vec<u32>,
    tmp: Vec<u64>,
}

/// One block's section: head, Rice-coded quotient gaps, CRC.
pub(crate) fn encode_section(block: u32, blocks: u32, sorted_keys: &[u64], out: &mut Vec<u8>) {
    let mut gaps = Vec::with_capacity(sorted_keys.len());
    let mut prev: Option<u64> = None;
    for &key in sorted_keys {
        let q = key / blocks as u64;
        gaps.push(match prev {
            None => q,
            Some(p) => q - p - 1,
        });
        prev = Some(q);
    }
    let k = best_rice_k(&gaps);
    let mut w = BitWriter::with_capacity(sorted_keys.len() * (k as usize + 3) / 8 + 8);
    for &g in &gaps {
        w.unary(g >> k);
        let low = if k == 0 {
            0
        } else {
            g & (u64::MAX >> (64 - k))
        };
        w.put_wide(low, k);
    }
    let payload = w.finish();
    let start = out.len();
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(&(sorted_keys.len() as u64).to_le_bytes());
    out.push(k as u8);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Decodes a section's payload into the keys of `block`, ascending.
fn decode_payload(
    payload: &[u8],
    count: u64,
    k: u32,
    block: u32,
    blocks: u32,
    keys: &mut Vec<u64>,
) -> Result<(), String> {
    if k > 63 {
        return Err(format!("Rice parameter {k} out of range"));
    }
    // Every key takes at least one bit: a count beyond that is corrupt (and would
    // otherwise make us allocate for it).
    if count > payload.len() as u64 * 8 {
        return Err(format!(
            "{count} keys cannot fit in {} payload bytes",
            payload.len()
        ));
    }
    let max_q = (u64::MAX - block as u64) / blocks as u64;
    keys.clear();
    keys.reserve(count as usize);
    let mut r = BitReader::new(payload);
    let limit = payload.len() * 8;
    let mut q: Option<u64> = None;
    let mask = if k == 0 { 0 } else { u64::MAX >> (64 - k) };
    for _ in 0..count {
        // Fast path: the unary part and the k low bits in one 57-bit window.
        let w = r.peek();
        let tz = w.trailing_zeros();
        let gap = if tz + 1 + k <= 57 && r.position() + (tz + 1 + k) as usize <= limit {
            r.advance((tz + 1 + k) as usize);
            (tz as u64) << k | (w >> (tz + 1)) & mask
        } else {
            let hi = r.unary().ok_or("payload ends inside a key")?;
            if hi > (u64::MAX >> k) {
                return Err("gap out of range".into());
            }
            hi << k | r.get_wide(k)
        };
        let next = match q {
            None => Some(gap),
            Some(p) => p.checked_add(gap).and_then(|x| x.checked_add(1)),
        };
        let nq = next
            .filter(|&x| x <= max_q)
            .ok_or("key out of range for its block")?;
        keys.push(nq * blocks as u64 + block as u64);
        q = Some(nq);
    }
    if r.position().div_ceil(8) != payload.len() {
        return Err(format!(
            "payload has {} bytes, its keys use {}",
            payload.len(),
            r.position().div_ceil(8)
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- save

/// Writes `bytes` to `path` atomically: `PATH.tmp`, fsync, rename, fsync of the
/// directory. On an error (a full disk...) `PATH.tmp` is removed and `path` is
/// untouched. `fault_point` aborts half-way through when armed (or fails there with
/// a disk-full error: `POINT:N:enospc`).
pub fn write_atomic(path: &Path, parts: &[&[u8]], fault_point: &str) -> Result<u64, StoreError> {
    let tmp = tmp_path(path);
    let result = write_tmp_and_rename(path, &tmp, parts, fault_point);
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_tmp_and_rename(
    path: &Path,
    tmp: &Path,
    parts: &[&[u8]],
    fault_point: &str,
) -> Result<u64, StoreError> {
    let mut f = File::create(tmp).map_err(io_err(tmp))?;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut written = 0usize;
    let crash_here = fault::armed() && fault::reached(fault_point, 1);
    let full_here = fault::armed() && fault::disk_full(fault_point, 1);
    for part in parts {
        if (crash_here || full_here) && written + part.len() >= total / 2 {
            f.write_all(&part[..total / 2 - written])
                .map_err(io_err(tmp))?;
            if crash_here {
                fault::crash(fault_point);
            }
            // As a full disk reports it.
            return Err(io_err(tmp)(io::Error::from_raw_os_error(libc::ENOSPC)));
        }
        f.write_all(part).map_err(io_err(tmp))?;
        written += part.len();
    }
    f.sync_all().map_err(io_err(tmp))?;
    drop(f);
    fs::rename(tmp, path).map_err(io_err(path))?;
    sync_dir(path).map_err(io_err(path))?;
    Ok(total as u64)
}

/// [`write_atomic`] of `total` bytes that `fill` writes in pieces (a file too large
/// to hold in memory at once). Fault points act as in [`write_atomic`]: half the
/// bytes are written, then the crash or the full disk.
pub fn write_atomic_stream(
    path: &Path,
    total: u64,
    fault_point: &str,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<u64, StoreError> {
    let tmp = tmp_path(path);
    let result = (|| {
        let f = File::create(&tmp).map_err(io_err(&tmp))?;
        let crash = fault::armed() && fault::reached(fault_point, 1);
        let full = fault::armed() && fault::disk_full(fault_point, 1);
        let mut w = FaultWriter {
            inner: io::BufWriter::with_capacity(1 << 20, f),
            written: 0,
            limit: (crash || full).then_some(total / 2),
        };
        match fill(&mut w) {
            Err(e) if crash && e.kind() == io::ErrorKind::StorageFull => {
                let _ = w.inner.flush();
                fault::crash(fault_point)
            }
            Err(e) => Err(io_err(&tmp)(e)),
            Ok(()) if w.written != total => Err(io_err(&tmp)(io::Error::other(format!(
                "wrote {} bytes, {total} expected",
                w.written
            )))),
            Ok(()) => {
                let f = w
                    .inner
                    .into_inner()
                    .map_err(|e| io_err(&tmp)(e.into_error()))?;
                f.sync_all().map_err(io_err(&tmp))?;
                drop(f);
                fs::rename(&tmp, path).map_err(io_err(path))?;
                sync_dir(path).map_err(io_err(path))?;
                Ok(total)
            }
        }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// A writer that fails as a full disk once `limit` bytes were written (fault
/// injection of [`write_atomic_stream`]).
struct FaultWriter<W> {
    inner: W,
    written: u64,
    limit: Option<u64>,
}

impl<W: Write> Write for FaultWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = match self.limit {
            Some(limit) if self.written + buf.len() as u64 >= limit => {
                let room = (limit - self.written) as usize;
                if room == 0 {
                    return Err(io::Error::from_raw_os_error(libc::ENOSPC));
                }
                self.inner.write(&buf[..room])?
            }
            _ => self.inner.write(buf)?,
        };
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// fsync of the directory holding `path`, so a rename or a removal in it is durable.
pub fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

impl MemStore {
    /// Saves every key to `path` atomically (see the module docs for the format).
    /// Each block is read under its own lock: keys inserted by other threads while
    /// saving may or may not be included, so callers that need a consistent cut
    /// (and remove a journal afterwards) save while no insert runs.
    pub fn save(&self, path: &Path, meta: &StoreMeta) -> Result<SnapshotInfo, StoreError> {
        let started = Instant::now();
        let blocks = self.blocks();
        if meta.blocks != blocks {
            return Err(StoreError::Mismatch(format!(
                "store has {blocks} blocks, settings say {}",
                meta.blocks
            )));
        }
        let next = AtomicUsize::new(0);
        let threads = threads_for((self.len() / 100_000) as usize);
        let mut sections: Vec<(u32, Vec<u8>, u64)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        let mut unsorted = Vec::new();
                        let mut scratch = SortScratch::default();
                        loop {
                            let b = next.fetch_add(1, Ordering::Relaxed);
                            if b >= blocks as usize {
                                return mine;
                            }
                            self.block_keys_into(b as u32, &mut unsorted);
                            let keys = sort_uniform(&unsorted, &mut scratch);
                            let mut out = Vec::new();
                            encode_section(b as u32, blocks, keys, &mut out);
                            mine.push((b as u32, out, keys.len() as u64));
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .flat_map(|h| h.join().expect("encoder thread"))
                .collect()
        });
        sections.sort_unstable_by_key(|s| s.0);
        let keys: u64 = sections.iter().map(|s| s.2).sum();
        let mut header = Vec::new();
        header.extend_from_slice(SNAPSHOT_MAGIC);
        header.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
        let mut fields = Vec::new();
        fields.extend_from_slice(&blocks.to_le_bytes());
        fields.extend_from_slice(&keys.to_le_bytes());
        put_str(&mut fields, &meta.hash);
        put_str(&mut fields, &meta.normalization);
        put_str(&mut fields, &meta.key_kind);
        put_str(
            &mut fields,
            concat!("webdedup-store ", env!("CARGO_PKG_VERSION")),
        );
        header.extend_from_slice(&(fields.len() as u32).to_le_bytes());
        header.extend_from_slice(&fields);
        let crc = crc32c::crc32c(&header);
        header.extend_from_slice(&crc.to_le_bytes());
        let mut trailer = Vec::new();
        trailer.extend_from_slice(TRAILER_MAGIC);
        trailer.extend_from_slice(&keys.to_le_bytes());
        let crc = crc32c::crc32c(&trailer);
        trailer.extend_from_slice(&crc.to_le_bytes());
        let mut parts: Vec<&[u8]> = vec![&header];
        parts.extend(sections.iter().map(|s| s.1.as_slice()));
        parts.push(&trailer);
        let bytes = write_atomic(path, &parts, "snapshot-mid")?;
        fault::hit("snapshot-renamed");
        Ok(SnapshotInfo {
            keys,
            bytes,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Loads a snapshot written by [`MemStore::save`], checking every CRC and that
    /// its settings equal `expected`. `spare_keys` is room for keys to come (spread
    /// over the blocks), so the first inserts do not all grow their tables.
    ///
    /// The file is never read whole: the section heads are read in one pass, then
    /// each decoder thread reads its sections into a reused buffer (no buffer the
    /// size of the file, no page faults for one).
    pub fn load(
        path: &Path,
        expected: &StoreMeta,
        spare_keys: usize,
    ) -> Result<(MemStore, SnapshotInfo), StoreError> {
        let started = Instant::now();
        let corrupt = |offset: u64, reason: String| StoreError::Corrupt {
            path: path.to_owned(),
            offset,
            reason,
        };
        let mut file = File::open(path).map_err(io_err(path))?;
        let file_len = file.metadata().map_err(io_err(path))?.len();
        let mut buf = Vec::new();
        // Reads `n` bytes at `at`, known to lie inside the file.
        let read_at = |file: &mut File, at: u64, n: usize, buf: &mut Vec<u8>| {
            buf.clear();
            buf.resize(n, 0);
            file.seek(SeekFrom::Start(at))
                .and_then(|_| file.read_exact(buf))
                .map_err(|e| {
                    if e.kind() == io::ErrorKind::UnexpectedEof {
                        corrupt(at, "the file changed while it was read".into())
                    } else {
                        io_err(path)(e)
                    }
                })
        };
        let need = |at: u64, n: u64, what: &str| {
            if file_len < at || file_len - at < n {
                Err(corrupt(
                    at,
                    format!(
                        "{what}: {n} bytes needed, {} left (file cut short?)",
                        file_len.saturating_sub(at)
                    ),
                ))
            } else {
                Ok(())
            }
        };
        // Header.
        need(0, 16, "header")?;
        read_at(&mut file, 0, 16, &mut buf)?;
        let fields_len =
            header_fields_len(&buf, SNAPSHOT_MAGIC, SNAPSHOT_VERSION, "snapshot", corrupt)?;
        need(16, fields_len + 4, "header")?;
        read_at(&mut file, 0, 16 + fields_len as usize + 4, &mut buf)?;
        let crc_at = 16 + fields_len as usize;
        if u32::from_le_bytes(buf[crc_at..].try_into().unwrap()) != crc32c::crc32c(&buf[..crc_at]) {
            return Err(corrupt(0, "header CRC mismatch".into()));
        }
        let mut f = Cursor::new(&buf[..crc_at], 16);
        let bad = |e: String| corrupt(16, e);
        let blocks = f.u32().map_err(bad)?;
        let keys = f.u64().map_err(bad)?;
        let meta = StoreMeta {
            blocks,
            hash: f.str().map_err(bad)?,
            normalization: f.str().map_err(bad)?,
            key_kind: f.str().map_err(bad)?,
        };
        let _creator = f.str().map_err(bad)?;
        if blocks == 0 {
            return Err(corrupt(16, "block count 0".into()));
        }
        if let Some(m) = expected.mismatch(&meta, &format!("snapshot {}", path.display())) {
            return Err(StoreError::Mismatch(m));
        }
        // Sections: find them in one pass over their heads.
        let mut sections = Vec::with_capacity(blocks as usize);
        let mut total = 0u64;
        let mut pos = (crc_at + 4) as u64;
        for b in 0..blocks {
            let at = pos;
            need(at, SECTION_HEAD as u64, &format!("section of block {b}"))?;
            read_at(&mut file, at, SECTION_HEAD, &mut buf)?;
            let mut h = Cursor::new(&buf, 0);
            let block = h.u32().unwrap();
            let count = h.u64().unwrap();
            let k = h.u8().unwrap();
            let len = h.u64().unwrap();
            if block != b {
                return Err(corrupt(
                    at,
                    format!("expected the section of block {b}, found {block}"),
                ));
            }
            let body = len
                .checked_add(4)
                .filter(|&n| n <= file_len - at - SECTION_HEAD as u64);
            let Some(body) = body else {
                return Err(corrupt(
                    at,
                    format!("section of block {b}: length {len} past the end of the file"),
                ));
            };
            pos = at + SECTION_HEAD as u64 + body;
            total = total.saturating_add(count);
            sections.push((at, count, k as u32, len as usize));
        }
        let at = pos;
        need(at, 20, "trailer")?;
        read_at(&mut file, at, 20, &mut buf)?;
        if &buf[..8] != TRAILER_MAGIC
            || u32::from_le_bytes(buf[16..20].try_into().unwrap()) != crc32c::crc32c(&buf[..16])
        {
            return Err(corrupt(at, "bad trailer".into()));
        }
        let trailer_keys = u64::from_le_bytes(buf[8..16].try_into().unwrap());
        if at + 20 != file_len {
            return Err(corrupt(
                at + 20,
                format!("{} stray bytes after the trailer", file_len - at - 20),
            ));
        }
        if total != keys || trailer_keys != keys {
            return Err(corrupt(
                at,
                format!("header says {keys} keys, trailer {trailer_keys}, sections hold {total}"),
            ));
        }
        drop(buf);
        // Read, check, decode, mix, sort and place, block by block, in parallel.
        let spare = spare_keys / blocks as usize;
        let next = AtomicUsize::new(0);
        let threads = threads_for((keys / 100_000) as usize).min(blocks as usize);
        let mut tables: Vec<(u32, Result<Table, StoreError>)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        let mut file = match File::open(path) {
                            Ok(f) => f,
                            Err(e) => {
                                mine.push((0, Err(io_err(path)(e))));
                                return mine;
                            }
                        };
                        let mut data = Vec::new();
                        let mut keys = Vec::new();
                        let mut mixed: Vec<u64> = Vec::new();
                        let mut scratch = SortScratch::default();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= sections.len() {
                                return mine;
                            }
                            let (at, count, k, len) = sections[i];
                            let r = read_at(&mut file, at, SECTION_HEAD + len + 4, &mut data)
                                .and_then(|_| {
                                    let crc = u32::from_le_bytes(
                                        data[SECTION_HEAD + len..].try_into().unwrap(),
                                    );
                                    if crc != crc32c::crc32c(&data[..SECTION_HEAD + len]) {
                                        return Err(corrupt(
                                            at,
                                            format!("CRC mismatch in the section of block {i}"),
                                        ));
                                    }
                                    decode_payload(
                                        &data[SECTION_HEAD..SECTION_HEAD + len],
                                        count,
                                        k,
                                        i as u32,
                                        blocks,
                                        &mut keys,
                                    )
                                    .map_err(|e| corrupt(at, format!("section of block {i}: {e}")))
                                })
                                .map(|_| {
                                    let has_zero = keys.first() == Some(&0);
                                    mixed.clear();
                                    mixed.extend(keys.iter().filter(|&&k| k != 0).map(|&k| mix(k)));
                                    let sorted = sort_uniform(&mixed, &mut scratch);
                                    Table::from_sorted_mixed(sorted, has_zero, spare)
                                });
                            let failed = r.is_err();
                            mine.push((i as u32, r));
                            if failed {
                                return mine;
                            }
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .flat_map(|h| h.join().expect("decoder thread"))
                .collect()
        });
        if let Some(pos) = tables.iter().position(|t| t.1.is_err()) {
            return Err(tables.swap_remove(pos).1.err().unwrap());
        }
        tables.sort_unstable_by_key(|t| t.0);
        let tables = tables
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Result<Vec<Table>, StoreError>>()?;
        let store = MemStore::from_tables(blocks, tables);
        Ok((
            store,
            SnapshotInfo {
                keys,
                bytes: file_len,
                seconds: started.elapsed().as_secs_f64(),
            },
        ))
    }
}

/// The settings recorded in a snapshot's header (a server learns from its
/// snapshot what keys it keeps).
pub fn read_meta(path: &Path) -> Result<StoreMeta, StoreError> {
    read_header_meta(path, SNAPSHOT_MAGIC, "snapshot", |c| {
        let blocks = c.u32()?;
        let _keys = c.u64()?;
        let hash = c.str()?;
        let normalization = c.str()?;
        let key_kind = c.str()?;
        Ok(StoreMeta {
            hash,
            normalization,
            blocks,
            key_kind,
        })
    })
}

/// Reads a `magic, u32 version, u32 fields_len, fields, u32 crc` header and
/// decodes its fields with `decode`.
pub(crate) fn read_header_meta(
    path: &Path,
    magic: &[u8; 8],
    what: &str,
    decode: impl FnOnce(&mut Cursor) -> Result<StoreMeta, String>,
) -> Result<StoreMeta, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        path: path.to_owned(),
        offset: 0,
        reason,
    };
    let mut file = File::open(path).map_err(io_err(path))?;
    let mut head = [0u8; 16];
    file.read_exact(&mut head)
        .map_err(|_| corrupt(format!("{what} header cut short")))?;
    if &head[..8] != magic {
        return Err(corrupt(format!("not a webdedup {what} (bad magic)")));
    }
    let fields_len = u32::from_le_bytes(head[12..16].try_into().unwrap()) as usize;
    if fields_len > 1 << 20 {
        return Err(corrupt(format!("{what} header of {fields_len} bytes")));
    }
    let mut buf = head.to_vec();
    buf.resize(16 + fields_len + 4, 0);
    file.read_exact(&mut buf[16..])
        .map_err(|_| corrupt(format!("{what} header cut short")))?;
    let crc_at = 16 + fields_len;
    if u32::from_le_bytes(buf[crc_at..].try_into().unwrap()) != crc32c::crc32c(&buf[..crc_at]) {
        return Err(corrupt(format!("{what} header CRC mismatch")));
    }
    let mut c = Cursor::new(&buf[..crc_at], 16);
    decode(&mut c).map_err(corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_damage::{damage, reload_damaged};

    fn meta(blocks: u32) -> StoreMeta {
        StoreMeta {
            hash: "xxh3-64".into(),
            normalization: "loose".into(),
            blocks,
            key_kind: "test".into(),
        }
    }

    fn random_keys(n: usize, mut x: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            })
            .collect()
    }

    fn store_with(blocks: u32, keys: &[u64]) -> MemStore {
        let s = MemStore::new(blocks);
        let mut seen = Vec::new();
        s.test_and_insert(keys, &mut seen).unwrap();
        s
    }

    fn same_keys(a: &MemStore, b: &MemStore) {
        assert_eq!(a.len(), b.len());
        for blk in 0..a.blocks() {
            assert_eq!(a.block_keys(blk), b.block_keys(blk), "block {blk}");
        }
    }

    #[test]
    fn round_trip_and_deterministic_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut keys = random_keys(50_000, 1);
        keys.extend([0, 1, 1998, 1999, u64::MAX, u64::MAX - 1, u64::MAX - 1999]);
        let s = store_with(1999, &keys);
        let p = dir.path().join("a.snap");
        let info = s.save(&p, &meta(1999)).unwrap();
        assert_eq!(info.keys, s.len());
        let (t, li) = MemStore::load(&p, &meta(1999), 0).unwrap();
        assert_eq!(li.keys, s.len());
        same_keys(&s, &t);
        assert!(t.contains(0) && t.contains(u64::MAX));
        // Same keys inserted in another order: same bytes.
        let mut rev = keys.clone();
        rev.reverse();
        let p2 = dir.path().join("b.snap");
        store_with(1999, &rev).save(&p2, &meta(1999)).unwrap();
        assert_eq!(fs::read(&p).unwrap(), fs::read(&p2).unwrap());
        // The loaded store keeps working.
        let mut seen = Vec::new();
        t.test_and_insert(&[keys[5], 12345], &mut seen).unwrap();
        assert_eq!(seen, vec![true, keys.contains(&12345)]);
        assert!(!dir.path().join("a.snap.tmp").exists());
    }

    /// A failed save (here the rename: a directory is in the way; a full disk in
    /// `crates/cli/tests/archive_cli.rs`) leaves no temporary file, and its message
    /// holds the OS error once.
    #[test]
    fn failed_save_removes_its_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.snap");
        fs::create_dir_all(p.join("in-the-way")).unwrap();
        let e = store_with(1999, &[1, 2, 3])
            .save(&p, &meta(1999))
            .unwrap_err();
        assert!(!dir.path().join("a.snap.tmp").exists());
        // The message with its chain of sources, as `anyhow`'s `{:#}` prints it.
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text += &format!(": {s}");
            source = s.source();
        }
        assert_eq!(text.matches("(os error").count(), 1, "{text}");
        assert!(text.contains("a.snap"), "{text}");
    }

    #[test]
    fn odd_shapes_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        for (blocks, keys) in [
            (1u32, vec![]),
            (1, vec![0]),
            (1, vec![u64::MAX, 0, 1 << 63, 5]),
            (3, random_keys(10, 7)),
            (7, (0..1000u64).collect()),
            (1999, (0..3u64).map(|i| i << 60).collect()),
            (65521, vec![u64::MAX, 7, 65521 * 3 + 2]),
        ] {
            let s = store_with(blocks, &keys);
            let p = dir.path().join("s.snap");
            s.save(&p, &meta(blocks)).unwrap();
            let (t, _) = MemStore::load(&p, &meta(blocks), 10).unwrap();
            same_keys(&s, &t);
        }
    }

    #[test]
    fn compact_at_scale() {
        let s = store_with(1999, &random_keys(1_000_000, 3));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.snap");
        let info = s.save(&p, &meta(1999)).unwrap();
        // log2(2^64 / 1999 / 500) + ~1.5 bits = 45.5 bits a key at this density.
        assert!(
            info.bytes_per_key() < 5.9,
            "{} bytes a key",
            info.bytes_per_key()
        );
    }

    #[test]
    fn settings_mismatch_names_both_values() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.snap");
        store_with(7, &[1, 2, 3]).save(&p, &meta(7)).unwrap();
        let mut other = meta(7);
        other.normalization = "none".into();
        let e = MemStore::load(&p, &other, 0).err().unwrap().to_string();
        assert!(e.contains("'loose'") && e.contains("'none'"), "{e}");
        let e = MemStore::load(&p, &meta(11), 0).err().unwrap().to_string();
        assert!(e.contains("'7'") && e.contains("'11'"), "{e}");
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.snap");
        store_with(5, &random_keys(300, 9))
            .save(&p, &meta(5))
            .unwrap();
        let good = fs::read(&p).unwrap();
        let q = dir.path().join("bad.snap");
        for i in 0..good.len() {
            {
                let mut b = good.clone();
                b[i] ^= 1 << (i % 8);
                fs::write(&q, &b).unwrap();
                let r = MemStore::load(&q, &meta(5), 0);
                assert!(r.is_err(), "flip at {i} accepted");
            }
        }
        for len in 0..good.len() {
            fs::write(&q, &good[..len]).unwrap();
            let e = MemStore::load(&q, &meta(5), 0)
                .err()
                .expect("truncation accepted");
            assert!(e.to_string().contains("bad.snap"), "{e}");
        }
        let mut long = good.clone();
        long.push(0);
        fs::write(&q, &long).unwrap();
        assert!(MemStore::load(&q, &meta(5), 0).is_err());
    }

    #[test]
    fn uniform_sort_sorts_anything() {
        let mut tmp = SortScratch::default();
        for v in [
            random_keys(10_000, 5),
            vec![7; 1000],
            (0..5000u64).rev().collect(),
            random_keys(3000, 6).into_iter().map(|k| k >> 40).collect(),
        ] {
            let a = sort_uniform(&v, &mut tmp).to_vec();
            let mut b = v;
            b.sort_unstable();
            assert_eq!(a, b);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(64))]
        /// Random damage (a few bytes changed, or a cut) is an error, never a panic
        /// and never a different key set.
        #[test]
        fn random_damage_is_refused(d in damage()) {
            let s = store_with(3, &random_keys(200, 11));
            let write = |p: &Path| {
                s.save(p, &meta(3)).unwrap();
            };
            let load = |p: &Path| MemStore::load(p, &meta(3), 0);
            if let Some((t, _)) = reload_damaged(&d, write, load)? {
                // Two edits of one byte can cancel out.
                same_keys(&s, &t);
            }
        }

        #[test]
        fn sections_round_trip(mut keys in proptest::collection::vec(proptest::num::u64::ANY, 0..200), blocks in 1u32..5000) {
            let b = (keys.first().copied().unwrap_or(0) % blocks as u64) as u32;
            for k in keys.iter_mut() {
                *k = *k / blocks as u64 * blocks as u64 + b as u64;
                if *k < b as u64 { *k = b as u64; }
            }
            keys.retain(|&k| k % blocks as u64 == b as u64);
            keys.sort_unstable();
            keys.dedup();
            let mut out = Vec::new();
            encode_section(b, blocks, &keys, &mut out);
            let count = u64::from_le_bytes(out[4..12].try_into().unwrap());
            let k = out[12] as u32;
            let payload = &out[SECTION_HEAD..out.len() - 4];
            let mut got = Vec::new();
            decode_payload(payload, count, k, b, blocks, &mut got).unwrap();
            proptest::prop_assert_eq!(got, keys);
        }
    }
}
