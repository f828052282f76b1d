//! Go import paths → files: a path under the module path of the nearest `go.mod` names a
//! package directory of this module; the import leads to that package's first non-test
//! file (by name), which stands for the package. Other paths are the standard library or
//! other modules: external.

use std::path::{Path, PathBuf};

use super::Resolved;

pub(super) fn resolve(root: &Path, from: &Path, import_path: &str) -> Resolved {
    let Some((module_dir, module_path)) = go_module(root, from) else {
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
    match package_file(&module_dir.join(relative)) {
        Some(file) => Resolved::File(file),
        None => Resolved::Unresolved(import_path.to_string()),
    }
}

/// The nearest `go.mod` above `from` inside `root`: its directory and module path.
fn go_module(root: &Path, from: &Path) -> Option<(PathBuf, String)> {
    let mut dir = from.parent()?;
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
