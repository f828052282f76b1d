//! Answers at a git revision (seed 002's `ref`): a branch, tag or commit that need not be
//! checked out.
//!
//! A revision's selected files and module configurations are read from git objects
//! (`codectx_history::files_at`: no checkout, no `git` binary) and written once under the
//! index directory, `<index>/refs/<commit>/tree`, beside an index of their own
//! (`<index>/refs/<commit>/index`). An [`Engine`] opened on that tree answers every tool
//! exactly as the work tree's does, with the revision's paths and code. A commit's files
//! never change, so a tree once written is reused by every later open, in any process.
//!
//! What a revision's engine leaves out: commit notes (history is read for the work tree
//! only) and vectors (the caller decides: [`open_at_revision`] uses the options' embedder,
//! if any, for queries only).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{Engine, EngineOptions, RetrievalError};

/// The revision an answer is for: the name asked (`v1.2.0`, `main`, `HEAD~3`) and the
/// commit it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevisionRef {
    pub name: String,
    /// Hex commit id.
    pub commit: String,
}

/// What a tool's `ref` names: `None` for the working tree (no ref, or `"live"`, seed 002's
/// name for it), else the revision asked for.
pub fn asked_revision(git_ref: Option<&str>) -> Option<&str> {
    git_ref.filter(|r| *r != "live" && !r.trim().is_empty())
}

/// The commit revision `name` names in the repository holding `root`, without reading any
/// tree: cheap enough to run on every call (a branch moves).
pub fn resolve_revision(root: &Path, name: &str) -> Result<RevisionRef, RetrievalError> {
    let commit = codectx_history::resolve_commit(root, name)?;
    Ok(RevisionRef {
        name: name.to_string(),
        commit,
    })
}

/// Opens an engine over `revision`'s files of the project at `root` (its index options as
/// `options` gives them for the work tree), writing them out first if no earlier open did.
pub async fn open_at_revision(
    root: &Path,
    revision: &RevisionRef,
    mut options: EngineOptions,
) -> Result<Engine, RetrievalError> {
    let root = root
        .canonicalize()
        .map_err(|_| RetrievalError::NotADirectory(root.to_path_buf()))?;
    let dir = options
        .store
        .revision_dir(&root, &revision.commit)
        .ok_or(RetrievalError::RevisionNeedsLocalIndex)?;
    let tree = dir.join("tree");
    if !tree.is_dir() {
        let selection = options.store.file_selection(&root);
        let commit = revision.commit.clone();
        let (source, target) = (root.clone(), tree.clone());
        tokio::task::spawn_blocking(move || {
            let files = codectx_history::files_at(&source, &commit, &selection)?;
            write_tree(&target, &files)
        })
        .await
        .expect("writing a revision's files does not panic")?;
    }
    options.store.uri = Some(dir.join("index").to_string_lossy().into_owned());
    options.store.files.ignore_files = false;
    options.store.history.max_commits = 0;
    options.store.defer_history = false;
    Engine::open(&tree, options).await
}

/// Writes `revision`'s files under `tree`: into a directory of this process's own first,
/// renamed into place when complete, so a killed write leaves no partial tree behind that a
/// later open would take for whole.
fn write_tree(tree: &Path, revision: &codectx_history::Revision) -> Result<(), RetrievalError> {
    // Written inside the index directory: a failure is the index's.
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| {
            RetrievalError::Index(codectx_store::StoreError::Io {
                path,
                message: e.to_string(),
            })
        }
    };
    let parent = tree.parent().expect("a revision's tree has a parent");
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    remove_abandoned_writes(parent);
    let partial = parent.join(format!("{PARTIAL_PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    for file in revision.files.iter().chain(&revision.module_configs) {
        let Some(path) = inside(&partial, &file.path) else {
            tracing::warn!("{}: a path that leaves the tree, not written", file.path);
            continue;
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        std::fs::write(&path, &file.bytes).map_err(io(&path))?;
    }
    match std::fs::rename(&partial, tree) {
        Ok(()) => Ok(()),
        // Another process wrote the same commit's files first: the same files.
        Err(_) if tree.is_dir() => {
            let _ = std::fs::remove_dir_all(&partial);
            Ok(())
        }
        Err(e) => Err(io(tree)(e)),
    }
}

/// A tree being written, by process id ([`write_tree`]).
const PARTIAL_PREFIX: &str = "tree.partial-";

/// A partial tree untouched this long was left by a killed process: writing a revision's
/// files takes seconds.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Removes the partial trees killed processes left in `dir`.
fn remove_abandoned_writes(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let abandoned = entry
            .file_name()
            .to_string_lossy()
            .starts_with(PARTIAL_PREFIX)
            && entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > ABANDONED_AFTER));
        if abandoned {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `base/relative` when `relative` (`/`-separated, from a git tree) stays inside `base`.
fn inside(base: &Path, relative: &str) -> Option<PathBuf> {
    let mut path = base.to_path_buf();
    for part in relative.split('/') {
        if part.is_empty() || part == "." || part == ".." || part.contains('\\') {
            return None;
        }
        path.push(part);
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::inside;
    use std::path::Path;

    #[test]
    fn a_path_from_a_tree_stays_inside_the_base() {
        let base = Path::new("/b");
        assert_eq!(inside(base, "src/a.ts"), Some(base.join("src/a.ts")));
        for bad in [
            "../a.ts",
            "src/../../a.ts",
            "/a.ts",
            "src//a.ts",
            "a\\..\\b.ts",
            ".",
        ] {
            assert_eq!(inside(base, bad), None, "{bad}");
        }
    }
}
