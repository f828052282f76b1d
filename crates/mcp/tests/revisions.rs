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
    let mut calls = serde_json::Map::new();
    let mut call = |label: &str, tool: &str, arguments: Value| {
        let content = session.call(tool, arguments);
        calls.insert(label.to_string(), summary(&content));
        content
    };

    // Every tool at the tag.
    let lookup = "symbol = TokenService > validateToken";
    call(
        "search@v1",
        "codebase_search",
        json!({"query": lookup, "ref": "v1"}),
    );
    call(
        "question@v1",
        "codebase_search",
        json!({"query": "validate a token and open a session", "ref": "v1"}),
    );
    call(
        "hierarchy@v1",
        "get_symbol_hierarchy",
        json!({"symbol_name": "TokenService.validateToken", "ref": "v1"}),
    );
    call(
        "related@v1",
        "find_related_symbols",
        json!({"symbol_name": "validate", "path": "src/auth/tokenService.ts", "ref": "v1"}),
    );
    call(
        "context@v1",
        "get_code_context",
        json!({"query": lookup, "ref": "v1"}),
    );
    call(
        "relationships@v1",
        "get_file_relationships",
        json!({"path": "src/auth/tokenService.ts", "ref": "v1"}),
    );
    call(
        "skeleton@v1",
        "get_file_skeleton",
        json!({"path": "src/auth/tokenService.ts", "ref": "v1"}),
    );
    // What exists only at HEAD, or only in the work tree, is not at the tag.
    call(
        "hierarchy of verifyToken@v1",
        "get_symbol_hierarchy",
        json!({"symbol_name": "TokenService.verifyToken", "ref": "v1"}),
    );
    call(
        "relationships of session.ts@v1",
        "get_file_relationships",
        json!({"path": "src/auth/session.ts", "ref": "v1"}),
    );
    // A branch name and a commit id; HEAD holds the rename but not the draft.
    call(
        "related@main",
        "find_related_symbols",
        json!({"symbol_name": "validate", "path": "src/auth/tokenService.ts", "ref": "main"}),
    );
    call(
        "skeleton@main",
        "get_file_skeleton",
        json!({"path": "src/auth/tokenService.ts", "ref": "main"}),
    );
    call(
        "relationships of session.ts@head-commit",
        "get_file_relationships",
        json!({"path": "src/auth/session.ts", "ref": head}),
    );
    call(
        "draft@main",
        "codebase_search",
        json!({"query": "symbol = draftOnly", "ref": "main"}),
    );
    // The working tree: no ref, or "live".
    call(
        "draft@live",
        "codebase_search",
        json!({"query": "symbol = draftOnly", "ref": "live"}),
    );
    let live = call(
        "skeleton@work-tree",
        "get_file_skeleton",
        json!({"path": "src/auth/tokenService.ts"}),
    );
    // A ref that does not resolve.
    call(
        "search@v9",
        "codebase_search",
        json!({"query": lookup, "ref": "v9"}),
    );
    // The tag again: its engine is kept; the work tree's index holds none of its files.
    call(
        "search@v1 again",
        "codebase_search",
        json!({"query": lookup, "ref": "v1"}),
    );
    let files_before = live["metadata"]["index"]["files"].clone();
    let again = session.call("codebase_search", json!({"query": "symbol = validate"}));
    assert_eq!(again["metadata"]["index"]["files"], files_before);
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
