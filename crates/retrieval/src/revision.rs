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
//! A revision's commit notes are those of its own ancestry: the history is read from its
//! commit, not from `HEAD` (now, or later through [`Engine::history_catch_up`] when the
//! options defer it). Its chunks get vectors when the caller fills them
//! ([`Engine::vector_filler`] with the options' embedder): the work tree's shared vectors
//! serve every text the repository has embedded before, so only what is new at the revision
//! goes to the model.
//!
//! Revisions do not pile up: each open and each answer marks its revision used
//! ([`mark_used`]), and an open removes the revisions unused for 30 days and those beyond
//! the 16 most recently used, never one used within the hour.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use codectx_store::{HistoryAt, Shared};

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
/// Its history is read at the revision's commit, unless `options` defer it (then
/// [`Engine::history_catch_up`] reads it) or turn it off.
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
    if let Some(refs) = dir.parent() {
        prune_revisions(refs, &dir, SystemTime::now(), KEPT_REVISIONS);
    }
    // Revisions an earlier version kept beside each worktree's index are read no more: each
    // goes once no process has used it for an hour.
    if let Some(old) = options.store.revisions_beside_index(&root) {
        prune_revisions(&old, &dir, SystemTime::now(), 0);
        let _ = std::fs::remove_dir(&old);
    }
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
    // The revision shares the work tree's vectors and parses, wherever its own index lies.
    options.store.shared_vectors = options
        .store
        .shared_vectors_dir(&root)
        .map_or(Shared::Off, Shared::At);
    options.store.shared_parses = options
        .store
        .shared_parses_dir(&root)
        .map_or(Shared::Off, Shared::At);
    // A fresh one starts from the work tree's index at its version nearest the commit.
    options.store.seed = options.store.revision_seed(&root, &revision.commit);
    options.store.uri = Some(dir.join("index").to_string_lossy().into_owned());
    options.store.files.ignore_files = false;
    options.store.history.at = Some(HistoryAt {
        root: root.clone(),
        commit: revision.commit.clone(),
    });
    let engine = Engine::open(&tree, options).await?;
    touch_marker(&dir);
    Ok(engine)
}

/// How many revisions' files and indexes stay beside the work tree's index at most.
const KEPT_REVISIONS: usize = 16;

/// A revision unused this long is removed at the next open of another.
const UNUSED_FOR: Duration = Duration::from_secs(30 * 86_400);

/// A revision used this recently is kept whatever the count: another process (a server in
/// another agent's session) may be answering from it.
const IN_USE_WINDOW: Duration = Duration::from_secs(3_600);

/// The file whose modification time says when a revision was last used.
const USED_MARKER: &str = "used";

/// Marks `revision` as used now, so that pruning keeps it: a server that keeps the engine
/// [`open_at_revision`] gave for it calls this on every answer. An engine that is not that
/// revision's (its root is not `<commit>/tree`) is left alone. Best effort: a revision that
/// cannot be marked is only pruned sooner.
///
/// `false` when the revision's directory is gone (another process pruned it): its engine
/// may still answer from what it holds in memory, but should be opened anew.
pub fn mark_used(engine: &Engine, revision: &RevisionRef) -> bool {
    let root = engine.project().root();
    let dir = root.parent().filter(|dir| {
        root.file_name().is_some_and(|n| n == "tree")
            && dir.file_name().is_some_and(|n| *n == *revision.commit)
    });
    match dir {
        Some(dir) if !dir.is_dir() => false,
        Some(dir) => {
            touch_marker(dir);
            true
        }
        None => true,
    }
}

/// Sets the modification time of `dir`'s [`USED_MARKER`] to now, creating it.
fn touch_marker(dir: &Path) {
    let marker = dir.join(USED_MARKER);
    let marked = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&marker)
        .and_then(|f| f.set_modified(SystemTime::now()));
    if let Err(e) = marked {
        tracing::debug!("{}: not marked used ({e})", marker.display());
    }
}

/// Removes from `refs` (a directory of revisions) every revision other than `keep` unused
/// for [`UNUSED_FOR`], and the least recently used beyond `kept` (one of them `keep`) that
/// were not used within the last hour. A revision never marked counts from its directory's
/// own modification time; failures to remove are left for the next open.
fn prune_revisions(refs: &Path, keep: &Path, now: SystemTime, kept: usize) {
    let Ok(entries) = std::fs::read_dir(refs) else {
        return;
    };
    let mut revisions: Vec<(Duration, PathBuf)> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir() && path != keep)
        .map(|path| {
            let used = std::fs::metadata(path.join(USED_MARKER))
                .or_else(|_| std::fs::metadata(&path))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .unwrap_or_default();
            (used, path)
        })
        .collect();
    // Most recently used first; `keep` is one of the kept.
    revisions.sort();
    for (rank, (unused, path)) in revisions.iter().enumerate() {
        let beyond_count = rank + 1 >= kept && *unused > IN_USE_WINDOW;
        if *unused > UNUSED_FOR || beyond_count {
            match std::fs::remove_dir_all(path) {
                Ok(()) => tracing::info!("{}: unused revision removed", path.display()),
                Err(e) => tracing::debug!("{}: not removed ({e})", path.display()),
            }
        }
    }
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
    use super::{IN_USE_WINDOW, KEPT_REVISIONS, UNUSED_FOR, USED_MARKER, inside, prune_revisions};
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    /// A revision directory under `refs` last used `ago` before `now`.
    fn revision(refs: &Path, name: &str, now: SystemTime, ago: Duration) {
        let dir = refs.join(name);
        std::fs::create_dir_all(dir.join("tree")).unwrap();
        let marker = std::fs::File::create(dir.join(USED_MARKER)).unwrap();
        marker.set_modified(now - ago).unwrap();
    }

    fn left(refs: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(refs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn revisions_unused_for_long_are_removed() {
        let refs = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let day = Duration::from_secs(86_400);
        revision(refs.path(), "old", now, UNUSED_FOR + day);
        revision(refs.path(), "recent", now, day);
        // The revision being opened stays, however old its mark.
        revision(refs.path(), "opening", now, UNUSED_FOR + day);
        prune_revisions(
            refs.path(),
            &refs.path().join("opening"),
            now,
            KEPT_REVISIONS,
        );
        assert_eq!(left(refs.path()), ["opening", "recent"]);
    }

    #[test]
    fn only_the_most_recently_used_revisions_are_kept_unless_in_use() {
        let refs = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let hour = IN_USE_WINDOW;
        // Twice the limit, used 2, 3, … hours ago; and two more used within the hour.
        for i in 0..2 * KEPT_REVISIONS {
            revision(refs.path(), &format!("r{i:02}"), now, hour * (i as u32 + 2));
        }
        revision(refs.path(), "busy-a", now, Duration::from_secs(60));
        revision(refs.path(), "busy-b", now, Duration::from_secs(120));
        revision(refs.path(), "opening", now, Duration::ZERO);
        prune_revisions(
            refs.path(),
            &refs.path().join("opening"),
            now,
            KEPT_REVISIONS,
        );
        let mut expected: Vec<String> = ["busy-a", "busy-b", "opening"].map(String::from).into();
        // The opened one and the two busy ones count: 13 of the others stay.
        expected.extend((0..KEPT_REVISIONS - 3).map(|i| format!("r{i:02}")));
        expected.sort();
        assert_eq!(left(refs.path()), expected);
    }

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
