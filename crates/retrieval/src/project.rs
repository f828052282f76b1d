//! A project held in memory: every source file parsed and chunked, and the structural graph.

use std::path::{Path, PathBuf};

use codectx_chunker::CodeChunk;
use codectx_graph::{LoadOptions, ProjectGraph, SymbolRef};
use codectx_parser::ParsedFile;

use crate::RetrievalError;

/// One source file with its parse and its chunks.
#[derive(Debug)]
pub struct ProjectFile {
    pub relative_path: String,
    pub source: String,
    pub parsed: ParsedFile,
    pub chunks: Vec<CodeChunk>,
}

/// Every source file of a project, chunked, with its [`ProjectGraph`].
pub struct Project {
    root: PathBuf,
    files: Vec<ProjectFile>,
    graph: ProjectGraph,
    /// Files left out, with the reason (binary, not UTF-8, unreadable).
    skipped: Vec<String>,
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

impl Project {
    /// Reads, parses and chunks every source file under `root` (gitignore-aware, the same
    /// selection as the graph) and links the graph. Unreadable files are listed in
    /// [`Project::skipped`], never fatal.
    pub fn open(root: &Path) -> Result<Self, RetrievalError> {
        let root = root
            .canonicalize()
            .ok()
            .filter(|r| r.is_dir())
            .ok_or_else(|| RetrievalError::NotADirectory(root.to_path_buf()))?;
        let mut sources = Vec::new();
        let mut skipped = Vec::new();
        for path in codectx_graph::source_files(&root, &LoadOptions::default()) {
            match codectx_parser::read_source(&path) {
                Ok(source) => sources.push((path, source)),
                Err(e) => skipped.push(e.to_string()),
            }
        }
        Ok(Self::from_sources(&root, sources, skipped))
    }

    fn from_sources(root: &Path, sources: Vec<(PathBuf, String)>, skipped: Vec<String>) -> Self {
        let graph = ProjectGraph::from_sources(
            root,
            sources
                .iter()
                .map(|(abs, source)| (abs.clone(), source.as_str())),
        );
        let files = sources
            .into_iter()
            .map(|(abs, source)| {
                let relative_path = abs
                    .strip_prefix(root)
                    .unwrap_or(&abs)
                    .to_string_lossy()
                    .replace('\\', "/");
                let parsed = codectx_parser::parse_source(&relative_path, &source);
                let chunks = codectx_chunker::chunk_file(&parsed, &source, &relative_path);
                ProjectFile {
                    relative_path,
                    source,
                    parsed,
                    chunks,
                }
            })
            .collect();
        Self {
            root: root.to_path_buf(),
            files,
            graph,
            skipped,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn files(&self) -> &[ProjectFile] {
        &self.files
    }

    pub fn file(&self, relative_path: &str) -> Option<&ProjectFile> {
        self.files.iter().find(|f| f.relative_path == relative_path)
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

    /// The graph declaration a chunk is the source of: same file and name, declared on the
    /// chunk's lines (a chunk's lines include its JSDoc, a declaration's do not).
    pub fn graph_symbol(&self, chunk: &CodeChunk) -> Option<SymbolRef> {
        let file = self.graph.file_index(&chunk.relative_path)?;
        let decls = &self.graph.files()[file as usize].facts.decls;
        let decl = decls.iter().position(|d| {
            d.name == chunk.name
                && (chunk.start_line..=chunk.end_line).contains(&d.start_line)
                && d.end_line <= chunk.end_line
        })?;
        Some(SymbolRef {
            file,
            decl: decl as u32,
        })
    }
}
