//! seed 002's `ref` (FR-212), over MCP: every tool answers at a git tag, a branch head or
//! the working tree; an answer at one never names what exists only at another; a ref that
//! does not resolve is the coded error `ref_not_found`; metadata names the ref and commit.

mod common;

use codectx_corpus::GitRepo;
use common::Session;
use serde_json::{Value, json};

/// The tool's structured content reduced to what the test reads: the metadata's ref and
/// commit, then the error code, or which of the names that differ between the revisions the
/// answer mentions (outside the echoed query).
fn summary(content: &Value) -> Value {
    let mut answer = content.clone();
    if let Some(object) = answer.as_object_mut() {
        for echo in ["query", "message", "metadata"] {
            object.remove(echo);
        }
    }
    let text = answer.to_string();
    let what = if content["error"].is_null() {
        let names = ["validateToken", "verifyToken", "draftOnly", "session.ts"];
        json!(
            names
                .iter()
                .filter(|n| text.contains(*n))
                .collect::<Vec<_>>()
        )
    } else {
        content["error"]["code"].clone()
    };
    json!({
        "ref": content["metadata"]["ref"],
        "commit": content["metadata"]["commit"],
        "answer": what,
    })
}

#[test]
fn every_tool_answers_at_a_ref_and_only_from_its_files() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = common::auth_repo();
    let mut repo = GitRepo::init(repo_dir.path());
    let v1 = repo.commit("first");
    repo.git(&["tag", "v1"]);
    // At HEAD: validateToken renamed, a new file; in the work tree only: a draft.
    let service = repo_dir.path().join("src/auth/tokenService.ts");
    let text = std::fs::read_to_string(&service).unwrap();
    std::fs::write(&service, text.replace("validateToken", "verifyToken")).unwrap();
    repo.write(
        "src/auth/session.ts",
        "import { validate } from './tokenService';\n\nexport function openSession(token: string): boolean {\n  return validate(token);\n}\n",
    );
    let head = repo.commit("rename validateToken to verifyToken");
    repo.write(
        "src/auth/draft.ts",
        "export function draftOnly(): number {\n  return 1;\n}\n",
    );

    let root = repo_dir.path().to_str().unwrap();
    let mut session = Session::start(
        home.path(),
        &["--root", root, "--embedder", "none", "serve"],
        &[],
    );
    // (label, tool, arguments); each answer's summary is snapshotted under its label.
    let lookup = "symbol = TokenService > validateToken";
    let service = "src/auth/tokenService.ts";
    let session_file = "src/auth/session.ts";
    let related = |r: &str| json!({"symbol_name": "validate", "path": service, "ref": r});
    let cases = [
        // Every tool at the tag.
        (
            "search@v1",
            "codebase_search",
            json!({"query": lookup, "ref": "v1"}),
        ),
        (
            "question@v1",
            "codebase_search",
            json!({"query": "validate a token and open a session", "ref": "v1"}),
        ),
        (
            "hierarchy@v1",
            "get_symbol_hierarchy",
            json!({"symbol_name": "TokenService.validateToken", "ref": "v1"}),
        ),
        ("related@v1", "find_related_symbols", related("v1")),
        (
            "context@v1",
            "get_code_context",
            json!({"query": lookup, "ref": "v1"}),
        ),
        (
            "relationships@v1",
            "get_file_relationships",
            json!({"path": service, "ref": "v1"}),
        ),
        (
            "skeleton@v1",
            "get_file_skeleton",
            json!({"path": service, "ref": "v1"}),
        ),
        // What exists only at HEAD, or only in the work tree, is not at the tag.
        (
            "hierarchy of verifyToken@v1",
            "get_symbol_hierarchy",
            json!({"symbol_name": "TokenService.verifyToken", "ref": "v1"}),
        ),
        (
            "relationships of session.ts@v1",
            "get_file_relationships",
            json!({"path": session_file, "ref": "v1"}),
        ),
        // A branch name and a commit id; HEAD holds the rename but not the draft.
        ("related@main", "find_related_symbols", related("main")),
        (
            "skeleton@main",
            "get_file_skeleton",
            json!({"path": service, "ref": "main"}),
        ),
        (
            "relationships of session.ts@head-commit",
            "get_file_relationships",
            json!({"path": session_file, "ref": head}),
        ),
        (
            "draft@main",
            "codebase_search",
            json!({"query": "symbol = draftOnly", "ref": "main"}),
        ),
        // The working tree: no ref, or "live".
        (
            "draft@live",
            "codebase_search",
            json!({"query": "symbol = draftOnly", "ref": "live"}),
        ),
        (
            "skeleton@work-tree",
            "get_file_skeleton",
            json!({"path": service}),
        ),
        // A ref that does not resolve.
        (
            "search@v9",
            "codebase_search",
            json!({"query": lookup, "ref": "v9"}),
        ),
        // The tag again: its engine is kept.
        (
            "search@v1 again",
            "codebase_search",
            json!({"query": lookup, "ref": "v1"}),
        ),
    ];
    let mut calls = serde_json::Map::new();
    for (label, tool, arguments) in cases {
        let content = session.call(tool, arguments);
        calls.insert(label.to_string(), summary(&content));
    }

    // The work tree's index holds none of the revisions' files.
    let again = session.call("codebase_search", json!({"query": "symbol = validate"}));
    let work_tree_files = codectx_corpus::source_files(repo_dir.path()).len();
    assert_eq!(
        again["metadata"]["index"]["files"], work_tree_files,
        "{again}"
    );

    let calls = Value::Object(calls);
    // The commits, checked here by value and named in the snapshot by role.
    let text = calls
        .to_string()
        .replace(&v1, "<v1>")
        .replace(&head, "<head>");
    let calls: Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!(calls);
}

/// Another process may prune a revision a server holds open (an open at another ref
/// removes revisions unused for long): the server answers at that ref again, from a
/// revision it opens anew, instead of failing on every later call.
#[test]
fn a_revision_removed_under_the_server_is_opened_anew() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = common::auth_repo();
    let mut repo = GitRepo::init(repo_dir.path());
    repo.commit("first");
    repo.git(&["tag", "v1"]);
    let root = repo_dir.path().to_str().unwrap();
    let mut session = Session::start(
        home.path(),
        &["--root", root, "--embedder", "none", "serve"],
        &[],
    );
    let ask = json!({"query": "validate a token", "ref": "v1"});
    let first = session.call("codebase_search", ask.clone());
    assert!(first["error"].is_null(), "{first}");
    // Every revision of the repository, whichever worktree asked.
    let refs = repo_dir.path().join(".git/codectx/refs");
    assert!(refs.is_dir());
    // The revision's history is being read and written in the background: remove its
    // directory once nothing writes there any more (a pruning process waits an hour).
    loop {
        if std::fs::remove_dir_all(&refs).is_ok() {
            std::thread::sleep(std::time::Duration::from_millis(500));
            if !refs.exists() {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The next call finds the revision gone and opens it anew (its engine holds the
    // full-text fields in memory, so it could otherwise answer without noticing).
    let _ = session.call("codebase_search", ask.clone());
    let again = session.call("codebase_search", ask);
    assert!(again["error"].is_null(), "{again}");
    assert!(again.to_string().contains("validateToken"), "{again}");
    assert!(refs.is_dir(), "the revision was written again");
}
