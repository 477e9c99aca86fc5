//! The side store's files: one fixed-size record per kept document, by ordinal (the
//! order documents were kept in), and a second file of their ids.
//!
//! Records are appended through a small buffer and read back one at a time (only
//! for a document's original, and when the side store is saved), so the process
//! holds nothing per kept document: the OS page cache keeps the hot part of the
//! files. Both files are anonymous temporary files (unlinked at creation, so a
//! crash leaves nothing behind) in the directory the side store was given.
//!
//! A record, little-endian:
//!
//! ```text
//! u64 file  u64 line  u64 id offset  u32 id length (u32::MAX: none)
//! u32 signature length  u32 band count  signature[sig_cap]  u64 × band_cap
//! ```

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use webdedup_store::Location;

const HEAD: usize = 8 + 8 + 8 + 4 + 4 + 4;
/// Appends wait in memory until this many bytes are pending.
const FLUSH_BYTES: usize = 1 << 16;
/// The most records one side store holds: ordinals are `u32`, and an ordinal plus
/// one must fit the embedded store's 32-bit location field.
pub(super) const MAX_RECORDS: u64 = u32::MAX as u64 - 1;

/// A kept document as read back from its record.
#[derive(Debug, Default)]
pub(super) struct Record {
    pub loc: Location,
    pub id: Option<String>,
    pub sig: Vec<u8>,
    pub bands: Vec<u64>,
}

/// An append-only file of fixed-size records (see the module docs).
pub(super) struct RecordFile {
    records: Appender,
    names: Appender,
    sig_cap: usize,
    band_cap: usize,
    size: usize,
    len: u64,
    buf: Vec<u8>,
}

impl RecordFile {
    /// Empty files in `dir` for records of signatures up to `sig_cap` bytes and up
    /// to `band_cap` band keys.
    pub fn create(dir: &Path, sig_cap: usize, band_cap: usize) -> io::Result<Self> {
        let size = HEAD + sig_cap + 8 * band_cap;
        Ok(RecordFile {
            records: Appender::create(dir)?,
            names: Appender::create(dir)?,
            sig_cap,
            band_cap,
            size,
            len: 0,
            buf: Vec::with_capacity(size),
        })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    /// Bytes of records in the file (the rest wait in the buffer).
    #[cfg(test)]
    pub fn bytes_in_file(&self) -> u64 {
        self.records.written
    }

    /// Appends a document's record; returns its ordinal.
    pub fn push(
        &mut self,
        loc: Location,
        id: Option<&[u8]>,
        sig: &[u8],
        bands: &[u64],
    ) -> io::Result<u32> {
        if self.len >= MAX_RECORDS {
            return Err(io::Error::other(format!(
                "more than {MAX_RECORDS} kept documents in one MinHash side store"
            )));
        }
        if sig.len() > self.sig_cap || bands.len() > self.band_cap {
            return Err(io::Error::other(format!(
                "a signature of {} bytes and {} band keys do not fit the side store's \
                 records ({} and {})",
                sig.len(),
                bands.len(),
                self.sig_cap,
                self.band_cap
            )));
        }
        let (id_off, id_len) = match id {
            Some(id) => (self.names.append(id)?, id.len() as u32),
            None => (0, u32::MAX),
        };
        let b = &mut self.buf;
        b.clear();
        b.extend_from_slice(&loc.file.to_le_bytes());
        b.extend_from_slice(&loc.record.to_le_bytes());
        b.extend_from_slice(&id_off.to_le_bytes());
        b.extend_from_slice(&id_len.to_le_bytes());
        b.extend_from_slice(&(sig.len() as u32).to_le_bytes());
        b.extend_from_slice(&(bands.len() as u32).to_le_bytes());
        b.extend_from_slice(sig);
        b.resize(HEAD + self.sig_cap, 0);
        for k in bands {
            b.extend_from_slice(&k.to_le_bytes());
        }
        b.resize(self.size, 0);
        self.records.append(b)?;
        let ord = self.len as u32;
        self.len += 1;
        Ok(ord)
    }

    /// The input location in the record of ordinal `ord` (< [`len`](Self::len)):
    /// its first 16 bytes, without the rest of the record or its id.
    pub fn loc(&mut self, ord: u32) -> io::Result<Location> {
        let mut b = [0u8; 16];
        self.records
            .read_at(ord as u64 * self.size as u64, &mut b)?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Ok(Location {
            file: u64_at(0),
            record: u64_at(8),
        })
    }

    /// Reads the record of ordinal `ord` (< [`len`](Self::len)) into `out`.
    pub fn read(&mut self, ord: u32, out: &mut Record) -> io::Result<()> {
        self.buf.resize(self.size, 0);
        self.records
            .read_at(ord as u64 * self.size as u64, &mut self.buf)?;
        let b = &self.buf;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        out.loc = Location {
            file: u64_at(0),
            record: u64_at(8),
        };
        let (id_off, id_len) = (u64_at(16), u32_at(24));
        let sig_len = (u32_at(28) as usize).min(self.sig_cap);
        let n_bands = (u32_at(32) as usize).min(self.band_cap);
        out.sig.clear();
        out.sig.extend_from_slice(&b[HEAD..HEAD + sig_len]);
        out.bands.clear();
        let at = HEAD + self.sig_cap;
        out.bands.extend((0..n_bands).map(|j| u64_at(at + 8 * j)));
        out.id = if id_len == u32::MAX {
            None
        } else {
            let mut name = vec![0u8; id_len as usize];
            self.names.read_at(id_off, &mut name)?;
            Some(String::from_utf8_lossy(&name).into_owned())
        };
        Ok(())
    }
}

/// A temporary file written at its end through a buffer, readable anywhere
/// (including the part still in the buffer).
struct Appender {
    file: File,
    /// Bytes in the file; `pending` follows them.
    written: u64,
    pending: Vec<u8>,
}

impl Appender {
    fn create(dir: &Path) -> io::Result<Self> {
        Ok(Appender {
            file: tempfile::tempfile_in(dir)?,
            written: 0,
            pending: Vec::new(),
        })
    }

    /// Appends `bytes`, returning their offset.
    fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        let at = self.written + self.pending.len() as u64;
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= FLUSH_BYTES {
            self.file.write_all_at(&self.pending, self.written)?;
            self.written += self.pending.len() as u64;
            self.pending.clear();
        }
        Ok(at)
    }

    fn read_at(&mut self, at: u64, out: &mut [u8]) -> io::Result<()> {
        let end = at + out.len() as u64;
        if end > self.written + self.pending.len() as u64 {
            return Err(io::Error::other(format!(
                "side store: read past the end (bytes {at}..{end})"
            )));
        }
        // The part in the file, then the part still pending.
        let in_file = self.written.saturating_sub(at).min(out.len() as u64) as usize;
        if in_file > 0 {
            // One positioned read: a MinHash turn reads an original's record for
            // every band key found in the store.
            self.file.read_exact_at(&mut out[..in_file], at)?;
        }
        if in_file < out.len() {
            let from = (at + in_file as u64 - self.written) as usize;
            let rest = out.len() - in_file;
            out[in_file..].copy_from_slice(&self.pending[from..from + rest]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_from_the_buffer_and_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RecordFile::create(dir.path(), 4, 3).unwrap();
        // Enough records to flush several times, so reads cross the boundary.
        let n = 3 * FLUSH_BYTES / f.size + 7;
        for i in 0..n as u64 {
            let id = format!("doc-{i}");
            let ord = f
                .push(
                    Location {
                        file: i * 3,
                        record: i + 1,
                    },
                    (i % 3 != 0).then_some(id.as_bytes()),
                    &[i as u8; 4][..(i % 5) as usize],
                    &[i, i + 1, i + 2][..(i % 4) as usize],
                )
                .unwrap();
            assert_eq!(ord as u64, i);
        }
        let mut r = Record::default();
        for i in (0..n as u64).rev().step_by(97).chain([0, n as u64 - 1]) {
            f.read(i as u32, &mut r).unwrap();
            assert_eq!(f.loc(i as u32).unwrap(), r.loc);
            assert_eq!(
                r.loc,
                Location {
                    file: i * 3,
                    record: i + 1
                }
            );
            assert_eq!(r.id, (i % 3 != 0).then(|| format!("doc-{i}")));
            assert_eq!(r.sig, vec![i as u8; (i % 5) as usize]);
            assert_eq!(r.bands, [i, i + 1, i + 2][..(i % 4) as usize].to_vec());
        }
        assert!(f.read(n as u32, &mut r).is_err(), "past the end");
        assert!(f.push(Location::UNKNOWN, None, &[0; 5], &[]).is_err());
        // Ordinals are 32 bits: the side store refuses more documents, clearly.
        f.len = MAX_RECORDS;
        let e = f.push(Location::UNKNOWN, None, &[], &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 4294967294 kept documents"),
            "{e}"
        );
    }
}
