//! The scoring formula of blueprint Stage 2 without a reranker, with every parameter in one
//! struct ([`SearchOptions`]) whose doc comments give each constant's reason:
//!
//! `finalScore = (rerankWeight·agreement + vectorWeight·max(calibrated cosine, term coverage))
//!               × prior × (1 + w·fileShare) / (1 + w)`
//!
//! where *agreement* is the channels' reciprocal-rank fusion normalised to 1 for "first in
//! every channel" ([`fusion_relevance`]), *term coverage* the share of the query's stemmed
//! content words the chunk holds ([`term_coverage`]), the *prior* what the chunk is
//! ([`prior`]: tests, asides, comments, types, data) and *fileShare* the file's evidence in
//! the BM25 pool. A constant is kept only if it raises the tuning corpus's test half
//! (`cargo xtask eval --corpus`).

use codectx_parser::SymbolKind;
use std::collections::HashMap;

use codectx_chunker::CodeChunk;
use codectx_embed::VectorCalibration;
use codectx_store::ChunkFilter;

use crate::Project;
use crate::search::Scored;

/// Every parameter of a search; the defaults are the blueprint's.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Weight of the rerank score (or, without a reranker, of the channels' agreement).
    pub rerank_weight: f32,
    /// Weight of the vector similarity.
    pub vector_weight: f32,
    /// The relevance gate (0.0–1.0): an answer whose best result scores under it has no
    /// confident result (see `companion_share` for the others).
    pub minimum_relevance_threshold: f32,
    /// Tokens of source the selected results may take.
    pub max_token_budget: usize,
    /// Stage 1 candidates from the vector channel.
    pub max_vector_candidates: usize,
    /// Stage 1 candidates from the BM25 channel.
    pub max_lexical_candidates: usize,
    /// BM25 hits read to weigh each file's evidence (see `file_evidence_weight`); the best
    /// `max_lexical_candidates` of them, re-scored, are the channel's candidates.
    pub lexical_pool: usize,
    /// File evidence: code that matches the query in a file that matches it as a whole is
    /// likelier the answer than a lone match in an unrelated file. A file's `share` is the
    /// summed BM25 scores of its top-level chunks in the pool, relative to the best file's.
    /// It re-ranks the BM25 channel (score × `1 + w·share`) and, before any reranker, is a
    /// prior on every candidate (× `(1 + w·share) / (1 + w)`: the best file's code keeps
    /// its score, so the relevance gate keeps its meaning). 0 turns it off.
    pub file_evidence_weight: f32,
    /// Paths (files, directories, globs) and languages the results must be in.
    pub filter: ChunkFilter,
    /// Apply the relevance gate (off: rank only, e.g. to evaluate the ranking).
    pub gate: bool,
    /// Once the best result clears `minimum_relevance_threshold`, the others are kept down
    /// to this share of the best result's score (never above the threshold itself): the
    /// threshold says whether the question is answered at all, and how much weaker than the
    /// best a companion may be is relative. 1.0 keeps the threshold for every result.
    pub companion_share: f32,
    /// Without a reranker, how much the vector channel counts beside the lexical and name
    /// channels (1.0: as much as each): its weight in the fusion and the scale of its
    /// calibrated similarity. `None`: the model's own, measured on the tuning corpus (see
    /// `codectx_embed::VectorCalibration`), so a model that lowers quality gets less.
    pub vector_channel_weight: Option<f32>,
    /// Cosine similarity that means "unrelated" (maps to 0). `None`: the model's own.
    pub vector_floor: Option<f32>,
    /// Cosine similarity that means "says the same thing" (maps to 1). `None`: the
    /// model's own.
    pub vector_ceiling: Option<f32>,
    /// An answer stops at the largest drop between neighbouring scores above the gate when
    /// that drop is at least this share of the best score (1.0: never; every result above
    /// the companions' floor is kept).
    pub answer_knee: f32,
    /// Reciprocal-rank-fusion constant: larger flattens the difference between ranks.
    pub fusion_k: f32,
    /// Without a reranker, a chunk in a test file (`*.test.*`, `*.spec.*`, `__tests__/`,
    /// `test/`, `tests/`) or beside the project (benchmarks, examples, fixtures, see
    /// [`is_companion_file`]) scores this fraction, unless the query is about them:
    /// questions about code are usually about the code itself.
    pub test_file_weight: f32,
    /// Without a reranker, an aside — a one-line member (a property, an index or call
    /// signature) or export list — scores this fraction: short rows win BM25 on a single
    /// shared word without being an answer.
    pub aside_weight: f32,
    /// Without a reranker, a chunk that declares a shape rather than behaviour (a type
    /// alias, an interface, a property, or a member of a type or interface) scores this
    /// fraction: types repeat the words of the code that uses them, and a question is more
    /// often about what the code does. They remain found by name and by the vector channel.
    pub type_declaration_weight: f32,
    /// Without a reranker, a standalone comment block (a file's header, a section note)
    /// scores this fraction: it says what the code around it is about, so it wins BM25 on
    /// the query's words, but the answer is the code. High enough that a comment leading
    /// every channel still clears the relevance gate (seed 004's "Worker QPSO training").
    pub comment_weight: f32,
    /// Without a reranker, a constant or variable with no code inside it (a regex, a lookup
    /// table, a default value) scores this fraction: its name and literal repeat the words of
    /// the code that uses it, and a question is more often about that code. A variable
    /// holding functions (a handler built by a factory, an object of methods) has child
    /// chunks and is not data. 1.0 (off) by default: 0.75 was tuned on hono's 89 questions
    /// and lowered the tuning corpus on both halves (test macro Acc@10 / MRR 0.674 / 0.400
    /// at 0.75, 0.682 / 0.416 at 1.0): a variable is often what is asked for.
    pub data_weight: f32,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            rerank_weight: 0.65,
            vector_weight: 0.35,
            minimum_relevance_threshold: 0.45,
            max_token_budget: 8_000,
            max_vector_candidates: 40,
            max_lexical_candidates: 40,
            lexical_pool: 200,
            file_evidence_weight: 0.5,
            filter: ChunkFilter::default(),
            gate: true,
            // Calibrated on the tuning corpus's tuning half without a model (`cargo xtask
            // eval --corpus --split tune`): with 0.5 for every result a third of the targets
            // was delivered; 0.45 with companions down to 0.3 of the best delivers 0.6 for
            // about 5,200 tokens, 9% of answers low-confidence. Above 0.41, the score of a
            // chunk that leads BM25 on one of four words of an unrelated question.
            companion_share: 0.3,
            vector_channel_weight: None,
            vector_floor: None,
            vector_ceiling: None,
            answer_knee: 1.0,
            fusion_k: 20.0,
            test_file_weight: 0.5,
            aside_weight: 0.5,
            type_declaration_weight: 0.5,
            comment_weight: 0.75,
            data_weight: 1.0,
        }
    }
}

impl SearchOptions {
    /// The model's calibration with these options' overrides.
    pub fn calibration(&self, model: VectorCalibration) -> VectorCalibration {
        VectorCalibration {
            floor: self.vector_floor.unwrap_or(model.floor),
            ceiling: self.vector_ceiling.unwrap_or(model.ceiling),
            channel_weight: self.vector_channel_weight.unwrap_or(model.channel_weight),
        }
    }
}

/// `rerankWeight·rerank + vectorWeight·vector` (blueprint Stage 2).
pub fn blend(rerank: f32, vector: f32, options: &SearchOptions) -> f32 {
    options.rerank_weight * rerank + options.vector_weight * vector
}

/// Cosine similarity mapped onto [0, 1] between the model's floor and ceiling.
pub fn calibrated_vector(cosine: f32, calibration: &VectorCalibration) -> f32 {
    let span = (calibration.ceiling - calibration.floor).max(f32::EPSILON);
    ((cosine - calibration.floor) / span).clamp(0.0, 1.0)
}

/// The channels' agreement on a candidate in [0, 1]: Σ w/(k + rank) over the channels that
/// found it, divided by the same sum for a candidate ranked first in every channel that ran.
/// `weights[i]` is channel i's weight, 0 when it did not run. First in one of two equal
/// channels scores about 0.5; found by none, 0.
pub fn fusion_relevance(ranks: &[Option<usize>], weights: &[f32], k: f32) -> f32 {
    let best: f32 = weights.iter().sum::<f32>() / (k + 1.0);
    if best <= 0.0 {
        return 0.0;
    }
    let sum: f32 = ranks
        .iter()
        .zip(weights)
        .filter_map(|(r, w)| r.map(|r| w / (k + r as f32)))
        .sum();
    (sum / best).min(1.0)
}

/// What Stage 2 knows of one candidate (see the module docs).
pub(crate) struct Evidence {
    /// The channels' agreement, [`fusion_relevance`].
    pub agreement: f32,
    /// The calibrated cosine (0 without vectors).
    pub semantic: f32,
    /// [`term_coverage`].
    pub literal: f32,
    /// [`prior`].
    pub prior: f32,
    /// The file's evidence relative to the best file's (0–1).
    pub file_share: f32,
}

/// The final score of a candidate without a reranker. Normalised so that the best file's
/// code keeps its score: the gate means what it means without file evidence.
pub(crate) fn fused_score(e: &Evidence, options: &SearchOptions) -> f32 {
    let mut score = blend(e.agreement, e.semantic.max(e.literal), options);
    score *= e.prior;
    score *=
        (1.0 + options.file_evidence_weight * e.file_share) / (1.0 + options.file_evidence_weight);
    score
}

/// Kinds that declare a shape, not behaviour.
const TYPE_KINDS: &[SymbolKind] = &[SymbolKind::Type, SymbolKind::Interface];

/// Members that are rows of a type or class rather than code.
const ROW_KINDS: &[SymbolKind] = &[
    SymbolKind::Property,
    SymbolKind::IndexSignature,
    SymbolKind::CallSignature,
    SymbolKind::ConstructSignature,
];

/// The weight of what a chunk is, independent of the query (fusion only; a reranker judges
/// each chunk itself).
pub(crate) fn prior(
    project: &Project,
    chunk: &CodeChunk,
    about_tests: bool,
    options: &SearchOptions,
) -> f32 {
    let kind = chunk.node_kind;
    let mut weight = 1.0;
    if !about_tests && is_test_file(&chunk.relative_path) {
        weight *= options.test_file_weight;
    }
    if !about_tests && is_companion_file(&chunk.relative_path) {
        weight *= options.test_file_weight;
    }
    let one_line = chunk.start_line == chunk.end_line;
    let listing =
        ROW_KINDS.contains(&kind) || matches!(kind, SymbolKind::Export | SymbolKind::ReExport);
    if listing && one_line {
        weight *= options.aside_weight;
    }
    if kind == SymbolKind::Comment {
        weight *= options.comment_weight;
    }
    if matches!(kind, SymbolKind::Const | SymbolKind::Variable) && chunk.child_chunk_ids.is_empty()
    {
        weight *= options.data_weight;
    }
    let in_type = || {
        let mut parent = chunk.parent_chunk_id.as_deref();
        while let Some(p) = parent.and_then(|id| project.chunk(&chunk.relative_path, id)) {
            if TYPE_KINDS.contains(&p.node_kind) {
                return true;
            }
            parent = p.parent_chunk_id.as_deref();
        }
        false
    };
    if TYPE_KINDS.contains(&kind) || ROW_KINDS.contains(&kind) || in_type() {
        weight *= options.type_declaration_weight;
    }
    weight
}

/// Code that lives beside a project's own rather than in it: benchmarks, examples,
/// playgrounds, demos and test fixtures, by their directory names. They repeat the
/// library's vocabulary (a router benchmark calls `match` twenty times) without being what
/// a question about the library is about.
pub fn is_companion_file(relative_path: &str) -> bool {
    relative_path.split('/').rev().skip(1).any(|dir| {
        matches!(
            dir,
            "benchmark"
                | "benchmarks"
                | "bench"
                | "example"
                | "examples"
                | "playground"
                | "playgrounds"
                | "demo"
                | "demos"
                | "fixtures"
                | "__fixtures__"
        )
    })
}

/// Test files by the conventions of the JS/TS ecosystem (Jest, Vitest, Mocha, node:test;
/// `*.test-d.ts` are Vitest's type tests).
pub fn is_test_file(relative_path: &str) -> bool {
    let name = relative_path.rsplit('/').next().unwrap_or(relative_path);
    name.contains(".test.")
        || name.contains(".spec.")
        || name.contains(".test-d.")
        || name.contains(".spec-d.")
        || relative_path
            .split('/')
            .any(|dir| matches!(dir, "__tests__" | "test" | "tests" | "__mocks__"))
}

/// A class (or interface, object, namespace) matches every query one of its members
/// matches: its `embeddingText` holds the members' signatures. When a member is a candidate
/// too and scores nearly as well (within [`MEMBER_MARGIN`]), the container drops just below
/// it, so the specific symbol leads and the container follows as context.
const MEMBER_MARGIN: f32 = 0.1;

/// `chunks[i]` is `candidates[i]`'s chunk.
pub(crate) fn prefer_members(chunks: &[&CodeChunk], candidates: &mut [Scored]) {
    let score: HashMap<&str, f32> = candidates
        .iter()
        .map(|c| (c.chunk_id.as_str(), c.final_score))
        .collect();
    let mut lowered: Vec<(usize, f32)> = Vec::new();
    for (i, (c, chunk)) in candidates.iter().zip(chunks).enumerate() {
        let best_member = chunk
            .child_chunk_ids
            .iter()
            .filter_map(|id| score.get(id.as_str()))
            .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        if best_member.is_finite()
            && best_member <= c.final_score
            && c.final_score - best_member <= MEMBER_MARGIN
        {
            lowered.push((i, (best_member - 1e-3).max(0.0)));
        }
    }
    for (i, s) in lowered {
        candidates[i].final_score = s;
    }
}

/// Words that carry no meaning on their own in a code question.
pub(crate) const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "if", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "when",
    "where", "which", "with", "what", "why", "not", "no", "should", "use", "using", "add", "fix",
    "support", "allow", "make", "get", "set", "new",
];

/// Lowercase words of `text`, identifiers split at case changes, `_`, `-`, `.` and `/`.
pub fn code_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    each_code_word(text, |word| {
        words.push(word.to_lowercase());
        true
    });
    words
}

/// Calls `f` with each word of [`code_words`] as written (not lowercased, not copied) until
/// it returns false.
fn each_code_word(text: &str, mut f: impl FnMut(&str) -> bool) {
    for token in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let mut prev: Option<char> = None;
        let mut chars = token.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if let Some(p) = prev {
                let next_lower = chars.peek().is_some_and(|&(_, n)| n.is_lowercase());
                let boundary = (c.is_uppercase() && (p.is_lowercase() || next_lower))
                    || (c.is_ascii_digit() != p.is_ascii_digit());
                if boundary {
                    if !f(&token[start..i]) {
                        return;
                    }
                    start = i;
                }
            }
            prev = Some(c);
        }
        if start < token.len() && !f(&token[start..]) {
            return;
        }
    }
}

/// English Snowball, as the full-text index stems: `loaded` and `load`, `merged` and `merge`
/// meet.
fn snowball() -> rust_stemmers::Stemmer {
    rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
}

/// The query's content words (no stopwords, Snowball-stemmed), sorted, each once: the
/// terms [`term_coverage`] looks for.
pub fn query_terms(query: &str) -> Vec<String> {
    let stemmer = snowball();
    let mut terms: Vec<String> = code_words(query)
        .into_iter()
        .filter(|w| w.len() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .map(|w| stemmer.stem(&w).into_owned())
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// A question's terms beyond this many do not lower its coverage: an issue's text has
/// dozens of content words, and no chunk holds them all. Coverage is then the share of this
/// many, so a long question clears the gate on the same evidence as a short one.
pub const COVERED_TERMS: usize = 8;

/// The share (0–1) of `terms` (from [`query_terms`]; at most [`COVERED_TERMS`] of them
/// count) found among the code-aware words of the chunk's path, name and embedding text:
/// how much of the question the chunk speaks to, whatever its rank.
pub fn term_coverage(terms: &[String], chunk: &CodeChunk) -> f32 {
    if terms.is_empty() {
        return 0.0;
    }
    let found = found_terms(
        terms,
        &[
            chunk.relative_path.as_str(),
            chunk.name.as_str(),
            chunk.embedding_text.as_str(),
        ],
    );
    (found as f32 / terms.len().min(COVERED_TERMS) as f32).min(1.0)
}

/// Whether the chunk itself — its name, its code (callbacks and members included: a hit
/// inside an unnamed callback counts for the function around it), its commit notes, not its
/// file's path — holds one of the question's terms.
pub(crate) fn own_evidence(terms: &[String], chunk: &CodeChunk, notes: Option<&str>) -> bool {
    found_terms(
        terms,
        &[
            chunk.name.as_str(),
            chunk.full_source.as_str(),
            notes.unwrap_or(""),
        ],
    ) > 0
}

/// How many of `terms` occur among the code-aware, stemmed words of `texts`.
fn found_terms(terms: &[String], texts: &[&str]) -> usize {
    let stemmer = snowball();
    let mut found = vec![false; terms.len()];
    let mut left = terms.len();
    for &text in texts {
        each_code_word(text, |word| {
            // Snowball rewrites endings only: a word can become a term only if it begins with
            // the term's first two letters. Most words are dismissed here, unstemmed.
            let shares_prefix = word.len() >= 2
                && terms.iter().any(|t| {
                    word.as_bytes()[..2].eq_ignore_ascii_case(&t.as_bytes()[..2.min(t.len())])
                });
            if shares_prefix {
                let stemmed = stemmer.stem(&word.to_lowercase()).into_owned();
                if let Ok(i) = terms.binary_search(&stemmed)
                    && !found[i]
                {
                    found[i] = true;
                    left -= 1;
                }
            }
            left > 0
        });
        if left == 0 {
            break;
        }
    }
    terms.len() - left
}

/// Kinds a question must ask for before they can be answers: imports, directives
/// (`'use strict'`) and standalone comments say what the code around them is about, so
/// they match a question's words without being what it asks for.
pub(crate) struct AskedKinds {
    imports: bool,
    comments: bool,
    directives: bool,
}

impl AskedKinds {
    /// What `question`'s words ask for.
    pub fn of(question: &str) -> AskedKinds {
        let words = code_words(question);
        let has = |names: &[&str]| words.iter().any(|w| names.contains(&w.as_str()));
        AskedKinds {
            imports: has(&["import", "imports", "imported", "require", "requires"]),
            comments: has(&[
                "comment",
                "comments",
                "license",
                "licence",
                "header",
                "banner",
                "copyright",
            ]),
            directives: has(&["directive", "directives", "strict"]),
        }
    }

    pub fn allows(&self, chunk: &CodeChunk) -> bool {
        match chunk.node_kind {
            SymbolKind::Import => self.imports,
            SymbolKind::Comment => self.comments,
            SymbolKind::Expression if is_directive(chunk) => self.directives,
            _ => true,
        }
    }
}

/// A directive prologue entry (`'use strict'`, `"use client"`): an expression chunk that is
/// one string literal.
fn is_directive(chunk: &CodeChunk) -> bool {
    let source = chunk.full_source.trim().trim_end_matches(';').trim_end();
    let quoted = |q: char| source.len() >= 2 && source.starts_with(q) && source.ends_with(q);
    chunk.start_line == chunk.end_line && (quoted('\'') || quoted('"'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companion_files_are_found_by_their_directories() {
        assert!(is_companion_file("benchmarks/routers/src/bench.mts"));
        assert!(is_companion_file("packages/core/examples/basic.ts"));
        assert!(!is_companion_file("src/router/bench.ts"));
        assert!(!is_companion_file("src/examples.ts"));
    }

    #[test]
    fn directives_comments_and_imports_need_asking_for() {
        let plain = AskedKinds::of("how is a route matched against the request path");
        assert!(!plain.imports && !plain.comments && !plain.directives);
        let asked = AskedKinds::of("which files lack the use strict directive or a license header");
        assert!(asked.directives && asked.comments && !asked.imports);
    }

    #[test]
    fn long_questions_are_covered_on_as_many_terms_as_short_ones() {
        let source =
            "export function saveUserName(user, name) {\n  return store.put(user.id, name);\n}\n";
        let parsed = codectx_parser::parse_source("src/users.ts", source);
        let chunks = codectx_chunker::chunk_file(&parsed, source, "src/users.ts");
        let chunk = &chunks[0];
        let short = query_terms("save a user name");
        let long = query_terms(
            "save a user name: when I click the button nothing happens, the page keeps \
             spinning, the console shows nothing either, and reloading the browser window \
             does not help at all on either machine",
        );
        assert!(long.len() > 2 * COVERED_TERMS, "{long:?}");
        assert_eq!(term_coverage(&short, chunk), 1.0);
        // Three of the long question's terms are the chunk's: three of eight, not of all.
        assert_eq!(term_coverage(&long, chunk), 3.0 / COVERED_TERMS as f32);
    }
}
