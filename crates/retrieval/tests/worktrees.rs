//! Issue 40: the worktrees of one repository share the vectors a model computed (by text,
//! in the common git directory), and each still answers from its own files only: nothing
//! that exists only in another worktree (a file committed on its branch, an uncommitted
//! edit) ever reaches an answer, by name, by vector or by file.

use std::path::Path;
use std::sync::Arc;

use codectx_corpus::GitRepo;
use codectx_retrieval::{Engine, EngineOptions, SearchOptions};
use codectx_store::testing::TokenHashEmbedder;
use codectx_store::{Embedder, StoreOptions};

async fn engine(root: &Path, embedder: &Arc<TokenHashEmbedder>, store: StoreOptions) -> Engine {
    let options = EngineOptions {
        store: StoreOptions {
            embedding: Some(embedder.spec()),
            ..store
        },
        embedder: Some(embedder.clone() as Arc<dyn Embedder>),
        reranker: None,
    };
    let mut engine = Engine::open(root, options).await.unwrap();
    engine.embed_pending(&()).await.unwrap();
    engine
}

/// What an answer says about the code: its results and content items, without the
/// question it echoes.
async fn answer_text(engine: &mut Engine, query: &str) -> String {
    let outcome = engine
        .search(query, &SearchOptions::default(), 1)
        .await
        .unwrap();
    let answer = &outcome.answer;
    // The first content item opens with the question: `Search: "…" | …`.
    let content: Vec<&str> = answer
        .content
        .iter()
        .map(|item| match item.text.strip_prefix("Search: ") {
            Some(header) => header.split_once('\n').map_or("", |(_, rest)| rest),
            None => item.text.as_str(),
        })
        .collect();
    serde_json::to_string(&(&answer.results, content)).unwrap()
}

#[tokio::test]
async fn each_worktree_answers_from_its_own_files_while_sharing_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(&dir.path().join("main"));
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/auth"), repo.root());
    repo.commit("auth");
    let mut task_repo = repo.add_worktree(&dir.path().join("task"), "task");
    let task = task_repo.root().to_path_buf();
    // The task's branch commits a new file; its worktree also renames a method wherever it is
    // written, uncommitted.
    std::fs::write(
        task.join("src/auth/draft.ts"),
        "/** Keeps a draft of the session token. */\nexport function draftOnly(token: string): string {\n  return token.trim();\n}\n",
    )
    .unwrap();
    task_repo.commit("draft");
    for file in codectx_corpus::source_files(&task) {
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("validateToken", "verifyToken")).unwrap();
    }

    let embedder = Arc::new(TokenHashEmbedder::new(16));
    let mut in_task = engine(&task, &embedder, StoreOptions::default()).await;
    let embedded_by_task = embedder.take_seen().len();
    let mut in_main = engine(repo.root(), &embedder, StoreOptions::default()).await;
    // The main worktree's texts the task embedded came from the shared vectors: only the
    // chunks the rename changed there were embedded again.
    let embedded_by_main = embedder.take_seen();
    assert!(embedded_by_task > 0);
    assert!(
        !embedded_by_main.is_empty() && embedded_by_main.len() < embedded_by_task / 2,
        "main embedded {} of the task's {embedded_by_task}",
        embedded_by_main.len()
    );
    assert!(
        repo.root().join(".git/codectx/vectors").is_dir(),
        "the vectors are shared in the common git directory"
    );

    let only_in_task = ["draftOnly", "draft.ts", "verifyToken"];
    for query in [
        "symbol = draftOnly",
        "draftOnly",
        "keep a draft of the session token",
        "verifyToken",
        "verify a token",
    ] {
        let main_answer = answer_text(&mut in_main, query).await;
        for name in only_in_task {
            assert!(
                !main_answer.contains(name),
                "main's answer to {query:?} names {name}: {main_answer}"
            );
        }
        let task_answer = answer_text(&mut in_task, query).await;
        assert!(
            !task_answer.contains("validateToken"),
            "the task's answer to {query:?} names the method it renamed: {task_answer}"
        );
    }
    // The same questions do reach the task's own code there.
    for (query, name) in [
        ("symbol = draftOnly", "draftOnly"),
        ("verify a token", "verifyToken"),
    ] {
        let answer = answer_text(&mut in_task, query).await;
        assert!(answer.contains(name), "{query:?}: {answer}");
    }
    let answer = answer_text(&mut in_main, "validate a token").await;
    assert!(answer.contains("validateToken"), "{answer}");
}

/// A revision never checked out shares the work tree's vectors, even with the index kept
/// outside the repository: filling its chunks' vectors sends the model only the text that
/// differs at the revision, and once the engine takes them in, its answers rank with them.
#[tokio::test]
async fn a_revision_fills_its_vectors_from_the_shared_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = auth_at_v1_with_a_draft(dir.path());
    // Most files change after v1: its index is built anew, not cloned from the work
    // tree's (`a_revision_near_the_work_tree_starts_from_its_index`).
    for (i, file) in [
        "src/base.ts",
        "src/config/auth.ts",
        "src/models/auth.ts",
        "src/middleware/auth.ts",
    ]
    .into_iter()
    .enumerate()
    {
        let mut text = std::fs::read_to_string(repo.root().join(file)).unwrap();
        text.push_str(&format!(
            "\nexport function later{i}(): number {{\n  return {i};\n}}\n"
        ));
        repo.write(file, &text);
    }
    repo.commit("draft");

    let elsewhere = tempfile::tempdir().unwrap();
    let embedder = Arc::new(TokenHashEmbedder::new(16));
    let mut at_v1 = open_v1(&repo, elsewhere.path(), &embedder).await;
    let chunks = at_v1.project().chunks().count();
    let mut filler = at_v1.vector_filler().await.unwrap().expect("a model");
    let mut filled = 0;
    loop {
        let progress = filler.step(4).await.unwrap();
        if progress.embedded == 0 {
            assert_eq!(progress.pending, 0);
            break;
        }
        filled += progress.embedded;
    }
    assert_eq!(filled, chunks);
    assert_eq!(
        embedder.take_seen(),
        Vec::<String>::new(),
        "every text at v1 is also in the work tree"
    );

    // What the filler committed is taken in by a sync (or, once upkeep has removed the
    // version the engine was on, by its next read).
    at_v1.refresh(&()).await.unwrap();
    let after = at_v1
        .answer("check the token", &SearchOptions::default(), 1)
        .await
        .unwrap()
        .1;
    assert!(
        after.scored.iter().any(|s| s.vector_similarity.is_some()),
        "{after:?}"
    );
}

/// Issue 40: a revision near the work tree's commit starts as a clone of the work tree's
/// index: its rows and vectors come with it, so nothing is embedded, and it still answers
/// from its own files only.
#[tokio::test]
async fn a_revision_near_the_work_tree_starts_from_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = auth_at_v1_with_a_draft(dir.path());
    repo.commit("draft");

    let elsewhere = tempfile::tempdir().unwrap();
    let embedder = Arc::new(TokenHashEmbedder::new(16));
    let at_v1 = open_v1(&repo, elsewhere.path(), &embedder).await;
    let index = at_v1.project().root().parent().unwrap().join("index");
    assert!(
        index.join("cloned.from").is_file(),
        "{} is not a clone",
        index.display()
    );
    let mut filler = at_v1.vector_filler().await.unwrap().expect("a model");
    let progress = filler.step(64).await.unwrap();
    assert_eq!((progress.embedded, progress.pending), (0, 0));
    assert_eq!(embedder.take_seen(), Vec::<String>::new());
    assert!(
        !at_v1
            .project()
            .chunks()
            .any(|c| c.relative_path.ends_with("draft.ts")),
        "the work tree's draft is not at v1"
    );
}

/// Indexes the work tree of `repo` with a model, its index in a cache directory of the
/// user's (`index.dir`, in `elsewhere`), then opens its tag `v1`. Texts the model saw for
/// the work tree are forgotten first.
async fn open_v1(repo: &GitRepo, elsewhere: &Path, embedder: &Arc<TokenHashEmbedder>) -> Engine {
    let store = StoreOptions {
        uri: Some(elsewhere.join("index").to_string_lossy().into_owned()),
        ..StoreOptions::default()
    };
    // The work tree's index fills the shared vectors.
    engine(repo.root(), embedder, store.clone()).await;
    embedder.take_seen();
    let revision = codectx_retrieval::resolve_revision(repo.root(), "v1").unwrap();
    let options = EngineOptions {
        store,
        embedder: Some(embedder.clone() as Arc<dyn Embedder>),
        reranker: None,
    };
    codectx_retrieval::open_at_revision(repo.root(), &revision, options)
        .await
        .unwrap()
}

/// The auth fixture committed and tagged `v1`, then a draft file added on top.
fn auth_at_v1_with_a_draft(dir: &Path) -> GitRepo {
    let mut repo = GitRepo::init(dir);
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/auth"), repo.root());
    repo.commit("auth");
    repo.git(&["tag", "v1"]);
    repo.write(
        "src/auth/draft.ts",
        "export function draftOnly(token: string): string {\n  return token.trim();\n}\n",
    );
    repo
}
