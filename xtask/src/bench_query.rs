//! `cargo xtask bench query`: what an agent waits for on a project — the first answer on a
//! never-indexed repository, local embedding throughput, and warm query latency.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use codectx_retrieval::{Engine, EngineOptions, SearchOptions};
use codectx_store::StoreOptions;

use crate::eval::EmbedderArg;

/// Questions used when no `--queries` file is given: latency barely depends on the words,
/// but they should look like what agents ask.
const DEFAULT_QUERIES: &[&str] = &[
    "where is the configuration file loaded and merged",
    "resolve an import specifier to a file path",
    "how are plugins ordered and called",
    "watch files and reload on change",
    "parse command line arguments",
    "log a warning with colors",
    "handle errors thrown by a plugin hook",
    "cache transformed modules",
    "read environment variables",
    "normalize a path on windows",
    "start the development server",
    "build for production and write the output files",
    "send an HTTP response with headers",
    "compute a hash of the file content",
    "create a websocket connection",
    "dependency pre-bundling optimizer",
    "rewrite import statements in source code",
    "generate a source map",
    "test helper that creates a temporary directory",
    "serialize JSON and escape html",
];

pub struct QueryBench<'a> {
    pub root: &'a Path,
    pub embedder: EmbedderArg,
    pub model_dir: Option<&'a Path>,
    /// Chunks to embed before the warm runs (`None`: all of them).
    pub embed_limit: Option<usize>,
    pub queries: Option<&'a Path>,
    pub runs: usize,
}

pub fn query(bench: QueryBench<'_>) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        println!(
            "warning: debug build; `cargo xtask-release bench query …` gives the real figures"
        );
    }
    let queries = read_queries(bench.queries)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let embedder = crate::eval::load_embedder(bench.embedder, bench.model_dir)?;
        // A never-indexed repository: the index lives in a fresh directory.
        let index = tempfile::tempdir()?;
        let options = EngineOptions {
            embedder: embedder.clone(),
            store: StoreOptions {
                uri: Some(index.path().to_string_lossy().into_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        let search = SearchOptions::default();

        let started = Instant::now();
        let mut engine = Engine::open(bench.root, options.clone()).await?;
        let indexed = started.elapsed().as_secs_f64();
        let first = engine.search(&queries[0], &search, 1).await?;
        println!(
            "first answer on a never-indexed repository: {:.2} s ({:.2} s structural index of {} files, {} chunks; {:?} mode, {} results)",
            started.elapsed().as_secs_f64(),
            indexed,
            engine.project().files().len(),
            engine.project().chunks().count(),
            first.ranking.mode,
            first.answer.results.len(),
        );

        // A second handle, as the MCP server's background embedder uses.
        if let Some(mut filler) = engine.vector_filler().await? {
            let limit = bench.embed_limit.unwrap_or(usize::MAX);
            let (mut embedded, mut pending) = (0, 0);
            let started = Instant::now();
            while embedded < limit {
                let step = filler.step(256.min(limit - embedded)).await?;
                embedded += step.embedded;
                pending = step.pending;
                if step.embedded == 0 || pending == 0 {
                    break;
                }
            }
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "local embedding: {embedded} chunks in {seconds:.1} s = {:.1} chunks/s ({pending} left without a vector)",
                embedded as f64 / seconds.max(1e-9)
            );
        }

        let mut all = Vec::new();
        let mut run_medians = Vec::new();
        let mut mode = None;
        // Queries answered with nothing (every candidate under the relevance gate), last run.
        let mut empty = Vec::new();
        for _ in 0..bench.runs.max(1) {
            let mut run = Vec::with_capacity(queries.len());
            empty.clear();
            for q in &queries {
                let t = Instant::now();
                // `search` syncs first, as every MCP call does.
                let outcome = engine.search(q, &search, 1).await?;
                run.push(t.elapsed().as_secs_f64() * 1e3);
                mode = Some(outcome.ranking.mode);
                if outcome.answer.results.is_empty() {
                    empty.push(q.as_str());
                }
            }
            run.sort_by(f64::total_cmp);
            run_medians.push(run[run.len() / 2]);
            all.extend(run);
        }
        all.sort_by(f64::total_cmp);
        run_medians.sort_by(f64::total_cmp);
        let counts = engine.vector_counts().await?;
        println!(
            "warm query (sync + search), {:?} mode, {} of {} chunks embedded, {} queries x {} runs: p50 {:.1} ms  p95 {:.1} ms  (median of run medians {:.1} ms)",
            mode.unwrap_or(codectx_retrieval::SearchMode::Lexical),
            counts.embedded,
            counts.total,
            queries.len(),
            bench.runs.max(1),
            all[all.len() / 2],
            all[(all.len() * 95 / 100).min(all.len() - 1)],
            run_medians[run_medians.len() / 2],
        );
        println!(
            "empty answers (nothing over the relevance gate): {} of {} queries {:?}",
            empty.len(),
            queries.len(),
            empty
        );
        println!("peak RSS {:.0} MB", crate::bench::peak_rss_mb());
        Ok(())
    })
}

/// One query per line, or JSON lines with a `query` field (a CommitLoc set).
fn read_queries(path: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let Some(path) = path else {
        return Ok(DEFAULT_QUERIES.iter().map(|q| q.to_string()).collect());
    };
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let queries: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l)
                .ok()
                .and_then(|v| v["query"].as_str().map(String::from))
                .unwrap_or_else(|| l.trim().to_string())
        })
        .collect();
    anyhow::ensure!(!queries.is_empty(), "{} holds no query", path.display());
    Ok(queries)
}
