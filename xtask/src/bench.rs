//! `cargo xtask bench parse`: what our parser + chunker cost on top of the language's
//! parser alone (oxc for TS/JS, tree-sitter's grammar for Rust, Python and Go).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// (a) The language's parser alone: oxc_parser, or tree-sitter's grammar.
    Oxc,
    /// (b) oxc_parser + oxc_semantic (tree-sitter files: the parse alone, as in (a)).
    Semantic,
    /// (c) codectx parser + chunker.
    Chunker,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Oxc => "(a) parse alone",
            Mode::Semantic => "(b) parse + semantic",
            Mode::Chunker => "(c) parser + chunker",
        }
    }
}

pub fn parse(inputs: &[PathBuf], runs: usize, only: Option<Mode>) -> anyhow::Result<()> {
    let Some(mode) = only else {
        // Each configuration in its own process, so each peak RSS is its own.
        let exe = std::env::current_exe()?;
        if cfg!(debug_assertions) {
            println!(
                "warning: debug build; run `cargo xtask-release bench parse …` or `cargo run --release -p xtask -- bench parse …` for real figures"
            );
        }
        for mode in [Mode::Oxc, Mode::Semantic, Mode::Chunker] {
            let mut cmd = Command::new(&exe);
            cmd.args([
                "bench",
                "parse",
                "--runs",
                &runs.to_string(),
                "--only",
                &format!("{mode:?}").to_lowercase(),
            ]);
            for input in inputs {
                cmd.arg("--corpus").arg(input);
            }
            let status = cmd.status()?;
            anyhow::ensure!(status.success(), "{} failed", mode.label());
        }
        return Ok(());
    };
    let files = crate::source_files(inputs)?;
    let sources: Vec<(String, String)> = files
        .iter()
        .filter_map(|(path, shown)| {
            codectx_parser::read_source(path)
                .ok()
                .map(|s| (shown.clone(), s))
        })
        .collect();
    let bytes: usize = sources.iter().map(|(_, s)| s.len()).sum();
    let mut times = Vec::with_capacity(runs);
    let mut work = 0usize;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        for (name, source) in &sources {
            work += run_one(mode, name, source);
        }
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "{:<22} {:>8.1} MB/s {:>9.1} files/s  median {:>7.3} s of {} runs  peak RSS {:>6.1} MB  ({} files, {:.1} MB, work {})",
        mode.label(),
        bytes as f64 / 1e6 / median,
        sources.len() as f64 / median,
        median,
        times.len(),
        peak_rss_mb(),
        sources.len(),
        bytes as f64 / 1e6,
        work / times.len(),
    );
    Ok(())
}

/// Does one configuration's work on one file; returns a count so nothing is optimized away.
fn run_one(mode: Mode, name: &str, source: &str) -> usize {
    if mode != Mode::Chunker
        && let Some(grammar) = tree_sitter_grammar(name)
    {
        TREE_SITTER.with(|parser| {
            let mut parser = parser.borrow_mut();
            let _ = parser.set_language(&grammar);
            parser
                .parse(source, None)
                .map_or(0, |tree| tree.root_node().named_child_count())
        })
    } else {
        run_oxc_or_ours(mode, name, source)
    }
}

thread_local! {
    static TREE_SITTER: std::cell::RefCell<tree_sitter::Parser> =
        std::cell::RefCell::new(tree_sitter::Parser::new());
}

/// The tree-sitter grammar the parser reads `name` with, if it is not a TS/JS file.
fn tree_sitter_grammar(name: &str) -> Option<tree_sitter::Language> {
    Some(match codectx_parser::Language::from_path(name)? {
        codectx_parser::Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        codectx_parser::Language::Python => tree_sitter_python::LANGUAGE.into(),
        codectx_parser::Language::Go => tree_sitter_go::LANGUAGE.into(),
        _ => return None,
    })
}

fn run_oxc_or_ours(mode: Mode, name: &str, source: &str) -> usize {
    match mode {
        Mode::Oxc | Mode::Semantic => {
            let allocator = Allocator::default();
            let ret =
                Parser::new(&allocator, source, codectx_parser::source_type_for(name)).parse();
            if mode == Mode::Oxc {
                return ret.program.body.len();
            }
            let semantic = SemanticBuilder::new().build(&ret.program).semantic;
            semantic.scoping().symbols_len()
        }
        Mode::Chunker => {
            let parsed = codectx_parser::parse_source(name, source);
            codectx_chunker::chunk_file(&parsed, source, name).len()
        }
    }
}

/// Peak resident set size of this process (VmHWM), in MB; 0 where /proc is unavailable.
pub(crate) fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
