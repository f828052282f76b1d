//! The MCP tools' arguments: whatever a client sends as a `tools/call`, and whatever line it
//! writes instead of JSON-RPC, gets an answer or a coded error, and the session keeps
//! serving. The server runs in-process over an in-memory pipe, on a fixed repository.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use codectx_mcp::config::Provider;
use codectx_mcp::{Config, Service};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The tools a client can name, and one it cannot.
const TOOLS: [&str; 7] = [
    "codebase_search",
    "get_symbol_hierarchy",
    "find_related_symbols",
    "get_code_context",
    "get_file_relationships",
    "get_file_skeleton",
    "no_such_tool",
];

/// How long one session may take before the target calls it a hang.
const PATIENCE: Duration = Duration::from_secs(30);

/// The first byte picks the tool; the rest is the call's `arguments` when it is JSON, and
/// otherwise both a raw line on the wire and the `query` of a `codebase_search`-shaped
/// object. The call and a `ping` sent after it must both be answered.
pub fn mcp_request(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let tool = TOOLS[selector as usize % TOOLS.len()];
    let (raw_line, arguments) = match serde_json::from_slice::<Value>(rest) {
        Ok(arguments) => (None, arguments),
        Err(_) => {
            let text = String::from_utf8_lossy(rest).replace(['\n', '\r'], " ");
            (Some(text.clone()), json!({ "query": text }))
        }
    };
    let server = server();
    server.runtime.block_on(async {
        tokio::time::timeout(
            PATIENCE,
            session(Arc::clone(&server.service), tool, raw_line, arguments),
        )
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{tool}: no answer within {PATIENCE:?}; the index: {:?}",
                server.service.state()
            )
        })
    });
}

/// One session: the handshake, the fuzzed messages, a ping; checks what comes back.
async fn session(service: Arc<Service>, tool: &str, raw_line: Option<String>, arguments: Value) {
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(codectx_mcp::serve(service, server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();

    let mut wire = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        }})
        .to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
    ];
    wire.extend(raw_line);
    wire.push(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}})
        .to_string(),
    );
    wire.push(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string());
    // Written beside the reading below, so a long input cannot fill both directions of the
    // pipe at once.
    let writing = tokio::spawn(async move {
        for line in wire {
            client_write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .expect("the server reads its input");
        }
        client_write
    });

    // Requests run concurrently: the ping may be answered before the call.
    let (mut call_answered, mut ping_answered) = (false, false);
    while !(call_answered && ping_answered) {
        let line = lines
            .next_line()
            .await
            .expect("the pipe stays readable")
            .unwrap_or_else(|| panic!("{tool}: the session ended before its answers"));
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            panic!("{tool}: the server wrote a line that is not JSON: {line}");
        };
        match message["id"].as_i64() {
            Some(1) => {
                check_call(tool, &message);
                call_answered = true;
            }
            Some(2) => ping_answered = true,
            _ => {}
        }
    }
    // Both halves go, so the pipe closes and the session ends.
    let client_write = writing.await.expect("the writer finishes");
    drop((lines, client_write));
    let _ = serving.await;
}

/// A call's response is a result with content, or a coded error.
fn check_call(tool: &str, response: &Value) {
    if response.get("error").is_some() {
        assert!(
            response["error"]["code"].is_i64(),
            "{tool}: a JSON-RPC error without a code: {response}"
        );
        return;
    }
    let result = &response["result"];
    assert!(
        result["content"].as_array().is_some_and(|c| !c.is_empty()),
        "{tool}: a result without content: {response}"
    );
    if result["isError"] == true {
        assert!(
            result["structuredContent"]["error"]["code"].is_string(),
            "{tool}: a tool error without a code: {response}"
        );
    }
}

/// The runtime and the service every input talks to, over a copy of
/// `fixtures/retrieval/auth` with its index beside it.
struct FuzzServer {
    runtime: tokio::runtime::Runtime,
    service: Arc<Service>,
    _dir: tempfile::TempDir,
}

fn server() -> &'static FuzzServer {
    static SERVER: OnceLock<FuzzServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path().join("repo");
        let fixture = codectx_corpus::fixture("retrieval/auth");
        codectx_corpus::copy_tree(&fixture, &root);
        let root = root.canonicalize().expect("the copy exists");
        let mut config = Config::default();
        config.index.dir = Some(dir.path().join("index").to_string_lossy().into_owned());
        config.embedding.provider = Provider::None;
        config.history.max_commits = 0;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let service = runtime.block_on(async { Service::start(root, config) });
        FuzzServer {
            runtime,
            service,
            _dir: dir,
        }
    })
}
