//! The seed inputs of every target, built from `fixtures/` rather than kept as copies: the
//! fuzzer starts from them (`cargo xtask fuzz` writes them under `target/`) and
//! `cargo test` replays them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::DIALECTS;

/// One seed input of one target.
pub struct Seed {
    pub target: &'static str,
    /// A file name for it: the fixture path it came from, flattened.
    pub name: String,
    pub data: Vec<u8>,
}

/// Lookups of the auth fixture's names, and texts that must not escape or crash.
const QUERIES: [&str; 10] = [
    "symbol = TokenService > validateToken",
    "symbol = src/auth/tokenService.ts > validate",
    "symbol = validate",
    "symbol = AuthConfig > getSecret",
    "symbol = src/config/",
    "symbol = > >",
    "symbol = ../../etc/passwd > x",
    "symbol = /etc/passwd",
    "where are JWT tokens validated",
    "",
];

/// `mcp_request` seeds: a tool (its index in the target's list) and the call's arguments.
/// Well-formed calls on the auth fixture's names, then hostile ones: escapes from the root,
/// budgets of zero and below, wrong types, a long query, and a line that is not JSON.
const CALLS: [(u8, &str); 16] = [
    (0, r#"{"query": "where are JWT tokens validated"}"#),
    (
        0,
        r#"{"query": "symbol = TokenService > validateToken", "path": ["src/auth"]}"#,
    ),
    (
        1,
        r#"{"symbol_name": "TokenService", "direction": "descendants"}"#,
    ),
    (
        2,
        r#"{"symbol_name": "validateToken", "scope": "file", "limit": 3}"#,
    ),
    (
        3,
        r#"{"query": "token validation", "max_tokens": 400, "strategy": "depth"}"#,
    ),
    (4, r#"{"path": "src/auth/tokenService.ts"}"#),
    (5, r#"{"path": "src/auth/tokenService.ts"}"#),
    (5, r#"{"path": "../../../../etc/passwd"}"#),
    (4, r#"{"path": "/etc/passwd"}"#),
    (
        0,
        r#"{"query": "symbol = ../../etc/passwd > x", "path": ["/etc"]}"#,
    ),
    (3, r#"{"query": "token", "max_tokens": 0}"#),
    (3, r#"{"query": "token", "max_tokens": -1}"#),
    (1, r#"{"symbol_name": 42, "direction": "sideways"}"#),
    (6, r#"{"query": "an unknown tool"}"#),
    (0, r#"[1, 2, 3]"#),
    (0, "this is not json {"),
];

/// Every fixture source file for `chunks` and `facts`; the first two files of each fixture
/// directory, NUL-separated, for `project`; `QUERIES` for `symbol_query`; `CALLS` and
/// one 64 kB query for `mcp_request`.
pub fn seeds(fixtures: &Path) -> std::io::Result<Vec<Seed>> {
    let mut out = Vec::new();
    let mut by_dir: BTreeMap<PathBuf, Vec<(u8, Vec<u8>)>> = BTreeMap::new();
    for path in source_files(fixtures)? {
        let Some(selector) = dialect(&path) else {
            continue;
        };
        let text = std::fs::read(&path)?;
        let name = flat_name(fixtures, &path);
        for target in ["chunks", "facts"] {
            out.push(Seed {
                target,
                name: name.clone(),
                data: [&[selector][..], &text].concat(),
            });
        }
        let dir = path.parent().unwrap_or(fixtures).to_path_buf();
        by_dir.entry(dir).or_default().push((selector, text));
    }
    for (dir, files) in &by_dir {
        let (selector, first) = &files[0];
        let mut data = [&[*selector][..], first].concat();
        if let Some((_, second)) = files.get(1) {
            data.push(0);
            data.extend(second);
        }
        out.push(Seed {
            target: "project",
            name: flat_name(fixtures, dir),
            data,
        });
    }
    for (i, query) in QUERIES.iter().enumerate() {
        out.push(Seed {
            target: "symbol_query",
            name: format!("query-{i:02}"),
            data: query.as_bytes().to_vec(),
        });
    }
    for (i, (tool, arguments)) in CALLS.iter().enumerate() {
        out.push(Seed {
            target: "mcp_request",
            name: format!("call-{i:02}"),
            data: [&[*tool][..], arguments.as_bytes()].concat(),
        });
    }
    out.push(Seed {
        target: "mcp_request",
        name: "call-long-query".into(),
        data: [&[0][..], br#"{"query": ""#, &[b'a'; 65_536], br#""}"#].concat(),
    });
    Ok(out)
}

/// The dialect byte [`crate::source_file`] reads first, by extension.
fn dialect(path: &Path) -> Option<u8> {
    let ext = match path.extension()?.to_str()? {
        "mts" | "cts" => "ts",
        "mjs" | "cjs" => "js",
        ext => ext,
    };
    DIALECTS.iter().position(|d| *d == ext).map(|i| i as u8)
}

fn flat_name(base: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(base).unwrap_or(path);
    relative.to_string_lossy().replace('/', "__")
}

/// Regular files under `dir`, sorted, not following symlinks (fixtures hold loops).
fn source_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}
