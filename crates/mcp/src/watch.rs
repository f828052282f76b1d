//! How the server learns that files changed, so that an answer walks the tree only when
//! they did.
//!
//! - **Linux, the default.** inotify watches each directory the file selection enters
//!   ([`DirectoryWatch`]). An answer reads the queue itself before it decides whether to
//!   sync: the kernel queues an event before the write that caused it returns, so a file
//!   written before a call is seen by that call, and a call after no change skips the walk.
//!   A background task syncs shortly after changes, so that an answer rarely has to.
//! - **Elsewhere, with `--watch`.** notify's recursive watcher (FSEvents,
//!   ReadDirectoryChangesW). Its events arrive on their own thread a moment after the write,
//!   so an answer right after an edit may not see it yet; without `--watch` every answer
//!   syncs first.
//! - **`--no-watch`**, or a watcher that cannot start (the system's watch limit): every
//!   answer syncs first.

use std::sync::Arc;
use std::time::Duration;

use crate::service::Service;

/// How a server keeps its index in step with the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// Every answer syncs first (a walk of the tree).
    SyncEachAnswer,
    /// inotify on each selected directory, drained by every answer (Linux).
    Directories,
    /// notify's recursive watcher; answers sync after it reports a change.
    Tree,
}

impl WatchMode {
    /// What `serve` does with `--watch` / `--no-watch` on this platform.
    pub fn of_flags(watch: bool, no_watch: bool) -> WatchMode {
        match (no_watch, cfg!(target_os = "linux"), watch) {
            (true, _, _) => WatchMode::SyncEachAnswer,
            (false, true, _) => WatchMode::Directories,
            (false, false, true) => WatchMode::Tree,
            (false, false, false) => WatchMode::SyncEachAnswer,
        }
    }
}

/// Editors write in bursts (temp file, rename, chmod): the background sync waits this long
/// after the first event for the rest.
const SETTLE: Duration = Duration::from_millis(300);

/// A running watcher, kept for as long as the server runs.
pub enum Watcher {
    /// The directory watch lives in the service, which drains it; its background sync
    /// runs until the process ends.
    Directories,
    /// notify's watcher: dropping it stops the events.
    Tree(notify::RecommendedWatcher),
}

/// Starts watching `service`'s root as `mode` says. `None` for
/// [`WatchMode::SyncEachAnswer`]. A directory watch is set up in the background (a walk of
/// the directories): until it is in place, answers sync first, and if it fails they go on
/// doing so.
pub fn start(service: Arc<Service>, mode: WatchMode) -> anyhow::Result<Option<Watcher>> {
    match mode {
        WatchMode::SyncEachAnswer => Ok(None),
        WatchMode::Tree => tree(service).map(|w| Some(Watcher::Tree(w))),
        #[cfg(target_os = "linux")]
        WatchMode::Directories => {
            tokio::spawn(async move {
                if let Err(e) = directories::start(service).await {
                    tracing::warn!("file watch unavailable ({e:#}): each answer syncs first");
                }
            });
            Ok(Some(Watcher::Directories))
        }
        #[cfg(not(target_os = "linux"))]
        WatchMode::Directories => anyhow::bail!("watching directories needs inotify (Linux)"),
    }
}

/// notify's recursive watcher: each event that may matter marks the service changed and
/// wakes a debounced sync.
fn tree(service: Arc<Service>) -> anyhow::Result<notify::RecommendedWatcher> {
    use notify::Watcher;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let selection = service.config.store_options().file_selection(&service.root);
    let root = service.root.clone();
    let marks = Arc::clone(&service);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // An error or a rescan flag means events were lost: the next answer syncs.
        let matters = match &event {
            Ok(event) => {
                event.need_rescan()
                    // Reading a file (an answer's snapshot does) changes nothing.
                    || (!matches!(event.kind, notify::EventKind::Access(_))
                        && event.paths.iter().any(|p| selection.may_matter(&root, p)))
            }
            Err(_) => true,
        };
        if matters {
            marks.mark_changed();
            let _ = tx.send(());
        }
    })?;
    watcher.watch(&service.root, notify::RecursiveMode::Recursive)?;
    service.set_watched();
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            tokio::time::sleep(SETTLE).await;
            while rx.try_recv().is_ok() {}
            service.refresh().await;
        }
    });
    Ok(watcher)
}

#[cfg(target_os = "linux")]
pub use directories::DirectoryWatch;

#[cfg(target_os = "linux")]
mod directories {
    use std::collections::HashMap;
    use std::io;
    use std::os::fd::AsFd;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use codectx_files::FileSelection;
    use codectx_retrieval::SyncScope;
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
    use tokio::io::unix::AsyncFd;

    use super::SETTLE;
    use crate::service::Service;

    /// What is watched on each directory: entries created, removed, renamed or written,
    /// and the directory itself removed or renamed.
    const MASK: WatchMask = WatchMask::CREATE
        .union(WatchMask::DELETE)
        .union(WatchMask::MODIFY)
        .union(WatchMask::MOVED_FROM)
        .union(WatchMask::MOVED_TO)
        .union(WatchMask::DELETE_SELF)
        .union(WatchMask::MOVE_SELF)
        .union(WatchMask::ONLYDIR)
        .union(WatchMask::EXCL_UNLINK);

    /// One inotify watch on every directory the file selection enters under a root, and
    /// one on the reflog of HEAD: a commit or a checkout moves the history the index reads
    /// even when no file changes.
    pub struct DirectoryWatch {
        inotify: Inotify,
        /// The directory each watch is on.
        dirs: HashMap<WatchDescriptor, PathBuf>,
        /// The watch on `<git dir>/logs/HEAD` (see [`codectx_history::head_log`]).
        head_log: Option<WatchDescriptor>,
        /// The watch on the directory of git's own exclude file (see
        /// [`codectx_history::exclude_dir`]): editing it changes the selected files.
        exclude: Option<WatchDescriptor>,
        root: PathBuf,
        selection: FileSelection,
        buffer: Vec<u8>,
    }

    impl DirectoryWatch {
        /// Watches every directory `selection` enters under `root`.
        pub fn new(root: &Path, selection: FileSelection) -> io::Result<Self> {
            let mut watch = DirectoryWatch {
                inotify: Inotify::init()?,
                dirs: HashMap::new(),
                head_log: None,
                exclude: None,
                root: root.to_path_buf(),
                selection,
                buffer: vec![0; 64 << 10],
            };
            watch.add_tree(root)?;
            watch.watch_head_log();
            watch.exclude = codectx_history::exclude_dir(root).and_then(|dir| {
                watch
                    .inotify
                    .watches()
                    .add(
                        dir,
                        WatchMask::CLOSE_WRITE
                            | WatchMask::MOVED_TO
                            | WatchMask::DELETE
                            | WatchMask::ONLYDIR,
                    )
                    .ok()
            });
            Ok(watch)
        }

        /// Watches the reflog of HEAD, when there is one. Git appends to it; expiring it
        /// replaces the file, and the watch is then taken again.
        fn watch_head_log(&mut self) {
            self.head_log = codectx_history::head_log(&self.root).and_then(|log| {
                self.inotify
                    .watches()
                    .add(
                        log,
                        WatchMask::MODIFY | WatchMask::DELETE_SELF | WatchMask::MOVE_SELF,
                    )
                    .ok()
            });
        }

        /// How many directories are watched.
        pub fn directories(&self) -> usize {
            self.dirs.len()
        }

        /// Watches `dir` and every directory the selection enters below it. Watching a
        /// directory twice keeps one watch.
        fn add_tree(&mut self, dir: &Path) -> io::Result<()> {
            for dir in self.selection.directories(dir) {
                match self.inotify.watches().add(&dir, MASK) {
                    Ok(wd) => {
                        self.dirs.insert(wd, dir);
                    }
                    // Gone again, or replaced by a file, since the walk saw it.
                    Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }

        /// Every watch again from a fresh walk: after a directory moved (its watches would
        /// name it by its old path) or the queue overflowed (events were lost).
        fn rewatch(&mut self) -> io::Result<()> {
            for wd in std::mem::take(&mut self.dirs).into_keys() {
                let _ = self.inotify.watches().remove(wd);
            }
            self.add_tree(&self.root.clone())
        }

        /// Reads every event queued so far, without waiting: where the index may have
        /// changed (`None`: nowhere). A file written, created or removed in a watched
        /// directory is a change in that directory alone; anything else (a directory
        /// created, removed or moved, an ignore file, HEAD moved, lost events) is one in
        /// the whole tree. New directories are watched before this returns.
        pub fn drain(&mut self) -> io::Result<Option<SyncScope>> {
            // Changes that reach beyond one directory's own files.
            let mut changed = false;
            let mut in_directories = std::collections::BTreeSet::new();
            let mut new_dirs: Vec<PathBuf> = Vec::new();
            let mut rewatch = false;
            let mut head_log_replaced = false;
            loop {
                let Self {
                    inotify,
                    dirs,
                    head_log,
                    exclude,
                    root,
                    selection,
                    buffer,
                } = self;
                let events = match inotify.read_events(buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                };
                for event in events {
                    if event.mask.contains(EventMask::Q_OVERFLOW) {
                        rewatch = true;
                        changed = true;
                        continue;
                    }
                    if Some(&event.wd) == head_log.as_ref() {
                        // HEAD moved: the sync reads the new commits' notes.
                        changed = true;
                        head_log_replaced |= event.mask.contains(EventMask::IGNORED);
                        continue;
                    }
                    if Some(&event.wd) == exclude.as_ref() {
                        // git's exclude file written, replaced or removed: like a
                        // `.gitignore` edit below.
                        if event.name.is_some_and(|name| name == "exclude") {
                            rewatch = true;
                            changed = true;
                        }
                        continue;
                    }
                    if event.mask.contains(EventMask::IGNORED) {
                        dirs.remove(&event.wd);
                        continue;
                    }
                    let Some(dir) = dirs.get(&event.wd) else {
                        continue;
                    };
                    let path = event
                        .name
                        .map_or_else(|| dir.clone(), |name| dir.join(name));
                    // An ignore file's edit changes which files and directories the walk
                    // takes (hidden, so not a change by the rule below).
                    if event
                        .name
                        .is_some_and(|name| name == ".gitignore" || name == ".ignore")
                    {
                        rewatch = true;
                        changed = true;
                        continue;
                    }
                    if !selection.may_matter(root, &path) {
                        continue;
                    }
                    let is_dir = event.mask.contains(EventMask::ISDIR);
                    if event.mask.contains(EventMask::MOVE_SELF)
                        || (is_dir && event.mask.contains(EventMask::MOVED_FROM))
                    {
                        rewatch = true;
                        changed = true;
                    } else if is_dir
                        && event
                            .mask
                            .intersects(EventMask::CREATE | EventMask::MOVED_TO)
                    {
                        // Counts as a change once it is known to be entered (below).
                        new_dirs.push(path);
                    } else if is_dir || event.name.is_none() {
                        // A directory removed, or the watched directory itself.
                        changed = true;
                    } else if matters(selection, &path) {
                        // A file the index reads.
                        in_directories.insert(codectx_files::relative_path(root, dir));
                    }
                }
            }
            if head_log_replaced {
                self.watch_head_log();
            }
            if rewatch {
                self.rewatch()?;
                // Directories that appeared meanwhile are in the fresh walk's watches.
                changed |= !new_dirs.is_empty();
            } else {
                // A directory the walk would not enter (a build's ignored output) is not
                // watched, nor anything below it.
                new_dirs.sort();
                new_dirs.dedup();
                for dir in new_dirs {
                    if self.selection.enters_directory(&self.root, &dir) {
                        self.add_tree(&dir)?;
                        changed = true;
                    }
                }
            }
            Ok(if changed {
                Some(SyncScope::Tree)
            } else if in_directories.is_empty() {
                None
            } else {
                Some(SyncScope::Directories(in_directories))
            })
        }
    }

    /// A file the index reads: source, or a module configuration the resolver reads.
    fn matters(selection: &FileSelection, path: &Path) -> bool {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| selection.is_source_name(n) || codectx_files::is_module_config_name(n))
    }

    /// Watches the service's root, hands the watch to the service (each answer drains it)
    /// and syncs in the background a moment after changes arrive.
    pub async fn start(service: Arc<Service>) -> anyhow::Result<()> {
        let selection = service.config.store_options().file_selection(&service.root);
        let root = service.root.clone();
        let watch =
            tokio::task::spawn_blocking(move || DirectoryWatch::new(&root, selection)).await??;
        tracing::debug!("watching {} directories", watch.directories());
        // A second descriptor of the same queue wakes the background sync; reading stays
        // with the service, so an answer and the background never split one batch.
        let queue = watch.inotify.as_fd().try_clone_to_owned()?;
        // SAFETY: the `OwnedFd` is a descriptor of its own, open until the `AsyncFd` that
        // owns it drops it.
        let wake = unsafe { AsyncFd::register(queue) }
            .map_err(|e| anyhow::anyhow!("waiting on the file watch: {e}"))?;
        service.set_directory_watch(watch);
        tokio::spawn(async move {
            while let Ok(mut ready) = wake.readable().await {
                ready.clear_ready();
                tokio::time::sleep(SETTLE).await;
                service.refresh_if_changed().await;
            }
        });
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::fs;

    use codectx_files::FileSelection;
    use codectx_retrieval::SyncScope;

    use super::DirectoryWatch;

    fn tree() -> Option<SyncScope> {
        Some(SyncScope::Tree)
    }

    fn directory(dir: &str) -> Option<SyncScope> {
        Some(SyncScope::Directories([dir.to_string()].into()))
    }

    /// New directories are watched during the drain that sees them, unless the walk would
    /// not enter them; events in unwatched places change nothing.
    #[test]
    fn a_drain_watches_new_directories_the_walk_enters() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join(".gitignore"), "gen/\n").unwrap();
        let mut watch = DirectoryWatch::new(root, FileSelection::default()).unwrap();
        assert_eq!(watch.directories(), 2, "the root and src");
        assert_eq!(watch.drain().unwrap(), None, "nothing happened yet");

        fs::create_dir_all(root.join("gen/deep")).unwrap();
        fs::create_dir_all(root.join("node_modules/dep")).unwrap();
        fs::create_dir_all(root.join("out/x")).unwrap();
        fs::write(root.join("notes.md"), "not source\n").unwrap();
        assert_eq!(watch.drain().unwrap(), None, "nothing the index reads");
        assert_eq!(watch.directories(), 2, "ignored and skipped directories");
        fs::write(root.join("gen/deep/a.ts"), "export const a = 1;\n").unwrap();
        assert_eq!(
            watch.drain().unwrap(),
            None,
            "a write under an ignored directory"
        );

        fs::create_dir_all(root.join("src/feature/parts")).unwrap();
        assert_eq!(watch.drain().unwrap(), tree(), "a new directory");
        assert_eq!(watch.directories(), 4, "src/feature and src/feature/parts");
        fs::write(root.join("src/feature/parts/b.ts"), "export const b = 1;\n").unwrap();
        assert_eq!(
            watch.drain().unwrap(),
            directory("src/feature/parts"),
            "a source file in it"
        );
        assert_eq!(watch.drain().unwrap(), None, "drained");
        // Files written or removed in two directories: those two, the root named "".
        fs::write(root.join("top.ts"), "export const t = 1;\n").unwrap();
        fs::remove_file(root.join("src/feature/parts/b.ts")).unwrap();
        assert_eq!(
            watch.drain().unwrap(),
            Some(SyncScope::Directories(
                ["".to_string(), "src/feature/parts".to_string()].into()
            )),
            "a file in the root written, one in a directory removed"
        );
        fs::write(root.join("src/feature/parts/b.ts"), "export const b = 1;\n").unwrap();
        assert_eq!(watch.drain().unwrap(), directory("src/feature/parts"));

        fs::rename(root.join("src/feature"), root.join("src/renamed")).unwrap();
        assert_eq!(watch.drain().unwrap(), tree(), "a directory moved");
        assert_eq!(watch.directories(), 4);
        fs::write(root.join("src/renamed/parts/b.ts"), "export const b = 2;\n").unwrap();
        assert_eq!(
            watch.drain().unwrap(),
            directory("src/renamed/parts"),
            "an edit under the moved directory"
        );

        // Un-ignoring a directory: a change, and its directories are watched from then on.
        fs::write(root.join(".gitignore"), "").unwrap();
        assert_eq!(watch.drain().unwrap(), tree(), "an ignore file edited");
        assert_eq!(watch.directories(), 6, "gen and gen/deep");
        fs::write(root.join("gen/deep/a.ts"), "export const a = 2;\n").unwrap();
        assert_eq!(
            watch.drain().unwrap(),
            directory("gen/deep"),
            "a write under the directory no longer ignored"
        );
    }

    /// git's own exclude file (`.git/info/exclude`) selects files as a `.gitignore` does:
    /// editing it is a change, and what it no longer excludes is watched.
    #[test]
    fn an_edit_of_gits_exclude_file_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        codectx_corpus::GitRepo::init(root);
        let exclude = root.join(".git/info/exclude");
        fs::create_dir_all(exclude.parent().unwrap()).unwrap();
        fs::write(&exclude, "gen/\n").unwrap();
        fs::create_dir_all(root.join("gen/deep")).unwrap();
        let mut watch = DirectoryWatch::new(root, FileSelection::default()).unwrap();
        assert_eq!(watch.directories(), 1, "the root; gen is excluded");
        assert_eq!(watch.drain().unwrap(), None, "nothing happened yet");

        fs::write(root.join(".git/info/other"), "x\n").unwrap();
        assert_eq!(watch.drain().unwrap(), None, "another file beside it");
        fs::write(&exclude, "").unwrap();
        assert_eq!(watch.drain().unwrap(), tree(), "the exclude file edited");
        assert_eq!(watch.directories(), 3, "gen and gen/deep");
        fs::write(root.join("gen/deep/a.ts"), "export const a = 1;\n").unwrap();
        assert_eq!(
            watch.drain().unwrap(),
            directory("gen/deep"),
            "a write in what is no longer excluded"
        );
    }
}
