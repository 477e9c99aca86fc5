//! What a run owns while it runs, apart from its settings: made where a run starts
//! (the runner, persistence, batch mode, the Python classes) and handed to the
//! engine, which consults and fills it in input order (in the commit gate).

use crate::options::Options;
use crate::policy::minhash::{Decided, KeptDocs};
use crate::progress::Progress;
use std::sync::Arc;

/// The live state of one run. Empty but for MinHash mode, whose decisions depend
/// on the documents kept before.
#[derive(Clone, Debug, Default)]
pub struct RunState {
    /// MinHash mode: the kept documents' side store (names, and signatures with
    /// `--verify`), shared by the run's threads. Its salt (a run on shared servers)
    /// keeps this run's file ids apart from other workers'.
    pub kept: Option<Arc<KeptDocs>>,
    /// MinHash in batch mode's filter phase: the decisions its resolve phase took
    /// (every dropped document and its original); the store is then not asked.
    pub decided: Option<Arc<Decided>>,
    /// Who is shown where the run stands (the command line's progress bar).
    pub progress: Option<Arc<dyn Progress>>,
}

impl RunState {
    /// A fresh state for a run of `options`: an empty side store in MinHash mode.
    pub fn new(options: &Options) -> Self {
        RunState {
            kept: options
                .minhash()
                .map(|m| Arc::new(KeptDocs::new(m.params.verification_len(), m.params.bands))),
            decided: None,
            progress: None,
        }
    }

    /// This state showing the run's progress to `progress`.
    pub fn with_progress(self, progress: Arc<dyn Progress>) -> Self {
        RunState {
            progress: Some(progress),
            ..self
        }
    }

    /// This state for a run on shared servers whose requests carry `salt`.
    pub fn salted(self, salt: u64) -> Self {
        if let Some(k) = &self.kept {
            k.set_salt(salt);
        }
        self
    }

    /// This state deciding from batch mode's resolved decisions.
    pub fn with_decided(self, decided: Decided) -> Self {
        RunState {
            decided: Some(Arc::new(decided)),
            ..self
        }
    }
}
