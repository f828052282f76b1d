//! The graph's declarations name the parser's symbols (`Decl::symbol`), found by where each
//! name is written (`ParsedSymbol::declared_at`): the two walks of one parse must agree on
//! that offset for every kind of declaration, or chunks lose their graph declarations.

use std::collections::HashSet;
use std::path::Path;

use codectx_corpus::{needs_network, try_npm_package};
use codectx_parser::{ParsedSymbol, SymbolKind};

/// Whether the graph declares what the parser made `symbol` of, inside `parent`. Members
/// are declarations inside classes and interfaces (an object literal's methods only when a
/// constant holds it); a computed key (`[Symbol.iterator]`) names nothing.
fn declared_by_the_graph(symbol: &ParsedSymbol, parent: Option<&ParsedSymbol>) -> bool {
    use SymbolKind::*;
    let in_type = parent.is_some_and(|p| matches!(p.kind, Class | Component | Interface));
    symbol.declared_at.is_some()
        && !symbol.name.starts_with('[')
        && match symbol.kind {
            Function | Component | Class | Interface | Type | Enum | Namespace | Variable
            | Const | Constructor => true,
            Method | Getter | Setter | Property => in_type,
            _ => false,
        }
}

/// `path:line kind name` of each symbol the graph should declare but whose declaration
/// does not name it.
fn unnamed_symbols(root: &Path) -> (usize, Vec<String>) {
    let (mut checked, mut missing) = (0, Vec::new());
    for file in codectx_corpus::source_files(root) {
        let Ok(source) = std::fs::read_to_string(&file) else {
            continue;
        };
        let path = codectx_files::relative_path(root, &file);
        codectx_parser::parse_with(&path, &source, |parsed, program| {
            let facts = codectx_graph::facts::facts_of(&parsed, program);
            let named: HashSet<u32> = facts.decls.iter().filter_map(|d| d.symbol).collect();
            let mut stack: Vec<(&ParsedSymbol, Option<&ParsedSymbol>)> =
                parsed.symbols.iter().map(|s| (s, None)).collect();
            while let Some((symbol, parent)) = stack.pop() {
                stack.extend(symbol.children.iter().map(|c| (c, Some(symbol))));
                if !declared_by_the_graph(symbol, parent) {
                    continue;
                }
                checked += 1;
                if !named.contains(&symbol.index) {
                    missing.push(format!(
                        "{path}:{} {} {}",
                        symbol.range.start, symbol.kind, symbol.name
                    ));
                }
            }
        });
    }
    (checked, missing)
}

#[test]
fn every_fixture_declaration_names_its_parser_symbol() {
    let (checked, missing) = unnamed_symbols(&codectx_corpus::fixture(""));
    assert!(checked > 500, "only {checked} symbols checked");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn network_every_rxjs_declaration_names_its_parser_symbol() {
    let Some(root) = needs_network("rxjs from npm", try_npm_package("rxjs", "7.8.2")) else {
        return;
    };
    let (checked, missing) = unnamed_symbols(&root);
    assert!(checked > 3_000, "only {checked} symbols checked");
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
