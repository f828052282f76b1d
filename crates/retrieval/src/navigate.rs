//! The navigation tools of seeds 002 and 004 over a [`Project`]: symbol hierarchy, related
//! symbols, file relationships and file skeletons. Each names its symbol or file the way a
//! lookup does and fails with a [`NavigationError`] whose [`ErrorCode`] a client can branch
//! on.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use codectx_chunker::CodeChunk;
use codectx_graph::{FileRelationships, RelatedSymbol, Relation};
use codectx_parser::SymbolKind;
use codectx_snapshot::{FileSkeleton, SkeletonCache};
use serde::{Deserialize, Serialize};

use crate::lookup::{SymbolQuery, lookup, normalize};
use crate::project::Project;

/// Nodes a descendants listing holds at most (a 6,000-line class has a few hundred).
pub const MAX_HIERARCHY_NODES: usize = 2_000;

/// What went wrong, for a client to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    SymbolNotFound,
    /// The name matches several symbols where one is needed.
    AmbiguousSymbol,
    FileNotFound,
    /// A path that leaves the project root.
    PathOutsideRoot,
    InvalidArgument,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SymbolNotFound => "symbol_not_found",
            ErrorCode::AmbiguousSymbol => "ambiguous_symbol",
            ErrorCode::FileNotFound => "file_not_found",
            ErrorCode::PathOutsideRoot => "path_outside_root",
            ErrorCode::InvalidArgument => "invalid_argument",
        }
    }
}

/// A navigation request that cannot be answered, with a sentence a person understands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct NavigationError {
    pub code: ErrorCode,
    pub message: String,
}

impl NavigationError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// `ancestors`: from the symbol up to its outermost container; `descendants`: the symbol
/// and everything declared inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Ancestors,
    Descendants,
}

/// One symbol of a hierarchy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HierarchyNode {
    pub name: String,
    pub kind: SymbolKind,
    pub breadcrumb: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Levels below the requested symbol (descendants; 0 is the symbol itself) or above it
    /// (ancestors).
    pub depth: u32,
}

/// seed 002's SymbolHierarchy for one matching symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SymbolHierarchy {
    /// The file the chain lives in: the root every chain ends at.
    pub file: String,
    pub direction: Direction,
    /// Ancestors: leaf to root, starting with the symbol. Descendants: the symbol, then its
    /// members in source order, depth-first.
    pub chain: Vec<HierarchyNode>,
    /// The listing stopped at [`MAX_HIERARCHY_NODES`].
    pub truncated: bool,
}

/// Which symbols count as related.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RelatedScope {
    /// Top-level symbols of the same file.
    File,
    /// Same file, then the same directory, then files it imports or is imported by.
    #[default]
    Module,
}

/// seed 002's `find_related_symbols` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedSymbols {
    pub file: String,
    pub symbol: HierarchyNode,
    pub scope_used: RelatedScope,
    pub related: Vec<RelatedSymbol>,
}

/// The chunks `symbol` names (`validateToken`, `TokenService > validateToken`,
/// `TokenService.validateToken`), scoped to `path` when given.
pub fn resolve_symbol<'p>(
    project: &'p Project,
    symbol: &str,
    path: Option<&str>,
) -> Result<Vec<&'p CodeChunk>, NavigationError> {
    // `Class.method`, the graph's qualified name, is read by `lookup` as `Class > method`
    // when no symbol is called so.
    let mut parts: Vec<String> = symbol
        .split('>')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    if parts.is_empty() {
        return Err(NavigationError::new(
            ErrorCode::InvalidArgument,
            "symbol_name is empty: give a name such as `validateToken` or `TokenService > validateToken`",
        ));
    }
    if let Some(path) = path {
        parts.insert(0, relative_path(project, path)?);
    }
    let text = format!("{}{}", crate::LOOKUP_PREFIX, parts.join(" > "));
    let query = match SymbolQuery::parse(&text) {
        Some(Ok(query)) => query,
        Some(Err(crate::RetrievalError::OutsideRoot(p))) => {
            return Err(NavigationError::new(
                ErrorCode::PathOutsideRoot,
                format!("{p:?} is outside the project root"),
            ));
        }
        _ => {
            return Err(NavigationError::new(
                ErrorCode::InvalidArgument,
                format!("{symbol:?} names no symbol"),
            ));
        }
    };
    if let Some(file) = &query.file
        && project.file(file).is_none()
    {
        return Err(NavigationError::new(
            ErrorCode::FileNotFound,
            format!("{file} is not an indexed file"),
        ));
    }
    let found = lookup(project, &query);
    if found.matches.is_empty() {
        let scope = query
            .file
            .as_deref()
            .map_or(String::new(), |f| format!(" in {f}"));
        let hint = if found.closest.is_empty() {
            String::new()
        } else {
            format!(" Closest names: {}.", found.closest.join(", "))
        };
        return Err(NavigationError::new(
            ErrorCode::SymbolNotFound,
            format!("No symbol named {symbol:?}{scope}.{hint}"),
        ));
    }
    Ok(found.matches)
}

/// seed 002's `get_symbol_hierarchy`: one hierarchy per symbol `symbol` names.
pub fn symbol_hierarchy(
    project: &Project,
    symbol: &str,
    path: Option<&str>,
    direction: Direction,
) -> Result<Vec<SymbolHierarchy>, NavigationError> {
    let matches = resolve_symbol(project, symbol, path)?;
    Ok(matches
        .into_iter()
        .map(|chunk| match direction {
            Direction::Ancestors => ancestors(project, chunk),
            Direction::Descendants => descendants(project, chunk),
        })
        .collect())
}

fn node(chunk: &CodeChunk, depth: u32) -> HierarchyNode {
    HierarchyNode {
        name: chunk.name.clone(),
        kind: chunk.node_kind,
        breadcrumb: chunk.breadcrumb.clone(),
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        depth,
    }
}

fn ancestors(project: &Project, chunk: &CodeChunk) -> SymbolHierarchy {
    let mut chain = vec![node(chunk, 0)];
    // Parent ids come from the index: a visited set keeps a damaged one from looping.
    let mut seen = HashSet::from([chunk.id.as_str()]);
    let mut current = chunk;
    while let Some(parent) = current
        .parent_chunk_id
        .as_deref()
        .and_then(|id| project.chunk(&current.relative_path, id))
        .or_else(|| declared_container(project, current))
        .filter(|parent| seen.insert(parent.id.as_str()))
    {
        // Control flow holding a declaration (`if (…) { function f() {} }`) is no ancestor
        // of it: the chain is declarations only.
        if !parent.node_kind.is_root_item() {
            chain.push(node(parent, chain.len() as u32));
        }
        current = parent;
    }
    SymbolHierarchy {
        file: chunk.relative_path.clone(),
        direction: Direction::Ancestors,
        chain,
        truncated: false,
    }
}

/// The chunk of the type a declaration belongs to outside its lines: a Go method's
/// receiver type, in its file (the graph's container) or in another file of its package.
/// (Elsewhere a container encloses its members, and the parent chunk is it.)
fn declared_container<'p>(project: &'p Project, chunk: &CodeChunk) -> Option<&'p CodeChunk> {
    let graph = project.graph();
    let declaration = project.declaration(chunk)?;
    let decl = graph.decl(declaration);
    let owner = match decl.container {
        Some(container) => codectx_graph::SymbolRef {
            file: declaration.file,
            decl: container,
        },
        None if decl.kind.is_callable() => {
            let (receiver, _) = decl.qualified_name.rsplit_once('.')?;
            graph.package_type(declaration.file, receiver)?
        }
        None => return None,
    };
    project.chunk_of(owner)
}

fn descendants(project: &Project, chunk: &CodeChunk) -> SymbolHierarchy {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(chunk, 0u32)];
    let mut truncated = false;
    while let Some((current, depth)) = stack.pop() {
        if !seen.insert(current.id.as_str()) {
            continue;
        }
        if chain.len() == MAX_HIERARCHY_NODES {
            truncated = true;
            break;
        }
        chain.push(node(current, depth));
        let mut children: Vec<&CodeChunk> = current
            .child_chunk_ids
            .iter()
            .filter_map(|id| project.chunk(&chunk.relative_path, id))
            .collect();
        children.sort_by_key(|c| std::cmp::Reverse(c.start_line));
        stack.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    SymbolHierarchy {
        file: chunk.relative_path.clone(),
        direction: Direction::Descendants,
        chain,
        truncated,
    }
}

/// seed 002's `find_related_symbols`: symbols around the one `symbol` names, same file
/// first, then (scope `module`) same directory, then import-connected files; at most
/// `limit`.
pub fn related_symbols(
    project: &Project,
    symbol: &str,
    path: Option<&str>,
    scope: RelatedScope,
    limit: usize,
) -> Result<RelatedSymbols, NavigationError> {
    let matches = resolve_symbol(project, symbol, path)?;
    let chunk = match matches.as_slice() {
        [one] => *one,
        many => {
            let names: Vec<&str> = many.iter().take(8).map(|c| c.breadcrumb.as_str()).collect();
            return Err(NavigationError::new(
                ErrorCode::AmbiguousSymbol,
                format!(
                    "{symbol:?} names {} symbols; give a path or a parent: {}",
                    many.len(),
                    names.join("; ")
                ),
            ));
        }
    };
    let related = match project.declaration(chunk) {
        Some(s) => {
            // Ask for everything in scope, then cut: `graph.related` fills by priority.
            let all = project.graph().related(s, usize::MAX);
            all.into_iter()
                .filter(|r| scope == RelatedScope::Module || r.relation == Relation::SameFile)
                .take(limit)
                .collect()
        }
        // Not a declaration (an anonymous callback, a statement group): its file's symbols.
        None => Vec::new(),
    };
    Ok(RelatedSymbols {
        file: chunk.relative_path.clone(),
        symbol: node(chunk, 0),
        scope_used: scope,
        related,
    })
}

/// seed 004's `analyze_relationship` for one file: what it imports (resolved file, package
/// or unresolved specifier, with the names and line) and which files import it.
pub fn file_relationships(
    project: &Project,
    path: &str,
) -> Result<FileRelationships, NavigationError> {
    let path = indexed_file(project, path)?;
    let graph = project.graph();
    let file = graph.file_index(&path).ok_or_else(|| {
        NavigationError::new(
            ErrorCode::FileNotFound,
            format!("{path} has no structural facts (it was skipped when indexing)"),
        )
    })?;
    Ok(graph.file_relationships(file))
}

/// seed 004's skeleton view of a file, from `cache` when the file has not changed.
pub fn file_skeleton(
    project: &Project,
    cache: &SkeletonCache,
    path: &str,
) -> Result<Arc<FileSkeleton>, NavigationError> {
    let path = indexed_file(project, path)?;
    let file = project.file(&path);
    let source = file.and_then(|f| f.source()).ok_or_else(|| {
        NavigationError::new(
            ErrorCode::FileNotFound,
            format!("{path} can no longer be read"),
        )
    })?;
    // The project's own parse of the file: a skeleton never parses it a second time.
    Ok(cache.get_parsed(&path, source, file.and_then(|f| f.parsed())))
}

/// `path` (relative, `./`-prefixed, or absolute inside the root) as an indexed file's
/// relative path.
fn indexed_file(project: &Project, path: &str) -> Result<String, NavigationError> {
    let path = relative_path(project, path)?;
    if project.file(&path).is_none() {
        return Err(NavigationError::new(
            ErrorCode::FileNotFound,
            format!(
                "{path} is not an indexed source file (TypeScript, JavaScript, Rust, Python or Go)"
            ),
        ));
    }
    Ok(path)
}

fn relative_path(project: &Project, path: &str) -> Result<String, NavigationError> {
    let outside = || {
        NavigationError::new(
            ErrorCode::PathOutsideRoot,
            format!("{path:?} is outside the project root"),
        )
    };
    let as_path = Path::new(path);
    let relative = if as_path.is_absolute() {
        as_path
            .strip_prefix(project.root())
            .map_err(|_| outside())?
            .to_string_lossy()
            .replace('\\', "/")
    } else {
        path.to_string()
    };
    normalize(&relative).map_err(|_| outside())
}
