//! The MCP tools. Each waits for the structural index (sending progress notifications when
//! the client asked for them), syncs, answers, and reports the index state both in
//! `structuredContent.metadata` and in a last line of its text.

use std::sync::Arc;

use anyhow::Context;
use codectx_retrieval::{Answer, CodeContext, Engine, NavigationError, RetrievalError, SearchMode};
use codectx_retrieval::{ChunkFilter, RevisionError, StoreError};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Annotations, CallToolResult, ContentBlock, ProgressNotificationParam, RequestMetaObject, Role,
    TextContent,
};
use rmcp::{ErrorData, Peer, RoleServer, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::service::{
    EmbeddingState, EngineFuture, Freshness, IndexState, IndexingStatus, Service,
};

/// The tools' enum parameters, with JSON schemas (the library types carry none).
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Ancestors,
    Descendants,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    File,
    #[default]
    Module,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    #[default]
    Breadth,
    Depth,
}

impl From<Direction> for codectx_retrieval::Direction {
    fn from(d: Direction) -> Self {
        match d {
            Direction::Ancestors => Self::Ancestors,
            Direction::Descendants => Self::Descendants,
        }
    }
}

impl From<Scope> for codectx_retrieval::RelatedScope {
    fn from(s: Scope) -> Self {
        match s {
            Scope::File => Self::File,
            Scope::Module => Self::Module,
        }
    }
}

impl From<Strategy> for codectx_retrieval::Strategy {
    fn from(s: Strategy) -> Self {
        match s {
            Strategy::Breadth => Self::Breadth,
            Strategy::Depth => Self::Depth,
        }
    }
}

/// `codebase_search`'s input: the blueprint's `CodebaseSearchInput`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// A natural-language question about the code, or a symbol lookup:
    /// `symbol = validateToken`, `symbol = TokenService > validateToken`,
    /// `symbol = src/auth/tokenService.ts > TokenService > validateToken`.
    pub query: String,
    /// Only results under these files, directories or globs (e.g. `src/auth/`, `*.ts`).
    #[serde(default)]
    pub path: Vec<String>,
    /// Only results in these languages: `typescript`, `javascript`, `rust`, `python`, `go`.
    #[serde(default)]
    pub languages: Vec<String>,
    #[serde(flatten)]
    pub at: AtRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct HierarchyParams {
    /// The symbol: `validate`, `AuthHandler > validate` or `AuthHandler.validate`.
    pub symbol_name: String,
    /// Scope the symbol to this file (relative to the project root).
    pub path: Option<String>,
    /// `ancestors` (the symbol up to its outermost container, default) or `descendants`
    /// (the symbol and everything declared inside it).
    #[serde(default)]
    pub direction: Direction,
    #[serde(flatten)]
    pub at: AtRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RelatedParams {
    /// The symbol: `validate`, `AuthHandler > validate` or `AuthHandler.validate`.
    pub symbol_name: String,
    /// Scope the symbol to this file (relative to the project root).
    pub path: Option<String>,
    /// `file` (top-level symbols of the same file) or `module` (then the same directory,
    /// then import-connected files; default).
    #[serde(default)]
    pub scope: Scope,
    /// At most this many results (default 20), same file first.
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub at: AtRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextParams {
    /// A natural-language question or a `symbol = …` lookup.
    pub query: String,
    /// Token budget of the whole answer (default 4000).
    pub max_tokens: Option<usize>,
    /// `breadth` (signatures of many symbols, default) or `depth` (full bodies of fewer).
    #[serde(default)]
    pub strategy: Strategy,
    /// Only symbols under these files, directories or globs.
    #[serde(default)]
    pub path: Vec<String>,
    #[serde(flatten)]
    pub at: AtRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileParams {
    /// A file relative to the project root (e.g. `src/auth/token.ts`).
    pub path: String,
    #[serde(flatten)]
    pub at: AtRef,
}

/// The `ref` every tool takes (seed 002 FR-212).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct AtRef {
    /// A git branch, tag or commit to answer at, read from git objects without a checkout
    /// (default: the working tree, `live`).
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
}

/// What an answer is about: the work tree as it is, or a git revision (seed 002's `ref`).
#[derive(Debug, Clone)]
enum Answered {
    /// The work tree (`ref: "live"`), as fresh as the sync before the answer.
    Live(Freshness),
    /// A git revision: the name asked, and the commit it resolved to (none when it did not).
    Revision {
        name: String,
        commit: Option<String>,
    },
}

impl Answered {
    fn of(git_ref: Option<&str>) -> Self {
        match git_ref {
            Some(name) => Self::Revision {
                name: name.to_string(),
                commit: None,
            },
            None => Self::Live(Freshness::Fresh),
        }
    }
}

/// The MCP tools over one [`Service`]: an rmcp server handler.
#[derive(Clone)]
pub struct CodeContextServer {
    service: Arc<Service>,
    tool_router: ToolRouter<Self>,
}

/// Serves the tools over a pair of byte streams (stdin and stdout for the binary; a socket or
/// an in-memory pipe for a library user), one JSON-RPC message per line, until the client
/// closes its side. A malformed line gets a JSON-RPC error and the session goes on.
pub async fn serve<R, W>(service: Arc<Service>, reader: R, writer: W) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let session = CodeContextServer::new(service)
        .serve((reader, writer))
        .await
        .context("starting the MCP session")?;
    session.waiting().await.context("serving MCP")?;
    Ok(())
}

impl CodeContextServer {
    /// The tools, answering from `service`'s engine.
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            tool_router: Self::tool_router(),
        }
    }

    /// Runs `f` on the engine of the work tree (no `ref`: see [`Self::call_live`])
    /// or of a git revision; any failure becomes a coded tool error.
    async fn call<T: Send>(
        &self,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
        at: AtRef,
        f: impl for<'e> FnOnce(&'e mut Engine) -> EngineFuture<'e, T> + Send,
    ) -> Result<(T, Answered), CallToolResult> {
        let Some(name) = codectx_retrieval::asked_revision(at.git_ref.as_deref()) else {
            return self.call_live(meta, peer, f).await;
        };
        match self.service.with_revision(name, f).await {
            Ok((value, revision)) => Ok((
                value,
                Answered::Revision {
                    name: revision.name,
                    commit: Some(revision.commit),
                },
            )),
            Err(e) => Err(self.error(error_code(&e), &e.to_string(), &Answered::of(Some(name)))),
        }
    }

    /// Waits for the work tree's index (with progress notifications), syncs, and runs `f`.
    /// While the model downloads, a request with a progress token is told how far the
    /// download is.
    async fn call_live<T: Send>(
        &self,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
        f: impl for<'e> FnOnce(&'e mut Engine) -> EngineFuture<'e, T> + Send,
    ) -> Result<(T, Answered), CallToolResult> {
        let token = meta.get_progress_token();
        let waited = self
            .service
            .ready(|state: &IndexState| {
                let (done, total) = state.progress;
                let notify = token.clone().map(|token| {
                    let peer = peer.clone();
                    async move {
                        let _ = peer
                            .notify_progress(
                                ProgressNotificationParam::new(token, done as f64)
                                    .with_total(total.max(done) as f64)
                                    .with_message(format!(
                                        "indexing: {done} of {total} files parsed"
                                    )),
                            )
                            .await;
                    }
                });
                Box::pin(async move {
                    if let Some(notify) = notify {
                        notify.await;
                    }
                })
            })
            .await;
        if let (Some(token), EmbeddingState::Fetching(fetch)) =
            (token, self.service.state().embedding)
        {
            // The model downloads in the background and this answer will not wait for it:
            // one notification says how far it is.
            let _ = peer
                .notify_progress(
                    ProgressNotificationParam::new(token, fetch.done_bytes as f64)
                        .with_total(fetch.total_bytes.unwrap_or(fetch.done_bytes) as f64)
                        .with_message(format!(
                            "fetching {fetch}: this answer is lexical, later ones hybrid"
                        )),
                )
                .await;
        }
        if let Err(reason) = waited {
            return Err(self.error(
                "index_failed",
                &format!("The project could not be indexed: {reason}"),
                &Answered::of(None),
            ));
        }
        match self.service.with_engine(f).await {
            Ok((value, freshness)) => Ok((value, Answered::Live(freshness))),
            Err(e) => Err(self.error(error_code(&e), &e.to_string(), &Answered::of(None))),
        }
    }

    /// [`Self::call`] for a navigation function: synchronous, on the project, failing with
    /// a [`NavigationError`] that becomes a coded tool error.
    async fn navigate<T: Send + 'static>(
        &self,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
        at: AtRef,
        f: impl FnOnce(&Engine) -> Result<T, NavigationError> + Send,
    ) -> Result<(T, Answered), CallToolResult> {
        let (found, answered) = self
            .call(
                meta,
                peer,
                at,
                move |engine: &mut Engine| -> EngineFuture<'_, _> {
                    let found = f(engine);
                    Box::pin(std::future::ready(Ok(found)))
                },
            )
            .await?;
        match found {
            Ok(value) => Ok((value, answered)),
            Err(e) => Err(self.error(e.code.as_str(), &e.message, &answered)),
        }
    }

    /// The index state as `metadata` (seed 002's Protocol v1 fields) and as a text line.
    fn metadata(&self, answered: &Answered, completeness: &str) -> (serde_json::Value, String) {
        let freshness = match answered {
            Answered::Live(freshness) => freshness,
            Answered::Revision { name, commit } => {
                return revision_metadata(name, commit.as_deref(), completeness);
            }
        };
        let state = self.service.state();
        let (freshness_status, stale_reason) = match freshness {
            Freshness::Fresh => ("fresh", None),
            Freshness::Stale(reason) => ("stale", Some(reason.clone())),
        };
        let indexing = match state.indexing_status {
            IndexingStatus::NotIndexed => "not_indexed",
            IndexingStatus::Indexing => "indexing",
            IndexingStatus::Ready => "ready",
            IndexingStatus::Failed => "failed",
        };
        let vectors = match &state.embedding {
            EmbeddingState::Disabled => "no embedding model".to_string(),
            EmbeddingState::Unavailable(_) => "embedding model unavailable".to_string(),
            EmbeddingState::Fetching(fetch) => {
                format!("fetching {fetch}: lexical until it lands")
            }
            _ => format!(
                "{} of {} chunks embedded",
                state.embedded_chunks, state.chunks
            ),
        };
        let line = format!(
            "[index: {indexing} · {freshness_status}{} · {completeness} · {} files, {} chunks, {vectors}{}]",
            stale_reason
                .as_deref()
                .map_or(String::new(), |r| format!(" ({r})")),
            state.files,
            state.chunks,
            if state.skipped_files > 0 {
                format!(" · {} files skipped", state.skipped_files)
            } else {
                String::new()
            }
        );
        let value = json!({
            "codecompass_protocol_version": "1",
            "indexing_status": indexing,
            "freshness_status": freshness_status,
            "stale_reason": stale_reason,
            "result_completeness": completeness,
            "ref": "live",
            "index": state,
        });
        (value, line)
    }

    /// Complete unless vectors are missing for a configured model (the vector channel saw
    /// only part of the code). A revision is searched lexically, all of it.
    fn search_completeness(&self, answered: &Answered, truncated: bool) -> &'static str {
        let state = self.service.state();
        if truncated {
            "truncated"
        } else if matches!(answered, Answered::Revision { .. }) {
            "complete"
        } else if matches!(
            state.embedding,
            EmbeddingState::Unavailable(_) | EmbeddingState::Fetching(_)
        ) || (!matches!(state.embedding, EmbeddingState::Disabled)
            && state.embedded_chunks < state.chunks)
        {
            "partial"
        } else {
            "complete"
        }
    }

    fn error(&self, code: &str, message: &str, answered: &Answered) -> CallToolResult {
        let (metadata, line) = self.metadata(answered, "complete");
        let mut result = CallToolResult::structured_error(json!({
            "error": { "code": code, "message": message },
            "metadata": metadata,
        }));
        result.content = vec![ContentBlock::text(format!("{code}: {message}\n{line}"))];
        result
    }

    /// A one-item answer: `text` plus the state line, and `value` with the metadata.
    fn answer(
        &self,
        text: String,
        mut value: serde_json::Value,
        answered: &Answered,
        completeness: &str,
    ) -> CallToolResult {
        let (metadata, line) = self.metadata(answered, completeness);
        value["metadata"] = metadata;
        let mut result = CallToolResult::structured(value);
        result.content = vec![assistant_text(format!("{text}\n{line}"), None)];
        result
    }
}

/// The tool error code of a failed query (on the work tree or at a ref).
fn error_code(e: &RetrievalError) -> &'static str {
    match e {
        RetrievalError::Revision(RevisionError::Unknown(_) | RevisionError::NotARepository) => {
            "ref_not_found"
        }
        RetrievalError::Index(StoreError::Filter(_)) => "invalid_argument",
        RetrievalError::OutsideRoot(_) => "path_outside_root",
        RetrievalError::EmptyLookup(_) | RetrievalError::RevisionNeedsLocalIndex => {
            "invalid_argument"
        }
        RetrievalError::Embed(_) => "embedding_failed",
        _ => "index_error",
    }
}

/// A revision's `metadata` and text line: its files never change, so it is always fresh
/// and ready; `commit` is `None` when the name did not resolve.
fn revision_metadata(
    name: &str,
    commit: Option<&str>,
    completeness: &str,
) -> (serde_json::Value, String) {
    let short = commit.map_or("unresolved", |c| &c[..c.len().min(12)]);
    let value = json!({
        "codecompass_protocol_version": "1",
        "indexing_status": if commit.is_some() { "ready" } else { "not_indexed" },
        "freshness_status": "fresh",
        "stale_reason": null,
        "result_completeness": completeness,
        "ref": name,
        "commit": commit,
    });
    let line = format!("[ref: {name} ({short}) · {completeness} · lexical]");
    (value, line)
}

fn assistant_text(text: String, priority: Option<f32>) -> ContentBlock {
    let mut annotations = Annotations::default().with_audience(vec![Role::Assistant]);
    if let Some(p) = priority {
        annotations = annotations.with_priority(p.clamp(0.0, 1.0));
    }
    ContentBlock::Text(TextContent::new(text).with_annotations(annotations))
}

fn to_value<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_else(|e| json!({ "serialization_error": e.to_string() }))
}

#[tool_router]
impl CodeContextServer {
    #[tool(
        description = "Search the codebase (TypeScript, JavaScript, Rust, Python, Go). Give a natural-language question (\"where are JWT tokens validated\") or a symbol lookup (`symbol = TokenService > validateToken`). Returns a connection graph of the relevant symbols (callers, callees, types) followed by one structural snapshot per file showing those symbols complete, within a token budget.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn codebase_search(
        &self,
        Parameters(params): Parameters<SearchParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut options = self.service.config.search_options();
        options.filter = ChunkFilter {
            paths: params.path,
            languages: params.languages,
        };
        let depth = self.service.config.search.call_depth;
        let query = params.query.clone();
        let outcome = self
            .call(
                &meta,
                &peer,
                params.at,
                move |engine: &mut Engine| -> EngineFuture<'_, _> {
                    Box::pin(async move { engine.answer(&query, &options, depth).await })
                },
            )
            .await;
        let ((answer, ranking), answered) = match outcome {
            Ok(v) => v,
            Err(e) => return Ok(e),
        };
        let lookup = ranking.mode == SearchMode::Lookup;
        let completeness = if lookup && !answer.is_truncated() {
            "complete"
        } else {
            self.search_completeness(&answered, answer.is_truncated())
        };
        Ok(self.search_result(&answer, ranking.mode, &answered, completeness))
    }

    #[tool(
        description = "The structural chain of a symbol: `ancestors` (method → class → namespace, each with kind and lines) or `descendants` (a class's members, nested functions). Error `symbol_not_found` when no symbol has the name.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_symbol_hierarchy(
        &self,
        Parameters(params): Parameters<HierarchyParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let outcome = self
            .navigate(&meta, &peer, params.at, move |engine| {
                codectx_retrieval::symbol_hierarchy(
                    engine.project(),
                    &params.symbol_name,
                    params.path.as_deref(),
                    params.direction.into(),
                )
            })
            .await;
        let (hierarchies, answered) = match outcome {
            Ok(v) => v,
            Err(e) => return Ok(e),
        };
        let mut text = String::new();
        for h in &hierarchies {
            let direction = match h.direction {
                codectx_retrieval::Direction::Ancestors => "ancestors",
                codectx_retrieval::Direction::Descendants => "descendants",
            };
            text.push_str(&format!("{} ({direction})\n", h.file));
            for n in &h.chain {
                text.push_str(&format!(
                    "{}{} {} [{}-{}]\n",
                    "  ".repeat(n.depth as usize),
                    n.kind,
                    n.name,
                    n.start_line,
                    n.end_line
                ));
            }
        }
        let truncated = hierarchies.iter().any(|h| h.truncated);
        Ok(self.answer(
            text,
            json!({ "hierarchies": to_value(&hierarchies) }),
            &answered,
            if truncated { "truncated" } else { "complete" },
        ))
    }

    #[tool(
        description = "Symbols related to one symbol: top-level symbols of its file first, then (scope `module`) of its directory, then of files it imports or is imported by.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn find_related_symbols(
        &self,
        Parameters(params): Parameters<RelatedParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = params.limit.unwrap_or(20);
        let outcome = self
            .navigate(&meta, &peer, params.at, move |engine| {
                codectx_retrieval::related_symbols(
                    engine.project(),
                    &params.symbol_name,
                    params.path.as_deref(),
                    params.scope.into(),
                    limit,
                )
            })
            .await;
        let (related, answered) = match outcome {
            Ok(v) => v,
            Err(e) => return Ok(e),
        };
        let mut text = format!(
            "Related to {} ({}:{}):\n",
            related.symbol.breadcrumb, related.file, related.symbol.start_line
        );
        for r in &related.related {
            text.push_str(&format!(
                "{:<16} {} {} {}:{}-{}\n",
                r.relation,
                r.symbol.kind,
                r.symbol.qualified_name,
                r.symbol.file,
                r.symbol.start_line,
                r.symbol.end_line
            ));
        }
        if related.related.is_empty() {
            text.push_str("(no related symbols)\n");
        }
        Ok(self.answer(text, to_value(&related), &answered, "complete"))
    }

    #[tool(
        description = "Code for a question fitted into a token budget: `breadth` gives the signatures of many relevant symbols, `depth` the full bodies of fewer. Reports estimated_tokens and truncated.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_code_context(
        &self,
        Parameters(params): Parameters<ContextParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut options = self.service.config.search_options();
        options.filter.paths = params.path;
        let outcome = self
            .call(
                &meta,
                &peer,
                params.at,
                move |engine: &mut Engine| -> EngineFuture<'_, _> {
                    Box::pin(async move {
                        engine
                            .context(
                                &params.query,
                                &options,
                                params.max_tokens,
                                params.strategy.into(),
                            )
                            .await
                    })
                },
            )
            .await;
        let (context, answered): (CodeContext, _) = match outcome {
            Ok(v) => v,
            Err(e) => return Ok(e),
        };
        let mut text: Vec<String> = context
            .context_items
            .iter()
            .map(|i| i.text.clone())
            .collect();
        text.push(format!(
            "({} items, {} of {} tokens{}{})",
            context.context_items.len(),
            context.estimated_tokens,
            context.max_tokens,
            if context.truncated { ", truncated" } else { "" },
            context
                .suggestion
                .as_deref()
                .map_or(String::new(), |s| format!("; {s}"))
        ));
        let completeness = if context.truncated {
            "truncated"
        } else {
            self.search_completeness(&answered, false)
        };
        Ok(self.answer(
            text.join("\n\n"),
            to_value(&context),
            &answered,
            completeness,
        ))
    }

    #[tool(
        description = "What a file imports (resolved file, package or unresolved specifier, with the imported names and line) and which files import it.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_file_relationships(
        &self,
        Parameters(params): Parameters<FileParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let outcome = self
            .navigate(&meta, &peer, params.at, move |engine| {
                codectx_retrieval::file_relationships(engine.project(), &params.path)
            })
            .await;
        let (rel, answered) = match outcome {
            Ok(v) => v,
            Err(e) => return Ok(e),
        };
        let mut text = format!("{}\nimports:\n", rel.file);
        for e in &rel.imports {
            text.push_str(&format!(
                "  {} ({}) line {}: {}\n",
                e.file,
                e.resolution,
                e.line,
                e.names.join(", ")
            ));
        }
        text.push_str("imported by:\n");
        for e in &rel.imported_by {
            text.push_str(&format!(
                "  {} line {}: {}\n",
                e.file,
                e.line,
                e.names.join(", ")
            ));
        }
        Ok(self.answer(text, to_value(&rel), &answered, "complete"))
    }

    #[tool(
        description = "A file's skeleton: its full structure with every function and method body collapsed to `{ … }`. Cached while the file is unchanged.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_file_skeleton(
        &self,
        Parameters(params): Parameters<FileParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let outcome = self
            .navigate(&meta, &peer, params.at, move |engine| {
                codectx_retrieval::file_skeleton(engine.project(), engine.skeletons(), &params.path)
            })
            .await;
        let (skeleton, answered) = match outcome {
            Ok(v) => v,
            Err(e) => return Ok(e),
        };
        let value = json!({
            "path": skeleton.relative_path,
            "contentHash": skeleton.content_hash,
            "lineCount": skeleton.line_count,
            "skeleton": skeleton.text,
        });
        Ok(self.answer(
            format!("// {}\n{}", skeleton.relative_path, skeleton.text),
            value,
            &answered,
            "complete",
        ))
    }
}

impl CodeContextServer {
    /// The blueprint's result format: connection graph (priority 1.0) first, then one
    /// snapshot per file by non-increasing priority, every item for the assistant.
    fn search_result(
        &self,
        answer: &Answer,
        mode: SearchMode,
        answered: &Answered,
        completeness: &str,
    ) -> CallToolResult {
        let (metadata, line) = self.metadata(answered, completeness);
        let mut content = Vec::with_capacity(answer.content.len() + 1);
        // Why an answer holds nothing (a lookup's closest names, the best score below the
        // gate) is said in its text too, as the CLI prints it, not only in its data.
        let why_empty = answer
            .message
            .as_deref()
            .filter(|_| answer.results.is_empty());
        for (i, item) in answer.content.iter().enumerate() {
            let mut text = item.text.clone();
            if i == 0 {
                if let Some(why) = why_empty {
                    text.push_str(&format!("\n{why}"));
                }
                text.push_str(&format!("\n{line}"));
            }
            content.push(assistant_text(
                text,
                Some(if i == 0 { 1.0 } else { item.priority }),
            ));
        }
        if content.is_empty() {
            let why = answer.message.as_deref().unwrap_or("No results.");
            content.push(assistant_text(format!("{why}\n{line}"), Some(1.0)));
        }
        let mode = match mode {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Lexical => "lexical",
            SearchMode::Lookup => "lookup",
        };
        let mut value = to_value(answer);
        if let Some(object) = value.as_object_mut() {
            // The texts are the content items; structured data carries the rest.
            object.remove("content");
            object.insert("mode".into(), json!(mode));
            object.insert("metadata".into(), metadata);
        }
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(value);
        result
    }
}

#[tool_handler(
    router = self.tool_router,
    name = "codectx",
    instructions = "Code context for this repository (TypeScript, JavaScript, Rust, Python, Go). Start with codebase_search (a question, or `symbol = Name`); it returns the relevant symbols complete with their connections. Use the navigation tools (get_symbol_hierarchy, find_related_symbols, get_file_relationships, get_file_skeleton, get_code_context) to move around from there instead of reading whole files."
)]
impl rmcp::ServerHandler for CodeContextServer {
    /// The router's call, with one change: arguments that do not deserialise (a number for
    /// a string, a negative budget) become a coded `invalid_argument` tool error like every
    /// other refusal, instead of rmcp's bare text.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let context = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let response = self.tool_router.call(context).await?;
        Ok(match response {
            rmcp::model::CallToolResponse::Complete(result)
                if result.is_error == Some(true) && result.structured_content.is_none() =>
            {
                let message = result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                    .collect::<Vec<_>>()
                    .join(" ");
                self.error("invalid_argument", &message, &Answered::of(None))
                    .into()
            }
            other => other,
        })
    }
}
