//! `cargo xtask` — validation gates and benchmarks for the pipeline's phases.
//!
//! - `cargo xtask validate parser [--corpus PATH]…` prints the blueprint's Parser Validation
//!   Summary for `fixtures/parser/` (or the given files/directories) and fails on any
//!   violation of the ten global rules.
//! - `cargo xtask validate kills --root DIR [--kills 50]` SIGKILLs `mcp-server index` runs on
//!   a copy of DIR at random moments and checks that each next run leaves the index equal to
//!   a clean build.
//! - `cargo xtask bench parse --corpus PATH…` prints throughput and peak RSS of oxc parsing
//!   alone, parse + semantic, and our parser + chunker. Build with `--release` for figures.
//! - `cargo xtask query --root DIR "symbol = …"`, `cargo xtask context --root DIR …` and
//!   `cargo xtask bench skeleton --root DIR --file F` print what the retrieval and snapshot
//!   libraries answer on any project.
//! - `cargo xtask eval --corpus` scores retrieval on the tuning corpus (per package, macro
//!   per half, beside BM25); `cargo xtask eval --set FILE --root DIR` on a CommitLoc set;

mod bench;
mod bench_cli;
mod bench_query;
mod bench_worktrees;
mod bm25;
mod calls;
mod changes;
mod eval;
mod eval_corpus;
mod fuzz;
mod graph;
mod imports;
mod index;
mod kills;
mod query;
mod ranker;
mod tuning;
mod validate;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

// The allocator the product binaries use: the pipeline makes many small owned strings per
// symbol, where glibc malloc is measurably slower. Benchmarks must measure what ships.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "xtask", about = "Validation gates and benchmarks for codectx")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a phase's validation dashboard; exit non-zero when a rule is broken.
    Validate {
        #[command(subcommand)]
        phase: Phase,
    },
    /// Compare the structural graph with TypeScript LanguageService ground truth
    /// (`structure_truth.js` output, one symbol per line): callee/caller P/R/F1, ref-file
    /// counts, type hierarchy; `--show N` prints the N worst-missed symbols per metric.
    GraphAccuracy(Accuracy),
    /// Compare the graph's import edges with a language's own resolution (JSON lines of
    /// `{file, line, module, resolved}`, e.g. from `xtask/truth/python_imports.py`): the
    /// share of import statements resolved to the same file (002 SC-200).
    ImportAccuracy(Accuracy),
    /// Compare every declaration's ancestor chain from `get_symbol_hierarchy` with a language's own
    /// (JSON lines of `{file, line, name, ancestors}`, from `xtask/truth/python_hierarchy.py`
    /// or `go_hierarchy.go`): 002 SC-201.
    HierarchyAccuracy(Accuracy),
    /// Compare the graph's call edges with a language's own go-to-definition (JSON lines of
    /// `{file, line, name, target}`, from `xtask/truth/python_calls.py`): precision and
    /// recall of the call sites resolved into the project.
    CallAccuracy(Accuracy),
    /// Answer a `symbol = …` lookup on a project: connection graph + smart snapshots.
    Query {
        #[arg(long)]
        root: PathBuf,
        /// Token budget of the answer.
        #[arg(long, default_value_t = 8_000)]
        budget: usize,
        /// 1 = direct calls; N hops; -1 transitive.
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        call_depth: i32,
        query: String,
    },
    /// Seed 002's get_code_context over the matches of one or more lookups, as JSON.
    Context {
        #[arg(long)]
        root: PathBuf,
        #[arg(long)]
        max_tokens: Option<usize>,
        #[arg(long, value_enum, default_value = "breadth")]
        strategy: StrategyArg,
        /// `symbol = …` lookups, best first.
        #[arg(required = true)]
        lookups: Vec<String>,
    },
    /// Retrieval quality. With `--corpus`: the tuning corpus (questions from the JSDoc of
    /// pinned npm packages), per package and macro-averaged per half, as an agent receives
    /// it without a model, beside textbook BM25; `--set`/`--root` add a CommitLoc set as a
    /// row. Without `--corpus`: a CommitLoc set alone, for the lexical, vector and fused
    /// configurations. Writes run files.
    Eval {
        /// Pin list of the tuning corpus (`--corpus` alone: xtask/tuning-corpus.toml).
        #[arg(long, num_args = 0..=1, default_missing_value = "xtask/tuning-corpus.toml")]
        corpus: Option<PathBuf>,
        /// JSON-lines set: {"id", "query", "leaky", "gold": [{"file", "qname", "start", "end"}]}.
        #[arg(long, requires = "root")]
        set: Option<PathBuf>,
        /// The repository the set was made on.
        #[arg(long, requires = "set")]
        root: Option<PathBuf>,
        /// The model (default: none with `--corpus`, local with `--set`).
        #[arg(long, value_enum)]
        embedder: Option<eval::EmbedderArg>,
        /// Where the embedder's model is read from.
        #[arg(long)]
        model_dir: Option<PathBuf>,
        /// Directory for the run files.
        #[arg(long, default_value = "target/eval")]
        out: PathBuf,
        /// Corpus: questions per package at most (a fixed sample).
        #[arg(long, default_value_t = tuning::DEFAULT_CAP)]
        cap: usize,
        /// Corpus: only this half.
        #[arg(long, value_enum)]
        split: Option<tuning::Split>,
        /// Corpus: only these packages (repeatable).
        #[arg(long)]
        package: Vec<String>,
        /// Corpus: the relevance gate (default: the product's).
        #[arg(long)]
        min_relevance: Option<f32>,
        /// Corpus: companions' share of the best score (default: the product's).
        #[arg(long)]
        companion_share: Option<f32>,
        /// Corpus: another search option, `name=value` (repeatable), e.g. `answer_knee=0.3`.
        #[arg(long = "option")]
        overrides: Vec<String>,
        /// Index without the repository's history (to measure what it adds).
        #[arg(long)]
        no_history: bool,
        /// Corpus: the lexical channel's BM25F on LanceDB's full-text index, as the CLI runs
        /// it (default: over the fields kept in memory, as the MCP server answers agents).
        #[arg(long)]
        text_in_index: bool,
        /// Corpus: each question names the project it is asked of ("pino: …"), as users
        /// and commit subjects do; the answers should be those of the questions as written.
        #[arg(long)]
        name_the_project: bool,
        /// Also the change corpus (`--changes` alone: xtask/changes-corpus.toml): change and
        /// long questions from the repositories' git history.
        #[arg(long, num_args = 0..=1, default_missing_value = "xtask/changes-corpus.toml")]
        changes: Option<PathBuf>,
        /// Change corpus: where bare git directories are found (`<dir>/<owner>+<name>/repo`);
        /// the others are cloned into the user cache.
        #[arg(long)]
        mirrors: Option<PathBuf>,
        /// Which kinds to score (repeatable; default: every kind the options select).
        #[arg(long, value_enum)]
        kind: Vec<eval_corpus::QuestionKind>,
    },
    /// Fit the learned ranking on the tuning half's candidates (`eval --corpus --changes
    /// --out DIR` writes them), write the artifact the retrieval crate compiles in, and
    /// report the test half's ranking before and after.
    TrainRanker {
        /// The eval's run files.
        #[arg(long, default_value = "target/eval")]
        runs: PathBuf,
        /// Where the artifact goes.
        #[arg(long, default_value = "crates/retrieval/src/ranker_model.json")]
        out: PathBuf,
        /// A feature the model may not split on (repeatable): the baseline a new feature
        /// is measured against, on the same candidates.
        #[arg(long)]
        without: Vec<String>,
        /// Also report a two-fold cross-validation on the tuning half (by repository): where
        /// a choice between feature sets is made.
        #[arg(long)]
        cross_validate: bool,
        /// With --cross-validate, also re-rank the test half (read it once, for the choice
        /// the folds made).
        #[arg(long)]
        report_test: bool,
        /// Keep this model's trees and boost `--rounds` more on its margins (the shipped
        /// one: crates/retrieval/src/ranker_model.json).
        #[arg(long)]
        continue_from: Option<PathBuf>,
        /// Boosting rounds (default 200).
        #[arg(long)]
        rounds: Option<usize>,
        /// Then this many trees boosted on titled questions alone (several lines: pull
        /// requests, issues), applied to those only and calibrated on them. The shipped
        /// model: `--titled-rounds 20`.
        #[arg(long)]
        titled_rounds: Option<usize>,
        /// Grow trees leaf-wise to this many leaves, both stages (default: depth-wise to
        /// depth 6).
        #[arg(long)]
        leaves: Option<usize>,
        /// Learning rate, both stages (default 0.05).
        #[arg(long)]
        eta: Option<f64>,
    },
    /// Fuzz the parser, chunker, graph facts, answers, the `symbol =` query language and the
    /// MCP tools' arguments (cargo-fuzz on the nightly toolchain: `cargo install cargo-fuzz`).
    Fuzz {
        /// Minutes per target.
        #[arg(long, default_value_t = 10.0)]
        minutes: f64,
        /// Only these targets (repeatable; default all).
        #[arg(long)]
        target: Vec<String>,
    },
    /// Measure a phase's speed and memory.
    Bench {
        #[command(subcommand)]
        target: BenchTarget,
    },
}

#[derive(Subcommand)]
enum Phase {
    /// The blueprint's ten global rules on the parser + chunker output.
    Parser {
        /// Files or directories to validate instead of fixtures/parser/ (repeatable).
        #[arg(long)]
        corpus: Vec<PathBuf>,
    },
    /// SIGKILLs at random moments of `mcp-server index` runs on a copy of a repository;
    /// after each, the next run must leave the index equal to a clean build.
    Kills {
        #[arg(long)]
        root: PathBuf,
        /// Runs to kill while they are still going.
        #[arg(long, default_value_t = 50)]
        kills: usize,
        /// The `mcp-server` binary (default: the one beside this xtask).
        #[arg(long)]
        binary: Option<PathBuf>,
    },
}

/// A comparison of the graph with a ground truth computed on the same project.
#[derive(clap::Args)]
struct Accuracy {
    /// Project root the truth was computed on.
    #[arg(long)]
    root: PathBuf,
    /// JSON-lines truth file.
    #[arg(long)]
    truth: PathBuf,
    /// Print the first N disagreements.
    #[arg(long, default_value_t = 0)]
    show: usize,
}

#[derive(Subcommand)]
enum BenchTarget {
    /// Throughput (MB/s, files/s) and peak RSS of (a) the language's parser alone (oxc, or
    /// tree-sitter for Rust, Python, Go), (b) parse + semantic (TS/JS), (c) our parser +
    /// chunker.
    Parse {
        /// Files or directories to parse (repeatable).
        #[arg(long, required = true)]
        corpus: Vec<PathBuf>,
        /// Timed passes over the corpus; the median is reported.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Run one configuration in this process (used internally so each gets its own RSS).
        #[arg(long, hide = true)]
        only: Option<bench::Mode>,
    },
    /// File skeleton: first call (parse) vs repeated call on the unchanged file (cache).
    Skeleton {
        #[arg(long)]
        root: PathBuf,
        /// File, relative to the root.
        #[arg(long)]
        file: String,
        #[arg(long, default_value_t = 9)]
        runs: usize,
        /// Also print the skeleton.
        #[arg(long)]
        print: bool,
    },
    /// The store's sync: cold structural index, warm no-change sync, restart, one edited
    /// file, peak RSS (on --root or on a generated tree of --synthetic files).
    Index {
        #[arg(long)]
        root: Option<PathBuf>,
        /// Generate a tree of this many files instead of using --root.
        #[arg(long)]
        synthetic: Option<usize>,
        /// File (relative) to edit; default: the first indexed file.
        #[arg(long)]
        file: Option<String>,
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// First answer on a never-indexed repository, local embedding throughput, warm query
    /// latency (sync + search, as an MCP call) p50/p95.
    Query {
        #[arg(long)]
        root: PathBuf,
        #[arg(long, value_enum, default_value_t = eval::EmbedderArg::Local)]
        embedder: eval::EmbedderArg,
        /// Where the embedder's model is read from.
        #[arg(long)]
        model_dir: Option<PathBuf>,
        /// Embed at most this many chunks before the warm runs (default: all).
        #[arg(long)]
        embed_limit: Option<usize>,
        /// Queries, one per line or JSON lines with a `query` field (default: 20 built in).
        #[arg(long)]
        queries: Option<PathBuf>,
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// Graph facts for every file vs parsing alone, one symbol's metadata, one re-link.
    Graph {
        /// Project root.
        #[arg(long)]
        root: PathBuf,
        #[arg(long, default_value_t = 5)]
        runs: usize,
    },
    /// The `mcp-server` binary as a user runs it, whole processes: cold `index`, no-change
    /// `index` and one `search`, wall time and peak RSS.
    Cli {
        /// Project root.
        #[arg(long)]
        root: PathBuf,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// The question searched for.
        #[arg(long, default_value = "where is the configuration parsed")]
        query: String,
        /// The binary (default: `mcp-server` next to this xtask, same profile).
        #[arg(long)]
        binary: Option<PathBuf>,
    },
    /// Worktrees of one repository sharing vectors (issue 40): a clone's cold `index`, then
    /// a new worktree's first `index` at each of `--commits` commits spread over `--since`,
    /// a branch switch to content seen before and back, and the disk they take.
    Worktrees {
        /// A clone with history (it is cloned again into --out).
        #[arg(long)]
        repo: PathBuf,
        /// Where the clone and its worktrees go (emptied first).
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 10)]
        commits: usize,
        /// The newest commit.
        #[arg(long, default_value = "HEAD")]
        rev: String,
        /// How far back the commits go, in git's `--since` syntax.
        #[arg(long, default_value = "1 month ago")]
        since: String,
        /// Embedding provider (default: the configuration's, the local model).
        #[arg(long)]
        embedder: Option<String>,
        /// The binary (default: `mcp-server` next to this xtask, same profile).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Main moves forward through the commits and a worktree branches at each (default:
        /// main stays at the newest, worktrees start at older commits).
        #[arg(long)]
        main_advances: bool,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum StrategyArg {
    Breadth,
    Depth,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Query {
            root,
            budget,
            call_depth,
            query,
        } => query::query(&root, &query, budget, call_depth),
        Command::Context {
            root,
            max_tokens,
            strategy,
            lookups,
        } => {
            let strategy = match strategy {
                StrategyArg::Breadth => codectx_retrieval::Strategy::Breadth,
                StrategyArg::Depth => codectx_retrieval::Strategy::Depth,
            };
            query::context(&root, &lookups, max_tokens, strategy)
        }
        Command::Bench {
            target:
                BenchTarget::Skeleton {
                    root,
                    file,
                    runs,
                    print,
                },
        } => query::bench_skeleton(&root, &file, runs, print),
        Command::Bench {
            target:
                BenchTarget::Query {
                    root,
                    embedder,
                    model_dir,
                    embed_limit,
                    queries,
                    runs,
                },
        } => bench_query::query(bench_query::QueryBench {
            root: &root,
            embedder,
            model_dir: model_dir.as_deref(),
            embed_limit,
            queries: queries.as_deref(),
            runs,
        }),
        Command::TrainRanker {
            runs,
            out,
            without,
            cross_validate,
            report_test,
            continue_from,
            rounds,
            titled_rounds,
            leaves,
            eta,
        } => ranker::run(&ranker::TrainRanker {
            runs,
            out: if out.is_relative() {
                workspace_root().join(out)
            } else {
                out
            },
            corpus_pins: workspace_root().join("xtask/tuning-corpus.toml"),
            changes_pins: workspace_root().join("xtask/changes-corpus.toml"),
            without,
            cross_validate,
            report_test,
            continue_from,
            rounds,
            titled_rounds,
            shape: ranker::TreeShape {
                max_leaves: leaves,
                eta: eta.unwrap_or(ranker::TreeShape::default().eta),
            },
        }),
        Command::Eval {
            corpus,
            set,
            root,
            out,
            cap,
            split,
            package,
            min_relevance,
            companion_share,
            overrides,
            embedder,
            model_dir,
            no_history,
            text_in_index,
            name_the_project,
            changes,
            mirrors,
            kind,
        } if corpus.is_some() || changes.is_some() => eval_corpus::run(eval_corpus::CorpusEval {
            changes: changes.map(|c| {
                if c.is_relative() && !c.exists() {
                    workspace_root().join(c)
                } else {
                    c
                }
            }),
            mirrors,
            kinds: kind,
            history: !no_history,
            name_the_project,
            text_search: if text_in_index {
                codectx_store::TextSearch::Index
            } else {
                codectx_store::TextSearch::Memory
            },
            embedder: eval::load_embedder(
                embedder.unwrap_or(eval::EmbedderArg::None),
                model_dir.as_deref(),
            )?,
            // The default pin list is the workspace's, wherever xtask runs from.
            pins: corpus.map(|pins| {
                if pins.is_relative() && !pins.exists() {
                    workspace_root().join(&pins)
                } else {
                    pins
                }
            }),
            overrides: &overrides,
            min_relevance,
            companion_share,
            cap,
            split,
            only: &package,
            commitloc: set.as_deref().zip(root.as_deref()),
            out: &out,
        }),
        Command::Eval {
            set,
            root,
            embedder,
            model_dir,
            out,
            no_history,
            ..
        } => match set.zip(root) {
            Some((set, root)) => eval::eval(
                &set,
                &root,
                eval::load_embedder(
                    embedder.unwrap_or(eval::EmbedderArg::Local),
                    model_dir.as_deref(),
                )?,
                &out,
                !no_history,
            ),
            None => anyhow::bail!("eval needs --corpus, or --set and --root"),
        },
        Command::Fuzz { minutes, target } => {
            let targets = if target.is_empty() {
                codectx_fuzz::TARGETS.map(String::from).to_vec()
            } else {
                target
            };
            fuzz::run(&workspace_root(), &targets, minutes)
        }
        Command::GraphAccuracy(a) => graph::accuracy(&a.root, &a.truth, a.show),
        Command::ImportAccuracy(a) => imports::accuracy(&a.root, &a.truth, a.show),
        Command::HierarchyAccuracy(a) => imports::hierarchy_accuracy(&a.root, &a.truth, a.show),
        Command::CallAccuracy(a) => calls::accuracy(&a.root, &a.truth, a.show),
        Command::Bench {
            target:
                BenchTarget::Index {
                    root,
                    synthetic,
                    file,
                    runs,
                },
        } => index::bench(root.as_deref(), synthetic, runs, file.as_deref()),
        Command::Bench {
            target: BenchTarget::Graph { root, runs },
        } => graph::bench(&root, runs),
        Command::Bench {
            target:
                BenchTarget::Cli {
                    root,
                    runs,
                    query,
                    binary,
                },
        } => bench_cli::bench(&root, runs, &query, binary),
        Command::Bench {
            target:
                BenchTarget::Worktrees {
                    repo,
                    out,
                    commits,
                    rev,
                    since,
                    embedder,
                    binary,
                    main_advances,
                },
        } => bench_worktrees::bench(bench_worktrees::WorktreesBench {
            repo: &repo,
            out: &out,
            commits,
            rev: &rev,
            since: &since,
            embedder: embedder.as_deref(),
            binary,
            main_advances,
        }),
        Command::Validate {
            phase:
                Phase::Kills {
                    root,
                    kills,
                    binary,
                },
        } => kills::run(kills::KillRun {
            root: &root,
            kills,
            binary,
        }),
        Command::Validate {
            phase: Phase::Parser { corpus },
        } => {
            let inputs = if corpus.is_empty() {
                vec![workspace_root().join("fixtures").join("parser")]
            } else {
                corpus
            };
            validate::parser(&inputs)
        }
        Command::Bench {
            target: BenchTarget::Parse { corpus, runs, only },
        } => bench::parse(&corpus, runs, only),
    }
}

/// The `mcp-server` binary commands that time or kill whole processes run: `binary`, or the
/// one built beside this xtask (same profile).
pub(crate) fn mcp_server_binary(binary: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let binary = match binary {
        Some(b) => b,
        None => std::env::current_exe()?.with_file_name("mcp-server"),
    };
    anyhow::ensure!(
        binary.is_file(),
        "{} is missing: build it with `cargo build [--release] -p codectx-mcp`",
        binary.display()
    );
    Ok(binary)
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Every TS/JS file under `inputs` (files are taken as given), sorted, with the path to show.
/// Directories are walked by the product's file selection, configured for package trees:
/// only `node_modules` is skipped (packages ship their code in `dist/` or `build/`) and no
/// size limit applies.
pub(crate) fn source_files(inputs: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, String)>> {
    let selection = codectx_files::FileSelection::package_tree();
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            out.extend(selection.walk(input).into_iter().map(|f| (f.abs, f.path)));
        } else if input.is_file() {
            let shown = input
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((input.clone(), shown));
        } else {
            anyhow::bail!("{}: no such file or directory", input.display());
        }
    }
    Ok(out)
}
