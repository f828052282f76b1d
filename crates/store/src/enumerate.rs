//! Step 1 of the sync: the project's source files with the stat data that triggers work.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::UNIX_EPOCH;

use codectx_graph::LoadOptions;

/// A source file on disk as the walk saw it.
#[derive(Debug, Clone)]
pub(crate) struct DiskFile {
    /// Relative to the root, `/`-separated.
    pub path: String,
    pub abs: PathBuf,
    pub mtime_ns: i64,
    pub size: u64,
}

/// Walks `root` gitignore-aware (the `ignore` crate, in parallel), keeping files with a
/// supported extension. Symlinks are not followed, so loops and paths outside the root are
/// never reached. Files over `max_file_bytes` are kept: the sync records them as skipped.
pub(crate) fn enumerate(root: &Path, options: &LoadOptions) -> Vec<DiskFile> {
    let skip_dirs = options.skip_dirs.clone();
    let found = Mutex::new(Vec::new());
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .follow_links(false)
        .require_git(false)
        .threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(8)))
        .filter_entry(move |e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && skip_dirs.iter().any(|s| e.file_name() == s.as_str()))
        })
        .build_parallel()
        .run(|| {
            let found = &found;
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return ignore::WalkState::Continue;
                }
                let name = entry.file_name().to_str().unwrap_or("");
                if codectx_parser::Language::from_path(name).is_none()
                    || (options.skip_declaration_files && codectx_graph::is_declaration_file(name))
                {
                    return ignore::WalkState::Continue;
                }
                let Ok(meta) = entry.metadata() else {
                    return ignore::WalkState::Continue;
                };
                let mtime_ns = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i64);
                let abs = entry.into_path();
                let path = abs
                    .strip_prefix(root)
                    .unwrap_or(&abs)
                    .to_string_lossy()
                    .replace('\\', "/");
                found.lock().unwrap().push(DiskFile {
                    path,
                    abs,
                    mtime_ns,
                    size: meta.len(),
                });
                ignore::WalkState::Continue
            })
        });
    let mut files = found.into_inner().unwrap();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Minified bundles are not source anyone edits: a `.min.` name, or lines far longer than
/// code people write (average over 300 characters, or any line over 5,000 in a file that
/// has few lines).
pub(crate) fn looks_minified(path: &str, source: &str) -> bool {
    if path.contains(".min.") {
        return true;
    }
    let (lines, longest) = source.lines().fold((0usize, 0usize), |(n, longest), l| {
        (n + 1, longest.max(l.len()))
    });
    let lines = lines.max(1);
    source.len() / lines > 300 || (longest > 5_000 && lines < 50)
}
