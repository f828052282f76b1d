//! [`Engine`]: one project's index, graph and models, answering queries end to end —
//! freshness sync → candidates → rerank → blend → select → enrich → assemble.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use codectx_chunker::CodeChunk;
use codectx_embed::{Embedder, Reranker};
use codectx_snapshot::SkeletonCache;
use codectx_store::{
    EmbedProgress, HistoryCatchUp, Store, StoreOptions, SyncObserver, SyncScope, SyncStats,
    VectorCounts,
};

use crate::scoring::SearchOptions;
use crate::search::{Ranking, rank, select_chunks};
use crate::status::IndexSummary;
use crate::{
    Answer, AnswerOptions, CodeContext, LOW_CONFIDENCE_CANDIDATES, Project, Query, RetrievalError,
    SavedProject, Strategy, TextQuery, assemble, code_context, locate_copies, lookup,
    lookup_answer, low_confidence_answer,
};

/// Above this many files changed by another process, a sync re-reads the whole project from
/// the index instead of patching it: one scan beats thousands of filtered reads.
const MAX_PATCHED_FILES: usize = 256;

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
    /// The index and the model that embeds for it.
    index: Indexer,
    project: Project,
    /// The project image beside the index holds `project` ([`Engine::save_project_image`]).
    image_saved: bool,
    reranker: Option<Arc<dyn Reranker>>,
    skeletons: SkeletonCache,
}

impl Engine {
    /// Opens (or creates) the index of `root`, syncs it (structure only: no embedding) and
    /// links the project from it.
    pub async fn open(root: &Path, options: EngineOptions) -> Result<Self, RetrievalError> {
        Self::open_with(root, options, &()).await
    }

    /// [`Engine::open`], reporting the first sync's progress to `observer`.
    pub async fn open_with(
        root: &Path,
        mut options: EngineOptions,
        observer: &dyn SyncObserver,
    ) -> Result<Self, RetrievalError> {
        options.store.hand_over_changes = true;
        let started = Instant::now();
        let mut index = Indexer::open(root, &options).await?;
        let opened = started.elapsed();
        // A saved project image is of the state before the sync, whose changes patch it: it
        // is read beside the sync.
        let before = index.store.content_digest();
        let saved = tokio::task::spawn_blocking(SavedProject::reader(&index.store, &before)?);
        let sync = index.sync(observer).await?;
        let saved = saved
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        tracing::debug!(?opened, steps = ?sync.timings, "index opened and synced");
        let (project, image_current) = match index.store.take_changes() {
            // A new index: link what the sync parsed instead of reading it back.
            Some(changes) if changes.complete => {
                (Project::from_changes(&index.store, changes)?, false)
            }
            // A repair forgets rows the sync did not write: only the index knows the state.
            changes if !sync.repaired => {
                match Project::from_saved(&index.store, saved, changes).await? {
                    Some(loaded) => (loaded.project, !loaded.patched),
                    None => (Project::from_index(&index.store).await?, false),
                }
            }
            _ => (Project::from_index(&index.store).await?, false),
        };
        Ok(Self {
            index,
            project,
            image_saved: image_current,
            reranker: options.reranker,
            skeletons: SkeletonCache::default(),
        })
    }

    /// Saves the project beside the index unless the image there holds it already, so
    /// that the next [`Engine::open`] of this index reads it instead of reading every row
    /// and linking ([`Project::from_image`]). A one-shot command calls it once it has
    /// answered; it costs about what a load from the index does (on babel, 0.17 s).
    pub fn save_project_image(&mut self) {
        if !self.image_saved {
            self.project.save_image(&self.index.store);
            self.image_saved = true;
        }
    }

    /// Cached file skeletons (seed 004), valid across refreshes: keyed by content.
    pub fn skeletons(&self) -> &SkeletonCache {
        &self.skeletons
    }

    /// How many chunks the index holds and how many have a vector (another handle may be
    /// embedding them).
    pub async fn vector_counts(&mut self) -> Result<VectorCounts, RetrievalError> {
        Ok(self.index.store.vector_counts().await?)
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    pub fn store(&self) -> &Store {
        &self.index.store
    }

    /// Whether queries can use vectors at all (an embedding model is configured).
    pub fn has_embedder(&self) -> bool {
        self.index.embedder.is_some()
    }

    /// Brings the index up to date with the files (structure only) and re-links the
    /// project when anything changed.
    pub async fn refresh(
        &mut self,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, RetrievalError> {
        self.refresh_in(&SyncScope::Tree, observer).await
    }

    /// [`Engine::refresh`], looking for changed files only where `scope` says (the
    /// directories a file watcher saw changes in).
    pub async fn refresh_in(
        &mut self,
        scope: &SyncScope,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, RetrievalError> {
        let stats = self.index.store.sync_in(scope, None, observer).await?;
        let changes = self.index.store.take_changes();
        match changes {
            // A repair forgets rows the sync did not write: only the index knows the state.
            _ if stats.repaired => self.project = Project::from_index(&self.index.store).await?,
            Some(c) if c.elsewhere.len() > MAX_PATCHED_FILES => {
                self.project = Project::from_index(&self.index.store).await?
            }
            Some(c) if c.moves_project() => {
                self.project.apply_changes(&self.index.store, c).await?
            }
            _ => return Ok(stats),
        }
        self.image_saved = false;
        Ok(stats)
    }

    /// Embeds every chunk that has no vector yet (nothing without an embedder).
    pub async fn embed_pending(
        &mut self,
        observer: &dyn SyncObserver,
    ) -> Result<SyncStats, RetrievalError> {
        self.index.embed_pending(observer).await
    }

    /// Whether answers use the repository's history, as of the last sync.
    pub fn history(&self) -> &codectx_store::HistoryStatus {
        self.index.store.history()
    }

    /// The first history read this engine's sync left for later
    /// ([`StoreOptions::defer_history`](codectx_store::StoreOptions::defer_history)), to run
    /// apart from queries; `None` when none is pending. The engine's next sync after it
    /// lands searches the notes.
    pub async fn history_catch_up(&self) -> Result<Option<HistoryCatchUp>, RetrievalError> {
        Ok(self.index.store.history_catch_up().await?)
    }

    /// A second handle on this engine's index that computes missing vectors step by step,
    /// so that queries on the engine never wait for the model. `None` without an embedder.
    pub async fn vector_filler(&self) -> Result<Option<VectorFiller>, RetrievalError> {
        let Some(embedder) = &self.index.embedder else {
            return Ok(None);
        };
        let store = Store::open(self.index.store.root(), self.index.store_options.clone()).await?;
        Ok(Some(VectorFiller {
            store,
            embedder: Arc::clone(embedder),
        }))
    }

    /// The chunks [`Engine::answer`] is made of, best first, on the index as it is: a
    /// lookup's matches (score 1), or the gated, budgeted selection of the ranking.
    pub async fn select(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Vec<(&CodeChunk, f32)>, RetrievalError> {
        Ok(match Query::parse(query)? {
            Query::Lookup(parsed) => lookup_matches(&self.project, &parsed),
            Query::Text(question) => {
                let ranking = self.rank_question(&question, options).await?;
                select_chunks(&self.project, &ranking, options)
            }
        })
    }

    /// [`Engine::select`] from a ranking already made for `query` (a
    /// [`SearchOutcome`]'s), so a caller that shows both the answer and its chunks ranks
    /// once. A lookup ignores `ranking`.
    pub fn select_ranked<'e>(
        &'e self,
        query: &str,
        ranking: &Ranking,
        options: &SearchOptions,
    ) -> Result<Vec<(&'e CodeChunk, f32)>, RetrievalError> {
        Ok(match Query::parse(query)? {
            Query::Lookup(parsed) => lookup_matches(&self.project, &parsed),
            Query::Text(_) => select_chunks(&self.project, ranking, options),
        })
    }

    /// Ranks `query`'s candidates (no sync, no selection); a lookup ranks nothing.
    pub async fn rank(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<Ranking, RetrievalError> {
        match Query::parse(query)? {
            Query::Lookup(_) => Ok(Ranking::of_lookup()),
            Query::Text(question) => self.rank_question(&question, options).await,
        }
    }

    async fn rank_question(
        &self,
        question: &TextQuery,
        options: &SearchOptions,
    ) -> Result<Ranking, RetrievalError> {
        rank(
            &self.index.store,
            &self.project,
            self.index.embedder.as_deref(),
            self.reranker.as_deref(),
            question,
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
        let (answer, ranking) = self.answer(query, options, call_depth).await?;
        Ok(SearchOutcome {
            answer,
            ranking,
            sync,
        })
    }

    /// [`Engine::search`] on the index as it is (no sync): the answer and the ranking it
    /// was selected from (empty for a lookup).
    pub async fn answer(
        &self,
        query: &str,
        options: &SearchOptions,
        call_depth: i32,
    ) -> Result<(Answer, Ranking), RetrievalError> {
        let answer_options = AnswerOptions {
            budget: options.max_token_budget,
            call_depth,
        };
        let question = match Query::parse(query)? {
            Query::Lookup(symbol) => {
                let answer = lookup_answer(&self.project, query, &symbol, &answer_options);
                return Ok((answer, Ranking::of_lookup()));
            }
            Query::Text(question) => question,
        };
        let started = Instant::now();
        let ranking = self.rank_question(&question, options).await?;
        tracing::debug!(elapsed = ?started.elapsed(), "ranked");
        let selected = select_chunks(&self.project, &ranking, options);
        if selected.is_empty() && options.gate && ranking.scored.iter().any(|s| s.final_score > 0.0)
        {
            // Nothing cleared the gate: the closest candidates, flagged, instead of nothing.
            let closest = self.closest(&ranking, options);
            let mut answer = low_confidence_answer(
                query,
                &closest,
                options.minimum_relevance_threshold,
                &answer_options,
            );
            answer.message = Some(self.why_empty(&ranking, options));
            locate_copies(&mut answer, &self.project);
            return Ok((answer, ranking));
        }
        let started = Instant::now();
        let mut answer = assemble(&self.project, query, &selected, &answer_options);
        locate_copies(&mut answer, &self.project);
        tracing::debug!(elapsed = ?started.elapsed(), "answer assembled");
        if selected.is_empty() {
            answer.message = Some(self.why_empty(&ranking, options));
        }
        Ok((answer, ranking))
    }

    /// seed 002's `get_code_context`: the query's results (a lookup's matches, or what
    /// passes the relevance gate) fitted into `max_tokens` as signatures or bodies. Syncs
    /// first.
    pub async fn code_context(
        &mut self,
        query: &str,
        options: &SearchOptions,
        max_tokens: Option<usize>,
        strategy: Strategy,
    ) -> Result<(CodeContext, SyncStats), RetrievalError> {
        let sync = self.refresh(&()).await?;
        let context = self.context(query, options, max_tokens, strategy).await?;
        Ok((context, sync))
    }

    /// [`Engine::code_context`] on the index as it is (no sync).
    pub async fn context(
        &self,
        query: &str,
        options: &SearchOptions,
        max_tokens: Option<usize>,
        strategy: Strategy,
    ) -> Result<CodeContext, RetrievalError> {
        let chunks: Vec<&CodeChunk> = match Query::parse(query)? {
            Query::Lookup(parsed) => {
                crate::search::one_copy_each(&self.project, &lookup(&self.project, &parsed).matches)
            }
            Query::Text(question) => {
                let ranking = &self.rank_question(&question, options).await?;
                // The token budget is code_context's: no source budget here.
                let unbudgeted = SearchOptions {
                    max_token_budget: usize::MAX,
                    ..options.clone()
                };
                let selected: Vec<&CodeChunk> = select_chunks(&self.project, ranking, &unbudgeted)
                    .into_iter()
                    .map(|(chunk, _)| chunk)
                    .collect();
                if selected.is_empty() && options.gate {
                    // As codebase_search does: the closest candidates, as signatures and
                    // flagged, rather than nothing.
                    let closest: Vec<&CodeChunk> = self
                        .closest(ranking, options)
                        .into_iter()
                        .take(LOW_CONFIDENCE_CANDIDATES)
                        .map(|(chunk, _)| chunk)
                        .collect();
                    if !closest.is_empty() {
                        let mut context =
                            code_context(&self.project, &closest, max_tokens, Strategy::Breadth);
                        context.low_confidence = true;
                        context.suggestion = Some(format!(
                            "Low confidence: no result reached the relevance threshold {:.2} \
                             on more than one word of the question; these are the closest candidates as signatures. Look one up with \
                             `symbol = Name`, or ask again in other words.",
                            options.minimum_relevance_threshold
                        ));
                        return Ok(context);
                    }
                }
                selected
            }
        };
        let chunks = match strategy {
            Strategy::Breadth => with_call_neighbours(&self.project, chunks),
            Strategy::Depth => chunks,
        };
        Ok(code_context(&self.project, &chunks, max_tokens, strategy))
    }

    /// The ranking's candidates without the gate or a budget, best first, for an answer
    /// where nothing cleared the gate. A candidate no channel found evidence for (score 0)
    /// is no candidate.
    fn closest<'e>(
        &'e self,
        ranking: &Ranking,
        options: &SearchOptions,
    ) -> Vec<(&'e CodeChunk, f32)> {
        let ungated = SearchOptions {
            gate: false,
            max_token_budget: usize::MAX,
            ..options.clone()
        };
        select_chunks(&self.project, ranking, &ungated)
            .into_iter()
            .filter(|(_, score)| *score > 0.0)
            .collect()
    }

    /// A sentence saying why a search found nothing.
    fn why_empty(&self, ranking: &Ranking, options: &SearchOptions) -> String {
        let indexed = self.project.files().len();
        if indexed == 0 {
            let read: Vec<&str> = codectx_parser::LANGUAGE_FILTERS
                .iter()
                .map(|(n, _)| *n)
                .collect();
            return format!(
                "Nothing is indexed: no files of the languages read ({}) were found under the root.",
                read.join(", ")
            );
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
            Some(best) if options.gate && best.single_word => format!(
                "No result reached the relevance threshold: the best candidate ({}) shares \
                 only one word with the question.",
                best.relative_path
            ),
            Some(best) => format!(
                "No result reached the relevance threshold {:.2} (best score {:.2}, {}).",
                options.minimum_relevance_threshold, best.final_score, best.relative_path
            ),
        }
    }
}

/// Fills in vectors in the background ([`Engine::vector_filler`]). Each step embeds a few
/// chunks with the model, then takes the index's write lock only for the commit; rows a
/// concurrent sync replaced meanwhile stay pending for a later step.
pub struct VectorFiller {
    store: Store,
    embedder: Arc<dyn Embedder>,
}

impl VectorFiller {
    /// Embeds up to `limit` chunks that have no vector; says how many it did and how many
    /// are still pending (none pending and none done: the index is complete).
    pub async fn step(&mut self, limit: usize) -> Result<EmbedProgress, RetrievalError> {
        Ok(self.store.embed_step(self.embedder.as_ref(), limit).await?)
    }
}

/// The index of a root opened to bring it up to date, without linking a project: what
/// `mcp-server index` needs, and the first half of [`Engine::open`]. On a large repository
/// linking the project is most of a no-change run's time and memory.
pub struct Indexer {
    store: Store,
    /// What the index was opened with.
    store_options: StoreOptions,
    embedder: Option<Arc<dyn Embedder>>,
}

impl Indexer {
    /// Opens (or creates) the index `options` locate for `root`. With an embedder, the index
    /// keeps that model's vectors; without one, it keeps the vectors it has (opening with
    /// another spec would rebuild it), which queries then simply do not use.
    pub async fn open(root: &Path, options: &EngineOptions) -> Result<Self, RetrievalError> {
        let mut store_options = options.store.clone();
        match &options.embedder {
            Some(embedder) => store_options.embedding = Some(embedder.spec()),
            None if store_options.embedding.is_none() => {
                store_options.embedding = Store::recorded_embedding(root, &store_options).await?;
            }
            None => {}
        }
        let store = Store::open(root, store_options.clone()).await?;
        Ok(Self {
            store,
            store_options,
            embedder: options.embedder.clone(),
        })
    }

    /// Brings the index up to date with the files (structure only: no embedding).
    pub async fn sync(&mut self, observer: &dyn SyncObserver) -> Result<SyncStats, RetrievalError> {
        Ok(self.store.sync(None, observer).await?)
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

    /// What the index holds now.
    pub async fn summary(&mut self) -> Result<IndexSummary, RetrievalError> {
        IndexSummary::of(&mut self.store).await
    }
}

/// A lookup's matches as selected chunks (each scores 1).
fn lookup_matches<'p>(
    project: &'p Project,
    query: &crate::SymbolQuery,
) -> Vec<(&'p CodeChunk, f32)> {
    let matches = lookup(project, query).matches;
    crate::search::one_copy_each(project, &matches)
        .into_iter()
        .map(|chunk| (chunk, 1.0))
        .collect()
}

/// How many of a result's callees, and of its callers, a `breadth` context adds: enough to
/// show where a symbol sits, few enough that one much-called helper does not fill the answer.
const CALL_NEIGHBOURS: usize = 4;

/// `chunks`, then what each calls and what calls it (not tests), once each: a `breadth`
/// context gives more symbols as signatures, and the ones structurally tied to its results
/// say where they sit (an answer of one result was one line: `function respond (ctx) { … }`).
fn with_call_neighbours<'p>(
    project: &'p Project,
    chunks: Vec<&'p CodeChunk>,
) -> Vec<&'p CodeChunk> {
    let graph = project.graph();
    let mut seen: HashSet<(&str, &str)> = chunks
        .iter()
        .map(|c| (c.relative_path.as_str(), c.id.as_str()))
        .collect();
    let mut neighbours = Vec::new();
    for chunk in &chunks {
        let Some(declaration) = project.declaration(chunk) else {
            continue;
        };
        let callees: Vec<codectx_graph::SymbolRef> =
            graph.callees(declaration).iter().map(|(s, _)| *s).collect();
        let callers: Vec<codectx_graph::SymbolRef> = graph.declared_callers(declaration).collect();
        for side in [callees, callers] {
            side.into_iter()
                .filter_map(|s| project.chunk_of(s))
                .filter(|c| !crate::scoring::is_test_file(&c.relative_path))
                .filter(|c| seen.insert((c.relative_path.as_str(), c.id.as_str())))
                .take(CALL_NEIGHBOURS)
                .for_each(|c| neighbours.push(c));
        }
    }
    chunks.into_iter().chain(neighbours).collect()
}
