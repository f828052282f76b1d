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
//!    learned ranking ([`crate::ranker`]): gradient-boosted trees over each candidate's
//!    [`Features`] (its rank in every channel, how much of the question it holds, its
//!    file's evidence, its structural ties to other candidates, what it is), calibrated to
//!    the probability that it is what the question asks for. That probability is the
//!    score. With vectors, the vector channel's rank and the cosine mapped onto [0, 1]
//!    between `vector_floor` (unrelated) and `vector_ceiling` (a close paraphrase) are
//!    features too.
//! 3. **Selection** (dual constraint): drop what scores under `minimum_relevance_threshold`,
//!    then take the rest best first while their source fits `max_token_budget`.

use codectx_parser::SymbolKind;
use std::collections::{HashMap, HashSet};

use codectx_chunker::{CodeChunk, estimate_tokens};
use codectx_embed::{Embedder, Reranker, cosine};
use codectx_store::{ChunkFilter, LexicalHit, Store};

use crate::query::TextQuery;
use crate::ranker::{Features, KindGroup, QuestionLayout, reciprocal_rank};
use crate::scoring::{
    AskedKinds, COVERED_TERMS, NameWord, QuestionShape, STOPWORDS, SearchOptions, WordRoots, blend,
    calibrated_vector, code_words, coverage_of, holds_a_term, in_type, is_companion_file,
    is_test_file, matched_terms, name_share, own_evidence, prefer_members, query_terms,
};
use crate::{Project, RetrievalError};

/// Which candidate channels a search used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SearchMode {
    /// Vector + lexical + names.
    Hybrid,
    /// No vectors to search (no model, or none embedded yet): lexical + names.
    Lexical,
    /// A `symbol = …` lookup: exact names, nothing ranked.
    Lookup,
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
    /// 1-based rank in the quoted channel: code holding a string the question quotes, or
    /// named by a frame of a stack trace it quotes.
    pub quoted_rank: Option<usize>,
    /// 1-based rank in BM25 for the question's title (see [`Features::title`]).
    #[serde(skip)]
    pub title_rank: Option<usize>,
    pub rerank_score: Option<f32>,
    /// What the learned ranking scored it on.
    #[serde(skip)]
    pub features: Features,
    /// Its only evidence is one word of a question of several: not named, not quoted, not
    /// near in meaning. Such a candidate leading the ranking is not an answer (see
    /// [`select_chunks`]).
    #[serde(skip)]
    pub single_word: bool,
}

/// The ranking of one query, before selection.
#[derive(Debug, Clone)]
pub struct Ranking {
    /// Best first.
    pub scored: Vec<Scored>,
    pub mode: SearchMode,
    /// The question's shape: how far below the best result its answer goes.
    pub shape: QuestionShape,
}

impl Ranking {
    /// What a `symbol = …` lookup ranks: nothing.
    pub fn of_lookup() -> Self {
        Ranking {
            scored: Vec::new(),
            mode: SearchMode::Lookup,
            shape: QuestionShape::Query,
        }
    }
}

/// Dual-constraint selection over `scored` (best first): the relevance gate (when
/// `options.gate`), then the token budget over each result's `cost`. A result that does not
/// fit is skipped and smaller ones after it may still fit. Once the best clears the gate,
/// how far below it the others go depends on the question's `shape`; in a question of a few
/// words, distant companions fill only `companion_tokens` of the budget.
pub fn select<T>(
    scored: Vec<T>,
    score: impl Fn(&T) -> f32,
    cost: impl Fn(&T) -> usize,
    options: &SearchOptions,
    shape: QuestionShape,
) -> Vec<T> {
    let best = scored.iter().map(&score).fold(f32::NEG_INFINITY, f32::max);
    let gate = options.minimum_relevance_threshold;
    let floor = match shape {
        _ if best < gate => gate,
        QuestionShape::Query => gate.min(options.companion_share * best),
        QuestionShape::Prose => gate.max(options.prose_companion_share * best),
    };
    // The answer stops where the scores fall away: after the largest drop between two
    // neighbours above the floor, when it is at least `answer_knee` of the best score.
    let cut = if options.gate && options.answer_knee < 1.0 {
        let above: Vec<f32> = scored.iter().map(&score).filter(|s| *s >= floor).collect();
        knee(&above, best * options.answer_knee)
    } else {
        None
    };
    let close = options.prose_companion_share * best;
    let mut used = 0;
    let mut out = Vec::new();
    for item in scored {
        if options.gate && score(&item) < floor {
            continue;
        }
        if cut.is_some_and(|cut| score(&item) < cut) {
            continue;
        }
        let budget = if options.gate && shape == QuestionShape::Query && score(&item) < close {
            options.companion_tokens.min(options.max_token_budget)
        } else {
            options.max_token_budget
        };
        let c = cost(&item);
        if used + c > budget {
            continue;
        }
        used += c;
        out.push(item);
    }
    out
}

/// The score below which an answer stops: the lower side of the largest drop between
/// neighbours of `scores` (best first), if that drop is at least `min_drop`.
fn knee(scores: &[f32], min_drop: f32) -> Option<f32> {
    let (at, drop) = scores
        .windows(2)
        .enumerate()
        .map(|(i, w)| (i, w[0] - w[1]))
        .fold((0, 0.0_f32), |best, d| if d.1 > best.1 { d } else { best });
    (drop > 0.0 && drop >= min_drop).then(|| scores[at])
}

/// Stages 1 and 2 for `question`: candidates from every channel that can run, scored and
/// sorted best first (not yet gated or budgeted).
pub async fn rank(
    store: &Store,
    project: &Project,
    embedder: Option<&dyn Embedder>,
    reranker: Option<&dyn Reranker>,
    question: &TextQuery,
    options: &SearchOptions,
) -> Result<Ranking, RetrievalError> {
    // A question that names the project ("how does pino redact …") is searched without
    // that name: it says which project, not which code.
    let question = &*question.without_project_name(project.names());
    // The words that carry meaning: the prose without template text, and the functions a
    // quoted stack trace names.
    let mut words = question.prose.clone();
    for frame in &question.frames {
        if let Some(function) = &frame.function {
            words.push('\n');
            words.push_str(function);
        }
    }
    let query = words.as_str();
    // Where a ranking's time goes, for `RUST_LOG=codectx_retrieval=debug`: each stage's
    // end, from the start.
    let started = std::time::Instant::now();
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
    // A question of several lines opens with its title: searched alone as well, its few
    // words are not outweighed by the description's many.
    let title = question.title().map(content_words);
    let title_channel = async {
        match &title {
            Some(title) if options.max_lexical_candidates > 0 => {
                store
                    .search_lexical_hits(title, options.max_lexical_candidates, &options.filter)
                    .await
            }
            _ => Ok(Vec::new()),
        }
    };
    let (vector, lexical, title_hits) =
        futures::join!(vector_channel, lexical_channel, title_channel);
    let title_hits = title_hits?;
    let searched = started.elapsed();
    let calibration = options.calibration(embedder.map(|e| e.calibration()).unwrap_or_default());
    let (query_vector, vector_hits) = vector?;
    let lexical_pool = lexical?;
    let file_share = file_evidence(project, &lexical_pool);
    let lexical_hits = with_file_evidence(project, lexical_pool, &file_share, options);
    let query_terms = query_terms(query);
    let name_hits = name_channel(
        project,
        question,
        query,
        &query_terms,
        &options.filter,
        options.max_lexical_candidates,
    );
    let quoted_hits = quoted_channel(
        project,
        question,
        &options.filter,
        options.max_lexical_candidates,
    );
    let channels = started.elapsed();

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
                quoted_rank: None,
                title_rank: None,
                rerank_score: None,
                features: Features::default(),
                single_word: false,
            });
            candidates.len() - 1
        })
    };
    // The nearest chunks are near even to a query about nothing in the project: a vector
    // hit counts as evidence only above the similarity floor.
    for (rank, hit) in vector_hits.iter().enumerate() {
        let i = slot(&hit.relative_path, &hit.id, &mut candidates);
        // Hits arrive best first: a unit's first hit holds its best rank and similarity.
        let cosine = 1.0 - hit.distance;
        candidates[i].vector_similarity.get_or_insert(cosine);
        if cosine >= calibration.floor {
            candidates[i].vector_rank.get_or_insert(rank + 1);
        }
    }
    // Positive whenever there are hits: BM25 scores are.
    let best_lexical = lexical_hits
        .first()
        .map_or(1.0, |h| h.score.max(f32::MIN_POSITIVE));
    for (rank, hit) in lexical_hits.iter().enumerate() {
        let i = slot(&hit.relative_path, &hit.id, &mut candidates);
        // Hits arrive best first: a unit's first hit holds its best rank and score.
        if candidates[i].lexical_rank.is_none() {
            candidates[i].lexical_rank = Some(rank + 1);
            candidates[i].features.lexical_share = hit.score / best_lexical;
        }
    }
    for (rank, hit) in title_hits.iter().enumerate() {
        let i = slot(&hit.relative_path, &hit.id, &mut candidates);
        candidates[i].title_rank.get_or_insert(rank + 1);
    }
    if title.is_none() {
        // A question of one line is its own title.
        for c in candidates.iter_mut() {
            c.title_rank = c.lexical_rank;
        }
    }
    // Whether a candidate was named: by its own name, or as the top level of a module the
    // question names (not by one word of its path).
    let mut name_level: HashMap<usize, NameLevel> = HashMap::new();
    for (rank, (level, chunk)) in name_hits.iter().enumerate() {
        let i = slot(&chunk.relative_path, &chunk.id, &mut candidates);
        candidates[i].name_rank.get_or_insert(rank + 1);
        let best = name_level.entry(i).or_insert(*level);
        *best = (*best).max(*level);
    }
    for (rank, chunk) in quoted_hits.iter().enumerate() {
        let i = slot(&chunk.relative_path, &chunk.id, &mut candidates);
        candidates[i].quoted_rank.get_or_insert(rank + 1);
    }
    // The BM25 hits' commit notes, by result unit: part of a chunk's own evidence. Of two
    // hits of one unit, the better-ranked one's notes count.
    let mut unit_notes: HashMap<&str, &str> = HashMap::new();
    for hit in lexical_hits.iter().filter(|h| !h.history.is_empty()) {
        unit_notes
            .entry(result_unit(project, &hit.relative_path, &hit.id))
            .or_insert(hit.history.as_str());
    }

    // The blend weighs every candidate's similarity, not only the nearest few's: a chunk
    // the lexical or name channel found is scored on its own stored vector.
    if let Some(q) = query_vector.as_deref().filter(|_| !vector_hits.is_empty()) {
        let missing: Vec<(&str, &str)> = candidates
            .iter()
            .filter(|c| c.vector_similarity.is_none())
            .map(|c| (c.relative_path.as_str(), c.chunk_id.as_str()))
            .collect();
        let vectors = store.vectors(&missing).await?;
        for c in candidates.iter_mut() {
            if let Some(v) = vectors.get(&c.chunk_id) {
                c.vector_similarity = Some(cosine(q, v));
            }
        }
    }

    // Stage 2.
    let asked = AskedKinds::of(query);

    // Each candidate's chunk, resolved once. A candidate enters on its own evidence (see
    // [`own_evidence`]), never because its file matched. Imports, directives and standalone
    // comments are chunks (blueprint root items) but answers only when the question asks
    // for them: the code around them is the answer.
    let (mut candidates, chunks): (Vec<Scored>, Vec<&CodeChunk>) = candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, mut c)| {
            let chunk = project.chunk(&c.relative_path, &c.chunk_id)?;
            if !asked.allows(chunk) {
                return None;
            }
            let level = name_level.get(&i).copied();
            let notes = unit_notes.get(c.chunk_id.as_str()).copied();
            let own = c.vector_rank.is_some()
                || c.quoted_rank.is_some()
                || level.is_some_and(|l| l >= NameLevel::FileName)
                || own_evidence(&query_terms, chunk, notes);
            c.features.name_level = level.map_or(0.0, NameLevel::feature);
            c.features.notes = f32::from(u8::from(
                notes.is_some_and(|n| holds_a_term(&query_terms, n)),
            ));
            c.features.churn = notes.map_or(0.0, |n| {
                (n.split(codectx_store::HISTORY_SEPARATOR).count() as f32).ln_1p()
            });
            own.then_some((c, chunk))
        })
        .unzip();

    // A question about tests, benchmarks or examples gets them at full weight.
    let about_tests = code_words(query).iter().any(|w| {
        matches!(
            w.as_str(),
            "test"
                | "tests"
                | "spec"
                | "specs"
                | "testing"
                | "benchmark"
                | "benchmarks"
                | "bench"
                | "example"
                | "examples"
                | "playground"
                | "demo"
                | "fixture"
                | "fixtures"
        )
    });
    describe(
        project,
        &mut candidates,
        &chunks,
        &Described {
            terms: &query_terms,
            verbs: &question_verbs(query),
            about_tests,
            file_share: &file_share,
            calibration: &calibration,
        },
    );
    // The learned ranking: each candidate's probability of being what the question asks
    // for. The shipped model was trained on the lexical channels (the corpus is scored
    // without a model, as most agents first run it): with vectors, the vector channel adds
    // candidates, and its rank and similarity are features a model trained on embedded
    // runs would read.
    let described = started.elapsed();
    let model = crate::ranker::shipped_model();
    let layout = QuestionLayout::of(question);
    let scores = model.score_all(candidates.iter().map(|c| &c.features), layout);
    for (c, score) in candidates.iter_mut().zip(scores) {
        c.final_score = score;
    }
    prefer_members(&chunks, &mut candidates);
    sort(project, &mut candidates);
    tracing::debug!(
        ?searched,
        ?channels,
        ?described,
        scored = ?started.elapsed(),
        candidates = candidates.len(),
        "ranking stages"
    );

    if let Some(reranker) = reranker {
        rerank(project, reranker, query, &mut candidates, options).await?;
    }
    Ok(Ranking {
        scored: candidates,
        mode,
        shape: QuestionShape::of(query_terms.len()),
    })
}

/// What [`describe`] needs of the question beside each candidate.
struct Described<'a> {
    terms: &'a [String],
    /// The [`NameWord::Verb`]s it writes, which its terms leave out.
    verbs: &'a [&'static str],
    about_tests: bool,
    file_share: &'a HashMap<String, f32>,
    calibration: &'a codectx_embed::VectorCalibration,
}

/// Fills each candidate's [`Features`] (the name level and notes are set where the channels
/// are merged): the one place the learned ranking's input is computed.
fn describe(
    project: &Project,
    candidates: &mut [Scored],
    chunks: &[&CodeChunk],
    question: &Described<'_>,
) {
    // The structural neighbourhood: a candidate that calls, or is called by, another
    // candidate is part of the same concern; how strong that neighbour's own evidence is
    // (its best channel rank) says how much.
    let symbols: Vec<Option<codectx_graph::SymbolRef>> = chunks
        .iter()
        .map(|chunk| project.declaration(chunk))
        .collect();
    let strength = |c: &Scored| {
        [c.lexical_rank, c.name_rank, c.quoted_rank, c.vector_rank]
            .into_iter()
            .map(reciprocal_rank)
            .fold(0.0_f32, f32::max)
    };
    let mut strongest: HashMap<codectx_graph::SymbolRef, f32> = HashMap::new();
    for (c, symbol) in candidates.iter().zip(&symbols) {
        if let Some(symbol) = symbol {
            let s = strongest.entry(*symbol).or_default();
            *s = s.max(strength(c));
        }
    }
    let graph = project.graph();
    for ((c, chunk), symbol) in candidates.iter_mut().zip(chunks).zip(&symbols) {
        let linked = symbol.map_or(0.0, |s| {
            graph
                .callees(s)
                .iter()
                .map(|(callee, _)| *callee)
                .chain(graph.declared_callers(s))
                .filter(|n| *n != s)
                .filter_map(|n| strongest.get(&n).copied())
                .fold(0.0_f32, f32::max)
        });
        // Set only when the vector channel ran.
        let similarity = c
            .vector_similarity
            .map_or(0.0, |cos| calibrated_vector(cos, question.calibration));
        let flag = |b: bool| f32::from(u8::from(b));
        let f = &mut c.features;
        f.lexical = reciprocal_rank(c.lexical_rank);
        f.name = reciprocal_rank(c.name_rank);
        f.quoted = reciprocal_rank(c.quoted_rank);
        f.title = reciprocal_rank(c.title_rank);
        f.vector = reciprocal_rank(c.vector_rank);
        f.similarity = similarity;
        // One scan of the chunk's words for both the coverage and the one-word rule.
        let matched = matched_terms(question.terms, chunk);
        f.coverage = coverage_of(matched, question.terms.len());
        f.question_terms = (question.terms.len() as f32).ln_1p();
        f.file_share = question
            .file_share
            .get(&c.relative_path)
            .copied()
            .unwrap_or(0.0);
        f.linked = linked;
        f.test = flag(!question.about_tests && is_test_file(&chunk.relative_path));
        f.companion = flag(!question.about_tests && is_companion_file(&chunk.relative_path));
        f.lines = ((chunk.end_line - chunk.start_line + 1) as f32).ln_1p();
        f.depth = chunk.depth as f32;
        f.exported = flag(project.is_exported(chunk));
        f.container = flag(!chunk.child_chunk_ids.is_empty());
        f.in_type = flag(in_type(project, chunk));
        let (name_words, share) = name_share(question.terms, question.verbs, chunk);
        f.name_share = share;
        f.name_words = name_words as f32;
        f.kind = KindGroup::of(chunk.node_kind);
        c.single_word = question.terms.len() >= 2
            && matched < 2
            && c.features.name_level < NameLevel::AllWords.feature()
            && c.quoted_rank.is_none()
            && c.vector_rank.is_none();
    }
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
                .map_or_else(String::new, |chunk| chunk.embedding_text.to_string())
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
        if !(chunk.node_kind == SymbolKind::Function && chunk.naming.is_made_up()) {
            return &chunk.id;
        }
        current = chunk
            .parent_chunk_id
            .as_deref()
            .and_then(|parent| project.chunk(path, parent));
    }
    id
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

/// An `f32` score ordered by `total_cmp`, to sort by key. Equality and order both follow
/// `total_cmp`.
struct OrderedScore(f32);

impl PartialEq for OrderedScore {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for OrderedScore {}

impl PartialOrd for OrderedScore {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedScore {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Resolves ranked ids to chunks and applies the dual constraint; `cost` is each chunk's
/// source in tokens. A chunk nested in (or holding) a better-ranked chunk is left out: the
/// file's snapshot already shows it, and the budget would pay for its lines twice.
///
/// With the gate on, a ranking led by a candidate whose only evidence is one word of the
/// question ([`Scored::single_word`]) selects nothing, whatever its score: "when is the
/// next total solar eclipse" shares `total` with `invoiceTotal` and is not about it. The
/// learned ranking cannot tell, as its corpus has no unanswerable questions; on the tuning
/// half this rule costs 0.005–0.017 of delivery, by kind.
pub fn select_chunks<'p>(
    project: &'p Project,
    ranking: &Ranking,
    options: &SearchOptions,
) -> Vec<(&'p CodeChunk, f32)> {
    if options.gate && ranking.scored.first().is_some_and(|s| s.single_word) {
        return Vec::new();
    }
    // The results, each with the copies of its code, left out. A copy of a better-ranked
    // result (a generated mirror of `src/`, as hono's `deno_dist/`) would show the same
    // lines twice, and so would a chunk in it; a chunk around it is other code.
    let mut resolved: Vec<(&CodeChunk, f32, Vec<&CodeChunk>)> = Vec::new();
    let mut copied: Vec<&CodeChunk> = Vec::new();
    let same_file = |a: &CodeChunk, b: &CodeChunk| a.relative_path == b.relative_path;
    let overlaps = |a: &CodeChunk, b: &CodeChunk| {
        same_file(a, b) && a.start_line <= b.end_line && b.start_line <= a.end_line
    };
    let lies_in = |inner: &CodeChunk, outer: &CodeChunk| {
        same_file(inner, outer)
            && outer.start_line <= inner.start_line
            && inner.end_line <= outer.end_line
    };
    for s in &ranking.scored {
        let Some(chunk) = project.chunk(&s.relative_path, &s.chunk_id) else {
            continue;
        };
        // Shown already: it, or a copy of it, holds or lies in a result, or it lies in a
        // result's copy.
        let copies = project.copies_of(chunk);
        let shown_already = resolved.iter().any(|&(r, _, _)| {
            std::iter::once(chunk)
                .chain(copies.iter().copied())
                .any(|c| overlaps(r, c))
        }) || copied.iter().any(|copy| lies_in(chunk, copy));
        if shown_already {
            continue;
        }
        copied.extend(copies.iter().copied());
        resolved.push((chunk, s.final_score, copies));
    }
    let selected = select(
        resolved,
        |(_, score, _)| *score,
        |(chunk, _, _)| estimate_tokens(&chunk.full_source),
        options,
        ranking.shape,
    );
    // A copy of the same name is the same declaration in another place (a mirror of
    // `src/`): the one the project uses stands for it, unless it overlaps another result.
    // A copy of another name is another declaration, and the one ranked first is what the
    // question asked about (`Application.createdTimestamp` among twelve classes' equal
    // getters). Chosen after the budget (copies cost the same), for the few selected.
    selected
        .iter()
        .map(|(chunk, score, copies)| {
            let name = chunk.dotted_name();
            let namesakes: Vec<&CodeChunk> = copies
                .iter()
                .copied()
                .filter(|c| c.dotted_name() == name)
                .collect();
            let kept = most_used(project, chunk, &namesakes);
            let overlaps_another = selected
                .iter()
                .any(|&(other, _, _)| !std::ptr::eq(other, *chunk) && overlaps(other, kept));
            (if overlaps_another { *chunk } else { kept }, *score)
        })
        .collect()
}

/// A lookup's `matches` with one of each code: of copies, the one the project calls most,
/// at the first's place. (Two declarations of one name with the same code, as `src/` and
/// a generated mirror of it hold, are one answer in two places.)
pub(crate) fn one_copy_each<'p>(
    project: &'p Project,
    matches: &[&'p CodeChunk],
) -> Vec<&'p CodeChunk> {
    let mut sources: HashSet<&str> = HashSet::new();
    let mut kept = Vec::new();
    for &chunk in matches {
        if sources.insert(chunk.full_source.as_str()) {
            kept.push(most_used(project, chunk, &project.copies_of(chunk)));
        }
    }
    kept
}

/// Of `chunk` and its `copies`, the one the project uses most: the most callers, then the
/// most imports of its file (the source a generated mirror was made from has the project's
/// tests and callers); `chunk` on a tie.
pub(crate) fn most_used<'p>(
    project: &Project,
    chunk: &'p CodeChunk,
    copies: &[&'p CodeChunk],
) -> &'p CodeChunk {
    let graph = project.graph();
    let callers = |c: &CodeChunk| project.declaration(c).map_or(0, |s| graph.callers(s).len());
    // Counted only to break a tie of callers: it reads every file's imports.
    let importers = |c: &CodeChunk| {
        graph
            .file_index(&c.relative_path)
            .map_or(0, |f| graph.importer_count(f))
    };
    let mut kept = (chunk, callers(chunk), None);
    for &copy in copies {
        let n = callers(copy);
        let better = n > kept.1
            || (n == kept.1 && importers(copy) > *kept.2.get_or_insert_with(|| importers(kept.0)));
        if better {
            kept = (copy, n, None);
        }
    }
    kept.0
}

/// The words of `query` worth searching for, space-separated: identifiers kept whole (the
/// full-text index splits `validateToken` itself and also matches it whole), stopwords and
/// one-letter words dropped.
pub(crate) fn content_words(query: &str) -> String {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| w.len() >= 2 && !STOPWORDS.contains(&w.to_lowercase().as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Kinds the name channel considers: declarations an answer can be about.
const NAMED_KINDS: &[SymbolKind] = &[
    SymbolKind::Function,
    SymbolKind::Method,
    SymbolKind::Constructor,
    SymbolKind::Getter,
    SymbolKind::Setter,
    SymbolKind::Class,
    SymbolKind::Interface,
    SymbolKind::Type,
    SymbolKind::Enum,
    SymbolKind::Component,
    SymbolKind::Variable,
    SymbolKind::Const,
    SymbolKind::Namespace,
    SymbolKind::Module,
    SymbolKind::Struct,
    SymbolKind::Trait,
    SymbolKind::Impl,
    SymbolKind::Macro,
];

/// How a chunk's name meets the query, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum NameLevel {
    /// The query contains the chunk's file name, a single word (`request.js`): the chunk
    /// itself is not named, and one word of the question says little about a file.
    FileWord,
    /// The query contains the chunk's file name of several words (`qpsoWorker.js`): the
    /// question names the module, and its top level is what it is about.
    FileName,
    /// The query holds the chunk's name word by word ([`ChunkName::named_by`]).
    AllWords,
    /// The query writes the chunk's name as an identifier.
    Identifier,
}

impl NameLevel {
    /// The level as the learned ranking reads it: 1 (weakest) to 4.
    fn feature(self) -> f32 {
        match self {
            NameLevel::FileWord => 1.0,
            NameLevel::FileName => 2.0,
            NameLevel::AllWords => 3.0,
            NameLevel::Identifier => 4.0,
        }
    }
}

/// A file's names as [`name_channel`] meets them. They depend on the file alone, and
/// splitting every name of the project into roots was most of a query's time: made once
/// per file ([`crate::ProjectFile`] keeps them).
#[derive(Debug)]
pub(crate) struct FileNames {
    /// The roots ([`word_root`]) of the file name's words, or of its directory's for an
    /// `index` file (`cors/index.ts`).
    file_words: Vec<String>,
    /// One per chunk of the file, in the same order.
    chunks: Vec<ChunkName>,
}

#[derive(Debug)]
struct ChunkName {
    lowercase: String,
    /// How many words its name has (`validateToken`: 2).
    word_count: usize,
    /// The roots of its words without function words (`get`, `to`, `is`, `of`), which are
    /// never among a query's words: `getDaysInMonth` is named by "the days in the month".
    content_words: Vec<String>,
    /// Its [`NameWord::Verb`]s (`set` of `setSeconds`).
    verbs: Vec<String>,
}

impl ChunkName {
    /// Whether the question names it by its words: two or more content words, all among the
    /// question's `terms`, or a verb and one content word that the question writes as a
    /// phrase (`phrases`: "set the seconds" names `setSeconds`). One word alone never names a
    /// declaration.
    fn named_by(&self, terms: impl Fn(&String) -> bool, phrases: &[VerbPhrase]) -> bool {
        match (self.content_words.as_slice(), self.verbs.as_slice()) {
            ([], _) => false,
            ([object], [verb]) => phrases
                .iter()
                .any(|p| p.verb == verb.as_str() && p.object == *object),
            ([_], _) => false,
            (words, _) => words.iter().all(terms),
        }
    }

    /// Whether it has enough words to be [`ChunkName::named_by`] a question.
    fn nameable(&self) -> bool {
        self.content_words.len() >= 2 || (self.content_words.len() == 1 && self.verbs.len() == 1)
    }

    /// Long enough to be an identifier a question writes (`parse`, `getX`), not a word of
    /// its prose (`get`, `run`).
    fn identifier_like(&self) -> bool {
        self.word_count > 1 || self.lowercase.len() >= 4
    }
}

/// A [`NameWord::Verb`] and the word after it in a question, as roots: "sets the
/// seconds" is (`set`, `second`). In a commit's subject the first verb is the change's
/// ("add vector search", not `addVectors`), so only a phrase names a verb's function.
#[derive(Debug, PartialEq)]
struct VerbPhrase {
    verb: &'static str,
    object: String,
}

impl VerbPhrase {
    /// The phrases of `query`'s prose words; identifiers (`useQueries`) are matched whole,
    /// as [`NameLevel::Identifier`], not taken apart here. Articles between are skipped.
    fn all_in(query: &str) -> Vec<VerbPhrase> {
        let mut roots = WordRoots::new();
        let words: Vec<&str> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| {
                !w.is_empty() && !["the", "a", "an"].iter().any(|a| a.eq_ignore_ascii_case(w))
            })
            .collect();
        let prose = |w: &str| w.chars().skip(1).all(|c| c.is_ascii_lowercase());
        words
            .windows(2)
            .filter(|pair| prose(pair[0]) && prose(pair[1]))
            .filter_map(|pair| {
                let Some(NameWord::Verb(verb)) = NameWord::of(&roots.root(pair[0])) else {
                    return None;
                };
                Some(VerbPhrase {
                    verb,
                    object: roots.root(pair[1]),
                })
            })
            .collect()
    }
}

/// The [`NameWord::Verb`]s among `query`'s words, as roots ("adds" is `add`), each once.
fn question_verbs(query: &str) -> Vec<&'static str> {
    let mut roots = WordRoots::new();
    let mut verbs: Vec<&'static str> = code_words(query)
        .iter()
        .filter_map(|w| match NameWord::of(&roots.root(w)) {
            Some(NameWord::Verb(verb)) => Some(verb),
            _ => None,
        })
        .collect();
    verbs.sort_unstable();
    verbs.dedup();
    verbs
}

/// Where [`name_channel`] looks a question's words up, instead of meeting every chunk
/// name of the project (a tenth of a warm answer's time on eslint). Each key holds what a
/// question must contain for the chunk to be named, so the chunks found are all that can be.
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct NameIndex {
    /// Declarations by their lowercase name, when it is [`ChunkName::identifier_like`]:
    /// (file, chunk) positions in [`crate::Project::files`], in order.
    by_identifier: HashMap<String, Vec<(u32, u32)>>,
    /// Declarations [`ChunkName::nameable`] by words, by their first content word.
    by_first_word: HashMap<String, Vec<(u32, u32)>>,
    /// Files by the first root of their name.
    files_by_first_word: HashMap<String, Vec<u32>>,
}

impl NameIndex {
    /// Whether every position names a file of `files` and a chunk of it: an index read
    /// from bytes is checked before use.
    pub(crate) fn fits(&self, files: &[crate::ProjectFile]) -> bool {
        let chunk = |&(f, c): &(u32, u32)| {
            files
                .get(f as usize)
                .is_some_and(|file| (c as usize) < file.chunks.len())
        };
        [&self.by_identifier, &self.by_first_word]
            .iter()
            .all(|lists| lists.values().all(|list| list.iter().all(chunk)))
            && self
                .files_by_first_word
                .values()
                .all(|list| list.iter().all(|&f| (f as usize) < files.len()))
    }

    pub(crate) fn of(files: &[crate::ProjectFile]) -> Self {
        let mut index = NameIndex::default();
        let mut roots = WordRoots::new();
        for (f, file) in files.iter().enumerate() {
            index.add_file(f as u32, file, &mut roots);
        }
        index
    }

    /// The index with the files at `changed` indexed anew: what [`NameIndex::of`] gives
    /// for `files` when no file moved (an edit), at the cost of those files' names alone
    /// instead of every file's (babel: 65 ms for all).
    pub(crate) fn replace_files(&mut self, files: &[crate::ProjectFile], changed: &[u32]) {
        let kept = |f: &u32| !changed.contains(f);
        for lists in [&mut self.by_identifier, &mut self.by_first_word] {
            lists.retain(|_, list| {
                list.retain(|(f, _)| kept(f));
                !list.is_empty()
            });
        }
        self.files_by_first_word.retain(|_, list| {
            list.retain(kept);
            !list.is_empty()
        });
        let mut roots = WordRoots::new();
        for &f in changed {
            self.add_file(f, &files[f as usize], &mut roots);
        }
    }

    /// Indexes the names of `file`, at position `f`, keeping every list in order.
    fn add_file(&mut self, f: u32, file: &crate::ProjectFile, roots: &mut WordRoots) {
        fn insert<T: Ord>(list: &mut Vec<T>, at: T) {
            let i = list.partition_point(|p| *p < at);
            list.insert(i, at);
        }
        // Made for the index and dropped: a question reads the names of the few files it
        // finds (`ProjectFile::names`, kept), not of all.
        let names = FileNames::of(file, roots);
        if let Some(first) = names.file_words.first() {
            insert(
                self.files_by_first_word.entry(first.clone()).or_default(),
                f,
            );
        }
        for (c, (chunk, name)) in file.chunks.iter().zip(&names.chunks).enumerate() {
            if !NAMED_KINDS.contains(&chunk.node_kind) {
                continue;
            }
            let at = (f, c as u32);
            if name.identifier_like() {
                insert(
                    self.by_identifier
                        .entry(name.lowercase.clone())
                        .or_default(),
                    at,
                );
            }
            if name.nameable() {
                insert(
                    self.by_first_word
                        .entry(name.content_words[0].clone())
                        .or_default(),
                    at,
                );
            }
        }
    }
}

impl FileNames {
    pub(crate) fn of(file: &crate::ProjectFile, roots: &mut WordRoots) -> Self {
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
        let chunks = file
            .chunks
            .iter()
            .map(|chunk| {
                let words: Vec<String> = code_words(&chunk.name)
                    .iter()
                    .map(|w| roots.root(w))
                    .collect();
                ChunkName {
                    lowercase: chunk.name.to_lowercase(),
                    word_count: words.len(),
                    verbs: words
                        .iter()
                        .filter(|w| matches!(NameWord::of(w), Some(NameWord::Verb(_))))
                        .cloned()
                        .collect(),
                    content_words: words
                        .into_iter()
                        .filter(|w| NameWord::of(w) == Some(NameWord::Content))
                        .collect(),
                }
            })
            .collect();
        FileNames {
            file_words: code_words(file_name)
                .iter()
                .map(|w| roots.root(w))
                .collect(),
            chunks,
        }
    }
}

/// The chunks whose name the query spells out, best first: an identifier written in the
/// query (`app.fetch`, `FetchEvent`) matching a chunk's name exactly ranks above a name all
/// of whose words appear in the query, which ranks above a file whose name the query
/// contains. Ties go to the shorter chunk (the more specific symbol).
///
/// In a short question every word is deliberate, so any word can be a name; in a `long` one
/// (more than [`COVERED_TERMS`] terms: an issue's prose), only words written as code
/// ([`TextQuery::identifiers`], the functions of quoted stack frames) are, or every common
/// word of the prose would name some function.
fn name_channel<'p>(
    project: &'p Project,
    question: &TextQuery,
    query: &str,
    terms: &[String],
    filter: &ChunkFilter,
    limit: usize,
) -> Vec<(NameLevel, &'p CodeChunk)> {
    let long = terms.len() > COVERED_TERMS;
    let split = |text: &str| -> Vec<String> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .filter(|t| t.len() >= 3)
            .map(str::to_lowercase)
            .collect()
    };
    let mut identifiers: Vec<String> = if !long {
        split(query)
    } else {
        question
            .identifiers
            .iter()
            .map(String::as_str)
            .chain(question.frames.iter().filter_map(|f| f.function.as_deref()))
            .flat_map(split)
            .collect()
    };
    // Every chunk name of the project is looked up in both: sorted, not scanned.
    identifiers.sort_unstable();
    identifiers.dedup();
    let words = |w: &String| terms.binary_search(w).is_ok();
    if terms.is_empty() {
        return Vec::new();
    }
    // In prose, "use" and "get" are everywhere.
    let phrases = if long {
        Vec::new()
    } else {
        VerbPhrase::all_in(query)
    };
    // Only the chunks the index finds by one of the question's words can be named; in the
    // order of the files and their chunks, which breaks the sort's ties below.
    let files = project.files();
    let index = project.name_index();
    let mut named: Vec<(u32, u32)> = Vec::new();
    for identifier in &identifiers {
        named.extend(index.by_identifier.get(identifier).into_iter().flatten());
    }
    for term in terms {
        named.extend(index.by_first_word.get(term).into_iter().flatten());
        for &f in index.files_by_first_word.get(term).into_iter().flatten() {
            let chunks = &files[f as usize].chunks;
            named.extend(
                (0..chunks.len() as u32)
                    .filter(|&c| chunks[c as usize].depth == 0)
                    .map(|c| (f, c)),
            );
        }
    }
    named.sort_unstable();
    named.dedup();
    let mut hits: Vec<(NameLevel, usize, &CodeChunk)> = Vec::new();
    for (f, c) in named {
        let file = &files[f as usize];
        if !filter.matches(&file.relative_path) {
            continue;
        }
        let names = file.names();
        let (chunk, name) = (&file.chunks[c as usize], &names.chunks[c as usize]);
        let file_named = !names.file_words.is_empty() && names.file_words.iter().all(words);
        // The question names the module itself when it spells a file name of several words
        // (`qpsoWorker.js`). Counting the directory's name too (`http/client.ts` for "the
        // http client") was tried: neutral on the doc and change questions' test half, and it
        // lowered the long questions' delivery (0.523 → 0.485), so it is not done.
        let module_named = file_named && names.file_words.len() >= 2;
        if chunk.node_kind == SymbolKind::Import {
            continue;
        }
        // Names are matched on declarations; a file's name speaks for all its top level.
        let declaration = NAMED_KINDS.contains(&chunk.node_kind);
        let level = if declaration
            && identifiers.binary_search(&name.lowercase).is_ok()
            && name.identifier_like()
        {
            Some(NameLevel::Identifier)
        } else if declaration && name.named_by(words, &phrases) {
            Some(NameLevel::AllWords)
        } else if file_named && chunk.depth == 0 {
            Some(if module_named {
                NameLevel::FileName
            } else {
                NameLevel::FileWord
            })
        } else {
            None
        };
        if let Some(level) = level {
            hits.push((level, chunk.full_source.len(), chunk));
        }
    }
    hits.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.cmp(&b.1))
            .then_with(|| a.2.relative_path.cmp(&b.2.relative_path))
            .then(a.2.start_line.cmp(&b.2.start_line))
    });
    hits.into_iter()
        .take(limit)
        .map(|(level, _, c)| (level, c))
        .collect()
}

/// Quoted strings shorter than this are too common to point at code (`"id"`, `'get'`).
const MIN_QUOTED_CHARS: usize = 8;

/// The chunks a question points at by quoting: those whose code holds one of its quoted
/// strings or error messages word for word (case aside), and those a frame of a quoted
/// stack trace names (file by its path's tail, then the innermost declaration holding the
/// line). An issue quoting `Error: cannot fetch user` finds the code that throws it. Frames
/// first, in the trace's order; then literals, innermost chunks only.
fn quoted_channel<'p>(
    project: &'p Project,
    question: &TextQuery,
    filter: &ChunkFilter,
    limit: usize,
) -> Vec<&'p CodeChunk> {
    let mut hits: Vec<&CodeChunk> = Vec::new();
    let push = |chunk: &'p CodeChunk, hits: &mut Vec<&'p CodeChunk>| {
        if !hits.iter().any(|h| std::ptr::eq(*h, chunk)) {
            hits.push(chunk);
        }
    };
    for frame in &question.frames {
        let Some(file) = project.files().iter().find(|f| {
            filter.matches(&f.relative_path) && path_tail_matches(&frame.file, &f.relative_path)
        }) else {
            continue;
        };
        let innermost = |line: u32| {
            file.chunks
                .iter()
                .filter(|c| c.start_line <= line && line <= c.end_line)
                .filter(|c| NAMED_KINDS.contains(&c.node_kind))
                .max_by_key(|c| c.depth)
        };
        let by_line = frame.line.and_then(innermost);
        let by_name = || {
            let name = frame.function.as_deref()?.rsplit('.').next()?;
            file.chunks.iter().find(|c| c.name == name)
        };
        if let Some(chunk) = by_line.or_else(by_name) {
            push(chunk, &mut hits);
        }
    }
    let literals: Vec<String> = question
        .literals
        .iter()
        .filter(|l| l.chars().count() >= MIN_QUOTED_CHARS)
        .map(|l| l.to_lowercase())
        .collect();
    if !literals.is_empty() {
        let finders: Vec<memchr::memmem::Finder> = literals
            .iter()
            .map(|l| memchr::memmem::Finder::new(l.as_bytes()))
            .collect();
        for file in project.files() {
            if !filter.matches(&file.relative_path) {
                continue;
            }
            let holds = |c: &CodeChunk| {
                let source = c.full_source.to_lowercase();
                finders.iter().any(|f| f.find(source.as_bytes()).is_some())
            };
            // Root items cover the file once; a root that holds a string is searched down
            // to the innermost chunk that still holds it.
            for root in file.chunks.iter().filter(|c| c.depth == 0) {
                if matches!(root.node_kind, SymbolKind::Import | SymbolKind::Comment)
                    || !holds(root)
                {
                    continue;
                }
                let mut chunk = root;
                while let Some(child) = chunk
                    .child_chunk_ids
                    .iter()
                    .filter_map(|id| project.chunk(&file.relative_path, id))
                    .find(|c| holds(c))
                {
                    chunk = child;
                }
                push(chunk, &mut hits);
            }
        }
    }
    hits.truncate(limit);
    hits
}

/// Whether a path printed in a stack trace (absolute, or relative to somewhere else) is the
/// project's `relative` path: its last components are `relative`'s.
fn path_tail_matches(printed: &str, relative: &str) -> bool {
    let printed = printed.replace('\\', "/");
    printed == relative
        || printed
            .strip_suffix(relative)
            .is_some_and(|head| head.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_stops_at_its_largest_drop_when_it_is_large_enough() {
        let scores = [0.9, 0.85, 0.8, 0.4, 0.35];
        // The largest drop (0.4) is between the third and the fourth.
        assert_eq!(knee(&scores, 0.2), Some(0.8));
        // A drop smaller than asked for keeps everything.
        assert_eq!(knee(&scores, 0.5), None);
        assert_eq!(knee(&[0.9], 0.0), None);
        assert_eq!(knee(&[0.5, 0.5], 0.0), None);
    }

    #[test]
    fn stack_trace_paths_match_by_their_tail() {
        assert!(path_tail_matches("/home/me/app/src/a.ts", "src/a.ts"));
        assert!(path_tail_matches("src/a.ts", "src/a.ts"));
        assert!(!path_tail_matches("/home/me/app/src/ba.ts", "a.ts"));
        assert!(!path_tail_matches("/home/me/app/lib/a.ts", "src/a.ts"));
    }
}
