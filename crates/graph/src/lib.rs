//! Phase 3 of the blueprint: the structural graph of a TypeScript/JavaScript project.
//!
//! oxc_semantic resolves names inside each file ([`facts`]); oxc_resolver maps module
//! specifiers to files ([`modules`]); [`ProjectGraph`] links the two into call edges, type
//! hierarchies, reference counts and file relationships, and answers [`SymbolMetadata`]
//! queries. No TypeScript compiler and no node at run time.
//!
//! ```no_run
//! use codectx_graph::{ProjectGraph, MetadataOptions};
//! let graph = ProjectGraph::load(std::path::Path::new("my-project")).unwrap();
//! for symbol in graph.find_by_name("createUser") {
//!     let meta = graph.metadata(symbol, &MetadataOptions::default());
//!     println!("{}", serde_json::to_string_pretty(&meta).unwrap());
//! }
//! ```

pub mod facts;
mod link;
mod metadata;
pub mod modules;

use codectx_files::relative_path as relative;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use codectx_files::{FileSelection, Generated};
pub use facts::{FileFacts, SymbolKind, extract_facts};
pub use link::{FileEdge, FileRelationships, Resolution};
pub use metadata::{
    CallNode, MAX_TRANSITIVE_DEPTH, MetadataOptions, ReferenceCount, RelatedSymbol, Relation,
    SymbolInfo, SymbolMetadata, TypeFlow, TypeFlows, TypeHierarchy,
};
use modules::{ModuleResolver, Resolved};

/// One declaration of the project: file index and declaration index in that file's facts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct SymbolRef {
    pub file: u32,
    pub decl: u32,
}

/// Where a call comes from: a declaration, or a file's top-level code.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum CallerRef {
    Symbol(SymbolRef),
    Module(u32),
}

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("project root {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot walk {path}: {message}")]
    Walk { path: PathBuf, message: String },
}

/// A file's facts, decoded the first time they are read: a graph read back from bytes
/// ([`ProjectGraph::decode_linked`]) decodes only the files a question reaches.
#[derive(Debug, Clone)]
struct Facts {
    decoded: OnceLock<FileFacts>,
    /// [`FileFacts::encode`]'s bytes, when the facts came as bytes (kept once decoded, for
    /// the next [`ProjectGraph::write_linked`]): a slice of the buffer they were read from.
    encoded: Option<bytes::Bytes>,
    /// How many declarations they hold, known without decoding.
    decls: u32,
}

impl Facts {
    fn decoded(facts: FileFacts) -> Self {
        Facts {
            decls: facts.decls.len() as u32,
            decoded: OnceLock::from(facts),
            encoded: None,
        }
    }

    fn get(&self) -> &FileFacts {
        self.decoded.get_or_init(|| {
            let bytes = self.encoded.as_deref().unwrap_or_default();
            // The bytes were checked against the digest `write_linked` stored beside them
            // before the graph was made: they are what `FileFacts::encode` wrote.
            FileFacts::decode(bytes).expect("verified facts decode")
        })
    }

    fn encoded(&self) -> std::borrow::Cow<'_, [u8]> {
        match &self.encoded {
            Some(bytes) => std::borrow::Cow::Borrowed(bytes),
            None => std::borrow::Cow::Owned(self.get().encode()),
        }
    }
}

/// A file of the graph.
#[derive(Debug, Clone)]
pub struct FileNode {
    /// Path relative to the root, with `/` separators.
    pub path: String,
    pub abs: PathBuf,
    facts: Facts,
    /// Resolution of each of `facts.requests`.
    pub resolved: Vec<Resolved>,
    /// File index of each request that resolved inside the project.
    pub request_files: Vec<Option<u32>>,
    /// (parser symbol, declaration) pairs sorted by symbol, the first declaration of each
    /// symbol only: chunks find their declarations here ([`ProjectGraph::declaration_of`]).
    by_symbol: Vec<(u32, u32)>,
}

impl FileNode {
    fn new(path: String, abs: PathBuf, facts: FileFacts) -> Self {
        let mut node = FileNode {
            path,
            abs,
            facts: Facts::decoded(facts),
            resolved: Vec::new(),
            request_files: Vec::new(),
            by_symbol: Vec::new(),
        };
        node.index_symbols();
        node
    }

    /// The file's facts (decoded now if they came as bytes).
    pub fn facts(&self) -> &FileFacts {
        self.facts.get()
    }

    /// How many declarations the facts hold, without decoding them.
    pub fn decl_count(&self) -> usize {
        self.facts.decls as usize
    }

    fn set_facts(&mut self, facts: FileFacts) {
        self.facts = Facts::decoded(facts);
        self.index_symbols();
    }

    fn index_symbols(&mut self) {
        let mut by_symbol: Vec<(u32, u32)> = (0u32..)
            .zip(&self.facts().decls)
            .filter_map(|(decl, d)| d.symbol.map(|s| (s, decl)))
            .collect();
        by_symbol.sort_unstable();
        by_symbol.dedup_by_key(|(symbol, _)| *symbol);
        self.by_symbol = by_symbol;
    }
}

/// The linked structural graph of a project.
pub struct ProjectGraph {
    root: PathBuf,
    resolver: ModuleResolver,
    files: Vec<FileNode>,
    by_path: HashMap<String, u32>,
    links: link::Links,
}

impl ProjectGraph {
    /// Enumerates the project's source files (gitignore-aware), extracts facts and links.
    pub fn load(root: &Path) -> Result<Self, GraphError> {
        Self::load_with(root, &FileSelection::default())
    }

    /// Like [`ProjectGraph::load`], over the files `selection` picks (too large ones left out).
    pub fn load_with(root: &Path, selection: &FileSelection) -> Result<Self, GraphError> {
        let root = root
            .canonicalize()
            .map_err(|_| GraphError::NotADirectory(root.to_path_buf()))?;
        if !root.is_dir() {
            return Err(GraphError::NotADirectory(root));
        }
        let mut sources = Vec::new();
        for file in selection.walk(&root) {
            if selection.too_large(file.size) {
                continue;
            }
            if let Ok(source) = codectx_parser::read_source(&file.abs)
                && Generated::of(&file.path, &source).is_none()
            {
                sources.push((file.abs, source));
            }
        }
        Ok(Self::from_sources(&root, sources))
    }

    /// Builds a graph from in-memory sources (absolute paths under `root`).
    /// Sources are only read (borrowed ones avoid a copy of every file).
    pub fn from_sources<S: AsRef<str>>(
        root: &Path,
        sources: impl IntoIterator<Item = (PathBuf, S)>,
    ) -> Self {
        Self::from_facts(
            root,
            sources.into_iter().map(|(abs, source)| {
                let facts = extract_facts(&relative(root, &abs), source.as_ref());
                (abs, facts)
            }),
        )
    }

    /// Links facts extracted earlier (e.g. cached by the store) without parsing anything.
    pub fn from_facts(root: &Path, facts: impl IntoIterator<Item = (PathBuf, FileFacts)>) -> Self {
        let resolver = ModuleResolver::new(root);
        let files = facts
            .into_iter()
            .map(|(abs, facts)| FileNode::new(relative(root, &abs), abs, facts))
            .collect();
        let mut graph = Self {
            root: root.to_path_buf(),
            resolver,
            files,
            by_path: HashMap::new(),
            links: link::Links::default(),
        };
        graph.index_paths();
        // One thread: a project load links beside reading the chunk rows, which has the
        // other cores.
        graph.resolve_every_file(1);
        graph.links = link::Links::build(&graph.files);
        graph
    }

    /// Writes the linked graph to `out` ([`ProjectGraph::decode_linked`] reads it back):
    /// each file's path, where its requests resolved and its declarations by parser
    /// symbol, the links, a digest of the facts, then every file's encoded facts. Reading
    /// it back resolves and links nothing, and decodes a file's facts only when read.
    pub fn write_linked(&self, mut out: impl std::io::Write) -> std::io::Result<()> {
        #[derive(serde::Serialize)]
        struct Node<'a> {
            path: &'a str,
            facts_len: u32,
            decls: u32,
            by_symbol: &'a [(u32, u32)],
            resolved: &'a [Resolved],
            request_files: &'a [Option<u32>],
        }
        let facts: Vec<std::borrow::Cow<'_, [u8]>> =
            self.files.iter().map(|f| f.facts.encoded()).collect();
        let mut digest = blake3::Hasher::new();
        for bytes in &facts {
            digest.update(bytes);
        }
        let nodes: Vec<Node<'_>> = self
            .files
            .iter()
            .zip(&facts)
            .map(|(f, bytes)| Node {
                path: &f.path,
                facts_len: bytes.len() as u32,
                decls: f.facts.decls,
                by_symbol: &f.by_symbol,
                resolved: &f.resolved,
                request_files: &f.request_files,
            })
            .collect();
        let digest: [u8; 32] = digest.finalize().into();
        postcard::to_io(&(nodes, &self.links, digest), &mut out).map_err(std::io::Error::other)?;
        facts.iter().try_for_each(|bytes| out.write_all(bytes))
    }

    /// The graph [`ProjectGraph::write_linked`] wrote, under `root` (which must be the root
    /// it was linked under: resolved paths are absolute). An error says why the bytes do not
    /// read; bytes that read are checked (the facts against their digest, every link and
    /// resolution against the files), so a graph from them never fails later. The files'
    /// facts stay slices of `bytes` until read.
    pub fn decode_linked(root: &Path, bytes: bytes::Bytes) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct Node {
            path: String,
            facts_len: u32,
            decls: u32,
            by_symbol: Vec<(u32, u32)>,
            resolved: Vec<Resolved>,
            request_files: Vec<Option<u32>>,
        }
        type Head = (Vec<Node>, link::Links, [u8; 32]);
        let ((nodes, links, digest), mut facts): (Head, &[u8]) =
            postcard::take_from_bytes(&bytes).map_err(|e| e.to_string())?;
        if *blake3::hash(facts).as_bytes() != digest {
            return Err("the facts do not match their digest".into());
        }
        let count = nodes.len();
        let mut files = Vec::with_capacity(count);
        for n in nodes {
            let (encoded, rest) = facts
                .split_at_checked(n.facts_len as usize)
                .ok_or("the facts are cut short")?;
            facts = rest;
            files.push(FileNode {
                abs: root.join(&n.path),
                path: n.path,
                facts: Facts {
                    decoded: OnceLock::new(),
                    encoded: Some(bytes.slice_ref(encoded)),
                    decls: n.decls,
                },
                resolved: n.resolved,
                request_files: n.request_files,
                by_symbol: n.by_symbol,
            });
        }
        let fits = facts.is_empty()
            && files.iter().all(|f| {
                f.resolved.len() == f.request_files.len()
                    && f.request_files
                        .iter()
                        .flatten()
                        .all(|&i| (i as usize) < count)
                    && f.by_symbol.iter().all(|&(_, d)| d < f.facts.decls)
            });
        if !fits || !links.fits(&files) {
            return Err("the links name files or declarations the graph does not hold".into());
        }
        let mut graph = Self {
            root: root.to_path_buf(),
            resolver: ModuleResolver::new(root),
            files,
            by_path: HashMap::new(),
            links,
        };
        graph.index_paths();
        Ok(graph)
    }

    /// Replaces, adds or (`None`) removes the facts of several files, extracted elsewhere
    /// (e.g. by a store's sync), then re-links what can see the change; returns how many
    /// files were re-linked.
    pub fn update_facts(
        &mut self,
        changes: impl IntoIterator<Item = (PathBuf, Option<FileFacts>)>,
    ) -> usize {
        self.update(changes, false)
    }

    /// [`ProjectGraph::update_facts`] after a module configuration (`package.json`,
    /// `tsconfig.json`, `Cargo.toml`, `go.mod`) was written, added or removed: any import
    /// may resolve differently, so every request resolves again, with no file-system lookup
    /// remembered, and the files whose requests now resolve elsewhere re-link with what can
    /// see them.
    pub fn update_facts_resolving_again(
        &mut self,
        changes: impl IntoIterator<Item = (PathBuf, Option<FileFacts>)>,
    ) -> usize {
        self.update(changes, true)
    }

    /// [`ProjectGraph::update_facts_resolving_again`] with no file's facts changed.
    pub fn resolve_again(&mut self) -> usize {
        self.update([], true)
    }

    /// The one update: `resolve_every_import` as a module configuration's change requires
    /// (an added or removed file requires it too).
    fn update(
        &mut self,
        changes: impl IntoIterator<Item = (PathBuf, Option<FileFacts>)>,
        resolve_every_import: bool,
    ) -> usize {
        let mut edited = Vec::new();
        let mut added = Vec::new();
        let mut removed = Vec::new();
        for (abs, facts) in changes {
            let path = relative(&self.root, &abs);
            match (self.by_path.get(&path).copied(), facts) {
                (Some(i), Some(facts)) => edited.push((i, facts)),
                (None, Some(facts)) => added.push(FileNode::new(path, abs, facts)),
                (Some(i), None) => removed.push(i),
                (None, None) => {}
            }
        }
        // Files whose outward facts (declarations, exports, requests) held, each re-linked
        // alone, and files whose did not, re-linked with everything that can see them.
        let mut inward = Vec::new();
        let mut outward = Vec::new();
        for (i, facts) in edited {
            let file = &mut self.files[i as usize];
            if file.facts().same_outward_facts(&facts) {
                inward.push(i);
            } else {
                outward.push(i);
            }
            file.set_facts(facts);
        }
        let renumbered = !(added.is_empty() && removed.is_empty());
        if renumbered {
            let (new_numbers, changed) = self.add_and_remove(added, &removed);
            inward = inward
                .iter()
                .filter_map(|&i| new_numbers[i as usize])
                .collect();
            outward = outward
                .iter()
                .filter_map(|&i| new_numbers[i as usize])
                .chain(changed)
                .collect();
        } else if resolve_every_import {
            let same: Vec<Option<u32>> = (0..self.files.len() as u32).map(Some).collect();
            outward.extend(self.resolve_all_again(&same, &same));
        } else {
            // Same files, so the same file numbers: only changed requests resolve again.
            for &i in &outward {
                self.resolve_requests(i as usize);
            }
        }
        let mut dirty = self.dependents(&outward);
        for i in inward {
            dirty[i as usize] = true;
        }
        let relinked = dirty.iter().filter(|&&d| d).count();
        // Renumbered links always re-derive their virtual dispatch.
        if relinked > 0 || renumbered {
            self.links.relink_files(&self.files, &dirty);
        }
        relinked
    }

    /// Adds and removes files, keeping them in path order as a fresh build has them, and
    /// resolves every request again: a new or vanished file can change what any specifier
    /// resolves to. Returns each old file's new number (`None`: removed) and the files whose
    /// facts the links have not seen: the new ones, those whose requests now resolve
    /// elsewhere, and the Go files of a package that lost a file.
    fn add_and_remove(
        &mut self,
        added: Vec<FileNode>,
        removed: &[u32],
    ) -> (Vec<Option<u32>>, Vec<u32>) {
        let old = std::mem::take(&mut self.files);
        let old_count = old.len();
        let mut gone = vec![false; old_count];
        for &i in removed {
            gone[i as usize] = true;
        }
        let mut lost_packages = Vec::new();
        // (old number, file): the resolution each had, to compare once all is resolved.
        let mut files: Vec<(Option<u32>, FileNode)> = Vec::with_capacity(old_count + added.len());
        for (i, file) in old.into_iter().enumerate() {
            if !gone[i] {
                files.push((Some(i as u32), file));
            } else if is_go(&file.path) {
                lost_packages.push(codectx_files::directory_of(&file.path).to_string());
            }
        }
        files.extend(added.into_iter().map(|file| (None, file)));
        files.sort_by(|a, b| a.1.path.cmp(&b.1.path));
        // A path added twice keeps its last facts (the sort is stable).
        files.dedup_by(|later, earlier| {
            let same = later.1.path == earlier.1.path;
            if same {
                std::mem::swap(later, earlier);
            }
            same
        });
        let mut renumbered = vec![None; old_count];
        for (new, (old, _)) in files.iter().enumerate() {
            if let Some(old) = old {
                renumbered[*old as usize] = Some(new as u32);
            }
        }
        let (old_numbers, nodes): (Vec<Option<u32>>, Vec<FileNode>) = files.into_iter().unzip();
        self.files = nodes;
        self.index_paths();
        self.links.renumber(&renumbered);
        let mut changed = self.resolve_all_again(&old_numbers, &renumbered);
        for (i, file) in self.files.iter().enumerate() {
            let directory = codectx_files::directory_of(&file.path);
            if is_go(&file.path) && lost_packages.iter().any(|d| d == directory) {
                changed.push(i as u32);
            }
        }
        (renumbered, changed)
    }

    /// Resolves every file's requests with the resolver's cache cleared; returns the files
    /// that are new (`old_numbers[i]` is `None`) or whose requests resolve elsewhere than
    /// before. An old request file is compared by its number now (`renumbered`).
    fn resolve_all_again(
        &mut self,
        old_numbers: &[Option<u32>],
        renumbered: &[Option<u32>],
    ) -> Vec<u32> {
        self.resolver.clear_cache();
        let all_cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let resolved_before = self.resolve_every_file(all_cores);
        let mut changed = Vec::new();
        for ((i, old), (resolved, request_files)) in
            old_numbers.iter().enumerate().zip(resolved_before)
        {
            let file = &self.files[i];
            // `Some(None)`: the request's old file was removed.
            let same = old.is_some()
                && resolved == file.resolved
                && request_files.len() == file.request_files.len()
                && request_files
                    .iter()
                    .zip(&file.request_files)
                    .all(|(was, now)| was.map(|f| renumbered[f as usize]) == now.map(Some));
            if !same {
                changed.push(i as u32);
            }
        }
        changed
    }

    /// Replaces (or adds) one file and re-links. `source = None` removes the file.
    pub fn update_file(&mut self, abs: &Path, source: Option<&str>) {
        let facts = source.map(|source| extract_facts(&relative(&self.root, abs), source));
        self.update_facts([(abs.to_path_buf(), facts)]);
    }

    fn index_paths(&mut self) {
        self.by_path = self
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i as u32))
            .collect();
    }

    /// Resolves every file's requests on `threads` threads (resolution probes the file
    /// system, and the resolver's cache is shared between them); returns what each file
    /// held before, `(resolved, request_files)`.
    fn resolve_every_file(&mut self, threads: usize) -> Vec<(Vec<Resolved>, Vec<Option<u32>>)> {
        let per_thread = self.files.len().div_ceil(threads).max(1);
        let resolver = &self.resolver;
        let resolve = |files: &[FileNode]| -> Vec<Vec<Resolved>> {
            files
                .iter()
                .map(|file| {
                    let requests = file.facts().requests.iter();
                    requests.map(|r| resolver.resolve(&file.abs, r)).collect()
                })
                .collect()
        };
        let resolved: Vec<Vec<Resolved>> = if threads <= 1 {
            resolve(&self.files)
        } else {
            std::thread::scope(|scope| {
                let resolve = &resolve;
                let workers: Vec<_> = self
                    .files
                    .chunks(per_thread)
                    .map(|files| scope.spawn(move || resolve(files)))
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|worker| {
                        worker
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            })
        };
        resolved
            .into_iter()
            .enumerate()
            .map(|(i, resolved)| {
                let request_files = self.request_files(&resolved);
                let file = &mut self.files[i];
                (
                    std::mem::replace(&mut file.resolved, resolved),
                    std::mem::replace(&mut file.request_files, request_files),
                )
            })
            .collect()
    }

    /// The file of the project each resolution names, if any.
    fn request_files(&self, resolved: &[Resolved]) -> Vec<Option<u32>> {
        resolved
            .iter()
            .map(|r| match r {
                Resolved::File(p) => self.by_path.get(&relative(&self.root, p)).copied(),
                _ => None,
            })
            .collect()
    }

    fn resolve_requests(&mut self, i: usize) {
        let file = &self.files[i];
        let resolved: Vec<Resolved> = file
            .facts()
            .requests
            .iter()
            .map(|r| self.resolver.resolve(&file.abs, r))
            .collect();
        let request_files = self.request_files(&resolved);
        let file = &mut self.files[i];
        file.resolved = resolved;
        file.request_files = request_files;
    }

    /// Marks `changed` and every file whose resolution can reach one of them: their
    /// importers, transitively (a call through an imported class's base type resolves in
    /// the base's file), and for a Go file the other files of its package.
    fn dependents(&self, changed: &[u32]) -> Vec<bool> {
        let mut importers: Vec<Vec<u32>> = vec![Vec::new(); self.files.len()];
        let mut packages: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, file) in self.files.iter().enumerate() {
            for &target in file.request_files.iter().flatten() {
                importers[target as usize].push(i as u32);
            }
            if is_go(&file.path) {
                packages
                    .entry(codectx_files::directory_of(&file.path))
                    .or_default()
                    .push(i as u32);
            }
        }
        let mut marked = vec![false; self.files.len()];
        let mut queue = changed.to_vec();
        while let Some(f) = queue.pop() {
            if std::mem::replace(&mut marked[f as usize], true) {
                continue;
            }
            queue.extend(&importers[f as usize]);
            let path = &self.files[f as usize].path;
            if is_go(path) {
                queue.extend(
                    packages
                        .get(codectx_files::directory_of(path))
                        .into_iter()
                        .flatten(),
                );
            }
        }
        marked
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn files(&self) -> &[FileNode] {
        &self.files
    }

    pub fn file_index(&self, path: &str) -> Option<u32> {
        self.by_path.get(path).copied()
    }

    /// The declaration of file `file` made from the parser's symbol `symbol`
    /// ([`facts::Decl::symbol`]): the first one, when a symbol has several.
    pub fn declaration_of(&self, file: u32, symbol: u32) -> Option<SymbolRef> {
        let by_symbol = &self.files.get(file as usize)?.by_symbol;
        let i = by_symbol.binary_search_by_key(&symbol, |&(s, _)| s).ok()?;
        Some(SymbolRef {
            file,
            decl: by_symbol[i].1,
        })
    }

    /// The type `name` of the Go package `file` belongs to: a top-level type declared in a
    /// Go file of the same directory. Go's package scope spans the directory, so a method's
    /// receiver names exactly this type, even from another file; this is the one cross-file
    /// join by name, and only Go's scope rule allows it.
    pub fn package_type(&self, file: u32, name: &str) -> Option<SymbolRef> {
        if file as usize >= self.files.len() {
            return None;
        }
        link::Linker::new(&self.files).package_decl(file, name, SymbolKind::is_type)
    }

    pub fn decl(&self, s: SymbolRef) -> &facts::Decl {
        &self.files[s.file as usize].facts().decls[s.decl as usize]
    }

    /// Every declaration of the project.
    pub fn symbols(&self) -> impl Iterator<Item = SymbolRef> + '_ {
        self.files.iter().enumerate().flat_map(|(f, file)| {
            (0..file.facts().decls.len()).map(move |d| SymbolRef {
                file: f as u32,
                decl: d as u32,
            })
        })
    }

    /// Declarations named `name` (plain or qualified `Class.member`).
    pub fn find_by_name(&self, name: &str) -> Vec<SymbolRef> {
        self.symbols()
            .filter(|&s| {
                let d = self.decl(s);
                d.name == name || d.qualified_name == name
            })
            .collect()
    }

    /// The declaration `qualified_name` of `path` (relative), optionally at `line`.
    pub fn find(&self, path: &str, qualified_name: &str, line: Option<u32>) -> Vec<SymbolRef> {
        let Some(file) = self.file_index(path) else {
            return Vec::new();
        };
        self.files[file as usize]
            .facts()
            .decls
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                d.qualified_name == qualified_name && line.is_none_or(|l| d.start_line == l)
            })
            .map(|(i, _)| SymbolRef {
                file,
                decl: i as u32,
            })
            .collect()
    }

    /// `path::Qualified.name@line`, the id the benchmark kit uses.
    pub fn symbol_id(&self, s: SymbolRef) -> String {
        let d = self.decl(s);
        format!(
            "{}::{}@{}",
            self.files[s.file as usize].path, d.qualified_name, d.start_line
        )
    }

    pub fn caller_id(&self, c: CallerRef) -> String {
        match c {
            CallerRef::Symbol(s) => self.symbol_id(s),
            CallerRef::Module(f) => format!("{}::<module>", self.files[f as usize].path),
        }
    }

    /// Direct callees of a declaration, with the line of each call, in source order.
    pub fn callees(&self, s: SymbolRef) -> &[(SymbolRef, u32)] {
        self.links.callees(CallerRef::Symbol(s))
    }

    /// Callees of a file's top-level code.
    pub fn module_callees(&self, file: u32) -> &[(SymbolRef, u32)] {
        self.links.callees(CallerRef::Module(file))
    }

    /// Direct callers of a declaration (for a class: its `new` sites), with lines.
    pub fn callers(&self, s: SymbolRef) -> &[(CallerRef, u32)] {
        self.links.callers(s)
    }

    /// Direct callers of a declaration that are declarations themselves (not a file's
    /// top-level code), in the order of [`ProjectGraph::callers`].
    pub fn declared_callers(&self, s: SymbolRef) -> impl Iterator<Item = SymbolRef> + '_ {
        self.callers(s)
            .iter()
            .filter_map(|(caller, _)| match caller {
                CallerRef::Symbol(caller) => Some(*caller),
                CallerRef::Module(_) => None,
            })
    }

    /// Callers of a constructor are the `new` sites of its class.
    pub fn callers_of_constructor_or_self(&self, s: SymbolRef) -> &[(CallerRef, u32)] {
        let d = self.decl(s);
        match (d.kind, d.container) {
            (SymbolKind::Constructor, Some(class)) => self.links.callers(SymbolRef {
                file: s.file,
                decl: class,
            }),
            _ => self.links.callers(s),
        }
    }

    /// Non-declaration references: (occurrences, other files referencing).
    pub fn references(&self, s: SymbolRef) -> (u32, Vec<u32>) {
        self.links.references(s)
    }

    /// Direct supertypes (extends + implements), resolved to declarations.
    pub fn supertypes(&self, s: SymbolRef) -> Vec<SymbolRef> {
        self.links.supertypes(s).to_vec()
    }

    /// Direct subtypes: declarations whose heritage resolves to `s`.
    pub fn subtypes(&self, s: SymbolRef) -> Vec<SymbolRef> {
        self.links.subtypes(s).to_vec()
    }

    /// How many imports of the project's files resolve to `file`.
    pub fn importer_count(&self, file: u32) -> usize {
        self.files
            .iter()
            .flat_map(|f| &f.request_files)
            .filter(|t| **t == Some(file))
            .count()
    }

    /// Imports and imported-by of one file, each edge with its names and line.
    pub fn file_relationships(&self, file: u32) -> FileRelationships {
        link::file_relationships(&self.files, file)
    }

    /// The blueprint's SymbolMetadata for one declaration.
    pub fn metadata(&self, s: SymbolRef, options: &MetadataOptions) -> SymbolMetadata {
        metadata::build(self, s, options)
    }

    /// Seed 002's related symbols: same file, then same directory, then import-connected.
    pub fn related(&self, s: SymbolRef, limit: usize) -> Vec<RelatedSymbol> {
        metadata::related(self, s, limit)
    }

    pub fn info(&self, s: SymbolRef) -> SymbolInfo {
        metadata::info(self, s)
    }
}

/// Whether `path` is a Go file: its directory is its package (Go's package scope).
pub(crate) fn is_go(path: &str) -> bool {
    codectx_parser::Language::from_path(path) == Some(codectx_parser::Language::Go)
}

/// Whether `path` is read by oxc (TS/JS).
pub(crate) fn is_oxc_file(path: &str) -> bool {
    codectx_parser::Language::from_path(path).is_none_or(|l| l.is_oxc())
}

/// Whether the Rust file `path` is the module `name`: `…/name.rs` or `…/name/mod.rs`.
pub(crate) fn is_rust_module(path: &str, name: &str) -> bool {
    let Some(stem) = path.strip_suffix(".rs") else {
        return false;
    };
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    stem.rsplit('/').next() == Some(name)
}
