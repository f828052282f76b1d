//! Index upkeep after writes: the full-text indexes (built once, caught up when rewritten
//! rows escape them), the path indexes, compaction, and the vector index once the table
//! is large enough.

use std::sync::atomic::Ordering;

use lance_index::optimize::OptimizeOptions;
use lancedb::index::{Index, IndexConfig};
use lancedb::table::OptimizeAction;

use crate::clone::{SHARED_COMPACTED_FRAGMENT_ROWS, drop_gone_clones, shares_files};
use crate::report::SyncStats;
use crate::store::RecordedCount;
use crate::text_index::{FULL_TEXT_COLUMNS, term_index};
use crate::{Store, StoreError};

/// The full-text indexes are built anew, not updated, once rows that escaped them are at
/// least one in this many of the table's rows; the table is compacted once this handle
/// replaced as many.
const REBUILD_SHARE: usize = 4;

/// On a large table, rows that escaped the full-text indexes are folded in once they are
/// one in this many of its rows (or `fts_catch_up_rows`, whichever is more). An update
/// costs about the same however few rows escaped (babel's 74,922 rows: 0.46 s), and a
/// server's embedding steps, each rewriting 64 rows, ran one every eighth step. A query
/// pays for each escaped row instead (about 25 µs on babel), so at this share one pays
/// an eighth of an update at most.
const CATCH_UP_SHARE: usize = 32;

impl Store {
    /// Compaction when writes have piled up; the full-text indexes brought up to date once
    /// `fts_catch_up_rows` rows escape them; the full-text index as soon as there are rows;
    /// a vector index once exact search would be slow. Upkeep keeps every row as it is, so
    /// the counts recorded for the version it starts from hold for the one it ends at.
    pub(crate) async fn maintain(&mut self, stats: &mut SyncStats) -> Result<(), StoreError> {
        let before = self.chunk_version().await?;
        self.maintain_tables(stats).await?;
        self.carry_counts(before).await
    }

    async fn maintain_tables(&mut self, stats: &mut SyncStats) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
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
        if rows > 0 {
            let missing: Vec<&str> = FULL_TEXT_COLUMNS.into_iter().filter(|c| !has(c)).collect();
            stats.commits += self
                .build_full_text(&missing, "building the full-text index")
                .await?;
            // A sync reads and replaces the rows of a few files by path: a lookup with
            // these, a scan of the whole table without (one file's facts on vite: 1.5 ms
            // against 20 ms).
            if !has("relativePath") {
                self.build_index(
                    &self.chunks,
                    "relativePath",
                    Index::BTree(Default::default()),
                    "indexing chunk paths",
                )
                .await?;
                stats.commits += 1;
            }
            let file_indices = self
                .files
                .list_indices()
                .await
                .map_err(self.lance("listing indices"))?;
            if !file_indices.iter().any(|i| i.columns == ["path"]) {
                self.build_index(
                    &self.files,
                    "path",
                    Index::BTree(Default::default()),
                    "indexing file paths",
                )
                .await?;
                stats.commits += 1;
            }
        }
        // Rewritten rows (an edit, a vector written by the background embedder) leave the
        // full-text indexes and are searched flat — tokenized at every query — until the
        // indexes catch up. Past a few hundred such rows a query would pay more for them
        // than the catch-up costs once.
        let mut stale = 0;
        for index in indices.iter().filter(|i| is_full_text(i)) {
            if let Some(s) = self
                .chunks
                .index_stats(&index.name)
                .await
                .map_err(self.lance("reading index statistics"))?
            {
                stale = stale.max(s.num_unindexed_rows);
            }
        }
        let catch_up_from = self
            .options
            .fts_catch_up_rows
            .max(1)
            .max(rows / CATCH_UP_SHARE);
        if stale >= catch_up_from {
            tracing::debug!(
                stale,
                rows,
                "folding rewritten rows into the full-text indexes"
            );
            if stale.saturating_mul(REBUILD_SHARE) >= rows {
                // An update merges the rewritten rows in but keeps the postings of the rows
                // they replaced in the index's BM25 statistics (document count, lengths,
                // term frequencies). After a sync that rewrote much of the table (a new
                // extractor version re-parses every file, a branch switch) the ranking was
                // measurably not a clean build's (hono: a query's third result 0.23 against
                // 0.13). Building anew costs one tokenizing pass of the table and gives
                // exactly a clean build's index.
                stats.commits += self
                    .build_full_text(&FULL_TEXT_COLUMNS, "rebuilding the full-text index")
                    .await?;
            }
            // The full-text indexes take the escaped rows as a segment of their own: merging
            // rewrote each whole index, and an index with clones keeps every version a clone
            // holds (vite's main index after nine moves with a clone each: 32 MB of
            // full-text files merging, 13 MB appending). A rebuild above folds the segments
            // into one again. The path index (rows it does not cover are scanned at every
            // lookup by path) is merged: a B-tree segment appended to the main index was
            // pruned while a clone's version named it (docs/benchmarks.md).
            let (full_text, others): (Vec<&IndexConfig>, Vec<&IndexConfig>) =
                indices.iter().partition(|i| is_full_text(i));
            for (names, options) in [
                (full_text, OptimizeOptions::append()),
                (others, OptimizeOptions::default()),
            ] {
                if names.is_empty() {
                    continue;
                }
                let options = options.index_names(names.iter().map(|i| i.name.clone()).collect());
                self.chunks
                    .optimize(OptimizeAction::Index(options))
                    .await
                    .map_err(self.lance("updating the indexes"))?;
                stats.commits += 1;
            }
        }
        tracing::debug!("upkeep of the indexes: {:?}", started.elapsed());
        if self.options.embedding.is_some()
            && !has("vector")
            && self
                .recorded_count(RecordedCount::EmbeddedChunks, false)
                .await?
                >= self.options.vector_index_min_rows
        {
            self.build_index(
                &self.chunks,
                "vector",
                Index::Auto,
                "building the vector index",
            )
            .await?;
            stats.commits += 1;
        }
        let version = self.chunk_version().await?;
        let compacted = self
            .meta_value("compacted")
            .await?
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        // Rows replaced in a quarter of the table (a branch switch, a new extractor, a
        // history read in full, vectors filled) are as many superseded rows on disk: they
        // go now, not up to `compact_every` commits later (vite's main index after a switch
        // and back: 8 MB).
        let superseded = self.superseded_rows.load(Ordering::Relaxed);
        if version.saturating_sub(compacted) >= self.options.compact_every
            || (superseded >= self.options.fts_catch_up_rows.max(1)
                && superseded.saturating_mul(REBUILD_SHARE) >= rows)
        {
            // Clones that are gone release the versions they held, before those are pruned.
            if let Some(dir) = &self.local_dir {
                let tables = [&self.chunks, &self.files, &self.meta];
                let gone = drop_gone_clones(dir, tables)
                    .await
                    .map_err(self.lance("dropping the tags of removed clones"))?;
                if gone > 0 {
                    tracing::info!("{gone} clones of this index are gone");
                }
            }
            // A clone's large fragments are the main index's files, and a main index's are
            // those its clones name: compaction would copy them.
            let shared = self.local_dir.as_deref().is_some_and(shares_files);
            // The meta table too: every recorded count and history head is a small commit.
            for (table, action) in [
                (&self.chunks, "compacting chunks"),
                (&self.files, "compacting files"),
                (&self.meta, "compacting the meta table"),
            ] {
                let [compact, prune] = upkeep_steps(shared);
                if !shared
                    || fragment_count(table).await.map_err(self.lance(action))?
                        >= SHARED_MERGE_FROM_FRAGMENTS
                {
                    table.optimize(compact).await.map_err(self.lance(action))?;
                }
                table.optimize(prune).await.map_err(self.lance(action))?;
            }
            self.superseded_rows.store(0, Ordering::Relaxed);
            tracing::debug!("upkeep up to the compaction's end: {:?}", started.elapsed());
            let version = self.chunk_version().await?;
            self.set_meta("compacted", &version.to_string()).await?;
            stats.commits += 3;
        }
        Ok(())
    }

    /// Builds the full-text indexes of `columns` side by side (on vite 46, 110 and 31 ms
    /// alone; one after another the cold index took 0.02 s longer, and babel's peak 10 MiB
    /// less); returns the commits.
    async fn build_full_text(
        &self,
        columns: &[&str],
        action: &'static str,
    ) -> Result<usize, StoreError> {
        let builds = columns
            .iter()
            .map(|column| self.build_index(&self.chunks, column, Index::FTS(term_index()), action));
        Ok(futures::future::try_join_all(builds).await?.len())
    }

    /// Builds `index` on `column` of `table` (`action` names it in errors): one commit.
    async fn build_index(
        &self,
        table: &lancedb::Table,
        column: &str,
        index: Index,
        action: &'static str,
    ) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        table
            .create_index(&[column], index)
            .execute()
            .await
            .map_err(self.lance(action))?;
        tracing::debug!("{action} on {column}: {:?}", started.elapsed());
        Ok(())
    }
}

/// Whether `index` is one of the full-text indexes.
fn is_full_text(index: &IndexConfig) -> bool {
    index
        .columns
        .iter()
        .any(|c| FULL_TEXT_COLUMNS.contains(&c.as_str()))
}

/// Compaction merges fragments of fewer rows than this with their neighbours (and rewrites
/// any fragment a tenth of whose rows were deleted). Lance's default, about a million, made
/// a cold index's one large fragment a candidate too, so each compaction rewrote the whole
/// table to take in a few small ones: on babel 1.1-1.3 s every 16 commits of a background
/// embedding step of 64 rows.
const COMPACTED_FRAGMENT_ROWS: usize = 16_384;

/// An index sharing files merges its small fragments only once it has this many
/// fragments. Each merge copies them, and the versions clones hold keep the originals
/// beside the copy: on vite's tasks flow (main moved nine times, a clone at each move)
/// such copies were a fifth of main's chunk data. Reads of a few dozen fragments cost
/// about what one costs (the per-path lookups go through the B-tree).
const SHARED_MERGE_FROM_FRAGMENTS: usize = 32;

/// How many fragments `table`'s version has: from its manifest (the statistics would
/// count every fragment's rows too).
async fn fragment_count(table: &lancedb::Table) -> lancedb::Result<usize> {
    match table.as_native() {
        Some(native) => native.count_fragments().await,
        None => Ok(table.stats().await?.fragment_stats.num_fragments),
    }
}

/// What a compaction does to a table: merge small files and remove the files only
/// superseded versions use. The indexes are brought up to date by the catch-up above, when
/// enough rows escaped them: updating them here too rewrote babel's full-text indexes every
/// 16 commits (0.4-0.7 s each), whatever the catch-up's threshold. LanceDB's default keeps
/// superseded versions a week: every row a sync, a history read or the embedder rewrote
/// stays on disk that long (eslint embedded: 133 MB, of which 50 MB are the live version).
/// They go now, under the write lock, so no writer of this index is mid-commit; a reader
/// still on one of them reads the latest version instead (`Store::on_live_version`). Files
/// no version names yet (a commit of another process in flight) are younger than a week and
/// stay.
///
/// An index sharing files with others (`clone.rs`: a clone, or an index with clones)
/// merges only small fragments, and never rewrites one for its deleted rows: a shared file
/// stays on disk while any index names it, so its copy would be kept beside it. (With a
/// rewrite once half a fragment's rows were deleted, vite's worktrees nine commits behind
/// main each copied the rest of main's fragment: 13 MB a clone, 11 MB without.)
fn upkeep_steps(shared: bool) -> [OptimizeAction; 2] {
    let defaults = lancedb::table::CompactionOptions::default();
    [
        OptimizeAction::Compact {
            options: lancedb::table::CompactionOptions {
                target_rows_per_fragment: if shared {
                    SHARED_COMPACTED_FRAGMENT_ROWS
                } else {
                    COMPACTED_FRAGMENT_ROWS
                },
                materialize_deletions: !shared,
                ..defaults
            },
            remap_options: None,
        },
        prune_superseded(),
    ]
}

/// Removes the files only superseded versions of a table use, keeping files no version
/// names yet (a commit in flight is younger than LanceDB's week for those).
pub(crate) fn prune_superseded() -> OptimizeAction {
    OptimizeAction::Prune {
        older_than: Some(lancedb::table::optimize::Duration::zero()),
        delete_unverified: Some(false),
        error_if_tagged_old_versions: None,
    }
}
