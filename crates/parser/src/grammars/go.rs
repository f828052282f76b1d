//! Go: functions, methods (their signature names the receiver), types, constants and
//! variables; a grouped `const ( … )` is a statement holding one symbol per name. The `//` block directly
//! above a declaration is its doc comment; a capital first letter exports.

use tree_sitter::Node;

use super::{Bound, Declaration, Grammar, owned_text, strip_markers, text};
use crate::symbol::{Modifier, SymbolKind};

pub(super) struct Go;

impl Grammar for Go {
    fn language(&self) -> tree_sitter::Language {
        tree_sitter_go::LANGUAGE.into()
    }

    fn declaration<'t>(
        &self,
        node: Node<'t>,
        src: &str,
        _container: Option<SymbolKind>,
    ) -> Option<Declaration<'t>> {
        let (kind, name_node) = match node.kind() {
            "function_declaration" => (SymbolKind::Function, node.child_by_field_name("name")?),
            "method_declaration" => (SymbolKind::Method, node.child_by_field_name("name")?),
            "const_declaration" | "var_declaration" | "type_declaration" => {
                return grouped(node, src, self);
            }
            "const_spec" => (SymbolKind::Const, node.child_by_field_name("name")?),
            "var_spec" => (SymbolKind::Variable, node.child_by_field_name("name")?),
            "type_spec" | "type_alias" => {
                let kind = match node.child_by_field_name("type").map(|t| t.kind()) {
                    Some("struct_type") => SymbolKind::Struct,
                    Some("interface_type") => SymbolKind::Interface,
                    _ => SymbolKind::Type,
                };
                (kind, node.child_by_field_name("name")?)
            }
            _ => return None,
        };
        let name = owned_text(name_node, src);
        let receiver = node
            .child_by_field_name("receiver")
            .and_then(|r| receiver_type(r, src));
        Some(Declaration {
            exported: is_exported(&name),
            modifiers: if is_exported(&name) {
                vec![Modifier::Exported]
            } else {
                Vec::new()
            },
            body: node.child_by_field_name("body"),
            receiver,
            ..Declaration::new(kind, name, name_node, node)
        })
    }

    fn item_kind(&self, node: Node<'_>) -> SymbolKind {
        match node.kind() {
            "import_declaration" => SymbolKind::Import,
            _ => SymbolKind::Statement,
        }
    }

    fn imports<'t>(&self, node: Node<'t>, src: &str) -> Vec<(Node<'t>, String, Vec<Bound>)> {
        if node.kind() != "import_declaration" {
            return Vec::new();
        }
        let mut specs = Vec::new();
        for child in node.named_children(&mut node.walk()) {
            match child.kind() {
                "import_spec" => specs.push(child),
                "import_spec_list" => specs.extend(
                    child
                        .named_children(&mut child.walk())
                        .filter(|s| s.kind() == "import_spec"),
                ),
                _ => {}
            }
        }
        specs
            .into_iter()
            .filter_map(|spec| {
                let path = spec.child_by_field_name("path")?;
                let path = src
                    .get(path.start_byte()..path.end_byte())?
                    .trim_matches(['"', '`']);
                // A package is used by its alias, else by its path's last element (the
                // usual package name; `v2`-style suffixes name the element before them).
                let bound = match spec.child_by_field_name("name") {
                    Some(alias) => {
                        let alias = text(alias, src)?;
                        if alias == "_" || alias == "." {
                            Vec::new()
                        } else {
                            vec![Bound::module(alias)]
                        }
                    }
                    None => vec![Bound::module(package_name(path))],
                };
                Some((spec, path.to_string(), bound))
            })
            .collect()
    }

    fn doc_comment(&self, comments: &[&str]) -> Option<String> {
        if let [block] = comments
            && let Some(inner) = block.strip_prefix("/*").and_then(|b| b.strip_suffix("*/"))
        {
            return Some(inner.trim().to_string()).filter(|d| !d.is_empty());
        }
        strip_markers(comments, "//")
    }

    fn is_identifier(&self, kind: &str) -> bool {
        matches!(kind, "identifier" | "package_identifier")
    }

    fn call_and_scope_kinds(&self) -> &'static [&'static str] {
        &[
            "call_expression",
            "function_declaration",
            "method_declaration",
            "func_literal",
        ]
    }

    fn call_path(&self, node: Node<'_>, src: &str) -> Option<Vec<String>> {
        if node.kind() != "call_expression" {
            return None;
        }
        let mut path = Vec::new();
        let mut at = node.child_by_field_name("function")?;
        while at.kind() == "selector_expression" {
            path.push(text(at.child_by_field_name("field")?, src)?.to_string());
            at = at.child_by_field_name("operand")?;
            if path.len() > super::MAX_CALL_PATH {
                return None;
            }
        }
        if !matches!(at.kind(), "identifier" | "package_identifier") {
            return None;
        }
        path.push(text(at, src)?.to_string());
        path.reverse();
        Some(path)
    }

    fn typed_parameters(&self, node: Node<'_>, src: &str) -> Vec<(String, String)> {
        if !matches!(
            node.kind(),
            "function_declaration" | "method_declaration" | "func_literal"
        ) {
            return Vec::new();
        }
        let Some(list) = node.child_by_field_name("parameters") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for parameter in list.named_children(&mut list.walk()) {
            if parameter.kind() != "parameter_declaration" {
                continue;
            }
            let Some(type_name) = parameter
                .child_by_field_name("type")
                .and_then(|t| type_name(t, src))
            else {
                continue;
            };
            for name in parameter.children_by_field_name("name", &mut parameter.walk()) {
                out.push((owned_text(name, src), type_name.clone()));
            }
        }
        out
    }

    /// The receiver's name: `h` in `func (h *Handler) Serve()`.
    fn receiver_name(&self, node: Node<'_>, src: &str) -> Option<String> {
        if node.kind() != "method_declaration" {
            return None;
        }
        let receiver = node.child_by_field_name("receiver")?;
        let parameter = receiver
            .named_children(&mut receiver.walk())
            .find(|p| p.kind() == "parameter_declaration")?;
        Some(owned_text(parameter.child_by_field_name("name")?, src))
    }
}

/// A `const`, `var` or `type` declaration: the symbol of its one spec, or, when it groups
/// several, a statement named by them all with one child per spec.
fn grouped<'t>(node: Node<'t>, src: &str, go: &Go) -> Option<Declaration<'t>> {
    let mut specs: Vec<Node<'t>> = Vec::new();
    for child in node.named_children(&mut node.walk()) {
        match child.kind() {
            "const_spec" | "var_spec" | "type_spec" | "type_alias" => specs.push(child),
            "var_spec_list" => specs.extend(
                child
                    .named_children(&mut child.walk())
                    .filter(|s| s.kind() == "var_spec"),
            ),
            _ => {}
        }
    }
    match specs.as_slice() {
        [] => None,
        [one] => {
            let decl = go.declaration(*one, src, None)?;
            Some(Declaration { head: node, ..decl })
        }
        [_, _, ..] => {
            let names: Vec<&str> = specs
                .iter()
                .filter_map(|s| s.child_by_field_name("name"))
                .filter_map(|n| text(n, src))
                .collect();
            let keyword = node.kind().trim_end_matches("_declaration");
            Some(Declaration {
                // The group declares nothing itself: its specs do, as Go sees them. It is a
                // statement holding them, so no spec's chain passes through it.
                name_at: None,
                // The walk reads the specs inside the declaration (through a list for `var`).
                members: specs[0].parent(),
                signature: Some(format!("{keyword} ( {} )", names.join("; "))),
                ..Declaration::new(SymbolKind::Statement, names.join(", "), node, node)
            })
        }
    }
}

/// The type a method's receiver list names: `AuthHandler` for `(h *AuthHandler)` and
/// `(h AuthHandler)`, `List` for `(l *List[T])`.
fn receiver_type(receiver: Node<'_>, src: &str) -> Option<String> {
    let parameter = receiver
        .named_children(&mut receiver.walk())
        .find(|p| p.kind() == "parameter_declaration")?;
    let written = parameter.child_by_field_name("type")?;
    let written = text(written, src)?;
    let name = written.trim_start_matches('*').split('[').next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn is_exported(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

/// The package name an import path is used by when no alias is given: its last element,
/// or the one before a major-version suffix (`github.com/a/b/v2` → `b`).
fn package_name(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let last = parts.next().unwrap_or(path);
    let is_version =
        last.len() > 1 && last.starts_with('v') && last[1..].chars().all(|c| c.is_ascii_digit());
    if is_version {
        parts.next().unwrap_or(last)
    } else {
        last
    }
}

/// The one type name a parameter's type spells: `Command` for `Command`, `*Command` and
/// `List[T]`; `None` for a type of another package, a slice, a map, a function…
fn type_name(node: Node<'_>, src: &str) -> Option<String> {
    match node.kind() {
        "type_identifier" => Some(owned_text(node, src)),
        "pointer_type" => type_name(node.named_child(0)?, src),
        "generic_type" => type_name(node.child_by_field_name("type")?, src),
        _ => None,
    }
}
