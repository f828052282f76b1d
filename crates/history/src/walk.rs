//! The commit walk: newest first from `HEAD`, each non-merge commit diffed against its
//! parent with git's rename detection.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::object::tree::diff::ChangeDetached;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;

use crate::attribute::touched_symbols;
use crate::memo::{CommitChanges, FileChange, Memo};
use crate::{HistoryOff, HistoryOptions, HistoryRead, SymbolNote, note_text};

/// Reads the history of the repository around `root`: every commit when `since` is `None`,
/// else only those `since` does not reach (and everything again when `since` is not an
/// ancestor of `HEAD` any more; [`HistoryRead::full`] says which). Never touches the network.
///
/// Errors say why history is off; the caller indexes as without it.
pub fn read_history(
    root: &Path,
    since: Option<&str>,
    options: &HistoryOptions,
) -> Result<HistoryRead, HistoryOff> {
    Repository::open(root, options)?.read(since, options)
}

/// The repository around a root, found once and read at every sync: finding it reads git's
/// configuration files (a few milliseconds, most of a sync that changed nothing), reading
/// where `HEAD` is reads one ref. Cheap to clone and to send to another thread.
#[derive(Clone)]
pub struct Repository {
    repo: gix::ThreadSafeRepository,
    /// The indexed root: a note is kept only for a file that exists under it now.
    root: PathBuf,
    /// The indexed files' path inside the repository ([`root_prefix`]).
    prefix: String,
}

impl Repository {
    /// The repository `root` lies in (or, with [`HistoryOptions::at`], the one the
    /// revision's files come from), as [`read_history`] reads it; the error says why
    /// history is off.
    pub fn open(root: &Path, options: &HistoryOptions) -> Result<Repository, HistoryOff> {
        let (repo, _) = open(root, options)?;
        let workdir = repo.workdir().ok_or(HistoryOff::Bare)?.to_path_buf();
        let prefix = root_prefix(&workdir, in_repository(root, options))
            .map_err(|e| HistoryOff::Unreadable(e.to_string()))?;
        Ok(Repository {
            repo: repo.into_sync(),
            root: root.to_path_buf(),
            prefix,
        })
    }

    /// [`read_history`] of this repository as it is now: `HEAD` is read again.
    pub fn read(
        &self,
        since: Option<&str>,
        options: &HistoryOptions,
    ) -> Result<HistoryRead, HistoryOff> {
        if options.max_commits == 0 {
            return Err(HistoryOff::Disabled);
        }
        let repo = self.repo.to_thread_local();
        let head = checked_head(&repo, options)?;
        let mut walker = Walker {
            repo: &repo,
            root: self.root.clone(),
            prefix: self.prefix.clone(),
            options,
        };
        let since = since.and_then(|s| ObjectId::from_hex(s.as_bytes()).ok());
        if since == Some(head) {
            return Ok(HistoryRead {
                head: head.to_string(),
                ..HistoryRead::default()
            });
        }
        let common_dir = repo.common_dir();
        if let Some(since) = since {
            let mut memo = Memo::new(&options.memo, common_dir, false);
            let read = walker.read(head, Some(since), &mut memo);
            memo.save();
            if let Some(read) = read? {
                return Ok(read);
            }
        }
        // First read, rewritten history, or a rename to re-key: read it all.
        let started = std::time::Instant::now();
        let mut memo = Memo::new(&options.memo, common_dir, true);
        let read = walker.read(head, None, &mut memo);
        memo.save();
        let read = read?.expect("a full read always completes");
        tracing::debug!(
            commits = read.commits_read,
            diffed = memo.diffed,
            parsed = memo.parsed,
            from_memo = memo.hits,
            "full history read: {:?}",
            started.elapsed()
        );
        Ok(read)
    }
}

/// The commit history would be read from (`HEAD`, or [`HistoryOptions::at`]'s), without
/// reading any: what `status` reports, and why history is off when it is.
pub fn probe(root: &Path, options: &HistoryOptions) -> Result<String, HistoryOff> {
    open(root, options).map(|(_, head)| head.to_string())
}

fn open(root: &Path, options: &HistoryOptions) -> Result<(gix::Repository, ObjectId), HistoryOff> {
    if options.max_commits == 0 {
        return Err(HistoryOff::Disabled);
    }
    let root = in_repository(root, options);
    let repo = gix::discover(root).map_err(|e| {
        // gix's errors are opaque: a `.git` above the root means a repository that failed.
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if root.ancestors().any(|dir| dir.join(".git").exists()) {
            HistoryOff::Unreadable(e.to_string())
        } else {
            HistoryOff::NotARepository
        }
    })?;
    let head = checked_head(&repo, options)?;
    Ok((repo, head))
}

/// Where in the work tree the indexed files are: `root` itself, or the root a revision's
/// files were read for ([`HistoryOptions::at`]).
fn in_repository<'p>(root: &'p Path, options: &'p HistoryOptions) -> &'p Path {
    options.at.as_ref().map_or(root, |at| at.root.as_path())
}

/// Where the history of a repository whose history can be read starts: `HEAD`, or the
/// commit [`HistoryOptions::at`] names.
fn checked_head(repo: &gix::Repository, options: &HistoryOptions) -> Result<ObjectId, HistoryOff> {
    let unreadable = |e: &dyn std::fmt::Display| HistoryOff::Unreadable(e.to_string());
    if repo.is_shallow().map_err(|e| unreadable(&e))? {
        return Err(HistoryOff::Shallow);
    }
    if repo.workdir().is_none() {
        return Err(HistoryOff::Bare);
    }
    if let Some(at) = &options.at {
        return ObjectId::from_hex(at.commit.as_bytes())
            .ok()
            .filter(|id| repo.find_commit(*id).is_ok())
            .ok_or_else(|| HistoryOff::Unreadable(format!("no commit {}", at.commit)));
    }
    match repo.head_id() {
        Ok(id) => Ok(id.detach()),
        Err(_) => Err(HistoryOff::NoCommits),
    }
}

/// The root's path inside the work tree, `/`-separated with a trailing `/` (empty for the
/// work tree itself).
pub(crate) fn root_prefix(workdir: &Path, root: &Path) -> std::io::Result<String> {
    let workdir = workdir.canonicalize()?;
    let root = root.canonicalize()?;
    let inside = root.strip_prefix(&workdir).unwrap_or(Path::new(""));
    let mut prefix = inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    if !prefix.is_empty() {
        prefix.push('/');
    }
    Ok(prefix)
}

/// Versions of a file larger than this are not parsed for history.
const MAX_BLOB_BYTES: usize = 1 << 20;

struct Walker<'r> {
    repo: &'r gix::Repository,
    root: PathBuf,
    prefix: String,
    options: &'r HistoryOptions,
}

impl Walker<'_> {
    /// The notes of the commits `HEAD` reaches and `since` does not. `Ok(None)` when an
    /// incremental read cannot be one: `since` is not an ancestor of `head`, or a new commit
    /// renamed a source file.
    fn read(
        &mut self,
        head: ObjectId,
        since: Option<ObjectId>,
        memo: &mut Memo,
    ) -> Result<Option<HistoryRead>, HistoryOff> {
        let unreadable = |e: &dyn std::fmt::Display| HistoryOff::Unreadable(e.to_string());
        let repo = self.repo;
        // `since` is an ancestor of `head` exactly when a walk hiding its parents meets it.
        let hidden: Vec<ObjectId> = match since {
            Some(id) => match repo.find_commit(id) {
                Ok(commit) => commit.parent_ids().map(|p| p.detach()).collect(),
                Err(_) => return Ok(None),
            },
            None => Vec::new(),
        };
        let walk = repo
            .rev_walk([head])
            .sorting(Sorting::ByCommitTime(CommitTimeOrder::NewestFirst))
            .with_hidden(hidden)
            .all()
            .map_err(|e| unreadable(&e))?;
        let mut read = HistoryRead {
            head: head.to_string(),
            full: since.is_none(),
            ..HistoryRead::default()
        };
        let mut met_since = false;
        // Path in older commits → current path, learned from renames as the walk goes back.
        let mut renamed: HashMap<String, String> = HashMap::new();
        let mut newest: Option<i64> = None;
        // Whether each file exists now, asked once per file (a full read of vite's history
        // meets 9,400 changes of 1,500 files).
        let mut exists: HashMap<String, bool> = HashMap::new();
        let mut cache = repo
            .diff_resource_cache_for_tree_diff()
            .map_err(|e| unreadable(&e))?;
        for info in walk {
            let info = info.map_err(|e| unreadable(&e))?;
            if Some(info.id) == since {
                met_since = true;
                continue;
            }
            let time = info.commit_time.unwrap_or_default();
            let newest = *newest.get_or_insert(time);
            if read.commits_read >= self.options.max_commits
                || newest - time > i64::from(self.options.max_age_days) * 86_400
            {
                if since.is_some() {
                    // Too far behind to add to: start over within the limits.
                    return Ok(None);
                }
                break;
            }
            read.commits_read += 1;
            if info.parent_ids.len() > 1 {
                read.commits_skipped += 1;
                continue;
            }
            let parent = info.parent_ids.first().copied();
            let commit = memo.commit(info.id, || self.diff(info.id, parent, &mut cache))?;
            if commit.blobs > self.options.max_files_per_commit {
                read.commits_skipped += 1;
                continue;
            }
            let commit_id = info.id.to_string();
            for change in &commit.changes {
                if let Some(from) = &change.renamed_from {
                    let name = change.path.rsplit('/').next().unwrap_or("");
                    if self.options.files.is_source_name(name) {
                        if since.is_some() {
                            // Older notes are keyed by the old path.
                            return Ok(None);
                        }
                        let current = renamed.get(&change.path).cloned();
                        renamed
                            .insert(from.clone(), current.unwrap_or_else(|| change.path.clone()));
                    }
                }
                if !change.blob {
                    continue;
                }
                let (path, before_id, after_id) = (&change.path, change.before, change.after);
                let current = renamed.get(path).cloned().unwrap_or(path.clone());
                let Some(relative) = current.strip_prefix(&self.prefix) else {
                    continue;
                };
                if !self.options.files.selects_path(relative) {
                    continue;
                }
                // Notes only for files that still exist (a deleted file's symbols are gone).
                let is_file = match exists.get(relative) {
                    Some(is_file) => *is_file,
                    None => *exists
                        .entry(relative.to_owned())
                        .or_insert_with(|| self.root.join(relative).is_file()),
                };
                if !is_file {
                    continue;
                }
                // Parsed under the name in this commit (same extension for a rename that
                // matters; the qualified names do not contain the path).
                let touched = memo.touched(path, before_id, after_id, || {
                    let before = match before_id {
                        Some(id) => self.text(id)?,
                        None => String::new(),
                    };
                    Ok(touched_symbols(path, &before, &self.text(after_id)?))
                })?;
                for qualified_name in touched {
                    read.notes.push(SymbolNote {
                        file: relative.to_owned(),
                        qualified_name,
                        commit: commit_id.clone(),
                        time,
                        text: commit.text.clone(),
                    });
                }
            }
        }
        if since.is_some() && !met_since {
            return Ok(None);
        }
        Ok(Some(read))
    }

    /// What commit `id` changed against its parent (none: the empty tree), with git's
    /// rename detection.
    fn diff(
        &self,
        id: ObjectId,
        parent: Option<ObjectId>,
        cache: &mut gix::diff::blob::Platform,
    ) -> Result<CommitChanges, HistoryOff> {
        let unreadable = |e: &dyn std::fmt::Display| HistoryOff::Unreadable(e.to_string());
        let repo = self.repo;
        let commit = repo.find_commit(id).map_err(|e| unreadable(&e))?;
        let tree = commit.tree().map_err(|e| unreadable(&e))?;
        let parent_tree = match parent {
            Some(parent) => repo
                .find_commit(parent)
                .and_then(|p| p.tree())
                .map_err(|e| unreadable(&e))?,
            None => repo.empty_tree(),
        };
        let mut diffed: Vec<ChangeDetached> = Vec::new();
        parent_tree
            .changes()
            .map_err(|e| unreadable(&e))?
            .options(|o| {
                o.track_path()
                    .track_rewrites(Some(gix::diff::Rewrites::default()));
            })
            .for_each_to_obtain_tree_with_cache(&tree, cache, |change| {
                diffed.push(change.detach());
                Ok(gix::object::tree::diff::Action::Continue(()))
            })
            .map_err(|e| unreadable(&e))?;
        cache.clear_resource_cache_keep_allocation();
        let blobs = diffed.iter().filter(|c| c.entry_mode().is_blob()).count();
        let mut changes = Vec::new();
        for change in &diffed {
            let blob = change.entry_mode().is_blob();
            let (location, renamed_from, before, after) = match change {
                ChangeDetached::Addition { location, id, .. } => (location, None, None, *id),
                ChangeDetached::Modification {
                    location,
                    previous_id,
                    id,
                    ..
                } => (location, None, Some(*previous_id), *id),
                ChangeDetached::Rewrite {
                    source_location,
                    location,
                    source_id,
                    id,
                    copy,
                    ..
                } => {
                    let from = (!copy).then(|| source_location.to_str_lossy().into_owned());
                    (location, from, Some(*source_id), *id)
                }
                ChangeDetached::Deletion { .. } => continue,
            };
            // A directory's change is most of a diff and is attributed to nothing; only
            // its rename matters. (Any file may carry a note: one renamed later to a
            // source name is attributed under that name.)
            if !blob && renamed_from.is_none() {
                continue;
            }
            changes.push(FileChange {
                path: location.to_str_lossy().into_owned(),
                renamed_from,
                before,
                after,
                blob,
            });
        }
        let message = commit.message_raw_sloppy().to_str_lossy().into_owned();
        Ok(CommitChanges {
            blobs,
            text: note_text(&message),
            changes,
        })
    }

    /// A blob's text; binary, non-UTF-8 or oversized content (a committed bundle) reads as
    /// empty: it has no symbols the index keeps.
    fn text(&self, id: ObjectId) -> Result<String, HistoryOff> {
        let blob = self
            .repo
            .find_blob(id)
            .map_err(|e| HistoryOff::Unreadable(e.to_string()))?;
        if blob.data.len() > MAX_BLOB_BYTES {
            return Ok(String::new());
        }
        Ok(String::from_utf8(blob.data.clone()).unwrap_or_default())
    }
}
