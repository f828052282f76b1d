//! Assembling an answer in the blueprint's result format: the connection graph first, then
//! one smart structural snapshot per file, inside a token budget.

use codectx_chunker::{CodeChunk, estimate_tokens};
use codectx_connection_graph::ConnectionGraph;
use codectx_graph::{MetadataOptions, SymbolMetadata};
use codectx_parser::{LineRange, SymbolKind};
use serde::Serialize;

use crate::project::Project;

/// One content item of an answer (an MCP text item with its priority annotation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContentItem {
    pub text: String,
    /// 1.0 for the connection graph; a snapshot's best result score otherwise.
    pub priority: f32,
    /// The snapshot's file; `None` for the connection graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// A result of an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultSymbol {
    pub file: String,
    /// Qualified name (`Class.method`).
    pub name: String,
    pub breadcrumb: String,
    pub kind: SymbolKind,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f32,
    /// How its code is shown; absent when in full.
    #[serde(skip_serializing_if = "Shown::is_full")]
    pub shown: Shown,
    /// The same code elsewhere (a generated mirror of `src/`, a script copied into two
    /// folders): shown once, at its best-ranked place, and located here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<CodeCopy>,
}

/// Where a result's code stands again, character for character.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeCopy {
    pub file: String,
    pub start_line: u32,
    pub end_line: u32,
}

/// `file:start-end`, as answers name a place.
impl std::fmt::Display for CodeCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}-{}", self.file, self.start_line, self.end_line)
    }
}

impl CodeCopy {
    pub fn of(chunk: &CodeChunk) -> Self {
        CodeCopy {
            file: chunk.relative_path.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
        }
    }
}

/// How an answer shows a result's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Shown {
    /// In its file's smart structural snapshot: the whole symbol with its context.
    Full,
    /// As its declaration with bodies collapsed to `{ … }`: its file's snapshot would not
    /// fit the budget. A large function is still located and recognisable, instead of
    /// leaving the answer empty.
    Outline,
}

impl Shown {
    fn is_full(&self) -> bool {
        *self == Shown::Full
    }
}

/// A complete answer: what `codebase_search` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub query: String,
    pub results: Vec<ResultSymbol>,
    /// Connection graph first, then snapshots by non-increasing priority.
    pub content: Vec<ContentItem>,
    /// Token estimate of all content items.
    pub estimated_tokens: usize,
    pub budget: usize,
    /// Results left out because neither their snapshots nor their outlines fit the budget.
    pub omitted: usize,
    /// Why the answer is empty or incomplete, in a sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Nothing cleared the relevance gate: the results are the best few candidates, as
    /// signatures only, for the agent to judge or to reformulate from.
    pub low_confidence: bool,
}

impl Answer {
    /// Whether the budget cut the answer: a result left out, or shown as its outline only.
    pub fn is_truncated(&self) -> bool {
        self.omitted > 0 || self.results.iter().any(|r| r.shown == Shown::Outline)
    }
}

/// Options of answer assembly.
#[derive(Debug, Clone)]
pub struct AnswerOptions {
    /// Token budget of the whole answer (the blueprint's 8,000).
    pub budget: usize,
    pub call_depth: i32,
}

impl Default for AnswerOptions {
    fn default() -> Self {
        Self {
            budget: 8_000,
            call_depth: 1,
        }
    }
}

/// Builds the answer for `ranked` (chunk, score), best first. Files are added whole (one
/// merged snapshot each) while the answer fits `budget`; a file that does not fit is left
/// out with its results and counted in `omitted`, never cut.
pub fn assemble(
    project: &Project,
    query: &str,
    ranked: &[(&CodeChunk, f32)],
    options: &AnswerOptions,
) -> Answer {
    // Files in order of their best result; each result's metadata is computed once.
    struct Entry<'c> {
        chunk: &'c CodeChunk,
        score: f32,
        metadata: SymbolMetadata,
        shown: Shown,
    }
    let mut files: Vec<(&str, f32, Vec<Entry>)> = Vec::new();
    for &(chunk, score) in ranked {
        let entry = Entry {
            chunk,
            score,
            metadata: symbol_metadata(project, chunk, options.call_depth),
            shown: Shown::Full,
        };
        match files.iter_mut().find(|f| f.0 == chunk.relative_path) {
            Some(f) => f.2.push(entry),
            None => files.push((&chunk.relative_path, score, vec![entry])),
        }
    }
    let mut kept: Vec<Entry> = Vec::new();
    let mut snapshots: Vec<ContentItem> = Vec::new();
    let mut snapshot_tokens = 0;
    let mut omitted = 0;
    let render = |results: Vec<SymbolMetadata>, snapshot_tokens: usize| {
        codectx_connection_graph::render(&ConnectionGraph {
            query: query.to_string(),
            results,
            budget: options.budget,
            snapshot_tokens,
            call_depth: options.call_depth,
        })
    };
    let mut outlined = 0;
    // Each file's snapshot in full, made once.
    let mut full: Vec<Option<(String, usize)>> = files
        .iter()
        .map(|(path, _, entries)| {
            let chunks: Vec<&CodeChunk> = entries.iter().map(|e| e.chunk).collect();
            let text = snapshot_text(project, path, &chunks)?;
            let tokens = estimate_tokens(&text);
            Some((text, tokens))
        })
        .collect();
    // Most answers fit whole: one connection graph of every result decides it, and is the
    // answer's graph, instead of one per file as the files are added.
    let whole: Option<String> = full
        .iter()
        .all(Option::is_some)
        .then(|| {
            let results = files
                .iter()
                .flat_map(|(_, _, entries)| entries.iter().map(|e| e.metadata.clone()))
                .collect();
            let tokens: usize = full.iter().flatten().map(|(_, t)| t).sum();
            let graph = render(results, tokens);
            (estimate_tokens(&graph) + tokens <= options.budget).then_some(graph)
        })
        .flatten();
    for ((path, score, mut entries), full) in files.into_iter().zip(&mut full) {
        let chunks: Vec<&CodeChunk> = entries.iter().map(|e| e.chunk).collect();
        // The file in full if it fits, else its results' outlines, else nothing.
        let fitted = [Shown::Full, Shown::Outline].into_iter().find_map(|shown| {
            let (text, tokens) = match shown {
                Shown::Full => full.take()?,
                Shown::Outline => {
                    let text = outline_text(project, path, &chunks)?;
                    let tokens = estimate_tokens(&text);
                    (text, tokens)
                }
            };
            if whole.is_some() {
                return Some((shown, text, tokens));
            }
            let results = kept.iter().chain(&entries).map(|e| e.metadata.clone());
            let graph = render(results.collect(), snapshot_tokens + tokens);
            (estimate_tokens(&graph) + snapshot_tokens + tokens <= options.budget)
                .then_some((shown, text, tokens))
        });
        let Some((shown, text, tokens)) = fitted else {
            omitted += entries.len();
            continue;
        };
        if shown == Shown::Outline {
            outlined += entries.len();
        }
        for e in &mut entries {
            e.shown = shown;
        }
        kept.extend(entries);
        snapshot_tokens += tokens;
        snapshots.push(ContentItem {
            text,
            priority: score,
            file: Some(path.to_string()),
        });
    }
    let graph = whole.unwrap_or_else(|| {
        render(
            kept.iter().map(|e| e.metadata.clone()).collect(),
            snapshot_tokens,
        )
    });
    let estimated_tokens = estimate_tokens(&graph) + snapshot_tokens;
    let mut content = vec![ContentItem {
        text: graph,
        priority: 1.0,
        file: None,
    }];
    content.extend(snapshots);
    // The singular or the plural form of a word for `n` results.
    let form = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let mut notes = Vec::new();
    if outlined > 0 {
        notes.push(format!(
            "{outlined} result{} shown as declarations only: {} would exceed the {}-token \
             budget; read {} by its lines.",
            form(outlined, "", "s"),
            form(outlined, "its code", "their code"),
            options.budget,
            form(outlined, "it", "them"),
        ));
    }
    if omitted > 0 {
        notes.push(format!(
            "{omitted} result{} left out: {} would exceed the {}-token budget.",
            form(omitted, "", "s"),
            form(omitted, "its snapshot", "their snapshots"),
            options.budget
        ));
    }
    let message = (!notes.is_empty()).then(|| notes.join(" "));
    Answer {
        query: query.to_string(),
        results: kept
            .iter()
            .map(|e| ResultSymbol {
                shown: e.shown,
                ..result_symbol(e.chunk, e.score)
            })
            .collect(),
        content,
        estimated_tokens,
        budget: options.budget,
        omitted,
        message,
        low_confidence: false,
    }
}

/// The copies of the chunk at `file`, lines `start_line`–`end_line` ([`Project::copies_of`]).
fn copies_at(project: &Project, file: &str, start_line: u32, end_line: u32) -> Vec<CodeCopy> {
    let chunk = project.file(file).and_then(|f| {
        f.chunks
            .iter()
            .find(|c| c.start_line == start_line && c.end_line == end_line)
    });
    chunk.map_or_else(Vec::new, |c| {
        project.copies_of(c).into_iter().map(CodeCopy::of).collect()
    })
}

/// At most this many copies are listed with a result; the text counts the others.
pub const LISTED_COPIES: usize = 10;

/// Locates each result's copies ([`Project::copies_of`]): in its [`ResultSymbol::copies`],
/// and in a line of the answer's text, so an agent reading the text knows that an edit
/// there may be due in the copies too. The copies' code is not repeated.
pub fn locate_copies(answer: &mut Answer, project: &Project) {
    for result in &mut answer.results {
        result.copies = copies_at(project, &result.file, result.start_line, result.end_line);
        if result.copies.is_empty() {
            continue;
        }
        const NAMED: usize = 5;
        let all = result.copies.len();
        result.copies.truncate(LISTED_COPIES);
        let mut places: Vec<String> = result
            .copies
            .iter()
            .take(NAMED)
            .map(CodeCopy::to_string)
            .collect();
        if all > NAMED {
            places.push(format!("{} more places", all - NAMED));
        }
        let line = format!(
            "\n[{} is also, character for character, at {}]\n",
            result.name,
            places.join(", ")
        );
        // Under its file's snapshot; a low-confidence answer's one list of candidates has
        // no snapshot.
        let at = answer
            .content
            .iter()
            .position(|item| item.file.as_deref() == Some(result.file.as_str()))
            .or((!answer.content.is_empty()).then_some(answer.content.len() - 1));
        let tokens = estimate_tokens(&line);
        // The budget holds: past it the copies are in the results only.
        if let Some(item) = at
            .filter(|_| answer.estimated_tokens + tokens <= answer.budget)
            .map(|i| &mut answer.content[i])
        {
            answer.estimated_tokens += tokens;
            item.text.push_str(&line);
        }
    }
}

/// How many candidates a low-confidence answer lists.
pub const LOW_CONFIDENCE_CANDIDATES: usize = 5;

/// The answer when nothing cleared the relevance gate: the best few candidates (`ranked`,
/// best first, at most [`LOW_CONFIDENCE_CANDIDATES`]) as one line each — where, what and
/// its declaration line — without bodies, marked low-confidence. An empty answer would send
/// the agent back to grep; this lets it judge, look one up by name, or reformulate.
pub fn low_confidence_answer(
    query: &str,
    ranked: &[(&CodeChunk, f32)],
    threshold: f32,
    options: &AnswerOptions,
) -> Answer {
    let ranked = &ranked[..ranked.len().min(LOW_CONFIDENCE_CANDIDATES)];
    let closest = match ranked.len() {
        1 => "The closest candidate, as a declaration without its body".to_string(),
        n => format!("The {n} closest candidates, as declarations without bodies"),
    };
    let mut text = format!(
        "Low confidence: no result reached the relevance threshold {threshold:.2} on more \
         than one word of the question. {closest}; \
         look one up with `symbol = Name`, or ask again in other words.\n",
    );
    for (i, (chunk, score)) in ranked.iter().enumerate() {
        text.push_str(&format!(
            "[{}] {}:{}-{}  {}  ({}, score {score:.2})\n    {}\n",
            i + 1,
            chunk.relative_path,
            chunk.start_line,
            chunk.end_line,
            chunk.dotted_name(),
            chunk.node_kind,
            declaration_line(chunk),
        ));
    }
    // The answer stays inside its budget even here: whole lines are dropped from the end.
    while estimate_tokens(&text) > options.budget {
        let Some(cut) = text.trim_end().rfind('\n') else {
            text.clear();
            break;
        };
        text.truncate(cut + 1);
    }
    Answer {
        query: query.to_string(),
        results: ranked
            .iter()
            .map(|&(chunk, score)| result_symbol(chunk, score))
            .collect(),
        estimated_tokens: estimate_tokens(&text),
        content: vec![ContentItem {
            text,
            priority: 1.0,
            file: None,
        }],
        budget: options.budget,
        omitted: 0,
        message: None,
        low_confidence: true,
    }
}

/// The first line of a chunk's code (past its comments and decorators), trimmed and cut at
/// 160 characters: the declaration an agent recognises.
fn declaration_line(chunk: &CodeChunk) -> String {
    let mut in_comment = false;
    for line in chunk.full_source.lines() {
        let t = line.trim();
        if in_comment {
            in_comment = !t.contains("*/");
            continue;
        }
        if t.starts_with("/*") {
            in_comment = !t.contains("*/");
            continue;
        }
        if t.is_empty() || t.starts_with("//") || t.starts_with('@') {
            continue;
        }
        let t = t.trim_end_matches('{').trim_end();
        return match t.char_indices().nth(160) {
            Some((cut, _)) => format!("{}…", &t[..cut]),
            None => t.to_string(),
        };
    }
    String::new()
}

fn result_symbol(c: &CodeChunk, score: f32) -> ResultSymbol {
    ResultSymbol {
        file: c.relative_path.clone(),
        name: c.dotted_name(),
        breadcrumb: c.breadcrumb.clone(),
        kind: c.node_kind,
        start_line: c.start_line,
        end_line: c.end_line,
        score,
        shown: Shown::Full,
        copies: Vec::new(),
    }
}

fn snapshot_text(project: &Project, path: &str, chunks: &[&CodeChunk]) -> Option<String> {
    let file = project.file(path)?;
    let ranges: Vec<LineRange> = chunks
        .iter()
        .map(|c| LineRange {
            start: c.start_line,
            end: c.end_line,
        })
        .collect();
    codectx_snapshot::smart_snapshot(file.syntax()?, file.source()?, &ranges)
        .ok()
        .map(|s| s.text)
}

/// The outlines of `chunks` of the file `path`, each under its lines: declarations with
/// every function body collapsed (`symbol_skeleton`), for when the file's snapshot does not
/// fit an answer.
fn outline_text(project: &Project, path: &str, chunks: &[&CodeChunk]) -> Option<String> {
    let file = project.file(path)?;
    let (parsed, source) = (file.syntax()?.parsed(), file.source()?);
    let mut text = format!("// {path} (declarations only: the code exceeds the budget)\n");
    for c in chunks {
        let range = LineRange {
            start: c.start_line,
            end: c.end_line,
        };
        // A chunk that is no one symbol (top-level statements) shows its first line.
        let outline = codectx_snapshot::symbol_skeleton(parsed, source, range)
            .unwrap_or_else(|| declaration_line(c));
        text.push_str(&format!(
            "\n// lines {}-{}\n{}\n",
            c.start_line,
            c.end_line,
            outline.trim_end()
        ));
    }
    Some(text)
}

/// The graph's metadata of a chunk; a chunk the graph has no declaration for (an import, a
/// root expression) gets metadata from the chunk alone.
pub fn symbol_metadata(project: &Project, chunk: &CodeChunk, call_depth: i32) -> SymbolMetadata {
    if let Some(s) = project.declaration(chunk) {
        return project.graph().metadata(s, &MetadataOptions { call_depth });
    }
    let qualified = chunk.qualified_parts();
    SymbolMetadata {
        symbol: codectx_graph::SymbolInfo {
            id: format!(
                "{}::{}@{}",
                chunk.relative_path,
                qualified.join("."),
                chunk.start_line
            ),
            name: chunk.name.clone(),
            qualified_name: qualified.join("."),
            kind: chunk.node_kind,
            file: chunk.relative_path.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            is_abstract: None,
        },
        signature: chunk.signature.clone(),
        modifiers: Vec::new(),
        type_hierarchy: None,
        outgoing_calls: Vec::new(),
        incoming_callers: Vec::new(),
        reference_count: codectx_graph::ReferenceCount {
            files: 0,
            occurrences: 0,
            file_list: Vec::new(),
        },
        type_flows: codectx_graph::TypeFlows {
            parameters: Vec::new(),
            returns: None,
        },
        members: Vec::new(),
        ancestors: Vec::new(),
        constant: None,
    }
}
