//! The full-text index's fields and analysis: what the lexical channel searches (`search`,
//! `text_table`), what a row stores (`schema`) and what upkeep builds (`maintain`) must
//! agree.
//!
//! A row stores each searched field already analyzed: its terms, space-separated. The
//! analysis is code-aware (`getUserName` → `getusername get user name`), lower-cased and
//! stemmed (`parsing`, `parses` → `pars`), so a question's English meets the code's
//! identifiers. Stored analyzed, it runs on the sync's cores, analyzes each distinct
//! identifier once (LanceDB's index build analyzed every occurrence on one thread: on vite
//! 0.47 s for `fullSource` against 0.13 s for its terms), and a copy in memory only splits
//! on spaces.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::arrow::arrow_array::ArrayRef;
use lancedb::arrow::arrow_array::builder::StringBuilder;
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

/// The whole analysis in one LanceDB tokenizer: what [`Analyzer`] equals word for word.
fn lexical_tokens() -> FtsIndexBuilder {
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

/// Above this many distinct identifiers an [`Analyzer`] forgets the terms it keeps.
const MAX_REMEMBERED_WORDS: usize = 1 << 18;

/// [`lexical_tokens`]' analysis with each distinct identifier analyzed once. LanceDB's code
/// tokenizer is stateless: a token is a run of `_` and alphanumeric characters, and every
/// filter after it (identifier splitting, the length limit, lower-casing, stemming, ASCII
/// folding) works on one token at a time. So a text's terms are its runs' terms in order,
/// and a run's terms are what the whole chain makes of the run alone.
pub(crate) struct Analyzer {
    chain: Box<dyn LanceTokenizer>,
    /// Each identifier seen, with its terms (space-separated; empty when it has none).
    remembered: HashMap<String, String, foldhash::fast::RandomState>,
}

/// A character of a token, as LanceDB's code tokenizer (`lance_tokenizer::code_tokenizer`)
/// reads one.
fn is_identifier_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Analyzer {
    pub(crate) fn new() -> Result<Self, String> {
        let chain = lexical_tokens()
            .build()
            .map_err(|e| format!("the full-text tokenizer: {e}"))?;
        Ok(Analyzer {
            chain,
            remembered: HashMap::default(),
        })
    }

    /// `text`'s terms, space-separated.
    #[cfg(test)]
    fn terms(&mut self, text: &str) -> String {
        let mut terms = String::new();
        self.write_terms(text, &mut terms);
        terms
    }

    /// Writes `text`'s terms, space-separated, to `out`.
    pub(crate) fn write_terms(&mut self, text: &str, out: &mut impl std::fmt::Write) {
        if self.remembered.len() > MAX_REMEMBERED_WORDS {
            self.remembered.clear();
        }
        let mut first = true;
        let mut rest = text;
        while let Some(start) = rest.find(is_identifier_char) {
            let run = &rest[start..];
            let end = run.find(|c| !is_identifier_char(c)).unwrap_or(run.len());
            let (word, after) = run.split_at(end);
            rest = after;
            let word_terms = match self.remembered.get(word) {
                Some(word_terms) => word_terms,
                None => {
                    let mut word_terms = String::new();
                    let mut stream = self.chain.token_stream_for_doc(word);
                    while stream.advance() {
                        if !word_terms.is_empty() {
                            word_terms.push(' ');
                        }
                        word_terms.push_str(&stream.token().text);
                    }
                    self.remembered
                        .entry(word.to_string())
                        .or_insert(word_terms)
                }
            };
            if !word_terms.is_empty() {
                // Writing to a `String` or an Arrow builder cannot fail.
                let _ = out.write_str(if first { "" } else { " " });
                let _ = out.write_str(word_terms);
                first = false;
            }
        }
    }
}

thread_local! {
    /// The analyzer of the thread writing rows, kept with the identifiers it has analyzed: a
    /// cold index writes its rows in batches of 4,096, and each would otherwise analyze
    /// most of the repository's identifiers again.
    static ANALYZER: RefCell<Option<Analyzer>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's [`Analyzer`], made at its first use.
fn with_analyzer<R>(f: impl FnOnce(&mut Analyzer) -> R) -> Result<R, String> {
    ANALYZER.with(|slot| {
        let mut slot = slot.borrow_mut();
        let analyzer = match &mut *slot {
            Some(analyzer) => analyzer,
            None => slot.insert(Analyzer::new()?),
        };
        Ok(f(analyzer))
    })
}

/// The term columns of rows whose texts `rows` gives, field by field in [`LEXICAL_COLUMNS`]'
/// order ([`Analyzer::write_terms`]).
pub(crate) fn term_columns<'a, const N: usize>(
    rows: impl Iterator<Item = [&'a str; N]>,
) -> Result<[ArrayRef; N], String> {
    with_analyzer(|analyzer| {
        let mut columns: [StringBuilder; N] = std::array::from_fn(|_| StringBuilder::new());
        for row in rows {
            for (column, text) in columns.iter_mut().zip(row) {
                analyzer.write_terms(text, column);
                column.append_value("");
            }
        }
        columns.map(|mut column| Arc::new(column.finish()) as ArrayRef)
    })
}

/// A question's terms, space-separated, analyzed as a row's texts are.
pub(crate) fn query_terms(query: &str) -> Result<String, String> {
    with_analyzer(|analyzer| {
        let mut terms = String::new();
        analyzer.write_terms(query, &mut terms);
        terms
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancedb::arrow::arrow_array::{Array, StringArray};

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
            "a::b != c->d; x_1__y ___ _ 3.14e10 0xFFaa 🙂émoji👍 İstanbul ﬁle",
            "snake_case_name SCREAMING_CASE kebab-case-name Mixed_snakeCase99Name",
        ];
        let mut analyzer = Analyzer::new().unwrap();
        for text in texts {
            // Twice: the second time every root is remembered.
            assert_eq!(analyzer.terms(text), lance_terms(text), "{text:?}");
            assert_eq!(analyzer.terms(text), lance_terms(text), "{text:?}");
        }
        let rows: Vec<[&str; 2]> = texts.iter().map(|t| [*t, "parsing getUserName"]).collect();
        let columns = term_columns(rows.iter().copied()).unwrap();
        let column = |i: usize| columns[i].as_any().downcast_ref::<StringArray>().unwrap();
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(column(0).value(i), lance_terms(row[0]));
            assert_eq!(column(1).value(i), lance_terms(row[1]));
        }
    }

    /// Every text file of the repository's fixtures, as real code of every language.
    #[test]
    fn the_analyzer_gives_lances_terms_on_the_fixtures() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut analyzer = Analyzer::new().unwrap();
        let mut files = 0;
        for entry in ignore::WalkBuilder::new(&fixtures).build().flatten() {
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            assert_eq!(
                analyzer.terms(&text),
                lance_terms(&text),
                "{:?}",
                entry.path()
            );
            files += 1;
        }
        assert!(files > 100, "{files} fixture files read");
    }

    /// A question goes through LanceDB's search-side chain when its index tokenizes it.
    #[test]
    fn a_question_is_analyzed_as_lancedb_analyzes_one() {
        let mut tokenizer = lexical_tokens().build().unwrap();
        let question = "How does getUserName parse the users' names? `XMLHttpRequest` i18n_ÄÖ";
        let tokens =
            lance_index::scalar::inverted::query::collect_query_tokens(question, &mut tokenizer);
        let lance: Vec<String> = tokens.into_iter().collect();
        assert_eq!(query_terms(question).unwrap(), lance.join(" "));
    }
}
