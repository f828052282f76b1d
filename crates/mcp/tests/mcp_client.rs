//! End to end: the official MCP Python SDK (`mcp` on PyPI) drives the `mcp-server` binary
//! over stdio — initialize, tools/list, codebase_search in both modes, every navigation
//! tool, coded errors, concurrent calls, and a file edited between calls.
//!
//! The SDK is installed once with pip into the corpus cache (PyPI is reachable from CI); the check logic lives in `tests/e2e/client.py`, which prints what the server said
//! for the snapshot below.

use std::path::Path;
use std::process::Command;

/// The SDK release the client is written against.
const MCP_SDK: &str = "mcp==2.3.0";

#[test]
fn network_the_python_sdk_drives_every_tool_over_stdio() {
    let Some(sdk) = codectx_corpus::needs_network(
        "the MCP Python SDK from PyPI",
        codectx_corpus::pip_packages("mcp-python-sdk", &[MCP_SDK]),
    ) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/auth"), root.path());
    // Large enough that the first indexing outlasts the first call (progress notifications).
    let large = tempfile::tempdir().unwrap();
    for i in 0..3000 {
        let dir = large.path().join(format!("src/m{}", i % 30));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.ts")),
            format!(
                "import {{ task{} }} from './f{}';\n\nexport function task{i}(n: number): number {{\n  return task{}(n) * {i};\n}}\n",
                (i + 30) % 3000,
                (i + 30) % 3000,
                (i + 30) % 3000
            ),
        )
        .unwrap();
    }
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/client.py");
    let output = Command::new("python3")
        .arg(&client)
        .arg(env!("CARGO_BIN_EXE_mcp-server"))
        .arg(root.path())
        .arg(large.path())
        .env("PYTHONPATH", &sdk)
        // The local model is not needed: this test is about the protocol.
        .env("CODECTX_MODEL_DIR", root.path().join("no-model"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the MCP client failed:\n{stderr}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    insta::assert_json_snapshot!("python_sdk_session", summary);
}
