//! `cargo xtask bench index`: the store's sync on a real tree or a synthetic one.
//!
//! Figures: cold structural index (no embeddings), warm no-change sync on an open store,
//! restart (open + no-change sync), one edited file to fresh rows and to a fresh answer,
//! parses per sync, index size on disk, peak RSS. Medians over
//! `runs`; every run of the cold build uses a fresh index directory.

use std::path::{Path, PathBuf};
use std::time::Instant;

use codectx_store::{Store, StoreOptions, SyncStats, SyncTimings};

pub fn bench(
    root: Option<&Path>,
    synthetic: Option<usize>,
    runs: usize,
    file: Option<&str>,
) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        println!("warning: debug build; run `cargo xtask-release bench index …` for real figures");
    }
    let generated;
    let root: PathBuf = match (root, synthetic) {
        (Some(root), _) => root.canonicalize()?,
        (None, Some(files)) => {
            generated = tempfile::tempdir()?;
            synthesize(generated.path(), files)?;
            generated.path().to_path_buf()
        }
        (None, None) => anyhow::bail!("give --root DIR or --synthetic FILES"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(&root, runs.max(1), file))
}

async fn run(root: &Path, runs: usize, file: Option<&str>) -> anyhow::Result<()> {
    let index_parent = tempfile::tempdir()?;
    let options = |n: usize| StoreOptions {
        uri: Some(
            index_parent
                .path()
                .join(format!("index-{n}"))
                .to_string_lossy()
                .into_owned(),
        ),
        ..StoreOptions::default()
    };

    let mut cold = Vec::new();
    let mut first: Option<SyncStats> = None;
    let mut cold_parses = 0;
    let mut cold_steps = Vec::new();
    for n in 0..runs {
        let start = Instant::now();
        let parses = codectx_parser::parse_count();
        let mut store = Store::open(root, options(n)).await?;
        let stats = store.sync(None, &()).await?;
        cold.push(start.elapsed().as_secs_f64() * 1e3);
        cold_parses = codectx_parser::parse_count() - parses;
        cold_steps.push(stats.timings);
        first.get_or_insert(stats);
    }
    let rss_after_cold = crate::bench::peak_rss_mb();
    let first = first.expect("runs >= 1");
    println!(
        "{}: {} files seen, {} parsed ({cold_parses} parses, history attribution's parses of past versions included), {} skipped, {} chunks",
        root.display(),
        first.files_seen,
        first.files_parsed,
        first.files_skipped,
        first.chunks_written
    );
    report("cold structural index", &mut cold, "ms");
    report_steps(&cold_steps);
    println!(
        "index size on disk: {:.1} MB",
        dir_size(&index_parent.path().join("index-0")) as f64 / 1e6
    );

    let mut store = Store::open(root, options(0)).await?;
    let (mut warm, mut warm_steps) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(5) {
        let start = Instant::now();
        let stats = store.sync(None, &()).await?;
        warm.push(start.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(
            stats.files_parsed == 0 && stats.commits == 0,
            "not a no-change sync: {stats:?}"
        );
        warm_steps.push(stats.timings);
    }
    report("warm no-change sync", &mut warm, "ms");
    report_steps(&warm_steps);

    let mut restart = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let mut reopened = Store::open(root, options(0)).await?;
        reopened.sync(None, &()).await?;
        restart.push(start.elapsed().as_secs_f64() * 1e3);
    }
    report("restart (open + no-change sync)", &mut restart, "ms");

    // One edited file: a comment appended changes its content hash; the edit is undone
    // (and synced, untimed) after each run so every run starts from the same index.
    let file = match file {
        Some(f) => f.to_string(),
        None => store
            .files()
            .filter(|f| f.chunk_count > 0)
            .map(|f| f.path.clone())
            .min()
            .ok_or_else(|| anyhow::anyhow!("no indexed file to edit"))?,
    };
    let path = root.join(&file);
    let original = std::fs::read(&path)?;
    let mut edit = Vec::new();
    let mut steps: Vec<SyncTimings> = Vec::new();
    for n in 0..runs.max(5) {
        let mut edited = original.clone();
        edited.extend_from_slice(format!("\n// edit {n}\n").as_bytes());
        std::fs::write(&path, &edited)?;
        let start = Instant::now();
        let stats = store.sync(None, &()).await;
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        std::fs::write(&path, &original)?;
        let stats = stats?;
        anyhow::ensure!(
            stats.files_parsed == 1,
            "expected one parsed file: {stats:?}"
        );
        edit.push(elapsed);
        steps.push(stats.timings);
        store.sync(None, &()).await?;
    }
    report(
        &format!("one edited file ({file}) to fresh rows"),
        &mut edit,
        "ms",
    );
    report_steps(&steps);
    drop(store);

    // The same edit, to a fresh answer: what an agent's next call waits for (the engine
    // syncs, patches its project and searches).
    let mut engine = codectx_retrieval::Engine::open(
        root,
        codectx_retrieval::EngineOptions {
            store: options(0),
            ..Default::default()
        },
    )
    .await?;
    let query = std::path::Path::new(&file)
        .file_stem()
        .map_or_else(|| file.clone(), |s| s.to_string_lossy().into_owned());
    let search = codectx_retrieval::SearchOptions::default();
    let mut answer = Vec::new();
    let (mut refreshed, mut patched, mut answered) = (Vec::new(), Vec::new(), Vec::new());
    let mut parses = Vec::new();
    for n in 0..runs.max(5) {
        let mut edited = original.clone();
        edited.extend_from_slice(format!("\n// answer edit {n}\n").as_bytes());
        std::fs::write(&path, &edited)?;
        let before = codectx_parser::parse_count();
        // `Engine::search` is these two calls; timed apart to say where the time goes.
        let start = Instant::now();
        let outcome = async {
            let stats = engine.refresh(&()).await?;
            let refresh = start.elapsed();
            engine.answer(&query, &search, 1).await?;
            anyhow::Ok((stats, refresh))
        }
        .await;
        let elapsed = start.elapsed();
        parses.push(codectx_parser::parse_count() - before);
        // Undone before `?`, so a failure leaves the tree as it was.
        std::fs::write(&path, &original)?;
        let (stats, refresh) = outcome?;
        let sync: std::time::Duration = stats.timings.steps().iter().map(|(_, t)| *t).sum();
        answer.push(elapsed.as_secs_f64() * 1e3);
        refreshed.push(sync.as_secs_f64() * 1e3);
        patched.push((refresh.saturating_sub(sync)).as_secs_f64() * 1e3);
        answered.push((elapsed - refresh).as_secs_f64() * 1e3);
        engine.search(&query, &search, 1).await?;
    }
    report(
        &format!("one edited file to a fresh answer (sync + search {query:?}; parses {parses:?})"),
        &mut answer,
        "ms",
    );
    report("  of which the sync", &mut refreshed, "ms");
    report("  of which patching the project", &mut patched, "ms");
    report("  of which the answer", &mut answered, "ms");
    println!(
        "peak RSS after the cold builds: {rss_after_cold:.0} MB; at the end: {:.0} MB",
        crate::bench::peak_rss_mb()
    );
    Ok(())
}

/// The median of each sync step over `runs`, on one line.
fn report_steps(runs: &[SyncTimings]) {
    let Some(first) = runs.first() else { return };
    let medians: Vec<String> = (0..first.steps().len())
        .map(|i| {
            let mut ms: Vec<f64> = runs
                .iter()
                .map(|t| t.steps()[i].1.as_secs_f64() * 1e3)
                .collect();
            ms.sort_by(f64::total_cmp);
            format!("{} {:.1}", first.steps()[i].0, ms[ms.len() / 2])
        })
        .collect();
    println!("  sync steps, median ms: {}", medians.join(", "));
}

/// Bytes of every file under `dir` (symlinks not followed).
pub(crate) fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

fn report(label: &str, samples: &mut [f64], unit: &str) {
    samples.sort_by(f64::total_cmp);
    let median = samples[samples.len() / 2];
    println!(
        "{label:<48} median {median:>9.1} {unit}  (min {:.1}, max {:.1}, n={})",
        samples[0],
        samples[samples.len() - 1],
        samples.len()
    );
}

/// A tree of `files` TypeScript modules in nested directories that import each other,
/// with classes, functions, interfaces and JSDoc — the shapes the chunker and graph see in
/// real projects, at a size we choose.
fn synthesize(root: &Path, files: usize) -> anyhow::Result<()> {
    for i in 0..files {
        let dir = root.join(format!("src/pkg{}/mod{}", i % 25, (i / 25) % 16));
        std::fs::create_dir_all(&dir)?;
        let dep = if i == 0 { 0 } else { (i * 7919) % i };
        let dep_dir = format!("../../pkg{}/mod{}", dep % 25, (dep / 25) % 16);
        let text = format!(
            "import {{ Service{dep}, helper{dep} }} from '{dep_dir}/file{dep}';\n\n\
             /** Options of service {i}. */\n\
             export interface Options{i} {{\n  retries: number;\n  name?: string;\n}}\n\n\
             /** Service {i}: wraps service {dep}. */\n\
             export class Service{i} {{\n  private readonly inner = new Service{dep}();\n\n  \
             constructor(private readonly options: Options{i}) {{}}\n\n  \
             run(input: string): string {{\n    const value = helper{dep}(input);\n    \
             return this.inner.run(value) + this.options.retries;\n  }}\n\n  \
             async stop(): Promise<void> {{\n    await Promise.resolve(this.options.name);\n  }}\n}}\n\n\
             export function helper{i}(input: string): string {{\n  return input.trim() + '{i}';\n}}\n"
        );
        std::fs::write(dir.join(format!("file{i}.ts")), text)?;
    }
    Ok(())
}
