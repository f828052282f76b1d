//! The anchor baseline: textbook BM25 over function-level symbols, as the benchmark kit's
//! `bm25_baseline.js` computes it, ported so that the project measures itself without the
//! kit. Every function, method, accessor, constructor, class and variable is a document made of its path, qualified name and source text (from the code's first
//! token: leading comments are not part of it), tokenized with identifiers split on case
//! changes and non-alphanumerics; k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + 0.5)/(df + 0.5)).
//!
//! Symbols come from this project's parser instead of the TypeScript compiler, so object
//! literal methods and `module.exports.x = function` count as documents too; so do
//! variables, which the corpus can ask for (`var add = _curry2(function add …)`): a
//! baseline that cannot return a target would flatter the comparison.

use std::collections::HashMap;
use std::path::Path;

use codectx_parser::{ParsedSymbol, SymbolKind};

use crate::eval::Hit;

const K1: f64 = 1.2;
const B: f64 = 0.75;

struct Document {
    hit: Hit,
    len: f64,
}

/// An in-memory BM25 index of one source tree.
pub struct Bm25 {
    documents: Vec<Document>,
    /// term → (document, term frequency)
    postings: HashMap<String, Vec<(usize, u32)>>,
    average_len: f64,
}

impl Bm25 {
    /// Indexes every TS/JS file under `root` (not `.d.ts`, not `node_modules`).
    pub fn build(root: &Path) -> anyhow::Result<Self> {
        let mut documents = Vec::new();
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut total = 0.0;
        for (path, relative) in crate::source_files(&[root.to_path_buf()])? {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if text.len() > 2_000_000 {
                continue;
            }
            let parsed = codectx_parser::parse_source(&relative, &text);
            for (symbol, qname) in crate::tuning::qualified(&parsed.symbols) {
                if !is_document(symbol) {
                    continue;
                }
                let (_, code) = crate::tuning::leading_comments(&text, symbol.span.start as usize);
                let code = code.min(symbol.span.end as usize);
                let body = &text[code..symbol.span.end as usize];
                let tokens = tokenize(&format!("{relative} {qname} {body}"));
                let mut tf: HashMap<String, u32> = HashMap::new();
                for t in &tokens {
                    *tf.entry(t.clone()).or_default() += 1;
                }
                let id = documents.len();
                for (term, f) in tf {
                    postings.entry(term).or_default().push((id, f));
                }
                total += tokens.len() as f64;
                documents.push(Document {
                    hit: Hit {
                        file: relative.clone(),
                        name: qname,
                        start: parsed.lines.line_of(code as u32),
                        end: symbol.range.end,
                    },
                    len: tokens.len() as f64,
                });
            }
        }
        let average_len = total / documents.len().max(1) as f64;
        Ok(Self {
            documents,
            postings,
            average_len,
        })
    }

    /// The best `k` documents for `query`, best first (ties by document order).
    pub fn search(&self, query: &str, k: usize) -> Vec<&Hit> {
        let mut terms = tokenize(query);
        terms.sort();
        terms.dedup();
        let n = self.documents.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for term in &terms {
            let Some(list) = self.postings.get(term) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, f) in list {
                let f = f64::from(f);
                let len = self.documents[doc].len;
                *scores.entry(doc).or_default() +=
                    idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * len / self.average_len));
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
            .into_iter()
            .take(k)
            .map(|(doc, _)| &self.documents[doc].hit)
            .collect()
    }
}

/// A document: a function-level symbol (a corpus target, or a constructor).
fn is_document(symbol: &ParsedSymbol) -> bool {
    crate::tuning::is_target(symbol.kind) || symbol.kind == SymbolKind::Constructor
}

/// The kit's tokenizer: `aB` and `ABc` split before the capital, lowercased, split on
/// anything but ASCII letters and digits, one-letter tokens dropped.
fn tokenize(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut spaced = String::with_capacity(text.len() + 16);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let p = chars[i - 1];
            let lower_before = p.is_ascii_lowercase() || p.is_ascii_digit();
            let acronym_end =
                p.is_ascii_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if lower_before || acronym_end {
                spaced.push(' ');
            }
        }
        spaced.push(c);
    }
    spaced
        .to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| w.len() > 1)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::tokenize;

    #[test]
    fn tokenizes_like_the_kit() {
        assert_eq!(
            tokenize("parseHTTPRequest src/x_y.ts a"),
            ["parse", "http", "request", "src", "x", "y", "ts"]
                .iter()
                .filter(|w| w.len() > 1)
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        );
    }
}
