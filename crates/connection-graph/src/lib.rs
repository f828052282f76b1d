//! Phase 5 of the pipeline (… → retrieval → snapshot + **connection graph** → mcp): the
//! first content item of every answer, a plain-text structural overview of the results.
//!
//! Pure data → text: the input is the results' [`SymbolMetadata`] (from `codectx-graph`), in
//! rank order; nothing here reads files or the index. The layout is the blueprint's
//! graph-first topology:
//!
//! 1. the summary line `Search: "q" | N results across M files | T/B tokens`, where T is the
//!    token estimate of the whole answer actually returned (this text plus the snapshots);
//! 2. **Graph** — how results call each other (`[2] A → [1] B → [4] C`), or, when call trees
//!    go deeper than one level, each result's tree with `★` on results, `◆` on shared
//!    dependencies, `[cycle]` and `[depth limit]`;
//! 3. **Patterns** — hubs, shared dependencies, shared types, diamonds, cycles;
//! 4. **Details** — per result: kind, modifiers and reference count, signature, heritage,
//!    calls and callers, types in and out, members, a constant's type and value.
//!
//! A single result uses the blueprint's single-result format (no indices, no sections).
//!
//! ```
//! use codectx_connection_graph::{ConnectionGraph, render};
//! let input = ConnectionGraph {
//!     query: "tokens".into(),
//!     results: vec![],
//!     budget: 8000,
//!     snapshot_tokens: 0,
//!     call_depth: 1,
//! };
//! assert_eq!(render(&input), "Search: \"tokens\" | 0 results | 12/8,000 tokens\n");
//! ```

mod details;
mod topology;

use codectx_graph::SymbolMetadata;
use serde::{Deserialize, Serialize};

/// What one connection graph is rendered from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionGraph {
    pub query: String,
    /// The results, best first; `[n]` is the 1-based position.
    pub results: Vec<SymbolMetadata>,
    /// The token budget of the whole answer.
    pub budget: usize,
    /// Token estimate of the other content items (the snapshots) returned with this text.
    #[serde(default)]
    pub snapshot_tokens: usize,
    /// The `callDepth` the metadata was built with: 1 draws flat chains between results,
    /// anything else (N hops, -1 transitive) draws each result's call tree.
    #[serde(default = "one")]
    pub call_depth: i32,
}

fn one() -> i32 {
    1
}

/// Renders the connection graph text (ends with a newline).
pub fn render(input: &ConnectionGraph) -> String {
    let body = if input.results.len() == 1 {
        details::single(&input.results[0], input.call_depth != 1)
    } else {
        let view = topology::View::new(&input.results, input.call_depth != 1);
        let mut body = String::new();
        let graph = view.graph_section();
        if !graph.is_empty() {
            body.push_str("\nGraph:\n");
            body.push_str(&graph);
        }
        let patterns = view.patterns_section();
        if !patterns.is_empty() {
            body.push_str("\nPatterns:\n");
            body.push_str(&patterns);
        }
        for (i, meta) in input.results.iter().enumerate() {
            body.push('\n');
            body.push_str(&details::detail(&view, i, meta));
        }
        body
    };
    let files = {
        let mut files: Vec<&str> = input
            .results
            .iter()
            .map(|m| m.symbol.file.as_str())
            .collect();
        files.sort_unstable();
        files.dedup();
        files.len()
    };
    let counts = match input.results.len() {
        1 => "1 result".to_string(),
        n if files > 1 => format!("{n} results across {files} files"),
        n if n > 1 => format!("{n} results in 1 file"),
        n => format!("{n} results"),
    };
    // T counts this text too, and writing T can change its length: settle the fixpoint.
    // f(T) is monotone in T, so iterating from below reaches the least fixpoint.
    let mut total = input.snapshot_tokens;
    loop {
        let text = format!(
            "Search: \"{}\" | {counts} | {}/{} tokens\n{body}",
            input.query,
            thousands(total),
            thousands(input.budget)
        );
        let actual = input.snapshot_tokens + codectx_chunker::estimate_tokens(&text);
        if actual == total {
            return text;
        }
        total = actual;
    }
}

/// `3240` → `3,240`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(820), "820");
        assert_eq!(super::thousands(8000), "8,000");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
