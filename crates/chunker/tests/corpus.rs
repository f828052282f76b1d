//! The ten global rules on real code no one here wrote: the TypeScript sources of
//! rxjs@7.8.2 (`src/`) and the 200,000-line `lib/typescript.js` of typescript@5.9.3.
//!
//! The packages are fetched once with `npm pack` into a cache outside the repository
//! (`$CODECTX_CORPUS_DIR`, else `$XDG_CACHE_HOME/codectx/corpus`, else
//! `~/.cache/codectx/corpus`); nothing of them is committed.

use std::path::{Path, PathBuf};
use std::process::Command;

use codectx_chunker::validate::check_file;

fn cache_dir() -> PathBuf {
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

/// Unpacks `name@version` from the npm registry into the cache and returns its directory.
fn npm_package(name: &str, version: &str) -> PathBuf {
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

fn source_files(root: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            source_files(&path, out);
        } else if codectx_parser::Language::from_path(&path).is_some()
            && !path.to_string_lossy().ends_with(".d.ts")
        {
            out.push(path);
        }
    }
}

fn check_all(root: &Path, files: &[PathBuf]) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut chunks = 0;
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let source = std::fs::read_to_string(file).unwrap();
        let report = check_file(&rel, &source);
        chunks += report.chunks.len();
        failures.extend(
            report
                .violations
                .iter()
                .take(5)
                .map(|v| format!("{rel}: {v}")),
        );
    }
    (chunks, failures)
}

#[test]
fn rxjs_sources_pass_every_rule() {
    let root = npm_package("rxjs", "7.8.2");
    let mut files = Vec::new();
    source_files(&root.join("src"), &mut files);
    assert!(
        files.len() >= 240,
        "expected rxjs src/ to hold ~250 files, found {}",
        files.len()
    );
    let (chunks, failures) = check_all(&root, &files);
    assert!(
        failures.is_empty(),
        "{} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(chunks > files.len() * 3);
}

#[test]
fn typescript_js_passes_every_rule() {
    let root = npm_package("typescript", "5.9.3");
    let file = root.join("lib").join("typescript.js");
    let (chunks, failures) = check_all(&root, &[file]);
    assert!(
        failures.is_empty(),
        "{} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(chunks > 10_000, "only {chunks} chunks from typescript.js");
}
