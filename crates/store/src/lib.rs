//! The on-disk index (files → parser → chunker → graph facts → **store** → retrieval → …).
//!
//! A [`Store`] keeps a project's [`CodeChunk`]s — the blueprint's LanceDB schema, with
//! `vector`, `contentHash` and `lastModified` — and each file's graph facts in an embedded
//! LanceDB database, and [`Store::sync`] brings it up to date with the blueprint's
//! incremental algorithm:
//!
//! 1. enumerate the source files (gitignore-aware; `node_modules`, build directories and
//!    declaration files left out; once read, minified bundles and compiled files naming
//!    their source map too, `codectx_files::Generated`);
//! 2. a file whose mtime and size match the last sync is unchanged — nothing is read;
//! 3. otherwise its SHA-256 decides: same content → only the recorded mtime moves
//!    ("touched", e.g. by a git checkout); new content → the file is parsed, chunked and its
//!    rows replaced in one commit with the other changed files;
//! 4. rows of removed files are deleted;
//! 5. **signature cascade**: chunks of other files whose `embeddingText` contains a
//!    signature that changed lose their vector and are re-embedded with the new rows.
//!
//! Embedding is a separate pass over rows without a vector ([`Store::embed_pending`], run
//! by `sync` when it is given an [`Embedder`]), so lexical and structural answers never
//! wait for it, and a chunk whose text did not change keeps its vector.
//!
//! Writes are few, ordered commits: chunk rows first, the files table (the record of what
//! is indexed) after, bracketed by a `dirty` mark (a file in a local index). A sync killed anywhere leaves either a
//! consistent index or the mark, and the next sync repairs a marked index to what a clean
//! build gives. One process writes at a time (a lock file beside the tables); readers
//! never wait.
//!
//! ```no_run
//! # async fn demo() -> Result<(), codectx_store::StoreError> {
//! use codectx_store::{Store, StoreOptions};
//! let mut store = Store::open(std::path::Path::new("."), StoreOptions::default()).await?;
//! let stats = store.sync(None, &()).await?;
//! println!("{} files parsed, {} unchanged", stats.files_parsed, stats.files_unchanged);
//! # Ok(()) }
//! ```

mod clone;
mod embedding;
mod error;
mod history;
mod layout;
mod lock;
mod maintain;
mod parse_cache;
mod process;
mod report;
mod revisit;
mod schema;
mod search;
mod sql;
mod stamps;
mod store;
mod sync;
/// Test support (a deterministic embedder): for this crate's tests and examples, behind the
/// `testing` feature.
#[cfg(feature = "testing")]
pub mod testing;
mod text_index;
mod text_table;
mod vector_cache;
mod write;

pub use codectx_chunker::CodeChunk;
pub use codectx_embed::{EmbedError, Embedder, EmbeddingSpec};
pub use codectx_files::FileSelection;
pub use codectx_history::{HistoryAt, HistoryOff, HistoryOptions};
pub use error::StoreError;
pub use history::{HistoryCatchUp, MAX_NOTES_PER_SYMBOL};
pub use layout::{Layout, Placement};
pub use report::{EmbedProgress, SyncEvent, SyncObserver, SyncStats, SyncTimings, VectorCounts};
pub use schema::{FileRecord, FileStatus, HISTORY_SEPARATOR, SkipReason, StoredChunk};
pub use search::{ChunkFilter, LexicalHit, VectorHit};
pub use store::{
    ChunksByFile, HistoryStatus, IndexSeed, PROJECT_IMAGE, Shared, Store, StoreOptions,
    SyncChanges, default_index_dir,
};
pub use sync::SyncScope;
pub use text_table::TextSearch;

/// The index directory's name under the project root outside git ([`default_index_dir`]).
pub const DEFAULT_INDEX_DIR: &str = ".codectx";
