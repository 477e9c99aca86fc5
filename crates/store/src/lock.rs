//! One process at a time per store directory: an advisory `flock` on a lock file,
//! released by the kernel when the process ends, however it ends (so a killed run
//! never leaves a stale lock behind).

use crate::StoreError;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

/// Held while a process uses a store directory (or an output directory).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// Locks `path` (created if missing) or fails at once if another process holds it.
    pub fn acquire(path: &Path) -> Result<DirLock, StoreError> {
        let io = |error| StoreError::Io {
            path: path.to_owned(),
            error,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io)?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own; no memory is shared.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    return Err(StoreError::Unavailable(format!(
                        "{} is locked: another webdedup process is using this directory",
                        path.display()
                    )));
                }
                return Err(io(e));
            }
        }
        Ok(DirLock {
            _file: file,
            path: path.to_owned(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Locks `path` (created if missing) exclusively or shared, or tells who holds
    /// it. An exclusive holder writes its pid into the file, for the message of the
    /// process it turns away. `Ok(Ok(None))`: the file system has no `flock`
    /// (some cluster file systems mount without it): the caller goes on unlocked.
    pub fn try_acquire(
        path: &Path,
        exclusive: bool,
    ) -> Result<Result<Option<DirLock>, Busy>, StoreError> {
        let io = |error| StoreError::Io {
            path: path.to_owned(),
            error,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        #[cfg(unix)]
        {
            use std::io::{Read, Seek, Write};
            use std::os::fd::AsRawFd;
            let lock = |op| {
                // SAFETY: flock on a descriptor we own; no memory is shared.
                if unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) } == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            let unsupported = |e: &std::io::Error| {
                matches!(
                    e.raw_os_error(),
                    Some(libc::ENOLCK) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP)
                )
            };
            let op = if exclusive {
                libc::LOCK_EX
            } else {
                libc::LOCK_SH
            };
            match lock(op) {
                Ok(()) => {}
                Err(e) if unsupported(&e) => return Ok(Ok(None)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Shared holders let a shared lock through: then they are
                    // what keeps an exclusive one out.
                    if exclusive && lock(libc::LOCK_SH).is_ok() {
                        return Ok(Err(Busy::Shared));
                    }
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    return Ok(Err(Busy::Exclusive(text.trim().parse().ok())));
                }
                Err(e) => return Err(io(e)),
            }
            if exclusive {
                file.set_len(0)
                    .and_then(|_| file.rewind())
                    .and_then(|_| writeln!(file, "{}", std::process::id()))
                    .map_err(io)?;
            }
        }
        Ok(Ok(Some(DirLock {
            _file: file,
            path: path.to_owned(),
        })))
    }
}

/// Who holds a lock [`DirLock::try_acquire`] could not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// One process, exclusively (its pid, when it wrote one).
    Exclusive(Option<u32>),
    /// Processes sharing it.
    Shared,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let a = DirLock::acquire(&p).unwrap();
        let e = DirLock::acquire(&p).unwrap_err().to_string();
        assert!(e.contains("another webdedup process"), "{e}");
        drop(a);
        DirLock::acquire(&p).unwrap();
    }

    #[test]
    fn shared_holders_keep_out_an_exclusive_one_and_the_reverse() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lock");
        let a = DirLock::try_acquire(&p, false).unwrap().unwrap();
        let b = DirLock::try_acquire(&p, false).unwrap().unwrap();
        assert_eq!(
            DirLock::try_acquire(&p, true).unwrap().unwrap_err(),
            Busy::Shared
        );
        drop((a, b));
        let x = DirLock::try_acquire(&p, true).unwrap().unwrap();
        let pid = Some(std::process::id());
        assert_eq!(
            DirLock::try_acquire(&p, false).unwrap().unwrap_err(),
            Busy::Exclusive(pid)
        );
        assert_eq!(
            DirLock::try_acquire(&p, true).unwrap().unwrap_err(),
            Busy::Exclusive(pid)
        );
        drop(x);
        DirLock::try_acquire(&p, false).unwrap().unwrap();
    }
}
