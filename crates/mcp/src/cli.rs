//! The subcommands: `serve` hands over to the MCP server; `index`, `status`, `search` and
//! `lookup` run the same engine once and print.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use codectx_embed::Embedder;
use codectx_retrieval::{
    ChunkFilter, CodeChunk, Engine, IndexSummary, Indexer, Project, SymbolKind, SyncEvent,
    symbol_metadata,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::config::{Config, Provider};
use crate::service::Service;
use crate::setup::{Agent, Outcome, SERVER_NAME};
use crate::watch::WatchMode;

#[derive(clap::Args)]
pub struct SearchArgs {
    /// Print results as JSON (one object; with --queries, one line per query).
    #[arg(long)]
    json: bool,
    /// At most this many results.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Only results under these files, directories or globs (repeatable).
    #[arg(long = "path")]
    paths: Vec<String>,
    /// Only results in these languages (typescript, javascript, rust, python, go; repeatable).
    #[arg(long = "language")]
    languages: Vec<String>,
    /// Token budget of the answer (default: search.max_tokens, 8000).
    #[arg(long)]
    budget: Option<usize>,
    /// Keep results under the relevance threshold (rank only).
    #[arg(long)]
    no_gate: bool,
    /// JSON lines of {"id", "query"}: answer each (needs --json); the model loads once.
    #[arg(long, conflicts_with = "query")]
    queries: Option<PathBuf>,
    /// Answer at this git branch, tag or commit (read from git objects, no checkout;
    /// lexical) instead of the working tree (`live`).
    #[arg(long = "ref")]
    git_ref: Option<String>,
    /// A question, or `symbol = …`.
    #[arg(required_unless_present = "queries")]
    query: Option<String>,
}

/// One result as scripts read it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonResult {
    file: String,
    /// Qualified: `Class.method`.
    name: String,
    breadcrumb: String,
    kind: SymbolKind,
    start_line: u32,
    end_line: u32,
    score: f32,
    /// The same code elsewhere, left out of the results (`Project::copies_of`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    copies: Vec<codectx_retrieval::CodeCopy>,
}

pub async fn serve(root: PathBuf, config: Config, watch: WatchMode) -> anyhow::Result<()> {
    let service = Service::start(root, config);
    // The watcher lives as long as the server. One that cannot start (too many directories
    // for the system's watch limit) costs speed, not the server: answers sync first instead.
    let _watcher = crate::watch::start(Arc::clone(&service), watch)
        .inspect_err(|e| {
            tracing::warn!("file watcher unavailable ({e:#}): each answer syncs first instead")
        })
        .ok()
        .flatten();
    let (stdin, stdout) = rmcp::transport::stdio();
    let served = crate::server::serve(Arc::clone(&service), stdin, stdout).await;
    service.shutdown().await;
    served
}

/// The configured embedder, or (with a warning saying why) none: a missing model must not
/// stop structural and lexical search.
async fn embedder(config: &Config) -> Option<Arc<dyn Embedder>> {
    if config.embedding.provider == Provider::None {
        return None;
    }
    let config = config.clone();
    match tokio::task::spawn_blocking(move || config.embedder()).await {
        Ok(Ok(embedder)) => embedder,
        Ok(Err(e)) => {
            eprintln!("warning: no vectors (lexical and structural search only): {e:#}");
            None
        }
        Err(e) => {
            eprintln!("warning: loading the embedding model failed: {e}");
            None
        }
    }
}

/// The engine of the working tree, or of git revision `git_ref` (lexical; its history, the
/// revision's own, is read by a server: see [`codectx_retrieval::open_at_revision`]).
async fn open(
    root: &Path,
    config: &Config,
    with_models: bool,
    git_ref: Option<&str>,
) -> anyhow::Result<Engine> {
    if let Some(name) = codectx_retrieval::asked_revision(git_ref) {
        let revision = codectx_retrieval::resolve_revision(root, name)?;
        eprintln!("answering at {name} ({})", revision.commit);
        let mut options = config.engine_options(None, None);
        // As on a new index of the work tree: the first answer does not wait for history.
        options.store.defer_history = true;
        return Ok(codectx_retrieval::open_at_revision(root, &revision, options).await?);
    }
    let embedder = if with_models {
        embedder(config).await
    } else {
        None
    };
    let reranker = if with_models {
        config.reranker().unwrap_or_else(|e| {
            eprintln!("warning: no reranking: {e:#}");
            None
        })
    } else {
        None
    };
    let mut options = config.engine_options(embedder, reranker);
    // A search on a new index answers from its code; `index` or the server reads the history.
    options.store.defer_history = true;
    Ok(Engine::open(root, options).await?)
}

fn bar(template: &str) -> ProgressBar {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

pub async fn index(root: &Path, config: &Config, embed: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    // A model that is not on this machine yet is fetched first: an index opened without
    // vectors would be rebuilt when it arrives.
    if embed
        && let Some(hub) = config.missing_model()
        && let Err(e) = download_with_bar(&hub).await
    {
        eprintln!("warning: {e:#}; `mcp-server fetch-model` retries");
    }
    let embedder = if embed { embedder(config).await } else { None };
    let parse_bar = bar("parsing   {bar:40} {pos}/{len} files {elapsed}");
    let observer = |event: SyncEvent| match event {
        SyncEvent::Enumerated { to_parse, .. } => parse_bar.set_length(to_parse as u64),
        SyncEvent::Parsed { done, .. } => parse_bar.set_position(done as u64),
        SyncEvent::ChunksWritten => crate::release_freed_memory(),
        _ => {}
    };
    let options = config.engine_options(embedder.clone(), None);
    // Indexing links no project: on a large repository that is most of a no-change run.
    let opening = Instant::now();
    let mut index = Indexer::open(root, &options).await?;
    let opened = opening.elapsed();
    // Files whose content changed and were parsed now (the others kept their rows; skipped
    // files were read but not parsed).
    let sync = index.sync(&observer).await?;
    tracing::debug!(?opened, steps = ?sync.timings, "index opened and synced");
    let (parsed, reused) = (sync.files_parsed, sync.files_shared);
    parse_bar.finish_and_clear();
    let structural = started.elapsed();
    let (embedded, shared) = if embedder.is_some() {
        let embed_bar = bar("embedding {bar:40} {pos}/{len} chunks {elapsed} (eta {eta})");
        let observer = |event: SyncEvent| {
            if let SyncEvent::Embedded { done, total } = event {
                embed_bar.set_length(total as u64);
                embed_bar.set_position(done as u64);
            }
        };
        let stats = index.embed_pending(&observer).await?;
        embed_bar.finish_and_clear();
        (stats.chunks_embedded, stats.vectors_shared)
    } else {
        (0, 0)
    };
    let summarising = Instant::now();
    let summary = index.summary().await?;
    tracing::debug!(elapsed = ?summarising.elapsed(), "summary read");
    let skipped: usize = summary.skipped_files.values().sum();
    // A branch switch back to content kept for a worktree or a recent head (`Store::sync`).
    let revisited = sync.revisited.map_or(String::new(), |version| {
        format!(
            "; started from the index's version {version}, kept for a worktree or a recent head"
        )
    });
    println!(
        "{}: {} files ({} parsed now, {reused} from the repository's shared parses), {} chunks ({} with vectors; {embedded} embedded now, {shared} from the repository's shared vectors), {skipped} skipped; structure {:.1} s, total {:.1} s{revisited}",
        root.display(),
        summary.files - skipped,
        parsed,
        summary.chunks,
        summary.embedded_chunks,
        structural.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Downloads `hub_model` into the user cache with a progress bar, and says where it went.
async fn download_with_bar(hub_model: &str) -> anyhow::Result<()> {
    let download = bar("{msg:24} {bar:40} {bytes}/{total_bytes} {elapsed}");
    let dir = codectx_embed::download_model(hub_model, &mut |p| {
        download.set_message(p.file.to_string());
        download.set_length(p.total.unwrap_or(p.done));
        download.set_position(p.done);
    })
    .await
    .with_context(|| format!("fetching {hub_model}"))?;
    download.finish_and_clear();
    eprintln!("{hub_model} is in {}", dir.display());
    Ok(())
}

/// Downloads the configured in-process model into the user cache, with a progress bar.
pub async fn fetch_model(config: &Config) -> anyhow::Result<()> {
    let Some(hub_model) = config.hub_model() else {
        anyhow::bail!(
            "embedding.provider = \"{}\" runs no model here: nothing to fetch",
            format!("{:?}", config.embedding.provider).to_lowercase()
        );
    };
    if let Ok(dir) = codectx_embed::locate_model(config.embedding.model_dir.as_deref(), hub_model) {
        println!("{hub_model} is already in {}", dir.display());
        return Ok(());
    }
    download_with_bar(hub_model).await
}

/// Registers the server with `agent` and says what changed.
pub fn setup(root: &Path, agent: Agent, global: bool, dry_run: bool) -> anyhow::Result<()> {
    let launcher = crate::setup::Launcher::of_this_process()?;
    let (path, outcome) = crate::setup::setup(agent, root, global, &launcher, dry_run)?;
    match outcome {
        Outcome::Unchanged => println!(
            "{}: {SERVER_NAME} is already set up; nothing changed",
            path.display()
        ),
        Outcome::Written { backup } => {
            println!(
                "{}: {SERVER_NAME} registered ({launcher} serve)",
                path.display()
            );
            if let Some(backup) = backup {
                println!("the previous file is in {}", backup.display());
            }
        }
        Outcome::WouldWrite { diff } => {
            println!(
                "{} would change (--dry-run: nothing written):",
                path.display()
            );
            print!("{diff}");
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct Status {
    root: String,
    #[serde(flatten)]
    index: IndexSummary,
}

/// What the index holds, without syncing it.
pub async fn status(root: &Path, config: &Config, json: bool) -> anyhow::Result<()> {
    let index = IndexSummary::read(root, config.store_options()).await?;
    let status = Status {
        root: root.display().to_string(),
        index,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
    } else {
        let index = &status.index;
        println!(
            "index {}\n{} files, {} chunks, {} with vectors ({})",
            index.index,
            index.files,
            index.chunks,
            index.embedded_chunks,
            index
                .embedding_model
                .as_deref()
                .unwrap_or("no embedding model")
        );
        println!("history {}", index.history);
        if index.recovered_files > 0 {
            println!(
                "{} files have syntax errors: indexed what the parser recovered",
                index.recovered_files
            );
        }
        if !index.skipped_files.is_empty() {
            let reasons: Vec<String> = index
                .skipped_files
                .iter()
                .map(|(reason, n)| format!("{n} {}", reason.as_str()))
                .collect();
            println!(
                "skipped {} files: {}",
                index.skipped_files.values().sum::<usize>(),
                reasons.join(", ")
            );
        }
        if index.files == 0 {
            println!(
                "nothing indexed yet: run `mcp-server index --root {}`",
                root.display()
            );
        }
    }
    Ok(())
}

#[derive(Deserialize)]
struct QueryLine {
    id: serde_json::Value,
    query: String,
}

pub async fn search(root: &Path, config: &Config, args: SearchArgs) -> anyhow::Result<()> {
    let mut engine = open(root, config, true, args.git_ref.as_deref()).await?;
    let counts = engine.vector_counts().await?;
    if engine.has_embedder() && counts.embedded < counts.total {
        eprintln!(
            "note: {} of {} chunks have vectors; run `mcp-server index` for full vector search",
            counts.embedded, counts.total
        );
    }
    if matches!(engine.history(), codectx_retrieval::HistoryStatus::Pending) {
        eprintln!("note: the history is not read yet; `mcp-server index` reads it");
    }
    let mut options = config.search_options();
    options.filter = ChunkFilter {
        paths: args.paths.clone(),
        languages: args.languages.clone(),
    };
    options.gate = !args.no_gate;
    if let Some(budget) = args.budget {
        options.max_token_budget = budget;
    }
    let depth = config.search.call_depth;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Some(file) = &args.queries {
        anyhow::ensure!(args.json, "--queries answers in JSON lines: add --json");
        let reader = std::io::BufReader::new(
            std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?,
        );
        for (n, line) in reader.lines().enumerate() {
            let line = line.with_context(|| format!("reading {}", file.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let q: QueryLine = serde_json::from_str(&line).with_context(|| {
                format!(
                    "{} line {}: expected {{\"id\", \"query\"}}",
                    file.display(),
                    n + 1
                )
            })?;
            let ranking = engine.rank(&q.query, &options).await?;
            let selected = engine.select_ranked(&q.query, &ranking, &options)?;
            let results = json_results(engine.project(), selected, args.limit);
            serde_json::to_writer(
                &mut out,
                &serde_json::json!({ "id": q.id, "results": results }),
            )?;
            writeln!(out)?;
        }
        out.flush()?;
        engine.save_project_image();
        leave(engine);
        return Ok(());
    }
    let query = args.query.as_deref().unwrap_or_default();
    // `open` has just synced: the answer is made on the index as it is, not after a second
    // walk of the tree (on babel, 130 ms).
    let (answer, ranking) = engine.answer(query, &options, depth).await?;
    if args.json {
        // The answer's ranking: the query is not ranked a second time.
        let selected = engine.select_ranked(query, &ranking, &options)?;
        let results = json_results(engine.project(), selected, args.limit);
        let value = serde_json::json!({
            "query": query,
            "mode": ranking.mode,
            "results": results,
            // Nothing cleared the gate: the closest candidates the answer lists instead.
            "lowConfidence": answer.low_confidence,
            "candidates": answer.low_confidence.then_some(&answer.results),
            "message": answer.message,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        for item in &answer.content {
            writeln!(out, "{}\n", item.text)?;
        }
        if let Some(message) = &answer.message {
            writeln!(out, "{message}")?;
        }
    }
    out.flush()?;
    // After the answer: the next search reads the project instead of linking it.
    engine.save_project_image();
    leave(engine);
    Ok(())
}

/// Ends a one-shot command's use of its engine without freeing it. The process exits next,
/// and the system takes its memory back at once, while freeing a large project's chunks
/// and graph one by one costs more than the answer did (about 80 ms on babel). Nothing is
/// lost: a search or lookup has finished its sync, the one write it makes, before it
/// answers, and the index lock is released when the process ends.
fn leave(engine: Engine) {
    std::mem::forget(engine);
}

/// The first `limit` of the selected chunks of a query (a lookup's matches, or the gated,
/// budgeted ranking), as JSON results.
fn json_results(
    project: &Project,
    selected: Vec<(&CodeChunk, f32)>,
    limit: usize,
) -> Vec<JsonResult> {
    selected
        .into_iter()
        .take(limit)
        .map(|(chunk, score)| JsonResult {
            copies: project
                .copies_of(chunk)
                .into_iter()
                .take(codectx_retrieval::LISTED_COPIES)
                .map(codectx_retrieval::CodeCopy::of)
                .collect(),
            file: chunk.relative_path.clone(),
            name: chunk.dotted_name(),
            breadcrumb: chunk.breadcrumb.clone(),
            kind: chunk.node_kind,
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            score,
        })
        .collect()
}

pub async fn lookup(
    root: &Path,
    config: &Config,
    query: &str,
    call_depth: i32,
    json: bool,
    git_ref: Option<&str>,
) -> anyhow::Result<()> {
    // A bare name (`symbolize`, `Router > match`) or a whole `symbol = …` query.
    let parsed = codectx_retrieval::Query::lookup_of(query)?;
    let mut engine = open(root, config, false, git_ref).await?;
    let project: &Project = engine.project();
    let found = codectx_retrieval::lookup(project, &parsed);
    if found.matches.is_empty() {
        let hint = if found.closest.is_empty() {
            String::new()
        } else {
            format!(" Closest names: {}.", found.closest.join(", "))
        };
        engine.save_project_image();
        anyhow::bail!(
            "symbol_not_found: no symbol matches {:?}.{hint}",
            parsed.name
        );
    }
    let metadata: Vec<_> = found
        .matches
        .iter()
        .map(|c| symbol_metadata(project, c, call_depth))
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&metadata)?);
    } else {
        let ranked: Vec<_> = found.matches.iter().map(|&c| (c, 1.0)).collect();
        let answer = codectx_retrieval::assemble(
            project,
            query,
            &ranked,
            &codectx_retrieval::AnswerOptions {
                budget: config.search.max_tokens,
                call_depth,
            },
        );
        for item in &answer.content {
            println!("{}\n", item.text);
        }
    }
    engine.save_project_image();
    leave(engine);
    Ok(())
}
