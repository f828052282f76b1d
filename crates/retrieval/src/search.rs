//! The blueprint's three-stage retrieval, minus enrichment (which [`crate::assemble`] does):
//!
//! 1. **Candidates.** Up to `max_vector_candidates` nearest chunks by cosine (when the index
//!    has vectors), up to `max_lexical_candidates` by BM25F over code-aware, stemmed tokens
//!    of each chunk's path, qualified name and source (LanceDB's full-text indexes, see
//!    `Store::search_lexical`), and the chunks whose *name* or *file name* the query spells
//!    out. Path and language filters run inside the LanceDB queries. A hit inside an
//!    unnamed function counts for the named declaration around it ([`result_unit`]).
//! 2. **Scoring.** With a reranker: `finalScore = rerankWeight·rerank + vectorWeight·cosine`
//!    (the blueprint's 0.65 / 0.35). Without one, the reranker's slot is taken by the
//!    channels' *agreement*: a weighted reciprocal-rank fusion normalised so that ranking
//!    first in every channel that ran scores 1.0 (see [`fusion_relevance`]); the vector slot
//!    holds the cosine mapped onto [0, 1] between `vector_floor` (unrelated) and
//!    `vector_ceiling` (a close paraphrase). A candidate must therefore either lead a
//!    channel *and* be semantically close, or be found by several channels, to clear 0.5 —
//!    the same bar a reranker score of about 0.5 sets. The vector slot takes the larger of
//!    that and the share of the query's content words the chunk holds ([`term_coverage`]):
//!    closeness in meaning or in words, whichever says more. Without vectors (no model, or
//!    none embedded yet) only the words remain, so a chunk leading BM25 that holds every
//!    word of the query clears the bar, and one sharing a single word of an unrelated
//!    question does not.
//! 3. **Selection** (dual constraint): drop what scores under `minimum_relevance_threshold`,
//!    then take the rest best first while their source fits `max_token_budget`.

use std::collections::HashMap;

use codectx_chunker::{CodeChunk, estimate_tokens};
use codectx_embed::{Embedder, Reranker, cosine};
use codectx_store::{ChunkFilter, LexicalHit, Store};

use crate::{Project, RetrievalError};

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
    /// Cosine similarity that means "unrelated" for the embedding model (maps to 0).
    pub vector_floor: f32,
    /// Cosine similarity that means "says the same thing" (maps to 1).
    pub vector_ceiling: f32,
    /// Reciprocal-rank-fusion constant: larger flattens the difference between ranks.
    pub fusion_k: f32,
    /// Without a reranker, a chunk in a test file (`*.test.*`, `*.spec.*`, `__tests__/`,
    /// `test/`, `tests/`) scores this fraction, unless the query is about tests: questions
    /// about code are usually about the code under test.
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
            // all-MiniLM-L6-v2: code unrelated to a query sits around 0.0–0.2, a chunk
            // that does what the query says around 0.5–0.7.
            vector_floor: 0.15,
            vector_ceiling: 0.65,
            fusion_k: 20.0,
            test_file_weight: 0.5,
            aside_weight: 0.5,
            type_declaration_weight: 0.5,
            comment_weight: 0.75,
            data_weight: 1.0,
        }
    }
}

/// Which candidate channels a search used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SearchMode {
    /// Vector + lexical + names.
    Hybrid,
    /// No vectors to search (no model, or none embedded yet): lexical + names.
    Lexical,
}

/// One scored candidate, with the evidence its score came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scored {
    pub relative_path: String,
    pub chunk_id: String,
    pub final_score: f32,
    /// Cosine similarity to the query, when the chunk was a vector candidate.
    pub vector_similarity: Option<f32>,
    /// 1-based rank in the vector channel.
    pub vector_rank: Option<usize>,
    /// 1-based rank in the BM25 channel.
    pub lexical_rank: Option<usize>,
    /// 1-based rank in the name channel.
    pub name_rank: Option<usize>,
    pub rerank_score: Option<f32>,
}

/// The ranking of one query, before selection.
#[derive(Debug, Clone)]
pub struct Ranking {
    /// Best first.
    pub scored: Vec<Scored>,
    pub mode: SearchMode,
}

/// `rerankWeight·rerank + vectorWeight·vector` (blueprint Stage 2).
pub fn blend(rerank: f32, vector: f32, options: &SearchOptions) -> f32 {
    options.rerank_weight * rerank + options.vector_weight * vector
}

/// Cosine similarity mapped onto [0, 1] between the options' floor and ceiling.
pub fn calibrated_vector(cosine: f32, options: &SearchOptions) -> f32 {
    let span = (options.vector_ceiling - options.vector_floor).max(f32::EPSILON);
    ((cosine - options.vector_floor) / span).clamp(0.0, 1.0)
}

/// The channels' agreement on a candidate in [0, 1]: Σ 1/(k + rank) over the channels that
/// found it, divided by the same sum for a candidate ranked first in all `channels` that
/// ran. First in one of two channels scores about 0.5; found by none, 0.
pub fn fusion_relevance(ranks: &[Option<usize>], channels: usize, k: f32) -> f32 {
    if channels == 0 {
        return 0.0;
    }
    let sum: f32 = ranks.iter().flatten().map(|&r| 1.0 / (k + r as f32)).sum();
    (sum / (channels as f32 / (k + 1.0))).min(1.0)
}

/// Dual-constraint selection over `scored` (best first): the relevance gate (when
/// `options.gate`), then the token budget over each result's `cost`. A result that does not
/// fit is skipped and smaller ones after it may still fit.
pub fn select<T>(
    scored: Vec<T>,
    score: impl Fn(&T) -> f32,
    cost: impl Fn(&T) -> usize,
    options: &SearchOptions,
) -> Vec<T> {
    let best = scored.iter().map(&score).fold(f32::NEG_INFINITY, f32::max);
    let floor = if best >= options.minimum_relevance_threshold {
        options
            .minimum_relevance_threshold
            .min(options.companion_share * best)
    } else {
        options.minimum_relevance_threshold
    };
    let mut used = 0;
    let mut out = Vec::new();
    for item in scored {
        if options.gate && score(&item) < floor {
            continue;
        }
        let c = cost(&item);
        if used + c > options.max_token_budget {
            continue;
        }
        used += c;
        out.push(item);
    }
    out
}

/// Stages 1 and 2 for `query`: candidates from every channel that can run, scored and
/// sorted best first (not yet gated or budgeted).
pub async fn rank(
    store: &Store,
    project: &Project,
    embedder: Option<&dyn Embedder>,
    reranker: Option<&dyn Reranker>,
    query: &str,
    options: &SearchOptions,
) -> Result<Ranking, RetrievalError> {
    // Stage 1: the channels. The vector channel (the model embeds the query on a blocking
    // thread) and BM25 run concurrently.
    let vector_channel = async {
        let query_vector = match embedder {
            Some(embedder) if store.embedding().is_some() && options.max_vector_candidates > 0 => {
                Some(embedder.embed_query(query).await?)
            }
            _ => None,
        };
        let hits = match &query_vector {
            Some(q) => {
                store
                    .search_vector(q, options.max_vector_candidates, &options.filter)
                    .await?
            }
            None => Vec::new(),
        };
        Ok::<_, RetrievalError>((query_vector, hits))
    };
    // BM25 ORs the query's words: "for", "a", "with" would match every chunk and make
    // noise look like agreement. Only the words that carry meaning are searched.
    let lexical_query = content_words(query);
    let lexical_channel = store.search_lexical_hits(
        &lexical_query,
        // No BM25 candidates wanted (a vector-only search): no pool either.
        if options.max_lexical_candidates == 0 {
            0
        } else {
            options.lexical_pool.max(options.max_lexical_candidates)
        },
        &options.filter,
    );
    let (vector, lexical) = futures::join!(vector_channel, lexical_channel);
    let (query_vector, vector_hits) = vector?;
    let lexical_pool = lexical?;
    let file_share = file_evidence(project, &lexical_pool);
    let lexical_hits = with_file_evidence(project, lexical_pool, &file_share, options);
    let name_hits = name_channel(
        project,
        query,
        &options.filter,
        options.max_lexical_candidates,
    );

    let mode = if vector_hits.is_empty() {
        SearchMode::Lexical
    } else {
        SearchMode::Hybrid
    };
    let mut candidates: Vec<Scored> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    // Each hit counts for its result unit (see [`result_unit`]); several hits of one unit
    // keep the best rank and similarity of each channel.
    let mut slot = |path: &str, id: &str, candidates: &mut Vec<Scored>| -> usize {
        let id = result_unit(project, path, id);
        *index.entry(id.to_string()).or_insert_with(|| {
            candidates.push(Scored {
                relative_path: path.to_string(),
                chunk_id: id.to_string(),
                final_score: 0.0,
                vector_similarity: None,
                vector_rank: None,
                lexical_rank: None,
                name_rank: None,
                rerank_score: None,
            });
            candidates.len() - 1
        })
    };
    // The nearest chunks are near even to a query about nothing in the project: a vector
    // hit counts as evidence only above the similarity floor.
    let mut vector_evidence = false;
    for (rank, (row, distance)) in vector_hits.iter().enumerate() {
        let i = slot(&row.chunk.relative_path, &row.chunk.id, &mut candidates);
        // Hits arrive best first: a unit's first hit holds its best rank and similarity.
        let cosine = 1.0 - distance;
        candidates[i].vector_similarity.get_or_insert(cosine);
        if cosine >= options.vector_floor {
            candidates[i].vector_rank.get_or_insert(rank + 1);
            vector_evidence = true;
        }
    }
    for (rank, hit) in lexical_hits.iter().enumerate() {
        let i = slot(&hit.relative_path, &hit.id, &mut candidates);
        candidates[i].lexical_rank.get_or_insert(rank + 1);
    }
    for (rank, chunk) in name_hits.iter().enumerate() {
        let i = slot(&chunk.relative_path, &chunk.id, &mut candidates);
        candidates[i].name_rank.get_or_insert(rank + 1);
    }

    // The blend weighs every candidate's similarity, not only the nearest few's: a chunk
    // the lexical or name channel found is scored on its own stored vector.
    if let Some(q) = query_vector.as_deref().filter(|_| !vector_hits.is_empty()) {
        let missing: Vec<String> = candidates
            .iter()
            .filter(|c| c.vector_similarity.is_none())
            .map(|c| c.chunk_id.clone())
            .collect();
        let vectors = store.vectors(&missing).await?;
        for c in candidates.iter_mut() {
            if let Some(v) = vectors.get(&c.chunk_id) {
                c.vector_similarity = Some(cosine(q, v));
            }
        }
    }

    // Each candidate's chunk, resolved once. Import statements are chunks (blueprint root
    // items) but never an answer on their own: the code that uses the import is.
    let (mut candidates, chunks): (Vec<Scored>, Vec<&CodeChunk>) = candidates
        .into_iter()
        .filter_map(|c| {
            let chunk = project.chunk(&c.relative_path, &c.chunk_id)?;
            (chunk.node_kind != "import").then_some((c, chunk))
        })
        .unzip();

    // Stage 2.
    let query_terms = query_terms(query);
    let about_tests = code_words(query)
        .iter()
        .any(|w| matches!(w.as_str(), "test" | "tests" | "spec" | "specs" | "testing"));
    // Without vectors there are two witnesses, and the name channel's silence (the query
    // names nothing) is evidence too: a chunk leading BM25 alone then needs the query's
    // words (`term_coverage`) to clear the gate, not just a rank.
    let names_ran =
        !name_hits.is_empty() || (mode == SearchMode::Lexical && !query_terms.is_empty());
    let channels = usize::from(vector_evidence)
        + usize::from(!lexical_hits.is_empty())
        + usize::from(names_ran);
    for (c, chunk) in candidates.iter_mut().zip(&chunks) {
        let agreement = fusion_relevance(
            &[c.vector_rank, c.lexical_rank, c.name_rank],
            channels,
            options.fusion_k,
        );
        // The absolute evidence beside the channels' agreement: how close the chunk is to
        // the question in meaning (calibrated cosine) or in words (the share of its content
        // words the chunk holds), whichever says more. Without vectors, only words.
        let semantic = match (mode, c.vector_similarity) {
            (SearchMode::Hybrid, Some(cos)) => calibrated_vector(cos, options),
            _ => 0.0,
        };
        let literal = term_coverage(&query_terms, chunk);
        c.final_score = blend(agreement, semantic.max(literal), options);
        c.final_score *= prior(project, chunk, about_tests, options);
        // Normalised so that the best file's code keeps its score: the gate still means
        // what it means without file evidence.
        let share = file_share.get(&c.relative_path).copied().unwrap_or(0.0);
        c.final_score *=
            (1.0 + options.file_evidence_weight * share) / (1.0 + options.file_evidence_weight);
    }
    prefer_members(&chunks, &mut candidates);
    sort(project, &mut candidates);

    if let Some(reranker) = reranker {
        rerank(project, reranker, query, &mut candidates, options).await?;
    }
    Ok(Ranking {
        scored: candidates,
        mode,
    })
}

/// Each file's evidence in the BM25 pool relative to the best file's (0–1): the summed
/// scores of its top-level chunks (see [`SearchOptions::file_evidence_weight`]).
fn file_evidence(project: &Project, pool: &[LexicalHit]) -> HashMap<String, f32> {
    let mut evidence: HashMap<String, f32> = HashMap::new();
    for hit in pool {
        if project
            .chunk(&hit.relative_path, &hit.id)
            .is_some_and(|c| c.depth == 0)
        {
            *evidence.entry(hit.relative_path.clone()).or_default() += hit.score;
        }
    }
    let best = evidence.values().copied().fold(0.0_f32, f32::max);
    if best > 0.0 {
        evidence.values_mut().for_each(|e| *e /= best);
    }
    evidence
}

/// The BM25 pool re-scored by file evidence, best first, cut to `max_lexical_candidates`.
fn with_file_evidence(
    project: &Project,
    pool: Vec<LexicalHit>,
    file_share: &HashMap<String, f32>,
    options: &SearchOptions,
) -> Vec<LexicalHit> {
    let mut rescored: Vec<LexicalHit> = pool
        .into_iter()
        .map(|mut hit| {
            let share = file_share.get(&hit.relative_path).copied().unwrap_or(0.0);
            hit.score *= 1.0 + options.file_evidence_weight * share;
            hit
        })
        .collect();
    // Ties by place, not id (see [`sort`]).
    rescored.sort_by_cached_key(|hit| {
        let line = project
            .chunk(&hit.relative_path, &hit.id)
            .map_or(u32::MAX, |c| c.start_line);
        (
            std::cmp::Reverse(OrderedScore(hit.score)),
            hit.relative_path.clone(),
            line,
        )
    });
    rescored.truncate(options.max_lexical_candidates);
    rescored
}

/// Reranks the best `max_vector_candidates` fused candidates; the rest keep their order
/// below them. Candidates the vector channel did not return count a cosine of 0.
async fn rerank(
    project: &Project,
    reranker: &dyn Reranker,
    query: &str,
    candidates: &mut Vec<Scored>,
    options: &SearchOptions,
) -> Result<(), RetrievalError> {
    let n = candidates.len().min(options.max_vector_candidates);
    let documents: Vec<String> = candidates[..n]
        .iter()
        .map(|c| {
            project
                .chunk(&c.relative_path, &c.chunk_id)
                .map_or_else(String::new, |chunk| chunk.embedding_text.clone())
        })
        .collect();
    let scores = reranker.rerank(query, &documents).await?;
    for (c, score) in candidates[..n].iter_mut().zip(scores) {
        c.rerank_score = Some(score);
        c.final_score = blend(score, c.vector_similarity.unwrap_or(0.0), options);
    }
    candidates.truncate(n);
    sort(project, candidates);
    Ok(())
}

/// The result unit a hit counts for: an unnamed function (a callback, an anonymous
/// function) stands for the nearest named declaration around it — the `forEach` callback for
/// the function that loops, the `useEffect` callback for the component. An agent asks about
/// `proxy`, not about `proxy`'s third arrow function, and the named declaration's snapshot
/// shows the callback anyway. A callback with no named declaration around it (a test's
/// `describe` callback at the top level) is its own unit.
fn result_unit<'p>(project: &'p Project, path: &str, id: &'p str) -> &'p str {
    let mut current = project.chunk(path, id);
    while let Some(chunk) = current {
        if !(chunk.node_kind == "function" && codectx_parser::is_unnamed_function(&chunk.name)) {
            return &chunk.id;
        }
        current = chunk
            .parent_chunk_id
            .as_deref()
            .and_then(|parent| project.chunk(path, parent));
    }
    id
}

/// Kinds that declare a shape, not behaviour.
const TYPE_KINDS: &[&str] = &["type", "interface"];

/// Members that are rows of a type or class rather than code.
const ROW_KINDS: &[&str] = &[
    "property",
    "index-signature",
    "call-signature",
    "construct-signature",
];

/// The weight of what a chunk is, independent of the query (fusion only; a reranker judges
/// each chunk itself).
fn prior(project: &Project, chunk: &CodeChunk, about_tests: bool, options: &SearchOptions) -> f32 {
    let kind = chunk.node_kind.as_str();
    let mut weight = 1.0;
    if !about_tests && is_test_file(&chunk.relative_path) {
        weight *= options.test_file_weight;
    }
    let one_line = chunk.start_line == chunk.end_line;
    let listing = ROW_KINDS.contains(&kind) || matches!(kind, "export" | "re-export");
    if listing && one_line {
        weight *= options.aside_weight;
    }
    if kind == "comment" {
        weight *= options.comment_weight;
    }
    if matches!(kind, "const" | "variable") && chunk.child_chunk_ids.is_empty() {
        weight *= options.data_weight;
    }
    let in_type = || {
        let mut parent = chunk.parent_chunk_id.as_deref();
        while let Some(p) = parent.and_then(|id| project.chunk(&chunk.relative_path, id)) {
            if TYPE_KINDS.contains(&p.node_kind.as_str()) {
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
fn prefer_members(chunks: &[&CodeChunk], candidates: &mut [Scored]) {
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

/// Best first. Equal scores are ordered by where the chunks are (path, then lines), never
/// by chunk id: ids hash the absolute path, so two checkouts of the same code would order
/// ties differently.
fn sort(project: &Project, candidates: &mut [Scored]) {
    let place = |c: &Scored| {
        project
            .chunk(&c.relative_path, &c.chunk_id)
            .map_or((u32::MAX, u32::MAX), |chunk| {
                (chunk.start_line, chunk.end_line)
            })
    };
    candidates.sort_by_cached_key(|c| {
        (
            std::cmp::Reverse(OrderedScore(c.final_score)),
            c.relative_path.clone(),
            place(c),
        )
    });
}

/// An `f32` score ordered by `total_cmp`, to sort by key.
#[derive(PartialEq, PartialOrd)]
struct OrderedScore(f32);

impl Eq for OrderedScore {}

impl Ord for OrderedScore {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Resolves ranked ids to chunks and applies the dual constraint; `cost` is each chunk's
/// source in tokens. A chunk nested in (or holding) a better-ranked chunk is left out: the
/// file's snapshot already shows it, and the budget would pay for its lines twice.
pub fn select_chunks<'p>(
    project: &'p Project,
    ranking: &Ranking,
    options: &SearchOptions,
) -> Vec<(&'p CodeChunk, f32)> {
    let mut resolved: Vec<(&CodeChunk, f32)> = Vec::new();
    for s in &ranking.scored {
        let Some(chunk) = project.chunk(&s.relative_path, &s.chunk_id) else {
            continue;
        };
        let overlaps = resolved.iter().any(|(kept, _)| {
            kept.relative_path == chunk.relative_path
                && kept.start_line <= chunk.end_line
                && chunk.start_line <= kept.end_line
        });
        if !overlaps {
            resolved.push((chunk, s.final_score));
        }
    }
    select(
        resolved,
        |(_, score)| *score,
        |(chunk, _)| estimate_tokens(&chunk.full_source),
        options,
    )
}

/// Words that carry no meaning on their own in a code question.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "if", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "when",
    "where", "which", "with", "what", "why", "not", "no", "should", "use", "using", "add", "fix",
    "support", "allow", "make", "get", "set", "new",
];

/// The words of `query` worth searching for, space-separated: identifiers kept whole (the
/// full-text index splits `validateToken` itself and also matches it whole), stopwords and
/// one-letter words dropped.
fn content_words(query: &str) -> String {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| w.len() >= 2 && !STOPWORDS.contains(&w.to_lowercase().as_str()))
        .collect::<Vec<_>>()
        .join(" ")
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

/// The share (0–1) of `terms` (from [`query_terms`]) found among the code-aware words of the
/// chunk's path, name and embedding text: how much of the question the chunk speaks to,
/// whatever its rank.
pub fn term_coverage(terms: &[String], chunk: &CodeChunk) -> f32 {
    if terms.is_empty() {
        return 0.0;
    }
    let stemmer = snowball();
    let mut found = vec![false; terms.len()];
    let mut left = terms.len();
    for text in [
        chunk.relative_path.as_str(),
        chunk.name.as_str(),
        chunk.embedding_text.as_str(),
    ] {
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
    (terms.len() - left) as f32 / terms.len() as f32
}

/// Kinds the name channel considers: declarations an answer can be about.
const NAMED_KINDS: &[&str] = &[
    "function",
    "method",
    "constructor",
    "getter",
    "setter",
    "class",
    "interface",
    "type",
    "enum",
    "component",
    "variable",
    "const",
    "namespace",
    "module",
];

/// A plural's singular, crudely (`strings` → `string`, `queries` → `query`): enough for
/// a query's words to meet identifiers' words. The name channel stems every name of the
/// project on every query, so it takes this cheap rule; [`term_coverage`], which reads a few
/// dozen candidates, can afford Snowball.
fn stem(word: &str) -> String {
    if let Some(base) = word.strip_suffix("ies").filter(|b| b.len() >= 3) {
        return format!("{base}y");
    }
    match word.strip_suffix('s') {
        Some(base) if base.len() >= 3 && !base.ends_with('s') => base.to_string(),
        _ => word.to_string(),
    }
}

/// The chunks whose name the query spells out, best first: an identifier written in the
/// query (`app.fetch`, `FetchEvent`) matching a chunk's name exactly ranks above a name all
/// of whose words appear in the query, which ranks above a file whose name the query
/// contains. Ties go to the shorter chunk (the more specific symbol).
fn name_channel<'p>(
    project: &'p Project,
    query: &str,
    filter: &ChunkFilter,
    limit: usize,
) -> Vec<&'p CodeChunk> {
    let identifiers: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|t| t.len() >= 3)
        .map(str::to_lowercase)
        .collect();
    let words: Vec<String> = code_words(query)
        .into_iter()
        .filter(|w| w.len() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    let mut hits: Vec<(u32, usize, &CodeChunk)> = Vec::new();
    for file in project.files() {
        if !filter.matches(&file.relative_path) {
            continue;
        }
        // A file's own name, or its directory's for an `index` file (`cors/index.ts`).
        let mut segments = file.relative_path.rsplit('/');
        let file_name = segments
            .next()
            .and_then(|n| n.split('.').next())
            .unwrap_or("");
        let file_name = if file_name == "index" {
            segments.next().unwrap_or("")
        } else {
            file_name
        };
        let file_words: Vec<String> = code_words(file_name).iter().map(|w| stem(w)).collect();
        let file_named = !file_words.is_empty() && file_words.iter().all(|w| words.contains(w));
        for chunk in &file.chunks {
            if chunk.node_kind == "import" {
                continue;
            }
            // Names are matched on declarations; a file's name speaks for all its top level.
            let declaration = NAMED_KINDS.contains(&chunk.node_kind.as_str());
            let name = chunk.name.to_lowercase();
            let name_words: Vec<String> = code_words(&chunk.name).iter().map(|w| stem(w)).collect();
            let level = if declaration
                && identifiers.contains(&name)
                && (name_words.len() > 1 || name.len() >= 4)
            {
                3
            } else if declaration
                && name_words.len() >= 2
                && name_words.iter().all(|w| words.contains(w))
            {
                2
            } else if file_named && chunk.depth == 0 {
                1
            } else {
                0
            };
            if level > 0 {
                hits.push((level, chunk.full_source.len(), chunk));
            }
        }
    }
    hits.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then_with(|| a.2.relative_path.cmp(&b.2.relative_path))
            .then(a.2.start_line.cmp(&b.2.start_line))
    });
    hits.into_iter().take(limit).map(|(_, _, c)| c).collect()
}
