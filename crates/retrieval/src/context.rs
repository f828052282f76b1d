//! Seed 002's `get_code_context`: ranked symbols fitted into a token budget, as signatures
//! (`breadth`: more symbols, less detail) or full bodies (`depth`: fewer symbols, whole).

use codectx_chunker::{CodeChunk, estimate_tokens};
use codectx_parser::{LineRange, SymbolKind};
use serde::{Deserialize, Serialize};

use crate::answer::{CodeCopy, LISTED_COPIES};
use crate::project::Project;

/// The default `max_tokens` (seed 002).
pub const DEFAULT_MAX_TOKENS: usize = 4_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Signatures (bodies collapsed to `{ … }`, leading JSDoc dropped): as many symbols as fit.
    #[default]
    Breadth,
    /// Full bodies, best first; a symbol whose body does not fit is given as its signature.
    Depth,
}

/// How much of a symbol an item holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    Signature,
    Body,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextItem {
    pub file: String,
    pub name: String,
    pub kind: SymbolKind,
    pub start_line: u32,
    pub end_line: u32,
    pub detail: Detail,
    /// `// file:start-end` and the code.
    pub text: String,
    pub tokens: usize,
    /// The same code elsewhere, left out of the items (see [`crate::ResultSymbol::copies`]);
    /// its text names them too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<CodeCopy>,
}

/// The answer of `get_code_context`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeContext {
    pub strategy: Strategy,
    pub max_tokens: usize,
    pub context_items: Vec<ContextItem>,
    /// Sum of the items' tokens; never above `max_tokens`.
    pub estimated_tokens: usize,
    /// Some candidate (or its body) was left out for lack of budget.
    pub truncated: bool,
    /// What to do when nothing (or not everything) fitted, in a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// Nothing cleared the relevance gate: the items are the closest candidates, as
    /// signatures, for the agent to judge or to ask again from.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub low_confidence: bool,
}

/// Fits `ranked` (best first) into `max_tokens` (default [`DEFAULT_MAX_TOKENS`]).
pub fn code_context(
    project: &Project,
    ranked: &[&CodeChunk],
    max_tokens: Option<usize>,
    strategy: Strategy,
) -> CodeContext {
    let max_tokens = max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut items = Vec::new();
    let mut used = 0;
    let mut truncated = false;
    let mut smallest_left_out: Option<(usize, &str)> = None;
    for chunk in ranked {
        let copies = project.copies_of(chunk);
        let signature = item(
            chunk,
            Detail::Signature,
            signature_form(project, chunk).unwrap_or_default(),
            &copies,
        );
        let body = (strategy == Strategy::Depth)
            .then(|| item(chunk, Detail::Body, chunk.full_source.to_string(), &copies));
        // Depth prefers the body; any strategy falls back to the signature.
        let fitting = body
            .into_iter()
            .chain([signature.clone()])
            .enumerate()
            .find(|(_, it)| used + it.tokens <= max_tokens);
        match fitting {
            Some((rank, it)) => {
                truncated |= rank > 0;
                used += it.tokens;
                items.push(it);
            }
            None => {
                truncated = true;
                if smallest_left_out.is_none_or(|(n, _)| signature.tokens < n) {
                    smallest_left_out = Some((signature.tokens, chunk.name.as_str()));
                }
            }
        }
    }
    let suggestion = match (items.is_empty(), smallest_left_out) {
        (_, None) if ranked.is_empty() => Some("No symbol matched the query.".to_string()),
        (true, Some((need, name))) => Some(format!(
            "Nothing fits in {max_tokens} tokens: the smallest candidate ({name}) needs {need}. Raise max_tokens to at least {need}."
        )),
        (false, Some(_)) if strategy == Strategy::Depth => Some(
            "Some symbols were left out or shown as signatures; use strategy \"breadth\" or a larger max_tokens to see more.".to_string(),
        ),
        (false, Some(_)) => Some("Some symbols were left out; raise max_tokens to see more.".to_string()),
        _ => None,
    };
    CodeContext {
        strategy,
        max_tokens,
        context_items: items,
        estimated_tokens: used,
        truncated,
        suggestion,
        low_confidence: false,
    }
}

fn signature_form(project: &Project, chunk: &CodeChunk) -> Option<String> {
    let file = project.file(&chunk.relative_path)?;
    let range = LineRange {
        start: chunk.start_line,
        end: chunk.end_line,
    };
    codectx_snapshot::symbol_skeleton(file.parsed()?, file.source()?, range)
        .map(|text| without_leading_comments(&text).to_string())
}

/// The skeleton without the comments attached above the declaration (its JSDoc): breadth
/// trades detail for more symbols, and the signature says what the symbol takes and gives.
fn without_leading_comments(text: &str) -> &str {
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix("/*") {
            match after.find("*/") {
                Some(end) => rest = &after[end + 2..],
                None => return text,
            }
        } else if trimmed.starts_with("//") {
            match trimmed.find('\n') {
                Some(end) => rest = &trimmed[end + 1..],
                None => return text,
            }
        } else {
            // Keep the declaration's own indentation.
            let skipped = rest.len() - rest.trim_start_matches(['\r', '\n']).len();
            let rest = &rest[skipped..];
            return if rest.trim().is_empty() { text } else { rest };
        }
    }
}

/// One item: `// file:start-end`, a line locating its copies if it has any, and the code.
fn item(chunk: &CodeChunk, detail: Detail, code: String, copies: &[&CodeChunk]) -> ContextItem {
    let mut text = format!(
        "// {}:{}-{}\n",
        chunk.relative_path, chunk.start_line, chunk.end_line
    );
    let listed: Vec<CodeCopy> = copies
        .iter()
        .take(LISTED_COPIES)
        .map(|c| CodeCopy::of(c))
        .collect();
    if !listed.is_empty() {
        let places: Vec<String> = listed.iter().map(CodeCopy::to_string).collect();
        let more = match copies.len() - listed.len() {
            0 => String::new(),
            n => format!(" and {n} more places"),
        };
        text.push_str(&format!(
            "// also, character for character, at {}{more}\n",
            places.join(", ")
        ));
    }
    text.push_str(&code);
    text.push('\n');
    ContextItem {
        file: chunk.relative_path.clone(),
        name: chunk.dotted_name(),
        kind: chunk.node_kind,
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        detail,
        tokens: estimate_tokens(&text),
        text,
        copies: listed,
    }
}

#[cfg(test)]
mod tests {
    use super::without_leading_comments;

    #[test]
    fn drops_jsdoc_and_line_comments_but_keeps_code_and_indentation() {
        assert_eq!(
            without_leading_comments("  /**\n   * Docs.\n   */\n  json(): T { … }"),
            "  json(): T { … }"
        );
        assert_eq!(
            without_leading_comments("// a\n// b\nconst x = 1;"),
            "const x = 1;"
        );
        assert_eq!(
            without_leading_comments("@Input() x = 1;"),
            "@Input() x = 1;"
        );
        // A comment-only item stays as it is.
        assert_eq!(
            without_leading_comments("// only a comment"),
            "// only a comment"
        );
    }
}
