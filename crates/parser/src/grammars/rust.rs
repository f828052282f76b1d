//! Rust: items at any depth of `mod` blocks; `impl` and `trait` blocks nest their methods,
//! constants and types; `///` and `/** */` are the doc, `#[…]` belongs to the item below.

use tree_sitter::Node;

use super::{
    Bound, Declaration, Grammar, MAX_CALL_PATH, field_text, owned_text, strip_markers, text,
};
use crate::symbol::{Modifier, SymbolKind};

pub(super) struct Rust;

impl Grammar for Rust {
    fn language(&self) -> tree_sitter::Language {
        tree_sitter_rust::LANGUAGE.into()
    }

    fn declaration<'t>(
        &self,
        node: Node<'t>,
        src: &str,
        container: Option<SymbolKind>,
    ) -> Option<Declaration<'t>> {
        let in_impl = matches!(container, Some(SymbolKind::Impl | SymbolKind::Trait));
        let (kind, body, members) = match node.kind() {
            "function_item" | "function_signature_item" => {
                let kind = if in_impl {
                    SymbolKind::Method
                } else {
                    SymbolKind::Function
                };
                // Items declared in the body (a helper `fn`, a `const`, a `struct`) are its
                // members, as nested functions are in Python.
                let body = node.child_by_field_name("body");
                (kind, body, body)
            }
            "struct_item" | "union_item" => (SymbolKind::Struct, None, None),
            "enum_item" => (SymbolKind::Enum, None, None),
            "trait_item" => {
                let body = node.child_by_field_name("body");
                (SymbolKind::Trait, body, body)
            }
            "impl_item" => {
                let body = node.child_by_field_name("body");
                (SymbolKind::Impl, body, body)
            }
            "mod_item" => {
                let body = node.child_by_field_name("body");
                (SymbolKind::Module, body, body)
            }
            "const_item" => (SymbolKind::Const, None, None),
            "static_item" => (SymbolKind::Variable, None, None),
            "type_item" | "associated_type" => (SymbolKind::Type, None, None),
            "macro_definition" => (SymbolKind::Macro, None, None),
            _ => return None,
        };
        // An `impl` is named by its type (`impl<T> Display for Wrapper<T>` → `Wrapper`), so
        // its methods read `Wrapper.fmt` as they would in an inherent `impl`.
        let name_node = if kind == SymbolKind::Impl {
            node.child_by_field_name("type")
        } else {
            node.child_by_field_name("name")
        }?;
        let written = text(name_node, src)?;
        let name = if kind == SymbolKind::Impl {
            type_name(written)
        } else {
            written.to_string()
        };
        let visibility = node
            .named_children(&mut node.walk())
            .find(|c| c.kind() == "visibility_modifier")
            .and_then(|v| text(v, src));
        let mut modifiers = Vec::new();
        if visibility.is_some() {
            modifiers.push(Modifier::Public);
        }
        if let Some(qualifiers) = node
            .named_children(&mut node.walk())
            .find(|c| c.kind() == "function_modifiers")
            .and_then(|m| text(m, src))
        {
            for word in qualifiers.split_whitespace() {
                match word {
                    "async" => modifiers.push(Modifier::Async),
                    "const" => modifiers.push(Modifier::Const),
                    _ => {}
                }
            }
        }
        Some(Declaration {
            body,
            members,
            modifiers,
            // `pub(crate)` and friends are visible inside the crate only. An `impl` has no
            // visibility of its own: its members' say what is public.
            exported: visibility == Some("pub") || kind == SymbolKind::Impl,
            ..Declaration::new(kind, name, name_node, node)
        })
    }

    fn item_kind(&self, node: Node<'_>) -> SymbolKind {
        match node.kind() {
            "use_declaration" | "extern_crate_declaration" => SymbolKind::Import,
            "expression_statement" | "macro_invocation" => SymbolKind::Expression,
            _ => SymbolKind::Statement,
        }
    }

    fn imports<'t>(&self, node: Node<'t>, src: &str) -> Vec<(Node<'t>, String, Vec<Bound>)> {
        let owned = |n: Node<'_>| owned_text(n, src);
        match node.kind() {
            "use_declaration" => {
                let Some(argument) = node.child_by_field_name("argument") else {
                    return Vec::new();
                };
                let mut bound = Vec::new();
                bound_names(argument, src, &mut bound);
                vec![(node, crate::extract::one_line(&owned(argument), 400), bound)]
            }
            "extern_crate_declaration" => {
                let name = field_text(node, "name", src).unwrap_or("").to_string();
                let alias = field_text(node, "alias", src).map(str::to_string);
                vec![(
                    node,
                    name.clone(),
                    vec![Bound::module(alias.unwrap_or(name))],
                )]
            }
            _ => Vec::new(),
        }
    }

    fn is_prefix(&self, node: Node<'_>) -> bool {
        node.kind() == "attribute_item"
    }

    fn item_macro_body<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
        let invocation = match node.kind() {
            "macro_invocation" => node,
            "expression_statement" => node
                .named_child(0)
                .filter(|n| n.kind() == "macro_invocation")?,
            _ => return None,
        };
        // The token tree is the invocation's last child: `name! { … }` or `name!(…)`.
        let body = invocation.named_child(invocation.named_child_count().checked_sub(1)?)?;
        (body.kind() == "token_tree").then_some(body)
    }

    fn stands_alone(&self, comment: &str) -> bool {
        comment.starts_with("//!") || comment.starts_with("/*!")
    }

    fn doc_comment(&self, comments: &[&str]) -> Option<String> {
        // The doc is the `///` lines nearest the item; plain `//` comments above them are not.
        let docs: Vec<&str> = comments
            .iter()
            .rev()
            .take_while(|c| is_outer_doc(c))
            .copied()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if docs.is_empty() {
            return None;
        }
        if let [block] = docs.as_slice()
            && let Some(inner) = block.strip_prefix("/**").and_then(|b| b.strip_suffix("*/"))
        {
            return Some(crate::clean_jsdoc(inner)).filter(|d| !d.is_empty());
        }
        strip_markers(&docs, "///")
    }

    fn is_identifier(&self, kind: &str) -> bool {
        matches!(kind, "identifier" | "type_identifier")
    }

    fn call_and_scope_kinds(&self) -> &'static [&'static str] {
        &["call_expression", "function_item", "closure_expression"]
    }

    fn call_path(&self, node: Node<'_>, src: &str) -> Option<Vec<String>> {
        if node.kind() != "call_expression" {
            return None;
        }
        let mut path = Vec::new();
        path_of(node.child_by_field_name("function")?, src, &mut path)?;
        Some(path)
    }

    fn is_receiver_word(&self, name: &str) -> bool {
        matches!(name, "self" | "Self")
    }

    fn typed_parameters(&self, node: Node<'_>, src: &str) -> Vec<(String, String)> {
        if !matches!(node.kind(), "function_item" | "closure_expression") {
            return Vec::new();
        }
        let Some(list) = node.child_by_field_name("parameters") else {
            return Vec::new();
        };
        list.named_children(&mut list.walk())
            .filter(|p| p.kind() == "parameter")
            .filter_map(|p| {
                let mut pattern = p.child_by_field_name("pattern")?;
                if pattern.kind() == "mut_pattern" {
                    pattern = pattern.named_child(0)?;
                }
                if pattern.kind() != "identifier" {
                    return None;
                }
                let type_name = type_name_of(p.child_by_field_name("type")?, src)?;
                Some((text(pattern, src)?.to_string(), type_name))
            })
            .collect()
    }
}

/// The one type name a parameter's type spells: `Cart` for `Cart`, `&mut Cart` and
/// `Cart<T>`; `None` for a path (`a::Cart`), a slice, a tuple, `impl Trait`…
fn type_name_of(node: Node<'_>, src: &str) -> Option<String> {
    match node.kind() {
        "type_identifier" => Some(text(node, src)?.to_string()),
        "reference_type" => type_name_of(node.child_by_field_name("type")?, src),
        "generic_type" => type_name_of(node.child_by_field_name("type")?, src),
        _ => None,
    }
}

/// Appends the names `node` spells (`a::b`, `self.x`, `f::<T>`) to `out`; `None` when it is
/// not a path of names.
fn path_of(node: Node<'_>, src: &str, out: &mut Vec<String>) -> Option<()> {
    if out.len() > MAX_CALL_PATH {
        return None;
    }
    match node.kind() {
        "identifier" | "type_identifier" | "field_identifier" | "self" | "super" | "crate" => {
            out.push(text(node, src)?.to_string())
        }
        "scoped_identifier" | "scoped_type_identifier" => {
            if let Some(path) = node.child_by_field_name("path") {
                path_of(path, src, out)?;
            }
            out.push(text(node.child_by_field_name("name")?, src)?.to_string());
        }
        "field_expression" => {
            path_of(node.child_by_field_name("value")?, src, out)?;
            out.push(text(node.child_by_field_name("field")?, src)?.to_string());
        }
        "generic_function" => path_of(node.child_by_field_name("function")?, src, out)?,
        "generic_type" => path_of(node.child_by_field_name("type")?, src, out)?,
        _ => return None,
    }
    Some(())
}

fn is_outer_doc(comment: &str) -> bool {
    (comment.starts_with("///") && !comment.starts_with("////"))
        || (comment.starts_with("/**") && !comment.starts_with("/***") && comment != "/**/")
}

/// `Wrapper` for `Wrapper<T>`, `&'a mut Wrapper`, `dyn Trait`, `crate::a::Wrapper<T>`.
fn type_name(written: &str) -> String {
    let base = written.split('<').next().unwrap_or(written);
    let base = base.rsplit("::").next().unwrap_or(base);
    let last = base.split_whitespace().last().unwrap_or(base);
    last.trim_start_matches('&').to_string()
}

/// The names a `use` argument binds, each the item of that name: `a::B` → `B`;
/// `a::{B, c::D as E}` → `B`, `E` (item `D`); a glob binds nothing nameable. Whether an item
/// is a module is for the resolution to say: the path leads to the deepest module file.
fn bound_names(node: Node<'_>, src: &str, out: &mut Vec<Bound>) {
    let owned = |n: Node<'_>| owned_text(n, src);
    // The last name of a path (`D` for `c::D`).
    let last = |n: Node<'_>| match n.child_by_field_name("name") {
        Some(name) => owned(name),
        None => owned(n),
    };
    match node.kind() {
        "identifier" | "type_identifier" => out.push(Bound::item(owned(node), owned(node))),
        "scoped_identifier" => {
            if let Some(name) = node.child_by_field_name("name") {
                let name = owned(name);
                if name != "self" {
                    out.push(Bound::item(name.clone(), name));
                } else if let Some(path) = node.child_by_field_name("path") {
                    bound_names(path, src, out);
                }
            }
        }
        "use_as_clause" => {
            if let Some(alias) = node.child_by_field_name("alias") {
                let item = node
                    .child_by_field_name("path")
                    .map_or_else(String::new, last);
                out.push(Bound::item(owned(alias), item));
            }
        }
        "scoped_use_list" => {
            if let Some(list) = node.child_by_field_name("list") {
                // `a::b::{self, C}` binds `b`, the module itself.
                let has_self = list
                    .named_children(&mut list.walk())
                    .any(|c| c.kind() == "self");
                if has_self && let Some(path) = node.child_by_field_name("path") {
                    out.push(Bound::module(last(path)));
                }
                bound_names(list, src, out);
            }
        }
        "use_list" => {
            for child in node.named_children(&mut node.walk()) {
                bound_names(child, src, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn impl_blocks_are_named_by_their_type() {
        for (written, name) in [
            ("Wrapper<T>", "Wrapper"),
            ("&'a mut Wrapper", "Wrapper"),
            ("dyn Trait", "Trait"),
            ("crate::a::Wrapper<T>", "Wrapper"),
            ("Point", "Point"),
        ] {
            assert_eq!(super::type_name(written), name, "{written}");
        }
    }
}
