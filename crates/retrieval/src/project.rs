//! A project's chunks and structural graph, with file contents read on demand.
//!
//! Two ways in: [`Project::open`] parses everything in memory (no index; tests, one-shot
//! tools) and [`Project::from_index`] links what the store cached (facts and chunks) without
//! parsing anything. Either way a file's source and parse are only needed to draw a
//! snapshot, so they are loaded the first time one is drawn.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use codectx_chunker::CodeChunk;
use codectx_files::{FileSelection, Generated};
use codectx_graph::{ProjectGraph, SymbolRef};
use codectx_parser::ParsedFile;
use codectx_snapshot::SnapshotFile;
use codectx_store::{ChunksByFile, Store, SyncChanges};

use crate::RetrievalError;

mod image;

/// One source file: its chunks, and its source and parse once loaded.
#[derive(Debug)]
pub struct ProjectFile {
    pub relative_path: String,
    pub chunks: Vec<CodeChunk>,
    content: OnceLock<Option<FileContent>>,
    /// Its names as the name channel meets them: the same for every question, so made the
    /// first time a question finds the file, and kept.
    names: OnceLock<crate::search::FileNames>,
    /// Its chunks' positions in `chunks` with the first bytes of their ids, sorted by id: a
    /// ranking looks chunks up by id hundreds of times per question, and comparing the
    /// keys held here reads no chunk.
    by_id: OnceLock<Vec<(u64, u32)>>,
    abs: PathBuf,
}

#[derive(Debug)]
struct FileContent {
    source: String,
    /// The file's one parse: symbols and the references snapshots follow.
    syntax: SnapshotFile,
}

impl ProjectFile {
    /// The file at `relative_path` under `root` with its chunks; its source, parse, names
    /// and id lookup are made when first asked for (or `loaded` already).
    fn new(
        root: &Path,
        relative_path: String,
        chunks: Vec<CodeChunk>,
        loaded: Option<FileContent>,
    ) -> Self {
        ProjectFile {
            abs: root.join(&relative_path),
            relative_path,
            chunks,
            content: loaded.map_or_else(OnceLock::new, |c| OnceLock::from(Some(c))),
            names: OnceLock::new(),
            by_id: OnceLock::new(),
        }
    }

    /// The chunk with this id.
    pub fn chunk(&self, id: &str) -> Option<&CodeChunk> {
        let by_id = self.by_id.get_or_init(|| {
            let mut order: Vec<(u64, u32)> = (0..self.chunks.len() as u32)
                .map(|i| (id_key(&self.chunks[i as usize].id), i))
                .collect();
            order.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0).then_with(|| {
                    self.chunks[a.1 as usize]
                        .id
                        .cmp(&self.chunks[b.1 as usize].id)
                })
            });
            order
        });
        // Ids sharing their first bytes sit together; the full id tells them apart.
        let key = id_key(id);
        let first = by_id.partition_point(|&(k, _)| k < key);
        by_id[first..]
            .iter()
            .take_while(|&&(k, _)| k == key)
            .map(|&(_, at)| &self.chunks[at as usize])
            .find(|chunk| chunk.id == id)
    }

    /// The file's source (read from disk the first time); `None` when it can no longer be
    /// read.
    pub fn source(&self) -> Option<&str> {
        self.content().map(|c| c.source.as_str())
    }

    /// The file's parse (made the first time it is asked for).
    pub fn parsed(&self) -> Option<&ParsedFile> {
        self.content().map(|c| c.syntax.parsed())
    }

    /// The file's parse with the references its snapshots follow (the same parse).
    pub fn syntax(&self) -> Option<&SnapshotFile> {
        self.content().map(|c| &c.syntax)
    }

    pub(crate) fn names(&self) -> &crate::search::FileNames {
        self.names.get_or_init(|| {
            crate::search::FileNames::of(self, &mut crate::scoring::WordRoots::new())
        })
    }

    fn content(&self) -> Option<&FileContent> {
        self.content
            .get_or_init(|| {
                let source = codectx_parser::read_source(&self.abs).ok()?;
                let syntax = SnapshotFile::parse(&self.relative_path, &source);
                Some(FileContent { source, syntax })
            })
            .as_ref()
    }
}

/// An id's first eight bytes, in order: ids (hex digests) differ there.
fn id_key(id: &str) -> u64 {
    let mut key = [0u8; 8];
    let bytes = id.as_bytes();
    let n = bytes.len().min(8);
    key[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(key)
}

/// Every source file of a project, chunked, with its [`ProjectGraph`].
pub struct Project {
    root: PathBuf,
    /// Sorted by relative path.
    files: Vec<ProjectFile>,
    graph: ProjectGraph,
    /// Files left out, with the reason (binary, not UTF-8, unreadable).
    skipped: Vec<String>,
    /// Every declaration's name, by the words a question can name it with: made while a
    /// project loads from an index, else at the first question; again after a patch.
    name_index: OnceLock<crate::search::NameIndex>,
    /// What the project's manifest calls it ([`project_names`]), read at the first question.
    names: OnceLock<Vec<String>>,
    /// The chunks whose code stands more than once, by [`code_key`]: made at the first
    /// answer that asks ([`Project::copies_of`]), again after a patch.
    copies: OnceLock<HashMap<CodeKey, Vec<(u32, u32)>>>,
}

/// A chunk's code by its length and its first and last bytes: equal codes have equal keys,
/// and few unequal ones share one (they are compared whole).
type CodeKey = (usize, u64);

fn code_key(code: &str) -> CodeKey {
    use std::hash::{Hash, Hasher};
    const ENDS: usize = 64;
    let bytes = code.as_bytes();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes[..bytes.len().min(ENDS)].hash(&mut hasher);
    bytes[bytes.len().saturating_sub(ENDS)..].hash(&mut hasher);
    (bytes.len(), hasher.finish())
}

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project")
            .field("root", &self.root)
            .field("files", &self.files.len())
            .field("skipped", &self.skipped)
            .finish()
    }
}

/// A project read from its image: [`Project::from_image`].
pub struct FromImage {
    pub project: Project,
    /// The sync's changes, or module configurations other than those the image's links
    /// were resolved under, were applied to it: the image no longer holds it.
    pub patched: bool,
}

/// A project image read from disk, not yet checked against the sync that follows: see
/// [`Project::from_saved`].
pub struct SavedProject {
    root: PathBuf,
    loaded: image::Loaded,
    /// How long reading and decoding took.
    read: std::time::Duration,
}

impl SavedProject {
    /// A blocking read of the image of `store`'s index in the state `digest` names, to run
    /// off the async workers: `None` when there is none that reads (said at debug level).
    pub fn reader(
        store: &Store,
        digest: &[u8; 32],
    ) -> Result<impl FnOnce() -> Option<SavedProject> + Send + 'static, RetrievalError> {
        let root = canonical_root(store.root())?;
        let dir = store.local_dir().map(Path::to_path_buf);
        let digest = *digest;
        Ok(move || {
            let started = Instant::now();
            match image::read(dir.as_deref()?, &root, &digest) {
                Ok(loaded) => Some(SavedProject {
                    root,
                    loaded,
                    read: started.elapsed(),
                }),
                Err(unused) => {
                    tracing::debug!(%unused, "project not loaded from its image");
                    None
                }
            }
        })
    }
}

impl Project {
    /// Reads, parses and chunks every source file under `root` (gitignore-aware, the same
    /// selection as the graph) and links the graph. Unreadable and generated files are
    /// listed in [`Project::skipped`], never fatal.
    pub fn open(root: &Path) -> Result<Self, RetrievalError> {
        let root = canonical_root(root)?;
        let mut sources = Vec::new();
        let mut skipped = Vec::new();
        let selection = FileSelection::default();
        for file in selection.walk(&root) {
            if selection.too_large(file.size) {
                continue;
            }
            match codectx_parser::read_source(&file.abs) {
                Ok(source) => match Generated::of(&file.path, &source) {
                    Some(generated) => {
                        skipped.push(format!("{}: {}", file.path, generated.description()));
                    }
                    None => sources.push((file.abs, source)),
                },
                Err(e) => skipped.push(e.to_string()),
            }
        }
        // One parse per file feeds its chunks and its graph facts.
        let mut facts = Vec::with_capacity(sources.len());
        let files = sources
            .into_iter()
            .map(|(abs, source)| {
                let relative_path = codectx_files::relative_path(&root, &abs);
                let syntax =
                    codectx_parser::parse_with(&relative_path, &source, |parsed, program| {
                        facts.push((
                            abs.clone(),
                            codectx_graph::facts::facts_of(&parsed, program),
                        ));
                        SnapshotFile::from_parse(parsed, program)
                    });
                let chunks = codectx_chunker::chunk_file(syntax.parsed(), &source, &relative_path);
                ProjectFile::new(
                    &root,
                    relative_path,
                    chunks,
                    Some(FileContent { source, syntax }),
                )
            })
            .collect();
        let graph = ProjectGraph::from_facts(&root, facts);
        Ok(Self::new(root, files, graph, skipped))
    }

    /// Links the facts and chunks `store` holds (as of its last sync) without parsing:
    /// the start-up path of a long-lived server.
    pub async fn from_index(store: &Store) -> Result<Self, RetrievalError> {
        let started = Instant::now();
        let root = canonical_root(store.root())?;
        // Linking (module resolution probes the file system, then call edges) needs only
        // the facts, so it runs on a blocking thread while the chunk rows are read.
        let graph = async {
            let facts = store.load_facts().await?;
            let facts_read = started.elapsed();
            let root = root.clone();
            let graph = tokio::task::spawn_blocking(move || link(&root, facts))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            Ok::<_, RetrievalError>((graph, facts_read, started.elapsed()))
        };
        // The rows take less time than the facts and linking: the name index, most of a
        // first question's ranking, is made beside the linking too.
        let files = async {
            let chunks = store.code_chunks_by_file().await?;
            let chunks_read = started.elapsed();
            let root = root.clone();
            let (files, names) = tokio::task::spawn_blocking(move || {
                let files = project_files(&root, chunks);
                let names = crate::search::NameIndex::of(&files);
                (files, names)
            })
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            Ok::<_, RetrievalError>((files, names, chunks_read, started.elapsed()))
        };
        let ((graph, facts_read, linked), (files, names, chunks_read, named)) =
            tokio::try_join!(graph, files)?;
        // The index names files by position: they are in path order already, as `new`
        // keeps them.
        debug_assert!(files.is_sorted_by(|a, b| a.relative_path <= b.relative_path));
        let mut project = Self::new(root, files, graph, skipped_files(store));
        project.name_index = OnceLock::from(names);
        tracing::debug!(
            ?facts_read,
            ?linked,
            ?chunks_read,
            ?named,
            total = ?started.elapsed(),
            "project loaded from the index"
        );
        Ok(project)
    }

    /// The project saved beside the index in the state `digest` names (a
    /// [`Store::content_digest`] taken before the sync that followed), with `changes`,
    /// that sync's hand-over, applied: what [`Project::from_index`] reads, without reading
    /// the rows or linking. `None` when there is no such image (another state, none, or one
    /// that does not read), said at debug level.
    pub async fn from_image(
        store: &Store,
        digest: &[u8; 32],
        changes: Option<SyncChanges>,
    ) -> Result<Option<FromImage>, RetrievalError> {
        let saved = SavedProject::reader(store, digest)?;
        let saved = tokio::task::spawn_blocking(saved)
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        Self::from_saved(store, saved, changes).await
    }

    /// [`Project::from_image`] from an image read beforehand ([`SavedProject::reader`],
    /// which can run beside the sync).
    pub async fn from_saved(
        store: &Store,
        saved: Option<SavedProject>,
        changes: Option<SyncChanges>,
    ) -> Result<Option<FromImage>, RetrievalError> {
        let Some(SavedProject { root, loaded, read }) = saved else {
            return Ok(None);
        };
        let started = Instant::now();
        // Links resolved under other module configurations (or unknown ones) resolve again.
        let configs_moved = loaded.module_configs.as_ref() != store.module_config_stamps();
        let mut project = Self::new(root, loaded.files, loaded.graph, skipped_files(store));
        project.name_index = OnceLock::from(loaded.names);
        let mut changes = changes.unwrap_or_default();
        changes.module_configs_changed |= configs_moved;
        let patched = changes.moves_project();
        project.apply_changes(store, changes).await?;
        tracing::debug!(
            ?read,
            patch = ?started.elapsed(),
            patched,
            "project loaded from its image"
        );
        Ok(Some(FromImage { project, patched }))
    }

    /// Saves the project beside the index (when the index is local), for
    /// [`Project::from_image`]: it must hold what `store` holds now. A failure is only
    /// logged: the image is a cache.
    pub fn save_image(&self, store: &Store) {
        let Some(dir) = store.local_dir() else {
            return;
        };
        let started = Instant::now();
        let written = image::write(
            dir,
            &self.root,
            &store.content_digest(),
            &self.graph,
            &self.files,
            self.name_index(),
            store.module_config_stamps(),
        );
        match written {
            Ok(()) => tracing::debug!(elapsed = ?started.elapsed(), "project image saved"),
            Err(e) => tracing::warn!("the project image was not saved: {e}"),
        }
    }

    /// Links what the first sync of a new index parsed ([`Store::take_changes`], with
    /// `complete` set), which is what [`Project::from_index`] would read back right after it.
    pub fn from_changes(store: &Store, changes: SyncChanges) -> Result<Self, RetrievalError> {
        debug_assert!(changes.complete, "a project from changes needs all of them");
        let root = canonical_root(store.root())?;
        let graph = link(&root, changes.facts);
        let mut grouped = ChunksByFile::sized_for(store);
        changes.chunks.into_iter().for_each(|c| grouped.push(c));
        let files = project_files(&root, grouped.into_sorted());
        Ok(Self::new(root, files, graph, skipped_files(store)))
    }

    /// Patches the project with what one sync of `store` changed, as the sync handed it over
    /// ([`Store::take_changes`]): the rewritten files' chunks and facts are taken as they
    /// are, and only files another process changed (`elsewhere`) are read from the index.
    pub async fn apply_changes(
        &mut self,
        store: &Store,
        changes: SyncChanges,
    ) -> Result<(), RetrievalError> {
        let elsewhere: Vec<String> = changes
            .elsewhere
            .iter()
            .filter(|p| changes.rewritten.binary_search(p).is_err())
            .cloned()
            .collect();
        let chunks = by_file(&changes.rewritten, changes.chunks);
        self.patch(
            &changes.rewritten,
            changes.facts.into_iter().collect(),
            chunks,
            changes.module_configs_changed,
        );
        if !elsewhere.is_empty() {
            // What another process's sync wrote is only in the index.
            let facts = store.load_facts_of(&elsewhere).await?.into_iter().collect();
            let chunks = by_file(&elsewhere, store.code_chunks_of_files(&elsewhere).await?);
            self.patch(&elsewhere, facts, chunks, false);
        }
        self.skipped = skipped_files(store);
        Ok(())
    }

    /// Replaces the chunks and facts of `changed` (a file absent from `chunks` and `facts`
    /// is gone) and re-links the graph, every import resolved again when a module
    /// configuration changed.
    fn patch(
        &mut self,
        changed: &[String],
        mut facts: HashMap<String, codectx_graph::FileFacts>,
        chunks: HashMap<String, Vec<CodeChunk>>,
        module_configs_changed: bool,
    ) {
        if changed.is_empty() && !module_configs_changed {
            return;
        }
        let started = std::time::Instant::now();
        let graph_changes: Vec<_> = changed
            .iter()
            .map(|p| (self.root.join(p), facts.remove(p)))
            .collect();
        let relinked = if module_configs_changed {
            self.graph.update_facts_resolving_again(graph_changes)
        } else {
            self.graph.update_facts(graph_changes)
        };
        let linked = started.elapsed();
        if changed.is_empty() {
            tracing::debug!(
                relinked,
                ?linked,
                "imports resolved again after a module configuration changed"
            );
            return;
        }
        // Files edited in place (each there before and still holding chunks) keep their
        // positions, so the name index is patched for them instead of built anew.
        let position = |files: &[ProjectFile], path: &str| {
            files
                .binary_search_by(|f| f.relative_path.as_str().cmp(path))
                .ok()
        };
        let in_place = changed.iter().all(|p| {
            chunks.get(p).is_some_and(|c| !c.is_empty()) && position(&self.files, p).is_some()
        });
        self.files
            .retain(|f| !chunks.contains_key(&f.relative_path));
        for (relative_path, mut file_chunks) in chunks {
            if file_chunks.is_empty() {
                continue;
            }
            file_chunks.sort_by_key(|c| (c.start_line, c.depth));
            self.files.push(ProjectFile::new(
                &self.root,
                relative_path,
                file_chunks,
                None,
            ));
        }
        self.files
            .sort_by(|a, b| a.relative_path.cmp(&b.relative_path));
        self.copies = OnceLock::new();
        self.name_index = match self.name_index.take() {
            Some(mut names) if in_place => {
                let edited: Vec<u32> = changed
                    .iter()
                    .filter_map(|p| position(&self.files, p))
                    .map(|i| i as u32)
                    .collect();
                names.replace_files(&self.files, &edited);
                OnceLock::from(names)
            }
            _ => OnceLock::new(),
        };
        tracing::debug!(
            files = changed.len(),
            module_configs_changed,
            relinked,
            ?linked,
            total = ?started.elapsed(),
            "project patched"
        );
    }

    /// Builds now what the first question after a load or a patch would build (the name
    /// index: about 12 ms on vite, 65 ms on babel; the copies), so that it does not wait for it. A
    /// server calls this after a sync that changed files.
    pub fn prepare_search(&self) {
        self.name_index();
        self.copy_index();
    }

    /// The names of every file's chunks, indexed by the words that name them.
    pub(crate) fn name_index(&self) -> &crate::search::NameIndex {
        self.name_index
            .get_or_init(|| crate::search::NameIndex::of(&self.files))
    }

    fn new(
        root: PathBuf,
        mut files: Vec<ProjectFile>,
        graph: ProjectGraph,
        mut skipped: Vec<String>,
    ) -> Self {
        files.sort_by(|a, b| a.relative_path.cmp(&b.relative_path));
        skipped.sort();
        Self {
            root,
            files,
            graph,
            skipped,
            name_index: OnceLock::new(),
            names: OnceLock::new(),
            copies: OnceLock::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What the project calls itself ([`project_names`] of its root).
    pub fn names(&self) -> &[String] {
        self.names.get_or_init(|| project_names(&self.root))
    }

    pub fn files(&self) -> &[ProjectFile] {
        &self.files
    }

    pub fn file(&self, relative_path: &str) -> Option<&ProjectFile> {
        self.files
            .binary_search_by(|f| f.relative_path.as_str().cmp(relative_path))
            .ok()
            .map(|i| &self.files[i])
    }

    pub fn graph(&self) -> &ProjectGraph {
        &self.graph
    }

    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Every chunk of the project, file by file in path order.
    pub fn chunks(&self) -> impl Iterator<Item = &CodeChunk> {
        self.files.iter().flat_map(|f| &f.chunks)
    }

    /// The other chunks whose code is `chunk`'s, character for character (a generated
    /// mirror's, a copied script's), in path order: an answer shows the code once and
    /// locates these.
    pub fn copies_of(&self, chunk: &CodeChunk) -> Vec<&CodeChunk> {
        self.copy_index()
            .get(&code_key(&chunk.full_source))
            .into_iter()
            .flatten()
            .map(|&(f, c)| &self.files[f as usize].chunks[c as usize])
            .filter(|c| {
                c.full_source == chunk.full_source
                    && (c.relative_path != chunk.relative_path || c.start_line != chunk.start_line)
            })
            .collect()
    }

    /// The chunks whose code stands more than once, by [`code_key`] (15 ms on hono's
    /// 9,500 chunks in a debug build).
    fn copy_index(&self) -> &HashMap<CodeKey, Vec<(u32, u32)>> {
        self.copies.get_or_init(|| {
            let started = std::time::Instant::now();
            let mut index: HashMap<CodeKey, Vec<(u32, u32)>> = HashMap::new();
            for (f, file) in self.files.iter().enumerate() {
                for (c, each) in file.chunks.iter().enumerate() {
                    let at = (f as u32, c as u32);
                    index
                        .entry(code_key(&each.full_source))
                        .or_default()
                        .push(at);
                }
            }
            index.retain(|_, chunks| chunks.len() > 1);
            tracing::debug!(codes = index.len(), elapsed = ?started.elapsed(), "copies indexed");
            index
        })
    }

    /// The chunk with this id.
    pub fn chunk(&self, relative_path: &str, id: &str) -> Option<&CodeChunk> {
        self.file(relative_path)?.chunk(id)
    }

    /// The graph's declaration of a chunk: the one made from the same parser symbol.
    pub fn declaration(&self, chunk: &CodeChunk) -> Option<SymbolRef> {
        let file = self.graph.file_index(&chunk.relative_path)?;
        self.graph.declaration_of(file, chunk.symbol)
    }

    /// The chunk of a graph declaration: the one made from the same parser symbol.
    pub fn chunk_of(&self, declaration: SymbolRef) -> Option<&CodeChunk> {
        let symbol = self.graph.decl(declaration).symbol?;
        let path = &self.graph.files()[declaration.file as usize].path;
        self.file(path)?.chunks.iter().find(|c| c.symbol == symbol)
    }
}

impl Project {
    /// Whether the top-level declaration holding `chunk` (or `chunk` itself) is exported by
    /// its module (ESM `export`, an export list, or CommonJS `module.exports`), as the
    /// graph's export table records it.
    pub fn is_exported(&self, chunk: &CodeChunk) -> bool {
        let mut top = chunk;
        while let Some(parent) = top
            .parent_chunk_id
            .as_deref()
            .and_then(|id| self.chunk(&top.relative_path, id))
        {
            top = parent;
        }
        let Some(symbol) = self.declaration(top) else {
            return false;
        };
        self.graph.files()[symbol.file as usize]
            .facts()
            .exports
            .iter()
            .any(|e| matches!(e.target, codectx_graph::facts::ExportTarget::Local { decl } if decl == symbol.decl))
    }
}

/// The project graph of `root` from its files' facts (paths relative to `root`).
fn link(root: &Path, facts: Vec<(String, codectx_graph::FileFacts)>) -> ProjectGraph {
    ProjectGraph::from_facts(
        root,
        facts
            .into_iter()
            .map(|(path, facts)| (root.join(path), facts)),
    )
}

/// The files of `chunks` (grouped by file, each file's in (start line, depth) order), in
/// path order, with nothing loaded yet.
fn project_files(root: &Path, chunks: BTreeMap<String, Vec<CodeChunk>>) -> Vec<ProjectFile> {
    chunks
        .into_iter()
        .map(|(relative_path, chunks)| ProjectFile::new(root, relative_path, chunks, None))
        .collect()
}

/// `chunks` grouped by file, with an empty list for each of `paths` that has none.
fn by_file(paths: &[String], chunks: Vec<CodeChunk>) -> HashMap<String, Vec<CodeChunk>> {
    let mut by_file: HashMap<String, Vec<CodeChunk>> =
        paths.iter().map(|p| (p.clone(), Vec::new())).collect();
    for chunk in chunks {
        if let Some(file) = by_file.get_mut(&chunk.relative_path) {
            file.push(chunk);
        }
    }
    by_file
}

/// The files `store` skipped, each with its reason.
fn skipped_files(store: &Store) -> Vec<String> {
    let mut skipped: Vec<String> = store
        .files()
        .filter_map(|f| match &f.status {
            codectx_store::FileStatus::Skipped { detail, .. } => {
                Some(format!("{}: {detail}", f.path))
            }
            _ => None,
        })
        .collect();
    skipped.sort();
    skipped
}

fn canonical_root(root: &Path) -> Result<PathBuf, RetrievalError> {
    root.canonicalize()
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| RetrievalError::NotADirectory(root.to_path_buf()))
}

/// What the project at `root` calls itself, as its manifests say: `package.json`'s `name`
/// (its scope, when it has one: `@koa/router` → `koa`; a monorepo root's without `-monorepo`
/// or `-root`), `Cargo.toml`'s and `pyproject.toml`'s
/// package name, `go.mod`'s module path's last part. A question that names the project
/// says which project, not which code (see `TextQuery::without_project_name`). The
/// directory's own name is not one: worktrees and checkouts are called anything.
pub fn project_names(root: &Path) -> Vec<String> {
    let read = |file: &str| std::fs::read_to_string(root.join(file)).ok();
    let mut names = Vec::new();
    // npm's manifest, and Deno's (a JSR package is named there; a `deno.jsonc` with
    // comments is not read).
    for file in ["package.json", "deno.json", "deno.jsonc"] {
        if let Some(json) = read(file)
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(&json)
            && let Some(name) = value.get("name").and_then(|n| n.as_str())
        {
            names.push(
                match name.strip_prefix('@').and_then(|n| n.split_once('/')) {
                    // A scope is the brand people say (`@vue/core`, `@koa/router`); the name
                    // after it is often a plain word of the code (`core`, `router`, `query`).
                    Some((scope, _)) => scope.to_string(),
                    None => name.to_string(),
                },
            );
        }
    }
    for (file, table) in [("Cargo.toml", "package"), ("pyproject.toml", "project")] {
        if let Some(text) = read(file)
            && let Ok(value) = text.parse::<toml::Table>()
            && let Some(name) = value
                .get(table)
                .and_then(|t| t.get("name"))
                .and_then(|n| n.as_str())
        {
            names.push(name.to_string());
        }
    }
    if let Some(text) = read("go.mod")
        && let Some(module) = text.lines().find_map(|l| l.trim().strip_prefix("module "))
        && let Some(last) = module.trim().trim_matches('"').rsplit('/').next()
    {
        names.push(last.to_string());
    }
    // A monorepo's root is named after what it holds (`payload-monorepo`, `mobx-root`).
    for name in &mut names {
        for suffix in ["-monorepo", "-root"] {
            if let Some(product) = name.strip_suffix(suffix) {
                *name = product.to_string();
            }
        }
    }
    names.retain(|n| !n.trim().is_empty());
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::NameIndex;

    #[test]
    fn a_project_is_called_what_its_manifests_say() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(project_names(root).is_empty(), "no manifest, no name");
        std::fs::write(root.join("package.json"), r#"{"name": "@koa/router"}"#).unwrap();
        std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"ripgrep\"\n").unwrap();
        std::fs::write(
            root.join("go.mod"),
            "module github.com/spf13/cobra\n\ngo 1.21\n",
        )
        .unwrap();
        assert_eq!(project_names(root), ["koa", "ripgrep", "cobra"]);
        std::fs::write(root.join("package.json"), r#"{"name": "payload-monorepo"}"#).unwrap();
        assert_eq!(project_names(root), ["payload", "ripgrep", "cobra"]);
        // A workspace's manifest without a package, or a broken one, names nothing.
        std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
        std::fs::write(root.join("package.json"), "{ not json").unwrap();
        assert_eq!(project_names(root), ["cobra"]);
        // A JSR package's manifest; a Deno project's without a name names nothing.
        std::fs::write(root.join("deno.json"), r#"{"name": "@fresh/core"}"#).unwrap();
        assert_eq!(project_names(root), ["fresh", "cobra"]);
        std::fs::write(root.join("deno.json"), r#"{"tasks": {}}"#).unwrap();
        assert_eq!(project_names(root), ["cobra"]);
    }

    fn file(path: &str, source: &str) -> ProjectFile {
        let parsed = codectx_parser::parse_source(path, source);
        let chunks = codectx_chunker::chunk_file(&parsed, source, path);
        ProjectFile::new(Path::new("/p"), path.to_string(), chunks, None)
    }

    /// An edited file's names, patched into the index, give the index a build from scratch
    /// gives: the same keys, the same positions in the same order.
    #[test]
    fn a_name_index_patched_for_an_edit_equals_one_built_anew() {
        let mut files = vec![
            file(
                "src/auth/session.ts",
                "export function createSession() {}\nexport function endSession() {}\n",
            ),
            file(
                "src/auth/token.ts",
                "export class TokenService {\n  validateToken(t: string) { return t; }\n  refreshToken() {}\n}\n",
            ),
            file(
                "src/utils/retry.ts",
                "export function retryRequest() {}\nexport function validateToken() {}\n",
            ),
        ];
        let mut index = NameIndex::of(&files);
        // The token service loses one method, renames another and gains a function.
        files[1] = file(
            "src/auth/token.ts",
            "export class TokenService {\n  checkToken(t: string) { return t; }\n}\nexport function revokeSession() {}\n",
        );
        index.replace_files(&files, &[1]);
        assert_eq!(index, NameIndex::of(&files));
        assert_ne!(index, NameIndex::default());
    }
}
