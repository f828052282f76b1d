//! What an agent receives over MCP: code that stands twice (`fixtures/retrieval/mirror`, a
//! generated mirror of `src/`) is shown once, and its copy is located in the structured
//! results and in the text.

mod common;

use common::Session;
use serde_json::json;

#[test]
fn a_copy_is_located_in_structured_content_and_text() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/mirror"), repo.path());
    let root = repo.path().to_str().unwrap();
    let mut session = Session::start(
        home.path(),
        &["--root", root, "--embedder", "none", "serve"],
        &[],
    );
    let query = "compose the middleware into one handler that dispatches each in order";
    let result = session.request(
        "tools/call",
        json!({"name": "codebase_search", "arguments": {"query": query}}),
    );
    let results = result["structuredContent"]["results"].as_array().unwrap();
    // One result, from `src/`, naming its copy in the mirror.
    let places: Vec<(&str, Vec<&str>)> = results
        .iter()
        .map(|r| {
            let copies = r["copies"].as_array().map_or(Vec::new(), |copies| {
                copies.iter().filter_map(|c| c["file"].as_str()).collect()
            });
            (r["file"].as_str().unwrap(), copies)
        })
        .collect();
    assert_eq!(places, [("src/compose.ts", vec!["deno_dist/compose.ts"])]);
    let text: String = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert_eq!(text.matches("const dispatch = (i) =>").count(), 1, "{text}");
    assert!(
        text.contains("is also, character for character, at deno_dist/compose.ts:"),
        "{text}"
    );

    let context = session.call(
        "get_code_context",
        json!({"query": query, "strategy": "depth"}),
    );
    let items = context["context_items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{context}");
    assert_eq!(items[0]["copies"][0]["file"], "deno_dist/compose.ts");
}
