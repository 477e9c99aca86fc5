//! First-seen locations saved beside a hash server's snapshot (`SAVE.locations`),
//! with the identity of the key set they belong to.
//!
//! The snapshot holds keys only (it is canonical and shared with the embedded
//! store); a server in feedback or MinHash use also answers *who* inserted a key
//! first, and a restarted server must answer it as before, or a worker's
//! decisions change (MinHash verifies a match against its original's signature,
//! found by that location). The journal carries the locations of the keys it adds
//! (record tag `L`); this file carries those of the snapshot.
//!
//! The store id names one key set from its creation on: a server that comes back
//! with its snapshot and journal keeps it, one that comes back without them gets
//! a new one, so a worker can tell the difference (`wire::Msg::Ready`).
//!
//! The embedded store keeps one too (`--store DIR` of a feedback run stopped by a
//! signal, [`save_canonical`]): its entries are sorted (by block, then key) and its
//! store id is 0, so the file is a function of the located keys and the block
//! count, like the snapshot beside it.
//!
//! ```text
//! "WDDLOCS\0" u32 version=1  u64 store_id  u64 count
//! count × (u64 key  u64 file  u64 record)
//! u32 crc32c(everything before)
//! ```

use crate::snapshot::write_atomic_stream;
use crate::{Location, MemStore, StoreError};
use std::io::{self, BufReader, Read};
use std::path::Path;

const MAGIC: &[u8; 8] = b"WDDLOCS\0";
const VERSION: u32 = 1;
/// Entries restored per call (bounded memory while loading).
const BATCH: usize = 1 << 16;

/// Writes `store`'s located keys and `store_id` to `path`, atomically. The caller
/// holds every writer off (the server's save gate). Returns the keys written.
pub fn save(store: &MemStore, store_id: u64, path: &Path) -> Result<u64, StoreError> {
    let mut count = 0u64;
    store.for_each_location(|_, _| count += 1);
    let total = 8 + 4 + 8 + 8 + 24 * count + 4;
    write_atomic_stream(path, total, "locations-mid", |w| {
        let mut head = Vec::with_capacity(28);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&store_id.to_le_bytes());
        head.extend_from_slice(&count.to_le_bytes());
        let mut crc = crc32c::crc32c(&head);
        w.write_all(&head)?;
        let mut buf = Vec::with_capacity(24 * BATCH);
        let mut result = Ok(());
        store.for_each_location(|k, loc| {
            if result.is_err() {
                return;
            }
            buf.extend_from_slice(&k.to_le_bytes());
            buf.extend_from_slice(&loc.file.to_le_bytes());
            buf.extend_from_slice(&loc.record.to_le_bytes());
            if buf.len() >= 24 * BATCH {
                crc = crc32c::crc32c_append(crc, &buf);
                result = w.write_all(&buf);
                buf.clear();
            }
        });
        result?;
        crc = crc32c::crc32c_append(crc, &buf);
        w.write_all(&buf)?;
        w.write_all(&crc.to_le_bytes())
    })?;
    Ok(count)
}

/// [`save`] in canonical order (block by block, keys ascending within a block)
/// with store id 0: the embedded store's file, whose bytes depend only on the
/// located keys and the block count. Sorts one block at a time.
pub fn save_canonical(store: &MemStore, path: &Path) -> Result<u64, StoreError> {
    let mut count = 0u64;
    store.for_each_location(|_, _| count += 1);
    let total = 8 + 4 + 8 + 8 + 24 * count + 4;
    let blocks = crate::BlockMap::new(crate::Store::blocks(store));
    write_atomic_stream(path, total, "locations-mid", |w| {
        let mut head = Vec::with_capacity(28);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&0u64.to_le_bytes());
        head.extend_from_slice(&count.to_le_bytes());
        let mut crc = crc32c::crc32c(&head);
        w.write_all(&head)?;
        // `for_each_location` goes block by block: a block's entries come together.
        let mut block: Vec<(u64, Location)> = Vec::new();
        let mut current = None;
        let mut result = Ok(());
        let mut flush = |block: &mut Vec<(u64, Location)>, crc: &mut u32| -> io::Result<()> {
            block.sort_unstable_by_key(|e| e.0);
            let mut buf = Vec::with_capacity(24 * block.len());
            for (k, loc) in block.drain(..) {
                buf.extend_from_slice(&k.to_le_bytes());
                buf.extend_from_slice(&loc.file.to_le_bytes());
                buf.extend_from_slice(&loc.record.to_le_bytes());
            }
            *crc = crc32c::crc32c_append(*crc, &buf);
            w.write_all(&buf)
        };
        store.for_each_location(|k, loc| {
            let b = blocks.block(k);
            if current != Some(b) && result.is_ok() {
                result = flush(&mut block, &mut crc);
                current = Some(b);
            }
            block.push((k, loc));
        });
        result?;
        flush(&mut block, &mut crc)?;
        w.write_all(&crc.to_le_bytes())
    })?;
    Ok(count)
}

/// Reads the store id of the locations file at `path` and restores its locations
/// into `store` (whose keys were loaded from the snapshot). The checksum is
/// checked before anything is restored, so a damaged file changes nothing.
pub fn load(store: &MemStore, path: &Path) -> Result<u64, StoreError> {
    let corrupt = |offset: u64, reason: String| StoreError::Corrupt {
        path: path.to_owned(),
        offset,
        reason,
    };
    let io_err = |error: io::Error| StoreError::Io {
        path: path.to_owned(),
        error,
    };
    let open = || -> Result<(BufReader<std::fs::File>, u64), StoreError> {
        let f = std::fs::File::open(path).map_err(io_err)?;
        let len = f.metadata().map_err(io_err)?.len();
        Ok((BufReader::with_capacity(1 << 20, f), len))
    };
    let (mut r, len) = open()?;
    let mut head = [0u8; 28];
    if len < 32 || r.read_exact(&mut head).is_err() {
        return Err(corrupt(0, "locations file cut short".into()));
    }
    if &head[..8] != MAGIC {
        return Err(corrupt(0, "not a locations file (bad magic)".into()));
    }
    let version = u32::from_le_bytes(head[8..12].try_into().unwrap());
    if version != VERSION {
        return Err(corrupt(
            8,
            format!("locations format version {version}, this program reads {VERSION}"),
        ));
    }
    let store_id = u64::from_le_bytes(head[12..20].try_into().unwrap());
    let count = u64::from_le_bytes(head[20..28].try_into().unwrap());
    if count.checked_mul(24).and_then(|b| b.checked_add(32)) != Some(len) {
        return Err(corrupt(
            20,
            format!("{count} locations do not fit a file of {len} bytes"),
        ));
    }
    // Pass 1: the checksum.
    let mut crc = crc32c::crc32c(&head);
    let mut buf = vec![0u8; 24 * BATCH];
    let mut left = 24 * count;
    while left > 0 {
        let n = (buf.len() as u64).min(left) as usize;
        r.read_exact(&mut buf[..n]).map_err(io_err)?;
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        left -= n as u64;
    }
    let mut tail = [0u8; 4];
    r.read_exact(&mut tail).map_err(io_err)?;
    if u32::from_le_bytes(tail) != crc {
        return Err(corrupt(
            len - 4,
            "CRC mismatch (damaged or cut short)".into(),
        ));
    }
    // Pass 2: the locations.
    let (mut r, _) = open()?;
    r.read_exact(&mut head).map_err(io_err)?;
    let (mut keys, mut locs) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
    let mut left = count;
    while left > 0 {
        let n = (BATCH as u64).min(left) as usize;
        r.read_exact(&mut buf[..24 * n]).map_err(io_err)?;
        keys.clear();
        locs.clear();
        for e in buf[..24 * n].chunks_exact(24) {
            let u = |i: usize| u64::from_le_bytes(e[i..i + 8].try_into().unwrap());
            keys.push(u(0));
            locs.push(Location {
                file: u(8),
                record: u(16),
            });
        }
        store.restore_locations(&keys, &locs)?;
        left -= n as u64;
    }
    Ok(store_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    /// Keys spread from `ids`, key `id` located at record `id + 1` of one of
    /// `files` files.
    fn located_keys(ids: std::ops::Range<u64>, files: u64) -> (Vec<u64>, Vec<Location>) {
        ids.map(|i| {
            let loc = Location {
                file: i % files + 1,
                record: i + 1,
            };
            (i.wrapping_mul(0x9e37_79b9_7f4a_7c15), loc)
        })
        .unzip()
    }

    #[test]
    fn locations_come_back_with_their_store_id_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.locations");
        let store = MemStore::new(7);
        let n = 3 * BATCH as u64 / 2;
        let (keys, locs) = located_keys(0..n, 5);
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        store
            .test_and_insert_located(&keys, &locs, &mut seen, &mut orig)
            .unwrap();
        // A key inserted without a location is not saved.
        store.test_and_insert(&[12345], &mut seen).unwrap();
        assert_eq!(save(&store, 42, &path).unwrap(), n);

        // The keys as a snapshot gives them (no locations), then the file.
        let again = MemStore::new(7);
        again.insert_all(&keys);
        assert_eq!(load(&again, &path).unwrap(), 42);
        let (mut s2, mut o2) = (Vec::new(), Vec::new());
        again.test_located(&keys, &mut s2, &mut o2).unwrap();
        assert!(s2.iter().all(|&s| s));
        assert_eq!(o2, locs);

        let bytes = std::fs::read(&path).unwrap();
        for (at, what) in [(40usize, "CRC mismatch"), (21, "do not fit")] {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            let e = load(&MemStore::new(7), &path).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(load(&MemStore::new(7), &path).is_err());
    }

    #[test]
    fn the_canonical_file_depends_on_the_located_keys_only() {
        let dir = tempfile::tempdir().unwrap();
        let (keys, locs) = located_keys(1..5000, 3);
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        // The same located keys, inserted in two orders into tables of two sizes.
        let a = MemStore::new(7);
        a.test_and_insert_located(&keys, &locs, &mut seen, &mut orig)
            .unwrap();
        let b = MemStore::with_capacity(7, 100_000);
        let (rk, rl): (Vec<u64>, Vec<Location>) =
            keys.iter().copied().zip(locs.iter().copied()).rev().unzip();
        b.test_and_insert_located(&rk, &rl, &mut seen, &mut orig)
            .unwrap();
        let (pa, pb) = (dir.path().join("a"), dir.path().join("b"));
        assert_eq!(save_canonical(&a, &pa).unwrap(), keys.len() as u64);
        save_canonical(&b, &pb).unwrap();
        assert_eq!(std::fs::read(&pa).unwrap(), std::fs::read(&pb).unwrap());
        let again = MemStore::new(7);
        again.insert_all(&keys);
        assert_eq!(load(&again, &pa).unwrap(), 0);
        again.test_located(&keys, &mut seen, &mut orig).unwrap();
        assert_eq!(orig, locs);
    }

    #[test]
    fn a_known_location_stays_the_first_inserters() {
        let store = MemStore::new(3);
        let a = Location { file: 1, record: 1 };
        let b = Location { file: 2, record: 2 };
        store.restore_locations(&[5, 0], &[a, a]).unwrap();
        store.restore_locations(&[5, 0, 6], &[b, b, b]).unwrap();
        let (mut seen, mut orig) = (Vec::new(), Vec::new());
        store
            .test_located(&[5, 0, 6], &mut seen, &mut orig)
            .unwrap();
        assert_eq!(orig, [a, a, b]);
    }
}
