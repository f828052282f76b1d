//! Test support shared by the corpus tests of several crates: npm packages (rxjs,
//! typescript) fetched once with `npm pack` into a cache outside the repository
//! (`$CODECTX_CORPUS_DIR`, else `$XDG_CACHE_HOME/codectx/corpus`, else
//! `~/.cache/codectx/corpus`). Nothing of them is committed. Panics with a clear message
//! when npm or the registry is unavailable: it is only ever called from tests.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cache directory the packages are unpacked into.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CODECTX_CORPUS_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache")
        });
    base.join("codectx").join("corpus")
}

/// Unpacks `name@version` from the npm registry into the cache (once) and returns its
/// `package/` directory.
pub fn npm_package(name: &str, version: &str) -> PathBuf {
    let dir = cache_dir().join(format!("{name}-{version}"));
    let done = dir.join(".complete");
    if done.exists() {
        return dir.join("package");
    }
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("npm")
        .args([
            "pack",
            &format!("{name}@{version}"),
            "--silent",
            "--pack-destination",
        ])
        .arg(&dir)
        .output()
        .expect("npm is needed to fetch the corpus (install Node.js)");
    assert!(
        out.status.success(),
        "npm pack {name}@{version} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tarball = String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(dir.join(&tarball))
        .arg("-C")
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "tar failed on {tarball}");
    std::fs::write(&done, "").unwrap();
    dir.join("package")
}

/// Source files (not `.d.ts`) under `root`, sorted.
pub fn source_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if codectx_parser::Language::from_path(&path).is_some()
                && !path.to_string_lossy().ends_with(".d.ts")
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out
}

/// `path` relative to `root`, with `/` separators.
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}
