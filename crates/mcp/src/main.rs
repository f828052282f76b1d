//! `mcp-server`: code context for AI coding agents over MCP (stdio), and the same engine
//! on the command line.
//!
//! With no subcommand (or `serve`) it speaks MCP on stdin/stdout; logs go to stderr.
//! `index`, `status`, `search` and `lookup` are for people and scripts. The work is in the
//! `codectx_mcp` library; this file parses the arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use codectx_mcp::watch::WatchMode;
use codectx_mcp::{cli, config, setup};

// The pipeline makes many small owned strings per symbol, where glibc malloc is slower.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CONFIG_HELP: &str = "\
Configuration (TOML; --config FILE, else <root>/.codectx.toml, else <user config dir>/codectx/config.toml):
  [index]      dir = \"<git dir>/codectx/index\" (outside git \"<root>/.codectx\")   max_file_bytes = 2097152   skip_dirs = [node_modules, dist, build, out, coverage, .git]   embed_step = 64
               shared_vectors = \"repository\" | \"off\" | DIR (vectors shared by text between worktrees and refs: <common git dir>/codectx/vectors)   shared_vectors_mb = 512
               shared_parses = \"repository\" | \"off\" | DIR (each file version parsed once for all worktrees and refs: <common git dir>/codectx/parsed)
  [embedding]  provider = \"local\" | \"static\" | \"voyage\" | \"openai\" | \"none\"   (default local: all-MiniLM-L6-v2 on the CPU)
               model (hub name for local/static; default potion-code-16M-v2 for static), dimension, base_url (openai-compatible
               servers), model_dir (local/static: default the user cache, filled by `mcp-server fetch-model`),
               vector_floor, vector_ceiling (override the model's calibration)
  [rerank]     provider = \"none\" | \"voyage\"
  [search]     min_relevance = 0.04  max_tokens = 8000   call_depth = 1   max_candidates = 40 (vector)
               lexical_candidates = 100 (BM25, names, quoted)
API keys come only from the environment: VOYAGE_API_KEY, OPENAI_API_KEY. Logs: RUST_LOG (default info), on stderr.";

#[derive(Parser)]
#[command(
    name = "mcp-server",
    version,
    about = "Code context for AI coding agents: search a TypeScript, JavaScript, Rust, Python or Go repository over MCP or from the terminal",
    after_help = CONFIG_HELP
)]
struct Cli {
    /// Project root to index and search.
    #[arg(long, global = true, default_value = ".")]
    root: PathBuf,
    /// Configuration file (default: `<root>/.codectx.toml`, then the user config file).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Embedding provider, overriding the configuration.
    #[arg(long, global = true, value_enum)]
    embedder: Option<config::Provider>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve MCP on stdin/stdout (the default).
    Serve {
        /// Watch the files and sync when they change. The default on Linux, where an answer
        /// reads the watch's queue and so never misses an edit made before the call.
        /// Elsewhere a change reaches the watch a moment after it is made.
        #[arg(long)]
        watch: bool,
        /// Sync before every answer (a walk of the tree) instead of watching: for file
        /// systems that report no changes (network mounts, some container bind mounts).
        #[arg(long, conflicts_with = "watch")]
        no_watch: bool,
    },
    /// Build or update the index (structure, then vectors) with a progress bar.
    Index {
        /// Structure only: leave vectors for later (the server computes them in the
        /// background).
        #[arg(long)]
        no_embed: bool,
    },
    /// Print what the index holds.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Search like `codebase_search`; prints the answer, or results as JSON.
    Search(cli::SearchArgs),
    /// Look a symbol up (`symbol = [path >] [Parent >] name`) and print its SymbolMetadata.
    Lookup {
        #[arg(long)]
        json: bool,
        /// Connection-graph call depth (1 direct, N hops, -1 transitive).
        #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
        call_depth: i32,
        /// Look up at this git branch, tag or commit instead of the working tree.
        #[arg(long = "ref")]
        git_ref: Option<String>,
        query: String,
    },
    /// Download the configured in-process model (local or static) from the Hugging Face hub
    /// (or `$HF_ENDPOINT`) into the user cache, where later runs find it offline.
    FetchModel,
    /// Register this server with an agent: writes or merges its MCP configuration for the
    /// repository at --root (or user-wide), keeping a .bak of a changed file.
    Setup {
        #[arg(value_enum)]
        agent: setup::Agent,
        /// The user-wide configuration instead of the repository's.
        #[arg(long)]
        global: bool,
        /// Show the change as a diff without writing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Turns transparent huge pages off for this process. mimalloc asks for them, and the kernel
/// then zeroes 2 MB at the first touch of each: a search on babel (17,500 files) spent a
/// quarter of its time zeroing pages and held 190 MB more than with ordinary pages
/// (750 → 560 MB peak).
#[cfg(target_os = "linux")]
fn without_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process's memory map.
    let status = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if status != 0 {
        tracing::debug!(
            "transparent huge pages stay on: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,lance=warn,lancedb=warn")
            }),
        )
        .with_ansi(false)
        .init();
    #[cfg(target_os = "linux")]
    without_transparent_huge_pages();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    // The process ends here: the runtime is left to it, not dropped. Dropping it cancels
    // the background reads still in flight (a server's copy of the full-text fields, read
    // when the index opens), and LanceDB's scans unwrap their cancelled subtasks' results: a
    // panic message at such an exit. Writes were waited for (`Service::shutdown`); one the
    // runtime dropped would have been cut as a kill cuts it, and is repaired the same way.
    std::mem::forget(runtime);
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let root = cli
        .root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("the root {} cannot be opened: {e}", cli.root.display()))?;
    if !root.is_dir() {
        anyhow::bail!("the root {} is not a directory", root.display());
    }
    let (mut config, from) = config::Config::load(&root, cli.config.as_deref())?;
    if let Some(provider) = cli.embedder {
        config.embedding.provider = provider;
    }
    if let Some(from) = &from {
        tracing::debug!("configuration from {}", from.display());
    }
    match cli.command.unwrap_or(Command::Serve {
        watch: false,
        no_watch: false,
    }) {
        Command::Serve { watch, no_watch } => {
            cli::serve(root, config, WatchMode::of_flags(watch, no_watch)).await
        }
        Command::Index { no_embed } => cli::index(&root, &config, !no_embed).await,
        Command::Status { json } => cli::status(&root, &config, json).await,
        Command::Search(args) => cli::search(&root, &config, args).await,
        Command::Lookup {
            json,
            call_depth,
            git_ref,
            query,
        } => cli::lookup(&root, &config, &query, call_depth, json, git_ref.as_deref()).await,
        Command::FetchModel => cli::fetch_model(&config).await,
        Command::Setup {
            agent,
            global,
            dry_run,
        } => cli::setup(&root, agent, global, dry_run),
    }
}
