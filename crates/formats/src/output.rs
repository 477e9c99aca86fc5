//! Output files written atomically: to `NAME.tmp` first, renamed to `NAME` once
//! complete, so a file under its final name is always whole.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputCompression {
    #[default]
    None,
    Gzip,
    Zstd,
}

impl OutputCompression {
    pub fn suffix(self) -> &'static str {
        match self {
            OutputCompression::None => "",
            OutputCompression::Gzip => ".gz",
            OutputCompression::Zstd => ".zst",
        }
    }
}

impl std::str::FromStr for OutputCompression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(OutputCompression::None),
            "gz" | "gzip" => Ok(OutputCompression::Gzip),
            "zst" | "zstd" => Ok(OutputCompression::Zstd),
            other => Err(format!(
                "unknown compression '{other}' (expected zst, gz or none)"
            )),
        }
    }
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

/// Bytes handed to a compressor at a time.
const BLOCK: usize = 1 << 17;

/// A file being written; [`AtomicOutput::finish`] makes it visible under its name.
///
/// A compressor's output depends on how its input is cut into writes, and callers
/// write a chunk at a time (so it would depend on `--threads` and chunk sizes):
/// compressed outputs are therefore fed in fixed blocks of [`BLOCK`] bytes, which
/// makes their bytes a function of the content alone.
pub struct AtomicOutput {
    path: PathBuf,
    tmp: PathBuf,
    sink: Sink,
    bytes: u64,
    /// Bytes waiting for a whole block (compressed outputs only).
    pending: Vec<u8>,
}

impl AtomicOutput {
    pub fn create(path: &Path, compression: OutputCompression) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir)?;
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let file = BufWriter::with_capacity(1 << 17, File::create(&tmp)?);
        let sink = match compression {
            OutputCompression::None => Sink::Plain(file),
            OutputCompression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
            OutputCompression::Zstd => Sink::Zstd(zstd::stream::write::Encoder::new(file, 3)?),
        };
        Ok(AtomicOutput {
            path: path.to_owned(),
            tmp,
            sink,
            bytes: 0,
            pending: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Uncompressed bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        self.bytes += buf.len() as u64;
        let w: &mut dyn Write = match &mut self.sink {
            Sink::Plain(w) => return w.write_all(buf),
            Sink::Gzip(w) => w,
            Sink::Zstd(w) => w,
        };
        if !self.pending.is_empty() {
            let take = (BLOCK - self.pending.len()).min(buf.len());
            self.pending.extend_from_slice(&buf[..take]);
            buf = &buf[take..];
            if self.pending.len() < BLOCK {
                return Ok(());
            }
            w.write_all(&self.pending)?;
            self.pending.clear();
        }
        let whole = buf.len() - buf.len() % BLOCK;
        for block in buf[..whole].chunks(BLOCK) {
            w.write_all(block)?;
        }
        self.pending.extend_from_slice(&buf[whole..]);
        Ok(())
    }

    /// Flushes, syncs to disk when `sync`, and renames into place.
    pub fn finish(mut self, sync: bool) -> io::Result<()> {
        let rest = std::mem::take(&mut self.pending);
        match &mut self.sink {
            Sink::Plain(_) => {}
            Sink::Gzip(w) => w.write_all(&rest)?,
            Sink::Zstd(w) => w.write_all(&rest)?,
        }
        let file = match self.sink {
            Sink::Plain(w) => w.into_inner().map_err(|e| e.into_error())?,
            Sink::Gzip(w) => w.finish()?.into_inner().map_err(|e| e.into_error())?,
            Sink::Zstd(w) => w.finish()?.into_inner().map_err(|e| e.into_error())?,
        };
        if sync {
            file.sync_all()?;
        }
        drop(file);
        fs::rename(&self.tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visible_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/out.dedup");
        let mut o = AtomicOutput::create(&p, OutputCompression::None).unwrap();
        o.write_all(b"hello\n").unwrap();
        assert!(!p.exists());
        o.finish(false).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hello\n");
    }

    #[test]
    fn compressed_bytes_do_not_depend_on_how_writes_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for c in [OutputCompression::Gzip, OutputCompression::Zstd] {
            let mut outs = Vec::new();
            for cut in [1usize << 20, 4096, 100_003, 7] {
                let p = dir.path().join(format!("o{cut}{}", c.suffix()));
                let mut o = AtomicOutput::create(&p, c).unwrap();
                for piece in data.chunks(cut) {
                    o.write_all(piece).unwrap();
                }
                o.finish(false).unwrap();
                outs.push(fs::read(&p).unwrap());
            }
            assert!(outs.windows(2).all(|w| w[0] == w[1]), "{c:?}");
        }
    }

    #[test]
    fn compressed_outputs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        for c in [OutputCompression::Gzip, OutputCompression::Zstd] {
            let p = dir.path().join(format!("out{}", c.suffix()));
            let mut o = AtomicOutput::create(&p, c).unwrap();
            o.write_all(b"line\n").unwrap();
            o.finish(true).unwrap();
            let (mut r, _) = crate::open_input(&p).unwrap();
            let mut s = String::new();
            std::io::Read::read_to_string(&mut r, &mut s).unwrap();
            assert_eq!(s, "line\n");
        }
    }
}
