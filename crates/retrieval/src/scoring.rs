//! Every parameter of a search in one struct ([`SearchOptions`]), whose doc comments give
//! each constant's reason, and the word-level evidence the learned ranking
//! ([`crate::ranker`]) reads: a question's terms ([`query_terms`]), how much of them a chunk
//! holds ([`term_coverage`]), whether it has evidence of its own ([`own_evidence`]), and what
//! kinds a question must ask for ([`AskedKinds`]). A constant is kept only if it raises the
//! tuning corpus's test half (`cargo xtask eval --corpus --changes`).

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
    /// With a reranker, the weight of its score (blueprint Stage 2)…
    pub rerank_weight: f32,
    /// …and of the vector similarity.
    pub vector_weight: f32,
    /// The relevance gate (0.0–1.0): an answer whose best result scores under it has no
    /// confident result (see `companion_share` for the others). Without a reranker a
    /// score is the learned ranking's probability that the candidate is what the question
    /// asks for.
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
    /// For a question of prose ([`QuestionShape::Prose`]), the others are kept down to this
    /// share of the best result's score, and never under the threshold. In a question of a
    /// few words, companions this close to the best take the whole budget; weaker ones
    /// only `companion_tokens`.
    pub prose_companion_share: f32,
    /// In a question of a few words, the tokens of source that companions weaker than
    /// `prose_companion_share` of the best may fill (within `max_token_budget`): the
    /// distant companions a wide candidate pool brings in would otherwise fill the budget.
    pub companion_tokens: usize,
    /// Cosine similarity that means "unrelated" (maps to 0). `None`: the model's own.
    pub vector_floor: Option<f32>,
    /// Cosine similarity that means "says the same thing" (maps to 1). `None`: the
    /// model's own.
    pub vector_ceiling: Option<f32>,
    /// An answer stops at the largest drop between neighbouring scores above the gate when
    /// that drop is at least this share of the best score (1.0: never; every result above
    /// the companions' floor is kept).
    pub answer_knee: f32,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            rerank_weight: 0.65,
            vector_weight: 0.35,
            minimum_relevance_threshold: 0.04,
            max_token_budget: 8_000,
            max_vector_candidates: 40,
            // The change questions' targets were among 40 BM25 candidates in 0.59 of the
            // tuning half's questions, among 100 in 0.69 (long: 0.82 → 0.90); the learned
            // ranking, unchanged, lifts them into the top 10 (tuning half: change any@10
            // 0.562 → 0.624, long 0.789 → 0.824, doc equal). 200 helped change further and
            // long less, and cost another quarter of the ranking's time.
            max_lexical_candidates: 100,
            lexical_pool: 200,
            file_evidence_weight: 0.5,
            filter: ChunkFilter::default(),
            gate: true,
            // Both chosen on the tuning half with the learned ranking (`cargo xtask eval
            // --corpus --changes --split tune --min-relevance T --companion-share S`): a best
            // candidate under a 4% chance of being the target is not an answer (3% of doc,
            // 29% of change questions there); companions down to 0.1 of the best deliver
            // the doc questions' targets as often as the hand formula's answers did (0.720
            // against 0.722) in a third of their tokens (median 2,148 against 6,038); 0.05
            // delivers 0.756 for 3,578. A gap (`answer_knee`) cut delivery by a third on
            // every kind, so it stays off.
            companion_share: 0.1,
            // Chosen on the tuning half by replaying the rule on the eval's run files: an
            // issue-shaped question's answer at 0.3 of the best had a median of about 2,000
            // tokens instead of 4,900 and precision 0.50 instead of 0.29, and delivered its
            // target in 0.68 of questions instead of 0.79; a question of a few words
            // loses a quarter of its delivery by the same rule, so it keeps `companion_share`.
            // With the ranking retrained on roots (166360d) answers at 0.3 grew to a median
            // of about 3,000 tokens; 0.4 is the first share of 0.30, 0.33, 0.36, 0.40 whose
            // replay, scaled by the replay's own error at 0.3, stays under 2,500 (about
            // 2,390), for 0.009 of delivery.
            prose_companion_share: 0.4,
            // With 100 BM25 candidates, change answers grew to a median of about 3,100
            // tokens (tuning half). The answer size, 2,500, is the distant
            // companions' share; replayed on the tuning half's run files it brings change
            // answers back to about 2,400 tokens for 0.02 of their delivery.
            companion_tokens: 2_500,
            vector_floor: None,
            vector_ceiling: None,
            answer_knee: 1.0,
        }
    }
}

impl SearchOptions {
    /// The model's calibration with these options' overrides.
    pub fn calibration(&self, model: VectorCalibration) -> VectorCalibration {
        VectorCalibration {
            floor: self.vector_floor.unwrap_or(model.floor),
            ceiling: self.vector_ceiling.unwrap_or(model.ceiling),
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

/// Kinds that declare a shape, not behaviour.
const TYPE_KINDS: &[SymbolKind] = &[SymbolKind::Type, SymbolKind::Interface];

/// Whether `chunk` lies inside a type alias or an interface.
pub(crate) fn in_type(project: &Project, chunk: &CodeChunk) -> bool {
    let mut parent = chunk.parent_chunk_id.as_deref();
    while let Some(p) = parent.and_then(|id| project.chunk(&chunk.relative_path, id)) {
        if TYPE_KINDS.contains(&p.node_kind) {
            return true;
        }
        parent = p.parent_chunk_id.as_deref();
    }
    false
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
/// `*.test-d.ts` are Vitest's type tests), Go (`*_test.go`), Python (pytest's `test_*.py`,
/// `*_test.py`, `conftest.py`) and Rust (`tests/`).
pub fn is_test_file(relative_path: &str) -> bool {
    let name = relative_path.rsplit('/').next().unwrap_or(relative_path);
    name.contains(".test.")
        || name.contains(".spec.")
        || name.contains(".test-d.")
        || name.contains(".spec-d.")
        // Go's and Python's conventions.
        || name.ends_with("_test.go")
        || (name.ends_with(".py")
            && (name.starts_with("test_") || name.ends_with("_test.py") || name == "conftest.py"))
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

/// The [`STOPWORDS`] that begin code names as verbs (`getUser`, `setSeconds`, `addRoute`,
/// `useQuery`): without them such a name is one word, too few to be named by, so a
/// question must write the verb too ("set the seconds") for [`crate::search`]'s name
/// channel to meet it.
pub(crate) const NAME_VERBS: &[&str] = &["get", "set", "add", "use", "make", "new"];

/// What a word of a code name (a root) is to a question: the one rule the name channel's
/// names and [`name_share`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameWord {
    /// A word a question's terms can hold (`second` of `setSeconds`).
    Content,
    /// One of [`NAME_VERBS`], which a question's terms leave out.
    Verb(&'static str),
}

impl NameWord {
    /// `None` for a function word (`to`, `is`), which no question's terms hold.
    pub(crate) fn of(root: &str) -> Option<NameWord> {
        if let Some(verb) = NAME_VERBS.iter().copied().find(|v| *v == root) {
            Some(NameWord::Verb(verb))
        } else if root.len() >= 2 && !STOPWORDS.contains(&root) {
            Some(NameWord::Content)
        } else {
            None
        }
    }
}

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
    // Code is almost always ASCII, and bytes are read faster than decoded characters: text
    // with a few other characters (a comment's `é`) is split at them first.
    if text.is_ascii() {
        each_ascii_code_word(text, f);
        return;
    }
    for token in text.split(|c: char| !c.is_alphanumeric()) {
        let go_on = if token.is_ascii() {
            each_ascii_code_word(token, &mut f)
        } else {
            each_char_code_word(token, &mut f)
        };
        if !go_on {
            return;
        }
    }
}

/// [`each_code_word`] over any text, character by character; false when `f` stopped it.
fn each_char_code_word(text: &str, mut f: impl FnMut(&str) -> bool) -> bool {
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
                        return false;
                    }
                    start = i;
                }
            }
            prev = Some(c);
        }
        if start < token.len() && !f(&token[start..]) {
            return false;
        }
    }
    true
}

/// [`each_code_word`] over ASCII text, in one pass over its bytes: the same words; false
/// when `f` stopped it.
fn each_ascii_code_word(text: &str, mut f: impl FnMut(&str) -> bool) -> bool {
    let bytes = text.as_bytes();
    // Where the current word starts, inside a run of letters and digits.
    let mut start: Option<usize> = None;
    for (i, &c) in bytes.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if let Some(s) = start.take()
                && !f(&text[s..i])
            {
                return false;
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let p = bytes[i - 1];
        let next_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        let boundary = (c.is_ascii_uppercase() && (p.is_ascii_lowercase() || next_lower))
            || (c.is_ascii_digit() != p.is_ascii_digit());
        if boundary {
            if !f(&text[s..i]) {
                return false;
            }
            start = Some(i);
        }
    }
    match start {
        Some(s) => f(&text[s..]),
        None => true,
    }
}

/// English Snowball, as the full-text index stems (`loaded` and `load`, `merged` and `merge`
/// meet): what [`word_root`] starts from.
pub(crate) fn root_stemmer() -> rust_stemmers::Stemmer {
    rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
}

/// Endings Snowball leaves that make a word of a verb or a noun: the agent (`router`,
/// `editor`) and `-ition` (`composition`, which Snowball makes `composit` where `compose`
/// is `compos`). A question says "composition" or "the router" where the code says
/// `compose` and `route`.
const AGENT_ENDINGS: &[&str] = &["er", "or", "it"];

/// A word's root: its Snowball stem without an [`AGENT_ENDINGS`] ending, when at least four
/// letters stay (`router` → `rout`, as `routing` and `route` are; `user` stays), and a
/// doubled last letter undoubled (`wrapper` → `wrap`). Every channel that meets a question's
/// words with code's words compares roots, so they agree on what a match is.
pub(crate) fn word_root(stemmer: &rust_stemmers::Stemmer, word: &str) -> String {
    let stem = stemmer.stem(word);
    for ending in AGENT_ENDINGS {
        if let Some(base) = stem.strip_suffix(ending)
            && base.chars().count() >= 4
        {
            // Only an ASCII letter is undoubled: two equal bytes may end one wider character.
            let bytes = base.as_bytes();
            let last = bytes[bytes.len() - 1];
            let doubled = last == bytes[bytes.len() - 2]
                && last.is_ascii_alphabetic()
                && !matches!(last, b'l' | b's' | b'z' | b'e' | b'o');
            return base[..base.len() - usize::from(doubled)].to_string();
        }
    }
    stem.into_owned()
}

/// [`word_root`], keeping the roots already made: a project's names repeat their words, and
/// stemming was most of splitting all of them (on babel, most of a first question's 80 ms).
pub(crate) struct WordRoots {
    stemmer: rust_stemmers::Stemmer,
    /// By the word as given, which is lower-cased before it is stemmed.
    known: foldhash::HashMap<String, String>,
}

/// Above this many, the roots a [`WordRoots`] keeps are forgotten: a project's words are a
/// few tens of thousands, so only a server thread that met many projects' words gets there.
const KEPT_ROOTS: usize = 1 << 17;

impl WordRoots {
    pub(crate) fn new() -> Self {
        WordRoots {
            stemmer: root_stemmer(),
            known: foldhash::HashMap::default(),
        }
    }

    pub(crate) fn root(&mut self, word: &str) -> String {
        self.with_root(word, str::to_string)
    }

    /// `look` applied to the root of `word` ([`word_root`] of it in lower case), stemmed
    /// only the first time `word` is met.
    pub(crate) fn with_root<R>(&mut self, word: &str, look: impl FnOnce(&str) -> R) -> R {
        if let Some(root) = self.known.get(word) {
            return look(root);
        }
        if self.known.len() >= KEPT_ROOTS {
            self.known.clear();
        }
        let root = word_root(&self.stemmer, &word.to_lowercase());
        let found = look(&root);
        self.known.insert(word.to_string(), root);
        found
    }
}

thread_local! {
    /// The roots of the code words [`found_terms`] has met on this thread, by the word as
    /// written. Answers scan the same code words again and again, and stemming them was a
    /// tenth of a warm answer's time on vite.
    static MET_ROOTS: std::cell::RefCell<WordRoots> = std::cell::RefCell::new(WordRoots::new());
}

/// The query's content words (no stopwords, as roots: `word_root`), sorted, each once:
/// the terms [`term_coverage`] looks for.
pub fn query_terms(query: &str) -> Vec<String> {
    let stemmer = root_stemmer();
    let mut terms: Vec<String> = code_words(query)
        .into_iter()
        .filter(|w| w.len() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .map(|w| word_root(&stemmer, &w))
        .collect();
    terms.sort();
    terms.dedup();
    terms
}

/// A question's terms beyond this many do not lower its coverage: an issue's text has
/// dozens of content words, and no chunk holds them all. Coverage is then the share of this
/// many, so a long question clears the gate on the same evidence as a short one.
pub const COVERED_TERMS: usize = 8;

/// A question of more terms than this is prose (an issue, a pull request's description),
/// not a query: on the corpus, nine in ten doc-comment and commit questions have at most 10
/// terms, nine in ten pull-request descriptions at least 24.
pub const PROSE_TERMS: usize = 2 * COVERED_TERMS;

/// What shape a question has, which decides how far below its best result an answer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuestionShape {
    /// A few words: any of its candidates may be the one it asks for.
    #[default]
    Query,
    /// More than [`PROSE_TERMS`] terms: its many words lend some evidence to many
    /// candidates, so a companion must come closer to the best (`prose_companion_share`).
    Prose,
}

impl QuestionShape {
    /// The shape of a question of `terms` terms (from [`query_terms`]).
    pub fn of(terms: usize) -> Self {
        if terms > PROSE_TERMS {
            QuestionShape::Prose
        } else {
            QuestionShape::Query
        }
    }
}

/// The share (0–1) of `terms` (from [`query_terms`]; at most `COVERED_TERMS` of them
/// count) found among the code-aware words of the chunk's path, name and embedding text:
/// how much of the question the chunk speaks to, whatever its rank.
pub fn term_coverage(terms: &[String], chunk: &CodeChunk) -> f32 {
    coverage_of(matched_terms(terms, chunk), terms.len())
}

/// [`term_coverage`] from a count [`matched_terms`] already made.
pub(crate) fn coverage_of(matched: usize, terms: usize) -> f32 {
    if terms == 0 {
        return 0.0;
    }
    (matched as f32 / terms.min(COVERED_TERMS) as f32).min(1.0)
}

/// How many of `terms` the chunk's path, name and embedding text hold, counted up to
/// [`COVERED_TERMS`] (or 2, for the one-word rule): what [`coverage_of`] and the one-word
/// rule read, so a long question's scan stops there.
pub(crate) fn matched_terms(terms: &[String], chunk: &CodeChunk) -> usize {
    found_terms(
        terms,
        &[
            chunk.relative_path.as_str(),
            chunk.name.as_str(),
            chunk.embedding_text.as_str(),
        ],
        COVERED_TERMS.max(2),
    )
}

/// How many content words (roots, [`STOPWORDS`] aside) the chunk's name has, and the share
/// of them among `terms`: [`crate::ranker::Features::name_share`]. A name of verbs alone
/// (`Cart.add`, `app.use`) counts its [`NAME_VERBS`] instead, held when the question's
/// `verbs` hold them. Verbs beside content words are left out: a commit's subject opens with
/// its own verb ("add vector search"), which is not `addVectors`'s.
pub(crate) fn name_share(terms: &[String], verbs: &[&str], chunk: &CodeChunk) -> (u32, f32) {
    let (mut words, mut found) = (0_u32, 0_u32);
    let (mut name_verbs, mut found_verbs) = (0_u32, 0_u32);
    each_code_word(&chunk.name, |word| {
        MET_ROOTS.with_borrow_mut(|roots| {
            roots.with_root(word, |root| match NameWord::of(root) {
                Some(NameWord::Verb(verb)) => {
                    name_verbs += 1;
                    found_verbs += u32::from(verbs.contains(&verb));
                }
                Some(NameWord::Content) => {
                    words += 1;
                    found += u32::from(terms.binary_search_by(|t| t.as_str().cmp(root)).is_ok());
                }
                None => {}
            })
        });
        true
    });
    if words == 0 {
        (words, found) = (name_verbs, found_verbs);
    }
    let share = if words == 0 {
        0.0
    } else {
        found as f32 / words as f32
    };
    (words, share)
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
        1,
    ) > 0
}

/// Whether `text` (a chunk's commit notes) holds one of the question's terms.
pub(crate) fn holds_a_term(terms: &[String], text: &str) -> bool {
    found_terms(terms, &[text], 1) > 0
}

/// How many of `terms` occur among the code-aware words of `texts`, as roots, counting up
/// to `enough`: the scan stops there (a chunk's whole code is scanned only when it holds
/// fewer).
fn found_terms(terms: &[String], texts: &[&str], enough: usize) -> usize {
    let mut found = vec![false; terms.len()];
    // Scanning stops when this many more are found.
    let mut left = enough.min(terms.len());
    // Snowball rewrites endings only: a word can become a term only if it begins with the
    // term's first two letters. Most words are dismissed here, unstemmed, by a lookup of
    // their first two letters (ASCII case folded) among the terms'.
    let first_two = |b: &[u8]| u16::from_le_bytes([b[0], b[1]].map(|c| c.to_ascii_lowercase()));
    let mut prefixes: Vec<u16> = terms
        .iter()
        .filter(|t| t.len() >= 2)
        .map(|t| first_two(t.as_bytes()))
        .collect();
    prefixes.sort_unstable();
    prefixes.dedup();
    for &text in texts {
        each_code_word(text, |word| {
            let shares_prefix =
                word.len() >= 2 && prefixes.binary_search(&first_two(word.as_bytes())).is_ok();
            if shares_prefix
                && let Ok(i) = MET_ROOTS.with_borrow_mut(|roots| {
                    roots.with_root(word, |root| {
                        terms.binary_search_by(|t| t.as_str().cmp(root))
                    })
                })
                && !found[i]
            {
                found[i] = true;
                left -= 1;
            }
            left > 0
        });
        if left == 0 {
            break;
        }
    }
    found.iter().filter(|&&f| f).count()
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
    fn test_files_are_known_by_each_language_convention() {
        for path in [
            "src/a.test.ts",
            "src/__tests__/a.ts",
            "tree_test.go",
            "pkg/test_auth.py",
            "pkg/auth_test.py",
            "conftest.py",
            "tests/integration.rs",
        ] {
            assert!(is_test_file(path), "{path}");
        }
        for path in [
            "src/a.ts",
            "tree.go",
            "pkg/testing_utils.py",
            "src/lib.rs",
            "latest.go",
        ] {
            assert!(!is_test_file(path), "{path}");
        }
    }

    #[test]
    fn code_words_are_found_by_their_roots_whether_met_before_or_not() {
        let terms = query_terms("routing of cached requests");
        let code = "class Router { cacheRequest(req) { return ROUTES.get(req) } }";
        let count = || found_terms(&terms, &[code], terms.len());
        // Met for the first time (stemmed), then again (kept), then after the kept roots
        // were forgotten.
        assert_eq!(count(), 3, "{terms:?}");
        assert_eq!(count(), 3);
        MET_ROOTS.with_borrow_mut(|roots| {
            assert_eq!(roots.known.get("Router").map(String::as_str), Some("rout"));
            roots.known.clear();
        });
        assert_eq!(count(), 3);
        assert_eq!(found_terms(&terms, &["class Cache {}"], 8), 1);
    }

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

    /// A word splitter as the tests call them.
    type Splitter = fn(&str, &mut dyn FnMut(&str) -> bool);

    #[test]
    fn ascii_text_splits_into_the_same_words_byte_by_byte() {
        let words = |each: Splitter, text: &str| {
            let mut out = Vec::new();
            each(text, &mut |w| {
                out.push(w.to_string());
                true
            });
            out
        };
        let by_char: Splitter = |t, f| {
            each_char_code_word(t, f);
        };
        let by_byte: Splitter = |t, f| {
            each_ascii_code_word(t, f);
        };
        let dispatched: Splitter = |t, f| each_code_word(t, f);
        for text in [
            "// naïveParser café_au ÉcoleNormale xmlHTTPRequest — v2Beta",
            "getÜberValue(x) ① 中文Name",
        ] {
            assert_eq!(words(dispatched, text), words(by_char, text), "{text:?}");
        }
        for text in [
            "",
            "validateToken(HTTPServer2, utf8ToString) // parse_JSON x",
            "XMLHttpRequest getURLForV2 a1b2 __proto__ $el ABC",
            "  trailing space and. punctuation!? IOError",
            "x",
            "aB",
        ] {
            assert_eq!(words(by_byte, text), words(by_char, text), "{text:?}");
            assert_eq!(words(dispatched, text), words(by_char, text), "{text:?}");
        }
        assert_eq!(
            code_words("getURLForV2 HTTPServer"),
            ["get", "url", "for", "v", "2", "http", "server"]
        );
        // Stopping early stops both.
        let mut seen = Vec::new();
        each_ascii_code_word("one two three", |w| {
            seen.push(w.to_string());
            seen.len() < 2
        });
        assert_eq!(seen, ["one", "two"]);
    }

    #[test]
    fn a_noun_meets_the_verb_it_is_made_of() {
        let stemmer = root_stemmer();
        let root = |w: &str| word_root(&stemmer, w);
        for (a, b) in [
            ("composition", "compose"),
            ("router", "routing"),
            ("parser", "parse"),
            ("wrapper", "wrap"),
            ("editor", "edit"),
            ("handlers", "handle"),
            ("caller", "call"),
        ] {
            assert_eq!(root(a), root(b), "{a} / {b}");
        }
        // Too short a base keeps its ending: `user` is not `us`.
        assert_eq!(root("user"), "user");
        assert_ne!(root("order"), root("ord"));
        // `䤤` is the bytes E4 A4 A4: its last two are equal, and it is not cut.
        assert_eq!(root("abc䤤er"), "abc䤤");
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
