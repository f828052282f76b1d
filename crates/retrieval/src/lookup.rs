//! Blueprint Phase 6, symbol lookup: `symbol = [file >] [Parent > …] name`, exact names only,
//! no vectors and no reranking.

use codectx_chunker::CodeChunk;
use codectx_parser::SymbolKind;

use crate::RetrievalError;
use crate::project::Project;

/// The prefix that makes a query a lookup.
pub const LOOKUP_PREFIX: &str = "symbol = ";

/// A parsed `symbol = …` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolQuery {
    /// Relative path the lookup is scoped to.
    pub file: Option<String>,
    /// Enclosing symbols, outermost first; they must be the match's nearest ancestors.
    pub parents: Vec<String>,
    pub name: String,
}

impl SymbolQuery {
    /// `None` when `query` is not a lookup (no `symbol = ` prefix); an error when it is one
    /// but names nothing or a path outside the project root.
    pub fn parse(query: &str) -> Option<Result<SymbolQuery, RetrievalError>> {
        let rest = query.trim_start().strip_prefix("symbol")?;
        let rest = rest.trim_start().strip_prefix('=')?.trim();
        let mut parts: Vec<String> = rest
            .split('>')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect();
        let Some(name) = parts.pop() else {
            return Some(Err(RetrievalError::EmptyLookup(query.to_string())));
        };
        let file = match parts.first() {
            Some(first) if looks_like_path(first) => Some(parts.remove(0)),
            _ => None,
        };
        let file = match file.map(|f| normalize(&f)).transpose() {
            Ok(file) => file,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(SymbolQuery {
            file,
            parents: parts,
            name,
        }))
    }

    /// The query with a dotted name read as its parents: `Application.listen` as
    /// `Application > listen`, the qualified name answers print. `None` without a dot.
    /// (A name may hold dots itself: `app.listen = function …` declares `app.listen`, so the
    /// name as written is looked up first.)
    fn dotted(&self) -> Option<SymbolQuery> {
        let mut parts: Vec<String> = self
            .name
            .split('.')
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        if parts.len() < 2 {
            return None;
        }
        let name = parts.pop()?;
        let mut parents = self.parents.clone();
        parents.extend(parts);
        Some(SymbolQuery {
            file: self.file.clone(),
            parents,
            name,
        })
    }

    /// Whether `chunk` is what this query names.
    pub fn matches(&self, chunk: &CodeChunk) -> bool {
        if chunk.name != self.name {
            return false;
        }
        if self
            .file
            .as_deref()
            .is_some_and(|f| f != chunk.relative_path)
        {
            return false;
        }
        // breadcrumb = "path > A > B > name": the parents must be the nearest ancestors.
        let crumbs = chunk.qualified_parts();
        let ancestors = &crumbs[..crumbs.len().saturating_sub(1)];
        ancestors.len() >= self.parents.len()
            && ancestors[ancestors.len() - self.parents.len()..]
                .iter()
                .zip(&self.parents)
                .all(|(a, p)| a == p)
    }
}

/// Lookup result: the matching chunks, or, when there are none, the closest names.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup<'p> {
    pub matches: Vec<&'p CodeChunk>,
    /// Up to five names of the scope most similar to the query's name (only when nothing
    /// matched).
    pub closest: Vec<String>,
}

/// Finds every chunk `query` names (a dotted name, when nothing is called so, as its
/// parents and name), what an agent most likely means first (see
/// `match_order`), with a function's overload signatures merged into one match.
pub fn lookup<'p>(project: &'p Project, query: &SymbolQuery) -> Lookup<'p> {
    let named = |query: &SymbolQuery| -> Vec<&'p CodeChunk> {
        project.chunks().filter(|c| query.matches(c)).collect()
    };
    let mut matches = named(query);
    if matches.is_empty()
        && let Some(dotted) = query.dotted()
    {
        matches = named(&dotted);
    }
    matches.sort_by_cached_key(|c| match_order(project, c));
    let matches = merge_overloads(matches);
    let closest = if matches.is_empty() {
        closest_names(project, query)
    } else {
        Vec::new()
    };
    Lookup { matches, closest }
}

/// The sort key of a lookup's matches, what an agent most likely means first: source before
/// tests; declarations, members and variables before properties of object literals and
/// the rest; exported before local; then functions, classes and types before members,
/// members before variables; shallower before nested; then path and line, so that equal
/// keys sort the same way on every machine.
fn match_order(project: &Project, chunk: &CodeChunk) -> (bool, bool, bool, u8, u32, String, u32) {
    let parent_kind = chunk
        .parent_chunk_id
        .as_deref()
        .and_then(|id| project.chunk(&chunk.relative_path, id))
        .map(|p| p.node_kind);
    // A member of an object literal (`const api = { ref() {…} }`) is a property, whatever
    // its value.
    let in_object_literal = matches!(
        parent_kind,
        Some(SymbolKind::Const | SymbolKind::Variable | SymbolKind::Export)
    );
    let kind = match chunk.node_kind {
        _ if in_object_literal => 3,
        SymbolKind::Function
        | SymbolKind::Class
        | SymbolKind::Interface
        | SymbolKind::Type
        | SymbolKind::Enum
        | SymbolKind::Component
        | SymbolKind::Namespace
        | SymbolKind::Module
        | SymbolKind::Struct
        | SymbolKind::Trait
        | SymbolKind::Impl
        | SymbolKind::Macro => 0,
        SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Getter | SymbolKind::Setter => 1,
        SymbolKind::Const | SymbolKind::Variable => 2,
        _ => 3,
    };
    (
        crate::scoring::is_test_file(&chunk.relative_path),
        kind == 3,
        !project.is_exported(chunk),
        kind,
        chunk.depth,
        chunk.relative_path.clone(),
        chunk.start_line,
    )
}

/// TypeScript overloads are one declaration per signature; an agent asking for `ref` wants
/// one result. Matches of one file with the same breadcrumb and a function or method kind
/// become the last of them in the file — the implementation, which TypeScript requires to
/// follow its overload signatures — at the place of the first. Only in languages with
/// overloads: Rust's `fmt` of a `Display` and of a `Debug` impl are two methods.
fn merge_overloads(matches: Vec<&CodeChunk>) -> Vec<&CodeChunk> {
    let mut merged: Vec<&CodeChunk> = Vec::with_capacity(matches.len());
    for chunk in matches {
        let overload = matches!(chunk.node_kind, SymbolKind::Function | SymbolKind::Method)
            && codectx_parser::Language::from_path(&chunk.relative_path)
                .is_some_and(codectx_parser::Language::has_overloads);
        let same = merged.iter_mut().find(|kept| {
            overload
                && kept.node_kind == chunk.node_kind
                && kept.relative_path == chunk.relative_path
                && kept.breadcrumb == chunk.breadcrumb
        });
        match same {
            Some(kept) => {
                if chunk.start_line > kept.start_line {
                    *kept = chunk;
                }
            }
            None => merged.push(chunk),
        }
    }
    merged
}

fn closest_names(project: &Project, query: &SymbolQuery) -> Vec<String> {
    // The name as written, and its last part when it is dotted (`Application.lissten`).
    let wanted: Vec<String> = std::iter::once(query.name.to_lowercase())
        .chain(query.dotted().map(|d| d.name.to_lowercase()))
        .collect();
    let mut names: Vec<(f64, &str)> = project
        .chunks()
        .filter(|c| query.file.as_deref().is_none_or(|f| f == c.relative_path))
        .filter(|c| !matches!(c.node_kind, SymbolKind::Import | SymbolKind::Comment))
        .map(|c| {
            let name = c.name.to_lowercase();
            let score = wanted
                .iter()
                .map(|w| strsim::jaro_winkler(&name, w))
                .fold(0.0, f64::max);
            (score, c.name.as_str())
        })
        .filter(|(score, _)| *score >= 0.75)
        .collect();
    names.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    names.dedup_by(|a, b| a.1 == b.1);
    names
        .into_iter()
        .take(5)
        .map(|(_, n)| n.to_string())
        .collect()
}

fn looks_like_path(part: &str) -> bool {
    part.contains('/') || codectx_parser::Language::from_path(part).is_some()
}

/// `./src//a.ts` → `src/a.ts`; a path that leaves the root (`..`, absolute) is an error.
pub(crate) fn normalize(path: &str) -> Result<String, RetrievalError> {
    let outside = || RetrievalError::OutsideRoot(path.to_string());
    if path.starts_with('/') || path.starts_with('\\') || path.get(1..2) == Some(":") {
        return Err(outside());
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or_else(outside)?;
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Option<Result<SymbolQuery, RetrievalError>> {
        SymbolQuery::parse(s)
    }

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(
            q("symbol = validateToken").unwrap().unwrap(),
            SymbolQuery {
                file: None,
                parents: vec![],
                name: "validateToken".into()
            }
        );
        assert_eq!(
            q("symbol = TokenService > validateToken").unwrap().unwrap(),
            SymbolQuery {
                file: None,
                parents: vec!["TokenService".into()],
                name: "validateToken".into()
            }
        );
        assert_eq!(
            q("symbol = ./src/auth/tokenService.ts > TokenService > validateToken")
                .unwrap()
                .unwrap(),
            SymbolQuery {
                file: Some("src/auth/tokenService.ts".into()),
                parents: vec!["TokenService".into()],
                name: "validateToken".into()
            }
        );
    }

    #[test]
    fn not_a_lookup_without_the_prefix() {
        assert!(q("validate the token").is_none());
        assert!(q("TokenService > validateToken").is_none());
    }

    #[test]
    fn paths_outside_the_root_are_refused() {
        for bad in [
            "symbol = ../secret.ts > x",
            "symbol = /etc/passwd.ts > x",
            "symbol = a/../../b.ts > x",
        ] {
            assert!(
                matches!(q(bad), Some(Err(RetrievalError::OutsideRoot(_)))),
                "{bad}"
            );
        }
        assert!(matches!(
            q("symbol = "),
            Some(Err(RetrievalError::EmptyLookup(_)))
        ));
    }
}
