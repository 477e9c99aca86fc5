//! What to do after a fatal error that a user can cure: a full disk, or a store
//! (Redis, a hash server) that went away. The error alone ("No space left on
//! device", "store unavailable: ...") says what happened; the hint says how to end
//! with the bytes of an uninterrupted run, which is what the restore rule promises
//! (docs/restore.md).

use webdedup_store::StoreError;

/// The kind of cure an error calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// No space (or quota, or file-size limit) left for an output or the store.
    DiskFull,
    /// The store stopped answering: Redis or a hash server is down or unreachable.
    StoreLost,
}

/// How a command is finished after it stopped half-way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// `dedup`, `minhash`: the same command with `-r`.
    Restore,
    /// Every other command that writes outputs: outputs are written whole and
    /// renamed, finished batch tasks are kept, so running it again is the cure.
    RunAgain,
}

/// `ENOSPC`, `EDQUOT`, `EFBIG` (a file-size limit).
const DISK_FULL_ERRNOS: [i32; 3] = [28, 122, 27];

/// What stopped the run, from the error's chain (typed errors first, then the OS
/// error text, for errors that crossed a thread or a library as strings).
pub fn cause_of(error: &anyhow::Error) -> Option<Cause> {
    for e in error.chain() {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io
                .raw_os_error()
                .is_some_and(|c| DISK_FULL_ERRNOS.contains(&c))
            {
                return Some(Cause::DiskFull);
            }
        }
        match e.downcast_ref::<StoreError>() {
            Some(StoreError::Unavailable(_)) => return Some(Cause::StoreLost),
            Some(StoreError::Io { error, .. })
                if error
                    .raw_os_error()
                    .is_some_and(|c| DISK_FULL_ERRNOS.contains(&c)) =>
            {
                return Some(Cause::DiskFull)
            }
            _ => {}
        }
    }
    let text = format!("{error:#}");
    if DISK_FULL_ERRNOS
        .iter()
        .any(|c| text.contains(&format!("(os error {c})")))
    {
        Some(Cause::DiskFull)
    } else if text.contains("store unavailable") || text.contains(" unreachable for ") {
        Some(Cause::StoreLost)
    } else {
        None
    }
}

/// The line to print after the error, if the error is one a user can cure.
pub fn what_to_do(cause: Cause, resume: Resume) -> String {
    let first = match cause {
        Cause::DiskFull => "free some space (or raise the file-size limit)",
        Cause::StoreLost => "bring the store back (restart Redis or the hash server)",
    };
    let then = match resume {
        Resume::Restore => {
            "run the same command again with -r (--restore): it ends with the outputs \
             and store of an uninterrupted run"
        }
        Resume::RunAgain => {
            "run the same command again: finished outputs and tasks are kept, the rest \
             is written anew"
        }
    };
    format!("{first}, then {then}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_full_disk_is_found_through_context_and_store_errors() {
        let io = std::io::Error::from_raw_os_error(28);
        let e = anyhow::Error::from(io).context("cannot write out/a.dedup");
        assert_eq!(cause_of(&e), Some(Cause::DiskFull));

        let store = StoreError::Io {
            path: "st/store.snap".into(),
            error: std::io::Error::from_raw_os_error(122),
        };
        let e = Err::<(), _>(store).context("saving the store").unwrap_err();
        assert_eq!(cause_of(&e), Some(Cause::DiskFull));

        // An OS error that crossed a thread as text.
        let e = anyhow::anyhow!("writer: out/b.dedup.tmp: File too large (os error 27)");
        assert_eq!(cause_of(&e), Some(Cause::DiskFull));
    }

    #[test]
    fn a_lost_store_is_found_and_other_errors_get_no_hint() {
        let e = anyhow::Error::from(StoreError::Unavailable("redis://h:1: refused".into()));
        assert_eq!(cause_of(&e), Some(Cause::StoreLost));
        let e = anyhow::anyhow!("server 127.0.0.1:9 unreachable for 3 s: refused");
        assert_eq!(cause_of(&e), Some(Cause::StoreLost));

        let e = anyhow::Error::from(std::io::Error::from_raw_os_error(2)).context("open x");
        assert_eq!(cause_of(&e), None);
        let e = anyhow::Error::from(StoreError::Mismatch("n-gram size".into()));
        assert_eq!(cause_of(&e), None);
    }

    #[test]
    fn the_hint_names_the_cure_and_how_to_finish() {
        let h = what_to_do(Cause::DiskFull, Resume::Restore);
        assert!(
            h.starts_with("free some space") && h.contains("-r (--restore)"),
            "{h}"
        );
        let h = what_to_do(Cause::StoreLost, Resume::RunAgain);
        assert!(h.starts_with("bring the store back") && h.contains("same command again"));
    }
}
