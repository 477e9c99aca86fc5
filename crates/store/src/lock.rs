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
}
