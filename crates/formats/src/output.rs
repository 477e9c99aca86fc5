//! Output files written atomically: to `NAME.tmp` first, renamed to `NAME` once
//! complete, so a file under its final name is always whole. An output dropped
//! before [`AtomicOutput::finish`] (an error stopped the run) removes its `.tmp`
//! file. Every error names the file it is about.
//!
//! [`target_kind`] decides how a path is written, for every command: an existing
//! character device, FIFO or socket (`-o /dev/null`, a pipe) is written directly,
//! since a rename would replace it by a regular file.

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

webdedup_text::named_choices! {
    OutputCompression, "compression", quote "", {
        Zstd => "zst" | "zstd",
        Gzip => "gz" | "gzip",
        None => "none",
    }
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
    /// The content is already in the file (a copy of the input): writes are
    /// counted, never written.
    Copied(File),
}

/// `error` with `what` and the path in front (the kind and the OS error are kept):
/// an I/O error message always says which file.
pub fn io_error_at(what: &str, path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{what} {}: {error}", path.display()))
}

/// How an output path is written ([`target_kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// A regular file or a new path: written to `NAME.tmp`, renamed over `NAME`.
    Replace,
    /// An existing character device, FIFO or socket: written in place. Renaming
    /// over it would replace the device (`/dev/null` becoming a regular file
    /// breaks the machine) or the pipe a reader waits on.
    Direct,
}

/// How `path` is written: [`TargetKind::Direct`] for an existing non-regular file
/// (symbolic links followed), [`TargetKind::Replace`] for a regular file or a path
/// that does not exist; an existing directory is an error that names it.
pub fn target_kind(path: &Path) -> io::Result<TargetKind> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot write to {}: it is a directory", path.display()),
        )),
        Ok(m) if !m.is_file() => Ok(TargetKind::Direct),
        _ => Ok(TargetKind::Replace),
    }
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
    /// The file written: `NAME.tmp`, or `path` itself for a direct target.
    tmp: PathBuf,
    kind: TargetKind,
    /// `None` once finished.
    sink: Option<Sink>,
    bytes: u64,
    /// Bytes waiting for a whole block (compressed outputs only).
    pending: Vec<u8>,
}

impl AtomicOutput {
    pub fn create(path: &Path, compression: OutputCompression) -> io::Result<Self> {
        let (kind, tmp) = Self::prepare(path)?;
        let file = File::create(&tmp).map_err(|e| io_error_at("cannot create", &tmp, e))?;
        let file = BufWriter::with_capacity(1 << 17, file);
        let sink = match compression {
            OutputCompression::None => Sink::Plain(file),
            OutputCompression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
            OutputCompression::Zstd => match zstd::stream::write::Encoder::new(file, 3) {
                Ok(e) => Sink::Zstd(e),
                Err(e) => {
                    if kind == TargetKind::Replace {
                        let _ = fs::remove_file(&tmp);
                    }
                    return Err(io_error_at("cannot write", &tmp, e));
                }
            },
        };
        Ok(AtomicOutput {
            path: path.to_owned(),
            tmp,
            kind,
            sink: Some(sink),
            bytes: 0,
            pending: Vec::new(),
        })
    }

    /// An output whose content is the file `source` byte for byte (`--mark` with
    /// the input's own compression: the input unchanged, never decompressed and
    /// compressed again). The copy is made now (`copy_file_range` where the
    /// kernel has it); later writes only count their bytes ([`bytes`](Self::bytes)
    /// stays the uncompressed size the caller hands in).
    pub fn copy_of(path: &Path, source: &Path) -> io::Result<Self> {
        let (kind, tmp) = Self::prepare(path)?;
        // Created as any output is (its own permissions, not the input's), then
        // filled by `io::copy`, which uses `copy_file_range` between files.
        let copied = (|| {
            let mut from = File::open(source)?;
            let mut to = File::create(&tmp)?;
            io::copy(&mut from, &mut to)?;
            Ok(to)
        })()
        .map_err(|e| {
            if kind == TargetKind::Replace {
                let _ = fs::remove_file(&tmp);
            }
            io_error_at(&format!("cannot copy {} to", source.display()), &tmp, e)
        })?;
        Ok(AtomicOutput {
            path: path.to_owned(),
            tmp,
            kind,
            sink: Some(Sink::Copied(copied)),
            bytes: 0,
            pending: Vec::new(),
        })
    }

    /// How `path` is written ([`target_kind`]) and the file to create: `NAME.tmp`
    /// next to it, or `path` itself; creates the missing parent directories.
    fn prepare(path: &Path) -> io::Result<(TargetKind, PathBuf)> {
        let kind = target_kind(path)?;
        if kind == TargetKind::Direct {
            return Ok((kind, path.to_owned()));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| io_error_at("cannot create directory", dir, e))?;
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        Ok((kind, PathBuf::from(tmp)))
    }

    /// Gives the output up: its temporary file is removed (as when dropped), and
    /// later writes go nowhere.
    pub fn discard(&mut self) {
        if let Some(sink) = self.sink.take() {
            drop(sink);
            self.remove_tmp();
        }
    }

    /// Removes the temporary file; a direct target is never removed.
    fn remove_tmp(&self) {
        if self.kind == TargetKind::Replace {
            let _ = fs::remove_file(&self.tmp);
        }
    }

    /// Whether the content was copied whole ([`copy_of`](Self::copy_of)).
    pub fn is_copy(&self) -> bool {
        matches!(self.sink, Some(Sink::Copied(_)))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Uncompressed bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.bytes += buf.len() as u64;
        self.feed(buf)
            .map_err(|e| io_error_at("cannot write", &self.tmp, e))
    }

    /// Plain outputs take `buf` as it comes; compressors get whole blocks.
    fn feed(&mut self, mut buf: &[u8]) -> io::Result<()> {
        let w: &mut dyn Write = match self.sink.as_mut() {
            Some(Sink::Plain(w)) => return w.write_all(buf),
            Some(Sink::Copied(_)) => return Ok(()),
            Some(Sink::Gzip(w)) => w,
            Some(Sink::Zstd(w)) => w,
            None => return Ok(()),
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

    /// Flushes, syncs to disk when `sync`, and renames into place. On an error the
    /// temporary file is removed.
    pub fn finish(mut self, sync: bool) -> io::Result<()> {
        let Some(sink) = self.sink.take() else {
            return Ok(());
        };
        let tmp = self.tmp.clone();
        let rest = std::mem::take(&mut self.pending);
        let written = (|| -> io::Result<File> {
            let file = match sink {
                Sink::Plain(w) => w.into_inner().map_err(|e| e.into_error())?,
                Sink::Copied(file) => file,
                Sink::Gzip(mut w) => {
                    w.write_all(&rest)?;
                    w.finish()?.into_inner().map_err(|e| e.into_error())?
                }
                Sink::Zstd(mut w) => {
                    w.write_all(&rest)?;
                    w.finish()?.into_inner().map_err(|e| e.into_error())?
                }
            };
            // A device or a pipe has nothing to sync (`/dev/null` refuses fsync).
            if sync && self.kind == TargetKind::Replace {
                file.sync_all()?;
            }
            Ok(file)
        })();
        let result = match written {
            Ok(_) if self.kind == TargetKind::Direct => Ok(()),
            Ok(file) => {
                drop(file);
                fs::rename(&tmp, &self.path).map_err(|e| {
                    io_error_at(
                        &format!("cannot rename {} to", tmp.display()),
                        &self.path,
                        e,
                    )
                })
            }
            Err(e) => Err(io_error_at("cannot write", &tmp, e)),
        };
        if result.is_err() {
            self.remove_tmp();
        }
        result
    }
}

/// As a writer (the Parquet writer writes through one): every write is whole.
impl Write for AtomicOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for AtomicOutput {
    /// An output dropped unfinished (the run stopped on an error) leaves no `.tmp`
    /// file behind. (A killed process does: the next run overwrites it.)
    fn drop(&mut self) {
        if let Some(sink) = self.sink.take() {
            // Drop the writer first (its buffer may flush), then remove the file.
            drop(sink);
            self.remove_tmp();
        }
    }
}

/// The directories a run may create for its output `path`: `path` and its missing
/// ancestors, noted before the run, so that a run that failed can remove the ones it
/// created and left empty ([`NewDirs::remove_empty`]).
#[derive(Debug)]
pub struct NewDirs {
    path: PathBuf,
    /// The highest missing ancestor of `path` (or `path`), when one is missing.
    top: Option<PathBuf>,
}

impl NewDirs {
    /// Notes which of `path` and its ancestors do not exist yet.
    pub fn before(path: &Path) -> NewDirs {
        let mut top = None;
        let mut p = Some(path);
        while let Some(q) = p.filter(|q| !q.as_os_str().is_empty()) {
            if fs::symlink_metadata(q).is_ok() {
                break;
            }
            top = Some(q.to_owned());
            p = q.parent();
        }
        NewDirs {
            path: path.to_owned(),
            top,
        }
    }

    /// Removes the directories noted as missing that exist now and are empty,
    /// deepest first; stops at the first one that is not empty. Nothing else is
    /// touched (`remove_dir` never removes a directory with files in it).
    pub fn remove_empty(&self) {
        let Some(top) = &self.top else {
            return;
        };
        let mut p = Some(self.path.as_path());
        while let Some(q) = p {
            if q.is_dir() && fs::remove_dir(q).is_err() {
                return;
            }
            if q == top {
                return;
            }
            p = q.parent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output at `path` with `bytes` written, not finished.
    fn written(path: &Path, compression: OutputCompression, bytes: &[u8]) -> AtomicOutput {
        let mut o = AtomicOutput::create(path, compression).unwrap();
        o.write_all(bytes).unwrap();
        o
    }

    #[test]
    fn visible_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/out.dedup");
        let o = written(&p, OutputCompression::None, b"hello\n");
        assert!(!p.exists());
        o.finish(false).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"hello\n");
    }

    #[test]
    fn dropped_unfinished_leaves_no_tmp_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        let o = written(&p, OutputCompression::Gzip, b"half");
        assert!(dir.path().join("out.txt.tmp").exists());
        drop(o);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        // A file where a directory should be.
        fs::write(dir.path().join("f"), "x").unwrap();
        let e = AtomicOutput::create(&dir.path().join("f/sub/out"), OutputCompression::None)
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains(&*dir.path().join("f/sub").to_string_lossy()),
            "{e}"
        );
        // A directory in the way: refused before anything is written.
        let blocked = dir.path().join("blocked");
        fs::create_dir_all(blocked.join("x")).unwrap();
        let e = AtomicOutput::create(&blocked, OutputCompression::None)
            .err()
            .unwrap();
        assert!(e.to_string().contains("it is a directory"), "{e}");
        assert!(e.to_string().contains("blocked"), "{e}");
        assert!(!dir.path().join("blocked.tmp").exists());
        // The rename fails (the target became a directory): the temporary file goes.
        let late = dir.path().join("late");
        let o = AtomicOutput::create(&late, OutputCompression::None).unwrap();
        fs::create_dir_all(late.join("x")).unwrap();
        let e = o.finish(false).unwrap_err();
        assert!(e.to_string().contains("cannot rename"), "{e}");
        assert!(!dir.path().join("late.tmp").exists());
    }

    fn c_path(p: &Path) -> std::ffi::CString {
        std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
    }

    /// A FIFO target is written in place: the reader gets the bytes, the FIFO stays.
    #[test]
    fn fifo_target_is_written_directly() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
        assert_eq!(target_kind(&fifo).unwrap(), TargetKind::Direct);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(&fifo).unwrap())
        };
        let o = written(&fifo, OutputCompression::None, b"through the pipe\n");
        o.finish(true).unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe\n");
        assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(!dir.path().join("pipe.tmp").exists());
    }

    /// A character device (a `/dev/null` made in a temporary directory: the real
    /// one must never be at risk) stays a device, finished, dropped or discarded.
    #[test]
    fn char_device_target_stays_a_device() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let null = dir.path().join("null");
        let dev = libc::makedev(1, 3);
        if unsafe { libc::mknod(c_path(&null).as_ptr(), libc::S_IFCHR | 0o666, dev) } != 0 {
            eprintln!("skipped: mknod needs root");
            return;
        }
        let is_device = || fs::metadata(&null).unwrap().file_type().is_char_device();
        for c in [OutputCompression::None, OutputCompression::Gzip] {
            written(&null, c, b"gone\n").finish(true).unwrap();
            assert!(is_device());
            drop(written(&null, c, b"gone\n"));
            assert!(is_device());
            AtomicOutput::create(&null, c).unwrap().discard();
            assert!(is_device());
        }
        let source = dir.path().join("source");
        fs::write(&source, "copied\n").unwrap();
        AtomicOutput::copy_of(&null, &source)
            .unwrap()
            .finish(true)
            .unwrap();
        assert!(is_device());
        assert!(!dir.path().join("null.tmp").exists());
    }

    #[test]
    fn new_dirs_removes_only_what_it_created_and_left_empty() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b/c");
        let nd = NewDirs::before(&out);
        fs::create_dir_all(&out).unwrap();
        nd.remove_empty();
        assert!(!dir.path().join("a").exists());
        // Not empty: kept, and so are its parents.
        let nd = NewDirs::before(&out);
        fs::create_dir_all(&out).unwrap();
        fs::write(dir.path().join("a/b/file"), "x").unwrap();
        nd.remove_empty();
        assert!(!out.exists() && dir.path().join("a/b/file").exists());
        // Existing before: never removed.
        fs::create_dir_all(&out).unwrap();
        NewDirs::before(&out).remove_empty();
        assert!(out.exists());
        // A file output: its new parent directories go.
        let file = dir.path().join("x/y/out.txt");
        let nd = NewDirs::before(&file);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        nd.remove_empty();
        assert!(!dir.path().join("x").exists());
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
            written(&p, c, b"line\n").finish(true).unwrap();
            let (mut r, _) = crate::open_input(&p).unwrap();
            let mut s = String::new();
            std::io::Read::read_to_string(&mut r, &mut s).unwrap();
            assert_eq!(s, "line\n");
        }
    }
}
