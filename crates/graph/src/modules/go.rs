//! Go import paths → files: a path under the module path of the nearest `go.mod` names a
//! package directory of this module; the import leads to that package's first non-test
//! file (by name), which stands for the package. Other paths are the standard library or
//! other modules: external.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Resolved;

/// What resolving reads from disk, kept until the resolver forgets its cache: each
/// directory's module, each package directory's representative file. Without it every
/// import would read `go.mod` files and list a directory again.
#[derive(Debug, Default)]
pub(super) struct Cache {
    modules: Mutex<HashMap<PathBuf, Option<(PathBuf, String)>>>,
    packages: Mutex<HashMap<PathBuf, Option<PathBuf>>>,
}

impl Cache {
    pub(super) fn clear(&self) {
        lock(&self.modules).clear();
        lock(&self.packages).clear();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn resolve(root: &Path, from: &Path, import_path: &str, cache: &Cache) -> Resolved {
    let dir = from.parent().unwrap_or(root).to_path_buf();
    let module = lock(&cache.modules)
        .entry(dir)
        .or_insert_with_key(|dir| go_module(root, dir))
        .clone();
    let Some((module_dir, module_path)) = module else {
        return Resolved::External(import_path.to_string());
    };
    let relative = if import_path == module_path {
        Some("")
    } else {
        import_path
            .strip_prefix(&module_path)
            .and_then(|r| r.strip_prefix('/'))
    };
    let Some(relative) = relative else {
        return Resolved::External(import_path.to_string());
    };
    let package = module_dir.join(relative);
    let file = lock(&cache.packages)
        .entry(package)
        .or_insert_with_key(|dir| package_file(dir))
        .clone();
    match file {
        Some(file) => Resolved::File(file),
        None => Resolved::Unresolved(import_path.to_string()),
    }
}

/// The nearest `go.mod` at or above `dir` inside `root`: its directory and module path.
fn go_module(root: &Path, dir: &Path) -> Option<(PathBuf, String)> {
    let mut dir = dir;
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join("go.mod")) {
            let module = text.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("module")
                    .map(|m| m.trim().trim_matches('"').to_string())
            })?;
            return Some((dir.to_path_buf(), module));
        }
        if dir == root {
            return None;
        }
        dir = dir.parent()?;
    }
}

/// The package's first `.go` file by name, tests left out.
fn package_file(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|e| e == "go")
                && !p.to_string_lossy().ends_with("_test.go")
        })
        .collect();
    files.sort();
    files.into_iter().next()
}
