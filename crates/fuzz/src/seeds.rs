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

/// Every fixture source file for `chunks` and `facts`; the first two files of each fixture
/// directory, NUL-separated, for `project`; [`QUERIES`] for `symbol_query`.
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
