//! What an index holds, read as it is: no sync, no project linked (`mcp-server status`).

use std::collections::BTreeMap;
use std::path::Path;

use codectx_store::{FileStatus, SkipReason, Store, StoreOptions};
use serde::Serialize;

use crate::RetrievalError;

/// A summary of the index of one root.
#[derive(Debug, Clone, Serialize)]
pub struct IndexSummary {
    /// Where the index lives (a directory or a LanceDB URI).
    pub index: String,
    pub files: usize,
    pub chunks: usize,
    pub embedded_chunks: usize,
    /// The model of the stored vectors, if any.
    pub embedding_model: Option<String>,
    /// Why opening rebuilt the index, if it did.
    pub rebuilt: Option<String>,
    /// The repository's history as evidence: on (and up to which commit) or why not.
    pub history: String,
    /// Files indexed from what the parser recovered around syntax errors.
    pub recovered_files: usize,
    /// Files not chunked, by reason.
    pub skipped_files: BTreeMap<SkipReason, usize>,
}

impl IndexSummary {
    /// Reads the index `options` locate for `root`, keeping whatever vectors it holds
    /// (opening with another model's spec would rebuild it).
    pub async fn read(root: &Path, mut options: StoreOptions) -> Result<Self, RetrievalError> {
        options.embedding = Store::recorded_embedding(root, &options).await?;
        Self::of(&mut Store::open(root, options).await?).await
    }

    pub(crate) async fn of(store: &mut Store) -> Result<Self, RetrievalError> {
        let counts = store.vector_counts().await?;
        let mut skipped_files = BTreeMap::new();
        let mut recovered_files = 0;
        for file in store.files() {
            match &file.status {
                FileStatus::Skipped { reason, .. } => {
                    *skipped_files.entry(*reason).or_insert(0) += 1
                }
                FileStatus::Recovered => recovered_files += 1,
                FileStatus::Indexed => {}
            }
        }
        Ok(Self {
            index: store.uri().to_string(),
            files: store.files().count(),
            chunks: counts.total,
            embedded_chunks: counts.embedded,
            embedding_model: store.embedding().map(|s| s.model.clone()),
            rebuilt: store.rebuilt().map(String::from),
            history: store.recorded_history().await?.to_string(),
            recovered_files,
            skipped_files,
        })
    }
}
