//! File skeletons (seed 004's `read_code` skeleton view): the whole file with every function
//! and method body collapsed to `{ … }`, cached by content hash.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use codectx_chunker::{kept_children, stub_end};
use codectx_parser::{LineRange, ParsedFile, ParsedSymbol, SymbolKind};

/// One file's skeleton.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSkeleton {
    pub relative_path: String,
    /// blake3 of the source the skeleton was built from (hex).
    pub content_hash: String,
    /// The file's text with every function-like body replaced by `{ … }` (an expression body
    /// of an arrow by `…`).
    pub text: String,
    pub line_count: u32,
}

/// Builds the skeleton of a parsed file: declarations that contain declarations (classes,
/// interfaces, namespaces, object literals, calls taking callbacks) keep their structure;
/// every function-like body is collapsed. Unlike `embedding_text`'s `signature;` stubs, the
/// `{ … }` marks that a body exists and keeps object literals and call arguments readable.
pub fn file_skeleton(parsed: &ParsedFile, source: &str) -> FileSkeleton {
    let mut collapsed = Vec::new();
    for root in &parsed.symbols {
        collect_collapsed(source, root, &mut collapsed);
    }
    collapsed.sort_unstable();
    let text = collapse_bodies(source, 0, &collapsed);
    FileSkeleton {
        relative_path: parsed.path.clone(),
        content_hash: blake3::hash(source.as_bytes()).to_hex().to_string(),
        text,
        line_count: parsed.line_count,
    }
}

/// One symbol's lines (`range`, as in a `CodeChunk`) with every function-like body inside
/// collapsed to `{ … }`: a function's head, a class with its members' heads. `None` when no
/// symbol spans exactly `range`.
pub fn symbol_skeleton(parsed: &ParsedFile, source: &str, range: LineRange) -> Option<String> {
    let path = crate::snapshot::path_to_range(&parsed.symbols, range)?;
    let sym = path.last()?;
    let lines = parsed.line_index(source);
    let start = lines.line_start(range.start);
    let end = lines.line_end(range.end, source);
    let mut collapsed = Vec::new();
    collect_collapsed(source, sym, &mut collapsed);
    collapsed.sort_unstable();
    Some(collapse_bodies(&source[..end as usize], start, &collapsed))
}

/// `source[start..]` with each collapsed range replaced by `{ … }` (an expression body by `…`).
fn collapse_bodies(source: &str, start: u32, collapsed: &[(u32, u32)]) -> String {
    let mut text = String::with_capacity(source.len() - start as usize);
    let mut at = start;
    for &(s, e) in collapsed {
        if s < at || e as usize > source.len() {
            continue;
        }
        text.push_str(&source[at as usize..s as usize]);
        let body = source[s as usize..e as usize].trim_start();
        text.push_str(if body.starts_with('{') {
            " { … }"
        } else {
            " …"
        });
        at = e;
    }
    text.push_str(&source[at as usize..]);
    text
}

fn is_container(sym: &ParsedSymbol) -> bool {
    matches!(
        sym.kind,
        SymbolKind::Class
            | SymbolKind::Interface
            | SymbolKind::Namespace
            | SymbolKind::Module
            | SymbolKind::Trait
            | SymbolKind::Impl
    ) || sym.body.is_none()
}

fn collect_collapsed(source: &str, sym: &ParsedSymbol, out: &mut Vec<(u32, u32)>) {
    if is_container(sym) {
        for child in kept_children(sym) {
            collect_collapsed(source, child, out);
        }
    } else if let Some(stub) = stub_end(source, sym) {
        out.push((
            stub,
            sym.span.end.min(sym.body.map_or(sym.span.end, |b| b.end)),
        ));
    }
}

/// Counters of a [`SkeletonCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    /// Lookups that had to build the skeleton (parsing the file, unless its parse was given).
    pub parses: u64,
}

/// Skeletons keyed by (path, content hash): asking again for an unchanged file hashes it
/// and returns the cached skeleton without parsing. Least recently inserted entries are
/// evicted beyond the capacity.
#[derive(Debug)]
pub struct SkeletonCache {
    capacity: usize,
    entries: Mutex<Entries>,
    hits: AtomicU64,
    parses: AtomicU64,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<(String, [u8; 32]), Arc<FileSkeleton>>,
    order: VecDeque<(String, [u8; 32])>,
}

impl Default for SkeletonCache {
    fn default() -> Self {
        Self::new(512)
    }
}

impl SkeletonCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: Mutex::default(),
            hits: AtomicU64::new(0),
            parses: AtomicU64::new(0),
        }
    }

    /// The skeleton of `source` (the current text of `relative_path`), parsing it on a miss.
    pub fn get(&self, relative_path: &str, source: &str) -> Arc<FileSkeleton> {
        self.get_parsed(relative_path, source, None)
    }

    /// [`SkeletonCache::get`] for a caller that holds the file's parse already (a project
    /// does): a miss builds the skeleton from it instead of parsing `source` again.
    pub fn get_parsed(
        &self,
        relative_path: &str,
        source: &str,
        parsed: Option<&codectx_parser::ParsedFile>,
    ) -> Arc<FileSkeleton> {
        let key = (
            relative_path.to_string(),
            *blake3::hash(source.as_bytes()).as_bytes(),
        );
        if let Some(hit) = self.lock().map.get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Arc::clone(hit);
        }
        self.parses.fetch_add(1, Ordering::Relaxed);
        let skeleton = Arc::new(match parsed {
            Some(parsed) => file_skeleton(parsed, source),
            None => file_skeleton(&codectx_parser::parse_source(relative_path, source), source),
        });
        let mut entries = self.lock();
        if entries
            .map
            .insert(key.clone(), Arc::clone(&skeleton))
            .is_none()
        {
            entries.order.push_back(key);
        }
        while entries.order.len() > self.capacity {
            if let Some(old) = entries.order.pop_front() {
                entries.map.remove(&old);
            }
        }
        skeleton
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            parses: self.parses.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic elsewhere while holding the lock leaves a usable map: recover it.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}
