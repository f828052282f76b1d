//! Facts of a file the parser read with tree-sitter (Rust, Python, Go): its declarations,
//! straight from the [`ParsedSymbol`] tree, and its exports.
//!
//! What the tree gives is exact: which symbols are declared, inside which container, which
//! the language makes visible outside the file (`pub`, a capital letter, no leading `_`),
//! and which modules the file imports (and, in Rust, declares with `mod x;`), resolved by
//! `crate::modules`. There is no semantic model for these languages yet, so no call or
//! reference is claimed: the graph links nothing it would have to guess by name.

use codectx_parser::{Language, Modifier, ParsedFile, ParsedSymbol, SymbolKind};

use super::{Decl, Export, ExportTarget, FileFacts, ModuleRequest, RequestKind};

/// Kinds whose members read `Container.member`.
fn is_member_container(kind: SymbolKind) -> bool {
    kind.is_type() || kind == SymbolKind::Impl
}

/// The facts of a tree-sitter language's file.
pub(super) fn facts_from_symbols(parsed: &ParsedFile) -> FileFacts {
    let mut facts = FileFacts::empty(
        &parsed.path,
        parsed.line_count,
        parsed.diagnostics.len() as u32,
    );
    for root in &parsed.symbols {
        add(root, None, &mut facts);
    }
    attach_to_receivers(parsed, &mut facts);
    facts.requests = requests(parsed);
    facts
}

/// One request per imported module, and per Rust `mod x;` (a request for `self::x`).
fn requests(parsed: &ParsedFile) -> Vec<ModuleRequest> {
    let lines = &parsed.lines;
    let mut requests: Vec<ModuleRequest> = parsed
        .imports
        .iter()
        .map(|import| ModuleRequest {
            specifier: import.source.clone(),
            line: lines.line_of(import.span.start),
            kind: RequestKind::Import,
            names: import.local_names.clone(),
        })
        .collect();
    if parsed.language == Language::Rust {
        let declared = parsed
            .walk()
            .filter(|s| s.kind == SymbolKind::Module && s.body.is_none() && s.depth == 0);
        requests.extend(declared.map(|m| ModuleRequest {
            specifier: format!("self::{}", m.name),
            line: m.range.end,
            kind: RequestKind::Import,
            names: Vec::new(),
        }));
        requests.sort_by_key(|r| r.line);
    }
    requests
}

/// A Go method stands outside its type's lines; its receiver names the type
/// (`func (h *Handler) Serve` → `Handler.Serve`), and makes it a member of the type when the
/// file declares it. A type declared in another file of the package is found by
/// [`crate::ProjectGraph::package_type`].
fn attach_to_receivers(parsed: &ParsedFile, facts: &mut FileFacts) {
    for root in &parsed.symbols {
        let Some(receiver) = root.parent_name.as_deref() else {
            continue;
        };
        let Some(method) = facts
            .decls
            .iter()
            .position(|d| d.symbol == Some(root.index))
        else {
            continue;
        };
        facts.decls[method].qualified_name = format!("{receiver}.{}", facts.decls[method].name);
        let Some(owner) = facts
            .decls
            .iter()
            .position(|d| d.container.is_none() && d.kind.is_type() && d.name == receiver)
        else {
            continue;
        };
        facts.decls[method].container = Some(owner as u32);
        let members = &mut facts.decls[owner].members;
        members.push(method as u32);
        members.sort_unstable();
    }
}

/// Adds `sym` (when it declares something) and its descendants; `container` is the
/// declaration whose members they are.
fn add(sym: &ParsedSymbol, container: Option<u32>, facts: &mut FileFacts) {
    let declares = !sym.kind.is_root_item() && sym.declared_at.is_some();
    let mut this = container;
    if declares {
        let index = facts.decls.len() as u32;
        let parent = container.map(|c| &facts.decls[c as usize]);
        let qualified_name = match parent {
            Some(p) if is_member_container(p.kind) => format!("{}.{}", p.qualified_name, sym.name),
            _ => sym.name.clone(),
        };
        facts.decls.push(Decl {
            qualified_name,
            container,
            exported: sym.exported,
            is_static: sym.modifiers.contains(&Modifier::Static),
            ..Decl::new(
                sym.name.clone(),
                Some(sym.index),
                sym.kind,
                (sym.range.start, sym.range.end),
                (sym.span.start, sym.span.end),
                sym.signature.clone(),
            )
        });
        if let Some(c) = container {
            facts.decls[c as usize].members.push(index);
        } else if sym.exported {
            facts.exports.push(Export {
                name: sym.name.clone(),
                line: sym.range.start,
                target: ExportTarget::Local { decl: index },
            });
        }
        this = Some(index);
    }
    for child in &sym.children {
        add(child, this, facts);
    }
}

#[cfg(test)]
mod tests {
    use codectx_parser::{SymbolKind, parse_source};

    #[test]
    fn declarations_nest_under_their_container_and_name_their_symbol() {
        let source = "pub struct Point;\n\nimpl Point {\n    pub fn norm(&self) -> f64 {\n        0.0\n    }\n}\n\nfn private() {}\n";
        let parsed = parse_source("src/point.rs", source);
        let facts = super::facts_from_symbols(&parsed);
        let shown: Vec<(&str, SymbolKind, Option<u32>, bool)> = facts
            .decls
            .iter()
            .map(|d| (d.qualified_name.as_str(), d.kind, d.container, d.exported))
            .collect();
        assert_eq!(
            shown,
            [
                ("Point", SymbolKind::Struct, None, true),
                ("Point", SymbolKind::Impl, None, true),
                ("Point.norm", SymbolKind::Method, Some(1), true),
                ("private", SymbolKind::Function, None, false),
            ]
        );
        for decl in &facts.decls {
            let symbol = parsed
                .walk()
                .find(|s| Some(s.index) == decl.symbol)
                .unwrap();
            assert_eq!(symbol.name, decl.name);
        }
        let exported: Vec<&str> = facts.exports.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(exported, ["Point", "Point"]);
    }

    #[test]
    fn a_go_method_is_a_member_of_its_receiver_type_declared_in_the_file() {
        let source = "package a\n\nfunc (h *Handler) Serve() {}\n\ntype Handler struct{}\n\nfunc (o Other) Run() {}\n";
        let parsed = parse_source("a.go", source);
        let facts = super::facts_from_symbols(&parsed);
        let shown: Vec<(&str, Option<u32>)> = facts
            .decls
            .iter()
            .map(|d| (d.qualified_name.as_str(), d.container))
            .collect();
        assert_eq!(
            shown,
            [
                ("Handler.Serve", Some(1)),
                ("Handler", None),
                ("Other.Run", None)
            ]
        );
        assert_eq!(facts.decls[1].members, [0]);
    }
}
