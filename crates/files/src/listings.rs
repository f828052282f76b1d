//! Directory listings kept from one walk to the next, as git's untracked cache keeps them.
//!
//! A directory's entries change only when its modification time does, and what the walk
//! keeps of them changes only when an ignore file does. So a directory whose stamp and
//! ignore files are as they were when it was listed is not read again: its files are
//! stat'ed, nothing else. On babel (13,000 directories) this replaces a readdir, an open
//! and ignore matching of every entry with one stat per directory.
//!
//! The listings hold what the ignore rules let through, before [`FileSelection`] picks
//! sources and module configurations by name, so a build that reads more languages sees
//! its new files without a fresh walk.
//!
//! A stamp taken less than [`RACY`] before the walk started may not show a change made in
//! the same clock tick (file systems stamp with a coarse clock); a directory so stamped is
//! not kept, and is walked afresh the next time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::{FileSelection, Found, Walked};

/// Stamps younger than this at the walk's start are not trusted.
const RACY: i64 = 1_000_000_000;

/// Bumped when the listings' meaning or layout changes: older ones are dropped.
const FORMAT: u32 = 1;

/// The directory listings of the last walk of one root, by directory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listings {
    /// What every listing also depends on; when it differs, none is used.
    outside: Outside,
    /// By `/`-separated directory path relative to the root (`""` is the root).
    dirs: HashMap<String, Listing>,
    /// Whether the last walk read a directory again or dropped one: the listings are
    /// worth saving.
    #[serde(skip)]
    read_again: bool,
}

/// What decides the walk outside the tree's own directories.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Outside {
    format: u32,
    root: PathBuf,
    skip_dirs: Vec<String>,
    index_dir: Option<PathBuf>,
    ignore_files: bool,
    /// The ignore files of the root's parents, which apply inside it.
    parents: Vec<IgnoreFiles>,
    /// The user's global excludes file (git's `core.excludesFile`).
    global: Option<(PathBuf, Option<Stamp>)>,
}

/// One directory as the walk left it. Kept for every directory of a large tree, so it is
/// compact: names are joined by NUL (which no file name holds), not a vector of strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Listing {
    stamp: Stamp,
    /// `None` when the directory holds no ignore file and no `.git`, as most do.
    ignore: Option<Box<IgnoreFiles>>,
    /// Subdirectories the walk enters, NUL-separated.
    dirs: String,
    /// Regular files the ignore rules let through, NUL-separated.
    files: String,
}

impl Listing {
    fn dirs(&self) -> impl Iterator<Item = &str> {
        names(&self.dirs)
    }

    fn files(&self) -> impl Iterator<Item = &str> {
        names(&self.files)
    }

    fn ignore(&self) -> IgnoreFiles {
        self.ignore.as_deref().cloned().unwrap_or_default()
    }
}

fn names(joined: &str) -> impl Iterator<Item = &str> {
    joined.split('\0').filter(|n| !n.is_empty())
}

/// What tells that a directory or a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    mtime_ns: i64,
    size: u64,
    /// Replacing a directory by another of the same name keeps neither its stamp nor this.
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        std::fs::symlink_metadata(path)
            .ok()
            .map(|m| Stamp::from(&m))
    }

    fn racy(&self, started_ns: i64) -> bool {
        self.mtime_ns > started_ns - RACY
    }
}

impl From<&std::fs::Metadata> for Stamp {
    fn from(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Stamp {
            mtime_ns: mtime_ns(meta),
            size: meta.len(),
            inode,
        }
    }
}

pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The ignore files a directory holds, which the walk reads: `.gitignore`, `.ignore`, and
/// the excludes of a git directory (`.git/info/exclude`, in the common directory of a
/// worktree's `.git` file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct IgnoreFiles {
    gitignore: Option<Stamp>,
    ignore: Option<Stamp>,
    /// A `.git` file's own stamp (it names the git directory), or none for a directory.
    git: Option<Option<Stamp>>,
    exclude: Option<Stamp>,
}

impl IgnoreFiles {
    fn of(dir: &Path) -> IgnoreFiles {
        let git = dir.join(".git");
        let git_meta = std::fs::symlink_metadata(&git).ok();
        let exclude = git_meta
            .as_ref()
            .and_then(|m| git_common_dir(&git, m.is_dir()))
            .and_then(|common| Stamp::of(&common.join("info/exclude")));
        IgnoreFiles {
            gitignore: Stamp::of(&dir.join(".gitignore")),
            ignore: Stamp::of(&dir.join(".ignore")),
            git: git_meta.map(|m| (!m.is_dir()).then(|| Stamp::from(&m))),
            exclude,
        }
    }

    fn racy(&self, started_ns: i64) -> bool {
        [
            self.gitignore,
            self.ignore,
            self.git.flatten(),
            self.exclude,
        ]
        .iter()
        .flatten()
        .any(|s| s.racy(started_ns))
    }
}

/// The git directory whose `info/exclude` applies beside `.git`: `.git` itself, or for a
/// worktree's `.git` file the common directory of the one it names.
fn git_common_dir(git: &Path, is_dir: bool) -> Option<PathBuf> {
    if is_dir {
        return Some(git.to_path_buf());
    }
    let text = std::fs::read_to_string(git).ok()?;
    let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let git_dir = git.parent()?.join(named);
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(common) => Some(git_dir.join(common.lines().next()?.trim())),
        Err(_) => Some(git_dir),
    }
}

impl Outside {
    fn of(selection: &FileSelection, root: &Path) -> Outside {
        let ignore_files = selection.ignore_files;
        Outside {
            format: FORMAT,
            root: root.to_path_buf(),
            skip_dirs: selection.skip_dirs.clone(),
            index_dir: selection.index_dir.clone(),
            ignore_files,
            parents: if ignore_files {
                root.ancestors().skip(1).map(IgnoreFiles::of).collect()
            } else {
                Vec::new()
            },
            global: ignore_files
                .then(ignore::gitignore::gitconfig_excludes_path)
                .flatten()
                .map(|path| {
                    let stamp = Stamp::of(&path);
                    (path, stamp)
                }),
        }
    }

    fn racy(&self, started_ns: i64) -> bool {
        self.parents.iter().any(|p| p.racy(started_ns))
            || self
                .global
                .as_ref()
                .is_some_and(|(_, s)| s.is_some_and(|s| s.racy(started_ns)))
    }
}

/// What a kept listing says about its directory now.
enum Check {
    /// Unchanged: its files are stat'ed, nothing is read.
    Holds,
    /// Its entries changed, its ignore files did not: it alone is read again.
    Entries,
    /// Its ignore files changed, or it is gone: everything under it is walked afresh.
    Rules,
}

impl Listing {
    fn check(&self, dir: &Path, ignore_files: bool) -> Check {
        let Some(stamp) = Stamp::of(dir) else {
            return Check::Rules;
        };
        if !ignore_files {
            return if stamp == self.stamp {
                Check::Holds
            } else {
                Check::Entries
            };
        }
        // Most directories hold no ignore file: their stamp alone decides. One created or
        // removed changes the directory's stamp; one edited in place only its own.
        let ignore = self.ignore();
        if stamp == self.stamp {
            return if self.ignore.is_none() || IgnoreFiles::of(dir) == ignore {
                Check::Holds
            } else {
                Check::Rules
            };
        }
        if IgnoreFiles::of(dir) == ignore {
            Check::Entries
        } else {
            Check::Rules
        }
    }
}

/// What one directory's walk gave, before it becomes a listing.
#[derive(Default)]
struct Read {
    dirs: Vec<String>,
    files: Vec<String>,
}

impl FileSelection {
    /// [`FileSelection::walk_with_module_configs`], reading again only the directories
    /// that changed since `listings` were made (empty listings: a full walk), and
    /// leaving in `listings` what this walk found. The result is the full walk's.
    pub fn walk_reusing(&self, root: &Path, listings: &mut Listings) -> Walked {
        let started_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let outside = Outside::of(self, root);
        if listings.outside != outside || outside.racy(started_ns) {
            listings.dirs.clear();
        }
        let mut old = std::mem::take(&mut listings.dirs);
        let mut kept = HashMap::with_capacity(old.len());
        let mut reused = 0;
        let mut found = Vec::new();
        let mut pending = vec![String::new()];
        while let Some(rel) = pending.pop() {
            let abs = join(root, &rel);
            let check = old
                .get(&rel)
                .map_or(Check::Rules, |l| l.check(&abs, self.ignore_files));
            match check {
                Check::Holds => {
                    let listing = old.remove(&rel).expect("checked above");
                    self.stat_files(root, &rel, listing.files(), &mut found);
                    pending.extend(listing.dirs().map(|d| join_rel(&rel, d)));
                    kept.insert(rel, listing);
                    reused += 1;
                }
                Check::Entries => {
                    let read = self.read_tree(root, &abs, Some(1), &mut found);
                    let listing = read.into_iter().find(|(dir, _)| *dir == rel);
                    if let Some((_, read)) = listing {
                        pending.extend(read.dirs.iter().map(|d| join_rel(&rel, d)));
                        self.keep(&mut kept, root, rel, read, started_ns);
                    }
                }
                Check::Rules => {
                    for (dir, read) in self.read_tree(root, &abs, None, &mut found) {
                        old.remove(&dir);
                        self.keep(&mut kept, root, dir, read, started_ns);
                    }
                }
            }
        }
        listings.read_again = !old.is_empty() || kept.len() != reused;
        listings.outside = outside;
        listings.dirs = kept;
        Walked::of(found)
    }

    /// Keeps `read` as the listing of `rel` unless a stamp is too young to trust.
    fn keep(
        &self,
        kept: &mut HashMap<String, Listing>,
        root: &Path,
        rel: String,
        read: Read,
        started_ns: i64,
    ) {
        let abs = join(root, &rel);
        let Some(stamp) = Stamp::of(&abs) else {
            return;
        };
        let ignore = if self.ignore_files {
            IgnoreFiles::of(&abs)
        } else {
            IgnoreFiles::default()
        };
        if stamp.racy(started_ns) || ignore.racy(started_ns) {
            return;
        }
        kept.insert(
            rel,
            Listing {
                stamp,
                ignore: (ignore != IgnoreFiles::default()).then(|| Box::new(ignore)),
                dirs: read.dirs.join("\0"),
                files: read.files.join("\0"),
            },
        );
    }

    /// Walks `dir` (to `max_depth`), adding the files it selects to `found`, and returns
    /// what each directory it read held, by relative path.
    fn read_tree(
        &self,
        root: &Path,
        dir: &Path,
        max_depth: Option<usize>,
        found: &mut Vec<Found>,
    ) -> HashMap<String, Read> {
        enum Entry {
            /// A directory, and whether it is the walk's start (its parent was not read).
            Dir(String, bool),
            File(String, Option<Found>),
        }
        let entries = self.collect(dir, max_depth, |entry| {
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                let rel = relative_dir(root, entry.path());
                Some(Entry::Dir(rel, entry.depth() == 0))
            } else if file_type.is_file() {
                let rel = crate::relative_path(root, entry.path());
                Some(Entry::File(rel, self.found_file(root, entry)))
            } else {
                None
            }
        });
        let mut read: HashMap<String, Read> = HashMap::new();
        for entry in entries {
            match entry {
                Entry::Dir(rel, start) => {
                    read.entry(rel.clone()).or_default();
                    if let Some((parent, name)) = split_dir(&rel).filter(|_| !start) {
                        read.entry(parent.to_string())
                            .or_default()
                            .dirs
                            .push(name.to_string());
                    }
                }
                Entry::File(rel, file) => {
                    let (parent, name) = crate::split_name(&rel);
                    read.entry(parent.to_string())
                        .or_default()
                        .files
                        .push(name.to_string());
                    found.extend(file);
                }
            }
        }
        // The walk's start is entered; below a depth limit, only what was read is listed.
        if let Some(depth) = max_depth {
            let start = relative_dir(root, dir);
            let start_depth = start.split('/').filter(|s| !s.is_empty()).count();
            read.retain(|rel, _| {
                rel.split('/').filter(|s| !s.is_empty()).count() < start_depth + depth
            });
        }
        read
    }

    /// The files of a listing that the selection takes, stat'ed.
    fn stat_files<'a>(
        &self,
        root: &Path,
        rel: &str,
        names: impl Iterator<Item = &'a str>,
        found: &mut Vec<Found>,
    ) {
        for name in names {
            let source = self.is_source_name(name);
            if !source && !crate::is_module_config_name(name) {
                continue;
            }
            let path = join_rel(rel, name);
            let abs = root.join(&path);
            let Ok(meta) = std::fs::symlink_metadata(&abs) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let file = crate::SourceFile {
                path,
                abs,
                mtime_ns: mtime_ns(&meta),
                size: meta.len(),
            };
            found.push(if source {
                Found::Source(file)
            } else {
                Found::ModuleConfig(file)
            });
        }
    }
}

impl Listings {
    /// The listings as bytes, for the index directory.
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).unwrap_or_default()
    }

    /// Listings written by [`Listings::to_bytes`]; empty ones (a full walk next) when the
    /// bytes are damaged or of another format.
    pub fn from_bytes(bytes: &[u8]) -> Listings {
        postcard::from_bytes::<Listings>(bytes)
            .ok()
            .filter(|l| l.outside.format == FORMAT)
            .unwrap_or_default()
    }

    /// Whether the last [`FileSelection::walk_reusing`] read a directory again or dropped
    /// one: what it leaves differs from what it was given.
    pub fn read_again(&self) -> bool {
        self.read_again
    }

    /// How many directories are listed.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }
}

fn join(root: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

fn join_rel(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A directory's path relative to the root, `""` for the root itself.
fn relative_dir(root: &Path, dir: &Path) -> String {
    if dir == root {
        String::new()
    } else {
        crate::relative_path(root, dir)
    }
}

/// `("a", "b")` for `a/b`, `("", "a")` for `a`, nothing for the root.
fn split_dir(rel: &str) -> Option<(&str, &str)> {
    (!rel.is_empty()).then(|| crate::split_name(rel))
}
