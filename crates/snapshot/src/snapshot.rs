//! Selecting and printing the lines of a smart structural snapshot.

use codectx_parser::{LineIndex, LineRange, ParsedFile, ParsedProgram, ParsedSymbol, SymbolKind};

use crate::SnapshotError;
use crate::refs::{FileRefs, MemberObject};

/// One file's smart structural snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmartSnapshot {
    pub relative_path: String,
    /// `// <relative path>`, a blank line, then the selected source lines.
    pub text: String,
    /// The source lines shown, ascending (1-indexed).
    pub lines: Vec<u32>,
}

/// A file as snapshots read it: its symbols and the references between its lines, both
/// from one parse.
#[derive(Debug)]
pub struct SnapshotFile {
    parsed: ParsedFile,
    refs: FileRefs,
}

impl SnapshotFile {
    /// Parses `source` (the file `path`) once.
    pub fn parse(path: &str, source: &str) -> Self {
        codectx_parser::parse_with(path, source, Self::from_parse)
    }

    /// From a parse made by the caller with [`codectx_parser::parse_with`].
    pub fn from_parse(parsed: ParsedFile, program: Option<&ParsedProgram<'_, '_>>) -> Self {
        let refs = FileRefs::of(program, &parsed.lines);
        Self { parsed, refs }
    }

    pub fn parsed(&self) -> &ParsedFile {
        &self.parsed
    }
}

/// Builds the smart structural snapshot of `targets` (line ranges of symbols of the file,
/// e.g. `CodeChunk::start_line..=end_line`) in the file `source`.
///
/// Shown: every target in full; every ancestor of a target as its header (declaration up to
/// the opening of its body) and closing line; and, transitively, the same-file declarations
/// the shown code references that are context rather than code — imports, constants and
/// variables, type aliases, interfaces, enums, and class properties read through `this` or
/// the class name. Functions, methods and classes a target merely calls or names are left
/// out: they are results of their own, and the connection graph lists them.
pub fn smart_snapshot(
    file: &SnapshotFile,
    source: &str,
    targets: &[LineRange],
) -> Result<SmartSnapshot, SnapshotError> {
    let (parsed, refs) = (&file.parsed, &file.refs);
    let lines = parsed.line_index(source);
    let mut sel = Selection {
        refs,
        lines: &lines,
        shown: vec![false; lines.line_count() as usize + 2],
        included: Vec::new(),
        targets: Vec::new(),
        pending: Vec::new(),
    };
    let resolved = targets
        .iter()
        .map(|range| {
            path_to_range(&parsed.symbols, *range)
                .and_then(|p| p.last().copied())
                .ok_or(SnapshotError::NoSymbolAt {
                    path: parsed.path.clone(),
                    start_line: range.start,
                    end_line: range.end,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // All targets are known before any context is chosen: a declaration inside another
    // target is never context.
    sel.targets = resolved
        .iter()
        .map(|t| (t.span.start, t.span.end))
        .collect();
    for target in resolved {
        sel.include(target);
    }
    // Shown code (targets, context, wrapper headers) may reference more context, e.g. an
    // alias naming an imported type: follow until nothing new is shown.
    while let Some((start, end)) = sel.pending.pop() {
        for &(_, decl) in refs.uses_in(start, end) {
            if sel.in_target(decl) {
                continue;
            }
            let path = path_to_offset(&parsed.symbols, decl);
            match path.last() {
                Some(&d) if is_context(d) => sel.include(d),
                // A local of a wrapper (a `const` in an enclosing function or namespace):
                // its declaration statement, when it is one.
                _ => {
                    if let Some(stmt) = refs.declaration_at(decl)
                        && path.last().is_none_or(|d| d.span.start <= stmt.0)
                    {
                        sel.include_span(stmt);
                    }
                }
            }
        }
        for m in refs.members_in(start, end) {
            let class = match m.object {
                MemberObject::This => innermost_class(&parsed.symbols, m.offset),
                MemberObject::Declared(decl) => path_to_offset(&parsed.symbols, decl)
                    .last()
                    .copied()
                    .filter(|c| c.kind == SymbolKind::Class),
            };
            let Some(member) = class.and_then(|c| member_declaring(source, c, &m.name)) else {
                continue;
            };
            if sel.in_target(member.span.start) {
                continue;
            }
            sel.include(member);
        }
    }
    Ok(sel.render(&parsed.path, source))
}

/// Kinds a snapshot shows when shown code references them: declarations that are context
/// (data, types, bindings) rather than code of their own.
fn is_context(sym: &ParsedSymbol) -> bool {
    match sym.kind {
        SymbolKind::Import
        | SymbolKind::Const
        | SymbolKind::Variable
        | SymbolKind::Type
        | SymbolKind::Interface
        | SymbolKind::Enum
        | SymbolKind::Struct => true,
        SymbolKind::Property => sym.body.is_none(),
        _ => false,
    }
}

/// The outermost symbol whose lines are exactly `range`, with its ancestors (root first).
pub(crate) fn path_to_range(
    symbols: &[ParsedSymbol],
    range: LineRange,
) -> Option<Vec<&ParsedSymbol>> {
    let mut path = Vec::new();
    let mut level = symbols;
    loop {
        let sym = level
            .iter()
            .find(|s| s.range.start <= range.start && range.end <= s.range.end)?;
        path.push(sym);
        if sym.range == range {
            return Some(path);
        }
        level = &sym.children;
    }
}

/// The symbols containing byte `offset`, root first.
fn path_to_offset(symbols: &[ParsedSymbol], offset: u32) -> Vec<&ParsedSymbol> {
    let mut path = Vec::new();
    let mut level = symbols;
    while let Some(sym) = level.iter().find(|s| s.span.contains(offset)) {
        path.push(sym);
        level = &sym.children;
    }
    path
}

fn innermost_class(symbols: &[ParsedSymbol], offset: u32) -> Option<&ParsedSymbol> {
    path_to_offset(symbols, offset)
        .into_iter()
        .rev()
        .find(|s| s.kind == SymbolKind::Class)
}

/// The member of `class` that declares field `name`: a property, or the constructor when
/// `name` is a parameter property (`constructor(private store: Store)`).
fn member_declaring<'p>(
    source: &str,
    class: &'p ParsedSymbol,
    name: &str,
) -> Option<&'p ParsedSymbol> {
    let property = class
        .children
        .iter()
        .find(|c| c.kind == SymbolKind::Property && c.body.is_none() && c.name == name);
    property.or_else(|| {
        let ctor = class
            .children
            .iter()
            .find(|c| c.kind == SymbolKind::Constructor)?;
        let params = &source
            [ctor.span.start as usize..ctor.body.map_or(ctor.span.end, |b| b.start) as usize];
        let declares = ["private", "protected", "public", "readonly"]
            .iter()
            .any(|modifier| {
                params.match_indices(modifier).any(|(i, _)| {
                    let rest = params[i + modifier.len()..].trim_start();
                    let rest = rest.strip_prefix("readonly").map_or(rest, str::trim_start);
                    rest.strip_prefix(name).is_some_and(|after| {
                        !after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
                    })
                })
            });
        declares.then_some(ctor)
    })
}

struct Selection<'a> {
    refs: &'a FileRefs,
    lines: &'a LineIndex,
    /// Indexed by line number; `shown[0]` is unused.
    shown: Vec<bool>,
    /// Span starts of symbols and statements shown in full.
    included: Vec<u32>,
    targets: Vec<(u32, u32)>,
    /// Shown code whose references have not been followed yet.
    pending: Vec<(u32, u32)>,
}

impl Selection<'_> {
    fn in_target(&self, offset: u32) -> bool {
        self.targets.iter().any(|&(s, e)| s <= offset && offset < e)
    }

    /// Shows a symbol in full, inside the syntax that encloses it.
    fn include(&mut self, sym: &ParsedSymbol) {
        if self.included.contains(&sym.span.start) {
            return;
        }
        self.show(sym.range.start, sym.range.end);
        self.include_span((sym.span.start, sym.span.end));
    }

    /// Shows the lines of `[start, end)` and opens and closes every multi-line node around
    /// them: a body or literal by its first line, any other node (a class or function head,
    /// a call, an `if`) by all lines up to the enclosed one, so that multi-line parameter
    /// lists, heritage clauses and decorators stay whole. Each node's last line closes it.
    fn include_span(&mut self, (start, end): (u32, u32)) {
        if self.included.contains(&start) {
            return;
        }
        self.included.push(start);
        self.show(
            self.lines.line_of(start),
            self.lines.end_line_of(start, end),
        );
        self.pending.push((start, end));
        let chain: Vec<_> = self
            .refs
            .containers
            .iter()
            .filter(|c| c.start <= start && end <= c.end && (c.start < start || end < c.end))
            .copied()
            .collect();
        for (i, c) in chain.iter().enumerate() {
            let (inner, inner_end) = chain.get(i + 1).map_or((start, end), |n| (n.start, n.end));
            let first = self.lines.line_of(c.start);
            if c.is_list {
                self.show(first, first);
            } else {
                self.show(first, self.lines.line_of(inner));
                // Decorators, heritage clauses and parameters are shown code too.
                self.pending.push((c.start, inner));
            }
            let last = self.lines.end_line_of(c.start, c.end);
            if c.keeps_tail {
                self.show(self.lines.end_line_of(inner, inner_end), last);
                self.pending.push((inner_end, c.end));
            } else {
                self.show(last, last);
            }
        }
    }

    fn show(&mut self, start: u32, end: u32) {
        let end = end.min(self.shown.len() as u32 - 2);
        for line in start..=end {
            self.shown[line as usize] = true;
        }
    }

    fn render(&self, path: &str, source: &str) -> SmartSnapshot {
        let mut text = format!("// {path}\n");
        let mut shown = Vec::new();
        let mut gap_had_blank = true;
        for line in 1..self.shown.len() as u32 - 1 {
            let content = self.lines.lines_text(source, line, line);
            if !self.shown[line as usize] {
                gap_had_blank |= content.trim().is_empty();
                continue;
            }
            // An omitted stretch that had a blank line keeps one, except just inside a
            // wrapper's braces, where it would only pad the header.
            if gap_had_blank && !shown.is_empty() {
                let prev = *shown.last().unwrap();
                let prev = self.lines.lines_text(source, prev, prev);
                let opens = prev.trim_end().ends_with(['{', '(', '[']);
                let closes = content.trim_start().starts_with(['}', ')', ']']);
                if !opens && !closes && !prev.trim().is_empty() {
                    text.push('\n');
                }
            } else if shown.is_empty() {
                text.push('\n');
            }
            gap_had_blank = false;
            text.push_str(content);
            text.push('\n');
            shown.push(line);
        }
        SmartSnapshot {
            relative_path: path.to_string(),
            text,
            lines: shown,
        }
    }
}
