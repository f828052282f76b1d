//! The blueprint's incremental sync (see the crate documentation): the walk, what moved,
//! then each step in its module — `process` (parse), `write` (rows), `history`, `maintain` —
//! inside the `dirty` mark that makes a killed sync repairable.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use codectx_chunker::CodeChunk;
use codectx_files::{SourceFile, Walked};

use crate::Embedder;
use crate::history::HistoryStep;
use crate::lock::{DIRTY_FILE, LOCK_FILE, WriteLock};
use crate::parse_cache::{Key, PackWriter, ParseCache};
use crate::process::{
    Moved, NewParses, Processed, Sharing, off_the_runtime, on_all_cores, process_files,
};
use crate::report::{SyncEvent, SyncObserver, SyncStats};
use crate::schema::{FileStatus, chunks_digest};
use crate::sql::{in_list, text_column};
use crate::stamps::{self, Stamp};
use crate::store::{CollectBatches, FACTS_KEY, LISTINGS_FILE};
use crate::{Store, StoreError, SyncChanges};
use lancedb::arrow::arrow_array::RecordBatch;
use lancedb::query::{QueryBase, Select};

/// Where a sync looks for changed files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SyncScope {
    /// The whole tree, walked.
    #[default]
    Tree,
    /// Only the files directly inside these directories (relative to the root,
    /// `/`-separated, `""` for the root itself): a file watcher saw changes there and
    /// nowhere else. A file of the index that lies directly in one of them and is not found
    /// there is removed; every other file stands. The whole tree is walked anyway when the
    /// index is empty, needed a repair or holds facts of another extractor version.
    Directories(BTreeSet<String>),
}

impl SyncScope {
    /// Widens the scope to hold `other` too (changes seen at two moments, one sync).
    pub fn include(&mut self, other: SyncScope) {
        match (&mut *self, other) {
            (SyncScope::Tree, _) => {}
            (_, SyncScope::Tree) => *self = SyncScope::Tree,
            (SyncScope::Directories(mine), SyncScope::Directories(theirs)) => mine.extend(theirs),
        }
    }
}

/// A file's version read back from the rows for the shared parses
/// (`Store::replaced_parses`): its entry's key, encoded facts and chunks.
type ReadBack = (Key, Vec<u8>, Vec<CodeChunk>);

/// A parse waiting for the version it replaces ([`Processed::unshared`]): its entry's key,
/// recovered flag, facts and chunks.
type Waiting<'p> = (Key, bool, &'p [u8], &'p mut [CodeChunk]);

/// What [`Store::share_replaced`] adds for one file.
enum ShareJob<'p> {
    /// The version replaced, then the parse that replaced it, if it waited.
    Replaced(ReadBack, Option<Waiting<'p>>),
    /// A parse whose replaced version could not be read back: on its own.
    Alone(Waiting<'p>),
}

impl Store {
    /// Brings the index up to date with the files on disk, then (given an embedder)
    /// embeds every chunk that has no vector. Returns what it did.
    pub async fn sync(
        &mut self,
        embedder: Option<&dyn Embedder>,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, StoreError> {
        self.sync_in(&SyncScope::Tree, embedder, observer).await
    }

    /// [`Store::sync`], looking for changed files only where `scope` says.
    pub async fn sync_in(
        &mut self,
        scope: &SyncScope,
        embedder: Option<&dyn Embedder>,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, StoreError> {
        let started = Instant::now();
        let _lock = self.lock_writer().await?;
        // Another process may have synced since we last looked: what it changed counts as
        // changed by this sync for whoever holds a view of the index (an engine's project).
        let mut changed_elsewhere = self.reload_known().await?;
        self.refresh_chunks().await?;
        let mut stats = SyncStats::default();
        let mut scope = scope;
        if self.needs_repair || self.meta_dirty().await? {
            self.repair(&mut stats).await?;
            scope = &SyncScope::Tree;
        }
        stats.timings.look = started.elapsed();
        // The whole tree is walked before the history step, which starts from the version
        // a branch switch may restore.
        let walked = if matches!(scope, SyncScope::Tree) {
            let started = Instant::now();
            let walked = self.walk_tree().await;
            stats.timings.walk = started.elapsed();
            let started = Instant::now();
            changed_elsewhere.extend(
                self.revisit_nearest_version(&walked, observer, &mut stats)
                    .await?,
            );
            stats.timings.revisit = started.elapsed();
            changed_elsewhere.sort();
            changed_elsewhere.dedup();
            Some(walked)
        } else {
            None
        };
        let started = Instant::now();
        let mut history = self.begin_history().await?;
        stats.timings.history = started.elapsed();
        self.sync_structure(scope, walked, &mut history, observer, &mut stats)
            .await?;
        self.cloned_now = false;
        if !changed_elsewhere.is_empty() {
            if let Some(changes) = &mut self.changes {
                changes.elsewhere = changed_elsewhere.clone();
            }
            stats.changed_paths.extend(changed_elsewhere);
            stats.changed_paths.sort();
            stats.changed_paths.dedup();
        }
        let started = Instant::now();
        self.finish_history(history, &mut stats).await?;
        stats.timings.history += started.elapsed();
        if stats.history_rows > 0 {
            let started = Instant::now();
            self.maintain(&mut stats).await?;
            stats.timings.maintain += started.elapsed();
        }
        if let Some(embedder) = embedder {
            self.embed_pending_locked(embedder, observer, &mut stats)
                .await?;
        }
        // After the vectors: a restored version then needs none.
        let started = Instant::now();
        self.keep_head_version(false).await;
        stats.timings.revisit += started.elapsed();
        Ok(stats)
    }

    /// Follows the chunk table to its latest version without looking at the files: all a
    /// handle needs after another handle of the index wrote vectors only (an embedding
    /// step). Its searches then see them; its files, and a project built on them, stand.
    pub async fn follow_vectors(&self) -> Result<(), StoreError> {
        self.refresh_chunks().await
    }

    /// Sees the chunk rows other handles (another process, a background embedder) wrote.
    pub(crate) async fn refresh_chunks(&self) -> Result<(), StoreError> {
        self.chunks
            .checkout_latest()
            .await
            .map_err(self.lance("refreshing the chunk table"))
    }

    /// The write lock of a local index (object stores have none: LanceDB's commit
    /// conflict detection is what guards them).
    pub(crate) async fn lock_writer(&self) -> Result<Option<WriteLock>, StoreError> {
        let lock = match &self.local_dir {
            Some(dir) => {
                Some(WriteLock::acquire(&dir.join(LOCK_FILE), self.options.lock_timeout).await?)
            }
            None => None,
        };
        // The meta table's writes under the lock start from the last writer's version (its
        // upkeep may have removed the one this handle was on).
        self.meta
            .checkout_latest()
            .await
            .map_err(self.lance("refreshing the meta table"))?;
        Ok(lock)
    }

    /// Walks the whole tree, rereading only the directories that changed since the last
    /// walk (`walk.listings`).
    pub(crate) async fn walk_tree(&mut self) -> Walked {
        let root = self.root.clone();
        let selection = self.options.files.clone();
        let saved = self.local_dir.as_ref().map(|d| d.join(LISTINGS_FILE));
        let listings = self.listings.take();
        let (walked, listings) = tokio::task::spawn_blocking(move || {
            let mut listings = listings.unwrap_or_else(|| read_listings(saved.as_deref()));
            let walked = selection.walk_reusing(&root, &mut listings);
            if listings.read_again() {
                save_listings(saved.as_deref(), &listings);
            }
            (walked, listings)
        })
        .await
        .expect("the walk does not panic");
        self.listings = Some(listings);
        walked
    }

    /// Records the module configurations a walk found (in `directories`, or everywhere)
    /// and says whether any differs from what this handle's last walk there found.
    fn note_module_configs(
        &mut self,
        found: &[SourceFile],
        directories: Option<&BTreeSet<String>>,
    ) -> bool {
        let found: HashMap<String, (i64, u64)> = found
            .iter()
            .map(|f| (f.path.clone(), (f.mtime_ns, f.size)))
            .collect();
        let Some(seen) = &mut self.module_configs else {
            self.module_configs = Some(found);
            return false;
        };
        let Some(dirs) = directories else {
            let before = std::mem::replace(seen, found);
            return before != *seen;
        };
        let before: HashMap<String, (i64, u64)> = seen
            .extract_if(|path, _| dirs.contains(codectx_files::directory_of(path)))
            .collect();
        let changed = before != found;
        seen.extend(found);
        changed
    }

    /// Syncs the files `scope` names; `walked` is the walk of the whole tree when the caller
    /// made it already.
    pub(crate) async fn sync_structure(
        &mut self,
        scope: &SyncScope,
        walked: Option<Walked>,
        history: &mut HistoryStep,
        observer: &dyn SyncObserver,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let started = Instant::now();
        // Only this sync's own changes may be handed out.
        let keep = self.options.hand_over_changes;
        self.changes = keep.then(|| SyncChanges {
            complete: self.known.is_empty(),
            ..SyncChanges::default()
        });
        let directories = match scope {
            SyncScope::Directories(dirs) if !self.known.is_empty() && !self.facts_stale => {
                Some(dirs)
            }
            _ => None,
        };
        let disk = match (directories, walked) {
            (None, Some(walked)) => walked,
            (None, None) => self.walk_tree().await,
            (Some(dirs), _) => {
                let root = self.root.clone();
                let selection = self.options.files.clone();
                let dirs: Vec<PathBuf> = dirs.iter().map(|dir| root.join(dir)).collect();
                tokio::task::spawn_blocking(move || {
                    let mut all = Walked::default();
                    for dir in dirs {
                        let found = selection.walk_directory(&root, &dir);
                        all.sources.extend(found.sources);
                        all.module_configs.extend(found.module_configs);
                    }
                    all
                })
                .await
                .expect("the walk does not panic")
            }
        };
        stats.timings.walk += started.elapsed();
        let configs_changed = self.note_module_configs(&disk.module_configs, directories);
        if let Some(changes) = &mut self.changes {
            changes.module_configs_changed = configs_changed;
        }
        let disk = disk.sources;

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
        let on_disk: HashSet<&str> = disk.iter().map(|f| f.path.as_str()).collect();
        let walked = |path: &str| {
            directories.is_none_or(|dirs| dirs.contains(codectx_files::directory_of(path)))
        };
        let removed: Vec<String> = self
            .known
            .keys()
            .filter(|p| walked(p) && !on_disk.contains(p.as_str()))
            .cloned()
            .collect();
        stats.files_removed = removed.len();
        stats.files_seen = match directories {
            None => disk.len(),
            // The files of the index, with those the walk found new or gone.
            Some(_) => {
                let new = disk
                    .iter()
                    .filter(|f| !self.known.contains_key(&f.path))
                    .count();
                self.known.len() + new - removed.len()
            }
        };
        stats.files_unchanged = stats.files_seen - moved.len();
        observer.event(SyncEvent::Enumerated {
            files: stats.files_seen,
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

        let started = Instant::now();
        let shared = self
            .shared_parses
            .get_or_init(|| {
                let dir = self.options.shared_parses_dir(&self.root)?;
                Some(ParseCache::new(dir))
            })
            .as_ref();
        let pack = shared.map(ParseCache::writer);
        // A build of every file shares none of its parses: its rows hold them. A new clone's
        // first sync replaces its seed's rows, which that index shares in its own time.
        let new_parses = if self.known.is_empty() || facts_stale {
            NewParses::Kept
        } else if self.cloned_now {
            NewParses::Added
        } else {
            NewParses::AfterReplaced
        };
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
            off_the_runtime(|| {
                // Packs other worktrees wrote since this handle's last sync.
                if let Some(shared) = shared {
                    shared.refresh();
                }
                let sharing = pack.as_ref().map(|pack| Sharing {
                    pack,
                    new: new_parses,
                });
                process_files(&moved, &known, max_bytes, keep, sharing, observer)
            })
        };
        let mut touched = Vec::new();
        let mut changed = Vec::new();
        for item in processed {
            match item {
                Moved::Touched(mut record) => {
                    // Same content: what the last parse found still holds.
                    if let Some(known) = self.known.get(&record.path) {
                        record.status = known.status.clone();
                        record.chunk_count = known.chunk_count;
                        record.chunks_digest = known.chunks_digest.clone();
                    }
                    touched.push(record)
                }
                Moved::Changed(p) => changed.push(p),
            }
        }
        if let Some(pack) = pack {
            if new_parses == NewParses::AfterReplaced {
                self.share_replaced(&pack, &mut changed, &removed).await;
            }
            off_the_runtime(|| pack.finish());
        }
        stats.timings.parse = started.elapsed();
        stats.files_touched = touched.len();
        stats.files_shared = changed.iter().filter(|p| p.shared).count();
        stats.files_skipped = changed
            .iter()
            .filter(|p| matches!(p.record.status, FileStatus::Skipped { .. }))
            .count();
        stats.files_parsed = changed.len() - stats.files_skipped - stats.files_shared;

        let rewritten: Vec<String> = changed
            .iter()
            .map(|p| p.record.path.clone())
            .chain(removed.iter().cloned())
            .collect();
        stats.changed_paths = rewritten.clone();
        stats.changed_paths.sort();
        if !rewritten.is_empty() {
            let started = Instant::now();
            self.set_dirty(true, stats).await?;
            stats.timings.marks += started.elapsed();
            observer.event(SyncEvent::MarkedDirty);
        }
        // The chunks as written, for the hand-over: writing consumes them.
        let kept_chunks: Vec<CodeChunk> = if keep {
            changed.iter().flat_map(|p| p.chunks.clone()).collect()
        } else {
            Vec::new()
        };
        if !rewritten.is_empty() {
            let started = Instant::now();
            let notes = self.history_notes(history).await;
            stats.timings.history += started.elapsed();
            let started = Instant::now();
            self.write_chunks(&mut changed, &rewritten, notes.as_ref(), stats)
                .await?;
            stats.timings.chunk_rows = started.elapsed();
            observer.event(SyncEvent::ChunksWritten);
        }
        let started = Instant::now();
        let mut file_rows = Vec::with_capacity(changed.len());
        let mut kept_facts = Vec::new();
        for p in changed {
            kept_facts.extend(p.facts.map(|f| (p.record.path.clone(), f)));
            file_rows.push(p.record);
        }

        // A touched file's row stays as its content was indexed. A local index keeps the new
        // stat data beside the table (`stamps`): a worktree's first sync touches every file,
        // and rewriting each row for its mtime made every clone of an index a copy of its
        // files table. An index on object storage rewrites the rows.
        let touched_stamps: Vec<Stamp> = if self.local_dir.is_some() {
            for record in &touched {
                if let Some(known) = self.known.get_mut(&record.path) {
                    known.mtime_ns = record.mtime_ns;
                    known.size = record.size;
                }
            }
            touched.iter().map(Stamp::of).collect()
        } else {
            file_rows.extend(self.moved_file_rows(&touched).await?);
            Vec::new()
        };
        self.write_files(&file_rows, &removed, stats).await?;
        if let Some(dir) = &self.local_dir {
            stamps::save(
                &dir.join(stamps::STAMPS_FILE),
                &touched_stamps,
                &rewritten,
                &self.known,
            );
        }
        if let Some(changes) = &mut self.changes {
            kept_facts.sort_by(|a, b| a.0.cmp(&b.0));
            changes.rewritten = stats.changed_paths.clone();
            changes.chunks = kept_chunks;
            changes.facts = kept_facts;
        }
        if facts_stale {
            self.set_meta(FACTS_KEY, &codectx_graph::facts::FACTS_VERSION.to_string())
                .await?;
            self.facts_stale = false;
        }
        stats.timings.file_rows = started.elapsed();
        observer.event(SyncEvent::FilesWritten);
        if !rewritten.is_empty() {
            let started = Instant::now();
            self.set_dirty(false, stats).await?;
            stats.timings.marks += started.elapsed();
            let started = Instant::now();
            self.maintain(stats).await?;
            stats.timings.maintain += started.elapsed();
        }
        observer.event(SyncEvent::Structural);
        Ok(())
    }

    /// Adds to the shared parses the versions this sync replaces (of changed or removed
    /// files) that no entry holds, read back from the index's rows, then the new versions
    /// that waited for them ([`Processed::unshared`]), compressed against them. A version
    /// with syntax errors stays out: its rows do not tell a recovered parse from one oxc
    /// gave up on, which is never shared. The cache is advisory: a failed read costs the
    /// entries, never the sync.
    async fn share_replaced(
        &self,
        pack: &PackWriter<'_>,
        changed: &mut [Processed],
        removed: &[String],
    ) {
        let replaced: Vec<String> = changed
            .iter()
            .map(|p| &p.record.path)
            .chain(removed)
            .filter(|path| {
                self.known.get(*path).is_some_and(|known| {
                    known.status == FileStatus::Indexed
                        && !pack
                            .cache()
                            .has(&ParseCache::key(path, &known.content_hash))
                })
            })
            .cloned()
            .collect();
        let mut old = match self.replaced_parses(&replaced).await {
            Ok(old) => old,
            Err(e) => {
                tracing::debug!("replaced versions not shared: {e}");
                HashMap::new()
            }
        };
        // One job per file: the version replaced, the one replacing it, or both.
        let mut jobs: Vec<ShareJob<'_>> = Vec::new();
        for p in changed.iter_mut() {
            let waiting = p.unshared.then(|| {
                let recovered = p.record.status == FileStatus::Recovered;
                let key = ParseCache::key(&p.record.path, &p.record.content_hash);
                let facts = p.record.facts.as_deref().unwrap_or_default();
                (key, recovered, facts, &mut p.chunks[..])
            });
            match (old.remove(&p.record.path), waiting) {
                (Some(replaced), waiting) => jobs.push(ShareJob::Replaced(replaced, waiting)),
                (None, Some(waiting)) => jobs.push(ShareJob::Alone(waiting)),
                (None, None) => {}
            }
        }
        jobs.extend(
            old.into_values()
                .map(|replaced| ShareJob::Replaced(replaced, None)),
        );
        off_the_runtime(|| {
            on_all_cores(jobs, |job| {
                // Our own rows go in; still, a bug of ours costs entries only.
                let shared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match job {
                    ShareJob::Replaced((key, facts, mut chunks), waiting) => {
                        pack.add_replaced((key, &facts, &mut chunks), waiting)
                    }
                    ShareJob::Alone((key, recovered, facts, chunks)) => {
                        pack.add(key, None, recovered, facts, chunks)
                    }
                }));
                if shared.is_err() {
                    tracing::debug!("a replaced version was not shared");
                }
            })
        });
    }

    /// The parses of the indexed versions of `paths`, as their rows and facts hold them:
    /// each one's entry key, encoded facts and chunks in the chunker's order. A file whose
    /// rows are not exactly its layout's, or with no facts, is left out.
    async fn replaced_parses(
        &self,
        paths: &[String],
    ) -> Result<HashMap<String, ReadBack>, StoreError> {
        if paths.is_empty() {
            return Ok(HashMap::new());
        }
        let mut rows: HashMap<String, Vec<(String, CodeChunk)>> = HashMap::new();
        for (key, chunk) in self.keyed_code_chunks_of_files(paths).await? {
            rows.entry(chunk.relative_path.clone())
                .or_default()
                .push((key, chunk));
        }
        let layouts = self.layouts();
        let mut out = HashMap::new();
        for (path, facts) in self.load_facts_of(paths).await? {
            let (Some(known), Some(layout)) = (self.known.get(&path), layouts.get(&path)) else {
                continue;
            };
            let rows = rows.remove(&path).unwrap_or_default();
            if let Some(chunks) = crate::layout::in_chunker_order(layout, rows) {
                let key = ParseCache::key(&path, &known.content_hash);
                out.insert(path, (key, facts.encode(), chunks));
            }
        }
        Ok(out)
    }

    /// Brings a marked (half-written) index back to a state a clean sync would reach: the
    /// files whose chunk rows are not those of their recorded content (their
    /// `chunksDigest`), and rows of no indexed file, are deleted and the files forgotten,
    /// so this sync parses them again.
    pub(crate) async fn repair(&mut self, stats: &mut SyncStats) -> Result<(), StoreError> {
        stats.repaired = true;
        let batches: Vec<RecordBatch> = self
            .chunks
            .query()
            .select(Select::columns(&["relativePath", "contentHash"]))
            .batches(self, "scanning chunks")
            .await?;
        let mut rows: HashMap<String, Vec<String>> = HashMap::new();
        for batch in &batches {
            let paths = text_column(batch, "relativePath").map_err(|r| self.corrupt(r))?;
            let hashes = text_column(batch, "contentHash").map_err(|r| self.corrupt(r))?;
            for i in 0..batch.num_rows() {
                rows.entry(paths.value(i).to_string())
                    .or_default()
                    .push(hashes.value(i).to_string());
            }
        }
        let digest_of =
            |path: &str| chunks_digest(rows.get(path).into_iter().flatten().map(String::as_str));
        let mut stale: HashSet<String> = rows
            .keys()
            .filter(|path| !self.known.contains_key(*path))
            .cloned()
            .collect();
        for (path, record) in &self.known {
            if digest_of(path) != record.chunks_digest {
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
        if self.local_dir.is_some() {
            // Indexes written before the mark became a file kept it in the meta table.
            self.set_meta("dirty", "0").await?;
        }
        self.needs_repair = false;
        self.check_pending = true;
        Ok(())
    }

    /// Whether a sync was interrupted between its dirty mark and the mark's clearing.
    pub(crate) async fn meta_dirty(&self) -> Result<bool, StoreError> {
        if let Some(dir) = &self.local_dir {
            return Ok(dir.join(DIRTY_FILE).exists());
        }
        // The meta table is at its latest version: the caller holds the write lock.
        Ok(self
            .count_in(&self.meta, "key = 'dirty' AND value = '1'")
            .await?
            > 0)
    }

    /// Sets or clears the dirty mark: a file beside the write lock in a local index (a
    /// LanceDB commit costs a few milliseconds, twice per sync), the meta table's `dirty`
    /// row on object storage. Both survive a killed process, which is all they guard.
    pub(crate) async fn set_dirty(
        &mut self,
        dirty: bool,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let Some(dir) = &self.local_dir else {
            self.set_meta("dirty", if dirty { "1" } else { "0" })
                .await?;
            stats.commits += 1;
            return Ok(());
        };
        let path = dir.join(DIRTY_FILE);
        let done = if dirty {
            std::fs::write(&path, b"a sync is writing, or was killed while it wrote\n")
        } else {
            std::fs::remove_file(&path).or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(e),
            })
        };
        done.map_err(|e| StoreError::Io {
            path,
            message: e.to_string(),
        })
    }
}

/// The listings saved at `path` by the last full walk; none (a full walk) when there are
/// none, they cannot be read, or the index is not local.
fn read_listings(path: Option<&std::path::Path>) -> codectx_files::Listings {
    path.and_then(|p| std::fs::read(p).ok())
        .map(|bytes| codectx_files::Listings::from_bytes(&bytes))
        .unwrap_or_default()
}

/// Saves `listings` at `path` whole or not at all ([`save_whole`]). Failing only costs the
/// next walk its reuse.
fn save_listings(path: Option<&std::path::Path>, listings: &codectx_files::Listings) {
    let Some(path) = path else {
        return;
    };
    if let Err(e) = save_whole(path, &listings.to_bytes()) {
        tracing::debug!(%e, "walk listings not saved");
    }
}

/// Writes `bytes` at `path` whole or not at all: beside it (named after it, so the index
/// directory's check knows it as its own), then renamed, so a reader never sees half of
/// them. Clears what a killed save left (a concurrent save that loses its file only fails).
pub(crate) fn save_whole(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let partial = path.with_file_name(format!("{name}.{}.partial", std::process::id()));
    let saved = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, path));
    if saved.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    let left = path.parent().and_then(|dir| std::fs::read_dir(dir).ok());
    for entry in left.into_iter().flatten().filter_map(Result::ok) {
        let left_name = entry.file_name();
        let left_name = left_name.to_string_lossy();
        if left_name.starts_with(name.as_str()) && left_name.ends_with(".partial") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    saved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_are_saved_whole_and_a_killed_save_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LISTINGS_FILE);
        let stale = dir.path().join(format!("{LISTINGS_FILE}.4242.partial"));
        std::fs::write(&stale, b"half").unwrap();
        std::fs::create_dir_all(dir.path().join("root/src")).unwrap();
        std::fs::write(dir.path().join("root/src/a.ts"), "let a;\n").unwrap();
        let mut listings = codectx_files::Listings::default();
        codectx_files::FileSelection::default()
            .walk_reusing(&dir.path().join("root"), &mut listings);

        save_listings(Some(&path), &listings);
        assert!(!stale.exists());
        assert_eq!(read_listings(Some(&path)).to_bytes(), listings.to_bytes());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "the listings and the tree, nothing else"
        );
        // Unreadable listings are none: the next walk is a full one.
        std::fs::write(&path, b"damaged").unwrap();
        assert!(read_listings(Some(&path)).is_empty());
    }
}
