//! The journal: an append-only log of inserted keys, so that what a snapshot does
//! not hold yet survives a crash.
//!
//! ```text
//! header  "WDDJRNL\0"  u32 version=1  u32 fields_len  fields  u32 crc32c(everything before)
//!         fields = store settings (u32 blocks, str hash, str normalization, str key_kind)
//!                  u32 run_len  run_info (opaque to the store: who wrote the journal and how)
//! record  u32 len  u32 !len  u32 crc32c(payload)  payload[len]
//!         payload = u32 tag_len  tag  u32 nkeys  u64 keys[nkeys]
//! ```
//!
//! The tag is opaque to the store: the dedup runner puts there which chunk of which
//! file the keys came from and the verdicts the store gave (see `dedup::resume`); a
//! server would put a stream id and a sequence number.
//!
//! A crash can only cut the *last* record short (appends are sequential), so on
//! replay a record that runs past the end of the file, or the last one with a bad
//! CRC, or a tail of zero bytes (a file system that grew the file but lost the data)
//! is a *torn* record: dropped and reported. Anything wrong before the last record is
//! an error naming its offset: never a silently smaller store.
//!
//! Group commit ([`SyncMode`]): `always` fsyncs every record before `append`
//! returns; `batch` has a background thread hand the buffered records to the OS and
//! fsync them every `delay` (so at most `delay` of work is lost on power failure,
//! nothing on a process kill once the OS has them); `off` never fsyncs (a process
//! kill loses nothing the OS was given, a power failure may). [`Journal::sync`]
//! makes every record so far durable under the mode: callers use it before an
//! effect that depends on the records (renaming an output into place).

use crate::snapshot::{sync_dir, tmp_path, write_atomic, Cursor, StoreMeta};
use crate::{fault, StoreError};
use parking_lot::{Condvar, Mutex};
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub const JOURNAL_MAGIC: &[u8; 8] = b"WDDJRNL\0";
pub const JOURNAL_VERSION: u32 = 1;
const RECORD_HEAD: usize = 12;
/// Larger records are refused (a corrupt length must not make us allocate it).
const MAX_RECORD: u32 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// fsync after every record.
    Always,
    /// fsync in the background at most this long after a record.
    Batch(Duration),
    /// Never fsync (records reach the OS when the buffer fills or on `sync`).
    Off,
}

/// The default group-commit delay of `batch`.
pub const DEFAULT_BATCH_DELAY: Duration = Duration::from_millis(50);

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "always" => Ok(SyncMode::Always),
            "batch" => Ok(SyncMode::Batch(DEFAULT_BATCH_DELAY)),
            "off" => Ok(SyncMode::Off),
            other => Err(format!(
                "unknown fsync mode '{other}' (expected always, batch or off)"
            )),
        }
    }
}

struct Inner {
    w: BufWriter<File>,
    dirty: bool,
    records: u64,
    /// An error of the background syncer, reported by the next call.
    failed: Option<String>,
}

struct Shared {
    inner: Mutex<Inner>,
    sync_file: File,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// An open journal, appended to from any thread (records go in call order).
pub struct Journal {
    path: PathBuf,
    mode: SyncMode,
    shared: Arc<Shared>,
    syncer: Option<std::thread::JoinHandle<()>>,
}

/// What a replay found.
#[derive(Debug, Default)]
pub struct JournalReplay {
    pub run_info: Vec<u8>,
    pub records: u64,
    pub keys: u64,
    /// Bytes of the file up to the end of the last good record.
    pub valid_len: u64,
    /// A torn last record that was dropped: its offset and why.
    pub torn: Option<(u64, String)>,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |error| StoreError::Io {
        path: path.to_owned(),
        error,
    }
}

/// The bytes of a journal header.
fn header(meta: &StoreMeta, run_info: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(JOURNAL_MAGIC);
    h.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
    let mut fields = Vec::new();
    meta.encode(&mut fields);
    fields.extend_from_slice(&(run_info.len() as u32).to_le_bytes());
    fields.extend_from_slice(run_info);
    h.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    h.extend_from_slice(&fields);
    let crc = crc32c::crc32c(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    h
}

/// Appends one record (head and payload) to `out`.
pub fn encode_record(tag: &[u8], keys: &[u64], out: &mut Vec<u8>) {
    let len = 4 + tag.len() + 4 + keys.len() * 8;
    let start = out.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&(!(len as u32)).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(tag.len() as u32).to_le_bytes());
    out.extend_from_slice(tag);
    out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    for k in keys {
        out.extend_from_slice(&k.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out[start + RECORD_HEAD..]);
    out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
}

impl Journal {
    /// Creates a new, empty journal at `path` (replacing any), atomically with its header.
    pub fn create(
        path: &Path,
        meta: &StoreMeta,
        run_info: &[u8],
        mode: SyncMode,
    ) -> Result<Journal, StoreError> {
        Self::create_with(path, meta, run_info, &[], mode)
    }

    /// [`create`](Self::create) with first records, written with the header in the
    /// same atomic write: a journal never holds the header without them.
    pub fn create_with(
        path: &Path,
        meta: &StoreMeta,
        run_info: &[u8],
        first: &[(&[u8], &[u64])],
        mode: SyncMode,
    ) -> Result<Journal, StoreError> {
        let mut h = header(meta, run_info);
        for (tag, keys) in first {
            encode_record(tag, keys, &mut h);
        }
        write_atomic(path, &[&h], "journal-create")?;
        Self::open_append(path, h.len() as u64, mode)
    }

    /// Opens an existing journal to append after its first `valid_len` bytes (the
    /// end of its last good record, from [`Journal::replay`]): a torn tail is cut off.
    pub fn open_append(path: &Path, valid_len: u64, mode: SyncMode) -> Result<Journal, StoreError> {
        let mut f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err(path))?;
        if f.metadata().map_err(io_err(path))?.len() != valid_len {
            f.set_len(valid_len).map_err(io_err(path))?;
            f.sync_all().map_err(io_err(path))?;
        }
        f.seek(SeekFrom::Start(valid_len)).map_err(io_err(path))?;
        let sync_file = f.try_clone().map_err(io_err(path))?;
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                w: BufWriter::with_capacity(1 << 20, f),
                dirty: false,
                records: 0,
                failed: None,
            }),
            sync_file,
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let syncer = match mode {
            SyncMode::Batch(delay) => {
                let sh = shared.clone();
                Some(std::thread::spawn(move || loop {
                    {
                        let mut stop = sh.stop.lock();
                        if !*stop {
                            sh.wake.wait_for(&mut stop, delay);
                        }
                        if *stop {
                            return;
                        }
                    }
                    let mut inner = sh.inner.lock();
                    if !inner.dirty {
                        continue;
                    }
                    inner.dirty = false;
                    let r = inner.w.flush();
                    drop(inner);
                    let r = r.and_then(|_| sh.sync_file.sync_data());
                    if let Err(e) = r {
                        sh.inner.lock().failed = Some(e.to_string());
                    }
                }))
            }
            _ => None,
        };
        Ok(Journal {
            path: path.to_owned(),
            mode,
            shared,
            syncer,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check(&self, inner: &mut Inner) -> Result<(), StoreError> {
        match inner.failed.take() {
            Some(e) => Err(StoreError::Io {
                path: self.path.clone(),
                error: io::Error::other(e),
            }),
            None => Ok(()),
        }
    }

    /// Appends one record: `keys` (inserted into the store) and an opaque `tag`.
    pub fn append(&self, tag: &[u8], keys: &[u64]) -> Result<(), StoreError> {
        let mut buf = Vec::new();
        encode_record(tag, keys, &mut buf);
        self.append_encoded(&buf)
    }

    /// Appends a record made by [`encode_record`] (callers encode outside any lock).
    pub fn append_encoded(&self, record: &[u8]) -> Result<(), StoreError> {
        let mut g = self.shared.inner.lock();
        let inner = &mut *g;
        self.check(inner)?;
        if fault::armed() && fault::reached("journal-torn", 1) {
            let _ = inner.w.write_all(&record[..record.len() / 2]);
            let _ = inner.w.flush();
            fault::crash("journal-torn");
        }
        inner.w.write_all(record).map_err(io_err(&self.path))?;
        inner.records += 1;
        inner.dirty = true;
        if fault::armed() && fault::reached("journal-record", 1) {
            let _ = inner.w.flush();
            fault::crash("journal-record");
        }
        if self.mode == SyncMode::Always {
            inner.w.flush().map_err(io_err(&self.path))?;
            self.shared
                .sync_file
                .sync_data()
                .map_err(io_err(&self.path))?;
            inner.dirty = false;
        }
        Ok(())
    }

    /// Makes every record appended so far durable under the sync mode (handed to
    /// the OS; also fsynced unless the mode is `off`).
    pub fn sync(&self) -> Result<(), StoreError> {
        fault::hit("journal-sync");
        let mut g = self.shared.inner.lock();
        self.check(&mut g)?;
        g.w.flush().map_err(io_err(&self.path))?;
        g.dirty = false;
        // The records are with the OS: appends may go on while the disk catches up.
        // (Always fsync here, even if the background syncer just flushed: its own
        // fsync may not have finished yet.)
        drop(g);
        if self.mode != SyncMode::Off {
            self.shared
                .sync_file
                .sync_data()
                .map_err(io_err(&self.path))?;
        }
        Ok(())
    }

    /// Hands every record appended so far to the OS (no fsync; the background
    /// syncer of `batch` still fsyncs them): enough for a record to survive a
    /// process kill, which is what a server needs before it acknowledges.
    pub fn flush_to_os(&self) -> Result<(), StoreError> {
        let mut g = self.shared.inner.lock();
        self.check(&mut g)?;
        g.w.flush().map_err(io_err(&self.path))
    }

    /// Records appended through this handle.
    pub fn records(&self) -> u64 {
        self.shared.inner.lock().records
    }

    /// Stops the background syncer and syncs.
    pub fn close(mut self) -> Result<(), StoreError> {
        self.stop_syncer();
        self.sync()
    }

    fn stop_syncer(&mut self) {
        *self.shared.stop.lock() = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.syncer.take() {
            let _ = h.join();
        }
    }

    /// Removes the journal file (after a snapshot that holds its keys was saved).
    pub fn remove(mut self) -> Result<(), StoreError> {
        self.stop_syncer();
        let path = self.path.clone();
        drop(self);
        remove_durably(&path)
    }

    /// Writes a complete journal file at `path` atomically (header and records):
    /// used for per-file decision logs.
    pub fn write_file(
        path: &Path,
        meta: &StoreMeta,
        run_info: &[u8],
        records: &[(Vec<u8>, Vec<u64>)],
    ) -> Result<(), StoreError> {
        let mut bytes = header(meta, run_info);
        for (tag, keys) in records {
            encode_record(tag, keys, &mut bytes);
        }
        write_atomic(path, &[&bytes], "log-mid").map(|_| ())
    }

    /// Reads the journal at `path`, checking its settings against `expected`, and
    /// calls `each(tag, keys)` for every good record in order. A torn last record
    /// is dropped and reported in the result; other damage is an error with its
    /// offset; an error from `each` stops the replay (with the record's offset).
    pub fn replay(
        path: &Path,
        expected: &StoreMeta,
        mut each: impl FnMut(&[u8], &[u64]) -> Result<(), String>,
    ) -> Result<JournalReplay, StoreError> {
        let corrupt = |offset: u64, reason: String| StoreError::Corrupt {
            path: path.to_owned(),
            offset,
            reason,
        };
        let file = File::open(path).map_err(io_err(path))?;
        let file_len = file.metadata().map_err(io_err(path))?.len();
        let mut r = BufReader::with_capacity(1 << 20, file);
        // Header.
        let mut head = vec![0u8; 16];
        r.read_exact(&mut head)
            .map_err(|_| corrupt(0, "journal header cut short".into()))?;
        let fields_len = crate::snapshot::header_fields_len(
            &head,
            JOURNAL_MAGIC,
            JOURNAL_VERSION,
            "journal",
            corrupt,
        )?;
        if fields_len + 20 > file_len {
            return Err(corrupt(12, "journal header cut short".into()));
        }
        head.resize(16 + fields_len as usize + 4, 0);
        r.read_exact(&mut head[16..])
            .map_err(|_| corrupt(16, "journal header cut short".into()))?;
        let crc_at = head.len() - 4;
        if u32::from_le_bytes(head[crc_at..].try_into().unwrap()) != crc32c::crc32c(&head[..crc_at])
        {
            return Err(corrupt(0, "journal header CRC mismatch".into()));
        }
        let mut c = Cursor::new(&head[..crc_at], 16);
        let meta = StoreMeta::decode(&mut c).map_err(|e| corrupt(16, e))?;
        let run_len = c.u32().map_err(|e| corrupt(16, e))? as usize;
        let run_info = c.bytes(run_len).map_err(|e| corrupt(16, e))?.to_vec();
        if let Some(m) = expected.mismatch(&meta, &format!("journal {}", path.display())) {
            return Err(StoreError::Mismatch(m));
        }
        let mut out = JournalReplay {
            run_info,
            valid_len: head.len() as u64,
            ..Default::default()
        };
        let mut at = head.len() as u64;
        let mut payload = Vec::new();
        let mut keys = Vec::new();
        loop {
            let left = file_len - at;
            if left == 0 {
                break;
            }
            let torn = |out: &mut JournalReplay, why: &str| {
                out.torn = Some((at, why.to_string()));
            };
            if left < RECORD_HEAD as u64 {
                torn(&mut out, "record head cut short");
                break;
            }
            let mut h = [0u8; RECORD_HEAD];
            r.read_exact(&mut h).map_err(io_err(path))?;
            let len = u32::from_le_bytes(h[0..4].try_into().unwrap());
            let check = u32::from_le_bytes(h[4..8].try_into().unwrap());
            let crc = u32::from_le_bytes(h[8..12].try_into().unwrap());
            if check != !len || len > MAX_RECORD {
                if h == [0; RECORD_HEAD] && zeros_to_end(&mut r).map_err(io_err(path))? {
                    torn(&mut out, "zero bytes to the end of the file");
                    break;
                }
                return Err(corrupt(at, "bad record length".into()));
            }
            let end = at + RECORD_HEAD as u64 + len as u64;
            if end > file_len {
                torn(&mut out, "record cut short");
                break;
            }
            payload.resize(len as usize, 0);
            r.read_exact(&mut payload).map_err(io_err(path))?;
            if crc32c::crc32c(&payload) != crc {
                if end == file_len {
                    torn(&mut out, "CRC mismatch in the last record");
                    break;
                }
                return Err(corrupt(at, "record CRC mismatch".into()));
            }
            let mut p = Cursor::new(&payload, 0);
            let parsed = (|| {
                let tag_len = p.u32()? as usize;
                let tag = p.bytes(tag_len)?;
                let n = p.u32()? as usize;
                let raw = p.bytes(n.checked_mul(8).ok_or("key count overflows")?)?;
                if p.pos != payload.len() {
                    return Err("stray bytes after the keys".to_string());
                }
                keys.clear();
                keys.extend(
                    raw.chunks_exact(8)
                        .map(|b| u64::from_le_bytes(b.try_into().unwrap())),
                );
                Ok(tag)
            })();
            let tag = parsed.map_err(|e| corrupt(at, format!("bad record: {e}")))?;
            each(tag, &keys).map_err(|e| corrupt(at, e))?;
            out.records += 1;
            out.keys += keys.len() as u64;
            at = end;
            out.valid_len = at;
        }
        Ok(out)
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.stop_syncer();
        let _ = self.shared.inner.lock().w.flush();
    }
}

fn zeros_to_end(r: &mut impl Read) -> io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(true);
        }
        if buf[..n].iter().any(|&b| b != 0) {
            return Ok(false);
        }
    }
}

/// Removes `path` (if present) and makes the removal durable.
pub fn remove_durably(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => sync_dir(path).map_err(io_err(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path)(e)),
    }?;
    let _ = std::fs::remove_file(tmp_path(path));
    Ok(())
}

/// The settings recorded in a journal's header.
pub fn read_meta(path: &Path) -> Result<StoreMeta, StoreError> {
    crate::snapshot::read_header_meta(path, JOURNAL_MAGIC, "journal", StoreMeta::decode)
}

/// The run information recorded in a journal's header (who wrote it).
pub fn read_run_info(path: &Path) -> Result<Vec<u8>, StoreError> {
    let mut info = Vec::new();
    crate::snapshot::read_header_meta(path, JOURNAL_MAGIC, "journal", |c| {
        let meta = StoreMeta::decode(c)?;
        let n = c.u32()? as usize;
        info = c.bytes(n)?.to_vec();
        Ok(meta)
    })?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_damage::{damage, reload_damaged};
    use crate::{MemStore, Store};
    use std::fs;

    fn meta() -> StoreMeta {
        StoreMeta {
            hash: "xxh3-64".into(),
            normalization: "loose".into(),
            blocks: 7,
            key_kind: "test".into(),
        }
    }

    type Records = Vec<(Vec<u8>, Vec<u64>)>;

    fn collect(path: &Path) -> Result<(Records, JournalReplay), StoreError> {
        let mut recs = Vec::new();
        let r = Journal::replay(path, &meta(), |t, k| {
            recs.push((t.to_vec(), k.to_vec()));
            Ok(())
        })?;
        Ok((recs, r))
    }

    fn sample(path: &Path, mode: SyncMode) -> Records {
        let j = Journal::create(path, &meta(), b"run", mode).unwrap();
        let recs: Records = (0..20u64)
            .map(|i| {
                (
                    format!("t{i}").into_bytes(),
                    (0..i).map(|k| k * 31 + i).collect(),
                )
            })
            .collect();
        for (t, k) in &recs {
            j.append(t, k).unwrap();
        }
        j.close().unwrap();
        recs
    }

    /// A sample journal (not synced) as `j` in a fresh folder: the folder, the
    /// records and the file's bytes.
    fn sample_file() -> (tempfile::TempDir, Records, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        let recs = sample(&p, SyncMode::Off);
        let good = fs::read(&p).unwrap();
        (dir, recs, good)
    }

    #[test]
    fn round_trip_in_every_mode() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [
            SyncMode::Always,
            SyncMode::Batch(Duration::from_millis(1)),
            SyncMode::Off,
        ] {
            let p = dir.path().join("j");
            let recs = sample(&p, mode);
            let (got, r) = collect(&p).unwrap();
            assert_eq!(got, recs);
            assert_eq!(r.run_info, b"run");
            assert!(r.torn.is_none());
            assert_eq!(r.valid_len, fs::metadata(&p).unwrap().len());
            // Appending after a replay continues the same journal.
            let j = Journal::open_append(&p, r.valid_len, mode).unwrap();
            j.append(b"more", &[1]).unwrap();
            j.close().unwrap();
            assert_eq!(collect(&p).unwrap().0.len(), 21);
        }
    }

    #[test]
    fn replay_fills_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        sample(&p, SyncMode::Off);
        let s = MemStore::new(7);
        let r = Journal::replay(&p, &meta(), |_, k| {
            s.insert_all(k);
            Ok(())
        })
        .unwrap();
        assert_eq!(r.keys, (0..20).sum::<u64>());
        let mut seen = Vec::new();
        s.test_and_insert(&[19 * 31 + 19 - 31, 5], &mut seen)
            .unwrap();
        assert!(seen[0]);
    }

    #[test]
    fn torn_tail_is_dropped_and_reported_at_every_cut() {
        let (dir, recs, good) = sample_file();
        let (_, full) = collect(&dir.path().join("j")).unwrap();
        let header_len = good.len()
            - recs
                .iter()
                .map(|(t, k)| 12 + 8 + t.len() + 8 * k.len())
                .sum::<usize>();
        let q = dir.path().join("cut");
        for len in header_len..good.len() {
            fs::write(&q, &good[..len]).unwrap();
            let mut n = 0;
            let r = Journal::replay(&q, &meta(), |_, _| {
                n += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(r.records, n);
            // Only whole records survive, and the cut is reported unless it falls
            // exactly between two records.
            let mut ends = vec![header_len];
            for (t, k) in &recs {
                ends.push(ends.last().unwrap() + 20 + t.len() + 8 * k.len());
            }
            assert_eq!(
                r.valid_len as usize,
                *ends.iter().rfind(|&&e| e <= len).unwrap()
            );
            assert_eq!(r.torn.is_some(), !ends.contains(&len), "cut at {len}");
        }
        assert_eq!(full.records, 20);
        // A zero-filled tail is torn too.
        let mut z = good.clone();
        z.extend_from_slice(&[0; 100]);
        fs::write(&q, &z).unwrap();
        let r = collect(&q).unwrap().1;
        assert_eq!(r.records, 20);
        assert!(r.torn.is_some());
        // Appending after a torn tail cuts it off first.
        fs::write(&q, &good[..good.len() - 3]).unwrap();
        let r = collect(&q).unwrap().1;
        let j = Journal::open_append(&q, r.valid_len, SyncMode::Off).unwrap();
        j.append(b"x", &[9]).unwrap();
        j.close().unwrap();
        let (got, r) = collect(&q).unwrap();
        assert!(r.torn.is_none());
        assert_eq!(got.len(), 20);
        assert_eq!(got.last().unwrap().0, b"x");
    }

    #[test]
    fn damage_before_the_last_record_is_an_error_with_its_offset() {
        let (dir, recs, good) = sample_file();
        let last = 20 + recs[19].0.len() + 8 * recs[19].1.len();
        let q = dir.path().join("bad");
        for i in 0..good.len() - last {
            let mut b = good.clone();
            b[i] ^= 0x10;
            fs::write(&q, &b).unwrap();
            match collect(&q) {
                Err(StoreError::Corrupt { offset, .. }) => {
                    assert!(offset <= i as u64, "flip at {i}")
                }
                other => panic!("flip at {i}: {:?}", other.map(|r| r.1)),
            }
        }
        // A flip in the last record: dropped as torn, never accepted silently.
        for i in good.len() - last..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x10;
            fs::write(&q, &b).unwrap();
            match collect(&q) {
                Ok((got, r)) => {
                    assert_eq!(got.len(), 19, "flip at {i}");
                    assert!(r.torn.is_some());
                }
                Err(StoreError::Corrupt { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(64))]
        /// Random damage gives an error, or a prefix of the records (damage in the
        /// last record: reported torn): never other records.
        #[test]
        fn random_damage_never_invents_records(d in damage()) {
            let mut recs = Records::new();
            let write = |p: &Path| recs = sample(p, SyncMode::Off);
            if let Some((got, _)) = reload_damaged(&d, write, collect)? {
                // A prefix of the records, never others. (A cut exactly between
                // two records is indistinguishable from a crash before the
                // later ones were written: an append-only file has no end mark.)
                proptest::prop_assert!(got.len() <= recs.len());
                proptest::prop_assert_eq!(&got[..], &recs[..got.len()]);
            }
        }
    }

    #[test]
    fn settings_mismatch_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        sample(&p, SyncMode::Off);
        let mut m = meta();
        m.hash = "other".into();
        let e = Journal::replay(&p, &m, |_, _| Ok(()))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("'xxh3-64'") && e.contains("'other'"), "{e}");
    }
}
