//! Phase 2 of the pipeline (files → parser → **chunker** → graph → store → retrieval → mcp):
//! turn one file's [`ParsedFile`] into [`CodeChunk`]s, the unit that is embedded, stored
//! and returned.
//!
//! Every symbol becomes one chunk with the blueprint's "content with children collapsed"
//! rule: a chunk's `embedding_text` is its raw source with each body-bearing child replaced
//! by that child's signature and `;` (no metadata preamble); a leaf's `embedding_text` equals
//! its `full_source`. Chunks are whole lines, so `full_source` is exactly the file's text on
//! `start_line..=end_line`. A child that would share lines with its parent or with an
//! earlier sibling is folded into the parent rather than becoming a chunk.
//!
//! [`validate`] checks the blueprint's ten global rules on any file.
//!
//! ```
//! let source = "import jwt from 'jsonwebtoken';\n\nexport class TokenService {\n  verify(t: string) {\n    return jwt.decode(t);\n  }\n}\n";
//! let parsed = codectx_parser::parse_source("src/token.ts", source);
//! let chunks = codectx_chunker::chunk_file(&parsed, source, "src/token.ts");
//! let class = chunks.iter().find(|c| c.name == "TokenService").unwrap();
//! assert_eq!(class.embedding_text, "export class TokenService {\n  verify(t: string);\n}");
//! let verify = chunks.iter().find(|c| c.name == "verify").unwrap();
//! assert_eq!(verify.breadcrumb, "src/token.ts > TokenService > verify");
//! assert_eq!(verify.relevant_imports, ["import jwt from 'jsonwebtoken';"]);
//! ```

mod text;
pub mod validate;
mod view;

pub use text::ChunkText;
pub use view::{natural_language_view, words};

use bytes::Bytes;
use codectx_parser::{ByteSpan, LineIndex, Naming, ParsedFile, ParsedSymbol, SymbolKind};
use serde::{Deserialize, Serialize};

/// The blueprint's `CodeChunk` without the fields the store adds (`vector`, `contentHash`,
/// `lastModified`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeChunk {
    /// blake3 of relativePath, nodeKind, name, startLine and the parent chunk's id (hex, 128
    /// bits). The path is the repository-relative one, so two checkouts of the same code at
    /// different places give the same ids, and an index can serve either.
    pub id: String,
    pub file_path: String,
    pub relative_path: String,
    /// The blueprint's `nodeKind` (serialised as `function`, `method`, `class`, `import`…).
    pub node_kind: SymbolKind,
    pub name: String,
    /// Whether `name` is written in the source or made up by the parser (a callback's
    /// `items.forEach callback`).
    #[serde(default, skip_serializing_if = "Naming::is_source")]
    pub naming: Naming,
    pub parent_name: Option<String>,
    pub parent_chunk_id: Option<String>,
    pub child_chunk_ids: Vec<String>,
    pub depth: u32,
    pub signature: String,
    /// Exactly the file's text on `start_line..=end_line`.
    pub full_source: ChunkText,
    pub start_line: u32,
    pub end_line: u32,
    /// Bytes of the declaration from its JSDoc or decorators to its end (not whole lines).
    pub span: ByteSpan,
    /// The parser symbol the chunk was made from ([`ParsedSymbol::index`]): the graph's
    /// declaration of it names the same number (`codectx_graph::facts::Decl::symbol`).
    pub symbol: u32,
    pub jsdoc: Option<String>,
    /// Import statements whose bindings this chunk's own code (collapsed children excluded)
    /// references, as resolved by oxc_semantic.
    pub relevant_imports: Vec<String>,
    /// Raw source with body-bearing children collapsed to `signature;` stubs.
    pub embedding_text: ChunkText,
    /// `relativePath > parent > … > name`.
    pub breadcrumb: String,
}

/// What joins the parts of a breadcrumb: `relativePath > parent > … > name`.
pub const BREADCRUMB_SEPARATOR: &str = " > ";

/// [`CodeChunk::qualified_name`] from the three fields it reads, for a reader that holds
/// only those of a stored row.
pub fn qualified_name<'c>(breadcrumb: &'c str, relative_path: &str, name: &'c str) -> &'c str {
    breadcrumb
        .strip_prefix(relative_path)
        .and_then(|rest| rest.strip_prefix(BREADCRUMB_SEPARATOR))
        .unwrap_or(name)
}

impl CodeChunk {
    /// The breadcrumb without its file: `parent > … > name`. With the file's path, it
    /// names a chunk across versions of the file (ids hash the start line, which moves).
    pub fn qualified_name(&self) -> &str {
        qualified_name(&self.breadcrumb, &self.relative_path, &self.name)
    }

    /// The qualified name as its parts, outermost first: `["Class", "method"]`. Stripping
    /// the file by its known path keeps a path that itself holds ` > ` whole.
    pub fn qualified_parts(&self) -> Vec<&str> {
        self.qualified_name().split(BREADCRUMB_SEPARATOR).collect()
    }

    /// The qualified name as results show it: `Class.method`.
    pub fn dotted_name(&self) -> String {
        self.qualified_parts().join(".")
    }
}

/// The blueprint's token estimate: 4 characters per token.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// Chunks one parsed file. `file_path` is stored as `filePath`; `parsed.path` is the
/// `relativePath`, hashed into ids.
pub fn chunk_file(parsed: &ParsedFile, source: &str, file_path: &str) -> Vec<CodeChunk> {
    chunk_file_with_symbols(parsed, source, file_path)
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// Like [`chunk_file`], pairing each chunk with the symbol it was made from (pre-order).
pub fn chunk_file_with_symbols<'p>(
    parsed: &'p ParsedFile,
    source: &str,
    file_path: &str,
) -> Vec<(CodeChunk, &'p ParsedSymbol)> {
    let lines = parsed.line_index(source);
    let cx = Context {
        parsed,
        source,
        text: Bytes::copy_from_slice(source.as_bytes()),
        file_path,
        lines: &lines,
        import_texts: parsed
            .imports
            .iter()
            .map(|i| &source[i.span.start as usize..i.span.end as usize])
            .collect(),
    };
    // At most one chunk per symbol: one allocation instead of moving chunks on every growth.
    fn count(symbols: &[ParsedSymbol]) -> usize {
        symbols.iter().map(|s| 1 + count(&s.children)).sum()
    }
    let mut out = Vec::with_capacity(count(&parsed.symbols));
    let mut crumbs = vec![parsed.path.as_str()];
    for root in &parsed.symbols {
        cx.emit(root, None, 0, &mut crumbs, &mut out);
    }
    out
}

/// The descendants of `sym` that become its child chunks, in source order.
///
/// A child spanning exactly the parent's lines (`const f = () => {` whose arrow is on the same
/// lines, an IIFE wrapping a whole bundle) or sharing a line with an earlier kept sibling
/// cannot be a separate line-range chunk: that node is folded into the parent, and its own
/// children are considered in its place, under the same rules.
pub fn kept_children(sym: &ParsedSymbol) -> Vec<&ParsedSymbol> {
    fn visit<'s>(
        parent: &ParsedSymbol,
        children: &'s [ParsedSymbol],
        last_end: &mut u32,
        out: &mut Vec<&'s ParsedSymbol>,
    ) {
        for child in children {
            if child.range != parent.range && child.range.start > *last_end {
                *last_end = child.range.end;
                out.push(child);
            } else {
                visit(parent, &child.children, last_end, out);
            }
        }
    }
    let mut out = Vec::new();
    visit(sym, &sym.children, &mut 0, &mut out);
    out
}

/// Where a body-bearing child's stub ends: its body start, minus the whitespace before it.
pub fn stub_end(source: &str, child: &ParsedSymbol) -> Option<u32> {
    let body = child.body?;
    let head = &source[child.span.start as usize..body.start as usize];
    Some(child.span.start + head.trim_end().len() as u32)
}

struct Context<'p, 's> {
    parsed: &'p ParsedFile,
    source: &'s str,
    /// `source`, copied once: every chunk's `full_source` (and a leaf's `embedding_text`, the
    /// same text) is a slice of it. A class and each of its methods hold the methods' lines,
    /// and a leaf both its texts: one copy per chunk and text held babel's source several
    /// times over in a cold index.
    text: Bytes,
    file_path: &'s str,
    lines: &'s LineIndex,
    /// Source text of each of `parsed.imports`.
    import_texts: Vec<&'s str>,
}

impl<'p> Context<'p, '_> {
    /// The source's bytes `start..end`, shared with the other chunks of the file.
    fn slice(&self, start: u32, end: u32) -> ChunkText {
        ChunkText::shared(self.text.slice(start as usize..end as usize))
    }

    fn emit(
        &self,
        sym: &'p ParsedSymbol,
        parent: Option<usize>,
        depth: u32,
        crumbs: &mut Vec<&'p str>,
        out: &mut Vec<(CodeChunk, &'p ParsedSymbol)>,
    ) {
        let parent_id = parent.map(|i| out[i].0.id.clone());
        let id = chunk_id(&self.parsed.path, sym, parent_id.as_deref());
        let start = self.lines.line_start(sym.range.start);
        let end = self.lines.line_end(sym.range.end, self.source);
        let kept = kept_children(sym);
        let collapsed: Vec<(u32, u32)> = kept
            .iter()
            .filter_map(|c| stub_end(self.source, c).map(|s| (s, c.span.end.min(end))))
            .collect();
        // A Go method stands outside its type's lines, but its receiver names the type: the
        // breadcrumb reads `file > Type > Method`, as it would inside a class.
        let receiver = sym.parent_name.as_deref().filter(|_| parent.is_none());
        crumbs.extend(receiver);
        crumbs.push(&sym.name);
        let chunk = CodeChunk {
            id,
            file_path: self.file_path.to_string(),
            relative_path: self.parsed.path.clone(),
            node_kind: sym.kind,
            name: sym.name.clone(),
            naming: sym.naming,
            parent_name: parent
                .map(|i| out[i].0.name.clone())
                .or(receiver.map(str::to_string)),
            parent_chunk_id: parent_id,
            child_chunk_ids: Vec::new(),
            depth,
            signature: sym.signature.clone(),
            full_source: self.slice(start, end),
            start_line: sym.range.start,
            end_line: sym.range.end,
            span: sym.span,
            symbol: sym.index,
            jsdoc: sym.jsdoc.clone(),
            relevant_imports: self.relevant_imports(sym, (start, end), &collapsed),
            embedding_text: {
                let text = cap_tokens(collapse(self.source, start, end, &collapsed));
                if text == self.source[start as usize..end as usize] {
                    self.slice(start, end)
                } else {
                    text.into()
                }
            },
            breadcrumb: crumbs.join(BREADCRUMB_SEPARATOR),
        };
        let index = out.len();
        out.push((chunk, sym));
        for child in kept {
            let child_index = out.len();
            self.emit(child, Some(index), depth + 1, crumbs, out);
            let child_id = out[child_index].0.id.clone();
            out[index].0.child_chunk_ids.push(child_id);
        }
        crumbs.pop();
        if receiver.is_some() {
            crumbs.pop();
        }
    }

    /// Imports referenced inside `[start, end)` outside the collapsed ranges.
    fn relevant_imports(
        &self,
        sym: &ParsedSymbol,
        (start, end): (u32, u32),
        collapsed: &[(u32, u32)],
    ) -> Vec<String> {
        if matches!(sym.kind, SymbolKind::Import | SymbolKind::Comment) {
            return Vec::new();
        }
        let own = |offset: &u32| !collapsed.iter().any(|&(s, e)| s <= *offset && *offset < e);
        let mut texts: Vec<String> = Vec::new();
        for (import, text) in self.parsed.imports.iter().zip(&self.import_texts) {
            // Offsets are ascending: only those in [start, end) are looked at.
            let offsets = &import.reference_offsets;
            let from = offsets.partition_point(|&o| o < start);
            let inside = &offsets[from..from + offsets[from..].partition_point(|&o| o < end)];
            if inside.iter().any(own) && !texts.iter().any(|t| t == text) {
                texts.push(text.to_string());
            }
        }
        texts
    }
}

/// `source[start..end]` with each collapsed range replaced by `;` (none when the statement's
/// own `;` follows it: `return function f(x) {…};` reads `return function f(x);`).
fn collapse(source: &str, start: u32, end: u32, collapsed: &[(u32, u32)]) -> String {
    let mut text = String::with_capacity((end - start) as usize);
    let mut at = start;
    for &(s, e) in collapsed {
        if s < at || e > end {
            continue;
        }
        text.push_str(&source[at as usize..s as usize]);
        if !source[e as usize..end as usize].starts_with(';') {
            text.push(';');
        }
        at = e;
    }
    text.push_str(&source[at as usize..end as usize]);
    text
}

/// The embedding model's per-document limit (Voyage Code 3: 32K tokens) in the blueprint's
/// 4-characters-per-token estimate.
pub const MAX_CHUNK_TOKENS: usize = 32_000;

/// Cuts an embedding text over [`MAX_CHUNK_TOKENS`] at the last line break that fits.
///
/// Only containers reach this (a bundle's module wrapper, whose statements the parser has
/// already made child chunks): the cut-off part is in those children and in `full_source`,
/// and an embedding model would truncate the text anyway, only less predictably.
fn cap_tokens(text: String) -> String {
    let max_chars = MAX_CHUNK_TOKENS * 4;
    if text.len() <= max_chars || estimate_tokens(&text) <= MAX_CHUNK_TOKENS {
        return text;
    }
    let cut = text
        .char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(i, _)| i);
    let cut = text[..cut].rfind('\n').unwrap_or(cut);
    text[..cut].to_string()
}

/// Whether `chunk`'s embedding text was cut by the token cap (its text then stops before
/// the chunk's last line).
pub fn is_capped(chunk: &CodeChunk) -> bool {
    estimate_tokens(&chunk.embedding_text) > MAX_CHUNK_TOKENS * 9 / 10
        && chunk.embedding_text.len() < chunk.full_source.len()
        && !chunk
            .full_source
            .ends_with(chunk.embedding_text.lines().last().unwrap_or(""))
}

fn chunk_id(relative_path: &str, sym: &ParsedSymbol, parent_id: Option<&str>) -> String {
    chunk_id_of(
        relative_path,
        sym.kind,
        &sym.name,
        sym.range.start,
        parent_id,
    )
}

/// A chunk's id ([`CodeChunk::id`]) from what it hashes: a reader that stored a chunk
/// without its id (the repository's shared parses) makes it again.
pub fn chunk_id_of(
    relative_path: &str,
    kind: SymbolKind,
    name: &str,
    start_line: u32,
    parent_id: Option<&str>,
) -> String {
    // Decimal digits by hand: `write!` goes through the formatting machinery per chunk.
    let mut digits = [0u8; 10];
    let mut n = start_line;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let parts = [
        relative_path.as_bytes(),
        kind.as_str().as_bytes(),
        name.as_bytes(),
        &digits[at..],
        parent_id.unwrap_or("").as_bytes(),
    ];
    // One contiguous input: blake3 on a short buffer beats several tiny updates.
    let mut input = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for part in parts {
        input.extend_from_slice(part);
        input.push(0);
    }
    let hash = blake3::hash(&input);
    // The first 128 bits, in lowercase hex.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(32);
    for &b in &hash.as_bytes()[..16] {
        hex.push(HEX[usize::from(b >> 4)] as char);
        hex.push(HEX[usize::from(b & 0xf)] as char);
    }
    hex
}

#[cfg(test)]
mod tests {
    /// Ids are stored: the recipe (NUL-separated relativePath, nodeKind, name, startLine and
    /// parent id, first 128 bits of blake3 in hex) must not drift, or every chunk of every
    /// index looks new and is embedded again.
    #[test]
    fn chunk_ids_follow_the_documented_recipe() {
        let source = "export class A {\n  m() {}\n}\n";
        let parsed = codectx_parser::parse_source("src/a.ts", source);
        let chunks = super::chunk_file(&parsed, source, "/repo/src/a.ts");
        let expected = |input: &str| blake3::hash(input.as_bytes()).to_hex()[..32].to_string();
        let class = expected("src/a.ts\0class\0A\x001\0\0");
        assert_eq!(chunks[0].id, class);
        let method = expected(&format!("src/a.ts\0method\0m\x002\0{class}\0"));
        assert_eq!(chunks[1].id, method);
        // Where the checkout lives does not enter the id.
        let elsewhere = super::chunk_file(&parsed, source, "/elsewhere/src/a.ts");
        assert_eq!(elsewhere[1].id, method);
        // Made again from the chunk's own fields.
        for chunk in &chunks {
            let again = super::chunk_id_of(
                &chunk.relative_path,
                chunk.node_kind,
                &chunk.name,
                chunk.start_line,
                chunk.parent_chunk_id.as_deref(),
            );
            assert_eq!(again, chunk.id);
        }
    }
}
