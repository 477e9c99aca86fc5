//! The one input layer every reading command uses.
//!
//! * **What is read** ([`list_inputs`]): each input named on the command line is a
//!   file, a directory (searched recursively; its files in sorted relative-path
//!   order) or `-` (standard input), in any mix; the inputs are read in the order
//!   given. Inside a directory only regular files are read (symbolic links are
//!   followed, a link cycle is entered once): FIFOs, sockets and devices are
//!   [skipped](Skipped) and reported, never opened, so a stray named pipe cannot
//!   make a run wait forever. A non-regular file named explicitly (a named pipe, a
//!   process substitution `<(zcat x.gz)`) is read as a stream. A command that
//!   reads only files refuses a directory with a message that says so.
//! * **How it is read** ([`open_file`], [`open_input`]): the compression is detected
//!   from the first bytes, not the file name: gzip (`1f 8b`, multi-member streams
//!   read to the end) and zstd (`28 b5 2f fd`, multi-frame streams too). Anything
//!   else is read as is. Streams (standard input, pipes) are read through a
//!   [`StopAware`] reader when the caller has a stop flag: a signal then ends a read
//!   that waits for a writer, where a blocking `open`/`read` would ignore it.
//! * **How far it is** ([`bytes_read`]): every byte read from an input (as stored,
//!   before decompression) is counted in one process-wide counter, so a progress
//!   bar can follow any command without the command reporting to it.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes read from inputs by this process (see [`bytes_read`]).
static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// Bytes read from inputs by this process so far, as stored (compressed bytes of
/// a compressed file): what a progress bar shows against the inputs' sizes. Only
/// ever grows; a command that reads its inputs twice counts them twice.
pub fn bytes_read() -> u64 {
    BYTES_READ.load(Ordering::Relaxed)
}

/// Adds `n` to [`bytes_read`], for readers that open inputs themselves (WARC).
pub fn count_bytes_read(n: usize) {
    BYTES_READ.fetch_add(n as u64, Ordering::Relaxed);
}

/// A reader that counts what it reads in [`bytes_read`].
struct Counting<R>(R);

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        count_bytes_read(n);
        Ok(n)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// Detects the compression of a stream from its first bytes.
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// The usual file-name suffix of this compression (with its dot), if any.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zstd => ".zst",
        }
    }
}

/// File-name suffixes that name a compression; they are removed from output names.
pub const COMPRESSION_SUFFIXES: &[&str] = &[".gz", ".zst", ".zstd"];

/// The extensions of the document formats other than verticals, longest match
/// first: an output keeps its input's (`part.jsonl.gz` -> `part.dedup.jsonl.gz`),
/// so `*.parquet` globs and tools that go by extension find it. Verticals have
/// none: their outputs keep the KNOT seed's `REL.dedup`.
pub const DOCUMENT_EXTENSIONS: &[&str] = &[
    ".warc.wet",
    ".wet",
    ".jsonl",
    ".ndjson",
    ".json",
    ".parquet",
];

/// A file name cut as (stem, document extension, compression suffix):
/// `part.warc.wet.gz` -> (`part`, `.warc.wet`, `.gz`); a vertical's (or any
/// other) name is all stem: `part.vert.gz` -> (`part.vert`, ``, `.gz`).
pub fn split_document_name(name: &[u8]) -> (&[u8], &'static str, &'static str) {
    let cut = |name: &[u8], suffixes: &[&'static str]| {
        suffixes
            .iter()
            .find(|s| name.len() > s.len() && name.ends_with(s.as_bytes()))
            .map_or((name.len(), ""), |s| (name.len() - s.len(), *s))
    };
    let (end, compression) = cut(name, COMPRESSION_SUFFIXES);
    let (stem, extension) = cut(&name[..end], DOCUMENT_EXTENSIONS);
    (&name[..stem], extension, compression)
}

/// How standard input is named on the command line.
pub const STDIN_ARG: &str = "-";
/// The relative path standing for standard input (outputs are named after it:
/// `OUT/stdin.dedup`).
pub const STDIN_REL: &str = "stdin";

/// An input to read: a file found under an input directory (or named itself), or
/// standard input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    /// Where it is read from (`-` for standard input).
    pub path: PathBuf,
    /// Its path relative to the input it was found under (its file name when it
    /// was named itself; [`STDIN_REL`] for standard input): outputs and feedback
    /// file ids are named after it.
    pub rel: PathBuf,
}

impl InputFile {
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == STDIN_ARG
    }

    /// The name to use in messages.
    pub fn display(&self) -> std::path::Display<'_> {
        self.path.display()
    }
}

/// A file inside an input directory that is not read (a FIFO, a socket, a
/// device), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: skipped", self.path.display(), self.reason)
    }
}

/// What [`list_inputs`] found.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    pub files: Vec<InputFile>,
    /// Non-regular files inside input directories: to be reported (they count as
    /// input problems).
    pub skipped: Vec<Skipped>,
}

/// What a command accepts as inputs.
#[derive(Clone, Copy, Debug)]
pub struct ListOptions<'a> {
    /// Searched recursively when true; an error saying so when false (commands
    /// that read only files).
    pub dirs: bool,
    /// `-` is standard input when true; an error when false (commands that read
    /// their inputs twice, or name outputs after them).
    pub stdin: bool,
    /// Left out of directory searches (an output or work directory inside an input).
    pub exclude: Option<&'a Path>,
}

impl Default for ListOptions<'_> {
    fn default() -> Self {
        ListOptions {
            dirs: true,
            stdin: true,
            exclude: None,
        }
    }
}

fn err_at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot list {}: {e}", path.display()))
}

/// What kind of non-regular file this is, for messages.
fn kind_name(ft: &fs::FileType) -> &'static str {
    if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_char_device() {
        "character device"
    } else {
        "unknown type"
    }
}

/// Lists the files to read for `inputs` (see the module docs): each input in the
/// order given, the files of a directory sorted by relative path. An input that
/// does not exist, a directory where `opts.dirs` is false, `-` where `opts.stdin`
/// is false or given twice are errors naming the input.
pub fn list_inputs(inputs: &[PathBuf], opts: &ListOptions) -> io::Result<Listing> {
    let mut listing = Listing::default();
    let mut stdin_seen = false;
    for input in inputs {
        if input.as_os_str() == STDIN_ARG {
            if !opts.stdin {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "standard input (-) cannot be an input of this command (it needs a file it can read again); save it to a file first",
                ));
            }
            if stdin_seen {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "standard input (-) is given more than once",
                ));
            }
            stdin_seen = true;
            listing.files.push(InputFile {
                path: PathBuf::from(STDIN_ARG),
                rel: PathBuf::from(STDIN_REL),
            });
            continue;
        }
        let meta = fs::metadata(input).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot list input {}: {e}", input.display()),
            )
        })?;
        if !meta.is_dir() {
            let rel = input
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("input"));
            listing.files.push(InputFile {
                path: input.to_owned(),
                rel,
            });
            continue;
        }
        if !opts.dirs {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a directory; this command reads files (name the files inside it)",
                    input.display()
                ),
            ));
        }
        walk(input, opts.exclude, &mut listing)?;
    }
    Ok(listing)
}

/// Every regular file under `dir`, sorted by path relative to `dir`, appended to
/// `listing`; other files go to `listing.skipped`.
///
/// Symbolic links are followed, with two exceptions that keep every file read
/// once and under one name, whatever order the file system lists entries in: a
/// link to a directory inside the tree is not followed (its files are read under
/// their own names), and a directory outside the tree reached through several
/// links is read through the first of them in path order. Directories are walked
/// depth first in sorted order for that reason.
fn walk(dir: &Path, exclude: Option<&Path>, listing: &mut Listing) -> io::Result<()> {
    let exclude = exclude.and_then(|e| fs::canonicalize(e).ok());
    let root = fs::canonicalize(dir).map_err(|e| err_at(dir, e))?;
    let mut visited = std::collections::HashSet::new();
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let real = fs::canonicalize(&d).map_err(|e| err_at(&d, e))?;
        if exclude.as_ref() == Some(&real) || !visited.insert(real) {
            continue;
        }
        let mut entries = fs::read_dir(&d)
            .and_then(|it| it.collect::<io::Result<Vec<_>>>())
            .map_err(|e| err_at(&d, e))?;
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for entry in entries {
            let path = entry.path();
            let mut ft = entry.file_type().map_err(|e| err_at(&path, e))?;
            let link = ft.is_symlink();
            if link {
                // A broken link stays a file: opening it fails, and that is
                // reported as an unreadable input.
                ft = fs::metadata(&path).map_or(ft, |m| m.file_type());
            }
            if ft.is_dir() {
                let inside = link && fs::canonicalize(&path).is_ok_and(|r| r.starts_with(&root));
                if !inside {
                    subdirs.push(path);
                }
            } else if ft.is_file() || ft.is_symlink() {
                let rel = path.strip_prefix(dir).unwrap_or(&path).to_owned();
                files.push(InputFile { path, rel });
            } else {
                listing.skipped.push(Skipped {
                    reason: format!("not a regular file ({})", kind_name(&ft)),
                    path,
                });
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    files.sort_by(|a, b| a.rel.as_os_str().cmp(b.rel.as_os_str()));
    listing.files.extend(files);
    listing.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(())
}

/// A stream reader (standard input, a named pipe) that waits for data in `poll`
/// before each read: `read` of a FIFO that no writer has opened yet returns end of
/// file at once, while `poll` waits for the first writer (Linux reports `POLLHUP`
/// only once a writer has come and gone). With a stop flag the wait is cut into
/// short slices and ends when the flag is set (a signal arrived): a blocked `read`
/// would be restarted after the signal handler and wait on.
pub struct StopAware<'a, R> {
    inner: R,
    fd: RawFd,
    stop: Option<&'a AtomicBool>,
}

/// How long a wait for stream data lasts before the stop flag is looked at again.
const POLL_SLICE_MS: i32 = 100;

impl<'a, R: Read + AsRawFd> StopAware<'a, R> {
    pub fn new(inner: R, stop: Option<&'a AtomicBool>) -> Self {
        let fd = inner.as_raw_fd();
        StopAware { inner, fd, stop }
    }
}

impl<R: Read> Read for StopAware<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(io::Error::other("stopped by a signal"));
            }
            let mut pfd = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let timeout = if self.stop.is_some() {
                POLL_SLICE_MS
            } else {
                -1
            };
            // SAFETY: one valid pollfd, for the duration of the call.
            let n = unsafe { libc::poll(&mut pfd, 1, timeout) };
            if n > 0 {
                // Data, end of stream or an error: read says which, without waiting.
                return self.inner.read(buf);
            }
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// Standard input as an owned reader (`Stdin` locks per read, which costs nothing
/// next to a 64 KiB read).
struct StdinFd(io::Stdin);

impl Read for StdinFd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl AsRawFd for StdinFd {
    fn as_raw_fd(&self) -> RawFd {
        0
    }
}

/// Opens a file that is not a regular file (a named pipe, a device) without
/// blocking: `open` of a FIFO waits for a writer, and no signal ends that wait.
/// The descriptor is switched back to blocking reads afterwards ([`StopAware`]
/// waits in `poll` before each read).
fn open_stream(path: &Path) -> io::Result<File> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(file)
}

/// Opens `file` for reading, decompressing on the fly (see the module docs):
/// standard input for `-`, a stream for a non-regular file. With `stop`, waits for
/// stream data end when it is set (the read fails with "stopped by a signal").
/// Returns the reader and the detected compression.
pub fn open_file<'a>(
    file: &InputFile,
    stop: Option<&'a AtomicBool>,
) -> io::Result<(Box<dyn Read + Send + 'a>, Compression)> {
    if file.is_stdin() {
        let stdin = Counting(StopAware::new(StdinFd(io::stdin()), stop));
        return decode(BufReader::with_capacity(1 << 16, stdin));
    }
    open_path(&file.path, stop)
}

fn open_path<'a>(
    path: &Path,
    stop: Option<&'a AtomicBool>,
) -> io::Result<(Box<dyn Read + Send + 'a>, Compression)> {
    let regular = fs::metadata(path)?.is_file();
    if regular {
        return decode(BufReader::with_capacity(
            1 << 16,
            Counting(File::open(path)?),
        ));
    }
    let stream = Counting(StopAware::new(open_stream(path)?, stop));
    decode(BufReader::with_capacity(1 << 16, stream))
}

/// Opens `path` for reading, decompressing on the fly; `-` is standard input.
/// Returns the reader and the detected compression.
pub fn open_input(path: &Path) -> io::Result<(Box<dyn Read + Send>, Compression)> {
    let file = InputFile {
        path: path.to_owned(),
        rel: PathBuf::new(),
    };
    open_file(&file, None)
}

/// Wraps an already open stream in the decoder its first bytes call for.
pub fn decode<'a, R: BufRead + Send + 'a>(
    mut r: R,
) -> io::Result<(Box<dyn Read + Send + 'a>, Compression)> {
    let head = r.fill_buf()?;
    let c = Compression::sniff(head);
    let reader: Box<dyn Read + Send + 'a> = match c {
        Compression::None => Box::new(r),
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(r)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(r)?),
    };
    Ok((reader, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_names_split_into_stem_extension_and_compression() {
        let split = |n: &str| {
            let (stem, ext, z) = split_document_name(n.as_bytes());
            (String::from_utf8(stem.to_vec()).unwrap(), ext, z)
        };
        assert_eq!(
            split("cc/part-0.warc.wet.gz"),
            ("cc/part-0".into(), ".warc.wet", ".gz")
        );
        assert_eq!(split("part.parquet"), ("part".into(), ".parquet", ""));
        assert_eq!(split("part.jsonl.zst"), ("part".into(), ".jsonl", ".zst"));
        assert_eq!(split("part.vert.gz"), ("part.vert".into(), "", ".gz"));
        assert_eq!(split("stdin"), ("stdin".into(), "", ""));
        assert_eq!(split(".jsonl"), (".jsonl".into(), "", ""));
    }
    use std::io::Write;

    fn read_all(bytes: Vec<u8>) -> (Vec<u8>, Compression) {
        let (mut r, c) = decode(io::Cursor::new(bytes)).unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        (out, c)
    }

    #[test]
    fn detects_by_magic_not_name() {
        let text = b"<doc>\nhello\n</doc>\n".to_vec();
        assert_eq!(read_all(text.clone()), (text.clone(), Compression::None));

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let mut two_members = gz.finish().unwrap();
        two_members.extend(two_members.clone());
        let (out, c) = read_all(two_members);
        assert_eq!(c, Compression::Gzip);
        assert_eq!(out, [text.clone(), text.clone()].concat());

        let zst = zstd::encode_all(&text[..], 1).unwrap();
        assert_eq!(read_all(zst), (text, Compression::Zstd));
    }

    #[test]
    fn truncated_zstd_is_an_error_not_a_panic() {
        let text = vec![b'x'; 100_000];
        let zst = zstd::encode_all(&text[..], 1).unwrap();
        let (mut r, _) = decode(io::Cursor::new(zst[..zst.len() / 2].to_vec())).unwrap();
        let mut out = Vec::new();
        assert!(r.read_to_end(&mut out).is_err());
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    fn rels(l: &Listing) -> Vec<String> {
        l.files
            .iter()
            .map(|f| f.rel.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn directories_files_and_stdin_in_the_order_given() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        fs::create_dir_all(d.join("b")).unwrap();
        fs::write(d.join("b/2"), "x").unwrap();
        fs::write(d.join("a"), "x").unwrap();
        fs::write(d.join("c"), "x").unwrap();
        mkfifo(&d.join("fifo"));
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
        std::os::unix::fs::symlink(d.join("fifo"), d.join("to-fifo")).unwrap();
        let f = dir.path().join("single.txt");
        fs::write(&f, "x").unwrap();
        let l = list_inputs(
            &[f.clone(), PathBuf::from("-"), d.clone()],
            &ListOptions::default(),
        )
        .unwrap();
        // A broken link is listed: opening it fails and is reported then.
        assert_eq!(
            rels(&l),
            ["single.txt", "stdin", "a", "b/2", "c", "dangling"]
        );
        assert!(l.files[1].is_stdin());
        let skipped: Vec<String> = l.skipped.iter().map(|s| s.to_string()).collect();
        let at = |n: &str| d.join(n).display().to_string();
        assert_eq!(
            skipped,
            [
                format!("{}: not a regular file (FIFO): skipped", at("fifo")),
                format!("{}: not a regular file (FIFO): skipped", at("to-fifo"))
            ]
        );
    }

    #[test]
    fn each_file_is_read_once_under_one_name_whatever_links_point_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let (d, outside) = (dir.path().join("d"), dir.path().join("outside"));
        fs::create_dir_all(d.join("real/sub")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(d.join("real/sub/x"), "x").unwrap();
        fs::write(outside.join("y"), "y").unwrap();
        // Links into the tree, sorted before and after their targets, and a loop.
        std::os::unix::fs::symlink(d.join("real"), d.join("a-link")).unwrap();
        std::os::unix::fs::symlink(d.join("real/sub"), d.join("z-link")).unwrap();
        std::os::unix::fs::symlink(&d, d.join("real/loop")).unwrap();
        // One directory outside the tree through two links: the first in order.
        std::os::unix::fs::symlink(&outside, d.join("ext2")).unwrap();
        std::os::unix::fs::symlink(&outside, d.join("ext1")).unwrap();
        let l = list_inputs(std::slice::from_ref(&d), &ListOptions::default()).unwrap();
        assert_eq!(rels(&l), ["ext1/y", "real/sub/x"]);
        assert!(l.skipped.is_empty(), "{:?}", l.skipped);
    }

    #[test]
    fn refusals_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let no_dirs = ListOptions {
            dirs: false,
            ..Default::default()
        };
        let e = list_inputs(&[dir.path().to_owned()], &no_dirs).unwrap_err();
        assert!(
            e.to_string()
                .contains("is a directory; this command reads files"),
            "{e}"
        );
        let no_stdin = ListOptions {
            stdin: false,
            ..Default::default()
        };
        let e = list_inputs(&[PathBuf::from("-")], &no_stdin).unwrap_err();
        assert!(
            e.to_string().contains("standard input (-) cannot be"),
            "{e}"
        );
        let twice = [PathBuf::from("-"), PathBuf::from("-")];
        assert!(list_inputs(&twice, &ListOptions::default()).is_err());
        let missing = dir.path().join("missing");
        let e = list_inputs(std::slice::from_ref(&missing), &ListOptions::default()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("cannot list input {}: ", missing.display())),
            "{e}"
        );
    }

    #[test]
    fn a_stop_flag_ends_a_wait_on_a_named_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe");
        mkfifo(&p);
        let stop = AtomicBool::new(false);
        let file = InputFile {
            path: p.clone(),
            rel: "pipe".into(),
        };
        std::thread::scope(|s| {
            // No writer ever comes: opening must not wait, reading waits until the
            // flag is set.
            let reader = s.spawn(|| open_file(&file, Some(&stop)).map(|_| ()));
            std::thread::sleep(std::time::Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
            let e = reader.join().unwrap().unwrap_err();
            assert!(e.to_string().contains("stopped by a signal"), "{e}");
        });
        // A writer that comes later: the stream is read to its end, not taken
        // as empty before it arrives.
        let writer = std::thread::spawn({
            let p = p.clone();
            move || {
                let mut w = fs::OpenOptions::new().write(true).open(p).unwrap();
                w.write_all(b"hello ").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
                w.write_all(b"world").unwrap();
            }
        });
        let (mut r, c) = open_file(&file, None).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        writer.join().unwrap();
        assert_eq!((s.as_str(), c), ("hello world", Compression::None));
    }
}
