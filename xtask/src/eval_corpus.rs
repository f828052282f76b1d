//! `cargo xtask eval --corpus PINS`: retrieval quality over the tuning corpus, per package
//! and macro-averaged over each half, in the default configuration an agent gets without a
//! model (gate and 8,000-token budget on), beside the kit's BM25 baseline on the same
//! questions.
//!
//! Per package: function Acc@1/5/10 and MRR of the ranking; what the agent receives —
//! the share of questions whose target is among the answer's results (`deliv`), the share
//! of answers with no result at all (`empty`), the share answered only with low-confidence
//! signatures (`lowc`), and the answer's mean token estimate (`tokens`); BM25's Acc@10 and
//! MRR. A hono CommitLoc set can be added as a second kind of question (`--set`, `--root`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::sync::Arc;

use codectx_embed::Embedder;
use codectx_retrieval::{Engine, EngineOptions, SearchOptions};
use serde_json::json;

use crate::bm25::Bm25;
use crate::eval::{Hit, hit, metrics};
use crate::tuning::{self, Question, Split};

/// The kinds of questions the corpora ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QuestionKind {
    /// A doc comment's first sentence → the symbol it documents (`--corpus`).
    Doc,
    /// A commit's subject → the functions it changed (`--changes`).
    Change,
    /// A pull request's title and description → the functions it changed (`--changes`).
    Long,
}

impl QuestionKind {
    fn as_str(self) -> &'static str {
        match self {
            QuestionKind::Doc => "doc",
            QuestionKind::Change => "change",
            QuestionKind::Long => "long",
        }
    }
}

/// What `eval --corpus` / `eval --changes` runs.
pub struct CorpusEval<'a> {
    /// The doc-comment corpus's pin list.
    pub pins: Option<PathBuf>,
    /// The change corpus's pin list.
    pub changes: Option<PathBuf>,
    /// Where the change corpus's git directories are found.
    pub mirrors: Option<PathBuf>,
    /// Kinds to score (all the pin lists give when empty).
    pub kinds: Vec<QuestionKind>,
    pub cap: usize,
    /// Only this half (both when `None`).
    pub split: Option<Split>,
    /// Only packages whose name is listed (all when empty).
    pub only: &'a [String],
    /// A CommitLoc set and the repository it was made on, scored as one more package.
    pub commitloc: Option<(&'a Path, &'a Path)>,
    pub out: &'a Path,
    /// The relevance gate (default: the product's).
    pub min_relevance: Option<f32>,
    /// The companions' share of the best score (default: the product's).
    pub companion_share: Option<f32>,
    /// Other search options to try, `name=value` (see [`set_option`]).
    pub overrides: &'a [String],
    /// The vector channel's model (`None`: no vectors, the default an agent gets).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Read the repository's history where there is one (the CommitLoc root).
    pub history: bool,
    /// Where the lexical channel's BM25F runs: in memory, as the server answers agents, or
    /// on LanceDB's index, as the CLI does (its statistics drift as rows are rewritten).
    pub text_search: codectx_store::TextSearch,
    /// Each question names the project first, as its manifest calls it ("pino: …").
    pub name_the_project: bool,
}

/// Sets one numeric [`SearchOptions`] field by name, to judge a ranking constant on the
/// corpus without a rebuild.
fn set_option(options: &mut SearchOptions, assignment: &str) -> anyhow::Result<()> {
    let (name, value) = assignment
        .split_once('=')
        .ok_or_else(|| anyhow::anyhow!("{assignment}: expected name=value"))?;
    let value: f32 = value.parse()?;
    let field = match name {
        "file_evidence_weight" => &mut options.file_evidence_weight,
        "answer_knee" => &mut options.answer_knee,
        "prose_companion_share" => &mut options.prose_companion_share,
        "rerank_weight" => &mut options.rerank_weight,
        "vector_weight" => &mut options.vector_weight,
        // The model's calibration, overridden.
        "vector_floor" | "vector_ceiling" => {
            *match name {
                "vector_floor" => &mut options.vector_floor,
                _ => &mut options.vector_ceiling,
            } = Some(value);
            return Ok(());
        }
        // Channel switches: 0 turns a channel off (dense-only: `max_lexical_candidates=0`).
        "max_vector_candidates" | "max_lexical_candidates" | "companion_tokens" => {
            *match name {
                "max_vector_candidates" => &mut options.max_vector_candidates,
                "max_lexical_candidates" => &mut options.max_lexical_candidates,
                _ => &mut options.companion_tokens,
            } = value as usize;
            return Ok(());
        }
        _ => anyhow::bail!("{name}: not a numeric search option"),
    };
    *field = value;
    Ok(())
}

/// One package's figures; means over its questions.
#[derive(Default, Clone, Copy)]
struct Row {
    acc1: f64,
    acc5: f64,
    acc10: f64,
    /// Any target (not all of them) in the top 10: what an issue's fix needs to start from.
    any10: f64,
    mrr: f64,
    delivered: f64,
    empty: f64,
    low_confidence: f64,
    tokens: f64,
    /// Median answer size of the package (a macro row: the mean of the medians).
    median_tokens: f64,
    /// Share of an answer's results that are targets or structurally adjacent to one,
    /// over answers with results.
    precision: f64,
    /// Share of an answer's results in a file a target is in, over answers with results:
    /// how much of what the agent reads is in the files the question is about.
    file_precision: f64,
    /// The precision of the answer's best cut: its first results, as many as give the
    /// highest precision (over answers with results). No rule deciding where an answer
    /// stops, whatever it reads, reaches more with this ranking's order.
    precision_ceiling: f64,
    bm25_acc10: f64,
    bm25_any10: f64,
    bm25_mrr: f64,
}

impl Row {
    const FIELDS: usize = 16;

    fn values(&self) -> [f64; Self::FIELDS] {
        [
            self.acc1,
            self.acc5,
            self.acc10,
            self.any10,
            self.mrr,
            self.delivered,
            self.empty,
            self.low_confidence,
            self.tokens,
            self.median_tokens,
            self.precision,
            self.file_precision,
            self.precision_ceiling,
            self.bm25_acc10,
            self.bm25_any10,
            self.bm25_mrr,
        ]
    }

    fn from_values(v: [f64; Self::FIELDS]) -> Self {
        Row {
            acc1: v[0],
            acc5: v[1],
            acc10: v[2],
            any10: v[3],
            mrr: v[4],
            delivered: v[5],
            empty: v[6],
            low_confidence: v[7],
            tokens: v[8],
            median_tokens: v[9],
            precision: v[10],
            file_precision: v[11],
            precision_ceiling: v[12],
            bm25_acc10: v[13],
            bm25_any10: v[14],
            bm25_mrr: v[15],
        }
    }

    fn mean(rows: &[Row]) -> Row {
        let mut sum = [0.0; Self::FIELDS];
        for r in rows {
            for (s, v) in sum.iter_mut().zip(r.values()) {
                *s += v;
            }
        }
        let n = rows.len().max(1) as f64;
        Row::from_values(sum.map(|s| s / n))
    }
}

const HEADER: &str = "package          split     n leaky |  A@1   A@5  A@10 any@10  MRR | deliv empty  lowc tokens median  prec fprec  pcap | bm25 A@10 any@10  MRR";

fn print_row(name: &str, split: &str, n: usize, leaky: f64, r: &Row) {
    println!(
        "{name:<16} {split:<5} {n:>5} {leaky:>5.2} | {:.3} {:.3} {:.3}  {:.3} {:.3} | {:.3} {:.3} {:.3} {:>6.0} {:>6.0} {:.3} {:.3} {:.3} |     {:.3}  {:.3} {:.3}",
        r.acc1,
        r.acc5,
        r.acc10,
        r.any10,
        r.mrr,
        r.delivered,
        r.empty,
        r.low_confidence,
        r.tokens,
        r.median_tokens,
        r.precision,
        r.file_precision,
        r.precision_ceiling,
        r.bm25_acc10,
        r.bm25_any10,
        r.bm25_mrr
    );
}

pub fn run(config: CorpusEval) -> anyhow::Result<()> {
    let wants = |kind| config.kinds.is_empty() || config.kinds.contains(&kind);
    let pins: Vec<_> = match &config.pins {
        Some(pins) if wants(QuestionKind::Doc) => tuning::read_pins(pins)?
            .into_iter()
            .filter(|p| config.split.is_none_or(|s| s == p.split))
            .filter(|p| config.only.is_empty() || config.only.contains(&p.name))
            .collect(),
        _ => Vec::new(),
    };
    let started = Instant::now();
    let packages = tuning::build(&pins, config.cap)?;
    eprintln!(
        "corpus: {} packages, {} questions (built or read in {:.1} s)",
        packages.len(),
        packages.iter().map(|p| p.questions.len()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    std::fs::create_dir_all(config.out)?;
    let defaults = SearchOptions::default();
    let mut options = SearchOptions {
        minimum_relevance_threshold: config
            .min_relevance
            .unwrap_or(defaults.minimum_relevance_threshold),
        companion_share: config.companion_share.unwrap_or(defaults.companion_share),
        ..defaults
    };
    for assignment in config.overrides {
        set_option(&mut options, assignment)?;
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let mut rows: Vec<Scored> = Vec::new();
    println!("{HEADER}");
    for package in &packages {
        let row = runtime.block_on(score(
            &package.source,
            &package.work,
            &package.questions,
            &config
                .out
                .join(format!("run-{}.jsonl", package.pin.name.replace('/', "+"))),
            &options,
            &config,
        ))?;
        let leaky = share(&package.questions, |q| q.leaky);
        print_row(
            &package.pin.name,
            package.pin.split.as_str(),
            package.questions.len(),
            leaky,
            &row,
        );
        rows.push(Scored {
            name: package.pin.name.clone(),
            kind: QuestionKind::Doc,
            split: Some(package.pin.split),
            language: Language::of(&package.questions),
            n: package.questions.len(),
            leaky,
            row,
        });
    }
    if let Some(changes) = &config.changes {
        let repos: Vec<_> = crate::changes::read_pins(changes)?
            .into_iter()
            .filter(|p| config.split.is_none_or(|s| s == p.split))
            .filter(|p| config.only.is_empty() || config.only.contains(&p.name))
            .collect();
        let repos = crate::changes::build(&repos, config.mirrors.as_deref(), config.cap)?;
        eprintln!(
            "change corpus: {} repositories, {} change and {} long questions",
            repos.len(),
            repos.iter().map(|r| r.change.len()).sum::<usize>(),
            repos.iter().map(|r| r.long.len()).sum::<usize>(),
        );
        for kind in [QuestionKind::Change, QuestionKind::Long] {
            if !wants(kind) {
                continue;
            }
            println!("{} questions", kind.as_str());
            for repo in &repos {
                let questions = if kind == QuestionKind::Change {
                    &repo.change
                } else {
                    &repo.long
                };
                if questions.is_empty() {
                    continue;
                }
                let flat = repo.pin.name.replace('/', "+");
                let row = runtime.block_on(score(
                    &repo.source,
                    &repo.work,
                    questions,
                    &config
                        .out
                        .join(format!("run-{}-{flat}.jsonl", kind.as_str())),
                    &options,
                    &config,
                ))?;
                let leaky = share(questions, |q| q.leaky);
                print_row(
                    &repo.pin.name,
                    repo.pin.split.as_str(),
                    questions.len(),
                    leaky,
                    &row,
                );
                rows.push(Scored {
                    name: repo.pin.name.clone(),
                    kind,
                    split: Some(repo.pin.split),
                    language: Language::of(questions),
                    n: questions.len(),
                    leaky,
                    row,
                });
            }
        }
    }
    for kind in [QuestionKind::Doc, QuestionKind::Change, QuestionKind::Long] {
        for split in [Split::Tune, Split::Test] {
            print_macro(&rows, kind, split, None);
            if kind == QuestionKind::Doc {
                for language in [Language::TypeScript, Language::JavaScript] {
                    print_macro(&rows, kind, split, Some(language));
                }
            }
        }
    }
    if let Some((set, root)) = config.commitloc {
        let questions = crate::eval::read_set(set)?;
        let work = config.out.join("commitloc");
        let row = runtime.block_on(score(
            root,
            &work,
            &questions,
            &config.out.join("run-commitloc.jsonl"),
            &options,
            &config,
        ))?;
        let name = root
            .file_name()
            .map_or("commitloc".into(), |n| n.to_string_lossy().into_owned());
        print_row(
            &name,
            "kit",
            questions.len(),
            share(&questions, |q| q.leaky),
            &row,
        );
        rows.push(Scored {
            name,
            kind: QuestionKind::Change,
            split: None,
            language: Language::of(&questions),
            n: questions.len(),
            leaky: share(&questions, |q| q.leaky),
            row,
        });
    }
    let summary: Vec<_> = rows
        .iter()
        .map(|Scored { name, kind, split, language, n, leaky, row: r }| {
            json!({
                "package": name, "kind": kind.as_str(), "split": split.map(Split::as_str),
                "language": language.as_str(),
                "n": n, "leaky": leaky,
                "acc1": r.acc1, "acc5": r.acc5, "acc10": r.acc10, "any10": r.any10, "mrr": r.mrr,
                "delivered": r.delivered, "empty": r.empty, "lowConfidence": r.low_confidence,
                "tokens": r.tokens, "medianTokens": r.median_tokens, "precision": r.precision,
                "filePrecision": r.file_precision, "precisionCeiling": r.precision_ceiling,
                "bm25Acc10": r.bm25_acc10, "bm25Any10": r.bm25_any10, "bm25Mrr": r.bm25_mrr,
            })
        })
        .collect();
    let path = config.out.join("corpus-summary.json");
    std::fs::write(&path, serde_json::to_string_pretty(&summary)?)?;
    eprintln!(
        "summary: {} ({:.0} s)",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One scored package (or CommitLoc set).
struct Scored {
    name: String,
    kind: QuestionKind,
    /// `None` for a CommitLoc set, which belongs to neither half.
    split: Option<Split>,
    language: Language,
    n: usize,
    leaky: f64,
    row: Row,
}

/// A package's language group, for the per-language macro-averages: a model can help one
/// language and hurt the other, and the default must not lower either.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Language {
    TypeScript,
    JavaScript,
}

impl Language {
    /// The language most of the questions' targets are written in: what the retrieval
    /// actually searched, whatever the package's style says.
    fn of(questions: &[Question]) -> Language {
        let typescript = questions
            .iter()
            .filter(|q| {
                q.gold.first().is_some_and(|g| {
                    [".ts", ".tsx", ".mts", ".cts"]
                        .iter()
                        .any(|ext| g.file.ends_with(ext))
                })
            })
            .count();
        if typescript * 2 > questions.len() {
            Language::TypeScript
        } else {
            Language::JavaScript
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Language::TypeScript => "ts",
            Language::JavaScript => "js",
        }
    }
}

/// Prints the macro-average of one half (of one language group when given), if it has any
/// package.
fn print_macro(rows: &[Scored], kind: QuestionKind, split: Split, language: Option<Language>) {
    let group: Vec<&Scored> = rows
        .iter()
        .filter(|r| {
            r.kind == kind && r.split == Some(split) && language.is_none_or(|l| l == r.language)
        })
        .collect();
    if group.is_empty() {
        return;
    }
    let label = match language {
        None => format!("MACRO {} {}", kind.as_str(), split.as_str()),
        Some(l) => format!("MACRO {} {} {}", kind.as_str(), split.as_str(), l.as_str()),
    };
    print_row(
        &label,
        &format!("{}p", group.len()),
        group.iter().map(|r| r.n).sum(),
        // The macro-average's own share of leaky questions.
        group.iter().map(|r| r.leaky).sum::<f64>() / group.len() as f64,
        &Row::mean(&group.iter().map(|r| r.row).collect::<Vec<_>>()),
    );
}

fn share(questions: &[Question], f: impl Fn(&Question) -> bool) -> f64 {
    questions.iter().filter(|q| f(q)).count() as f64 / questions.len().max(1) as f64
}

/// Indexes `source` (in `work/index-<model>`, vectors embedded, the store as `config` says)
/// and scores `questions` on it.
async fn score(
    source: &Path,
    work: &Path,
    questions: &[Question],
    run_file: &Path,
    options: &SearchOptions,
    config: &CorpusEval<'_>,
) -> anyhow::Result<Row> {
    let (embedder, history) = (config.embedder.clone(), config.history);
    let index: PathBuf =
        std::path::absolute(work.join(crate::eval::index_name(embedder.as_deref(), history)))?;
    let mut engine = Engine::open(
        source,
        EngineOptions {
            embedder,
            store: codectx_store::StoreOptions {
                uri: Some(index.to_string_lossy().into_owned()),
                history: crate::eval::history_options(history),
                text_search: config.text_search,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await?;
    engine.embed_pending(&()).await?;
    let bm25 = Bm25::build(source)?;
    let mut sums = [0.0; Row::FIELDS];
    let mut token_counts: Vec<usize> = Vec::new();
    let (mut precision_sum, mut file_precision_sum, mut ceiling_sum, mut answered) =
        (0.0, 0.0, 0.0, 0usize);
    let mut runs = std::io::BufWriter::new(std::fs::File::create(run_file)?);
    let project_name = config
        .name_the_project
        .then(|| codectx_retrieval::project_names(source).into_iter().next())
        .flatten();
    if config.name_the_project {
        eprintln!("{}: named {:?}", source.display(), project_name);
    }
    for q in questions {
        let query = match &project_name {
            // Before the title, when the question has one, as commit subjects do
            // (`koa: keep the slash`).
            Some(name) => format!("{name}: {}", q.query.trim_start()),
            None => q.query.clone(),
        };
        let (answer, ranking) = engine.answer(&query, options, 1).await?;
        // Each shown result with its own score: one iterator, so they cannot drift apart.
        let (hits, scores): (Vec<Hit>, Vec<&codectx_retrieval::Scored>) = ranking
            .scored
            .iter()
            .filter_map(|s| Some((engine.project().chunk(&s.relative_path, &s.chunk_id)?, s)))
            .take(10)
            .map(|(chunk, s)| (Hit::of_chunk(chunk), s))
            .unzip();
        let m = metrics(&q.gold, &hits);
        // Each result with the copies of its code the answer locates: the agent reads the
        // code once and is told where it also stands.
        let delivered: Vec<Vec<Hit>> = answer
            .results
            .iter()
            .map(|r| {
                let at = |file: &str, start: u32, end: u32| Hit {
                    file: file.to_string(),
                    name: r.name.clone(),
                    start,
                    end,
                };
                std::iter::once(at(&r.file, r.start_line, r.end_line))
                    .chain(
                        r.copies
                            .iter()
                            .map(|c| at(&c.file, c.start_line, c.end_line)),
                    )
                    .collect()
            })
            .collect();
        let holds_target = |places: &[Hit]| places.iter().any(|h| q.gold.iter().any(|g| hit(h, g)));
        let target_delivered = delivered.iter().any(|places| holds_target(places));
        // Delivered only as outlines: located and declared, its code over the budget.
        let outline_only = target_delivered
            && !answer.results.iter().zip(&delivered).any(|(r, places)| {
                r.shown == codectx_retrieval::Shown::Full && holds_target(places)
            });
        token_counts.push(answer.estimated_tokens);
        if !delivered.is_empty() {
            let each_on_topic: Vec<bool> = delivered
                .iter()
                .map(|places| {
                    places
                        .iter()
                        .any(|h| on_topic(engine.project(), h, &q.gold))
                })
                .collect();
            let on_topic = each_on_topic.iter().filter(|&&t| t).count();
            precision_sum += on_topic as f64 / delivered.len() as f64;
            ceiling_sum += best_cut_precision(&each_on_topic);
            let in_target_files = delivered
                .iter()
                .filter(|places| {
                    places
                        .iter()
                        .any(|h| q.gold.iter().any(|g| g.file == h.file))
                })
                .count();
            file_precision_sum += in_target_files as f64 / delivered.len() as f64;
            answered += 1;
        }
        let low_confidence = answer.low_confidence && !answer.results.is_empty();
        let baseline: Vec<Hit> = bm25
            .search(&q.query, 10)
            .into_iter()
            .map(|h| Hit {
                file: h.file.clone(),
                name: h.name.clone(),
                start: h.start,
                end: h.end,
            })
            .collect();
        let b = metrics(&q.gold, &baseline);
        let row = Row {
            acc1: m[0],
            acc5: m[1],
            acc10: m[2],
            any10: f64::from(u8::from(m[4] > 0.0)),
            mrr: m[4],
            delivered: f64::from(u8::from(target_delivered && !low_confidence)),
            empty: f64::from(u8::from(answer.results.is_empty())),
            low_confidence: f64::from(u8::from(low_confidence)),
            tokens: answer.estimated_tokens as f64,
            median_tokens: 0.0,
            precision: 0.0,
            file_precision: 0.0,
            precision_ceiling: 0.0,
            bm25_acc10: b[2],
            bm25_any10: f64::from(u8::from(b[4] > 0.0)),
            bm25_mrr: b[4],
        };
        for (s, v) in sums.iter_mut().zip(row.values()) {
            *s += v;
        }
        // With each result, its score and cosine: what a calibration is measured from.
        let results: Vec<_> = hits
            .iter()
            .zip(&scores)
            .map(|(h, s)| {
                json!({"file": h.file, "name": h.name, "startLine": h.start, "endLine": h.end,
                       "score": s.final_score, "cosine": s.vector_similarity})
            })
            .collect();
        let candidates = candidate_features(engine.project(), q, &ranking.scored);
        writeln!(
            runs,
            "{}",
            json!({"id": q.id, "query": q.query, "results": results,
                   "answer": answer.results,
                   "delivered": target_delivered, "outlineOnly": outline_only,
                   "empty": answer.results.is_empty(),
                   "lowConfidence": low_confidence, "tokens": answer.estimated_tokens,
                   "candidates": candidates})
        )?;
    }
    runs.flush()?;
    let n = questions.len().max(1) as f64;
    let mut row = Row::from_values(sums.map(|s| s / n));
    token_counts.sort_unstable();
    row.median_tokens = token_counts
        .get(token_counts.len() / 2)
        .copied()
        .unwrap_or(0) as f64;
    row.precision = precision_sum / answered.max(1) as f64;
    row.file_precision = file_precision_sum / answered.max(1) as f64;
    row.precision_ceiling = ceiling_sum / answered.max(1) as f64;
    Ok(row)
}

/// The highest precision of a cut of an answer whose results are, in order, on topic or
/// not: the best share over its first `n` results, for every `n` from one.
fn best_cut_precision(on_topic: &[bool]) -> f64 {
    let mut seen = 0usize;
    on_topic
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            seen += usize::from(t);
            seen as f64 / (i + 1) as f64
        })
        .fold(0.0, f64::max)
}

/// Every candidate of the ranking, for a learned ranking to be fitted on: what the search
/// computed of it (its [`codectx_retrieval::ranker::Features`]) and whether it is a
/// target. The candidates are the channels' (never cut by the current model's score), so a
/// model trained on them does not depend on the model that ranked them.
///
/// With each, what selection reads (its lines, its tokens, whether it alone stands on one
/// word) and whether it is on topic, so a selection rule can be replayed offline exactly.
/// On-topic needs the graph, so it is computed only for candidates an answer could hold.
fn candidate_features(
    project: &codectx_retrieval::Project,
    q: &Question,
    scored: &[codectx_retrieval::Scored],
) -> Vec<serde_json::Value> {
    const ON_TOPIC_FROM_SCORE: f32 = 0.005;
    scored
        .iter()
        .filter_map(|s| {
            let chunk = project.chunk(&s.relative_path, &s.chunk_id)?;
            let as_hit = Hit::of_chunk(chunk);
            let label = q.gold.iter().any(|g| hit(&as_hit, g));
            let on_topic =
                (s.final_score >= ON_TOPIC_FROM_SCORE).then(|| on_topic(project, &as_hit, &q.gold));
            Some(
                json!({"label": label, "score": s.final_score, "features": s.features,
                        "file": as_hit.file, "name": as_hit.name, "startLine": as_hit.start, "endLine": as_hit.end,
                        "tokens": codectx_chunker::estimate_tokens(&chunk.full_source),
                        "singleWord": s.single_word, "onTopic": on_topic}),
            )
        })
        .collect()
}

/// Whether a delivered result is a target or structurally adjacent to one (issue 37's
/// structural ties): it contains a target or lies in one (a class and its method), calls or
/// is called by one, or declares the type of one's parameter or return value, or the other
/// way round.
fn on_topic(
    project: &codectx_retrieval::Project,
    result: &Hit,
    gold: &[crate::tuning::Gold],
) -> bool {
    let nests = |g: &crate::tuning::Gold| {
        result.file == g.file
            && ((result.start <= g.start && g.end <= result.end)
                || (g.start <= result.start && result.end <= g.end))
    };
    if gold.iter().any(|g| hit(result, g) || nests(g)) {
        return true;
    }
    let Some(chunk) = project.file(&result.file).and_then(|f| {
        f.chunks
            .iter()
            .find(|c| c.start_line == result.start && c.end_line == result.end)
    }) else {
        return false;
    };
    let is_gold = |s: &codectx_graph::SymbolInfo| {
        gold.iter()
            .any(|g| s.file == g.file && s.start_line <= g.end && g.start <= s.end_line)
    };
    let metadata = codectx_retrieval::symbol_metadata(project, chunk, 1);
    let calls = metadata
        .outgoing_calls
        .iter()
        .chain(&metadata.incoming_callers)
        .any(|call| is_gold(&call.symbol));
    if calls || flow_types(&metadata).any(is_gold) {
        return true;
    }
    // A target whose parameter or return type the result declares.
    let declares = |s: &codectx_graph::SymbolInfo| {
        s.file == result.file && s.start_line <= result.end && result.start <= s.end_line
    };
    gold.iter()
        .flat_map(|g| {
            project
                .file(&g.file)
                .into_iter()
                .flat_map(|f| &f.chunks)
                .filter(move |c| hit(&Hit::of_chunk(c), g))
        })
        .any(|target| {
            flow_types(&codectx_retrieval::symbol_metadata(project, target, 0)).any(declares)
        })
}

/// The project declarations of a symbol's parameter and return types.
fn flow_types(
    metadata: &codectx_graph::SymbolMetadata,
) -> impl Iterator<Item = &codectx_graph::SymbolInfo> {
    let flows = &metadata.type_flows;
    flows
        .parameters
        .iter()
        .chain(&flows.returns)
        .flat_map(|flow| &flow.declared_in)
}

#[cfg(test)]
mod tests {
    use super::best_cut_precision;

    /// The best cut may be the first result, a longer prefix, or the whole answer; an
    /// answer with nothing on topic has none above zero.
    #[test]
    fn the_best_cut_is_the_prefix_with_the_highest_share() {
        assert_eq!(best_cut_precision(&[true, false, false]), 1.0);
        assert_eq!(best_cut_precision(&[false, true, true, false]), 2.0 / 3.0);
        assert_eq!(best_cut_precision(&[false, false, true]), 1.0 / 3.0);
        assert_eq!(best_cut_precision(&[false, false]), 0.0);
        assert_eq!(best_cut_precision(&[]), 0.0);
    }
}
