//! `cdx dates` (NutchWAX's add-dates input): every capture date of every
//! (urlkey, digest) version, sorted by urlkey then digest, with an external sort in
//! bounded memory.
//!
//! Output (and `--merge` input) lines: `urlkey sha1:DIGEST DATE DATE ...`, dates sorted
//! and unique. A `.dup` file (`urlkey sha1:DIGEST DATE`) is a valid dates file.
//!
//! Phase 1 collects (urlkey, digest, date) triples in an arena until the memory
//! budget is reached, sorts them and writes a run (already grouped, in the output
//! format) to a temporary directory. Phase 2 merges the runs with a heap, at most
//! `fan_in` at a time (several passes if there are more runs), joining the dates of
//! equal versions.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use webdedup_formats::cdx::normalize_digest;
use webdedup_formats::output::io_error_at;

use crate::cdx_cmd::{for_each_record, ReadCounts};
use crate::util::{open_text, Report};

/// Settings of one `dates` run.
pub struct DatesOptions {
    /// Memory budget of the sort buffer in bytes (at least 64 KiB is used).
    pub memory: u64,
    /// Where runs go (a temporary directory is made inside).
    pub tmp_dir: Option<PathBuf>,
    /// Most runs merged at once.
    pub fan_in: usize,
}

impl Default for DatesOptions {
    fn default() -> Self {
        DatesOptions {
            memory: 1 << 30,
            tmp_dir: None,
            fan_in: 64,
        }
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DatesStats {
    pub lines: u64,
    pub bad: u64,
    pub no_digest: u64,
    pub runs: u64,
    pub merge_passes: u64,
    pub versions: u64,
}

#[derive(Clone, Copy)]
struct Entry {
    start: u64,
    ulen: u32,
    dlen: u16,
    tlen: u16,
}

const ENTRY_BYTES: u64 = std::mem::size_of::<Entry>() as u64;

struct RunBuilder {
    arena: Vec<u8>,
    entries: Vec<Entry>,
    arena_budget: usize,
    entry_budget: usize,
    dir: tempfile::TempDir,
    runs: Vec<PathBuf>,
}

impl RunBuilder {
    fn new(opts: &DatesOptions) -> io::Result<Self> {
        let memory = opts.memory.max(64 << 10);
        let dir = match &opts.tmp_dir {
            Some(d) => tempfile::Builder::new()
                .prefix("webdedup-dates")
                .tempdir_in(d)?,
            None => tempfile::Builder::new()
                .prefix("webdedup-dates")
                .tempdir()?,
        };
        Ok(RunBuilder {
            arena: Vec::new(),
            entries: Vec::new(),
            arena_budget: (memory / 4 * 3) as usize,
            entry_budget: (memory / 4 / ENTRY_BYTES) as usize,
            dir,
            runs: Vec::new(),
        })
    }

    /// Adds one capture; `digest` is already normalized.
    fn push(&mut self, urlkey: &[u8], digest: &[u8], date: &[u8]) -> io::Result<()> {
        let need = urlkey.len() + digest.len() + date.len();
        if !fits(&mut self.arena, need, self.arena_budget)
            || !fits(&mut self.entries, 1, self.entry_budget)
        {
            self.write_run()?;
            // A single item larger than the budget still goes through, alone.
            fits(&mut self.arena, need, usize::MAX);
            fits(&mut self.entries, 1, usize::MAX);
        }
        let start = self.arena.len() as u64;
        self.arena.extend_from_slice(urlkey);
        self.arena.extend_from_slice(digest);
        self.arena.extend_from_slice(date);
        self.entries.push(Entry {
            start,
            ulen: urlkey.len() as u32,
            dlen: digest.len() as u16,
            tlen: date.len() as u16,
        });
        Ok(())
    }

    fn parts(&self, e: &Entry) -> (&[u8], &[u8], &[u8]) {
        let s = e.start as usize;
        let u = s + e.ulen as usize;
        let d = u + e.dlen as usize;
        (
            &self.arena[s..u],
            &self.arena[u..d],
            &self.arena[d..d + e.tlen as usize],
        )
    }

    /// Writes the buffered captures as the next sorted run; errors name the run file.
    fn write_run(&mut self) -> io::Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let path = self.dir.path().join(format!("run-{}", self.runs.len()));
        self.write_run_to(&path)
            .map_err(|e| io_error_at("cannot write sort run", &path, e))
    }

    fn write_run_to(&mut self, path: &Path) -> io::Result<()> {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| self.parts(a).cmp(&self.parts(b)));
        let path = path.to_owned();
        let mut w = BufWriter::with_capacity(1 << 16, File::create(&path)?);
        let mut prev: Option<Entry> = None;
        for e in &entries {
            let (u, d, t) = self.parts(e);
            match prev {
                Some(p)
                    if {
                        let (pu, pd, _) = self.parts(&p);
                        pu == u && pd == d
                    } =>
                {
                    if self.parts(&p).2 != t {
                        w.write_all(b" ")?;
                        w.write_all(t)?;
                    }
                }
                _ => {
                    if prev.is_some() {
                        w.write_all(b"\n")?;
                    }
                    write_head(&mut w, u, d)?;
                    w.write_all(b" ")?;
                    w.write_all(t)?;
                }
            }
            prev = Some(*e);
        }
        if prev.is_some() {
            w.write_all(b"\n")?;
        }
        w.into_inner().map_err(|e| e.into_error())?;
        self.runs.push(path);
        entries.clear();
        self.entries = entries;
        self.arena.clear();
        Ok(())
    }
}

/// Whether `v` can take `more` items without its capacity going over `budget`;
/// grows it (at most to the budget) when needed.
fn fits<T>(v: &mut Vec<T>, more: usize, budget: usize) -> bool {
    let need = v.len() + more;
    if need <= v.capacity() {
        return true;
    }
    if need > budget {
        return false;
    }
    let target = (v.capacity() * 2)
        .max(need)
        .max(4096 / std::mem::size_of::<T>().max(1))
        .min(budget)
        .max(need);
    v.reserve_exact(target - v.len());
    true
}

fn write_head(w: &mut impl Write, urlkey: &[u8], digest: &[u8]) -> io::Result<()> {
    w.write_all(urlkey)?;
    w.write_all(b" sha1:")?;
    w.write_all(digest)
}

/// One version read back from a run or the final merge.
struct Group {
    urlkey: Vec<u8>,
    digest: Vec<u8>,
    dates: Vec<Vec<u8>>,
}

struct RunReader {
    r: BufReader<File>,
    line: Vec<u8>,
}

impl RunReader {
    fn next(&mut self, g: &mut Group) -> io::Result<bool> {
        self.line.clear();
        if self.r.read_until(b'\n', &mut self.line)? == 0 {
            return Ok(false);
        }
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        }
        let mut it = self.line.split(|&b| b == b' ');
        g.urlkey.clear();
        g.urlkey.extend_from_slice(it.next().unwrap_or(b""));
        g.digest.clear();
        let d = it.next().unwrap_or(b"");
        g.digest
            .extend_from_slice(d.strip_prefix(b"sha1:").unwrap_or(d));
        g.dates.clear();
        g.dates.extend(it.map(|t| t.to_vec()));
        Ok(true)
    }
}

struct HeapItem {
    group: Group,
    run: usize,
}

impl PartialEq for HeapItem {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapItem {
    // Reversed: BinaryHeap is a max-heap and we want the smallest version first.
    fn cmp(&self, other: &Self) -> Ordering {
        (&other.group.urlkey, &other.group.digest, other.run).cmp(&(
            &self.group.urlkey,
            &self.group.digest,
            self.run,
        ))
    }
}

/// Merges sorted runs into `out`, joining the dates of equal versions. Returns the
/// number of versions written.
fn merge_runs(runs: &[PathBuf], out: &mut dyn Write) -> io::Result<u64> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (i, p) in runs.iter().enumerate() {
        let mut r = RunReader {
            r: BufReader::with_capacity(
                1 << 16,
                File::open(p).map_err(|e| io_error_at("cannot open sort run", p, e))?,
            ),
            line: Vec::new(),
        };
        let mut g = Group {
            urlkey: Vec::new(),
            digest: Vec::new(),
            dates: Vec::new(),
        };
        if r.next(&mut g)? {
            heap.push(HeapItem { group: g, run: i });
        }
        readers.push(r);
    }
    let mut versions = 0;
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let mut dates: Vec<Vec<u8>> = Vec::new();
    while let Some(first) = heap.pop() {
        let HeapItem { mut group, run } = first;
        dates.clear();
        dates.append(&mut group.dates);
        let mut next_of = vec![run];
        while let Some(top) = heap.peek() {
            if top.group.urlkey != group.urlkey || top.group.digest != group.digest {
                break;
            }
            let mut item = heap.pop().expect("peeked");
            dates.append(&mut item.group.dates);
            next_of.push(item.run);
        }
        dates.sort_unstable();
        dates.dedup();
        write_head(&mut w, &group.urlkey, &group.digest)?;
        for d in &dates {
            w.write_all(b" ")?;
            w.write_all(d)?;
        }
        w.write_all(b"\n")?;
        versions += 1;
        for r in next_of {
            let mut g = Group {
                urlkey: Vec::new(),
                digest: Vec::new(),
                dates: Vec::new(),
            };
            if readers[r].next(&mut g)? {
                heap.push(HeapItem { group: g, run: r });
            }
        }
    }
    w.flush()?;
    Ok(versions)
}

/// Runs `cdx dates`: reads the CDX/CDXJ `files` and the dates (or `.dup`) files
/// `merge`, writes the sorted versions with all their dates to `out`.
pub fn dates(
    files: &[PathBuf],
    merge: &[PathBuf],
    opts: &DatesOptions,
    out: &mut dyn Write,
    report: &mut Report,
) -> anyhow::Result<DatesStats> {
    let mut stats = DatesStats::default();
    let mut b = RunBuilder::new(opts).with_context(|| {
        format!(
            "cannot create a temporary directory for sort runs in {}",
            opts.tmp_dir
                .clone()
                .unwrap_or_else(std::env::temp_dir)
                .display()
        )
    })?;
    let mut digest = Vec::with_capacity(64);
    for m in merge {
        read_dates_file(m, &mut b, &mut stats, report)?;
    }
    let mut read = ReadCounts::default();
    for file in files {
        for_each_record(file, report, &mut read, |rec| {
            digest.clear();
            if !normalize_digest(&rec.digest, &mut digest) {
                stats.no_digest += 1;
                return Ok(());
            }
            b.push(rec.urlkey, &digest, rec.timestamp)?;
            Ok(())
        })?;
    }
    stats.lines += read.lines;
    stats.bad += read.bad;
    b.write_run()?;
    let fan_in = opts.fan_in.max(2);
    let mut runs = std::mem::take(&mut b.runs);
    stats.runs = runs.len() as u64;
    let mut next_id = 0;
    while runs.len() > fan_in {
        stats.merge_passes += 1;
        let mut merged = Vec::new();
        for chunk in runs.chunks(fan_in) {
            if chunk.len() == 1 {
                merged.push(chunk[0].clone());
                continue;
            }
            let path = b.dir.path().join(format!("merge-{next_id}"));
            next_id += 1;
            let mut f = File::create(&path)
                .map_err(|e| io_error_at("cannot create merge run", &path, e))?;
            merge_runs(chunk, &mut f)
                .with_context(|| format!("cannot merge sort runs into {}", path.display()))?;
            for p in chunk {
                let _ = std::fs::remove_file(p);
            }
            merged.push(path);
        }
        runs = merged;
    }
    stats.merge_passes += 1;
    // Errors writing `out` name it (`Out`); those reading a run name the run.
    stats.versions = merge_runs(&runs, out)?;
    Ok(stats)
}

fn read_dates_file(
    path: &Path,
    b: &mut RunBuilder,
    stats: &mut DatesStats,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut r = match open_text(path) {
        Ok(r) => r,
        Err(e) => {
            report.bad(path.display(), format_args!("cannot open: {e}"));
            return Ok(());
        }
    };
    let mut line = Vec::new();
    let mut digest = Vec::new();
    let mut n = 0u64;
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                report.bad(
                    format_args!("{}:{}", path.display(), n + 1),
                    format_args!("read error, rest of file skipped: {e}"),
                );
                break;
            }
        }
        n += 1;
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        stats.lines += 1;
        let fields: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
        let bad = if fields.len() < 3 {
            Some("a dates line needs `urlkey sha1:DIGEST DATE...`")
        } else if fields[2..]
            .iter()
            .any(|t| t.is_empty() || t.len() > 17 || !t.iter().all(u8::is_ascii_digit))
        {
            Some("bad date (expected up to 14 digits)")
        } else {
            digest.clear();
            if normalize_digest(fields[1], &mut digest) {
                None
            } else {
                Some("no digest")
            }
        };
        if let Some(reason) = bad {
            stats.bad += 1;
            report.bad(
                format_args!("{}:{n}", path.display()),
                format_args!("{reason}; line skipped"),
            );
            continue;
        }
        for t in &fields[2..] {
            b.push(fields[0], &digest, t)?;
        }
    }
    Ok(())
}
