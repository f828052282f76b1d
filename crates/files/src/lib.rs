//! Which files of a repository are indexed (`codectx-files`): the one place that decides.
//!
//! The store's sync, the in-memory graph, the server's file watcher and the test tools all
//! ask a [`FileSelection`], so they agree on what a project's source files are:
//!
//! - files the parser handles, by extension (TS/JS, Rust, Python, Go: the parser's
//!   `Language::from_path`), not declaration files (`*.d.ts`) by default;
//! - found by a gitignore-aware walk that skips hidden entries and [`FileSelection::skip_dirs`]
//!   by name, and never follows symlinks (so no loops, nothing outside the root);
//! - never inside the index directory, wherever the configuration puts it;
//! - each named by its repository-relative, `/`-separated path.
//!
//! What a file's *content* rules out (too large, generated, binary, not UTF-8) is decided
//! when it is read: [`FileSelection::too_large`] and [`Generated::of`] here, encoding by
//! `codectx_parser::read_source`.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir_all(dir.path().join("src")).unwrap();
//! std::fs::write(dir.path().join("src/a.ts"), "export const a = 1;\n").unwrap();
//! std::fs::write(dir.path().join("src/a.d.ts"), "export declare const a: number;\n").unwrap();
//! let files = codectx_files::FileSelection::default().walk(dir.path());
//! assert_eq!(files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["src/a.ts"]);
//! ```

mod listings;

pub use listings::Listings;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What is indexed, beyond `.gitignore`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSelection {
    /// Leave out `*.d.ts` (declarations, not user code).
    pub skip_declaration_files: bool,
    /// Directory names never entered.
    pub skip_dirs: Vec<String>,
    /// Files larger than this are not read ([`FileSelection::too_large`]).
    pub max_file_bytes: u64,
    /// The index's own directory when it lies inside the root: never walked or watched.
    pub index_dir: Option<PathBuf>,
    /// Apply `.gitignore`, `.ignore` and git's exclude files, the root's parents' included.
    /// On for a work tree; off for a revision's files written out from git objects: they
    /// are tracked files, to which ignore rules do not apply, and they lie inside the
    /// index directory, which ignores itself.
    pub ignore_files: bool,
}

impl Default for FileSelection {
    fn default() -> Self {
        Self {
            skip_declaration_files: true,
            skip_dirs: ["node_modules", "dist", "build", "out", "coverage", ".git"]
                .map(String::from)
                .to_vec(),
            max_file_bytes: 2 << 20,
            index_dir: None,
            ignore_files: true,
        }
    }
}

/// A source file the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Relative to the root, `/`-separated: the file's name in the index and in answers.
    pub path: String,
    pub abs: PathBuf,
    /// Modification time in nanoseconds since the Unix epoch (0 when unknown).
    pub mtime_ns: i64,
    pub size: u64,
}

/// What one walk found: source files and module configurations, each sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walked {
    pub sources: Vec<SourceFile>,
    pub module_configs: Vec<SourceFile>,
}

impl Walked {
    fn of(found: Vec<Found>) -> Self {
        let mut walked = Walked::default();
        for file in found {
            match file {
                Found::Source(file) => walked.sources.push(file),
                Found::ModuleConfig(file) => walked.module_configs.push(file),
            }
        }
        walked.sources.sort_by(|a, b| a.path.cmp(&b.path));
        walked.module_configs.sort_by(|a, b| a.path.cmp(&b.path));
        walked
    }
}

enum Found {
    Source(SourceFile),
    ModuleConfig(SourceFile),
}

impl FileSelection {
    /// The selection for an unpacked package (npm tarballs in tests and xtask): only
    /// `node_modules` is skipped, since packages ship their code in `dist/` or `build/`, and
    /// no size limit applies.
    pub fn package_tree() -> Self {
        FileSelection {
            skip_dirs: vec!["node_modules".into()],
            max_file_bytes: u64::MAX,
            ..FileSelection::default()
        }
    }

    /// The source files under `root`, sorted by path. Files over the size limit are
    /// included (the caller records them as skipped); see [`FileSelection::too_large`].
    pub fn walk(&self, root: &Path) -> Vec<SourceFile> {
        let mut files = self.collect(root, None, |entry| self.source_file(root, entry));
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files
    }

    /// [`FileSelection::walk`], with the module configurations the same walk passes
    /// ([`is_module_config_name`]): what a sync compares to notice that imports may resolve
    /// differently.
    pub fn walk_with_module_configs(&self, root: &Path) -> Walked {
        Walked::of(self.collect(root, None, |entry| self.found_file(root, entry)))
    }

    /// The source files and module configurations directly inside `dir`, a directory the
    /// walk from `root` enters, by the walk's rules (the ignore files of `dir` and of its
    /// parents apply): what a sync reads when a file watcher saw changes in `dir` and
    /// nowhere else.
    pub fn walk_directory(&self, root: &Path, dir: &Path) -> Walked {
        Walked::of(self.collect(dir, Some(1), |entry| self.found_file(root, entry)))
    }

    /// The directories the walk enters under `root` (`root` included when it is one),
    /// sorted: what a file watcher watches to see every change the walk would find.
    pub fn directories(&self, root: &Path) -> Vec<PathBuf> {
        let mut dirs = self.collect(root, None, Self::directory);
        dirs.sort();
        dirs
    }

    /// Whether the walk from `root` would enter `dir`, a directory below it: by the same
    /// rules, ignore files included, without walking the rest of the tree. For a directory
    /// that appears while a watcher runs (a build's ignored output must not be watched).
    pub fn enters_directory(&self, root: &Path, dir: &Path) -> bool {
        let Some(parent) = dir.parent().filter(|p| p.starts_with(root)) else {
            return false;
        };
        self.may_matter(root, dir)
            && self
                .collect(parent, Some(1), Self::directory)
                .iter()
                .any(|d| d == dir)
    }

    fn directory(entry: ignore::DirEntry) -> Option<PathBuf> {
        entry
            .file_type()
            .is_some_and(|t| t.is_dir())
            .then(|| entry.into_path())
    }

    /// What `keep` makes of each entry the walk reaches, in no particular order. The walk
    /// skips hidden entries, [`FileSelection::skip_dirs`] and the index directory, applies
    /// ignore files when [`FileSelection::ignore_files`] says so, and follows no symlink.
    fn collect<T: Send>(
        &self,
        root: &Path,
        max_depth: Option<usize>,
        keep: impl Fn(ignore::DirEntry) -> Option<T> + Sync,
    ) -> Vec<T> {
        let skip_dirs = self.skip_dirs.clone();
        let index_dir = self.index_dir.clone();
        let found = Mutex::new(Vec::new());
        ignore::WalkBuilder::new(root)
            .standard_filters(self.ignore_files)
            .hidden(true)
            .follow_links(false)
            .require_git(false)
            .max_depth(max_depth)
            .threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(8)))
            .filter_entry(move |e| {
                !(e.file_type().is_some_and(|t| t.is_dir())
                    && (skip_dirs.iter().any(|s| e.file_name() == s.as_str())
                        || index_dir.as_deref().is_some_and(|d| e.path() == d)))
            })
            .build_parallel()
            .run(|| {
                let (found, keep) = (&found, &keep);
                Box::new(move |entry| {
                    if let Some(kept) = entry.ok().and_then(keep) {
                        found.lock().expect("no walker thread panics").push(kept);
                    }
                    ignore::WalkState::Continue
                })
            });
        found.into_inner().expect("no walker thread panics")
    }

    fn source_file(&self, root: &Path, entry: ignore::DirEntry) -> Option<SourceFile> {
        match self.found_file(root, entry)? {
            Found::Source(file) => Some(file),
            Found::ModuleConfig(_) => None,
        }
    }

    fn found_file(&self, root: &Path, entry: ignore::DirEntry) -> Option<Found> {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return None;
        }
        let name = entry.file_name().to_str()?;
        let source = self.is_source_name(name);
        if !source && !is_module_config_name(name) {
            return None;
        }
        let file = Self::stat(root, entry)?;
        Some(if source {
            Found::Source(file)
        } else {
            Found::ModuleConfig(file)
        })
    }

    fn stat(root: &Path, entry: ignore::DirEntry) -> Option<SourceFile> {
        let meta = entry.metadata().ok()?;
        let mtime_ns = listings::mtime_ns(&meta);
        let abs = entry.into_path();
        Some(SourceFile {
            path: relative_path(root, &abs),
            abs,
            mtime_ns,
            size: meta.len(),
        })
    }

    /// Whether a file called `name` is source by its name: an extension the parser
    /// handles, and not a declaration file when those are skipped.
    pub fn is_source_name(&self, name: &str) -> bool {
        codectx_parser::Language::from_path(name).is_some()
            && !(self.skip_declaration_files && is_declaration_file(name))
    }

    /// Whether the file at `relative_path` (`/`-separated, relative to the root) is one the
    /// walk selects, by its path alone: a source name, no hidden or skipped directory on
    /// the way. For paths that come from elsewhere than the walk (a commit's tree).
    pub fn selects_path(&self, relative_path: &str) -> bool {
        let (dirs, name) = split_name(relative_path);
        self.is_source_name(name) && self.enters(dirs)
    }

    /// Whether the file at `relative_path` is a module configuration the module resolver
    /// reads (see [`is_module_config_name`]) in a directory the walk enters. A revision's
    /// files are written out with these beside them, so that its imports resolve as the
    /// work tree's do.
    pub fn selects_module_config(&self, relative_path: &str) -> bool {
        let (dirs, name) = split_name(relative_path);
        is_module_config_name(name) && self.enters(dirs)
    }

    /// No hidden or skipped directory on a `/`-separated path of directories.
    fn enters(&self, dirs: &str) -> bool {
        !dirs
            .split('/')
            .any(|dir| dir.starts_with('.') || self.skip_dirs.iter().any(|d| d == dir))
    }

    /// Whether a change at `path` (from a file watcher) can matter to the index: it is
    /// under `root`, and neither hidden nor inside a skipped directory or the index.
    pub fn may_matter(&self, root: &Path, path: &Path) -> bool {
        let Ok(inside) = path.strip_prefix(root) else {
            return false;
        };
        if self
            .index_dir
            .as_deref()
            .is_some_and(|d| path.starts_with(d))
        {
            return false;
        }
        !inside.components().any(|c| {
            let name = c.as_os_str().to_string_lossy();
            name.starts_with('.') || self.skip_dirs.iter().any(|d| *d == name)
        })
    }

    /// Files over the size limit are not read: bundles and generated code.
    pub fn too_large(&self, size: u64) -> bool {
        size > self.max_file_bytes
    }
}

/// The directory of a `/`-separated relative path: `a/b` for `a/b/c.ts`, `""` for `c.ts`
/// (the root).
pub fn directory_of(relative_path: &str) -> &str {
    split_name(relative_path).0
}

/// `("a/b", "c.ts")` for `a/b/c.ts`; `("", "c.ts")` for `c.ts`.
fn split_name(relative_path: &str) -> (&str, &str) {
    relative_path
        .rsplit_once('/')
        .unwrap_or(("", relative_path))
}

/// The files the module resolver reads beside the source: `package.json` (`exports`,
/// `main`, workspaces), `tsconfig*.json` / `jsconfig*.json` (`paths`, `baseUrl`,
/// `extends`, references), `Cargo.toml` (a Rust crate's name and root) and `go.mod` (a Go
/// module's path).
pub fn is_module_config_name(name: &str) -> bool {
    matches!(name, "package.json" | "Cargo.toml" | "go.mod")
        || ["tsconfig", "jsconfig"]
            .iter()
            .any(|stem| name.starts_with(stem) && name.ends_with(".json"))
}

/// `*.d.ts` and friends: declarations, not user code.
pub fn is_declaration_file(name: &str) -> bool {
    [".d.ts", ".d.mts", ".d.cts"]
        .iter()
        .any(|e| name.ends_with(e))
        || (name.contains(".d.") && name.ends_with(".ts"))
}

/// Code no one edits, told by its content. It is left out wherever files are read, as a
/// file over the size limit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generated {
    /// A `.min.` name, or lines far longer than code people write (average over 300
    /// characters, or any line over 5,000 in a file that has few lines).
    Minified,
    /// Its last line names the source map its compiler wrote beside it
    /// (`//# sourceMappingURL=marked.cjs.map`), which no one writes by hand. The code people
    /// edit is the source the map points to; a bundle committed beside it (`lib/marked.cjs`
    /// beside `src/`, `client-dist/socket.io.js`) would answer questions with a copy of it.
    BuildOutput,
}

impl Generated {
    /// Whether the file at `path` holding `source` is generated, and how it shows.
    pub fn of(path: &str, source: &str) -> Option<Generated> {
        if names_source_map(source) {
            Some(Generated::BuildOutput)
        } else if looks_minified(path, source) {
            Some(Generated::Minified)
        } else {
            None
        }
    }

    /// Why such a file is left out, in a few words (shown beside its path).
    pub fn description(self) -> &'static str {
        match self {
            Generated::Minified => "bundled or minified code",
            Generated::BuildOutput => "build output (it names its source map)",
        }
    }
}

fn looks_minified(path: &str, source: &str) -> bool {
    if path.contains(".min.") {
        return true;
    }
    let (lines, longest) = source.lines().fold((0usize, 0usize), |(n, longest), l| {
        (n + 1, longest.max(l.len()))
    });
    let lines = lines.max(1);
    source.len() / lines > 300 || (longest > 5_000 && lines < 50)
}

fn names_source_map(source: &str) -> bool {
    source.trim_end().lines().next_back().is_some_and(|line| {
        ["//# ", "//@ ", "/*# "].iter().any(|open| {
            line.trim_start()
                .strip_prefix(open)
                .is_some_and(|rest| rest.starts_with("sourceMappingURL="))
        })
    })
}

/// `path` relative to `root`, `/`-separated (the path itself when it is not under `root`).
pub fn relative_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}
