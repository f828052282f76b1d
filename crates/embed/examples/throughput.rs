//! Embedding throughput of an in-process model on a repository's real chunks, the way the
//! index embeds them (each model's own view of a chunk, in the store's batch size).
//!
//! ```text
//! cargo run --release -p codectx-embed --example throughput -- \
//!     --kind static --model <model dir> --root <repository> [--limit 2000] [--runs 3]
//! ```
//!
//! Prints chunks per second for each run and their median. Build in release: a debug
//! build measures the compiler, not the model.

use std::path::{Path, PathBuf};
use std::time::Instant;

use codectx_embed::{Embedder, EmbeddingView, LocalEmbedder, StaticEmbedder};

/// Chunks per call, as the store's embedding step sends them.
const BATCH: usize = 64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut kind, mut model, mut root) = (String::new(), PathBuf::new(), PathBuf::new());
    let (mut limit, mut runs) = (2000usize, 3usize);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--kind" => kind = value,
            "--model" => model = value.into(),
            "--root" => root = value.into(),
            "--limit" => limit = value.parse()?,
            "--runs" => runs = value.parse()?,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    let embedder: Box<dyn Embedder> = match kind.as_str() {
        "static" => Box::new(StaticEmbedder::load(&model)?),
        "local" => Box::new(LocalEmbedder::load(&model)?),
        _ => return Err("--kind is static or local".into()),
    };
    let view = embedder.spec().view;
    let texts = chunk_texts(&root, view, limit);
    let characters: usize = texts.iter().map(String::len).sum();
    println!(
        "{}: {} chunks of {} ({} view, {:.0} bytes each on average)",
        embedder.spec().model,
        texts.len(),
        root.display(),
        view.as_str(),
        characters as f64 / texts.len().max(1) as f64
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().build()?;
    let mut rates = Vec::new();
    for run in 1..=runs.max(1) {
        let started = Instant::now();
        for batch in texts.chunks(BATCH) {
            runtime.block_on(embedder.embed_documents(batch))?;
        }
        let rate = texts.len() as f64 / started.elapsed().as_secs_f64();
        println!("run {run}: {rate:.0} chunks/s");
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!("median: {:.0} chunks/s", rates[rates.len() / 2]);
    Ok(())
}

/// The first `limit` chunks of the files the index would hold (the product's file
/// selection, in path order), as `view` presents them to a model.
fn chunk_texts(root: &Path, view: EmbeddingView, limit: usize) -> Vec<String> {
    let files = codectx_files::FileSelection::default().walk(root);
    let mut texts = Vec::new();
    for file in files {
        let Ok(source) = codectx_parser::read_source(&file.abs) else {
            continue;
        };
        let parsed = codectx_parser::parse_source(&file.path, &source);
        for chunk in codectx_chunker::chunk_file(&parsed, &source, &file.path) {
            texts.push(match view {
                EmbeddingView::Code => chunk.embedding_text.to_string(),
                EmbeddingView::NaturalLanguage => codectx_chunker::natural_language_view(&chunk),
            });
            if texts.len() == limit {
                return texts;
            }
        }
    }
    texts
}
