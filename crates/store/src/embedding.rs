//! Embedding the chunks that have no vector: in steps that commit one batch each, on the
//! sync's lock or (`embed_step`) without it, writing a vector only to a row that still holds
//! the text it was computed from.

use std::borrow::Cow;
use std::collections::HashMap;

use codectx_chunker::CodeChunk;
use codectx_embed::EmbeddingView;

use crate::Embedder;
use crate::report::{EmbedProgress, SyncEvent, SyncObserver, SyncStats, VectorCounts};
use crate::schema::StoredChunk;
use crate::sql::reader;
use crate::store::RecordedCount;
use crate::vector_cache::VectorCache;
use crate::{Store, StoreError};

impl Store {
    /// Embeds the chunks that have no vector yet (new rows, cascaded rows, rows a killed
    /// sync left behind), committing every `embed_batch` rows.
    pub async fn embed_pending(
        &mut self,
        embedder: &dyn Embedder,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, StoreError> {
        let _lock = self.lock_writer().await?;
        let mut stats = SyncStats::default();
        self.check_pending = true;
        self.embed_pending_locked(embedder, observer, &mut stats)
            .await?;
        if stats.chunks_embedded + stats.vectors_shared > 0 {
            // The head's kept version is this one now, vectors and all.
            self.keep_head_version(true).await;
        }
        Ok(stats)
    }

    /// Embeds up to `limit` chunks that have no vector, holding the write lock only for
    /// the commit: the model runs while other writers (a query's freshness sync) proceed.
    /// A vector is written only to a row still exactly as it was read (same text, same file
    /// version), so rows a concurrent sync replaced are left for the next step. Returns what this step
    /// embedded and what is still pending.
    pub async fn embed_step(
        &mut self,
        embedder: &dyn Embedder,
        limit: usize,
    ) -> Result<EmbedProgress, StoreError> {
        let spec = self.check_embedder(embedder)?;
        let started = std::time::Instant::now();
        self.refresh_chunks().await?;
        let rows = self
            .rows(Some("vector IS NULL"), Some(limit.max(1)))
            .await?;
        if rows.is_empty() {
            return Ok(EmbedProgress::default());
        }
        let read = started.elapsed();
        let (rows, _) = self.with_vectors(embedder, &spec, rows).await?;
        let embedded = started.elapsed();
        let _lock = self.lock_writer().await?;
        self.refresh_chunks().await?;
        let base = self.chunk_version().await?;
        let batch = self.chunk_batch(&rows).await?;
        let mut merge = self.chunks.merge_insert(&["key"]);
        // The update writes whole rows: only rows still exactly as read (same file
        // version, same text) take them; rows a sync replaced meanwhile stay pending.
        merge.when_matched_update_all(Some(
            "target.vector IS NULL AND target.embeddingText = source.embeddingText \
             AND target.contentHash = source.contentHash \
             AND target.lastModified = source.lastModified"
                .into(),
        ));
        let merged = merge
            .execute(reader(batch))
            .await
            .map_err(self.lance("writing vectors"))?;
        // The step's commit directly follows the version the lock found, and each row it
        // updated gained a vector: the count recorded for that version, plus those rows,
        // is this version's (counting scans the vector column: on babel 40 ms a step).
        if merged.num_attempts == 1 && merged.version == base + 1 {
            self.carry_count(
                RecordedCount::EmbeddedChunks,
                base,
                merged.num_updated_rows as usize,
            )
            .await?;
        }
        let written = started.elapsed();
        // Counted before upkeep, which records the count for this version: upkeep's check
        // for a vector index reads it instead of counting again (a scan of the vector
        // column: on babel 40 ms of every step), and carries it over its own commits.
        let progress = EmbedProgress {
            embedded: rows.len(),
            pending: self.pending_vectors().await?,
        };
        let counted = started.elapsed();
        // Compaction and the vector index, when due (cheap to check).
        self.maintain(&mut SyncStats::default()).await?;
        if progress.pending == 0 {
            // The head's kept version is this one now, vectors and all.
            self.keep_head_version(true).await;
        }
        // Each stage's end, from the start, for `RUST_LOG=codectx_store=debug`.
        tracing::debug!(?read, ?embedded, ?written, ?counted, maintained = ?started.elapsed(), "embedding step");
        Ok(progress)
    }

    /// How many chunk rows there are and how many of them have a vector.
    pub async fn vector_counts(&mut self) -> Result<VectorCounts, StoreError> {
        // Each file's record holds its row count (a sync repairs any file whose rows
        // disagree), so the total needs no read of the table.
        let total = self.files().map(|f| f.chunk_count as usize).sum();
        let embedded = if self.options.embedding.is_some() {
            self.refresh_chunks().await?;
            self.recorded_count(RecordedCount::EmbeddedChunks, false)
                .await?
        } else {
            0
        };
        Ok(VectorCounts { total, embedded })
    }

    /// The index's embedding spec, if `embedder` is the model it was built for.
    pub(crate) fn check_embedder(
        &self,
        embedder: &dyn Embedder,
    ) -> Result<crate::EmbeddingSpec, StoreError> {
        let Some(spec) = self.options.embedding.clone() else {
            return Err(StoreError::Embed(crate::EmbedError::Model(
                "the index keeps no vectors (it was opened without an embedding model)".into(),
            )));
        };
        if embedder.spec() != spec {
            return Err(StoreError::Embed(crate::EmbedError::Model(format!(
                "the index is configured for {} ({} dimensions) but the embedder is {} ({} dimensions)",
                spec.model,
                spec.dimension,
                embedder.spec().model,
                embedder.spec().dimension
            ))));
        }
        Ok(spec)
    }

    /// `rows` with the vectors of their embedding texts, checked against the index's shape,
    /// and how many of them the shared vectors held (the embedder computed the rest).
    pub(crate) async fn with_vectors(
        &self,
        embedder: &dyn Embedder,
        spec: &crate::EmbeddingSpec,
        rows: Vec<StoredChunk>,
    ) -> Result<(Vec<StoredChunk>, usize), StoreError> {
        let texts: Vec<String> = rows
            .iter()
            .map(|r| embedding_input(&r.chunk, spec.view).into_owned())
            .collect();
        let cache = self.shared_vectors(spec).await;
        let keys: Vec<String> = texts.iter().map(|t| VectorCache::key(t)).collect();
        let mut shared = match cache {
            Some(cache) => cache.get(&keys).await.unwrap_or_else(|e| {
                tracing::warn!("embedding without the shared vectors: {e}");
                HashMap::new()
            }),
            None => HashMap::new(),
        };
        let missing: Vec<usize> = (0..texts.len())
            .filter(|&i| !shared.contains_key(&keys[i]))
            .collect();
        let found = texts.len() - missing.len();
        let inputs: Vec<String> = missing.iter().map(|&i| texts[i].clone()).collect();
        let computed = if inputs.is_empty() {
            Vec::new()
        } else {
            embedder.embed_documents(&inputs).await?
        };
        if computed.len() != inputs.len() || computed.iter().any(|v| v.len() != spec.dimension) {
            return Err(StoreError::EmbedShape {
                expected: inputs.len(),
                got: computed.len(),
                dimension: computed.first().map_or(0, Vec::len),
                expected_dimension: spec.dimension,
            });
        }
        let computed: Vec<(String, Vec<f32>)> = missing
            .iter()
            .map(|&i| keys[i].clone())
            .zip(computed)
            .collect();
        if let Some(cache) = cache
            && let Err(e) = cache.put(&computed).await
        {
            tracing::warn!("the shared vectors did not take new vectors: {e}");
        }
        shared.extend(computed);
        let rows = rows
            .into_iter()
            .zip(&keys)
            .map(|(mut row, key)| {
                row.vector = shared.get(key).cloned();
                row
            })
            .collect();
        Ok((rows, found))
    }

    /// The shared vectors of `spec`'s model, opened once; `None` when there are none or they
    /// cannot be opened (then every vector is computed).
    async fn shared_vectors(&self, spec: &crate::EmbeddingSpec) -> Option<&VectorCache> {
        self.shared_vectors
            .get_or_init(|| async {
                let dir = self.options.shared_vectors_dir(&self.root)?;
                match VectorCache::open(&dir, spec, self.options.shared_vectors_bytes).await {
                    Ok(cache) => Some(cache),
                    Err(e) => {
                        tracing::warn!("embedding without shared vectors: {e}");
                        None
                    }
                }
            })
            .await
            .as_ref()
    }

    pub(crate) async fn embed_pending_locked(
        &mut self,
        embedder: &dyn Embedder,
        observer: &dyn SyncObserver,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        if self.options.embedding.is_none() {
            return Ok(());
        }
        let spec = self.check_embedder(embedder)?;
        if !self.check_pending {
            return Ok(());
        }
        let total = self.pending_vectors().await?;
        let mut done = 0;
        while done < total {
            let batch_rows = self
                .rows(Some("vector IS NULL"), Some(self.options.embed_batch))
                .await?;
            if batch_rows.is_empty() {
                break;
            }
            let (rows, shared) = self.with_vectors(embedder, &spec, batch_rows).await?;
            self.update_chunk_rows(&rows, "writing vectors").await?;
            stats.commits += 1;
            stats.chunks_embedded += rows.len() - shared;
            stats.vectors_shared += shared;
            done += rows.len();
            observer.event(SyncEvent::Embedded { done, total });
        }
        self.check_pending = false;
        if done > 0 {
            // Recorded for this version, and carried over upkeep's commits: upkeep and the
            // summary that follows read it.
            self.pending_vectors().await?;
            self.maintain(stats).await?;
        }
        Ok(())
    }

    /// Rows without a vector, under the write lock: the table's rows less those with one,
    /// whose count is recorded for the next run that finds this version.
    async fn pending_vectors(&self) -> Result<usize, StoreError> {
        let rows = self
            .chunks
            .count_rows(None)
            .await
            .map_err(self.lance("counting rows"))?;
        let embedded = self
            .recorded_count(RecordedCount::EmbeddedChunks, true)
            .await?;
        Ok(rows.saturating_sub(embedded))
    }
}

/// The text of `chunk` a model with `view` embeds.
pub(crate) fn embedding_input(chunk: &CodeChunk, view: EmbeddingView) -> Cow<'_, str> {
    match view {
        EmbeddingView::Code => Cow::Borrowed(chunk.embedding_text.as_str()),
        EmbeddingView::NaturalLanguage => Cow::Owned(codectx_chunker::natural_language_view(chunk)),
    }
}
