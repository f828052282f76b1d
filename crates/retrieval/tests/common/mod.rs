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
        for d in 0..file.facts().decls.len() {
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

/// Writes `text` to `path` under `root`, making its directories.
#[allow(dead_code)] // for the tests that edit a tree
pub fn write_file(root: &std::path::Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A `tsconfig.json` mapping `@lib/*` to `to/*`.
#[allow(dead_code)] // for the tests that change module configurations
pub fn tsconfig_paths(to: &str) -> String {
    format!(r#"{{ "compilerOptions": {{ "baseUrl": ".", "paths": {{ "@lib/*": ["{to}/*"] }} }} }}"#)
}

/// `src/main.ts` calling `greet` through the `@lib/*` alias, which points at `src/lib`;
/// `src/alternative` declares another `greet` for the alias to point at instead.
#[allow(dead_code)] // for the tests that change module configurations
pub fn write_aliased_greet(root: &std::path::Path) {
    write_file(root, "tsconfig.json", &tsconfig_paths("src/lib"));
    write_file(root, "src/lib/greet.ts", "export function greet() {}\n");
    write_file(
        root,
        "src/alternative/greet.ts",
        "export function greet() {}\n",
    );
    write_file(
        root,
        "src/main.ts",
        "import { greet } from '@lib/greet';\nexport function main() {\n  greet();\n}\n",
    );
}

/// In a copy of `fixtures/retrieval/search`: a declaration added to `src/auth/session.ts`,
/// a new file calling into it, and `src/utils/retry.ts` removed. Returns those paths, in
/// order.
#[allow(dead_code)] // for the tests that patch projects
pub fn edit_add_and_remove(root: &std::path::Path) -> [&'static str; 3] {
    let session = root.join("src/auth/session.ts");
    let source = std::fs::read_to_string(&session).unwrap();
    std::fs::write(
        &session,
        format!("{source}\nexport function touchSession() {{}}\n"),
    )
    .unwrap();
    write_file(
        root,
        "src/auth/logout.ts",
        "import { endSession } from \"./session\";\n\nexport function logout(token: string) {\n  endSession(token);\n}\n",
    );
    std::fs::remove_file(root.join("src/utils/retry.ts")).unwrap();
    [
        "src/auth/logout.ts",
        "src/auth/session.ts",
        "src/utils/retry.ts",
    ]
}
