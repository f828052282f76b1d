//! The navigation tools of seeds 002 and 004 (symbol hierarchy, related symbols, file
//! relationships, file skeleton) on `fixtures/retrieval/auth`.

use codectx_graph::Relation;
use codectx_retrieval::{
    Direction, ErrorCode, RelatedScope, file_relationships, file_skeleton, related_symbols,
    symbol_hierarchy,
};
use codectx_snapshot::SkeletonCache;

mod common;

use common::auth_project as project;

/// Seed 002 US2 scenario 1 and 5: a method's chain is method → class; a top-level
/// function's chain is the function alone. The file is every chain's root.
#[test]
fn ancestors_of_a_method_and_of_a_top_level_function() {
    let method = symbol_hierarchy(
        project(),
        "validateToken",
        Some("src/auth/tokenService.ts"),
        Direction::Ancestors,
    )
    .unwrap();
    let top_level = symbol_hierarchy(
        project(),
        "validate",
        Some("src/auth/tokenService.ts"),
        Direction::Ancestors,
    )
    .unwrap();
    assert_eq!(top_level.len(), 1);
    assert_eq!(top_level[0].chain.len(), 1);
    insta::assert_yaml_snapshot!("ancestors", (method, top_level));
}

/// Seed 002 US2 scenario 2: a class's descendants are its members.
#[test]
fn descendants_of_a_class() {
    let tree = symbol_hierarchy(project(), "TokenService", None, Direction::Descendants).unwrap();
    insta::assert_yaml_snapshot!("descendants", tree);
}

/// Qualified names and `>` paths name the same symbol.
#[test]
fn qualified_and_path_notations_agree() {
    let dotted =
        symbol_hierarchy(project(), "TokenService.sign", None, Direction::Ancestors).unwrap();
    let arrows = symbol_hierarchy(
        project(),
        "src/auth/tokenService.ts > TokenService > sign",
        None,
        Direction::Ancestors,
    )
    .unwrap();
    assert_eq!(dotted, arrows);
    assert_eq!(dotted.len(), 1);
}

/// Seed 002 US2 scenario 4 and the error codes of every tool.
#[test]
fn errors_carry_a_code_and_a_sentence() {
    let cache = SkeletonCache::default();
    let cases = [
        (
            "unknown symbol",
            symbol_hierarchy(project(), "validateTokn", None, Direction::Ancestors).unwrap_err(),
        ),
        (
            "symbol in another file",
            symbol_hierarchy(project(), "sign", Some("src/base.ts"), Direction::Ancestors)
                .unwrap_err(),
        ),
        (
            "unindexed file",
            file_relationships(project(), "src/missing.ts").unwrap_err(),
        ),
        (
            "outside the root",
            file_skeleton(project(), &cache, "../../Cargo.toml").unwrap_err(),
        ),
        (
            "absolute path outside the root",
            file_relationships(project(), "/etc/passwd").unwrap_err(),
        ),
        (
            "empty name",
            related_symbols(project(), " > ", None, RelatedScope::File, 10).unwrap_err(),
        ),
    ];
    let rendered: Vec<String> = cases
        .iter()
        .map(|(case, e)| format!("{case}: {} — {}", e.code.as_str(), e.message))
        .collect();
    assert_eq!(cases[0].1.code, ErrorCode::SymbolNotFound);
    insta::assert_snapshot!("errors", rendered.join("\n"));
}

/// Seed 002 US3: same file first, then the same directory, then import-connected files;
/// `limit` cuts by that priority; scope `file` keeps the file's own symbols.
#[test]
fn related_symbols_by_scope_and_limit() {
    let module =
        related_symbols(project(), "TokenService", None, RelatedScope::Module, 50).unwrap();
    let file = related_symbols(project(), "TokenService", None, RelatedScope::File, 50).unwrap();
    let limited =
        related_symbols(project(), "TokenService", None, RelatedScope::Module, 2).unwrap();
    assert!(
        file.related
            .iter()
            .all(|r| r.relation == Relation::SameFile)
    );
    assert_eq!(limited.related[..], module.related[..2]);
    let relations: Vec<Relation> = module.related.iter().map(|r| r.relation).collect();
    let mut sorted = relations.clone();
    sorted.sort();
    assert_eq!(relations, sorted, "priority order");
    insta::assert_yaml_snapshot!("related_module", module);
}

/// Seed 004's analyze_relationship: imports with names and lines, and the importers.
#[test]
fn file_relationships_list_imports_and_importers() {
    let rel = file_relationships(project(), "./src/auth/tokenService.ts").unwrap();
    assert!(!rel.imports.is_empty());
    assert!(
        rel.imported_by
            .iter()
            .any(|e| e.file == "src/middleware/auth.ts")
    );
    insta::assert_yaml_snapshot!("file_relationships", rel);
}

/// Seed 004's skeleton view, parsed once per unchanged file.
#[test]
fn file_skeleton_is_cached() {
    let cache = SkeletonCache::default();
    let first = file_skeleton(project(), &cache, "src/auth/tokenService.ts").unwrap();
    let again = file_skeleton(project(), &cache, "src/auth/tokenService.ts").unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again));
    assert_eq!(cache.stats().parses, 1);
    assert_eq!(cache.stats().hits, 1);
    insta::assert_snapshot!("skeleton", first.text);
}

/// Seed 002 US2 in Rust, Python and Go: a method's chain is method → `impl` block, class or
/// receiver type. A Go method stands outside its type's lines; its receiver names the type.
/// Control flow around a declaration is no ancestor.
#[test]
fn ancestors_in_rust_python_and_go() {
    let parser_fixtures =
        codectx_retrieval::Project::open(&codectx_corpus::fixture("parser")).unwrap();
    let go_module =
        codectx_retrieval::Project::open(&codectx_corpus::fixture("graph/go-modules")).unwrap();
    for (project, symbol, path, chain) in [
        (
            &parser_fixtures,
            "validate",
            "rust-items.rs",
            vec!["validate", "AuthHandler"],
        ),
        (
            &parser_fixtures,
            "user",
            "python-module.py",
            vec!["user", "Authenticator"],
        ),
        (
            &parser_fixtures,
            "header",
            "python-module.py",
            vec!["header", "wrapped", "require_user"],
        ),
        (
            &parser_fixtures,
            "Validate",
            "go-package.go",
            vec!["Validate", "AuthHandler"],
        ),
        // Inside `class Config: if …:` and inside a top-level `try:`.
        (
            &parser_fixtures,
            "load",
            "python-conditional.py",
            vec!["load", "Config"],
        ),
        (
            &parser_fixtures,
            "parse",
            "python-conditional.py",
            vec!["parse"],
        ),
        (
            &go_module,
            "Find",
            "internal/store/store.go",
            vec!["Find", "Store"],
        ),
        // A method in another file of its package than its type.
        (
            &go_module,
            "Count",
            "internal/store/count.go",
            vec!["Count", "Store"],
        ),
    ] {
        let found = symbol_hierarchy(project, symbol, Some(path), Direction::Ancestors).unwrap();
        let names: Vec<&str> = found[0].chain.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, chain, "{path} > {symbol}");
    }
}
