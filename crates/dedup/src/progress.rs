//! How a run's progress is shown, without drawing anything here: the runner
//! tells a [`Progress`] where it stands, and the front door draws it (the
//! command line's progress bar, one convention for every command).

/// Where a run stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunProgress {
    /// Input files done (written, decided again, or unreadable), of `files`.
    pub files_done: u64,
    pub files: u64,
    /// Input bytes read and written so far.
    pub bytes_in: u64,
    pub documents_kept: u64,
    pub documents_dropped: u64,
}

/// Whoever shows a run's progress: told after every chunk written, in input order.
pub trait Progress: Send + Sync + std::fmt::Debug {
    fn update(&self, at: &RunProgress);
}
