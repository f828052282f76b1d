//! Steps 4–6 of a sync: the chunk rows of changed and removed files (rows that come out
//! as stored left in place, vectors carried over where the embedded text is unchanged), the
//! signature cascade, and the files table.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use codectx_chunker::CodeChunk;
use codectx_embed::EmbeddingView;
use lancedb::arrow::arrow_array::RecordBatch;
use lancedb::query::QueryBase;

use crate::embedding::embedding_input;
use crate::history::NotesBySymbol;
use crate::process::Processed;
use crate::report::SyncStats;
use crate::schema::{FileRecord, StoredChunk, batch_to_files, chunks_to_batch, files_to_batch};
use crate::sql::{in_list, reader, text_column};
use crate::store::CollectBatches;
use crate::{Store, StoreError};

impl Store {
    /// Replaces the rows of every changed and removed file (a delete, then an append),
    /// leaving in place those that come out exactly as stored, carrying vectors over where
    /// `embeddingText` did not change and dropping those the cascade reaches. Takes the
    /// chunks out of `changed` (rows own them, not a copy).
    ///
    /// A touched file (new mtime, same content) keeps its rows as they are: the mtime that
    /// triggers a check is its files row's, and a row's `lastModified` is the mtime its
    /// content was indexed at. So a worktree's first sync, which touches every file, keeps
    /// the rows it shares with the index it was cloned from (`clone.rs`).
    pub(crate) async fn write_chunks(
        &mut self,
        changed: &mut [Processed],
        rewritten: &[String],
        notes: Option<&NotesBySymbol<'_>>,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        let in_rewritten = in_list("relativePath", rewritten);
        let with_vectors = self.options.embedding.is_some();
        // The rewritten files' stored rows: whole with a model (vectors are reused by
        // embedded text, and the cascade reads signatures), else only what deciding which
        // rows stay needs (a late worktree's 8,900 rows read whole: 94 ms).
        let (whole, heads) = if rewritten.is_empty() {
            (Vec::new(), Vec::new())
        } else if with_vectors {
            (self.rows(Some(&in_rewritten), None).await?, Vec::new())
        } else {
            (Vec::new(), self.row_heads(&in_rewritten).await?)
        };
        let old: Vec<OldRow<'_>> = whole
            .iter()
            .map(OldRow::whole)
            .chain(heads.iter().map(OldRow::head))
            .collect();
        let read = started.elapsed();
        let view = self
            .options
            .embedding
            .as_ref()
            .map_or(EmbeddingView::Code, |s| s.view);
        // A vector is reused when the same file holds a chunk with the same embedded text.
        let mut old_vectors: HashMap<(&str, Cow<'_, str>), &Vec<f32>> = HashMap::new();
        for row in &whole {
            if let Some(v) = &row.vector {
                old_vectors.insert(
                    (&row.chunk.relative_path, embedding_input(&row.chunk, view)),
                    v,
                );
            }
        }
        // A symbol's history belongs to its name, not its text: an edit keeps it, and takes
        // the notes of the commits this sync read (`notes`).
        let old_history: HashMap<(&str, &str), &str> = old
            .iter()
            .filter(|row| !row.history.is_empty())
            .map(|row| ((row.path, row.qualified_name), row.history))
            .collect();
        let mut rows = Vec::new();
        for file in changed {
            let keyed = std::mem::take(&mut file.rows);
            for (chunk, (key, content_hash)) in
                std::mem::take(&mut file.chunks).into_iter().zip(keyed)
            {
                let vector = old_vectors
                    .get(&(chunk.relative_path.as_str(), embedding_input(&chunk, view)))
                    .map(|v| (*v).clone());
                stats.vectors_reused += vector.is_some() as usize;
                let had = old_history
                    .get(&(chunk.relative_path.as_str(), chunk.qualified_name()))
                    .copied()
                    .unwrap_or_default();
                // The notes this sync's history read brings are written with the row, not
                // in a second write of it.
                let history = match notes {
                    Some(notes) => notes.history(&chunk.relative_path, chunk.qualified_name(), had),
                    None => had.to_string(),
                };
                rows.push(StoredChunk {
                    chunk,
                    key,
                    content_hash,
                    last_modified: file.record.mtime_ns / 1_000_000,
                    vector,
                    history,
                });
            }
        }
        if with_vectors && !rewritten.is_empty() {
            let cascaded = self.cascade(&whole, &rows, rewritten).await?;
            stats.chunks_cascaded = cascaded.len();
            // A cascaded row already in the batch (a changed file's) loses its vector
            // there rather than being sent twice.
            let position: HashMap<String, usize> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.key.clone(), i))
                .collect();
            for row in cascaded {
                match position.get(&row.key) {
                    Some(&i) => rows[i].vector = None,
                    None => rows.push(row),
                }
            }
        }
        // A changed file's row that comes out exactly as stored (same chunk, notes and
        // vector) stays where it is, however far its lines moved (they are the file's
        // layout): an edit rewrites the chunks it changed, not the whole file, and the
        // table versions other worktrees' indexes hold keep sharing it (`clone.rs`). A key
        // stored or cut twice is always rewritten.
        let mut stored: HashMap<&str, Option<&OldRow<'_>>> = HashMap::new();
        for row in &old {
            stored
                .entry(row.key)
                .and_modify(|twice| *twice = None)
                .or_insert(Some(row));
        }
        let mut cut: HashMap<&str, usize> = HashMap::new();
        for row in &rows {
            *cut.entry(row.key.as_str()).or_default() += 1;
        }
        let unchanged: HashSet<String> = rows
            .iter()
            .filter(|row| cut[row.key.as_str()] == 1)
            .filter(|row| {
                stored
                    .get(row.key.as_str())
                    .copied()
                    .flatten()
                    .is_some_and(|was| {
                        was.content_hash == row.content_hash
                            && was.history == row.history
                            && was.vector == row.vector.as_ref()
                    })
            })
            .map(|row| row.key.clone())
            .collect();
        // Old rows whose key the new cut does not have are gone for good.
        stats.chunks_deleted += old.iter().filter(|r| !cut.contains_key(r.key)).count() as u64;
        drop((stored, cut));
        rows.retain(|row| !unchanged.contains(&row.key));
        stats.chunks_kept += unchanged.len() as u64;
        // Every row written replaces what the index holds for its file but the rows kept:
        // the old rows read above (under the write lock, so all of them) that were not kept,
        // and the cascaded rows of other files, deleted by key (the path narrows the scan
        // through its index), or by path for a rewritten file that keeps none. Two commits inside the dirty mark; a merge on `key` that also
        // deletes unmatched rows joins against the whole table and costs more than both on a
        // one-file edit. (A filter naming the kept rows instead, `NOT (key IN …)` with most of
        // a late worktree's 9,000 rows, took 155 ms to delete 1,100.)
        let written_paths: HashSet<&str> = rewritten.iter().map(String::as_str).collect();
        let cascaded = rows
            .iter()
            .filter(|r| !written_paths.contains(r.chunk.relative_path.as_str()));
        let doomed: Vec<(&str, &str)> = old
            .iter()
            .filter(|r| !unchanged.contains(r.key))
            .map(|r| (r.path, r.key))
            .chain(cascaded.map(|r| (r.chunk.relative_path.as_str(), r.key.as_str())))
            .collect();
        let replaced = doomed.len();
        if replaced > 0 {
            // A rewritten file that keeps no row goes by its path alone: thousands of keys
            // in the filter cost more than the scan they narrow (a year-old worktree of
            // vite: 5,500 rows by key, 127 ms).
            let keeping: HashSet<&str> = old
                .iter()
                .filter(|r| unchanged.contains(r.key))
                .map(|r| r.path)
                .collect();
            let (mut whole, mut paths, mut keys) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
            for &(path, key) in &doomed {
                if written_paths.contains(path) && !keeping.contains(path) {
                    whole.insert(path);
                } else {
                    paths.insert(path);
                    keys.push(key);
                }
            }
            let mut parts = Vec::new();
            if !whole.is_empty() {
                parts.push(in_list(
                    "relativePath",
                    &whole.into_iter().collect::<Vec<_>>(),
                ));
            }
            if !keys.is_empty() {
                parts.push(format!(
                    "({} AND {})",
                    in_list("relativePath", &paths.into_iter().collect::<Vec<_>>()),
                    in_list("key", &keys)
                ));
            }
            let filter = parts.join(" OR ");
            self.chunks
                .delete(filter.as_str())
                .await
                .map_err(self.lance("deleting chunks"))?;
            stats.commits += 1;
        }
        let deleted = started.elapsed();
        // The old rows of the rewritten files, and the cascaded rows of others.
        self.superseded(replaced);
        stats.chunks_written += rows.len() as u64;
        if !rows.is_empty() {
            let schema = self
                .chunks
                .schema()
                .await
                .map_err(self.lance("reading the schema"))?;
            self.chunks
                .add(row_slices(schema, rows))
                .execute()
                .await
                .map_err(self.lance("writing chunks"))?;
            stats.commits += 1;
        }
        tracing::debug!(
            old_rows = old.len(),
            ?read,
            ?deleted,
            "chunk rows read, deleted and written: {:?}",
            started.elapsed()
        );
        self.check_pending |= with_vectors;
        Ok(())
    }

    /// Blueprint step 7: a chunk's `embeddingText` that contains a signature which no
    /// longer exists was embedded with stale text. Those chunks (outside the rewritten
    /// files, which are re-cut anyway) come back with no vector, to be re-embedded.
    pub(crate) async fn cascade(
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
        for mut row in self.rows(Some(&filter), None).await? {
            if gone
                .iter()
                .any(|(_, sig)| row.chunk.embedding_text.contains(sig))
            {
                row.vector = None;
                out.push(row);
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Touched files' rows as stored (facts included) with their new mtime.
    pub(crate) async fn moved_file_rows(
        &self,
        touched: &[FileRecord],
    ) -> Result<Vec<FileRecord>, StoreError> {
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
    pub(crate) async fn write_files(
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
        {
            // In place: the map is copied only while a reader still holds the one it read.
            let mut guard = self.layouts.write().unwrap_or_else(|e| e.into_inner());
            let layouts = Arc::make_mut(&mut guard);
            for path in removed {
                self.known.remove(path);
                layouts.remove(path);
            }
            for row in rows {
                let mut record = row.clone();
                record.facts = None;
                layouts.insert(record.path.clone(), std::mem::take(&mut record.layout));
                self.known.insert(record.path.clone(), record);
            }
        }
        self.files_version = self
            .files
            .version()
            .await
            .map_err(self.lance("reading the files table version"))?;
        Ok(())
    }

    /// Counts `rows` chunk rows replaced, towards the compaction that removes them.
    fn superseded(&self, rows: usize) {
        self.superseded_rows
            .fetch_add(rows, std::sync::atomic::Ordering::Relaxed);
    }

    /// Replaces existing chunk rows (same keys) with `rows` in one commit; inserts nothing.
    pub(crate) async fn update_chunk_rows(
        &self,
        rows: &[StoredChunk],
        action: &'static str,
    ) -> Result<(), StoreError> {
        let batch = self.chunk_batch(rows).await?;
        let mut merge = self.chunks.merge_insert(&["key"]);
        merge.when_matched_update_all(None);
        merge
            .execute(reader(batch))
            .await
            .map_err(self.lance(action))?;
        self.superseded(rows.len());
        Ok(())
    }

    /// `rows` as one Arrow batch in the chunk table's schema (which carries the vector
    /// column's dimension), ready for a `merge_insert`.
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
}

/// What deciding whether a stored row stays needs of it.
struct OldRow<'a> {
    key: &'a str,
    path: &'a str,
    /// `CodeChunk::qualified_name`: the symbol its notes belong to.
    qualified_name: &'a str,
    content_hash: &'a str,
    history: &'a str,
    vector: Option<&'a Vec<f32>>,
}

impl<'a> OldRow<'a> {
    fn whole(row: &'a StoredChunk) -> Self {
        OldRow {
            key: &row.key,
            path: &row.chunk.relative_path,
            qualified_name: row.chunk.qualified_name(),
            content_hash: &row.content_hash,
            history: &row.history,
            vector: row.vector.as_ref(),
        }
    }

    fn head(head: &'a RowHead) -> Self {
        OldRow {
            key: &head.key,
            path: &head.path,
            qualified_name: codectx_chunker::qualified_name(
                &head.breadcrumb,
                &head.path,
                &head.name,
            ),
            content_hash: &head.content_hash,
            history: &head.history,
            vector: None,
        }
    }
}

/// A stored row's key, file, names, content hash and notes, read without its text.
struct RowHead {
    key: String,
    path: String,
    breadcrumb: String,
    name: String,
    content_hash: String,
    history: String,
}

impl Store {
    /// The [`RowHead`]s of the rows `filter` matches.
    async fn row_heads(&self, filter: &str) -> Result<Vec<RowHead>, StoreError> {
        const COLUMNS: [&str; 6] = [
            "key",
            "relativePath",
            "breadcrumb",
            "name",
            "contentHash",
            "history",
        ];
        let batches: Vec<RecordBatch> = self
            .on_live_version(|| async {
                self.chunks
                    .query()
                    .only_if(filter)
                    .select(lancedb::query::Select::columns(&COLUMNS))
                    .batches(self, "reading chunk rows")
                    .await
            })
            .await?;
        let mut out = Vec::new();
        for batch in &batches {
            let column = |name| text_column(batch, name).map_err(|reason| self.corrupt(reason));
            let [key, path, breadcrumb, name, hash, history] = [
                column(COLUMNS[0])?,
                column(COLUMNS[1])?,
                column(COLUMNS[2])?,
                column(COLUMNS[3])?,
                column(COLUMNS[4])?,
                column(COLUMNS[5])?,
            ];
            out.extend((0..batch.num_rows()).map(|i| RowHead {
                key: key.value(i).to_owned(),
                path: path.value(i).to_owned(),
                breadcrumb: breadcrumb.value(i).to_owned(),
                name: name.value(i).to_owned(),
                content_hash: hash.value(i).to_owned(),
                history: history.value(i).to_owned(),
            }));
        }
        Ok(out)
    }
}

/// Rows written per record batch by [`row_slices`].
const WRITE_SLICE: usize = 4096;

/// `rows` as record batches of at most [`WRITE_SLICE`] rows, each made when the writer
/// asks for it and each slice's rows freed once converted: writing a whole repository
/// never holds a second, columnar copy of every row (on babel, 75,000 chunks, that copy was
/// the cold index's peak).
fn row_slices(
    schema: lancedb::arrow::arrow_schema::SchemaRef,
    rows: Vec<StoredChunk>,
) -> Box<dyn lancedb::arrow::arrow_array::RecordBatchReader + Send> {
    let mut rows = rows.into_iter();
    let slices = {
        let schema = schema.clone();
        std::iter::from_fn(move || {
            let slice: Vec<StoredChunk> = rows.by_ref().take(WRITE_SLICE).collect();
            (!slice.is_empty()).then(|| chunks_to_batch(&schema, &slice))
        })
    };
    Box::new(lancedb::arrow::arrow_array::RecordBatchIterator::new(
        slices, schema,
    ))
}

/// Kinds whose signature other code can quote; imports, statements and comments have none.
fn carries_signature(chunk: &CodeChunk) -> bool {
    !chunk.signature.is_empty() && !chunk.node_kind.is_root_item()
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
