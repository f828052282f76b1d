//! `mcp-server setup <agent>` against a temporary home and repository, in each agent's
//! documented file layout.

use std::path::Path;
use std::process::Command;

fn setup(home: &Path, root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .arg("setup")
        .args(args)
        .args(["--root", root.to_str().unwrap()])
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("npm_command")
        .env_remove("npm_lifecycle_event")
        .env("RUST_LOG", "warn")
        .output()
        .expect("mcp-server runs")
}

fn stdout(output: &std::process::Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn binary() -> String {
    Path::new(env!("CARGO_BIN_EXE_mcp-server"))
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_agent_gets_an_entry_in_its_own_file() {
    let (home, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (h, r) = (home.path(), repo.path());
    for (agent, file, section) in [
        ("claude-code", ".mcp.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("vscode", ".vscode/mcp.json", "servers"),
    ] {
        let out = stdout(&setup(h, r, &[agent]));
        assert!(out.contains("codectx registered"), "{out}");
        let entry = &json(&r.join(file))[section]["codectx"];
        assert_eq!(entry["command"], binary(), "{agent}");
        assert_eq!(entry["args"][0], "serve", "{agent}");
    }
    assert_eq!(
        json(&r.join(".vscode/mcp.json"))["servers"]["codectx"]["type"],
        "stdio"
    );
    assert_eq!(
        json(&r.join(".vscode/mcp.json"))["servers"]["codectx"]["args"],
        serde_json::json!(["serve", "--root", "${workspaceFolder}"])
    );

    stdout(&setup(h, r, &["codex"]));
    let codex: toml::Table = std::fs::read_to_string(r.join(".codex/config.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        codex["mcp_servers"]["codectx"]["command"].as_str(),
        Some(binary().as_str())
    );

    // User-wide files live in the home directory.
    for (agent, file) in [
        ("claude-code", ".claude.json"),
        ("cursor", ".cursor/mcp.json"),
        ("vscode", ".config/Code/User/mcp.json"),
        ("codex", ".codex/config.toml"),
    ] {
        stdout(&setup(h, r, &[agent, "--global"]));
        assert!(h.join(file).is_file(), "{agent}: {file}");
    }
}

/// Started through `npx` (as the npm package runs it), setup registers `npx -y <package>`:
/// the binary npx ran lives in its cache, which may be cleared.
#[test]
fn started_through_npx_setup_registers_npx() {
    let (home, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args([
            "setup",
            "claude-code",
            "--root",
            repo.path().to_str().unwrap(),
        ])
        .env("HOME", home.path())
        .env("npm_command", "exec")
        .env("npm_lifecycle_event", "npx")
        .output()
        .unwrap();
    let printed = stdout(&out);
    assert!(printed.contains("npx -y codectx-mcp serve"), "{printed}");
    let entry = &json(&repo.path().join(".mcp.json"))["mcpServers"]["codectx"];
    assert_eq!(entry["command"], "npx");
    assert_eq!(
        entry["args"],
        serde_json::json!(["-y", "codectx-mcp", "serve"])
    );
}

#[test]
fn a_second_run_changes_nothing_and_other_entries_survive() {
    let (home, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (h, r) = (home.path(), repo.path());
    let original = r#"{
  "mcpServers": {
    "other": { "command": "other-server", "args": ["--flag"] }
  },
  "someSetting": true
}
"#;
    std::fs::write(r.join(".mcp.json"), original).unwrap();
    let out = stdout(&setup(h, r, &["claude-code"]));
    assert!(out.contains("previous file is in"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.join(".mcp.json.bak")).unwrap(),
        original
    );
    let merged = json(&r.join(".mcp.json"));
    assert_eq!(merged["mcpServers"]["other"]["command"], "other-server");
    assert_eq!(merged["someSetting"], true);
    assert_eq!(merged["mcpServers"]["codectx"]["command"], binary());

    let written = std::fs::read_to_string(r.join(".mcp.json")).unwrap();
    let out = stdout(&setup(h, r, &["claude-code"]));
    assert!(out.contains("already set up"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.join(".mcp.json")).unwrap(),
        written
    );

    // TOML keeps its comments and other servers.
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    std::fs::write(
        h.join(".codex/config.toml"),
        "# my settings\nmodel = \"o4\"\n\n[mcp_servers.docs]\ncommand = \"docs-server\"\n",
    )
    .unwrap();
    stdout(&setup(h, r, &["codex", "--global"]));
    let text = std::fs::read_to_string(h.join(".codex/config.toml")).unwrap();
    assert!(text.starts_with("# my settings\nmodel = \"o4\""), "{text}");
    assert!(
        text.contains("[mcp_servers.docs]") && text.contains("[mcp_servers.codectx]"),
        "{text}"
    );
    let out = stdout(&setup(h, r, &["codex", "--global"]));
    assert!(out.contains("already set up"), "{out}");
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing_and_a_broken_file_is_left_alone() {
    let (home, repo) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (h, r) = (home.path(), repo.path());
    std::fs::create_dir_all(r.join(".cursor")).unwrap();
    std::fs::write(r.join(".cursor/mcp.json"), "{\n  \"mcpServers\": {}\n}\n").unwrap();
    let out = stdout(&setup(h, r, &["cursor", "--dry-run"]));
    assert!(out.contains("would change"), "{out}");
    assert!(out.contains("+     \"codectx\": {"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.join(".cursor/mcp.json")).unwrap(),
        "{\n  \"mcpServers\": {}\n}\n"
    );
    assert!(!r.join(".cursor/mcp.json.bak").exists());

    std::fs::write(r.join(".mcp.json"), "{ not json").unwrap();
    let failed = setup(h, r, &["claude-code"]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains("is not valid; it was left as it is"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(r.join(".mcp.json")).unwrap(),
        "{ not json"
    );
}
