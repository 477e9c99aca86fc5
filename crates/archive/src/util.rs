//! Shared plumbing: problem reports, outputs, sizes.

use std::fmt::Display;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use webdedup_formats::output::{AtomicOutput, OutputCompression};
use webdedup_text::shown::escape_controls;

/// Problems found in the input: printed to stderr as `webdedup: WHERE: REASON` and
/// counted (or, for library callers, kept: [`Report::collecting`]). Any problem
/// makes the command exit with status 1.
#[derive(Default)]
pub struct Report {
    problems: u64,
    printed: u64,
    kept: Option<Vec<(String, String)>>,
}

/// Messages printed before the rest are only counted.
const MAX_PRINTED: u64 = 1000;

impl Report {
    /// A report that keeps the first problems as (place, reason) instead of printing
    /// them (for callers with their own way to tell, such as the Python module).
    pub fn collecting() -> Report {
        Report {
            kept: Some(Vec::new()),
            ..Report::default()
        }
    }

    /// The problems kept by a [`Report::collecting`] report.
    pub fn kept(&self) -> &[(String, String)] {
        self.kept.as_deref().unwrap_or_default()
    }

    /// Reports a problem at `place` (a file name, `FILE:LINE`, `FILE: offset N`).
    /// Both are shown with control characters escaped: they quote input (file names,
    /// bytes of a bad line), which must never drive the terminal.
    pub fn bad(&mut self, place: impl Display, reason: impl Display) {
        self.problems += 1;
        let (place, reason) = (place.to_string(), reason.to_string());
        let (place, reason) = (escape_controls(&place), escape_controls(&reason));
        if let Some(kept) = &mut self.kept {
            if (kept.len() as u64) < MAX_PRINTED {
                kept.push((place.into_owned(), reason.into_owned()));
            }
        } else if self.printed < MAX_PRINTED {
            self.printed += 1;
            eprintln!("webdedup: {place}: {reason}");
        } else if self.printed == MAX_PRINTED {
            self.printed += 1;
            eprintln!("webdedup: more problems: only counted from now on");
        }
    }

    pub fn problems(&self) -> u64 {
        self.problems
    }

    /// The exit code for a run that got to its end: 0, or 1 if anything was reported.
    pub fn exit_code(&self) -> i32 {
        if self.problems > 0 {
            1
        } else {
            0
        }
    }
}

/// Where a command writes: stdout, or a file written atomically (compressed by its
/// suffix `.gz` / `.zst`). Errors name the file (or stdout).
pub enum Out {
    Stdout(BufWriter<io::Stdout>),
    File(Box<AtomicOutput>),
}

impl Out {
    pub fn create(path: Option<&Path>) -> io::Result<Out> {
        match path {
            None => Ok(Out::Stdout(BufWriter::with_capacity(1 << 17, io::stdout()))),
            Some(p) if p.as_os_str() == "-" => {
                Ok(Out::Stdout(BufWriter::with_capacity(1 << 17, io::stdout())))
            }
            Some(p) => Ok(Out::File(Box::new(AtomicOutput::create(
                p,
                compression_of(p),
            )?))),
        }
    }

    /// Writes `path` (standard output when `None` or `-`) with `write`, and
    /// finishes it: what `write` returns.
    pub fn written<S>(
        path: Option<&Path>,
        write: impl FnOnce(&mut Out) -> anyhow::Result<S>,
    ) -> anyhow::Result<S> {
        let mut out = Out::create(path)?;
        let s = write(&mut out)?;
        out.finish()?;
        Ok(s)
    }

    pub fn finish(self) -> io::Result<()> {
        match self {
            Out::Stdout(mut w) => w.flush().map_err(stdout_error),
            Out::File(f) => f.finish(false),
        }
    }
}

fn stdout_error(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write to stdout: {e}"))
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Stdout(w) => w.write(buf).map_err(stdout_error),
            Out::File(f) => f.write_all(buf).map(|_| buf.len()),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.write_all(buf).map_err(stdout_error),
            Out::File(f) => f.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Stdout(w) => w.flush().map_err(stdout_error),
            Out::File(_) => Ok(()),
        }
    }
}

pub fn compression_of(p: &Path) -> OutputCompression {
    let name = p.to_string_lossy();
    if name.ends_with(".gz") {
        OutputCompression::Gzip
    } else if name.ends_with(".zst") || name.ends_with(".zstd") {
        OutputCompression::Zstd
    } else {
        OutputCompression::None
    }
}

/// Opens a text input (`-` is stdin), decompressing gzip / zstd by magic bytes.
pub fn open_text(path: &Path) -> io::Result<Box<dyn BufRead + Send>> {
    if path.as_os_str() == "-" {
        let (r, _) =
            webdedup_formats::input::decode(BufReader::with_capacity(1 << 16, io::stdin()))?;
        return Ok(Box::new(BufReader::with_capacity(1 << 16, r)));
    }
    let (r, _) = webdedup_formats::open_input(path)?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, r)))
}

/// Parses a size such as `512M`, `2G`, `64k` or `1000` (bytes).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let m = match s[i..].to_ascii_lowercase().trim_end_matches(['b', 'i']) {
                "" => 1,
                "k" => 1u64 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                "t" => 1 << 40,
                other => {
                    return Err(format!(
                        "unknown size unit '{other}' in '{s}' (use K, M, G or T)"
                    ))
                }
            };
            (&s[..i], m)
        }
        None => (s, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| format!("bad size '{s}'"))?;
    if n.is_nan() || n < 0.0 {
        return Err(format!("bad size '{s}'"));
    }
    Ok((n * mult as f64) as u64)
}

/// The file name (last component) of a path, as indexes record it.
pub fn base_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("64k").unwrap(), 65536);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5MiB").unwrap(), 3 << 19);
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("abc").is_err());
    }
}
