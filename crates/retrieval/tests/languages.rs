//! Rust, Python and Go through every tool, on one small project per language
//! (`fixtures/graph/{rust,python,go}-calls`): a question's answer with its connection graph,
//! `get_code_context`, related symbols, a file skeleton, and a symbol's calls both ways.
//! Calls are resolved by each language's scoping of names (an import's binding, the
//! receiver inside a method, a name declared around the call, Go's package); nothing is
//! matched by name alone.

use std::fmt::Write;

use codectx_retrieval::{
    Project, RelatedScope, SearchOptions, Strategy, file_skeleton, related_symbols, resolve_symbol,
    symbol_metadata,
};
use codectx_snapshot::SkeletonCache;

mod common;

use common::engine_at;

/// One language's fixture and what is asked of it.
struct Case {
    fixture: &'static str,
    question: &'static str,
    /// A symbol whose calls, callers and related symbols are shown.
    symbol: &'static str,
    skeleton: &'static str,
}

const CASES: &[Case] = &[
    Case {
        fixture: "graph/rust-calls",
        question: "add an item to the cart and compute its total",
        symbol: "Cart.add",
        skeleton: "src/cart/mod.rs",
    },
    Case {
        fixture: "graph/python-calls",
        question: "charge the payment through the card gateway",
        symbol: "checkout",
        skeleton: "shop/payments/gateway.py",
    },
    Case {
        fixture: "graph/go-calls",
        question: "add an item to the cart",
        symbol: "Cart.Add",
        skeleton: "internal/cart/cart.go",
    },
];

/// A symbol's callees and callers, one per line, as the graph links them.
fn calls_of(project: &Project, symbol: &str) -> String {
    let chunks = resolve_symbol(project, symbol, None).unwrap();
    let [chunk] = chunks.as_slice() else {
        panic!("{symbol}: {} matches", chunks.len());
    };
    let meta = symbol_metadata(project, chunk, 1);
    let mut out = String::new();
    for call in &meta.outgoing_calls {
        writeln!(out, "calls {}", call.symbol.id).unwrap();
    }
    for caller in &meta.incoming_callers {
        writeln!(out, "called by {}", caller.symbol.id).unwrap();
    }
    out
}

#[tokio::test]
async fn every_tool_answers_on_rust_python_and_go() {
    for case in CASES {
        let index = tempfile::tempdir().unwrap();
        let mut engine = engine_at(case.fixture, &index, None, None).await;
        let options = SearchOptions::default();
        let name = case.fixture.trim_start_matches("graph/");

        let outcome = engine.search(case.question, &options, 1).await.unwrap();
        let answer = &outcome.answer;
        assert!(
            !answer.results.is_empty(),
            "{}: nothing found",
            case.question
        );
        let mut shown = format!("question: {}\n\n", case.question);
        for item in &answer.content {
            shown.push_str(&item.text);
            shown.push('\n');
        }
        insta::assert_snapshot!(format!("{name}__answer"), shown);

        let (context, _) = engine
            .code_context(case.question, &options, Some(600), Strategy::Depth)
            .await
            .unwrap();
        assert!(context.estimated_tokens <= 600);
        let items: Vec<String> = context
            .context_items
            .iter()
            .map(|i| {
                format!(
                    "{} {} {}:{}-{} {:?}",
                    i.kind, i.name, i.file, i.start_line, i.end_line, i.detail
                )
            })
            .collect();
        insta::assert_snapshot!(format!("{name}__code_context"), items.join("\n"));

        let project = engine.project();
        insta::assert_snapshot!(format!("{name}__calls"), calls_of(project, case.symbol));
        let related =
            related_symbols(project, case.symbol, None, RelatedScope::Module, 20).unwrap();
        insta::assert_yaml_snapshot!(format!("{name}__related"), related);
        let skeleton = file_skeleton(project, &SkeletonCache::default(), case.skeleton).unwrap();
        insta::assert_snapshot!(format!("{name}__skeleton"), skeleton.text);
    }
}
