//! Opening an index: location, ownership and model checks, the three tables.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use codectx_chunker::CodeChunk;
use codectx_files::FileSelection;
use codectx_graph::facts::{FACTS_VERSION, FileFacts};
use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::{Connection, Table};

use crate::clone::{CLONED_FROM_FILE, clone_index, orphaned};
use crate::lock::{LOCK_FILE, WriteLock};
use crate::parse_cache::{ParseCache, REPOSITORY_DIR as PARSES_DIR};
use crate::schema::{
    self, CHUNKS, FILES, FileRecord, FileStatus, Layouts, META, Placing, StoredChunk,
    batch_to_chunks, batch_to_files, batch_to_meta, chunk_schema, files_schema, meta_to_batch,
};
use crate::sql::{in_list, reader, sql_string, text_column};
use crate::text_table::TextSearch;
use crate::vector_cache::{REPOSITORY_DIR as VECTORS_REPOSITORY_DIR, VectorCache};
use crate::{DEFAULT_INDEX_DIR, EmbeddingSpec, StoreError};
use codectx_history::HistoryOff;
use codectx_history::HistoryOptions;
use lancedb::arrow::arrow_array::{Array, LargeBinaryArray, RecordBatch};

/// Identifies the table layout; an index written by another layout is rebuilt.
/// 2: the `searchNames` column and stemmed full-text indexes on it and `fullSource`.
/// 3: the `history` column (commit descriptions per symbol) and its full-text index.
/// 4: chunk ids hash the repository-relative path (portable between checkouts).
/// 5: a skipped file's status names its reason (`skipped minified: …`).
/// 6: the `startByte` and `endByte` columns (chunks meet graph declarations by span).
/// 7: the `naming` column (whether the parser made a chunk's name up).
/// 8: the files table keeps facts as binary (`FileFacts::encode`), not JSON.
/// 9: `symbolIndex` (chunks meet graph declarations by the parser's symbol number); no
/// `filePath` column (the root gives it).
/// 10: chunk text and facts are stored in LZ4 mini-blocks (a project loads several times
/// faster).
/// 11: the lexical fields are stored analyzed (`nameTerms`, `sourceTerms`, `historyTerms`,
/// in place of `searchNames`), and the full-text indexes split them on spaces.
/// 12: a chunk row's `contentHash` hashes the row, not its file (a changed file keeps the
/// rows it did not change); the files table's `chunksDigest` names a file's rows.
/// 13: a chunk row is found by its `key` and holds no position; ids and positions are its
/// file's `layout` (an edit above a chunk leaves its row as it was).
/// 14: a chunk's `relevantImports` are its file's `layout` too (an edit of an import
/// statement leaves the rows that use it as they were).
pub(crate) const FORMAT: &str = "codectx-index/14";
/// Meta key of the [`codectx_graph::facts::FACTS_VERSION`] the files table's facts were
/// extracted with: another version re-extracts them (chunks and vectors are kept).
pub(crate) const FACTS_KEY: &str = "facts";
/// Meta key of the commit the history was read up to (empty or absent: none read).
pub(crate) const HISTORY_HEAD_KEY: &str = "historyHead";
/// Meta key of the commit `HEAD` named at the end of the last sync of an index without
/// history (a shallow clone, `max_commits = 0`): with history on, [`HISTORY_HEAD_KEY`] is
/// that commit. A kept version is found by it (`revisit.rs`).
pub(crate) const CHECKED_OUT_KEY: &str = "checkedOut";

/// Row counts kept in the meta table as `<chunk table version> <count>`: a run that finds
/// the table at that version reads the count instead of scanning every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordedCount {
    /// Rows whose symbol carries commit notes.
    AnnotatedSymbols,
    /// Rows with a vector.
    EmbeddedChunks,
}

impl RecordedCount {
    const ALL: [RecordedCount; 2] = [
        RecordedCount::AnnotatedSymbols,
        RecordedCount::EmbeddedChunks,
    ];

    fn key(self) -> &'static str {
        match self {
            RecordedCount::AnnotatedSymbols => "historySymbols",
            RecordedCount::EmbeddedChunks => "embeddedChunks",
        }
    }

    fn filter(self) -> &'static str {
        match self {
            RecordedCount::AnnotatedSymbols => "history != ''",
            RecordedCount::EmbeddedChunks => "vector IS NOT NULL",
        }
    }
}

/// How to open a [`Store`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Any LanceDB URI (a directory, `s3://…`, …). Default: [`default_index_dir`].
    pub uri: Option<String>,
    /// The model whose vectors the chunk table holds; `None` keeps no vectors (lexical and
    /// structural search only). Opening an index made with another model rebuilds it.
    pub embedding: Option<EmbeddingSpec>,
    /// Which files are indexed (the same rules as the structural graph).
    pub files: FileSelection,
    /// Replace an index that is damaged or not ours instead of failing.
    pub rebuild: bool,
    /// How long a sync waits for another process's sync to finish.
    pub lock_timeout: Duration,
    /// Rows embedded (and committed) per batch: a killed sync loses at most one batch.
    pub embed_batch: usize,
    /// Commits to the chunk table between compactions.
    pub compact_every: u64,
    /// Embedded rows from which an IVF-PQ vector index is built; below, search is exact
    /// (and on a few thousand rows, exact is fast and better).
    pub vector_index_min_rows: usize,
    /// Rows outside the full-text indexes (rewritten by an edit or by the embedder) from
    /// which a sync or embedding step updates the indexes, or a thirty-second of the rows
    /// if that is more; below, they are searched flat. Also the fewest replaced rows for
    /// which upkeep compacts before `compact_every` (once they are a quarter of the table).
    pub fts_catch_up_rows: usize,
    /// Where the lexical channel's BM25F runs: LanceDB's full-text index, or a copy of its
    /// fields kept in memory (the same scores, without a query plan per question).
    pub text_search: TextSearch,
    /// How much of the repository's history becomes evidence (`max_commits = 0`: none).
    pub history: HistoryOptions,
    /// Leave the first history read (every commit up to `history.max_commits`, seconds on a
    /// large repository) to a [`HistoryCatchUp`](crate::HistoryCatchUp) instead of the
    /// sync, so a new index answers from its code first. Later syncs read new commits as
    /// usual.
    pub defer_history: bool,
    /// Keep what each sync parsed and removed for [`Store::take_changes`], so a caller
    /// holding a project of the index patches it without reading back what the sync wrote.
    pub hand_over_changes: bool,
    /// Where computed vectors are shared by content with the repository's other indexes
    /// (worktrees, revisions): a text embedded once is not embedded again.
    pub shared_vectors: Shared,
    /// About how many bytes of vectors the shared cache keeps (the oldest go first).
    pub shared_vectors_bytes: u64,
    /// Where the chunks and facts of each parsed file version are shared by content with
    /// the repository's other indexes: a version parsed once is not parsed again.
    pub shared_parses: Shared,
    /// A fresh index starts as a shallow clone of this one, at the version nearest
    /// [`IndexSeed::commit`] (`clone.rs`): set for a revision's index
    /// ([`StoreOptions::revision_seed`]). A linked worktree's default index starts from
    /// the main worktree's without it.
    pub seed: Option<IndexSeed>,
}

/// The index a fresh one starts from ([`StoreOptions::seed`]), and the commit whose files
/// the fresh one holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSeed {
    /// The seed index's directory.
    pub index: PathBuf,
    /// A directory of the repository the commit is in.
    pub repository: PathBuf,
    /// The commit (hex) of a revision's index, which is then cloned only when a version of
    /// the seed holds much of it; `None` for a worktree's, at its `HEAD`.
    pub commit: Option<String>,
}

/// Where something a store computes by content (vectors, parses) is shared with the
/// other indexes of its repository ([`StoreOptions::shared_vectors`],
/// [`StoreOptions::shared_parses`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Shared {
    /// Inside a git repository, a directory of its common git directory
    /// (`codectx/vectors`, `codectx/parsed`): one cache for all its worktrees, branches and
    /// revisions. Outside git, as each kind says.
    #[default]
    Repository,
    /// This directory (several repositories may share it: entries name their content).
    At(PathBuf),
    /// Nothing shared: everything is computed.
    Off,
}

impl Shared {
    /// The directory: `repository_dir` under the common git directory of `root`, else
    /// `outside_git`.
    fn dir(
        &self,
        root: &Path,
        repository_dir: &[&str],
        outside_git: impl FnOnce() -> Option<PathBuf>,
    ) -> Option<PathBuf> {
        match self {
            Shared::Off => None,
            Shared::At(dir) => Some(dir.clone()),
            Shared::Repository => match codectx_history::common_dir(root) {
                Some(git) => Some(repository_dir.iter().fold(git, |dir, part| dir.join(part))),
                None => outside_git(),
            },
        }
    }
}

/// What one sync changed, as typed data ([`StoreOptions::hand_over_changes`]): the chunks
/// and facts of the files it parsed, exactly as it wrote them, and the paths it rewrote or
/// removed.
#[derive(Debug, Default)]
pub struct SyncChanges {
    /// Files whose rows the sync replaced or deleted (parsed, skipped or removed), sorted.
    pub rewritten: Vec<String>,
    /// Every chunk of the `rewritten` files.
    pub chunks: Vec<CodeChunk>,
    /// The graph facts of the `rewritten` files that parsed, by path, sorted.
    pub facts: Vec<(String, FileFacts)>,
    /// Files another process's sync changed since this store last looked: their rows are in
    /// the index only.
    pub elsewhere: Vec<String>,
    /// The index held no file before the sync: the changes are the whole project.
    pub complete: bool,
    /// A module configuration (`package.json`, `tsconfig.json`, `Cargo.toml`, `go.mod`)
    /// was written, added or removed where the sync looked, since this handle's last
    /// sync: any import may resolve differently.
    pub module_configs_changed: bool,
}

impl SyncChanges {
    /// Whether a project of the state before the sync must change: files were rewritten
    /// here or elsewhere, or imports may resolve differently.
    pub fn moves_project(&self) -> bool {
        !self.rewritten.is_empty() || !self.elsewhere.is_empty() || self.module_configs_changed
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            uri: None,
            embedding: None,
            files: FileSelection::default(),
            rebuild: false,
            lock_timeout: Duration::from_secs(30),
            embed_batch: 256,
            compact_every: 16,
            vector_index_min_rows: 50_000,
            fts_catch_up_rows: 512,
            text_search: TextSearch::Index,
            history: HistoryOptions::default(),
            defer_history: false,
            hand_over_changes: false,
            shared_vectors: Shared::default(),
            shared_vectors_bytes: 512 << 20,
            shared_parses: Shared::default(),
            seed: None,
        }
    }
}

/// A project's index. See the crate documentation for the sync algorithm.
pub struct Store {
    pub(crate) root: PathBuf,
    pub(crate) uri: String,
    /// The index directory when the URI is a local path (lock file, `.gitignore`).
    pub(crate) local_dir: Option<PathBuf>,
    pub(crate) chunks: Table,
    pub(crate) files: Table,
    pub(crate) meta: Table,
    pub(crate) options: StoreOptions,
    /// The files table without facts and layouts, as of `files_version`.
    pub(crate) known: HashMap<String, FileRecord>,
    /// Each file's layout (`layout.rs`), as of the files table version the chunk rows are
    /// read at: `files_version`, or a later one a reader moved to when upkeep removed the
    /// files of its versions ([`Store::on_live_version`]).
    pub(crate) layouts: std::sync::RwLock<Arc<Layouts>>,
    /// The module configurations this handle's syncs walked past, path → (mtime, size):
    /// `None` before its first sync, since a sync can only tell a change from what it saw.
    pub(crate) module_configs: Option<HashMap<String, (i64, u64)>>,
    pub(crate) files_version: u64,
    /// Set when the last writer died mid-sync (or we do not know yet whether rows wait for
    /// vectors): the next sync checks.
    pub(crate) needs_repair: bool,
    /// This handle made the index as a clone and has not synced it yet. The rows its first
    /// sync replaces are those of the index it was cloned from, which shares them when it
    /// replaces them itself: they are not read back for the shared parses.
    pub(crate) cloned_now: bool,
    /// The stored facts were extracted by another version of the graph's extractor.
    pub(crate) facts_stale: bool,
    pub(crate) check_pending: bool,
    /// Chunk rows this handle replaced (a sync's rewritten files, notes, vectors) since its
    /// last compaction: see `maintain`.
    pub(crate) superseded_rows: std::sync::atomic::AtomicUsize,
    /// Why the index was rebuilt on open, if it was.
    pub(crate) rebuilt: Option<String>,
    pub(crate) history: HistoryStatus,
    /// Some row carries commit notes: the lexical channel searches the `history` field.
    pub(crate) history_searched: bool,
    /// See [`StoreOptions::hand_over_changes`].
    pub(crate) changes: Option<SyncChanges>,
    /// The repository history is read from, once found: a sync that finds `HEAD` where it
    /// was reads one ref instead of finding the repository again.
    pub(crate) repository: Option<codectx_history::Repository>,
    /// Every stored vector, as of one version of the chunk table (see
    /// [`Store::search_vector`]).
    pub(crate) vectors: crate::search::VectorSlot,
    /// The lexical channel's fields in memory ([`StoreOptions::text_search`]).
    pub(crate) text: std::sync::Arc<crate::text_table::TextSlot>,
    /// The shared vectors ([`StoreOptions::shared_vectors`]), opened at the first embedding;
    /// `None` inside when there are none or they could not be opened.
    pub(crate) shared_vectors: tokio::sync::OnceCell<Option<VectorCache>>,
    /// The shared parses ([`StoreOptions::shared_parses`]), found at the first sync that
    /// reads a file; `None` inside when there are none.
    pub(crate) shared_parses: std::sync::OnceLock<Option<ParseCache>>,
    /// The last full walk's directory listings ([`LISTINGS_FILE`]), read at the first.
    pub(crate) listings: Option<codectx_files::Listings>,
    /// The history head whose version this handle last kept (`revisit.rs`).
    pub(crate) kept_head: Option<String>,
}

impl StoreOptions {
    /// Where the index of `root` (canonical) lives: `uri`, else [`default_index_dir`].
    pub fn index_uri(&self, root: &Path) -> String {
        match &self.uri {
            Some(uri) => uri.clone(),
            None => default_index_dir(root).to_string_lossy().into_owned(),
        }
    }

    /// Where what is known of revision `commit` of `root` (canonical) is kept: a git ref
    /// answered at, its files as of the commit and their own index.
    ///
    /// Inside git, once for the repository: `<common git dir>/codectx/refs/<view>/<commit>`,
    /// where the view names what decides those files (`root`'s path in its worktree and
    /// the file selection), so every worktree's server answers a ref from one copy.
    /// Outside git, `<index>/refs/<commit>`; `None` when that is not a local directory.
    pub fn revision_dir(&self, root: &Path, commit: &str) -> Option<PathBuf> {
        let Some(place) = codectx_history::worktree_place(root) else {
            return local_path(&self.index_uri(root)).map(|d| d.join(REVISIONS_DIR).join(commit));
        };
        let files = &self.files;
        let view = format!(
            "{}\0{}\0{}\0{}",
            place.prefix,
            files.skip_declaration_files,
            files.skip_dirs.join("/"),
            files.max_file_bytes
        );
        let view = blake3::hash(view.as_bytes()).to_hex();
        Some(
            place
                .common_dir
                .join(GIT_INDEX_DIR[0])
                .join(REVISIONS_DIR)
                .join(&view[..16])
                .join(commit),
        )
    }

    /// What the index of `root`'s revision `commit` starts from: the main worktree's
    /// index (this one's, in the main worktree), which keeps the versions of its recent
    /// heads and of its worktrees' commits. `None` when it is not a local directory.
    pub fn revision_seed(&self, root: &Path, commit: &str) -> Option<IndexSeed> {
        let index = seed_index_dir(root).or_else(|| local_path(&self.index_uri(root)))?;
        Some(IndexSeed {
            index,
            repository: root.to_path_buf(),
            commit: Some(commit.to_string()),
        })
    }

    /// Where an earlier version kept the revisions of `root` (canonical) inside git: beside
    /// its index (`<index>/refs`), one copy per worktree. Nothing is written there any more
    /// ([`StoreOptions::revision_dir`]); `None` outside git or for an index that is not local.
    pub fn revisions_beside_index(&self, root: &Path) -> Option<PathBuf> {
        codectx_history::worktree_place(root)?;
        local_path(&self.index_uri(root)).map(|dir| dir.join(REVISIONS_DIR))
    }

    /// Where the vectors of `root`'s index are shared, if anywhere: outside git, beside a
    /// local index (`<index>/vectors`).
    pub fn shared_vectors_dir(&self, root: &Path) -> Option<PathBuf> {
        let beside_index = || local_path(&self.index_uri(root)).map(|d| d.join(VECTORS_DIR));
        self.shared_vectors
            .dir(root, &VECTORS_REPOSITORY_DIR, beside_index)
    }

    /// Where the parses of `root`'s index are shared, if anywhere: outside git, nowhere (a
    /// lone checkout meets an old file version again too rarely to keep every version's
    /// chunks).
    pub fn shared_parses_dir(&self, root: &Path) -> Option<PathBuf> {
        self.shared_parses.dir(root, &PARSES_DIR, || None)
    }

    /// The files a sync of `root` (canonical) walks: [`StoreOptions::files`], with the
    /// index's own directory left out when it lies inside the root. The file watcher asks
    /// the same selection.
    pub fn file_selection(&self, root: &Path) -> FileSelection {
        let mut files = self.files.clone();
        let dir = local_path(&self.index_uri(root)).map(|d| {
            d.canonicalize()
                .or_else(|_| std::path::absolute(&d))
                .unwrap_or(d)
        });
        if let Some(dir) = dir
            && dir.starts_with(root)
        {
            files.index_dir = Some(dir);
        }
        files
    }
}

impl Store {
    /// Opens (creating if needed) the index of the project at `root`.
    pub async fn open(root: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let root = root
            .canonicalize()
            .ok()
            .filter(|r| r.is_dir())
            .ok_or_else(|| StoreError::NotADirectory(root.to_path_buf()))?;
        let uri = options.index_uri(&root);
        let local_dir = local_path(&uri);
        // An index made inside the work tree by default ignores itself in git (one in
        // a git directory needs not).
        let default_in_tree =
            options.uri.is_none() && uri == root.join(DEFAULT_INDEX_DIR).to_string_lossy();
        let default_in_git = options.uri.is_none() && !default_in_tree;
        if let Some(dir) = &local_dir {
            let io = |e: std::io::Error| StoreError::Io {
                path: dir.clone(),
                message: e.to_string(),
            };
            std::fs::create_dir_all(dir).map_err(io)?;
            if default_in_tree {
                // Like `.pytest_cache`: the directory keeps itself out of git.
                let ignore = dir.join(".gitignore");
                if !ignore.exists() {
                    std::fs::write(&ignore, "# codectx index\n*\n").map_err(io)?;
                }
            }
        }
        // Decided once: an index made at the default location stays there for this store.
        let mut options = options;
        options.uri = Some(uri.clone());
        // An index directory inside the root is never walked as part of the project.
        options.files = options.file_selection(&root);
        // History reads notes for the files the index selects, by the same decision.
        options.history.files = options.files.clone();
        let lance = |action: &'static str| lance_error(&uri, action);
        let db = lancedb::connect(&uri)
            .execute()
            .await
            .map_err(lance("connecting"))?;
        let mut rebuilt = None;
        let ours = [CHUNKS, FILES, META];
        let mut cloned_from = None;
        let (mut names, mut state) =
            inspect(&db, &uri, local_dir.as_deref(), options.rebuild).await?;
        // A clone whose main index lost its tags is rebuilt, whatever its tables say.
        let mut orphaned = orphaned_clone(&state, local_dir.as_deref()).await;
        // Creating or rebuilding the tables is a write: with another process opening the same
        // fresh index at the same moment, one creates while the other waits, then looks again
        // (and finds the index the first one made, instead of a half-made one).
        let _creating = match (&state, &local_dir) {
            (Err(_), Some(dir)) => {
                let lock = WriteLock::acquire(&dir.join(LOCK_FILE), options.lock_timeout).await?;
                (names, state) = inspect(&db, &uri, local_dir.as_deref(), options.rebuild).await?;
                orphaned = orphaned_clone(&state, local_dir.as_deref()).await;
                Some(lock)
            }
            _ => None,
        };
        if let Some(seed) = &orphaned {
            state = Err(Some(format!(
                "the index it was cloned from is gone ({})",
                seed.display()
            )));
        }
        let mut meta = match state {
            Ok(meta) => meta,
            Err(reason) => {
                let fresh = reason.is_none();
                // A fresh location, an index of an older layout, or a rebuild on request.
                if let Some(reason) = reason {
                    if reason.contains("format") || orphaned.is_some() || options.rebuild {
                        tracing::info!("rebuilding the index at {uri}: {reason}");
                        rebuilt = Some(reason);
                    } else {
                        return Err(StoreError::Corrupt { uri, reason });
                    }
                }
                for name in ours {
                    if names.iter().any(|n| n == name) {
                        db.drop_table(name, &[])
                            .await
                            .map_err(lance("dropping a table"))?;
                    }
                }
                if let Some(dir) = &local_dir {
                    // Whatever the tables were cloned from, they are gone.
                    let _ = std::fs::remove_file(dir.join(CLONED_FROM_FILE));
                }
                // A linked worktree's new default index starts from the main worktree's
                // (`clone.rs`).
                let seed = match &options.seed {
                    Some(seed) => (fresh && !options.rebuild).then(|| seed.clone()),
                    None => (default_in_git && fresh && !options.rebuild)
                        .then(|| seed_index_dir(&root))
                        .flatten()
                        .map(|index| IndexSeed {
                            index,
                            repository: root.clone(),
                            commit: None,
                        }),
                };
                cloned_from = match (&seed, &local_dir) {
                    (Some(at), Some(dir)) => {
                        let seed = &at.index;
                        match clone_index(&db, dir, at, options.embedding.as_ref()).await {
                            Ok(()) => Some(seed.clone()),
                            Err(why) => {
                                tracing::info!(
                                    "building {uri} anew, not from {}: {why}",
                                    seed.display()
                                );
                                for name in ours {
                                    let _ = db.drop_table(name, &[]).await;
                                }
                                None
                            }
                        }
                    }
                    _ => None,
                };
                match cloned_from {
                    Some(_) => {
                        read_meta(&db, &uri)
                            .await
                            .map_err(|reason| StoreError::Corrupt {
                                uri: uri.clone(),
                                reason,
                            })?
                    }
                    None => {
                        create_tables(&db, &uri, options.embedding.as_ref()).await?;
                        HashMap::from([("format".to_string(), FORMAT.to_string())])
                    }
                }
            }
        };
        let mut opened = open_tables(&db).await;
        if opened.is_err() && _creating.is_some() {
            // Another process created the index while this one waited for the lock: a
            // connection made before that may not see the new tables yet. A new one does.
            let fresh = lancedb::connect(&uri)
                .execute()
                .await
                .map_err(lance("connecting"))?;
            opened = open_tables(&fresh).await;
        }
        let (mut chunks, mut files, mut meta_table) = match opened {
            Ok(tables) => tables,
            Err(reason) if options.rebuild => {
                tracing::info!("rebuilding the damaged index at {uri}: {reason}");
                rebuilt = Some(reason);
                for name in ours {
                    let _ = db.drop_table(name, &[]).await;
                }
                create_tables(&db, &uri, options.embedding.as_ref()).await?;
                open_tables(&db)
                    .await
                    .map_err(|reason| StoreError::Corrupt {
                        uri: uri.clone(),
                        reason,
                    })?
            }
            Err(reason) => return Err(StoreError::Corrupt { uri, reason }),
        };
        // Never mix vector spaces: another model (or none) means other vectors.
        let schema = chunks.schema().await.map_err(lance("reading the schema"))?;
        let recorded = schema::recorded_spec(&schema).map_err(|reason| StoreError::Corrupt {
            uri: uri.clone(),
            reason,
        })?;
        if recorded != options.embedding {
            let describe = |s: &Option<EmbeddingSpec>| {
                s.as_ref().map_or("no embeddings".to_string(), |s| {
                    format!("{} ({} dimensions)", s.model, s.dimension)
                })
            };
            let reason = format!(
                "the index holds {}, this store is configured for {}",
                describe(&recorded),
                describe(&options.embedding)
            );
            tracing::info!("rebuilding the index at {uri}: {reason}");
            rebuilt = Some(reason);
            // A clone made anew is an index of its own: its meta table, a clone too, goes
            // with the others, so the index it was cloned from releases its hold.
            let clone_dir = local_dir
                .as_deref()
                .filter(|dir| crate::clone::cloned_from(dir).is_some());
            let dropped = match clone_dir {
                Some(_) => &[CHUNKS, FILES, META][..],
                None => &[CHUNKS, FILES][..],
            };
            for name in dropped {
                db.drop_table(name, &[])
                    .await
                    .map_err(lance("dropping a table"))?;
            }
            if let Some(dir) = clone_dir {
                let _ = std::fs::remove_file(dir.join(CLONED_FROM_FILE));
            }
            create_tables(&db, &uri, options.embedding.as_ref()).await?;
            chunks = open(&db, &uri, CHUNKS).await?;
            files = open(&db, &uri, FILES).await?;
            if clone_dir.is_some() {
                meta_table = open(&db, &uri, META).await?;
                meta = read_meta(&db, &uri)
                    .await
                    .map_err(|reason| StoreError::Corrupt {
                        uri: uri.clone(),
                        reason,
                    })?;
            }
            // The notes lived on the dropped rows, and a count of them names a version of
            // the dropped table: the history is read again from the start.
            let keys: Vec<String> = RecordedCount::ALL
                .iter()
                .map(|c| c.key())
                .chain([HISTORY_HEAD_KEY])
                .map(String::from)
                .collect();
            meta_table
                .delete(&in_list("key", &keys))
                .await
                .map_err(lance("resetting the history"))?;
            for key in &keys {
                meta.remove(key);
            }
        }
        // The dirty mark: a file in a local index, the meta table's row on object storage
        // (and in local indexes written before the file).
        let needs_repair = meta.get("dirty").is_some_and(|d| d == "1")
            || local_dir
                .as_ref()
                .is_some_and(|d| d.join(crate::lock::DIRTY_FILE).exists());
        let mut store = Store {
            root,
            uri,
            local_dir,
            chunks,
            files,
            meta: meta_table,
            options,
            known: HashMap::new(),
            layouts: Default::default(),
            module_configs: None,
            files_version: 0,
            needs_repair,
            cloned_now: false,
            facts_stale: meta.get(FACTS_KEY) != Some(&FACTS_VERSION.to_string()),
            check_pending: true,
            superseded_rows: Default::default(),
            rebuilt,
            history: HistoryStatus::NotRead,
            history_searched: meta.get(HISTORY_HEAD_KEY).is_some_and(|h| !h.is_empty()),
            changes: None,
            repository: None,
            vectors: crate::search::VectorSlot::default(),
            text: std::sync::Arc::default(),
            shared_vectors: tokio::sync::OnceCell::new(),
            shared_parses: std::sync::OnceLock::new(),
            listings: None,
            kept_head: None,
        };
        if let Some(seed) = cloned_from {
            // The main index's version may hold a sync it had not finished: the first
            // sync repairs as after a killed one (and a kill before it finds the mark).
            store
                .set_dirty(true, &mut crate::SyncStats::default())
                .await?;
            store.needs_repair = true;
            store.cloned_now = true;
            tracing::info!("{} starts as a clone of {}", store.uri, seed.display());
        }
        let _ = store.reload_known().await?;
        Ok(store)
    }

    /// The embedding model an existing index at `root` (with `options.uri`) holds vectors
    /// of, without opening it for writing: `None` when there is no index or it keeps no
    /// vectors. Opening with another spec rebuilds the index, so a caller that only wants
    /// to read (or whose model is unavailable) opens with this one to keep the vectors.
    pub async fn recorded_embedding(
        root: &Path,
        options: &StoreOptions,
    ) -> Result<Option<EmbeddingSpec>, StoreError> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let uri = options.index_uri(&root);
        if local_path(&uri).is_some_and(|dir| !dir.exists()) {
            return Ok(None);
        }
        let lance = |action: &'static str| lance_error(&uri, action);
        let db = lancedb::connect(&uri)
            .execute()
            .await
            .map_err(lance("connecting"))?;
        let names = db
            .table_names()
            .execute()
            .await
            .map_err(lance("listing tables"))?;
        if !names.iter().any(|n| n == CHUNKS) {
            return Ok(None);
        }
        let chunks = open(&db, &uri, CHUNKS).await?;
        let schema = chunks.schema().await.map_err(lance("reading the schema"))?;
        schema::recorded_spec(&schema).map_err(|reason| StoreError::Corrupt { uri, reason })
    }

    /// The project root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the index lives.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The model of the chunk table's vectors (`None`: no vectors).
    pub fn embedding(&self) -> Option<&EmbeddingSpec> {
        self.options.embedding.as_ref()
    }

    /// Why opening rebuilt the index (another model, an older layout, damage), if it did.
    pub fn rebuilt(&self) -> Option<&str> {
        self.rebuilt.as_deref()
    }

    /// How long a sync waits for another process's sync (see [`StoreOptions::lock_timeout`]).
    pub fn set_lock_timeout(&mut self, timeout: Duration) {
        self.options.lock_timeout = timeout;
    }

    /// The files of the last sync, by relative path (facts not loaded).
    pub fn files(&self) -> impl Iterator<Item = &FileRecord> {
        self.known.values()
    }

    /// The index directory, when the index is on the local disk.
    pub fn local_dir(&self) -> Option<&Path> {
        self.local_dir.as_deref()
    }

    /// The module configurations (`package.json`, `tsconfig*.json`, `Cargo.toml`,
    /// `go.mod`) this handle's syncs walked past, path → (mtime in ns, size); `None` before
    /// its first sync.
    pub fn module_config_stamps(&self) -> Option<&HashMap<String, (i64, u64)>> {
        self.module_configs.as_ref()
    }

    /// A digest of what the index holds as this handle last saw it: every file's path,
    /// content hash, status and chunk count, with the index layout and the extractors'
    /// versions. Chunks and facts are functions of a file's content and those versions, so
    /// two states with one digest hold the same chunks and facts.
    pub fn content_digest(&self) -> [u8; 32] {
        // blake3, not the files' sha256: a CLI command takes this digest of every file on
        // its critical path (babel: 17,500 records), and blake3 is several times faster.
        let mut files: Vec<&FileRecord> = self.known.values().collect();
        files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        let mut digest = blake3::Hasher::new();
        for part in [
            FORMAT,
            &FACTS_VERSION.to_string(),
            env!("CARGO_PKG_VERSION"),
        ] {
            digest.update(part.as_bytes());
            digest.update(&[0]);
        }
        for file in files {
            for part in [&file.path, &file.content_hash] {
                digest.update(part.as_bytes());
                digest.update(&[0]);
            }
            match &file.status {
                FileStatus::Indexed => digest.update(b"indexed"),
                FileStatus::Recovered => digest.update(b"recovered"),
                FileStatus::Skipped { reason, detail } => {
                    digest.update(format!("{reason:?} {detail}").as_bytes())
                }
            };
            digest.update(&[0]);
            digest.update(&file.chunk_count.to_le_bytes());
        }
        digest.finalize().into()
    }

    /// The LanceDB chunk table, for queries the store does not wrap (vector, full-text).
    pub fn chunk_table(&self) -> &Table {
        &self.chunks
    }

    /// Chunk rows matching a LanceDB SQL filter (all rows for `None`), in no fixed order.
    pub async fn chunks(&self, filter: Option<&str>) -> Result<Vec<StoredChunk>, StoreError> {
        self.on_live_version(|| async {
            let layouts = self.layouts();
            self.query_chunks_here(filter, None, Placing::By(&layouts))
                .await
        })
        .await
    }

    /// Chunk rows matching `filter` (at most `limit`) as a writer rewrites them: keys and
    /// content, their ids and positions left unset ([`Placing::Unplaced`]). A row another
    /// process wrote after this handle read the files table is read too.
    pub(crate) async fn rows(
        &self,
        filter: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<StoredChunk>, StoreError> {
        self.on_live_version(|| self.query_chunks_here(filter, limit, Placing::Unplaced))
            .await
    }

    async fn query_chunks_here(
        &self,
        filter: Option<&str>,
        limit: Option<usize>,
        layouts: Placing<'_>,
    ) -> Result<Vec<StoredChunk>, StoreError> {
        // What a row holds, not the analyzed `*Terms` columns (as large as the texts, and
        // derived from them at every write). The table has a vector column exactly when
        // the store embeds: an open rebuilds an index whose vectors are another model's.
        let columns: Vec<&str> = crate::schema::CODE_CHUNK_COLUMNS
            .iter()
            .copied()
            .chain(["history", "contentHash", "lastModified"])
            .chain(self.options.embedding.is_some().then_some("vector"))
            .collect();
        let mut query = self.chunks.query().select(Select::columns(&columns));
        if let Some(filter) = filter {
            query = query.only_if(filter);
        }
        if let Some(limit) = limit {
            query = query.limit(limit);
        }
        let batches: Vec<_> = query.batches(self, "querying chunks").await?;
        let mut out = Vec::new();
        for batch in &batches {
            out.extend(
                batch_to_chunks(batch, &self.root, layouts)
                    .map_err(|reason| self.corrupt(reason))?
                    .into_iter()
                    .map(|(_, row)| row),
            );
        }
        Ok(out)
    }

    /// Every file's cached graph facts, so the structural graph links without parsing
    /// (`codectx_graph::ProjectGraph::from_facts`).
    pub async fn load_facts(&self) -> Result<Vec<(String, FileFacts)>, StoreError> {
        self.query_facts("facts IS NOT NULL".into()).await
    }

    /// The cached graph facts of the files `paths` (those that have facts), sorted by path.
    pub async fn load_facts_of(
        &self,
        paths: &[String],
    ) -> Result<Vec<(String, FileFacts)>, StoreError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        self.query_facts(format!("facts IS NOT NULL AND {}", in_list("path", paths)))
            .await
    }

    /// The chunk rows of the files `paths`.
    pub async fn chunks_of_files(&self, paths: &[String]) -> Result<Vec<StoredChunk>, StoreError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        self.chunks(Some(&in_list("relativePath", paths))).await
    }

    /// The chunks matching `filter` (every chunk with `None`), without what a search does
    /// not hold in memory: vectors, history notes, stamps. Read batch by batch, so the
    /// decoded columns of one batch are freed before the next.
    pub async fn code_chunks(&self, filter: Option<&str>) -> Result<Vec<CodeChunk>, StoreError> {
        self.on_live_version(|| self.code_chunks_here(filter)).await
    }

    async fn code_chunks_here(&self, filter: Option<&str>) -> Result<Vec<CodeChunk>, StoreError> {
        let mut out = Vec::new();
        self.each_code_chunk(filter, |_, chunk| out.push(chunk))
            .await?;
        Ok(out)
    }

    /// The chunks of the files `paths`, each with its row's key, as [`Store::code_chunks`]
    /// reads them.
    pub(crate) async fn keyed_code_chunks_of_files(
        &self,
        paths: &[String],
    ) -> Result<Vec<(String, CodeChunk)>, StoreError> {
        let filter = in_list("relativePath", paths);
        self.on_live_version(|| async {
            let mut out = Vec::new();
            self.each_code_chunk(Some(&filter), |key, chunk| {
                out.push((key.to_string(), chunk))
            })
            .await?;
            Ok(out)
        })
        .await
    }

    /// Every chunk, grouped by file ([`ChunksByFile`]): files in path order, each file's
    /// chunks in (start line, depth) order.
    pub async fn code_chunks_by_file(
        &self,
    ) -> Result<BTreeMap<String, Vec<CodeChunk>>, StoreError> {
        self.on_live_version(|| async {
            let mut grouped = ChunksByFile::sized_for(self);
            self.each_code_chunk(None, |_, chunk| grouped.push(chunk))
                .await?;
            Ok(grouped.into_sorted())
        })
        .await
    }

    /// Hands `f` each chunk matching `filter`, with its row's key, reading
    /// [`crate::schema::CODE_CHUNK_COLUMNS`] batch by batch, so the decoded columns of one
    /// batch are freed before the next.
    async fn each_code_chunk(
        &self,
        filter: Option<&str>,
        mut f: impl FnMut(&str, CodeChunk),
    ) -> Result<(), StoreError> {
        let mut query = self
            .chunks
            .query()
            .select(Select::columns(&crate::schema::CODE_CHUNK_COLUMNS));
        if let Some(filter) = filter {
            query = query.only_if(filter);
        }
        let layouts = self.layouts();
        query
            .each_batch(self, "querying chunks", |batch| {
                let keys = text_column(batch, "key").map_err(|r| self.corrupt(r))?;
                crate::schema::batch_to_code_chunks(batch, &self.root, Placing::By(&layouts))
                    .map_err(|reason| self.corrupt(reason))?
                    .into_iter()
                    .for_each(|(i, chunk)| f(keys.value(i), chunk));
                Ok(())
            })
            .await
    }

    /// [`Store::code_chunks`] of the files `paths`.
    pub async fn code_chunks_of_files(
        &self,
        paths: &[String],
    ) -> Result<Vec<CodeChunk>, StoreError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        self.code_chunks(Some(&in_list("relativePath", paths)))
            .await
    }

    /// What the last sync changed, once, when [`StoreOptions::hand_over_changes`] asked for
    /// it; `None` when it was not asked for or was already taken.
    pub fn take_changes(&mut self) -> Option<SyncChanges> {
        self.changes.take()
    }

    async fn query_facts(&self, filter: String) -> Result<Vec<(String, FileFacts)>, StoreError> {
        self.on_live_version(|| self.query_facts_here(&filter))
            .await
    }

    async fn query_facts_here(&self, filter: &str) -> Result<Vec<(String, FileFacts)>, StoreError> {
        let mut out = Vec::new();
        let query = self
            .files
            .query()
            .only_if(filter)
            .select(Select::columns(&["path", "facts"]));
        query
            .each_batch(self, "querying facts", |batch| {
                self.facts_of_batch(batch, &mut out)
            })
            .await?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Appends the parsed facts of a `path`, `facts` batch to `out`.
    fn facts_of_batch(
        &self,
        batch: &RecordBatch,
        out: &mut Vec<(String, FileFacts)>,
    ) -> Result<(), StoreError> {
        let paths = text_column(batch, "path").map_err(|r| self.corrupt(r))?;
        let facts = batch
            .column_by_name("facts")
            .and_then(|c| {
                c.as_any()
                    .downcast_ref::<lancedb::arrow::arrow_array::LargeBinaryArray>()
            })
            .ok_or_else(|| self.corrupt("files column facts is mistyped".into()))?;
        for i in 0..batch.num_rows() {
            let parsed = FileFacts::decode(facts.value(i))
                .map_err(|e| self.corrupt(format!("facts of {}: {e}", paths.value(i))))?;
            out.push((paths.value(i).to_string(), parsed));
        }
        Ok(())
    }

    /// Re-reads the files table if another process committed to it, and returns the paths
    /// whose content, status or chunks that process changed (added and removed ones too):
    /// this handle's caller must see those edits as its own.
    pub(crate) async fn reload_known(&mut self) -> Result<Vec<String>, StoreError> {
        self.files
            .checkout_latest()
            .await
            .map_err(self.lance("refreshing the files table"))?;
        let version = self
            .files
            .version()
            .await
            .map_err(self.lance("reading the files table version"))?;
        if version == self.files_version && !self.known.is_empty() {
            return Ok(Vec::new());
        }
        let batches: Vec<_> = self
            .files
            .query()
            .select(Select::columns(&[
                "path",
                "mtimeNs",
                "size",
                "contentHash",
                "status",
                "chunkCount",
                "chunksDigest",
                "layout",
            ]))
            .batches(self, "querying files")
            .await?;
        let before = std::mem::take(&mut self.known);
        let mut layouts = Layouts::with_capacity(before.len());
        for batch in &batches {
            for mut record in batch_to_files(batch).map_err(|r| self.corrupt(r))? {
                layouts.insert(record.path.clone(), std::mem::take(&mut record.layout));
                self.known.insert(record.path.clone(), record);
            }
        }
        self.set_layouts(layouts);
        // Files touched since their rows were written: the stat data the syncs last saw.
        if let Some(dir) = &self.local_dir {
            crate::stamps::apply(
                &mut self.known,
                &crate::stamps::read(&dir.join(crate::stamps::STAMPS_FILE)),
            );
        }
        self.files_version = version;
        if before.is_empty() {
            return Ok(Vec::new());
        }
        let same = |a: &FileRecord, b: &FileRecord| {
            a.content_hash == b.content_hash
                && a.status == b.status
                && a.chunk_count == b.chunk_count
        };
        let mut changed: Vec<String> = self
            .known
            .iter()
            .filter(|(path, now)| before.get(*path).is_none_or(|was| !same(was, now)))
            .map(|(path, _)| path.clone())
            .chain(
                before
                    .keys()
                    .filter(|p| !self.known.contains_key(*p))
                    .cloned(),
            )
            .collect();
        changed.sort();
        Ok(changed)
    }

    /// Every file's layout, as of the files table version rows are read at.
    pub(crate) fn layouts(&self) -> Arc<Layouts> {
        self.layouts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn set_layouts(&self, layouts: Layouts) {
        *self.layouts.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(layouts);
    }

    /// Reads every file's layout from the files table's current version.
    async fn reload_layouts(&self) -> Result<(), StoreError> {
        let batches: Vec<_> = self
            .files
            .query()
            .select(Select::columns(&["path", "layout"]))
            .batches(self, "querying layouts")
            .await?;
        let mut layouts = Layouts::new();
        for batch in &batches {
            let paths = crate::sql::text_column(batch, "path").map_err(|r| self.corrupt(r))?;
            let bytes = batch
                .column_by_name("layout")
                .and_then(|c| c.as_any().downcast_ref::<LargeBinaryArray>())
                .ok_or_else(|| self.corrupt("files column layout is mistyped".into()))?;
            for i in 0..batch.num_rows() {
                let layout = crate::layout::decode(bytes.value(i))
                    .map_err(|e| self.corrupt(format!("layout of {}: {e}", paths.value(i))))?;
                layouts.insert(paths.value(i).to_string(), layout);
            }
        }
        self.set_layouts(layouts);
        Ok(())
    }

    /// The id `layouts` gives row `key` of file `path`; `None` for a row they do not place
    /// (one written after the files table they were read from).
    pub(crate) fn placed_id(layouts: &Layouts, path: &str, key: &str) -> Option<String> {
        let key = crate::layout::from_hex(key)?;
        let placement = layouts
            .get(path)?
            .placements
            .iter()
            .find(|p| p.key == key)?;
        Some(crate::layout::to_hex(&placement.id))
    }

    /// The row key `layouts` give chunk `id` of file `path`.
    pub(crate) fn row_key(layouts: &Layouts, path: &str, id: &str) -> Option<String> {
        let id = crate::layout::from_hex(id)?;
        let placement = layouts.get(path)?.placements.iter().find(|p| p.id == id)?;
        Some(crate::layout::to_hex(&placement.key))
    }

    pub(crate) fn lance(&self, action: &'static str) -> impl Fn(lancedb::Error) -> StoreError {
        lance_error(&self.uri, action)
    }

    pub(crate) fn corrupt(&self, reason: String) -> StoreError {
        corrupt_error(&self.uri)(reason)
    }
}

/// Runs a LanceDB query and collects its record batches, errors naming the action.
pub(crate) trait CollectBatches: ExecutableQuery {
    async fn batches(
        &self,
        store: &Store,
        action: &'static str,
    ) -> Result<Vec<lancedb::arrow::arrow_array::RecordBatch>, StoreError> {
        self.execute()
            .await
            .map_err(store.lance(action))?
            .try_collect()
            .await
            .map_err(store.lance(action))
    }

    /// Runs a LanceDB query and hands `f` each record batch as it arrives, so no more than
    /// one decoded batch is held at a time.
    async fn each_batch(
        &self,
        store: &Store,
        action: &'static str,
        mut f: impl FnMut(&RecordBatch) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stream = self.execute().await.map_err(store.lance(action))?;
        while let Some(batch) = stream.try_next().await.map_err(store.lance(action))? {
            f(&batch)?;
        }
        Ok(())
    }
}

impl<Q: ExecutableQuery> CollectBatches for Q {}

/// Chunks gathered file by file, each file's list sized from its record: chunks arriving
/// batch by batch are held once, never in one list and again per file. Files come out in
/// path order, each file's chunks in (start line, depth) order, files without chunks left
/// out.
pub struct ChunksByFile(BTreeMap<String, Vec<CodeChunk>>);

impl ChunksByFile {
    /// Empty lists for the files `store` recorded chunks for.
    pub fn sized_for(store: &Store) -> Self {
        ChunksByFile(
            store
                .files()
                .filter(|f| f.chunk_count > 0)
                .map(|f| (f.path.clone(), Vec::with_capacity(f.chunk_count as usize)))
                .collect(),
        )
    }

    pub fn push(&mut self, chunk: CodeChunk) {
        // A recorded file is a key already: no path is copied per chunk.
        match self.0.get_mut(chunk.relative_path.as_str()) {
            Some(file) => file.push(chunk),
            None => self
                .0
                .entry(chunk.relative_path.clone())
                .or_default()
                .push(chunk),
        }
    }

    pub fn into_sorted(mut self) -> BTreeMap<String, Vec<CodeChunk>> {
        self.0.retain(|_, chunks| !chunks.is_empty());
        for chunks in self.0.values_mut() {
            chunks.sort_by_key(|c| (c.start_line, c.depth));
        }
        self.0
    }
}

/// A store error for what the index at `uri` holds that cannot be read as ours.
pub(crate) fn corrupt_error(uri: &str) -> impl Fn(String) -> StoreError {
    let uri = uri.to_string();
    move |reason| StoreError::Corrupt {
        uri: uri.clone(),
        reason,
    }
}

pub(crate) fn lance_error(
    uri: &str,
    action: &'static str,
) -> impl Fn(lancedb::Error) -> StoreError {
    let uri = uri.to_string();
    move |e| match e {
        // Upkeep removes the files only superseded versions use (see `maintain`): a handle
        // still on one of them finds its files gone (however lance wraps the miss), and
        // reads the latest version instead.
        lancedb::Error::Lance { source } if source.is_not_found() => StoreError::Superseded {
            uri: uri.clone(),
            action,
        },
        e => StoreError::Lance {
            uri: uri.clone(),
            action,
            message: e.to_string(),
        },
    }
}

/// The index directory's subdirectory of revisions ([`StoreOptions::revision_dir`]).
const REVISIONS_DIR: &str = "refs";

/// The file in a local index directory where a linked project is saved beside the index
/// (`codectx_retrieval`'s project image), and the prefix of its files being written.
pub const PROJECT_IMAGE: &str = "project.image";

/// The last full walk's directory listings, in the index directory: the next walk reads
/// again only the directories that changed ([`codectx_files::Listings`]).
pub(crate) const LISTINGS_FILE: &str = "walk.listings";
/// The shared vectors' directory in a local index outside git ([`StoreOptions::shared_vectors`]).
const VECTORS_DIR: &str = "vectors";

/// Where the index of `root` (canonical) lives when no URI is given.
///
/// Inside a git worktree, in that worktree's git directory: `<common git dir>/codectx/index`
/// for the main worktree, `<common git dir>/worktrees/<name>/codectx/index` for a linked one
/// (`index-<hash of the path>` for a subdirectory of either). Every index of the repository
/// then lies beside what they share (`<common git dir>/codectx`), nothing of it in a work
/// tree, and `git worktree remove` (or `prune`) removes a worktree's index with it.
///
/// Outside git, `<root>/.codectx`; and there too where an index already is (one an earlier
/// version made): it is used, not silently rebuilt elsewhere.
pub fn default_index_dir(root: &Path) -> PathBuf {
    let beside_files = root.join(DEFAULT_INDEX_DIR);
    if beside_files.exists() {
        return beside_files;
    }
    match codectx_history::worktree_place(root) {
        Some(place) => index_dir_in(&place.git_dir, &place.prefix),
        None => beside_files,
    }
}

/// The default index of the root at `prefix` of a worktree whose git directory is `git_dir`.
fn index_dir_in(git_dir: &Path, prefix: &str) -> PathBuf {
    let dir = git_dir.join(GIT_INDEX_DIR[0]);
    if prefix.is_empty() {
        return dir.join(GIT_INDEX_DIR[1]);
    }
    let hash = blake3::hash(prefix.as_bytes()).to_hex();
    dir.join(format!("{}-{}", GIT_INDEX_DIR[1], &hash[..16]))
}

/// The index a linked worktree's new default index is cloned from: the main worktree's
/// default index of the same root, in its work tree where an earlier version put it there
/// (`None` in the main worktree or outside git).
fn seed_index_dir(root: &Path) -> Option<PathBuf> {
    let place = codectx_history::worktree_place(root)?;
    if place.git_dir == place.common_dir {
        return None;
    }
    // A linked worktree names it `<git dir>/../..`.
    let common_dir = place.common_dir.canonicalize().ok()?;
    let main_root = common_dir
        .parent()
        .filter(|_| common_dir.file_name() == Some(".git".as_ref()));
    let in_tree = main_root.map(|r| r.join(&place.prefix).join(DEFAULT_INDEX_DIR));
    match in_tree {
        Some(dir) if dir.exists() => Some(dir),
        _ => Some(index_dir_in(&common_dir, &place.prefix)),
    }
}

/// The default index's directory in a worktree's git directory ([`default_index_dir`]).
const GIT_INDEX_DIR: [&str; 2] = ["codectx", "index"];

/// The directory of a local URI (`/path`, `./path`, `file:///path`); `None` for object stores.
fn local_path(uri: &str) -> Option<PathBuf> {
    if let Some(path) = uri.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    (!uri.contains("://")).then(|| PathBuf::from(uri))
}

/// Entries of a local index directory that are neither our tables nor our own files.
fn foreign_entries(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            !n.ends_with(".lance")
                && n != ".gitignore"
                && n != REVISIONS_DIR
                && n != VECTORS_DIR
                && n != crate::lock::LOCK_FILE
                && n != crate::lock::DIRTY_FILE
                && n != crate::clone::CLONES_DIR
                && n != crate::clone::CLONED_FROM_FILE
                && !n.starts_with(PROJECT_IMAGE)
                && !n.starts_with(LISTINGS_FILE)
                && !n.starts_with(crate::stamps::STAMPS_FILE)
        })
        .collect()
}

/// What is at the index location: its table names, and its meta when it is an index of
/// this layout (else why not: `None` for a fresh location, a reason for anything else).
/// Foreign content is an error unless `rebuild`.
async fn inspect(
    db: &Connection,
    uri: &str,
    local_dir: Option<&Path>,
    rebuild: bool,
) -> Result<(Vec<String>, Result<HashMap<String, String>, Option<String>>), StoreError> {
    let names = db
        .table_names()
        .execute()
        .await
        .map_err(lance_error(uri, "listing tables"))?;
    let ours = [CHUNKS, FILES, META];
    let foreign_files = local_dir.map(foreign_entries).unwrap_or_default();
    let state = if names.iter().any(|n| n == META) {
        match read_meta(db, uri).await {
            Ok(meta) if meta.get("format").map(String::as_str) == Some(FORMAT) => Ok(meta),
            Ok(meta) => Err(Some(format!(
                "index format {} (this build writes {FORMAT})",
                meta.get("format").map_or("unknown", String::as_str)
            ))),
            // The meta table is written last, when the index is created: unreadable beside
            // tables holding nothing, it is a creation that was killed, not a damaged index.
            Err(_) if holds_nothing(db, CHUNKS).await && holds_nothing(db, FILES).await => {
                Err(None)
            }
            Err(reason) => Err(Some(reason)),
        }
    } else {
        let what = names
            .iter()
            .filter(|n| !ours.contains(&n.as_str()))
            .cloned()
            .chain(foreign_files)
            .collect::<Vec<_>>();
        if what.is_empty() {
            // A fresh location, or one whose creation was killed before the meta table
            // (written last) existed: ours to create.
            Err(None)
        } else if !rebuild {
            return Err(StoreError::Foreign {
                uri: uri.to_string(),
                reason: format!("it holds {}", what.join(", ")),
            });
        } else {
            Err(Some(format!("{uri} held {}", what.join(", "))))
        }
    };
    Ok((names, state))
}

/// The index the index at `dir` was cloned from, when that one lost the clone's tags (it
/// was removed or rebuilt, and with it went the files the clone's tables name). Only an
/// index with tables of its own is asked.
async fn orphaned_clone(
    state: &Result<HashMap<String, String>, Option<String>>,
    dir: Option<&Path>,
) -> Option<PathBuf> {
    match (state, dir) {
        (Err(None), _) | (_, None) => None,
        (_, Some(dir)) => orphaned(dir).await,
    }
}

/// Whether table `name` is absent, unreadable or empty.
async fn holds_nothing(db: &Connection, name: &str) -> bool {
    match db.open_table(name).execute().await {
        Ok(table) => table.count_rows(None).await.map_or(true, |n| n == 0),
        Err(_) => true,
    }
}

pub(crate) async fn read_meta(
    db: &Connection,
    uri: &str,
) -> Result<HashMap<String, String>, String> {
    let table = db
        .open_table(META)
        .execute()
        .await
        .map_err(|e| format!("cannot open the meta table: {e}"))?;
    let batches: Vec<_> = table
        .query()
        .execute()
        .await
        .map_err(|e| format!("cannot read the meta table of {uri}: {e}"))?
        .try_collect()
        .await
        .map_err(|e| format!("cannot read the meta table of {uri}: {e}"))?;
    let mut out = HashMap::new();
    for batch in &batches {
        out.extend(batch_to_meta(batch)?);
    }
    Ok(out)
}

async fn create_tables(
    db: &Connection,
    uri: &str,
    spec: Option<&EmbeddingSpec>,
) -> Result<(), StoreError> {
    let lance = |action| lance_error(uri, action);
    let existing = db
        .table_names()
        .execute()
        .await
        .map_err(lance("listing tables"))?;
    for (name, schema) in [(CHUNKS, chunk_schema(spec)), (FILES, files_schema())] {
        if !existing.iter().any(|n| n == name) {
            db.create_empty_table(name, schema)
                .execute()
                .await
                .map_err(lance("creating a table"))?;
        }
    }
    if !existing.iter().any(|n| n == META) {
        let batch = schema::meta_to_batch(&[("format", FORMAT), ("dirty", "0")])
            .expect("the meta batch matches its schema");
        db.create_table(META, batch)
            .execute()
            .await
            .map_err(lance("creating the meta table"))?;
    }
    Ok(())
}

async fn open(db: &Connection, uri: &str, name: &str) -> Result<Table, StoreError> {
    db.open_table(name)
        .execute()
        .await
        .map_err(|e| StoreError::Corrupt {
            uri: uri.to_string(),
            reason: format!("cannot open the {name} table: {e}"),
        })
}

pub(crate) async fn open_tables(db: &Connection) -> Result<(Table, Table, Table), String> {
    let mut tables = Vec::new();
    for name in [CHUNKS, FILES, META] {
        let table = db
            .open_table(name)
            .execute()
            .await
            .map_err(|e| format!("cannot open the {name} table: {e}"))?;
        // Opening reads the manifest; counting reads fragment metadata: damage shows here.
        table
            .count_rows(None)
            .await
            .map_err(|e| format!("cannot read the {name} table: {e}"))?;
        tables.push(table);
    }
    let meta = tables.pop().unwrap();
    let files = tables.pop().unwrap();
    let chunks = tables.pop().unwrap();
    Ok((chunks, files, meta))
}

impl Store {
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

    pub(crate) async fn meta_value(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.on_live_version(|| self.meta_value_here(key)).await
    }

    async fn meta_value_here(&self, key: &str) -> Result<Option<String>, StoreError> {
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

    /// Runs `read` on this handle's versions of the tables, and when upkeep has removed
    /// their files since (another handle wrote and compacted: see `maintain`), once more on
    /// the latest versions. The rows read may then be newer than what the handle's owner last
    /// synced; its next sync takes the difference in.
    pub(crate) async fn on_live_version<T, F>(&self, read: impl Fn() -> F) -> Result<T, StoreError>
    where
        F: std::future::Future<Output = Result<T, StoreError>>,
    {
        let refresh = || async {
            tracing::debug!("the index moved on under this reader: reading its latest version");
            self.refresh_chunks().await?;
            for (table, action) in [
                (&self.files, "refreshing the files table"),
                (&self.meta, "refreshing the meta table"),
            ] {
                table.checkout_latest().await.map_err(self.lance(action))?;
            }
            // The latest rows are placed by the latest layouts.
            self.reload_layouts().await
        };
        crate::error::read_past_upkeep(1, refresh, read).await
    }

    /// `what`, as recorded for the chunk table's current version, or counted (and, by a
    /// writer holding the lock, `record`ed for the next run that finds this version).
    pub(crate) async fn recorded_count(
        &self,
        what: RecordedCount,
        record: bool,
    ) -> Result<usize, StoreError> {
        let version = self.chunk_version().await?;
        if let Some(count) = self.recorded_at(what, version).await? {
            return Ok(count);
        }
        let count = self.count(what.filter()).await?;
        if record {
            self.set_meta(what.key(), &format!("{version} {count}"))
                .await?;
        }
        Ok(count)
    }

    /// Records the counts recorded for version `from` for the chunk table's current
    /// version, which keeps every row of `from` as it was (upkeep's commits); under the
    /// write lock.
    pub(crate) async fn carry_counts(&self, from: u64) -> Result<(), StoreError> {
        let version = self.chunk_version().await?;
        if version == from {
            return Ok(());
        }
        for what in RecordedCount::ALL {
            self.carry_count(what, from, 0).await?;
        }
        Ok(())
    }

    /// Records for the current version the count of `what` recorded for version `from`,
    /// plus `added`, when one was; under the write lock, after a commit that follows `from`
    /// directly and added `added` rows to the count.
    pub(crate) async fn carry_count(
        &self,
        what: RecordedCount,
        from: u64,
        added: usize,
    ) -> Result<(), StoreError> {
        let version = self.chunk_version().await?;
        if let Some(count) = self.recorded_at(what, from).await? {
            self.set_meta(what.key(), &format!("{version} {}", count + added))
                .await?;
        }
        Ok(())
    }

    async fn recorded_at(
        &self,
        what: RecordedCount,
        version: u64,
    ) -> Result<Option<usize>, StoreError> {
        Ok(self.meta_value(what.key()).await?.and_then(|v| {
            let (at, count) = v.split_once(' ')?;
            (at.parse() == Ok(version)).then(|| count.parse().ok())?
        }))
    }

    pub(crate) async fn chunk_version(&self) -> Result<u64, StoreError> {
        self.chunks
            .version()
            .await
            .map_err(self.lance("reading the chunk table's version"))
    }

    pub(crate) async fn count(&self, filter: &str) -> Result<usize, StoreError> {
        self.count_in(&self.chunks, filter).await
    }

    pub(crate) async fn count_in(
        &self,
        table: &lancedb::Table,
        filter: &str,
    ) -> Result<usize, StoreError> {
        table
            .count_rows(Some(filter.to_string()))
            .await
            .map_err(self.lance("counting rows"))
    }
}

/// Whether the index carries the repository's history, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryStatus {
    /// No sync has run yet in this process.
    NotRead,
    /// The first read is left to a [`HistoryCatchUp`](crate::HistoryCatchUp)
    /// ([`StoreOptions::defer_history`]); until it lands, answers use no history.
    Pending,
    /// History is off; the index is exactly what it is without it.
    Off(HistoryOff),
    /// Read up to `head`.
    On {
        head: String,
        /// Symbols (chunk rows) carrying at least one note.
        symbols: usize,
    },
}

impl std::fmt::Display for HistoryStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistoryStatus::NotRead => f.write_str("not read yet"),
            HistoryStatus::Pending => f.write_str("being read in the background"),
            HistoryStatus::Off(why) => write!(f, "off: {why}"),
            HistoryStatus::On { head, symbols } => write!(
                f,
                "on: read up to commit {}, {symbols} symbols carry commit notes",
                &head[..head.len().min(12)]
            ),
        }
    }
}
