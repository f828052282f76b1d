//! A revision's files, read from git objects: what a branch, tag or commit holds, without a
//! checkout and without the `git` binary. Each file comes with its blob id, the content's
//! name in git: two revisions (or worktrees) holding the same blob hold the same content.

use std::path::Path;

use codectx_files::FileSelection;
use gix::bstr::ByteSlice;

/// What a revision names, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The revision as asked for (`v1.2.0`, `main`, `HEAD~3`, a commit id).
    pub name: String,
    /// The commit it resolved to (hex).
    pub commit: String,
    /// The selected files of the commit's tree under the root, in path order.
    pub files: Vec<RevisionFile>,
    /// The module configurations beside them (`package.json`, `tsconfig*.json`: see
    /// [`FileSelection::selects_module_config`]), in path order: what the module resolver
    /// reads to resolve the files' imports.
    pub module_configs: Vec<RevisionFile>,
    /// Selected files over the selection's size limit, by path: not read.
    pub too_large: Vec<String>,
}

/// One file of a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionFile {
    /// Relative to the root, `/`-separated, as the index names files.
    pub path: String,
    /// The blob's id (hex).
    pub blob: String,
    pub bytes: Vec<u8>,
}

/// Why a revision's files could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RevisionError {
    #[error("the root is not inside a git repository")]
    NotARepository,
    #[error("`{0}` names no commit of this repository")]
    Unknown(String),
    #[error("the repository could not be read: {0}")]
    Unreadable(String),
}

/// The commit (hex) revision `name` (anything `git rev-parse` accepts that leads to a
/// commit) names in the repository holding `root`. Cheap: no tree is read.
pub fn resolve_commit(root: &Path, name: &str) -> Result<String, RevisionError> {
    let repo = gix::discover(root).map_err(|_| RevisionError::NotARepository)?;
    Ok(commit_of(&repo, name)?.id.to_string())
}

/// How many files differ between commit `to` and each commit of `from` (hex ids), in
/// the repository holding `root`: added, removed or changed, anywhere in the tree. A diff
/// stops once more than `at_most` files differ (and reads `at_most + 1`); a commit that
/// cannot be read is `None`. Trees only: no blob is read.
pub fn files_between(
    root: &Path,
    to: &str,
    from: &[String],
    at_most: usize,
) -> Result<Vec<Option<usize>>, RevisionError> {
    let repo = gix::discover(root).map_err(|_| RevisionError::NotARepository)?;
    let to = commit_of(&repo, to)?
        .tree()
        .map_err(|e| RevisionError::Unreadable(e.to_string()))?;
    Ok(from
        .iter()
        .map(|commit| {
            let tree = commit_of(&repo, commit).ok()?.tree().ok()?;
            let mut differing = 0;
            let mut changes = tree.changes().ok()?;
            // Counted, not matched: renames (on by git's default) would read blobs.
            changes.options(|o| {
                o.track_rewrites(None);
            });
            let counted = changes.for_each_to_obtain_tree(&to, |change| {
                differing += usize::from(change.entry_mode().is_blob());
                Ok(if differing > at_most {
                    gix::object::tree::diff::Action::Break(())
                } else {
                    gix::object::tree::diff::Action::Continue(())
                })
            });
            match counted {
                Ok(_) => Some(differing),
                // Cancelled: more than `at_most`.
                Err(_) if differing > at_most => Some(differing),
                Err(_) => None,
            }
        })
        .collect())
}

/// The file git appends a line to whenever HEAD moves (a commit, checkout, reset, merge or
/// pull): the reflog of HEAD in the git directory of the work tree holding `root` (a linked
/// worktree has its own). `None` outside git, or while it does not exist (no commit yet,
/// or reflogs turned off). A watcher watches it to know that the history moved.
pub fn head_log(root: &Path) -> Option<std::path::PathBuf> {
    let repo = gix::discover(root).ok()?;
    let log = repo.git_dir().join("logs").join("HEAD");
    log.is_file().then_some(log)
}

/// The directory of the repository's own exclude file (`<common git dir>/info`, shared by
/// its worktrees), which the file walk reads like a `.gitignore`. `None` outside git, or
/// while it does not exist. A watcher watches it to know that the selected files changed.
pub fn exclude_dir(root: &Path) -> Option<std::path::PathBuf> {
    let repo = gix::discover(root).ok()?;
    let dir = repo.common_dir().join("info");
    dir.is_dir().then_some(dir)
}

/// The common git directory of the repository holding `root`: the `.git` every worktree of
/// it shares. `None` outside git.
pub fn common_dir(root: &Path) -> Option<std::path::PathBuf> {
    let repo = gix::discover(root).ok()?;
    Some(repo.common_dir().to_path_buf())
}

/// Where a directory lies in a git worktree ([`worktree_place`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreePlace {
    /// The repository's common git directory, shared by all its worktrees.
    pub common_dir: std::path::PathBuf,
    /// The worktree's own git directory: the common one for the main worktree,
    /// `<common git dir>/worktrees/<name>` for a linked one.
    pub git_dir: std::path::PathBuf,
    /// The directory's path inside the worktree: `""` at its top, else ending in `/`.
    pub prefix: String,
}

/// Where `root` lies in a git worktree; `None` outside one (no repository, or a bare one).
pub fn worktree_place(root: &Path) -> Option<WorktreePlace> {
    let repo = gix::discover(root).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let inside = root.strip_prefix(&workdir).ok()?;
    let prefix = inside
        .components()
        .map(|c| format!("{}/", c.as_os_str().to_string_lossy()))
        .collect();
    Some(WorktreePlace {
        common_dir: repo.common_dir().to_path_buf(),
        git_dir: repo.git_dir().to_path_buf(),
        prefix,
    })
}

fn commit_of<'r>(repo: &'r gix::Repository, name: &str) -> Result<gix::Commit<'r>, RevisionError> {
    repo.rev_parse_single(name)
        .ok()
        .and_then(|id| id.object().ok())
        .and_then(|object| object.peel_to_commit().ok())
        .ok_or_else(|| RevisionError::Unknown(name.to_string()))
}

/// The files `selection` selects under `root` as of revision `name` (anything
/// `git rev-parse` accepts that leads to a commit), read from the repository's objects,
/// with the module configurations beside them.
pub fn files_at(
    root: &Path,
    name: &str,
    selection: &FileSelection,
) -> Result<Revision, RevisionError> {
    let repo = gix::discover(root).map_err(|_| RevisionError::NotARepository)?;
    let unreadable = |e: &dyn std::fmt::Display| RevisionError::Unreadable(e.to_string());
    let commit = commit_of(&repo, name)?;
    let prefix = match repo.workdir() {
        Some(workdir) => crate::walk::root_prefix(workdir, root).map_err(|e| unreadable(&e))?,
        None => String::new(),
    };
    let tree = commit.tree().map_err(|e| unreadable(&e))?;
    let mut recorder = gix::traverse::tree::Recorder::default();
    tree.traverse()
        .breadthfirst(&mut recorder)
        .map_err(|e| unreadable(&e))?;
    let mut revision = Revision {
        name: name.to_string(),
        commit: commit.id.to_string(),
        files: Vec::new(),
        module_configs: Vec::new(),
        too_large: Vec::new(),
    };
    for entry in recorder.records {
        if !entry.mode.is_blob() {
            continue;
        }
        let Some(path) = entry
            .filepath
            .to_str()
            .ok()
            .and_then(|p| p.strip_prefix(prefix.as_str()))
        else {
            continue;
        };
        let source = selection.selects_path(path);
        if !source && !selection.selects_module_config(path) {
            continue;
        }
        let blob = repo.find_object(entry.oid).map_err(|e| unreadable(&e))?;
        if selection.too_large(blob.data.len() as u64) {
            if source {
                revision.too_large.push(path.to_string());
            }
            continue;
        }
        let file = RevisionFile {
            path: path.to_string(),
            blob: entry.oid.to_string(),
            bytes: blob.detach().data,
        };
        if source {
            revision.files.push(file);
        } else {
            revision.module_configs.push(file);
        }
    }
    revision.files.sort_by(|a, b| a.path.cmp(&b.path));
    revision.module_configs.sort_by(|a, b| a.path.cmp(&b.path));
    revision.too_large.sort();
    Ok(revision)
}
