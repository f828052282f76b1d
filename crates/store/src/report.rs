//! What a sync or an embedding step reports: counters, progress events and their observer.

use std::time::Duration;

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
    /// New or changed content whose chunks and facts an index of the repository made
    /// before ([`crate::StoreOptions::shared_parses`]): not parsed.
    pub files_shared: usize,
    /// New or changed but not chunked (minified, build output, too large, binary, not UTF-8).
    pub files_skipped: usize,
    /// Gone from disk: rows deleted.
    pub files_removed: usize,
    /// Chunk rows inserted or replaced.
    pub chunks_written: u64,
    /// Chunk rows deleted (of changed and removed files, net of replacements).
    pub chunks_deleted: u64,
    /// Chunk rows of changed files left as stored: the same chunk, notes and vector.
    pub chunks_kept: u64,
    /// Chunks of unchanged files whose vector was dropped by the signature cascade.
    pub chunks_cascaded: usize,
    /// Chunks of changed files that kept their vector (same `embeddingText`).
    pub vectors_reused: usize,
    /// Chunks sent to the embedder.
    pub chunks_embedded: usize,
    /// Chunks whose vector came from the repository's shared vectors instead of the model.
    pub vectors_shared: usize,
    /// LanceDB commits made (each a table version).
    pub commits: usize,
    /// The previous sync died mid-way and this one repaired the index.
    pub repaired: bool,
    /// Commits of the repository's history read (only new ones after the first sync).
    pub history_commits: usize,
    /// Chunk rows whose commit notes changed.
    pub history_rows: usize,
    /// The files table version a branch switch restored before syncing: one kept for a
    /// worktree or a recent head, nearer the working tree than the latest (`revisit.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revisited: Option<u64>,
    /// Where the sync's wall time went (not serialized: timings would make snapshots of
    /// the counters flaky).
    #[serde(skip)]
    pub timings: SyncTimings,
    /// Files whose chunk rows or facts this sync rewrote or removed (parsed, skipped or gone),
    /// or that another process changed since this handle last looked, sorted: what an
    /// in-memory project must patch. Not serialized (counters above say it).
    #[serde(skip)]
    pub changed_paths: Vec<String>,
}

/// Wall time of each step of one sync, in the order they run. `cargo xtask bench index`
/// prints them; nothing decides on them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncTimings {
    /// The write lock, and what other handles changed since this one last looked (files
    /// table, chunk table, the dirty mark).
    pub look: Duration,
    /// After a move of `HEAD`: comparing the tree with the versions kept for worktrees,
    /// and restoring the nearest (`Store::sync`).
    pub revisit: Duration,
    /// Walking the tree (file selection, stat of every file).
    pub walk: Duration,
    /// Reading, hashing, parsing and chunking the files that moved.
    pub parse: Duration,
    /// Setting and clearing the dirty mark around the writes.
    pub marks: Duration,
    /// The chunk rows of changed files (one merge).
    pub chunk_rows: Duration,
    /// The files table (one merge).
    pub file_rows: Duration,
    /// Full-text index catch-up, vector index, compaction.
    pub maintain: Duration,
    /// Reading the repository's history and writing its notes.
    pub history: Duration,
}

impl SyncTimings {
    /// `(step, time)` pairs in the order the steps run.
    pub fn steps(&self) -> [(&'static str, Duration); 9] {
        [
            ("look", self.look),
            ("revisit", self.revisit),
            ("walk", self.walk),
            ("parse", self.parse),
            ("marks", self.marks),
            ("chunk rows", self.chunk_rows),
            ("file rows", self.file_rows),
            ("maintain", self.maintain),
            ("history", self.history),
        ]
    }
}

/// What one [`Store::embed_step`](crate::Store::embed_step) did.
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
    /// After a branch switch, the chunk table is restored to a version kept for a worktree
    /// or a recent head; the files table is not yet.
    ChunksRestored,
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
