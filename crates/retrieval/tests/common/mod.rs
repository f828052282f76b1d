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

/// Everything a query reads from a project, as text: files and chunks, then every
/// declaration with its callees and callers by id.
#[allow(dead_code)] // for the tests that compare projects
pub fn render(project: &Project) -> String {
    let mut out = String::new();
    for file in project.files() {
        out.push_str(&format!("file {}\n", file.relative_path));
        for chunk in &file.chunks {
            out.push_str(&format!(
                "  chunk {} {} {}\n",
                chunk.id, chunk.node_kind, chunk.breadcrumb
            ));
        }
    }
    let graph = project.graph();
    for (f, file) in graph.files().iter().enumerate() {
        for d in 0..file.facts.decls.len() {
            let s = codectx_graph::SymbolRef {
                file: f as u32,
                decl: d as u32,
            };
            let mut callees: Vec<String> = graph
                .callees(s)
                .iter()
                .map(|(c, _)| graph.symbol_id(*c))
                .collect();
            let mut callers: Vec<String> = graph
                .callers(s)
                .iter()
                .map(|(c, _)| graph.caller_id(*c))
                .collect();
            callees.sort();
            callers.sort();
            out.push_str(&format!(
                "decl {} calls {callees:?} called by {callers:?}\n",
                graph.symbol_id(s)
            ));
        }
    }
    out
}
