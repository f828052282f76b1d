//! Chunks meet the graph by the parser symbol both were made from: every chunk that
//! declares a name has its graph declaration, CommonJS exports (`exports.x = function …`,
//! `module.exports = class …`) included.

use std::fmt::Write;

use codectx_parser::SymbolKind;
use codectx_retrieval::Project;

/// The kinds of chunk that declare a name the graph can know.
fn declares(kind: SymbolKind) -> bool {
    use SymbolKind::*;
    matches!(
        kind,
        Function
            | Method
            | Constructor
            | Getter
            | Setter
            | Property
            | Class
            | Interface
            | Type
            | Enum
            | Component
            | Variable
            | Const
            | Namespace
    )
}

/// Each chunk with the declaration it joins, and the declaring chunks that join none.
fn joins(fixture: &str) -> (String, Vec<String>) {
    let root = codectx_corpus::fixture("").join(fixture);
    let project = Project::open(&root).unwrap();
    let (mut table, mut missing) = (String::new(), Vec::new());
    for chunk in project.chunks() {
        let symbol = project.declaration(chunk);
        let decl = symbol.map(|s| project.graph().decl(s));
        let joined = match decl {
            Some(d) => format!("{} {:?} @{}", d.qualified_name, d.kind, d.start_line),
            None => "-".to_string(),
        };
        writeln!(
            table,
            "{} [{}] → {joined}",
            chunk.breadcrumb, chunk.node_kind
        )
        .unwrap();
        if decl.is_none() && declares(chunk.node_kind) && !chunk.naming.is_made_up() {
            missing.push(chunk.breadcrumb.clone());
        }
    }
    (table, missing)
}

#[test]
fn commonjs_chunks_have_their_graph_declarations() {
    let (table, missing) = joins("graph/commonjs");
    assert!(missing.is_empty(), "no graph declaration for {missing:?}");
    insta::assert_snapshot!("commonjs", table);
}

#[test]
fn typescript_chunks_have_their_graph_declarations() {
    let (table, missing) = joins("retrieval/auth");
    assert!(missing.is_empty(), "no graph declaration for {missing:?}");
    insta::assert_snapshot!("auth", table);
}
