//! Malformed and hostile MCP requests: each gets a coded error (a JSON-RPC error, or a tool
//! error with a code), the server keeps serving, and nothing outside the root is read.

mod common;

use common::Session;
use serde_json::{Value, json};

/// The code of a response that must be an error: the JSON-RPC error's, or the tool error's.
fn error_code(response: &Value) -> String {
    if let Some(code) = response["error"]["code"].as_i64() {
        return code.to_string();
    }
    let result = &response["result"];
    assert_eq!(result["isError"], true, "expected an error: {response}");
    result["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool error without a code: {response}"))
        .to_string()
}

fn call(session: &mut Session, tool: &str, arguments: Value) -> Value {
    session.exchange("tools/call", json!({"name": tool, "arguments": arguments}))
}

#[test]
fn malformed_and_hostile_requests_get_coded_errors_and_the_server_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let repo = common::auth_repo();
    // A secret beside the root, and a symlink from inside the root to it.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("secret.ts"),
        "export const SECRET_OUTSIDE_THE_ROOT = 'do-not-read';\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("src/escape")).unwrap();
    let outside_file = outside.path().join("secret.ts");
    let outside_file = outside_file.to_str().unwrap();

    let root = repo.path().to_str().unwrap();
    let mut s = Session::start(
        home.path(),
        &["--root", root, "--embedder", "none", "serve"],
        &[],
    );
    let mut codes = Vec::new();

    // Not JSON at all, then a request cut short: the server answers what it can and goes on.
    s.send_line("this is not json");
    s.send_line(r#"{"jsonrpc": "2.0", "id": 1000, "method": "tools/list""#);
    // An unknown method and an unknown tool.
    codes.push((
        "unknown method",
        error_code(&s.exchange("tools/unknown", json!({}))),
    ));
    codes.push((
        "unknown tool",
        error_code(&call(&mut s, "no_such_tool", json!({"query": "x"}))),
    ));
    // Wrong argument types and missing arguments.
    codes.push((
        "query is a number",
        error_code(&call(&mut s, "codebase_search", json!({"query": 5}))),
    ));
    codes.push((
        "no query",
        error_code(&call(&mut s, "codebase_search", json!({}))),
    ));
    codes.push((
        "path is a number",
        error_code(&call(&mut s, "get_file_skeleton", json!({"path": 7}))),
    ));
    // Budgets of zero and below.
    codes.push((
        "max_tokens -1",
        error_code(&call(
            &mut s,
            "get_code_context",
            json!({"query": "token", "max_tokens": -1}),
        )),
    ));
    let zero = call(
        &mut s,
        "get_code_context",
        json!({"query": "validate a token", "max_tokens": 0}),
    );
    if zero["result"]["isError"] == true {
        codes.push(("max_tokens 0", error_code(&zero)));
    } else {
        let tokens = zero["result"]["structuredContent"]["estimated_tokens"].as_u64();
        assert_eq!(tokens, Some(0), "a zero budget holds nothing: {zero}");
    }
    // Paths out of the root: relative, absolute, through a symlink.
    for (what, path) in [
        ("skeleton ../", "../../../etc/passwd".to_string()),
        ("skeleton absolute", outside_file.to_string()),
        ("skeleton via symlink", "src/escape/secret.ts".to_string()),
    ] {
        let response = call(&mut s, "get_file_skeleton", json!({ "path": path }));
        assert!(
            !response.to_string().contains("SECRET_OUTSIDE_THE_ROOT"),
            "{what} read outside the root: {response}"
        );
        codes.push((what, error_code(&response)));
    }
    for (what, arguments) in [
        (
            "search path filter ../",
            json!({"query": "secret", "path": ["../"]}),
        ),
        (
            "search path filter absolute",
            json!({"query": "secret", "path": [outside.path().to_str().unwrap()]}),
        ),
        (
            "lookup ../",
            json!({"query": format!("symbol = ../{} > SECRET_OUTSIDE_THE_ROOT", outside.path().file_name().unwrap().to_str().unwrap())}),
        ),
        (
            "lookup via symlink",
            json!({"query": "symbol = src/escape/secret.ts > SECRET_OUTSIDE_THE_ROOT"}),
        ),
    ] {
        let response = call(&mut s, "codebase_search", arguments);
        assert!(
            !response.to_string().contains("do-not-read"),
            "{what} read outside the root: {response}"
        );
        if response["result"]["isError"] == true || response.get("error").is_some() {
            codes.push((what, error_code(&response)));
        } else {
            let results = &response["result"]["structuredContent"]["results"];
            assert_eq!(results, &json!([]), "{what}: {response}");
            codes.push((what, "no results".to_string()));
        }
    }
    // A 1 MB query is answered (or refused with a code) without taking the server down.
    let huge = "token ".repeat(175_000);
    let response = call(&mut s, "codebase_search", json!({ "query": huge }));
    if response["result"]["isError"] == true || response.get("error").is_some() {
        codes.push(("1 MB query", error_code(&response)));
    } else {
        codes.push(("1 MB query", "answered".to_string()));
    }

    // Still serving, with the right answer.
    let found = s.call(
        "codebase_search",
        json!({"query": "symbol = TokenService > validateToken"}),
    );
    assert_eq!(
        found["results"][0]["file"], "src/auth/tokenService.ts",
        "{found}"
    );
    // A lookup that finds nothing says why, and what is close, in the text a model reads.
    let missed = s.request(
        "tools/call",
        json!({"name": "codebase_search", "arguments": {"query": "symbol = TokenService.validateTokn"}}),
    );
    let text = missed["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(
            "No symbol named \"TokenService.validateTokn\". Closest names: validateToken"
        ),
        "{missed}"
    );
    let table: String = codes
        .iter()
        .map(|(what, code)| format!("{what}: {code}\n"))
        .collect();
    insta::assert_snapshot!("hostile_requests", table);
}
