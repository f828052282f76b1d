//! `mcp-server setup <agent>`: registers this server in an agent's MCP configuration, for the
//! current repository or (`--global`) for the user, the way each agent documents its file.
//!
//! The edit merges: unrelated servers and settings are kept (TOML comments too), an entry
//! that already says the same is left alone, and a file that is changed keeps a `.bak` copy
//! of what it held. A file that cannot be parsed is never overwritten.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};

/// The name the server is registered under.
pub const SERVER_NAME: &str = "codectx";

/// The npm package the release workflow publishes (`[workspace.metadata.dist]`).
pub const NPM_PACKAGE: &str = "codectx-mcp";

/// How an agent starts this server: the way it was installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// An installed binary (the shell or PowerShell installer, cargo, a global npm install),
    /// by its absolute path.
    Binary(PathBuf),
    /// `npx -y <package>`: the binary lives in npx's cache, which may be cleared, so the
    /// agent is told to go through npx.
    Npx { package: String },
}

impl Launcher {
    /// The way this process was started: through `npx` (npm marks the processes it starts
    /// with `npm_command=exec` and `npm_lifecycle_event=npx`), else this binary.
    pub fn of_this_process() -> anyhow::Result<Launcher> {
        let npx = std::env::var("npm_lifecycle_event").is_ok_and(|v| v == "npx")
            || std::env::var("npm_command").is_ok_and(|v| v == "exec");
        if npx {
            return Ok(Launcher::Npx {
                package: NPM_PACKAGE.to_string(),
            });
        }
        let binary = std::env::current_exe()
            .and_then(|p| p.canonicalize())
            .context("locating the mcp-server binary")?;
        Ok(Launcher::Binary(binary))
    }

    /// The command and arguments that start the server with `args`.
    fn command(&self, args: Vec<String>) -> (String, Vec<String>) {
        match self {
            Launcher::Binary(path) => (path.to_string_lossy().into_owned(), args),
            Launcher::Npx { package } => (
                "npx".to_string(),
                ["-y".to_string(), package.clone()]
                    .into_iter()
                    .chain(args)
                    .collect(),
            ),
        }
    }
}

impl std::fmt::Display for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Launcher::Binary(path) => write!(f, "{}", path.display()),
            Launcher::Npx { package } => write!(f, "npx -y {package}"),
        }
    }
}

/// Agents whose MCP configuration `setup` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `.mcp.json` in the repository, or `~/.claude.json`.
    ClaudeCode,
    /// VS Code (Copilot): `.vscode/mcp.json`, or the user profile's `mcp.json`.
    Vscode,
    /// Cursor: `.cursor/mcp.json`, or `~/.cursor/mcp.json`.
    Cursor,
    /// Codex: `.codex/config.toml` (trusted projects), or `~/.codex/config.toml`.
    Codex,
}

/// What `setup` did (or, with `dry_run`, would do).
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Unchanged,
    Written { backup: Option<PathBuf> },
    WouldWrite { diff: String },
}

/// The configuration file `agent` reads, for the repository at `root` or user-wide.
pub fn config_path(agent: Agent, root: &Path, global: bool) -> anyhow::Result<PathBuf> {
    let home = || dirs::home_dir().context("HOME is not set: no user configuration to write");
    Ok(match (agent, global) {
        (Agent::ClaudeCode, false) => root.join(".mcp.json"),
        (Agent::ClaudeCode, true) => home()?.join(".claude.json"),
        (Agent::Vscode, false) => root.join(".vscode/mcp.json"),
        (Agent::Vscode, true) => dirs::config_dir()
            .context("no user configuration directory")?
            .join("Code/User/mcp.json"),
        (Agent::Cursor, false) => root.join(".cursor/mcp.json"),
        (Agent::Cursor, true) => home()?.join(".cursor/mcp.json"),
        (Agent::Codex, false) => root.join(".codex/config.toml"),
        (Agent::Codex, true) => match std::env::var_os("CODEX_HOME") {
            Some(dir) => PathBuf::from(dir).join("config.toml"),
            None => home()?.join(".codex/config.toml"),
        },
    })
}

/// The arguments the agent starts the server with. A repository's file is shared, so it
/// names no absolute root: the agents start servers in the repository (VS Code is told
/// explicitly); a user-wide entry serves whatever repository the agent is opened in.
fn server_args(agent: Agent, global: bool) -> Vec<String> {
    match (agent, global) {
        (Agent::Vscode, false) => {
            vec!["serve".into(), "--root".into(), "${workspaceFolder}".into()]
        }
        _ => vec!["serve".into()],
    }
}

/// Registers the server, started by `launcher`, for `agent`, merging into the existing file.
pub fn setup(
    agent: Agent,
    root: &Path,
    global: bool,
    launcher: &Launcher,
    dry_run: bool,
) -> anyhow::Result<(PathBuf, Outcome)> {
    let path = config_path(agent, root, global)?;
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let (command, args) = launcher.command(server_args(agent, global));
    let command = command.as_str();
    let new = match agent {
        Agent::Codex => merge_toml(old.as_deref(), command, &args),
        Agent::Vscode => merge_json(
            old.as_deref(),
            "servers",
            json!({"type": "stdio", "command": command, "args": args}),
        ),
        Agent::ClaudeCode | Agent::Cursor => merge_json(
            old.as_deref(),
            "mcpServers",
            json!({"command": command, "args": args}),
        ),
    }
    .with_context(|| format!("{} is not valid; it was left as it is", path.display()))?;
    let Some(new) = new else {
        return Ok((path, Outcome::Unchanged));
    };
    if dry_run {
        let diff = line_diff(old.as_deref().unwrap_or(""), &new);
        return Ok((path, Outcome::WouldWrite { diff }));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let backup = match &old {
        Some(old) => {
            let mut name = path.as_os_str().to_owned();
            name.push(".bak");
            let backup = PathBuf::from(name);
            std::fs::write(&backup, old)
                .with_context(|| format!("writing {}", backup.display()))?;
            Some(backup)
        }
        None => None,
    };
    // Written beside and renamed into place: an interrupted write leaves the old file.
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, &new)
        .and_then(|()| std::fs::rename(&partial, &path))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((path, Outcome::Written { backup }))
}

/// `old` with `entry` under `section.codectx`, or `None` when it is there already.
fn merge_json(old: Option<&str>, section: &str, entry: Value) -> anyhow::Result<Option<String>> {
    let mut doc: Value = match old {
        Some(text) if !text.trim().is_empty() => serde_json::from_str(text)?,
        _ => json!({}),
    };
    let Some(object) = doc.as_object_mut() else {
        bail!("the top level is not a JSON object");
    };
    let servers = object.entry(section).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        bail!("`{section}` is not a JSON object");
    };
    if servers.get(SERVER_NAME) == Some(&entry) {
        return Ok(None);
    }
    servers.insert(SERVER_NAME.to_string(), entry);
    Ok(Some(serde_json::to_string_pretty(&doc)? + "\n"))
}

/// `old` with `[mcp_servers.codectx]`, comments and layout kept, or `None` when it is there
/// already.
fn merge_toml(old: Option<&str>, command: &str, args: &[String]) -> anyhow::Result<Option<String>> {
    let mut doc: toml_edit::DocumentMut = old.unwrap_or("").parse()?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = toml_edit::Table::new();
            table.set_implicit(true);
            toml_edit::Item::Table(table)
        })
        .as_table_mut()
        .context("`mcp_servers` is not a table")?;
    let mut entry = toml_edit::Table::new();
    entry.insert("command", toml_edit::value(command));
    entry.insert(
        "args",
        toml_edit::value(
            args.iter()
                .map(String::as_str)
                .collect::<toml_edit::Array>(),
        ),
    );
    let same = servers
        .get(SERVER_NAME)
        .and_then(|item| item.as_table())
        .is_some_and(|t| {
            t.get("command").and_then(|c| c.as_str()) == Some(command)
                && t.get("args").and_then(|a| a.as_array()).is_some_and(|a| {
                    a.iter()
                        .map(|v| v.as_str())
                        .eq(args.iter().map(|s| Some(s.as_str())))
                })
        });
    if same {
        return Ok(None);
    }
    servers.insert(SERVER_NAME, toml_edit::Item::Table(entry));
    Ok(Some(doc.to_string()))
}

/// A minimal line diff (`-` removed, `+` added, two spaces kept) by longest common
/// subsequence: configuration files are small.
fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        }
    }
    out
}
