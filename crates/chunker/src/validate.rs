//! The blueprint's ten global validation rules, checked on any file.
//!
//! Each violation names its rule and the line at fault, so a failure on a 200,000-line
//! corpus file is actionable without a debugger.

use std::collections::{HashMap, HashSet};
use std::fmt;

use codectx_parser::{LineIndex, ParseStatus, ParsedFile, SymbolKind, parse_source};

use crate::{CodeChunk, chunk_file_with_symbols, estimate_tokens, kept_children, stub_end};

pub use crate::MAX_CHUNK_TOKENS;

/// One of the blueprint's ten global rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    FullCoverage = 1,
    NoOverlap = 2,
    SourceFidelity = 3,
    HierarchyConsistency = 4,
    TokenLimit = 5,
    CollapsedChildren = 6,
    BreadcrumbAccuracy = 7,
    DeterministicIds = 8,
    RootLevelIsolation = 9,
    RelevantImports = 10,
}

impl Rule {
    pub const ALL: [Rule; 10] = [
        Rule::FullCoverage,
        Rule::NoOverlap,
        Rule::SourceFidelity,
        Rule::HierarchyConsistency,
        Rule::TokenLimit,
        Rule::CollapsedChildren,
        Rule::BreadcrumbAccuracy,
        Rule::DeterministicIds,
        Rule::RootLevelIsolation,
        Rule::RelevantImports,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Rule::FullCoverage => "full coverage",
            Rule::NoOverlap => "no overlap",
            Rule::SourceFidelity => "source fidelity",
            Rule::HierarchyConsistency => "hierarchy consistency",
            Rule::TokenLimit => "token limit",
            Rule::CollapsedChildren => "collapsed children",
            Rule::BreadcrumbAccuracy => "breadcrumb accuracy",
            Rule::DeterministicIds => "deterministic ids",
            Rule::RootLevelIsolation => "root-level isolation",
            Rule::RelevantImports => "relevantImports tracking",
        }
    }
}

/// A broken rule, with the file line at fault when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    pub line: Option<u32>,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {} ({})", self.rule as u8, self.rule.title())?;
        if let Some(line) = self.line {
            write!(f, " at line {line}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Everything the dashboard needs about one file.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub path: String,
    pub parsed: ParsedFile,
    pub chunks: Vec<CodeChunk>,
    pub violations: Vec<Violation>,
}

impl FileReport {
    pub fn symbol_count(&self) -> usize {
        self.parsed.walk().count()
    }
    pub fn root_item_count(&self) -> usize {
        self.parsed.symbols.len()
    }
    pub fn max_depth(&self) -> u32 {
        self.chunks.iter().map(|c| c.depth).max().unwrap_or(0)
    }
    /// The chunk with the largest embedding text: (tokens, breadcrumb).
    pub fn largest_chunk(&self) -> Option<(usize, &str)> {
        self.chunks
            .iter()
            .map(|c| (estimate_tokens(&c.embedding_text), c.breadcrumb.as_str()))
            .max_by_key(|(t, _)| *t)
    }
}

/// Parses and chunks `source` twice and checks all ten rules.
pub fn check_file(path: &str, source: &str) -> FileReport {
    let parsed = parse_source(path, source);
    let pairs = chunk_file_with_symbols(&parsed, source, path);
    let lines = LineIndex::new(source);
    let mut v = Vec::new();
    let chunks: Vec<CodeChunk> = pairs.iter().map(|(c, _)| c.clone()).collect();

    full_coverage(&chunks, source, &lines, &mut v);
    no_overlap(&chunks, &mut v);
    source_fidelity(&chunks, source, &lines, &mut v);
    hierarchy(&chunks, &mut v);
    token_limit(&chunks, &mut v);
    collapsed_children(&pairs, source, &mut v);
    breadcrumbs(&chunks, &parsed.path, &mut v);
    deterministic_ids(&chunks, path, source, &mut v);
    if parsed.status == ParseStatus::Clean {
        root_isolation(&chunks, path, source, &lines, &mut v);
    }
    relevant_imports(&chunks, &parsed, source, &mut v);

    FileReport {
        path: path.to_string(),
        parsed,
        chunks,
        violations: v,
    }
}

fn violation(v: &mut Vec<Violation>, rule: Rule, line: Option<u32>, message: String) {
    v.push(Violation {
        rule,
        line,
        message,
    });
}

/// Rule 1: every non-blank line lies in some root chunk.
fn full_coverage(chunks: &[CodeChunk], source: &str, lines: &LineIndex, v: &mut Vec<Violation>) {
    let mut roots: Vec<(u32, u32)> = chunks
        .iter()
        .filter(|c| c.depth == 0)
        .map(|c| (c.start_line, c.end_line))
        .collect();
    roots.sort_unstable();
    let mut next = 0;
    for line in 1..=lines.line_count() {
        while next < roots.len() && roots[next].1 < line {
            next += 1;
        }
        let covered = roots.get(next).is_some_and(|&(s, _)| s <= line);
        let text = lines
            .lines_text(source, line, line)
            .trim_start_matches('\u{feff}');
        if !covered && !text.trim().is_empty() {
            violation(
                v,
                Rule::FullCoverage,
                Some(line),
                format!("no root chunk covers {:?}", truncate(text.trim())),
            );
        }
    }
}

/// Rule 2: siblings never share a line.
fn no_overlap(chunks: &[CodeChunk], v: &mut Vec<Violation>) {
    let mut groups: HashMap<Option<&str>, Vec<&CodeChunk>> = HashMap::new();
    for c in chunks {
        groups
            .entry(c.parent_chunk_id.as_deref())
            .or_default()
            .push(c);
    }
    for siblings in groups.values_mut() {
        siblings.sort_by_key(|c| (c.start_line, c.end_line));
        for pair in siblings.windows(2) {
            if pair[1].start_line <= pair[0].end_line {
                let message = format!(
                    "{:?} (lines {}-{}) overlaps its sibling {:?} (lines {}-{})",
                    pair[1].breadcrumb,
                    pair[1].start_line,
                    pair[1].end_line,
                    pair[0].breadcrumb,
                    pair[0].start_line,
                    pair[0].end_line
                );
                violation(v, Rule::NoOverlap, Some(pair[1].start_line), message);
            }
        }
    }
}

/// Rule 3: `fullSource` is exactly the file's text on the chunk's lines.
fn source_fidelity(chunks: &[CodeChunk], source: &str, lines: &LineIndex, v: &mut Vec<Violation>) {
    for c in chunks {
        if c.start_line == 0 || c.start_line > c.end_line || c.end_line > lines.line_count() {
            violation(
                v,
                Rule::SourceFidelity,
                Some(c.start_line),
                format!(
                    "{:?} has invalid lines {}-{}",
                    c.breadcrumb, c.start_line, c.end_line
                ),
            );
        } else if lines.lines_text(source, c.start_line, c.end_line) != c.full_source.as_str() {
            violation(
                v,
                Rule::SourceFidelity,
                Some(c.start_line),
                format!(
                    "fullSource of {:?} differs from lines {}-{}",
                    c.breadcrumb, c.start_line, c.end_line
                ),
            );
        }
    }
}

/// Rule 4: parent and child links agree both ways; roots have no parent.
fn hierarchy(chunks: &[CodeChunk], v: &mut Vec<Violation>) {
    let by_id: HashMap<&str, &CodeChunk> = chunks.iter().map(|c| (c.id.as_str(), c)).collect();
    for c in chunks {
        match &c.parent_chunk_id {
            None if c.depth != 0 => violation(
                v,
                Rule::HierarchyConsistency,
                Some(c.start_line),
                format!("{:?} has depth {} but no parent", c.breadcrumb, c.depth),
            ),
            None => {}
            Some(pid) => match by_id.get(pid.as_str()) {
                None => violation(
                    v,
                    Rule::HierarchyConsistency,
                    Some(c.start_line),
                    format!("{:?} names a missing parent", c.breadcrumb),
                ),
                Some(p) if !p.child_chunk_ids.contains(&c.id) => violation(
                    v,
                    Rule::HierarchyConsistency,
                    Some(c.start_line),
                    format!("parent {:?} does not list {:?}", p.breadcrumb, c.breadcrumb),
                ),
                Some(p)
                    if p.depth + 1 != c.depth
                        || c.start_line < p.start_line
                        || c.end_line > p.end_line =>
                {
                    violation(
                        v,
                        Rule::HierarchyConsistency,
                        Some(c.start_line),
                        format!(
                            "{:?} is not nested inside its parent {:?}",
                            c.breadcrumb, p.breadcrumb
                        ),
                    )
                }
                Some(_) => {}
            },
        }
        for child in &c.child_chunk_ids {
            if by_id
                .get(child.as_str())
                .and_then(|k| k.parent_chunk_id.as_deref())
                != Some(c.id.as_str())
            {
                violation(
                    v,
                    Rule::HierarchyConsistency,
                    Some(c.start_line),
                    format!(
                        "{:?} lists a child that does not name it as parent",
                        c.breadcrumb
                    ),
                );
            }
        }
    }
}

/// Rule 5: no embedding text over 32K tokens.
fn token_limit(chunks: &[CodeChunk], v: &mut Vec<Violation>) {
    for c in chunks {
        let tokens = estimate_tokens(&c.embedding_text);
        if tokens > MAX_CHUNK_TOKENS {
            violation(
                v,
                Rule::TokenLimit,
                Some(c.start_line),
                format!("{:?} has {tokens} tokens", c.breadcrumb),
            );
        }
    }
}

/// Rule 6: a body-bearing child appears in its parent as `signature;` without its body, and
/// a leaf's embedding text is its full source.
fn collapsed_children(
    pairs: &[(CodeChunk, &codectx_parser::ParsedSymbol)],
    source: &str,
    v: &mut Vec<Violation>,
) {
    for (chunk, sym) in pairs {
        let mut has_body_child = false;
        for child in kept_children(sym) {
            let (Some(body), Some(stub)) = (child.body, stub_end(source, child)) else {
                continue;
            };
            has_body_child = true;
            let stub_text = format!("{};", &source[child.span.start as usize..stub as usize]);
            // The child's whole text, not just its body: a tiny body like `{\n}` recurs everywhere.
            let child_text = &source[child.span.start as usize..child.span.end as usize];
            if !chunk.embedding_text.contains(&stub_text) && !crate::is_capped(chunk) {
                violation(
                    v,
                    Rule::CollapsedChildren,
                    Some(child.range.start),
                    format!(
                        "{:?} lacks the stub {:?}",
                        chunk.breadcrumb,
                        truncate(&stub_text)
                    ),
                );
            }
            // Identical code may legitimately remain (a twin callback that is not a chunk), so
            // count: collapsing must have removed at least this occurrence.
            let multiline = source[body.start as usize..body.end as usize].contains('\n');
            if multiline
                && chunk.embedding_text.matches(child_text).count()
                    >= chunk.full_source.matches(child_text).count()
            {
                violation(
                    v,
                    Rule::CollapsedChildren,
                    Some(child.range.start),
                    format!(
                        "{:?} still contains the body of {:?}",
                        chunk.breadcrumb, child.name
                    ),
                );
            }
        }
        if !has_body_child && chunk.embedding_text != chunk.full_source && !crate::is_capped(chunk)
        {
            violation(
                v,
                Rule::CollapsedChildren,
                Some(chunk.start_line),
                format!(
                    "leaf {:?}: embeddingText differs from fullSource",
                    chunk.breadcrumb
                ),
            );
        }
    }
}

/// Rule 7: breadcrumb = relative path > ancestors > name, from the actual links.
fn breadcrumbs(chunks: &[CodeChunk], relative_path: &str, v: &mut Vec<Violation>) {
    let by_id: HashMap<&str, &CodeChunk> = chunks.iter().map(|c| (c.id.as_str(), c)).collect();
    for c in chunks {
        let mut names = vec![c.name.as_str()];
        let mut at = c;
        while let Some(parent) = at.parent_chunk_id.as_deref().and_then(|p| by_id.get(p)) {
            names.push(&parent.name);
            at = parent;
            if names.len() > chunks.len() {
                break; // a cycle; rule 4 reports it
            }
        }
        // A Go method at the top level is named under its receiver type.
        if at.parent_chunk_id.is_none()
            && let Some(receiver) = &at.parent_name
        {
            names.push(receiver);
        }
        names.push(relative_path);
        names.reverse();
        let expected = names.join(" > ");
        if c.breadcrumb != expected {
            violation(
                v,
                Rule::BreadcrumbAccuracy,
                Some(c.start_line),
                format!("breadcrumb {:?}, expected {expected:?}", c.breadcrumb),
            );
        }
    }
}

/// Rule 8: a second run gives the same ids, and ids are unique in the file.
fn deterministic_ids(chunks: &[CodeChunk], path: &str, source: &str, v: &mut Vec<Violation>) {
    let again = crate::chunk_file(&parse_source(path, source), source, path);
    let first: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    let second: Vec<&str> = again.iter().map(|c| c.id.as_str()).collect();
    if first != second {
        violation(
            v,
            Rule::DeterministicIds,
            None,
            "a second run produced different chunk ids".into(),
        );
    }
    let mut seen = HashSet::new();
    for c in chunks {
        if !seen.insert(c.id.as_str()) {
            violation(
                v,
                Rule::DeterministicIds,
                Some(c.start_line),
                format!("duplicate id for {:?}", c.breadcrumb),
            );
        }
    }
}

/// Rule 9: each top-level statement (from a fresh parse: oxc, or tree-sitter) lies in exactly one root chunk,
/// and a root chunk holds several statements only where they share a line.
fn root_isolation(
    chunks: &[CodeChunk],
    path: &str,
    source: &str,
    lines: &LineIndex,
    v: &mut Vec<Violation>,
) {
    let Some(spans) = codectx_parser::top_level_statements(path, source) else {
        return;
    };
    let mut statements: Vec<(u32, u32)> = spans
        .into_iter()
        .map(|s| (lines.line_of(s.start), lines.end_line_of(s.start, s.end)))
        .collect();
    statements.sort_unstable();
    let roots: Vec<&CodeChunk> = chunks.iter().filter(|c| c.depth == 0).collect();
    let mut inside: HashMap<&str, Vec<(u32, u32)>> = HashMap::new();
    for &(s, e) in &statements {
        let holders: Vec<&&CodeChunk> = roots
            .iter()
            .filter(|c| c.start_line <= e && s <= c.end_line)
            .collect();
        match holders.as_slice() {
            [one] if one.start_line <= s && e <= one.end_line => {
                inside.entry(one.id.as_str()).or_default().push((s, e))
            }
            _ => violation(
                v,
                Rule::RootLevelIsolation,
                Some(s),
                format!(
                    "the statement on lines {s}-{e} is split across {} root chunks",
                    holders.len()
                ),
            ),
        }
    }
    for c in &roots {
        if let Some(stmts) = inside.get(c.id.as_str()) {
            for pair in stmts.windows(2) {
                if pair[1].0 > pair[0].1 {
                    violation(
                        v,
                        Rule::RootLevelIsolation,
                        Some(pair[1].0),
                        format!(
                            "{:?} merges the separate statements on lines {}-{} and {}-{}",
                            c.breadcrumb, pair[0].0, pair[0].1, pair[1].0, pair[1].1
                        ),
                    );
                }
            }
        }
    }
}

/// Rule 10: import and comment chunks list no imports; every listed import is one of the
/// file's import statements and one of its bound names occurs as a word in the chunk.
fn relevant_imports(
    chunks: &[CodeChunk],
    parsed: &ParsedFile,
    source: &str,
    v: &mut Vec<Violation>,
) {
    // One statement may import several modules (`import os, sys`): its names are theirs.
    let mut statements: HashMap<&str, Vec<&str>> = HashMap::new();
    for import in &parsed.imports {
        statements
            .entry(&source[import.span.start as usize..import.span.end as usize])
            .or_default()
            .extend(import.local_names.iter().map(String::as_str));
    }
    for c in chunks {
        if matches!(c.node_kind, SymbolKind::Import | SymbolKind::Comment)
            && !c.relevant_imports.is_empty()
        {
            violation(
                v,
                Rule::RelevantImports,
                Some(c.start_line),
                format!("{} chunk {:?} lists imports", c.node_kind, c.breadcrumb),
            );
        }
        for import in &c.relevant_imports {
            match statements.get(import.as_str()) {
                None => violation(
                    v,
                    Rule::RelevantImports,
                    Some(c.start_line),
                    format!(
                        "{:?} lists {:?}, not an import of the file",
                        c.breadcrumb,
                        truncate(import)
                    ),
                ),
                Some(names) if !names.iter().any(|n| contains_word(&c.embedding_text, n)) => {
                    violation(
                        v,
                        Rule::RelevantImports,
                        Some(c.start_line),
                        format!(
                            "{:?} lists {:?} but uses none of {:?}",
                            c.breadcrumb,
                            truncate(import),
                            names
                        ),
                    )
                }
                Some(_) => {}
            }
        }
    }
}

fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

fn truncate(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import jwt from 'jsonwebtoken';\nimport { a } from './a';\n\nexport class Tokens {\n  secret = 'x';\n\n  verify(t: string) {\n    return jwt.decode(t);\n  }\n}\n\nconsole.log(a);\n";

    fn setup() -> (ParsedFile, Vec<CodeChunk>) {
        let parsed = parse_source("t.ts", SOURCE);
        let chunks = crate::chunk_file(&parsed, SOURCE, "t.ts");
        (parsed, chunks)
    }

    fn rules(v: &[Violation]) -> Vec<Rule> {
        let mut r: Vec<Rule> = v.iter().map(|v| v.rule).collect();
        r.dedup();
        r
    }

    #[test]
    fn the_sample_is_clean() {
        assert!(check_file("t.ts", SOURCE).violations.is_empty());
    }

    #[test]
    fn each_rule_catches_its_fault() {
        let lines = LineIndex::new(SOURCE);
        let find =
            |chunks: &[CodeChunk], name: &str| chunks.iter().position(|c| c.name == name).unwrap();

        let (_, mut c) = setup();
        c.retain(|c| c.node_kind != SymbolKind::Expression);
        let mut v = Vec::new();
        full_coverage(&c, SOURCE, &lines, &mut v);
        assert_eq!(rules(&v), [Rule::FullCoverage]);
        assert_eq!(v[0].line, Some(12));

        let (_, mut c) = setup();
        let i = find(&c, "secret");
        c[i].end_line = 7;
        let mut v = Vec::new();
        no_overlap(&c, &mut v);
        assert_eq!(rules(&v), [Rule::NoOverlap]);

        let (_, mut c) = setup();
        let i = find(&c, "verify");
        c[i].full_source = format!("{} ", c[i].full_source).into();
        let mut v = Vec::new();
        source_fidelity(&c, SOURCE, &lines, &mut v);
        assert_eq!(rules(&v), [Rule::SourceFidelity]);

        let (_, mut c) = setup();
        let i = find(&c, "Tokens");
        c[i].child_chunk_ids.pop();
        let mut v = Vec::new();
        hierarchy(&c, &mut v);
        assert_eq!(rules(&v), [Rule::HierarchyConsistency]);

        let (_, mut c) = setup();
        c[0].embedding_text = "x".repeat(MAX_CHUNK_TOKENS * 4 + 4).into();
        let mut v = Vec::new();
        token_limit(&c, &mut v);
        assert_eq!(rules(&v), [Rule::TokenLimit]);

        let (parsed, _) = setup();
        let mut pairs = crate::chunk_file_with_symbols(&parsed, SOURCE, "t.ts");
        let i = pairs.iter().position(|(c, _)| c.name == "Tokens").unwrap();
        pairs[i].0.embedding_text = pairs[i].0.full_source.clone();
        let mut v = Vec::new();
        collapsed_children(&pairs, SOURCE, &mut v);
        assert_eq!(rules(&v), [Rule::CollapsedChildren]);

        let (_, mut c) = setup();
        let i = find(&c, "verify");
        c[i].breadcrumb = "t.ts > verify".into();
        let mut v = Vec::new();
        breadcrumbs(&c, "t.ts", &mut v);
        assert_eq!(rules(&v), [Rule::BreadcrumbAccuracy]);

        let (_, mut c) = setup();
        c[1].id = c[0].id.clone();
        let mut v = Vec::new();
        deterministic_ids(&c, "t.ts", SOURCE, &mut v);
        assert!(rules(&v).contains(&Rule::DeterministicIds));

        let (_, mut c) = setup();
        c[0].end_line = 2;
        c.remove(1);
        let mut v = Vec::new();
        root_isolation(&c, "t.ts", SOURCE, &lines, &mut v);
        assert_eq!(rules(&v), [Rule::RootLevelIsolation]);

        let (parsed, mut c) = setup();
        let i = find(&c, "verify");
        c[i].relevant_imports
            .push("import { a } from './a';".into());
        let mut v = Vec::new();
        relevant_imports(&c, &parsed, SOURCE, &mut v);
        assert_eq!(rules(&v), [Rule::RelevantImports]);
    }

    #[test]
    fn shadowing_local_is_not_an_import_use() {
        let source = "import { key } from './k';\nexport function f() {\n  const key = 1;\n  return key;\n}\nexport function g() {\n  return key;\n}\n";
        let parsed = parse_source("s.ts", source);
        let chunks = crate::chunk_file(&parsed, source, "s.ts");
        let f = chunks.iter().find(|c| c.name == "f").unwrap();
        let g = chunks.iter().find(|c| c.name == "g").unwrap();
        assert!(f.relevant_imports.is_empty(), "{:?}", f.relevant_imports);
        assert_eq!(g.relevant_imports, ["import { key } from './k';"]);
    }
}
