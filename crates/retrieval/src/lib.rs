//! Query handling over a project (… → store → **retrieval** → snapshot + connection graph
//! → mcp): the library façade other Rust tools embed.
//!
//! Today it holds the project in memory ([`Project`]: every file parsed and chunked, plus
//! the structural graph) and answers what needs no embeddings:
//!
//! - **symbol lookup** (blueprint Phase 6): `symbol = [path >] [Parent >] name`, exact
//!   names, every match, closest names when none ([`lookup`], [`search_symbol`]);
//! - **answers** in the blueprint's result format: connection graph first, then one merged
//!   smart snapshot per file, inside a token budget ([`assemble`]);
//! - **budgeted context** (seed 002's `get_code_context`): ranked symbols fitted into
//!   `max_tokens` as signatures or bodies ([`code_context`]).
//!
//! The store (LanceDB) and the vector/lexical retrieval pipeline plug in front of
//! [`assemble`] and [`code_context`], which take ranked chunks from any source.
//!
//! ```no_run
//! let project = codectx_retrieval::Project::open(std::path::Path::new("."))?;
//! let answer = codectx_retrieval::search_symbol(&project, "symbol = TokenService > validateToken", &Default::default())
//!     .expect("a lookup query")?;
//! for item in &answer.content {
//!     println!("{}", item.text);
//! }
//! # Ok::<(), codectx_retrieval::RetrievalError>(())
//! ```

mod answer;
mod context;
mod engine;
mod lookup;
mod navigate;
mod project;
mod query;
pub mod ranker;
mod revision;
mod scoring;
mod search;
mod status;

use std::path::PathBuf;

pub use answer::{
    Answer, AnswerOptions, CodeCopy, ContentItem, LISTED_COPIES, LOW_CONFIDENCE_CANDIDATES,
    ResultSymbol, Shown, assemble, locate_copies, low_confidence_answer, symbol_metadata,
};
/// Why a revision cannot be answered at.
pub use codectx_history::RevisionError;
/// The kinds results carry.
pub use codectx_parser::SymbolKind;
/// The index types this crate's API takes and returns, so that a front end needs no
/// direct dependency on the store.
pub use codectx_store::{
    ChunkFilter, CodeChunk, EmbedProgress, FileStatus, HistoryCatchUp, HistoryOptions,
    HistoryStatus, Shared, SkipReason, StoreError, StoreOptions, SyncEvent, SyncObserver,
    SyncScope, SyncStats, SyncTimings, TextSearch, VectorCounts, default_index_dir,
};
pub use context::{CodeContext, ContextItem, DEFAULT_MAX_TOKENS, Detail, Strategy, code_context};
pub use engine::{Engine, EngineOptions, Indexer, SearchOutcome, VectorFiller};
pub use lookup::{LOOKUP_PREFIX, Lookup, SymbolQuery, lookup};
pub use navigate::{
    Direction, ErrorCode, HierarchyNode, MAX_HIERARCHY_NODES, NavigationError, RelatedScope,
    RelatedSymbols, SymbolHierarchy, file_relationships, file_skeleton, related_symbols,
    resolve_symbol, symbol_hierarchy,
};
pub use project::{FromImage, Project, ProjectFile, SavedProject, project_names};
pub use query::{Query, StackFrame, TextQuery};
pub use revision::{RevisionRef, asked_revision, mark_used, open_at_revision, resolve_revision};
pub use scoring::{
    PROSE_TERMS, QuestionShape, SearchOptions, blend, calibrated_vector, code_words,
    is_companion_file, is_test_file, query_terms, term_coverage,
};
pub use search::{Ranking, Scored, SearchMode, rank, select, select_chunks};
pub use status::IndexSummary;

/// Errors of query handling, each naming its input.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    #[error(transparent)]
    Index(#[from] codectx_store::StoreError),
    #[error(transparent)]
    Embed(#[from] codectx_embed::EmbedError),
    #[error("{0}: not a directory")]
    NotADirectory(PathBuf),
    #[error("the path in {0:?} leaves the project root")]
    OutsideRoot(String),
    #[error(
        "{0:?} names no symbol: write `symbol = Name`, `symbol = Parent > Name` or `symbol = path/file.ts > Name`"
    )]
    EmptyLookup(String),
    /// A git revision that does not resolve, or whose files cannot be read.
    #[error(transparent)]
    Revision(#[from] RevisionError),
    #[error(
        "answering at a git revision needs a local index directory (index.dir is a remote URI)"
    )]
    RevisionNeedsLocalIndex,
}

/// Answers a `symbol = …` query: `None` when `query` is not a lookup. Several matches are
/// all returned; none gives an empty answer whose message lists the closest names.
pub fn search_symbol(
    project: &Project,
    query: &str,
    options: &AnswerOptions,
) -> Option<Result<Answer, RetrievalError>> {
    match Query::parse(query) {
        Ok(Query::Lookup(parsed)) => Some(Ok(lookup_answer(project, query, &parsed, options))),
        Ok(Query::Text(_)) => None,
        Err(e) => Some(Err(e)),
    }
}

/// The answer to a parsed lookup (`query` is its text, echoed in the answer).
pub fn lookup_answer(
    project: &Project,
    query: &str,
    parsed: &SymbolQuery,
    options: &AnswerOptions,
) -> Answer {
    let found = lookup(project, parsed);
    let ranked: Vec<_> = search::one_copy_each(project, &found.matches)
        .into_iter()
        .map(|c| (c, 1.0))
        .collect();
    let mut answer = assemble(project, query, &ranked, options);
    locate_copies(&mut answer, project);
    if found.matches.is_empty() {
        let scope = parsed
            .file
            .as_deref()
            .map_or(String::new(), |f| format!(" in {f}"));
        answer.message = Some(if found.closest.is_empty() {
            format!("No symbol named {:?}{scope}.", parsed.name)
        } else {
            format!(
                "No symbol named {:?}{scope}. Closest names: {}.",
                parsed.name,
                found.closest.join(", ")
            )
        });
    }
    answer
}
