//! Compares the lexical channel's two BM25F searches on an existing index: LanceDB's
//! full-text index and the copy of its fields kept in memory ([`TextSearch`]).
//!
//! ```text
//! cargo run -p codectx-store --example text_search -- ROOT INDEX_URI [--rebuild] QUERY...
//! ```
//!
//! For each query it prints how many of the top 200 hits agree, rank by rank, and the two
//! best scores. `--rebuild` first builds the full-text indexes anew (as upkeep does after a
//! sync that rewrote much of the table): LanceDB's statistics then are a clean build's,
//! which the copy in memory always has, and the two should agree to the bit.

use std::path::Path;

use codectx_store::{ChunkFilter, Store, StoreOptions, TextSearch};
use lancedb::index::Index;
use lancedb::index::scalar::FtsIndexBuilder;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let rebuild = args.iter().any(|a| a == "--rebuild");
    args.retain(|a| a != "--rebuild");
    if args.len() < 3 {
        eprintln!("usage: text_search ROOT INDEX_URI [--rebuild] QUERY...");
        std::process::exit(2);
    }
    let (root, uri, queries) = (Path::new(&args[0]), args[1].clone(), &args[2..]);
    let options = |text_search| StoreOptions {
        uri: Some(uri.clone()),
        text_search,
        ..StoreOptions::default()
    };
    let open = async |text_search| match Store::open(root, options(text_search)).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if rebuild {
        let store = open(TextSearch::Index).await;
        for column in ["nameTerms", "sourceTerms", "historyTerms"] {
            // The store's own index settings (`text_index::term_index`): the terms are
            // stored analyzed.
            let tokens = FtsIndexBuilder::default()
                .base_tokenizer("whitespace".to_string())
                .lower_case(false)
                .stem(false)
                .remove_stop_words(false)
                .ascii_folding(false)
                .max_token_length(None);
            if let Err(e) = store
                .chunk_table()
                .create_index(&[column], Index::FTS(tokens))
                .replace(true)
                .execute()
                .await
            {
                eprintln!("rebuilding the full-text index of {column}: {e}");
                std::process::exit(1);
            }
        }
    }
    let (index, memory) = (
        open(TextSearch::Index).await,
        open(TextSearch::Memory).await,
    );
    let all = ChunkFilter::default();
    for query in queries {
        let (a, b) = match (
            index.search_lexical_hits(query, 200, &all).await,
            memory.search_lexical_hits(query, 200, &all).await,
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("{query}: {e}");
                std::process::exit(1);
            }
        };
        let agree = a.iter().zip(&b).take_while(|(x, y)| x.id == y.id).count();
        let same_scores = a.len() == b.len()
            && a.iter()
                .zip(&b)
                .all(|(x, y)| x.id == y.id && x.score.to_bits() == y.score.to_bits());
        println!(
            "{query:?}: {} / {} hits, the first {agree} in the same order, scores {}; best {:?} / {:?}",
            a.len(),
            b.len(),
            if same_scores {
                "equal to the bit"
            } else {
                "differ"
            },
            a.first().map(|h| h.score),
            b.first().map(|h| h.score),
        );
    }
}
