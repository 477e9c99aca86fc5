//! What a `Dedup` and its workers share: the store, the settings, the run's state.

use crate::{feedback, Keys};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use webdedup_dedup::{Options, RunState};
use webdedup_formats::read::ReadSettings;
use webdedup_store::StoreMeta;

pub(crate) struct Shared {
    pub(crate) store: Keys,
    pub(crate) options: Options,
    /// What the workers' run accumulates (nothing in the paragraph modes).
    pub(crate) state: RunState,
    /// How `process` reads its bytes (`input_format` and the JSON Lines fields).
    pub(crate) read: ReadSettings,
    pub(crate) store_dir: Option<PathBuf>,
    pub(crate) meta: StoreMeta,
    pub(crate) workers: AtomicU64,
    /// Feedback mode: the sources named by worker calls and their record numbers.
    pub(crate) sources: feedback::Sources,
}
