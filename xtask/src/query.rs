//! Query commands: what the retrieval library answers, printed, on any project.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use codectx_retrieval::{AnswerOptions, Project, Strategy, SymbolQuery, code_context, lookup};

/// `cargo xtask query --root DIR "symbol = …"`: the answer's content items as an agent
/// receives them.
pub fn query(root: &Path, query: &str, budget: usize, call_depth: i32) -> anyhow::Result<()> {
    let started = Instant::now();
    let project = Project::open(root)?;
    let opened = started.elapsed();
    let options = AnswerOptions { budget, call_depth };
    let Some(answer) = codectx_retrieval::search_symbol(&project, query, &options) else {
        bail!(
            "{query:?} is not a lookup (`symbol = …`); natural-language search needs the retrieval pipeline"
        );
    };
    let answer = answer?;
    for item in &answer.content {
        println!("--- priority {:.2}", item.priority);
        println!("{}", item.text);
    }
    if let Some(m) = &answer.message {
        println!("--- {m}");
    }
    eprintln!(
        "{} files opened in {:.2}s; answer {} tokens of {}",
        project.files().len(),
        opened.as_secs_f64(),
        answer.estimated_tokens,
        answer.budget
    );
    Ok(())
}

/// `cargo xtask context --root DIR --max-tokens N --strategy S "symbol = A" …`: seed 002's
/// get_code_context over the lookups' matches, in the given order, as JSON.
pub fn context(
    root: &Path,
    lookups: &[String],
    max_tokens: Option<usize>,
    strategy: Strategy,
) -> anyhow::Result<()> {
    let project = Project::open(root)?;
    let mut ranked = Vec::new();
    for q in lookups {
        let parsed = SymbolQuery::parse(q)
            .with_context(|| format!("{q:?} is not a `symbol = …` lookup"))??;
        ranked.extend(lookup(&project, &parsed).matches);
    }
    let ctx = code_context(&project, &ranked, max_tokens, strategy);
    println!("{}", serde_json::to_string_pretty(&ctx)?);
    Ok(())
}

/// `cargo xtask bench skeleton --root DIR --file F`: the first skeleton (read, hash, parse)
/// against repeated calls on the unchanged file (read, hash, cache hit), medians.
pub fn bench_skeleton(root: &Path, file: &str, runs: usize, print: bool) -> anyhow::Result<()> {
    let path = root.join(file);
    let cache = codectx_snapshot::SkeletonCache::default();
    let call = || -> anyhow::Result<std::sync::Arc<codectx_snapshot::FileSkeleton>> {
        let source = codectx_parser::read_source(&path)?;
        Ok(cache.get(file, &source))
    };
    let mut first = Vec::new();
    let mut repeat = Vec::new();
    let mut skeleton = None;
    for _ in 0..runs.max(1) {
        let fresh = codectx_snapshot::SkeletonCache::default();
        let t = Instant::now();
        let source = codectx_parser::read_source(&path)?;
        fresh.get(file, &source);
        first.push(t.elapsed().as_secs_f64() * 1e3);
    }
    call()?;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        skeleton = Some(call()?);
        repeat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let stats = cache.stats();
    if print && let Some(s) = &skeleton {
        println!("{}", s.text);
    }
    println!(
        "skeleton {file}: first call {:.3} ms, repeated call {:.3} ms (medians of {runs}); cache: {} parse(s), {} hit(s)",
        median(&mut first),
        median(&mut repeat),
        stats.parses,
        stats.hits
    );
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
