//! The full-text index's fields and tokenizer: what the lexical channel searches (`search`)
//! and what upkeep builds (`maintain`) must agree.

use lancedb::index::scalar::FtsIndexBuilder;

/// The columns the lexical channel searches as one BM25F field (Lucene's
/// `CombinedFieldQuery`): the chunk's names (path and qualified name, `searchNames`) and
/// its whole source (`fullSource`, nested functions included, so a word inside a callback
/// still finds the function holding it).
/// With the repository's history on, a third field joins them: the descriptions of the
/// commits that changed the chunk (`history`), the words developers use for its behaviour.
pub(crate) const LEXICAL_COLUMNS: [(&str, f32); 3] = [
    // A name word counts as much as three occurrences in the source: the words that name a
    // declaration say what it is about; the source also mentions everything it touches.
    ("searchNames", 3.0),
    ("fullSource", 1.0),
    // A commit's words describe a change, not always the symbol's purpose, and a symbol
    // collects ten of them: weighed like source words, not like names.
    ("history", 1.0),
];

/// Every column with a full-text index (the lexical channel's fields).
pub(crate) const FULL_TEXT_COLUMNS: [&str; 3] = ["searchNames", "fullSource", "history"];

/// The tokenizer of both full-text indexes (BM25F needs them to tokenize alike): code-aware
/// (`getUserName` → `getusername get user name`), lower-cased and stemmed (`parsing`,
/// `parses` → `pars`), so a question's English meets the code's identifiers.
pub(crate) fn lexical_tokens() -> FtsIndexBuilder {
    FtsIndexBuilder::code().split_identifiers(true).stem(true)
}
