//! Data-driven runner for `fixtures/connection-graph/*.json` (a `ConnectionGraph`: query,
//! results with their SymbolMetadata, budget, snapshot tokens, callDepth). Each rendering is
//! snapshotted and checked against the blueprint's gate: T in the summary line is the token
//! estimate of this text plus the snapshots, ★ only on results, ◆ never on a result.

use codectx_connection_graph::{ConnectionGraph, render};

#[test]
fn connection_graph_fixtures() {
    insta::glob!("../../../fixtures/connection-graph", "*.json", |path| {
        let input: ConnectionGraph =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let text = render(&input);

        let summary = text.lines().next().unwrap();
        let tokens = summary.rsplit(" | ").next().unwrap();
        let shown: usize = tokens
            .split('/')
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap();
        assert_eq!(
            shown,
            input.snapshot_tokens + codectx_chunker::estimate_tokens(&text),
            "{summary}"
        );

        let results: Vec<&str> = input
            .results
            .iter()
            .map(|m| m.symbol.qualified_name.as_str())
            .collect();
        for line in text.lines() {
            let name = line
                .trim_start()
                .trim_start_matches("→ ")
                .split(" (")
                .next()
                .unwrap();
            if line.contains('★') {
                assert!(results.contains(&name), "★ on a non-result: {line}");
            }
            if line.contains('◆') && line.trim_start().starts_with('→') {
                assert!(!results.contains(&name), "◆ on a result: {line}");
            }
        }
        insta::assert_snapshot!(text);
    });
}
