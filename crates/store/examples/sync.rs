//! Syncs a project's index and prints what the sync did, as JSON.
//!
//! ```text
//! cargo run -p codectx-store --example sync -- ROOT [--uri URI] [--embed DIM] [--crash-at EVENT]
//! ```
//!
//! `--embed DIM` embeds with the deterministic `TokenHashEmbedder` (no model needed).
//! `--crash-at` aborts the process at a sync event (`marked-dirty`, `chunks-restored`,
//! `chunks-written`, `files-written`, `embedded`) — how the fault tests kill a sync at known points. Our
//! warnings, and other crates' errors, go to stderr.

use std::path::PathBuf;

use codectx_store::testing::TokenHashEmbedder;
use codectx_store::{Embedder, Store, StoreOptions, SyncEvent};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Our warnings (a shared-vectors cache that failed and was done without) go to stderr,
    // where the fault tests expect none; LanceDB's only when they are errors (it may warn
    // while it retries a commit another process's write conflicted with).
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        )
        .with(
            tracing_subscriber::filter::Targets::new()
                .with_target("codectx", tracing::Level::WARN)
                .with_default(tracing::Level::ERROR),
        )
        .init();
    let mut args = std::env::args().skip(1);
    let mut root = None;
    let mut options = StoreOptions::default();
    let mut embedder = None;
    let mut crash_at = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--uri" => options.uri = args.next(),
            "--embed" => {
                let dim = args.next().and_then(|d| d.parse().ok()).unwrap_or(16);
                let e = TokenHashEmbedder::new(dim);
                options.embedding = Some(e.spec());
                options.embed_batch = 8;
                embedder = Some(e);
            }
            "--crash-at" => crash_at = args.next(),
            _ => root = Some(PathBuf::from(arg)),
        }
    }
    let Some(root) = root else {
        eprintln!("usage: sync ROOT [--uri URI] [--embed DIM] [--crash-at EVENT]");
        std::process::exit(2);
    };
    let observer = |event: SyncEvent| {
        let name = match event {
            SyncEvent::MarkedDirty => "marked-dirty",
            SyncEvent::ChunksRestored => "chunks-restored",
            SyncEvent::ChunksWritten => "chunks-written",
            SyncEvent::FilesWritten => "files-written",
            SyncEvent::Embedded { .. } => "embedded",
            _ => return,
        };
        if crash_at.as_deref() == Some(name) {
            // No destructors, no flush: as close to a SIGKILL as a process can do to itself.
            std::process::abort();
        }
    };
    let result = async {
        let mut store = Store::open(&root, options).await?;
        store
            .sync(embedder.as_ref().map(|e| e as &dyn Embedder), &observer)
            .await
    }
    .await;
    match result {
        Ok(stats) => println!("{}", serde_json::to_string(&stats).unwrap()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
