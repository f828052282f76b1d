//! The history step of a sync: commit descriptions from `codectx-history` written into the
//! `history` column of the symbols they changed.
//!
//! The column is the only copy: a symbol's notes live on its rows and follow its name when
//! its file is re-chunked (see `write_chunks`). A sync reads only commits newer than the
//! head it recorded (`historyHead` in the meta table) and prepends their notes; a full read
//! (first sync, rewritten history, a rename) replaces every row's notes. The read comes
//! before the sync writes: the rows of the files it rewrites are written with their notes,
//! and only other rows are written again for them. Rows are written
//! before the head is recorded, so a killed sync reads the same commits again, and notes
//! already present are not repeated.

use std::collections::{BTreeSet, HashMap, HashSet};

use codectx_chunker::qualified_name;
use codectx_history::{HistoryOff, HistoryRead, Repository, SymbolNote, probe};
use lancedb::query::{QueryBase, Select};

use crate::report::SyncStats;
use crate::schema::HISTORY_SEPARATOR;
use crate::sql::{in_list, text_column};
use crate::store::{CollectBatches, HISTORY_HEAD_KEY, HistoryStatus, RecordedCount};
use crate::{Store, StoreError};

/// Notes kept per symbol, newest first: the latest changes describe what the code does now.
pub const MAX_NOTES_PER_SYMBOL: usize = 10;

impl Store {
    /// Whether the index carries history, as of the last sync.
    pub fn history(&self) -> &HistoryStatus {
        &self.history
    }

    /// What the index records of history, without syncing: the head read and the symbols
    /// with notes, or why history is off for this root.
    pub async fn recorded_history(&self) -> Result<HistoryStatus, StoreError> {
        if let Some(head) = self
            .meta_value(HISTORY_HEAD_KEY)
            .await?
            .filter(|h| !h.is_empty())
        {
            let symbols = self
                .recorded_count(RecordedCount::AnnotatedSymbols, false)
                .await?;
            return Ok(HistoryStatus::On { head, symbols });
        }
        Ok(match probe(&self.root, &self.options.history) {
            Ok(_) => HistoryStatus::NotRead,
            Err(off) => HistoryStatus::Off(off),
        })
    }

    /// Starts the history step's read, which the sync joins before it writes any row
    /// ([`Store::join_history`]): it runs on a thread of its own beside the walk and the
    /// parse (a worktree of vite behind its clone's head reads 3,700 commits from the memo,
    /// 120 ms). The notes it brings for symbols of files the sync rewrites go into those
    /// rows as they are written ([`HistoryStep::notes`]), so the apply that follows
    /// rewrites only other files' rows. (Written afterwards, each changed file's rows were
    /// written twice, and an index with clones kept both copies: the version a clone names
    /// holds them.)
    pub(crate) async fn begin_history(&mut self) -> Result<HistoryStep, StoreError> {
        // Under the write lock, whose taking checked out the meta table's latest version: a
        // catch-up on another handle may have recorded the head since.
        let recorded = self.recorded_head().await?;
        if recorded.is_none()
            && self.options.defer_history
            && probe(&self.root, &self.options.history).is_ok()
        {
            return Ok(HistoryStep::Deferred);
        }
        let reading = self.start_history_read(recorded.clone());
        Ok(HistoryStep::Reading { recorded, reading })
    }

    /// The notes the rows a sync writes take ([`HistoryStep::notes`]), once the read
    /// [`Store::begin_history`] started is joined.
    pub(crate) async fn history_notes<'s>(
        &mut self,
        step: &'s mut HistoryStep,
    ) -> Option<NotesBySymbol<'s>> {
        self.join_history(step).await;
        step.notes()
    }

    /// Waits for the read [`Store::begin_history`] started, if it is still going.
    async fn join_history(&mut self, step: &mut HistoryStep) {
        *step = match std::mem::replace(step, HistoryStep::Deferred) {
            HistoryStep::Reading { recorded, reading } => HistoryStep::Read {
                recorded,
                read: self.finish_history_read(reading).await,
            },
            other => other,
        };
    }

    /// Writes the notes of `step` into the rows that do not hold them yet, and records the
    /// head read.
    pub(crate) async fn finish_history(
        &mut self,
        step: HistoryStep,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let (recorded, read) = match step {
            HistoryStep::Deferred => {
                self.history_searched = false;
                self.history = HistoryStatus::Pending;
                return Ok(());
            }
            HistoryStep::Reading { recorded, reading } => {
                (recorded, self.finish_history_read(reading).await)
            }
            HistoryStep::Read { recorded, read } => (recorded, read),
        };
        self.apply_history(recorded, read, stats).await
    }

    /// The history head the index recorded, if any.
    async fn recorded_head(&self) -> Result<Option<String>, StoreError> {
        Ok(self
            .meta_value(HISTORY_HEAD_KEY)
            .await?
            .filter(|h| !h.is_empty()))
    }

    /// Reads the commits after `since` (all of them without), off the async threads: a git
    /// walk and the parses of past file versions. Needs no lock.
    async fn read_history(&mut self, since: Option<String>) -> Result<HistoryRead, HistoryOff> {
        let reading = self.start_history_read(since);
        self.finish_history_read(reading).await
    }

    /// [`Store::read_history`]'s walk, started on a blocking thread; the repository found
    /// is this handle's again once [`Store::finish_history_read`] joins it.
    fn start_history_read(&mut self, since: Option<String>) -> HistoryReading {
        let root = self.root.clone();
        let options = self.options.history.clone();
        let found = self.repository.take();
        HistoryReading(tokio::task::spawn_blocking(move || {
            if let Some(repository) = found {
                let read = repository.read(since.as_deref(), &options);
                if read.is_ok() {
                    return (read, Some(repository));
                }
                // The repository moved or changed under us: find it again before saying
                // history is off (that would drop every note).
            }
            match Repository::open(&root, &options) {
                Ok(repository) => (
                    repository.read(since.as_deref(), &options),
                    Some(repository),
                ),
                Err(off) => (Err(off), None),
            }
        }))
    }

    /// Waits for the read [`Store::start_history_read`] started and keeps the repository
    /// it found for the next.
    async fn finish_history_read(
        &mut self,
        reading: HistoryReading,
    ) -> Result<HistoryRead, HistoryOff> {
        let (read, repository) = reading.0.await.expect("the history walk does not panic");
        self.repository = repository;
        read
    }

    /// Writes what [`Store::read_history`] read after `recorded` (under the write lock).
    async fn apply_history(
        &mut self,
        recorded: Option<String>,
        read: Result<HistoryRead, HistoryOff>,
        stats: &mut SyncStats,
    ) -> Result<(), StoreError> {
        let read = match read {
            Ok(read) => read,
            Err(off) => {
                if recorded.is_some() {
                    // History was on and is not any more: the index goes back to what it
                    // is without it. The rows whose notes go are rewritten, so they count:
                    // upkeep folds them into the full-text indexes (babel: 15,102 rows
                    // left out made every query tokenize them, 0.4 s per CLI search).
                    stats.history_rows = self
                        .rewrite_history(&HistoryRead {
                            full: true,
                            ..HistoryRead::default()
                        })
                        .await?;
                    self.set_meta(HISTORY_HEAD_KEY, "").await?;
                    stats.commits += 1;
                }
                self.history_searched = false;
                tracing::info!("history is off: {off}");
                self.history = HistoryStatus::Off(off);
                return Ok(());
            }
        };
        stats.history_commits = read.commits_read;
        let new_head = recorded.as_deref() != Some(read.head.as_str());
        if new_head {
            stats.history_rows = self.rewrite_history(&read).await?;
            if stats.history_rows > 0 {
                stats.commits += 1;
            }
            self.set_meta(HISTORY_HEAD_KEY, &read.head).await?;
        }
        // Counting the annotated symbols scans the chunk table: a sync that changed no row
        // (no commit, no file, nothing from another process) keeps the last count.
        let rows_changed = new_head
            || stats.chunks_written > 0
            || stats.chunks_deleted > 0
            || stats.repaired
            || !stats.changed_paths.is_empty();
        if !rows_changed
            && let HistoryStatus::On { head, .. } = &self.history
            && *head == read.head
        {
            return Ok(());
        }
        // Recorded only by a sync that changed no row: the version it counts at is the one
        // the next runs find, where after a change the upkeep or the embedding that follow
        // would make the record stale at once (and each record is a commit).
        let symbols = self
            .recorded_count(RecordedCount::AnnotatedSymbols, !rows_changed)
            .await?;
        self.history_searched = symbols > 0;
        self.history = HistoryStatus::On {
            head: read.head,
            symbols,
        };
        Ok(())
    }

    /// A handle that does the first history read a sync left
    /// ([`StoreOptions::defer_history`](crate::StoreOptions::defer_history)), on a second
    /// handle of this index; `None` when no read is pending.
    pub async fn history_catch_up(&self) -> Result<Option<HistoryCatchUp>, StoreError> {
        if !matches!(self.history, HistoryStatus::Pending) {
            return Ok(None);
        }
        let options = crate::StoreOptions {
            defer_history: false,
            ..self.options.clone()
        };
        Ok(Some(HistoryCatchUp {
            store: Store::open(&self.root, options).await?,
        }))
    }

    /// Writes `read`'s notes into the rows of the symbols they name (replacing every row's
    /// notes when the read is full); returns the rows written. Rows that already hold them
    /// (written by this sync, see [`Store::begin_history`]) are left as they are.
    async fn rewrite_history(&mut self, read: &HistoryRead) -> Result<usize, StoreError> {
        let notes = NotesBySymbol::of(read);
        let files: Vec<String> = notes.files().map(str::to_owned).collect();
        if files.is_empty() && !read.full {
            return Ok(0);
        }
        // Which rows change is read from the columns that name a symbol and hold its notes
        // (of every row when the read is full): a full read gives most rows the notes they
        // have (a late worktree of vite: 104 of 12,249 rows change), and whole rows are
        // mostly text (their read took 110 ms).
        let started = std::time::Instant::now();
        let mut query = self.chunks.query();
        if !read.full {
            query = query.only_if(in_list("relativePath", &files));
        }
        let batches: Vec<lancedb::arrow::arrow_array::RecordBatch> = query
            .select(Select::columns(&[
                "key",
                "relativePath",
                "breadcrumb",
                "name",
                "history",
            ]))
            .batches(self, "reading history")
            .await?;
        let mut changed: HashMap<String, String> = HashMap::new();
        let mut changed_files: BTreeSet<String> = BTreeSet::new();
        let mut rows_read = 0;
        for batch in &batches {
            let column = |name| text_column(batch, name).map_err(|reason| self.corrupt(reason));
            let (keys, paths) = (column("key")?, column("relativePath")?);
            let (breadcrumbs, names) = (column("breadcrumb")?, column("name")?);
            let histories = column("history")?;
            for row in 0..batch.num_rows() {
                rows_read += 1;
                let path = paths.value(row);
                let name = qualified_name(breadcrumbs.value(row), path, names.value(row));
                let had = histories.value(row);
                let history = notes.history(path, name, had);
                if history != had {
                    changed.insert(keys.value(row).to_owned(), history);
                    changed_files.insert(path.to_owned());
                }
            }
        }
        tracing::debug!(
            full = read.full,
            rows_read,
            changed = changed.len(),
            "rows whose notes change: {:?}",
            started.elapsed()
        );
        if changed.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = changed.keys().cloned().collect();
        let changed_files: Vec<String> = changed_files.into_iter().collect();
        // The path narrows the read through its index; the keys pick the rows.
        let filter = format!(
            "{} AND {}",
            in_list("relativePath", &changed_files),
            in_list("key", &keys)
        );
        let mut rows = self.rows(Some(&filter), None).await?;
        for row in &mut rows {
            // By key, as `update_chunk_rows` writes them (a key stored twice takes the notes
            // on both rows).
            if let Some(history) = changed.get(&row.key) {
                row.history.clone_from(history);
            }
        }
        self.update_chunk_rows(&rows, "writing history").await?;
        Ok(rows.len())
    }
}

/// A history read going on beside a sync ([`Store::begin_history`]).
pub(crate) struct HistoryReading(
    tokio::task::JoinHandle<(Result<HistoryRead, HistoryOff>, Option<Repository>)>,
);

/// The history step of one sync: its read, joined before the sync writes a row.
pub(crate) enum HistoryStep {
    /// The first read is left to a [`HistoryCatchUp`].
    Deferred,
    /// The commits after `recorded` (all of them without) are being read.
    Reading {
        recorded: Option<String>,
        reading: HistoryReading,
    },
    /// The commits after `recorded` (all of them without), or why history is off.
    Read {
        recorded: Option<String>,
        read: Result<HistoryRead, HistoryOff>,
    },
}

impl HistoryStep {
    /// The notes the rows written before [`Store::finish_history`] take; `None` when the
    /// step changes no row's notes (deferred, nothing new read, history off and it was
    /// never on). Asked through [`Store::history_notes`], which joins a read still going.
    fn notes(&self) -> Option<NotesBySymbol<'_>> {
        match self {
            HistoryStep::Deferred | HistoryStep::Reading { .. } => None,
            HistoryStep::Read { recorded, read } => match read {
                Ok(read) if recorded.as_deref() != Some(read.head.as_str()) => {
                    Some(NotesBySymbol::of(read))
                }
                Ok(_) => None,
                // History was on and is not any more: every row loses its notes.
                Err(_) => recorded.is_some().then(NotesBySymbol::none),
            },
        }
    }
}

/// A history read's notes by file and symbol: what a row's `history` becomes once the
/// read is applied.
pub(crate) struct NotesBySymbol<'a> {
    /// The read replaces every row's notes, rather than adding to them.
    full: bool,
    /// file → qualified name → notes.
    by_file: HashMap<&'a str, HashMap<&'a str, Vec<&'a SymbolNote>>>,
}

impl<'a> NotesBySymbol<'a> {
    fn of(read: &'a HistoryRead) -> Self {
        let mut by_file: HashMap<&str, HashMap<&str, Vec<&SymbolNote>>> = HashMap::new();
        for note in &read.notes {
            by_file
                .entry(note.file.as_str())
                .or_default()
                .entry(note.qualified_name.as_str())
                .or_default()
                .push(note);
        }
        NotesBySymbol {
            full: read.full,
            by_file,
        }
    }

    /// No notes, replacing all: history turned off.
    fn none() -> Self {
        NotesBySymbol {
            full: true,
            by_file: HashMap::new(),
        }
    }

    /// The files with new notes.
    fn files(&self) -> impl Iterator<Item = &str> {
        self.by_file.keys().copied()
    }

    /// The notes of the symbol `qualified_name` of `file` once the read is applied, given
    /// the notes it `had`.
    pub(crate) fn history(&self, file: &str, qualified_name: &str, had: &str) -> String {
        let new = self
            .by_file
            .get(file)
            .and_then(|by_name| by_name.get(qualified_name))
            .map(|n| n.as_slice())
            .unwrap_or_default();
        render(new, (!self.full).then_some(had))
    }
}

/// A symbol's notes: the new ones (newest first), then what it had, without repeats, at
/// most [`MAX_NOTES_PER_SYMBOL`].
fn render(new: &[&SymbolNote], had: Option<&str>) -> String {
    let mut ordered: Vec<&SymbolNote> = new.to_vec();
    ordered.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.commit.cmp(&b.commit)));
    let mut seen = HashSet::new();
    ordered
        .iter()
        .map(|n| n.text.as_str())
        .chain(
            had.into_iter()
                .flat_map(|h| h.split(HISTORY_SEPARATOR))
                .filter(|n| !n.is_empty()),
        )
        .filter(|text| seen.insert(*text))
        .take(MAX_NOTES_PER_SYMBOL)
        .collect::<Vec<_>>()
        .join(HISTORY_SEPARATOR)
}

/// The first history read of an index whose sync deferred it, done apart from the syncs that
/// keep answers fresh: the commits are read without the write lock (seconds on a large
/// repository), then written under it (a moment), so a sync before a query waits at most for
/// the write. The syncs of other handles pick up the notes and search them from then on.
pub struct HistoryCatchUp {
    store: Store,
}

impl HistoryCatchUp {
    /// Reads the history and writes it, unless another handle recorded it meanwhile.
    /// Returns what it wrote (`history_commits`, `history_rows`, `commits`, timings). A run
    /// that failed (another writer held the index past the lock timeout, an I/O error) can
    /// be run again: nothing counts as recorded until the whole read is written.
    pub async fn run(&mut self) -> Result<SyncStats, StoreError> {
        let mut stats = SyncStats::default();
        let started = std::time::Instant::now();
        let read = self.store.read_history(None).await;
        let _lock = self.store.lock_writer().await?;
        self.store.reload_known().await?;
        self.store.refresh_chunks().await?;
        if self.store.recorded_head().await?.is_some() {
            return Ok(stats);
        }
        self.store.apply_history(None, read, &mut stats).await?;
        stats.timings.history = started.elapsed();
        if stats.history_rows > 0 {
            let started = std::time::Instant::now();
            self.store.maintain(&mut stats).await?;
            stats.timings.maintain = started.elapsed();
        }
        Ok(stats)
    }
}
