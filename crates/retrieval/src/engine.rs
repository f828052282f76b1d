//! [`Engine`]: one project's index, graph and models, answering queries end to end —
//! freshness sync → candidates → rerank → blend → select → enrich → assemble.

use std::path::Path;
use std::sync::Arc;

use codectx_embed::{Embedder, Reranker};
use codectx_store::{Store, StoreOptions, SyncObserver, SyncStats};

use crate::search::{Ranking, SearchMode, SearchOptions, rank, select_chunks};
use crate::{Answer, AnswerOptions, Project, RetrievalError, assemble, search_symbol};

/// How to open an [`Engine`].
#[derive(Clone, Default)]
pub struct EngineOptions {
    pub store: StoreOptions,
    /// Embeds queries (and, through [`Engine::embed_pending`], chunks). `None`: lexical and
    /// structural search only.
    pub embedder: Option<Arc<dyn Embedder>>,
    pub reranker: Option<Arc<dyn Reranker>>,
}

/// A search's answer with how it was reached.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    pub answer: Answer,
    /// Every candidate, scored, best first (before the gate and the budget).
    pub ranking: Ranking,
    /// What the freshness sync before the query did.
    pub sync: SyncStats,
}

/// A project opened for queries. Every query first brings the index up to date with the
/// files (the blueprint's "sync on every call"); the graph and chunks in memory are
/// re-linked from the store only when that sync changed something.
pub struct Engine {
    store: Store,
    project: Project,
    embedder: Option<Arc<dyn Embedder>>,
    reranker: Option<Arc<dyn Reranker>>,
}

impl Engine {
    /// Opens (or creates) the index of `root`, syncs it (structure only: no embedding) and
    /// links the project from it.
    pub async fn open(root: &Path, mut options: EngineOptions) -> Result<Self, RetrievalError> {
        if let Some(embedder) = &options.embedder {
            options.store.embedding = Some(embedder.spec());
        }
        let mut store = Store::open(root, options.store).await?;
        store.sync(None, &()).await?;
        let project = Project::from_index(&store).await?;
        Ok(Self {
            store,
            project,
            embedder: options.embedder,
            reranker: options.reranker,
        })
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether queries can use vectors at all (an embedding model is configured).
    pub fn has_embedder(&self) -> bool {
        self.embedder.is_some()
    }

    /// Brings the index up to date with the files (structure only) and re-links the
    /// project when anything changed.
    pub async fn refresh(
        &mut self,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, RetrievalError> {
        let stats = self.store.sync(None, observer).await?;
        if stats.files_parsed + stats.files_removed + stats.files_skipped > 0 || stats.repaired {
            self.project = Project::from_index(&self.store).await?;
        }
        Ok(stats)
    }

    /// Embeds every chunk that has no vector yet (nothing without an embedder).
    pub async fn embed_pending(
        &mut self,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, RetrievalError> {
        match &self.embedder {
            Some(embedder) => Ok(self
                .store
                .embed_pending(embedder.as_ref(), observer)
                .await?),
            None => Ok(SyncStats::default()),
        }
    }

    /// Ranks `query`'s candidates (no sync, no selection).
    pub async fn rank(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Ranking, RetrievalError> {
        rank(
            &self.store,
            &self.project,
            self.embedder.as_deref(),
            self.reranker.as_deref(),
            query,
            options,
        )
        .await
    }

    /// Answers a `codebase_search` query: `symbol = …` is a lookup, anything else runs the
    /// retrieval pipeline. Syncs first.
    pub async fn search(
        &mut self,
        query: &str,
        options: &SearchOptions,
        call_depth: i32,
    ) -> Result<SearchOutcome, RetrievalError> {
        let sync = self.refresh(&()).await?;
        let answer_options = AnswerOptions {
            budget: options.max_token_budget,
            call_depth,
        };
        if let Some(answer) = search_symbol(&self.project, query, &answer_options) {
            return Ok(SearchOutcome {
                answer: answer?,
                ranking: Ranking {
                    scored: Vec::new(),
                    mode: SearchMode::Lexical,
                },
                sync,
            });
        }
        let ranking = self.rank(query, options).await?;
        let selected = select_chunks(&self.project, &ranking, options);
        let mut answer = assemble(&self.project, query, &selected, &answer_options);
        if selected.is_empty() {
            answer.message = Some(self.why_empty(&ranking, options));
        }
        Ok(SearchOutcome {
            answer,
            ranking,
            sync,
        })
    }

    /// A sentence saying why a search found nothing.
    fn why_empty(&self, ranking: &Ranking, options: &SearchOptions) -> String {
        let indexed = self.project.files().len();
        if indexed == 0 {
            return "Nothing is indexed: no TypeScript or JavaScript files were found under the root.".into();
        }
        let filtered = !options.filter.paths.is_empty() || !options.filter.languages.is_empty();
        if filtered
            && !self
                .project
                .files()
                .iter()
                .any(|f| options.filter.matches(&f.relative_path))
        {
            return "No indexed file matches the path/language filter.".into();
        }
        match ranking.scored.first() {
            None => "No code matched the query.".into(),
            Some(best) => format!(
                "No result reached the relevance threshold {:.2} (best score {:.2}, {}).",
                options.minimum_relevance_threshold, best.final_score, best.relative_path
            ),
        }
    }
}
