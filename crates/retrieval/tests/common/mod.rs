//! Shared by the retrieval tests.

use std::sync::{Arc, OnceLock};

use codectx_embed::{LocalEmbedder, Reranker};
use codectx_retrieval::{Engine, EngineOptions, Project};
use codectx_store::StoreOptions;

/// `fixtures/retrieval/auth`, parsed once per test binary.
#[allow(dead_code)] // not every test binary reads it
pub fn auth_project() -> &'static Project {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let root = codectx_corpus::fixture("retrieval/auth");
        Project::open(&root).unwrap()
    })
}

/// An engine over the fixture project `fixtures/<fixture>`, its index in `index` (the fixture
/// stays clean), lexical unless given a model.
#[allow(dead_code)] // not every test binary opens an engine
pub async fn engine_at(
    fixture: &str,
    index: &tempfile::TempDir,
    embedder: Option<Arc<LocalEmbedder>>,
    reranker: Option<Arc<dyn Reranker>>,
) -> Engine {
    let options = EngineOptions {
        store: StoreOptions {
            uri: Some(index.path().join("idx").to_string_lossy().into_owned()),
            // The fixture sits inside this project's repository, whose history moves with
            // every commit of ours: the rankings here are the code's alone.
            history: codectx_store::HistoryOptions {
                max_commits: 0,
                ..Default::default()
            },
            // For the same reason, its shared vectors stay in the test's directory, not in
            // our `.git`.
            shared_vectors: codectx_store::Shared::At(index.path().join("vectors")),
            ..Default::default()
        },
        embedder: embedder.map(|e| e as Arc<dyn codectx_embed::Embedder>),
        reranker,
    };
    let mut engine = Engine::open(&codectx_corpus::fixture(fixture), options)
        .await
        .unwrap();
    engine.embed_pending(&()).await.unwrap();
    engine
}
