//! The full-text index's fields and analysis: what the lexical channel searches (`search`,
//! `text_table`), what a row stores (`schema`) and what upkeep builds (`maintain`) must
//! agree.
//!
//! A row stores each searched field already analyzed: its terms, space-separated. The
//! analysis is code-aware (`getUserName` → `getusername get user name`), lower-cased and
//! stemmed (`parsing`, `parses` → `pars`), so a question's English meets the code's
//! identifiers. Stored analyzed, it runs on the sync's cores, stems each distinct word once
//! (LanceDB's index build stemmed every occurrence on one thread: on vite 0.47 s of `fullSource`
//! against 0.13 s for its terms), and a copy in memory only splits on spaces.

use std::collections::HashMap;

use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::index::scalar::FtsIndexBuilder;

/// The columns the lexical channel searches as one BM25F field (Lucene's
/// `CombinedFieldQuery`), each the terms of a chunk's text: its names (path and qualified
/// name, [`crate::schema::search_names`]) and its whole source (nested functions included,
/// so a word inside a callback still finds the function holding it).
/// With the repository's history on, a third field joins them: the descriptions of the
/// commits that changed the chunk, the words developers use for its behaviour.
pub(crate) const LEXICAL_COLUMNS: [(&str, f32); 3] = [
    // A name word counts as much as three occurrences in the source: the words that name a
    // declaration say what it is about; the source also mentions everything it touches.
    ("nameTerms", 3.0),
    ("sourceTerms", 1.0),
    // A commit's words describe a change, not always the symbol's purpose, and a symbol
    // collects ten of them: weighed like source words, not like names.
    ("historyTerms", 1.0),
];

/// Every column with a full-text index (the lexical channel's fields).
pub(crate) const FULL_TEXT_COLUMNS: [&str; 3] = ["nameTerms", "sourceTerms", "historyTerms"];

/// The whole analysis in one tokenizer: what a question goes through ([`query_terms`]), and
/// what [`Analyzer`] equals word for word.
pub(crate) fn lexical_tokens() -> FtsIndexBuilder {
    FtsIndexBuilder::code().split_identifiers(true).stem(true)
}

/// The full-text indexes' tokenizer: the stored terms are analyzed already, so it only
/// splits on spaces (BM25F needs every field tokenized alike).
pub(crate) fn term_index() -> FtsIndexBuilder {
    FtsIndexBuilder::default()
        .base_tokenizer("whitespace".to_string())
        .lower_case(false)
        .stem(false)
        .remove_stop_words(false)
        .ascii_folding(false)
        .max_token_length(None)
}

/// `query`'s terms, space-separated, as the full-text indexes hold a row's.
pub(crate) fn query_terms(query: &str, tokenizer: &mut Box<dyn LanceTokenizer>) -> String {
    let tokens = lance_index::scalar::inverted::query::collect_query_tokens(query, tokenizer);
    let mut terms = String::new();
    for token in tokens {
        if !terms.is_empty() {
            terms.push(' ');
        }
        terms.push_str(&token);
    }
    terms
}

/// Above this many distinct words an [`Analyzer`] forgets the roots it keeps.
const MAX_REMEMBERED_WORDS: usize = 1 << 18;

/// [`lexical_tokens`]' analysis with each distinct word's root computed once: LanceDB's
/// tokenizer up to lower-casing, then its stemmer and ASCII folding (in that order, as in
/// its chain) per new word.
pub(crate) struct Analyzer {
    words: Box<dyn LanceTokenizer>,
    roots: Box<dyn LanceTokenizer>,
    remembered: HashMap<String, Option<String>>,
}

impl Analyzer {
    pub(crate) fn new() -> Result<Self, String> {
        let build = |builder: FtsIndexBuilder| {
            builder
                .build()
                .map_err(|e| format!("the full-text tokenizer: {e}"))
        };
        Ok(Analyzer {
            words: build(lexical_tokens().stem(false).ascii_folding(false))?,
            roots: build(
                FtsIndexBuilder::default()
                    .base_tokenizer("whitespace".to_string())
                    .lower_case(false)
                    .remove_stop_words(false)
                    .max_token_length(None)
                    .stem(true)
                    .ascii_folding(true),
            )?,
            remembered: HashMap::new(),
        })
    }

    /// `text`'s terms, space-separated.
    pub(crate) fn terms(&mut self, text: &str) -> String {
        if self.remembered.len() > MAX_REMEMBERED_WORDS {
            self.remembered.clear();
        }
        let mut terms = String::new();
        let mut stream = self.words.token_stream_for_doc(text);
        while stream.advance() {
            let word = &stream.token().text;
            let root = match self.remembered.get(word.as_str()) {
                Some(root) => root,
                None => {
                    let mut roots = self.roots.token_stream_for_doc(word);
                    let root = roots.advance().then(|| roots.token().text.clone());
                    self.remembered.entry(word.clone()).or_insert(root)
                }
            };
            if let Some(root) = root {
                if !terms.is_empty() {
                    terms.push(' ');
                }
                terms.push_str(root);
            }
        }
        terms
    }
}

/// Each row's texts analyzed ([`Analyzer::terms`]), on all cores for a large batch: the
/// terms of `texts[i]` are at `i`.
pub(crate) fn analyze_all<const N: usize>(texts: &[[&str; N]]) -> Result<Vec<[String; N]>, String> {
    // Below this many rows a thread costs more than it saves (an embedding step's batch).
    const ROWS_PER_THREAD: usize = 512;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(texts.len().div_ceil(ROWS_PER_THREAD))
        .max(1);
    let analyze = |part: &[[&str; N]]| -> Result<Vec<[String; N]>, String> {
        let mut analyzer = Analyzer::new()?;
        Ok(part
            .iter()
            .map(|row| row.map(|text| analyzer.terms(text)))
            .collect())
    };
    if threads == 1 {
        return analyze(texts);
    }
    let part = texts.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = texts
            .chunks(part)
            .map(|part| scope.spawn(move || analyze(part)))
            .collect();
        let mut all = Vec::with_capacity(texts.len());
        for handle in handles {
            let terms = handle
                .join()
                .map_err(|_| "analyzing the full-text fields panicked".to_string())??;
            all.extend(terms);
        }
        Ok(all)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What LanceDB's own chain makes of `text`, space-separated.
    fn lance_terms(text: &str) -> String {
        let mut tokenizer = lexical_tokens().build().unwrap();
        let mut stream = tokenizer.token_stream_for_doc(text);
        let mut terms = Vec::new();
        while stream.advance() {
            terms.push(stream.token().text.clone());
        }
        terms.join(" ")
    }

    #[test]
    fn the_analyzer_gives_lances_terms_word_for_word() {
        let texts = [
            "export function getUserName(userId: string) { return users[userId].name; }",
            "// Parses the config; parsing twice returns the cached parser's result.",
            "const avatar = 'https://www.github.com/yyx990803.png' // Evan You, barré, Straße",
            "HTTPServer2 parse_json_value XMLHttpRequest __proto__ $el _privateField",
            "aVeryLongIdentifierNameThatGoesOnAndOnBeyondFortyCharactersInLength = 1",
            "",
            "   \n\t ",
            "数据 данные naïve café",
        ];
        let mut analyzer = Analyzer::new().unwrap();
        for text in texts {
            // Twice: the second time every root is remembered.
            assert_eq!(analyzer.terms(text), lance_terms(text), "{text:?}");
            assert_eq!(analyzer.terms(text), lance_terms(text), "{text:?}");
        }
        // Enough rows for several threads.
        let rows: Vec<[&str; 2]> = texts
            .iter()
            .cycle()
            .take(1_200)
            .map(|t| [*t, "parsing getUserName"])
            .collect();
        let all = analyze_all(&rows).unwrap();
        for (row, terms) in rows.iter().zip(&all) {
            assert_eq!(terms[0], lance_terms(row[0]));
            assert_eq!(terms[1], lance_terms(row[1]));
        }
    }

    #[test]
    fn a_question_is_analyzed_as_a_row_is() {
        let mut tokenizer = lexical_tokens().build().unwrap();
        let question = "How does getUserName parse the users' names?";
        assert_eq!(
            query_terms(question, &mut tokenizer),
            Analyzer::new().unwrap().terms(question)
        );
    }
}
