//! A minimal MCP client for the tests that drive `mcp-server serve` over stdio.
// Each test binary uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// A fresh copy of `fixtures/retrieval/auth`, a small TypeScript project, to serve.
pub fn auth_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/auth"), repo.path());
    repo
}

/// A minimal MCP client over the server's stdio: newline-delimited JSON-RPC.
pub struct Session {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
    /// Notifications the server sent, in order, while the session waited for responses.
    pub notifications: Vec<serde_json::Value>,
}

impl Session {
    /// Starts `mcp-server <args>` with `env` on a fresh `home` and initializes the session.
    pub fn start(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
            .args(args)
            .env("HOME", home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("CODECTX_MODEL_DIR")
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mcp-server runs");
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut session = Session {
            child,
            stdin,
            stdout,
            next_id: 1,
            notifications: Vec::new(),
        };
        session.request(
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fetch-model-test", "version": "0"}
            }),
        );
        session.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    pub fn send(&mut self, message: serde_json::Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Writes one line as it is (it need not be JSON).
    pub fn send_line(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns its result, skipping notifications.
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.exchange(method, params)["result"].clone()
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub fn exchange(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        self.response(id)
    }

    /// The next message with this id, keeping notifications and skipping other responses.
    pub fn response(&mut self, id: u64) -> serde_json::Value {
        use std::io::BufRead;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
            if message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// Calls `tool` and returns its structured content.
    pub fn call(&mut self, tool: &str, arguments: serde_json::Value) -> serde_json::Value {
        let result = self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        );
        result["structuredContent"].clone()
    }

    /// `codebase_search` → (mode, the index's embedding state).
    pub fn search(&mut self, query: &str) -> (String, serde_json::Value) {
        let result = self.request(
            "tools/call",
            serde_json::json!({"name": "codebase_search", "arguments": {"query": query}}),
        );
        let content = &result["structuredContent"];
        (
            content["mode"].as_str().unwrap_or_default().to_string(),
            content["metadata"]["index"]["embedding"].clone(),
        )
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
