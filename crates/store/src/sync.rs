//! The blueprint's incremental sync (see the crate documentation).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

use codectx_chunker::CodeChunk;
use codectx_embed::EmbeddingView;
use codectx_parser::ParseStatus;
use lancedb::arrow::arrow_array::{RecordBatch, RecordBatchIterator};
use lancedb::index::Index;
use lancedb::query::{QueryBase, Select};
use lancedb::table::OptimizeAction;
use sha2::{Digest, Sha256};

use crate::lock::WriteLock;
use crate::schema::{
    FileRecord, FileStatus, StoredChunk, batch_to_files, chunks_to_batch, files_to_batch,
    meta_to_batch,
};
use crate::search::{FULL_TEXT_COLUMNS, lexical_tokens};
use crate::store::{CollectBatches, FACTS_KEY, text_column};
use crate::{Embedder, Store, StoreError};
use codectx_files::{SourceFile, looks_minified};

pub(crate) const LOCK_FILE: &str = "write.lock";

/// What one sync did. Tests assert on these ("zero re-parses", "exactly these re-embeds").
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncStats {
    /// Source files found by the walk.
    pub files_seen: usize,
    /// Same mtime and size as last time: not read.
    pub files_unchanged: usize,
    /// New mtime, same content hash: only the mtime was recorded.
    pub files_touched: usize,
    /// New or changed content: parsed and chunked.
    pub files_parsed: usize,
    /// New or changed but not chunked (minified, too large, binary, not UTF-8).
    pub files_skipped: usize,
    /// Gone from disk: rows deleted.
    pub files_removed: usize,
    /// Chunk rows inserted or replaced.
    pub chunks_written: u64,
    /// Chunk rows deleted (of changed and removed files, net of replacements).
    pub chunks_deleted: u64,
    /// Chunks of unchanged files whose vector was dropped by the signature cascade.
    pub chunks_cascaded: usize,
    /// Chunks of changed files that kept their vector (same `embeddingText`).
    pub vectors_reused: usize,
    /// Chunks sent to the embedder.
    pub chunks_embedded: usize,
    /// LanceDB commits made (each a table version).
    pub commits: usize,
    /// The previous sync died mid-way and this one repaired the index.
    pub repaired: bool,
    /// Commits of the repository's history read (only new ones after the first sync).
    pub history_commits: usize,
    /// Chunk rows whose commit notes changed.
    pub history_rows: usize,
    /// Time spent reading the history, in milliseconds (not serialized: a timing, it
    /// would make snapshots of the counters flaky).
    #[serde(skip)]
    pub history_ms: u64,
}

/// What one [`Store::embed_step`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmbedProgress {
    /// Chunks embedded in this step.
    pub embedded: usize,
    /// Chunks still without a vector.
    pub pending: usize,
}

/// Chunk rows and how many have a vector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct VectorCounts {
    pub total: usize,
    pub embedded: usize,
}

/// Points of a sync an observer hears about: progress for people, kill points for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncEvent {
    /// The walk is done: `files` source files found, `to_parse` of them need parsing.
    Enumerated { files: usize, to_parse: usize },
    /// One more file parsed (called from worker threads).
    Parsed { done: usize, total: usize },
    /// The index is marked dirty; rows are about to change.
    MarkedDirty,
    /// The chunk rows of this sync are committed; the files table is not yet.
    ChunksWritten,
    /// The files table is committed; the dirty mark is still set.
    FilesWritten,
    /// The structural part is complete and consistent.
    Structural,
    /// One batch of vectors committed: `done` of `total` pending chunks.
    Embedded { done: usize, total: usize },
}

/// Receives [`SyncEvent`]s. `()` ignores them.
pub trait SyncObserver: Sync {
    fn event(&self, event: SyncEvent);
}

impl SyncObserver for () {
    fn event(&self, _: SyncEvent) {}
}

impl<F: Fn(SyncEvent) + Sync> SyncObserver for F {
    fn event(&self, event: SyncEvent) {
        self(event)
    }
}

/// A file read and cut in this sync.
struct Processed {
    record: FileRecord,
    chunks: Vec<CodeChunk>,
}

impl Store {
    /// Brings the index up to date with the files on disk, then (given an embedder)
    /// embeds every chunk that has no vector. Returns what it did.
    pub async fn sync(
        &mut self,
        embedder: Option<&dyn Embedder>,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, StoreError> {
        let _lock = self.lock_writer().await?;
        // Another process may have synced since we last looked.
        self.reload_known().await?;
        self.refresh_chunks().await?;
        let mut stats = SyncStats::default();
        if self.needs_repair || self.meta_dirty().await? {
            self.repair(&mut stats).await?;
        }
        self.sync_structure(observer, &mut stats).await?;
        self.sync_history(&mut stats).await?;
        if stats.history_rows > 0 {
            self.maintain(&mut stats).await?;
        }
        if let Some(embedder) = embedder {
            self.embed_pending_locked(embedder, observer, &mut stats)
                .await?;
        }
        Ok(stats)
    }

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
        self.refresh_chunks().await?;
        let rows = self
            .query_chunks(Some("vector IS NULL"), Some(limit.max(1)))
            .await?;
        if rows.is_empty() {
            return Ok(EmbedProgress::default());
        }
        let rows = self.with_vectors(embedder, &spec, rows).await?;
        let _lock = self.lock_writer().await?;
        self.refresh_chunks().await?;
        let batch = self.chunk_batch(&rows).await?;
        let mut merge = self.chunks.merge_insert(&["id"]);
        // The update writes whole rows: only rows still exactly as read (same file
        // version, same text) take them; rows a sync replaced meanwhile stay pending.
        merge.when_matched_update_all(Some(
            "target.vector IS NULL AND target.embeddingText = source.embeddingText \
             AND target.contentHash = source.contentHash \
             AND target.lastModified = source.lastModified"
                .into(),
        ));
        merge
            .execute(reader(batch))
            .await
            .map_err(self.lance("writing vectors"))?;
        // Compaction and the vector index, when due (cheap to check).
        self.maintain(&mut SyncStats::default()).await?;
        Ok(EmbedProgress {
            embedded: rows.len(),
            pending: self.count("vector IS NULL").await?,
        })
    }

    /// How many chunk rows there are and how many of them have a vector.
    pub async fn vector_counts(&mut self) -> Result<VectorCounts, StoreError> {
        self.refresh_chunks().await?;
        let total = self
            .chunks
            .count_rows(None)
            .await
            .map_err(self.lance("counting rows"))?;
        let embedded = if self.options.embedding.is_some() {
            self.count("vector IS NOT NULL").await?
        } else {
            0
        };
        Ok(VectorCounts { total, embedded })
    }

    /// Sees the chunk rows other handles (another process, a background embedder) wrote.
    async fn refresh_chunks(&self) -> Result<(), StoreError> {
        self.chunks
            .checkout_latest()
            .await
            .map_err(self.lance("refreshing the chunk table"))
    }

    /// The index's embedding spec, if `embedder` is the model it was built for.
    fn check_embedder(&self, embedder: &dyn Embedder) -> Result<crate::EmbeddingSpec, StoreError> {
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

    /// `rows` with the vectors of their embedding texts, checked against the index's shape.
    async fn with_vectors(
        &self,
        embedder: &dyn Embedder,
        spec: &crate::EmbeddingSpec,
        rows: Vec<StoredChunk>,
    ) -> Result<Vec<StoredChunk>, StoreError> {
        let texts: Vec<String> = rows
            .iter()
            .map(|r| embedding_input(&r.chunk, spec.view).into_owned())
            .collect();
        let vectors = embedder.embed_documents(&texts).await?;
        if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != spec.dimension) {
            return Err(StoreError::EmbedShape {
                expected: texts.len(),
                got: vectors.len(),
                dimension: vectors.first().map_or(0, Vec::len),
                expected_dimension: spec.dimension,
            });
        }
        Ok(rows
            .into_iter()
            .zip(vectors)
            .map(|(mut row, v)| {
                row.vector = Some(v);
                row
            })
            .collect())
    }

    /// The write lock of a local index (object stores have none: LanceDB's commit
    /// conflict detection is what guards them).
    async fn lock_writer(&self) -> Result<Option<WriteLock>, StoreError> {
        match &self.local_dir {
            Some(dir) => Ok(Some(
                WriteLock::acquire(&dir.join(LOCK_FILE), self.options.lock_timeout).await?,
            )),
            None => Ok(None),
        }
    }

    async fn sync_structure(
        &mut self,
        observer: &dyn SyncObserver,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let disk = {
            let root = self.root.clone();
            let selection = self.options.files.clone();
            tokio::task::spawn_blocking(move || selection.walk(&root))
                .await
                .expect("the walk does not panic")
        };
        stats.files_seen = disk.len();

        // mtime (and size) is the trigger; only files that moved are read. Facts of another
        // extractor version make every file move once (vectors are carried over).
        let facts_stale = self.facts_stale;
        let moved: Vec<&SourceFile> = disk
            .iter()
            .filter(|f| {
                facts_stale
                    || self
                        .known
                        .get(&f.path)
                        .is_none_or(|k| k.mtime_ns != f.mtime_ns || k.size != f.size)
            })
            .collect();
        stats.files_unchanged = disk.len() - moved.len();
        let on_disk: HashSet<&str> = disk.iter().map(|f| f.path.as_str()).collect();
        let removed: Vec<String> = self
            .known
            .keys()
            .filter(|p| !on_disk.contains(p.as_str()))
            .cloned()
            .collect();
        stats.files_removed = removed.len();
        observer.event(SyncEvent::Enumerated {
            files: disk.len(),
            to_parse: moved.len(),
        });
        if moved.is_empty() && removed.is_empty() {
            return Ok(());
        }
        if facts_stale && !self.known.is_empty() {
            tracing::info!(
                "re-extracting the graph facts of {} files (extractor version {})",
                moved.len(),
                codectx_graph::facts::FACTS_VERSION
            );
        }

        let processed = {
            let moved: Vec<SourceFile> = moved.into_iter().cloned().collect();
            let known: HashMap<String, String> = moved
                .iter()
                .filter(|_| !facts_stale)
                .filter_map(|f| {
                    self.known
                        .get(&f.path)
                        .map(|k| (f.path.clone(), k.content_hash.clone()))
                })
                .collect();
            let max_bytes = self.options.files.max_file_bytes;
            // Parsing is CPU work: keep it off the async runtime's threads.
            process_files(&moved, &known, max_bytes, observer)
        };
        let mut touched = Vec::new();
        let mut changed = Vec::new();
        for item in processed {
            match item {
                Ok(mut record) => {
                    // Same content: what the last parse found still holds.
                    if let Some(known) = self.known.get(&record.path) {
                        record.status = known.status.clone();
                        record.chunk_count = known.chunk_count;
                    }
                    touched.push(record)
                }
                Err(p) => changed.push(p),
            }
        }
        stats.files_touched = touched.len();
        stats.files_parsed = changed
            .iter()
            .filter(|p| !matches!(p.record.status, FileStatus::Skipped(_)))
            .count();
        stats.files_skipped = changed.len() - stats.files_parsed;

        let rewritten: Vec<String> = changed
            .iter()
            .map(|p| p.record.path.clone())
            .chain(removed.iter().cloned())
            .collect();
        let touched_paths: Vec<String> = touched
            .iter()
            .filter(|r| r.chunk_count > 0)
            .map(|r| r.path.clone())
            .collect();
        if !rewritten.is_empty() {
            self.set_dirty(true, stats).await?;
            observer.event(SyncEvent::MarkedDirty);
        }
        if !rewritten.is_empty() || !touched_paths.is_empty() {
            self.write_chunks(&changed, &touched, &rewritten, stats)
                .await?;
            observer.event(SyncEvent::ChunksWritten);
        }
        let mut file_rows: Vec<FileRecord> = changed.into_iter().map(|p| p.record).collect();
        file_rows.extend(self.moved_file_rows(&touched).await?);
        self.write_files(&file_rows, &removed, stats).await?;
        if facts_stale {
            self.set_meta(FACTS_KEY, &codectx_graph::facts::FACTS_VERSION.to_string())
                .await?;
            self.facts_stale = false;
        }
        observer.event(SyncEvent::FilesWritten);
        if !rewritten.is_empty() {
            self.set_dirty(false, stats).await?;
            self.maintain(stats).await?;
        }
        observer.event(SyncEvent::Structural);
        Ok(())
    }

    /// One commit replacing the rows of every changed and removed file, carrying vectors
    /// over where `embeddingText` did not change and dropping those the cascade reaches.
    async fn write_chunks(
        &mut self,
        changed: &[Processed],
        touched: &[FileRecord],
        rewritten: &[String],
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let in_rewritten = in_list("relativePath", rewritten);
        let old = if rewritten.is_empty() {
            Vec::new()
        } else {
            self.chunks(Some(&in_rewritten)).await?
        };
        let with_vectors = self.options.embedding.is_some();
        let view = self
            .options
            .embedding
            .as_ref()
            .map_or(EmbeddingView::Code, |s| s.view);
        // A vector is reused when the same file holds a chunk with the same embedded text.
        let mut old_vectors: HashMap<(&str, Cow<'_, str>), &Vec<f32>> = HashMap::new();
        for row in &old {
            if let Some(v) = &row.vector {
                old_vectors.insert(
                    (&row.chunk.relative_path, embedding_input(&row.chunk, view)),
                    v,
                );
            }
        }
        // A symbol's history belongs to its name, not its text: an edit keeps it (the
        // commit that describes the edit arrives with the history's next read).
        let old_history: HashMap<(&str, &str), &str> = old
            .iter()
            .filter(|row| !row.history.is_empty())
            .map(|row| {
                (
                    (row.chunk.relative_path.as_str(), row.chunk.qualified_name()),
                    row.history.as_str(),
                )
            })
            .collect();
        let mut rows = Vec::new();
        for file in changed {
            for chunk in &file.chunks {
                let vector = old_vectors
                    .get(&(chunk.relative_path.as_str(), embedding_input(chunk, view)))
                    .map(|v| (*v).clone());
                stats.vectors_reused += vector.is_some() as usize;
                let history = old_history
                    .get(&(chunk.relative_path.as_str(), chunk.qualified_name()))
                    .map_or_else(String::new, |h| h.to_string());
                rows.push(StoredChunk {
                    chunk: chunk.clone(),
                    content_hash: file.record.content_hash.clone(),
                    last_modified: file.record.mtime_ns / 1_000_000,
                    vector,
                    history,
                });
            }
        }
        // Blueprint step 5: a touched file's rows keep everything but `lastModified`.
        let touched_paths: Vec<String> = touched
            .iter()
            .filter(|r| r.chunk_count > 0)
            .map(|r| r.path.clone())
            .collect();
        if !touched_paths.is_empty() {
            let mtimes: HashMap<&str, i64> = touched
                .iter()
                .map(|r| (r.path.as_str(), r.mtime_ns / 1_000_000))
                .collect();
            for mut row in self
                .chunks(Some(&in_list("relativePath", &touched_paths)))
                .await?
            {
                row.last_modified = mtimes[row.chunk.relative_path.as_str()];
                rows.push(row);
            }
        }
        if with_vectors && !rewritten.is_empty() {
            let cascaded = self.cascade(&old, &rows, rewritten).await?;
            stats.chunks_cascaded = cascaded.len();
            // A touched file's rows are already in the batch: drop their vector there
            // rather than sending the same id twice.
            let position: HashMap<String, usize> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.chunk.id.clone(), i))
                .collect();
            for row in cascaded {
                match position.get(&row.chunk.id) {
                    Some(&i) => rows[i].vector = None,
                    None => rows.push(row),
                }
            }
        }
        if rows.is_empty() {
            let deleted = self.count(&in_rewritten).await?;
            self.chunks
                .delete(in_rewritten.as_str())
                .await
                .map_err(self.lance("deleting chunks"))?;
            stats.chunks_deleted += deleted as u64;
        } else {
            let batch = self.chunk_batch(&rows).await?;
            let mut merge = self.chunks.merge_insert(&["id"]);
            merge
                .when_matched_update_all(None)
                .when_not_matched_insert_all();
            if !rewritten.is_empty() {
                merge.when_not_matched_by_source_delete(Some(in_rewritten));
            }
            let result = merge
                .execute(reader(batch))
                .await
                .map_err(self.lance("writing chunks"))?;
            stats.chunks_written += result.num_inserted_rows + result.num_updated_rows;
            stats.chunks_deleted += result.num_deleted_rows;
        }
        stats.commits += 1;
        self.check_pending |= with_vectors;
        Ok(())
    }

    /// Blueprint step 7: a chunk's `embeddingText` that contains a signature which no
    /// longer exists was embedded with stale text. Those chunks (outside the rewritten
    /// files, which are re-cut anyway) come back with no vector, to be re-embedded.
    async fn cascade(
        &self,
        old: &[StoredChunk],
        new: &[StoredChunk],
        rewritten: &[String],
    ) -> Result<Vec<StoredChunk>, StoreError> {
        let still: HashSet<(&str, &str)> = new
            .iter()
            .map(|r| (r.chunk.relative_path.as_str(), r.chunk.signature.as_str()))
            .collect();
        let gone: HashSet<(&str, &str)> = old
            .iter()
            .filter(|r| carries_signature(&r.chunk))
            .filter(|r| {
                !still.contains(&(r.chunk.relative_path.as_str(), r.chunk.signature.as_str()))
            })
            .map(|r| (r.chunk.name.as_str(), r.chunk.signature.as_str()))
            .collect();
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        // The name narrows the scan inside LanceDB; containment of the whole signature is
        // checked here (LIKE would need every `%`, `_` and quote of a signature escaped).
        let names: Vec<String> = gone
            .iter()
            .map(|(name, _)| format!("embeddingText LIKE '%{}%'", like_safe(name)))
            .collect();
        let filter = format!(
            "({}) AND NOT ({})",
            names.join(" OR "),
            in_list("relativePath", rewritten)
        );
        let mut out = Vec::new();
        for mut row in self.chunks(Some(&filter)).await? {
            if gone
                .iter()
                .any(|(_, sig)| row.chunk.embedding_text.contains(sig))
            {
                row.vector = None;
                out.push(row);
            }
        }
        out.sort_by(|a, b| a.chunk.id.cmp(&b.chunk.id));
        Ok(out)
    }

    /// Touched files' rows as stored (facts included) with their new mtime.
    async fn moved_file_rows(&self, touched: &[FileRecord]) -> Result<Vec<FileRecord>, StoreError> {
        if touched.is_empty() {
            return Ok(Vec::new());
        }
        let paths: Vec<String> = touched.iter().map(|r| r.path.clone()).collect();
        let mtimes: HashMap<&str, i64> = touched
            .iter()
            .map(|r| (r.path.as_str(), r.mtime_ns))
            .collect();
        let batches: Vec<RecordBatch> = self
            .files
            .query()
            .only_if(in_list("path", &paths))
            .batches(self, "querying files")
            .await?;
        let mut out = Vec::new();
        for batch in &batches {
            for mut record in batch_to_files(batch).map_err(|r| self.corrupt(r))? {
                record.mtime_ns = mtimes[record.path.as_str()];
                out.push(record);
            }
        }
        Ok(out)
    }

    /// The files table, after the chunk rows it describes: one commit replacing the rows of
    /// changed and touched files and deleting those of removed files.
    async fn write_files(
        &mut self,
        rows: &[FileRecord],
        removed: &[String],
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        if rows.is_empty() && removed.is_empty() {
            return Ok(());
        }
        if rows.is_empty() {
            self.files
                .delete(in_list("path", removed).as_str())
                .await
                .map_err(self.lance("deleting files"))?;
        } else {
            let batch = files_to_batch(rows).map_err(|e| self.corrupt(e.to_string()))?;
            let mut merge = self.files.merge_insert(&["path"]);
            merge
                .when_matched_update_all(None)
                .when_not_matched_insert_all();
            if !removed.is_empty() {
                merge.when_not_matched_by_source_delete(Some(in_list("path", removed)));
            }
            merge
                .execute(reader(batch))
                .await
                .map_err(self.lance("writing files"))?;
        }
        stats.commits += 1;
        for path in removed {
            self.known.remove(path);
        }
        for row in rows {
            let mut record = row.clone();
            record.facts = None;
            self.known.insert(record.path.clone(), record);
        }
        self.files_version = self
            .files
            .version()
            .await
            .map_err(self.lance("reading the files table version"))?;
        Ok(())
    }

    async fn embed_pending_locked(
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
        let total = self.count("vector IS NULL").await?;
        let mut done = 0;
        while done < total {
            let batch_rows = self
                .query_chunks(Some("vector IS NULL"), Some(self.options.embed_batch))
                .await?;
            if batch_rows.is_empty() {
                break;
            }
            let rows = self.with_vectors(embedder, &spec, batch_rows).await?;
            self.update_chunk_rows(&rows, "writing vectors").await?;
            stats.commits += 1;
            stats.chunks_embedded += rows.len();
            done += rows.len();
            observer.event(SyncEvent::Embedded { done, total });
        }
        self.check_pending = false;
        if done > 0 {
            self.maintain(stats).await?;
        }
        Ok(())
    }

    /// `rows` as one Arrow batch in the chunk table's schema (which carries the vector
    /// column's dimension), ready for a `merge_insert`.
    /// Replaces existing chunk rows (same ids) with `rows` in one commit; inserts nothing.
    pub(crate) async fn update_chunk_rows(
        &self,
        rows: &[StoredChunk],
        action: &'static str,
    ) -> Result<(), StoreError> {
        let batch = self.chunk_batch(rows).await?;
        let mut merge = self.chunks.merge_insert(&["id"]);
        merge.when_matched_update_all(None);
        merge
            .execute(reader(batch))
            .await
            .map_err(self.lance(action))?;
        Ok(())
    }

    pub(crate) async fn chunk_batch(
        &self,
        rows: &[StoredChunk],
    ) -> Result<RecordBatch, StoreError> {
        let schema = self
            .chunks
            .schema()
            .await
            .map_err(self.lance("reading the schema"))?;
        chunks_to_batch(&schema, rows).map_err(|e| self.corrupt(e.to_string()))
    }

    /// Brings a marked (half-written) index back to a state a clean sync would reach:
    /// chunk rows that do not belong to the recorded content of an indexed file are
    /// deleted and their files forgotten, so this sync parses them again.
    async fn repair(&mut self, stats: &mut SyncStats) -> Result<(), StoreError> {
        stats.repaired = true;
        let batches: Vec<RecordBatch> = self
            .chunks
            .query()
            .select(Select::columns(&["relativePath", "contentHash"]))
            .batches(self, "scanning chunks")
            .await?;
        let mut counts: HashMap<(String, String), u32> = HashMap::new();
        for batch in &batches {
            let paths = text_column(batch, "relativePath").map_err(|r| self.corrupt(r))?;
            let hashes = text_column(batch, "contentHash").map_err(|r| self.corrupt(r))?;
            for i in 0..batch.num_rows() {
                *counts
                    .entry((paths.value(i).to_string(), hashes.value(i).to_string()))
                    .or_default() += 1;
            }
        }
        let mut stale: HashSet<String> = HashSet::new();
        for ((path, hash), _) in &counts {
            if self.known.get(path).is_none_or(|k| &k.content_hash != hash) {
                stale.insert(path.clone());
            }
        }
        for (path, record) in &self.known {
            let rows = counts
                .get(&(path.clone(), record.content_hash.clone()))
                .copied()
                .unwrap_or(0);
            if rows != record.chunk_count {
                stale.insert(path.clone());
            }
        }
        if !stale.is_empty() {
            let stale: Vec<String> = stale.into_iter().collect();
            self.chunks
                .delete(in_list("relativePath", &stale).as_str())
                .await
                .map_err(self.lance("deleting orphaned chunks"))?;
            self.files
                .delete(in_list("path", &stale).as_str())
                .await
                .map_err(self.lance("deleting stale files"))?;
            stats.commits += 2;
            for path in &stale {
                self.known.remove(path);
            }
            tracing::info!(
                "repaired {} files left half-written by an interrupted sync",
                stale.len()
            );
        }
        self.set_dirty(false, stats).await?;
        self.needs_repair = false;
        self.check_pending = true;
        Ok(())
    }

    async fn meta_dirty(&self) -> Result<bool, StoreError> {
        self.meta
            .checkout_latest()
            .await
            .map_err(self.lance("refreshing the meta table"))?;
        Ok(self
            .count_in(&self.meta, "key = 'dirty' AND value = '1'")
            .await?
            > 0)
    }

    async fn set_dirty(&mut self, dirty: bool, stats: &mut SyncStats) -> Result<(), StoreError> {
        self.set_meta("dirty", if dirty { "1" } else { "0" })
            .await?;
        stats.commits += 1;
        Ok(())
    }

    pub(crate) async fn set_meta(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let batch = meta_to_batch(&[(key, value)]).map_err(|e| self.corrupt(e.to_string()))?;
        let mut merge = self.meta.merge_insert(&["key"]);
        merge
            .when_matched_update_all(None)
            .when_not_matched_insert_all();
        merge
            .execute(reader(batch))
            .await
            .map_err(self.lance("writing the meta table"))?;
        Ok(())
    }

    /// Compaction when writes have piled up; the full-text indexes brought up to date once
    /// `fts_catch_up_rows` rows escape them; the full-text index as soon as there are rows;
    /// a vector index once exact search would be slow.
    async fn maintain(&mut self, stats: &mut SyncStats) -> Result<(), StoreError> {
        let indices = self
            .chunks
            .list_indices()
            .await
            .map_err(self.lance("listing indices"))?;
        let has = |column: &str| {
            indices
                .iter()
                .any(|i| i.columns.iter().any(|c| c == column))
        };
        let rows = self
            .chunks
            .count_rows(None)
            .await
            .map_err(self.lance("counting"))?;
        for column in FULL_TEXT_COLUMNS {
            if rows > 0 && !has(column) {
                self.chunks
                    .create_index(&[column], Index::FTS(lexical_tokens()))
                    .execute()
                    .await
                    .map_err(self.lance("building the full-text index"))?;
                stats.commits += 1;
            }
        }
        // Rewritten rows (an edit, a vector written by the background embedder) leave the
        // full-text indexes and are searched flat — tokenized at every query — until the
        // indexes catch up. Past a few hundred such rows a query would pay more for them
        // than the catch-up costs once.
        let mut stale = 0;
        for index in indices.iter().filter(|i| {
            i.columns
                .iter()
                .any(|c| FULL_TEXT_COLUMNS.contains(&c.as_str()))
        }) {
            if let Some(s) = self
                .chunks
                .index_stats(&index.name)
                .await
                .map_err(self.lance("reading index statistics"))?
            {
                stale = stale.max(s.num_unindexed_rows);
            }
        }
        if stale >= self.options.fts_catch_up_rows.max(1) {
            self.chunks
                .optimize(OptimizeAction::Index(Default::default()))
                .await
                .map_err(self.lance("updating the full-text indexes"))?;
            stats.commits += 1;
        }
        if self.options.embedding.is_some()
            && !has("vector")
            && self.count("vector IS NOT NULL").await? >= self.options.vector_index_min_rows
        {
            self.chunks
                .create_index(&["vector"], Index::Auto)
                .execute()
                .await
                .map_err(self.lance("building the vector index"))?;
            stats.commits += 1;
        }
        let version = self
            .chunks
            .version()
            .await
            .map_err(self.lance("reading the version"))?;
        let compacted = self
            .meta_value("compacted")
            .await?
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if version.saturating_sub(compacted) >= self.options.compact_every {
            self.chunks
                .optimize(OptimizeAction::All)
                .await
                .map_err(self.lance("compacting chunks"))?;
            self.files
                .optimize(OptimizeAction::All)
                .await
                .map_err(self.lance("compacting files"))?;
            let version = self
                .chunks
                .version()
                .await
                .map_err(self.lance("reading the version"))?;
            self.set_meta("compacted", &version.to_string()).await?;
            stats.commits += 3;
        }
        Ok(())
    }

    pub(crate) async fn meta_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        let batches: Vec<RecordBatch> = self
            .meta
            .query()
            .only_if(format!("key = {}", sql_string(key)))
            .batches(self, "reading meta")
            .await?;
        for batch in &batches {
            if let Some((_, v)) = crate::schema::batch_to_meta(batch)
                .map_err(|r| self.corrupt(r))?
                .into_iter()
                .next()
            {
                return Ok(Some(v));
            }
        }
        Ok(None)
    }

    pub(crate) async fn count(&self, filter: &str) -> Result<usize, StoreError> {
        self.count_in(&self.chunks, filter).await
    }

    async fn count_in(&self, table: &lancedb::Table, filter: &str) -> Result<usize, StoreError> {
        table
            .count_rows(Some(filter.to_string()))
            .await
            .map_err(self.lance("counting rows"))
    }
}

/// Reads, hashes and (when the content changed) parses the moved files on all cores.
/// `Ok` is a touched file (same content, new mtime); `Err` carries a changed one.
fn process_files(
    files: &[SourceFile],
    known_hashes: &HashMap<String, String>,
    max_bytes: u64,
    observer: &dyn SyncObserver,
) -> Vec<Result<FileRecord, Processed>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(files.len().max(1));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let (next, done) = (&next, &done);
                scope.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(file) = files.get(i) else { break };
                        let item = process_file(file, known_hashes.get(&file.path), max_bytes);
                        if item.is_err() {
                            observer.event(SyncEvent::Parsed {
                                done: done.fetch_add(1, Ordering::Relaxed) + 1,
                                total: files.len(),
                            });
                        }
                        out.push((i, item));
                    }
                    out
                })
            })
            .collect();
        let mut all: Vec<_> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("file processing does not panic"))
            .collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, item)| item).collect()
    })
}

fn process_file(
    file: &SourceFile,
    known_hash: Option<&String>,
    max_bytes: u64,
) -> Result<FileRecord, Processed> {
    let mut record = FileRecord {
        path: file.path.clone(),
        mtime_ns: file.mtime_ns,
        size: file.size,
        content_hash: String::new(),
        status: FileStatus::Indexed,
        chunk_count: 0,
        facts: None,
    };
    let skipped = |mut record: FileRecord, why: String| {
        record.status = FileStatus::Skipped(why);
        Err(Processed {
            record,
            chunks: Vec::new(),
        })
    };
    if file.size > max_bytes {
        record.content_hash = format!("size:{}", file.size);
        return skipped(
            record,
            format!("{} bytes is over the {max_bytes}-byte limit", file.size),
        );
    }
    let bytes = match std::fs::read(&file.abs) {
        Ok(bytes) => bytes,
        Err(e) => return skipped(record, format!("unreadable ({e})")),
    };
    record.content_hash = hex(&Sha256::digest(&bytes));
    if known_hash == Some(&record.content_hash) {
        // Touched, not changed (git checkout, `touch`): keep every row.
        return Ok(record);
    }
    let source = match codectx_parser::decode_source(bytes, &file.path) {
        Ok(source) => source,
        Err(e) => {
            // The reason is shown next to the path already.
            let reason = e.to_string();
            let reason = reason
                .strip_prefix(&format!("{}: ", file.path))
                .unwrap_or(&reason);
            return skipped(record, reason.to_string());
        }
    };
    if looks_minified(&file.path, &source) {
        return skipped(record, "minified".into());
    }
    // One parse feeds both the chunks and the graph facts.
    let (parsed, facts) = codectx_parser::parse_with(&file.path, &source, |parsed, program| {
        let facts = codectx_graph::facts::facts_of(&parsed, program);
        (parsed, facts)
    });
    if parsed.status != ParseStatus::Clean {
        record.status = FileStatus::Recovered;
    }
    let chunks = codectx_chunker::chunk_file(&parsed, &source, &file.abs.to_string_lossy());
    record.facts = serde_json::to_string(&facts).ok();
    record.chunk_count = chunks.len() as u32;
    Err(Processed { record, chunks })
}

/// Kinds whose signature other code can quote; imports, statements and comments have none.
fn carries_signature(chunk: &CodeChunk) -> bool {
    !chunk.signature.is_empty() && !chunk.node_kind.is_root_item()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn reader(
    batch: RecordBatch,
) -> Box<dyn lancedb::arrow::arrow_array::RecordBatchReader + Send> {
    let schema = batch.schema();
    Box::new(RecordBatchIterator::new(vec![Ok(batch)], schema))
}

/// A SQL string literal.
pub(crate) fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// `column IN ('a', 'b', …)` for a LanceDB filter.
pub(crate) fn in_list(column: &str, values: &[String]) -> String {
    let values: Vec<String> = values.iter().map(|v| sql_string(v)).collect();
    format!("{column} IN ({})", values.join(", "))
}

/// A fragment safe inside a LIKE pattern: identifiers only (wildcards would widen the
/// match, which the exact containment check then narrows again).
fn like_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The text of `chunk` a model with `view` embeds.
pub(crate) fn embedding_input(chunk: &CodeChunk, view: EmbeddingView) -> Cow<'_, str> {
    match view {
        EmbeddingView::Code => Cow::Borrowed(&chunk.embedding_text),
        EmbeddingView::NaturalLanguage => Cow::Owned(codectx_chunker::natural_language_view(chunk)),
    }
}
