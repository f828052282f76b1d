//! Python: functions, classes (methods, class attributes, nested classes), nested functions,
//! module-level assignments; docstrings are the doc.

use tree_sitter::Node;

use super::{
    Bound, Declaration, Grammar, MAX_CALL_PATH, MAX_INLINE_SIGNATURE, MAX_SIGNATURE, owned_text,
    text,
};
use crate::extract::one_line;
use crate::symbol::{Modifier, SymbolKind};

pub(super) struct Python;

impl Grammar for Python {
    fn language(&self) -> tree_sitter::Language {
        tree_sitter_python::LANGUAGE.into()
    }

    fn declaration<'t>(
        &self,
        node: Node<'t>,
        src: &str,
        container: Option<SymbolKind>,
    ) -> Option<Declaration<'t>> {
        match node.kind() {
            "decorated_definition" => {
                let inner = node.child_by_field_name("definition")?;
                let mut decl = self.declaration(inner, src, container)?;
                let decorators: Vec<&str> = node
                    .named_children(&mut node.walk())
                    .filter(|d| d.kind() == "decorator")
                    .filter_map(|d| text(d, src))
                    .map(|d| d.trim_start_matches('@').trim())
                    .collect();
                if decl.kind == SymbolKind::Method {
                    for decorator in decorators {
                        match decorator {
                            "staticmethod" | "classmethod" => decl.modifiers.push(Modifier::Static),
                            "property" | "functools.cached_property" | "cached_property" => {
                                decl.kind = SymbolKind::Getter
                            }
                            d if d.ends_with(".setter") => decl.kind = SymbolKind::Setter,
                            _ => {}
                        }
                    }
                }
                Some(decl)
            }
            "function_definition" => {
                let name_node = node.child_by_field_name("name")?;
                let name = owned_text(name_node, src);
                let kind = match container {
                    Some(SymbolKind::Class) if name == "__init__" => SymbolKind::Constructor,
                    Some(SymbolKind::Class) => SymbolKind::Method,
                    _ => SymbolKind::Function,
                };
                let body = node.child_by_field_name("body");
                let is_async = node.child(0).is_some_and(|c| c.kind() == "async");
                Some(Declaration {
                    exported: !name.starts_with('_') || is_dunder(&name),
                    body,
                    members: body,
                    modifiers: if is_async {
                        vec![Modifier::Async]
                    } else {
                        Vec::new()
                    },
                    doc: body.and_then(|b| docstring(b, src)),
                    ..Declaration::new(kind, name, name_node, node)
                })
            }
            "class_definition" => {
                let name_node = node.child_by_field_name("name")?;
                let name = owned_text(name_node, src);
                let body = node.child_by_field_name("body");
                Some(Declaration {
                    exported: !name.starts_with('_'),
                    body,
                    members: body,
                    doc: body.and_then(|b| docstring(b, src)),
                    ..Declaration::new(SymbolKind::Class, name, name_node, node)
                })
            }
            // `NAME = …` at the top level or in a class body; locals are not symbols.
            "expression_statement" if matches!(container, None | Some(SymbolKind::Class)) => {
                let assignment = node.named_child(0).filter(|a| a.kind() == "assignment")?;
                let target = assignment
                    .child_by_field_name("left")
                    .filter(|l| l.kind() == "identifier")?;
                let name = owned_text(target, src);
                let signature = assignment
                    .child_by_field_name("right")
                    .filter(|_| node.end_byte() - node.start_byte() > MAX_INLINE_SIGNATURE)
                    .and_then(|right| src.get(node.start_byte()..right.start_byte()))
                    .map(|head| one_line(head.trim_end().trim_end_matches('='), MAX_SIGNATURE));
                let kind = if container.is_some() {
                    SymbolKind::Property
                } else if name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                {
                    SymbolKind::Const
                } else {
                    SymbolKind::Variable
                };
                Some(Declaration {
                    exported: !name.starts_with('_'),
                    signature,
                    ..Declaration::new(kind, name, target, node)
                })
            }
            _ => None,
        }
    }

    fn item_kind(&self, node: Node<'_>) -> SymbolKind {
        match node.kind() {
            "import_statement" | "import_from_statement" | "future_import_statement" => {
                SymbolKind::Import
            }
            "expression_statement" => SymbolKind::Expression,
            _ => SymbolKind::Statement,
        }
    }

    fn imports<'t>(&self, node: Node<'t>, src: &str) -> Vec<(Node<'t>, String, Vec<Bound>)> {
        let owned = |n: Node<'_>| owned_text(n, src);
        let mut cursor = node.walk();
        match node.kind() {
            // `import a.b` binds `a`; `import a.b as c` binds `c`.
            "import_statement" => node
                .children_by_field_name("name", &mut cursor)
                .map(|name| match name.kind() {
                    "aliased_import" => (
                        node,
                        name.child_by_field_name("name")
                            .map(owned)
                            .unwrap_or_default(),
                        name.child_by_field_name("alias")
                            .map(|alias| Bound::module(owned(alias)))
                            .into_iter()
                            .collect(),
                    ),
                    // `import a.b` binds the package `a`: an import of `a` as far as `a.b.f()`
                    // is concerned, which the graph does not follow into `b`.
                    _ => {
                        let module = owned(name);
                        let bound = module.split('.').next().unwrap_or("").to_string();
                        (node, module, vec![Bound::module(bound)])
                    }
                })
                .collect(),
            "import_from_statement" => {
                let module = node
                    .child_by_field_name("module_name")
                    .map(owned)
                    .unwrap_or_default();
                let bound = node
                    .children_by_field_name("name", &mut cursor)
                    .filter_map(|name| match name.kind() {
                        "aliased_import" => Some(Bound::item(
                            owned(name.child_by_field_name("alias")?),
                            owned(name.child_by_field_name("name")?),
                        )),
                        _ => Some(Bound::item(owned(name), owned(name))),
                    })
                    .collect();
                vec![(node, module, bound)]
            }
            "future_import_statement" => vec![(node, "__future__".into(), Vec::new())],
            _ => Vec::new(),
        }
    }

    fn call_and_scope_kinds(&self) -> &'static [&'static str] {
        &["call", "function_definition"]
    }

    fn call_path(&self, node: Node<'_>, src: &str) -> Option<Vec<String>> {
        if node.kind() != "call" {
            return None;
        }
        let mut path = Vec::new();
        let mut at = node.child_by_field_name("function")?;
        while at.kind() == "attribute" {
            path.push(text(at.child_by_field_name("attribute")?, src)?.to_string());
            at = at.child_by_field_name("object")?;
            if path.len() > MAX_CALL_PATH {
                return None;
            }
        }
        if at.kind() != "identifier" {
            return None;
        }
        path.push(text(at, src)?.to_string());
        path.reverse();
        Some(path)
    }

    fn typed_parameters(&self, node: Node<'_>, src: &str) -> Vec<(String, String)> {
        if node.kind() != "function_definition" {
            return Vec::new();
        }
        let Some(list) = node.child_by_field_name("parameters") else {
            return Vec::new();
        };
        list.named_children(&mut list.walk())
            .filter_map(|p| {
                let name = match p.kind() {
                    "typed_parameter" => p.named_child(0)?,
                    "typed_default_parameter" => p.child_by_field_name("name")?,
                    _ => return None,
                };
                // `x: User`: the annotation is one name (not `Optional[User]`, not a string).
                let annotation = p.child_by_field_name("type")?.named_child(0)?;
                if name.kind() != "identifier" || annotation.kind() != "identifier" {
                    return None;
                }
                Some((owned_text(name, src), owned_text(annotation, src)))
            })
            .collect()
    }

    /// A method's first parameter (`self`, `cls`), unless it is a `staticmethod`.
    fn receiver_name(&self, node: Node<'_>, src: &str) -> Option<String> {
        if node.kind() != "function_definition" {
            return None;
        }
        let mut holder = node.parent()?;
        if holder.kind() == "decorated_definition" {
            let is_static = holder
                .named_children(&mut holder.walk())
                .filter(|d| d.kind() == "decorator")
                .filter_map(|d| text(d, src))
                .any(|d| d.trim_start_matches('@').trim() == "staticmethod");
            if is_static {
                return None;
            }
            holder = holder.parent()?;
        }
        if holder.kind() != "block" || holder.parent()?.kind() != "class_definition" {
            return None;
        }
        let parameters = node.child_by_field_name("parameters")?;
        let first = parameters.named_child(0)?;
        let name = match first.kind() {
            "identifier" => first,
            "typed_parameter" => first.named_child(0)?,
            "default_parameter" | "typed_default_parameter" => first.child_by_field_name("name")?,
            _ => return None,
        };
        (name.kind() == "identifier").then(|| owned_text(name, src))
    }

    fn is_compound(&self, node: Node<'_>) -> bool {
        matches!(
            node.kind(),
            "if_statement"
                | "elif_clause"
                | "else_clause"
                | "try_statement"
                | "except_clause"
                | "except_group_clause"
                | "finally_clause"
                | "with_statement"
                | "for_statement"
                | "while_statement"
                | "block"
        )
    }

    fn doc_comment(&self, _comments: &[&str]) -> Option<String> {
        // Python's doc is the docstring; `#` comments above a definition are not.
        None
    }

    fn is_identifier(&self, kind: &str) -> bool {
        kind == "identifier"
    }
}

/// `__init__`, `__call__`: public protocol methods, not private names.
fn is_dunder(name: &str) -> bool {
    name.len() > 4 && name.starts_with("__") && name.ends_with("__")
}

/// The docstring of a function or class body: its first statement, when that is a string.
fn docstring(body: Node<'_>, src: &str) -> Option<String> {
    let first = body
        .named_child(0)
        .filter(|s| s.kind() == "expression_statement")?;
    let string = first.named_child(0).filter(|s| s.kind() == "string")?;
    let raw = text(string, src)?;
    let raw = raw.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B']);
    let quote = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| raw.starts_with(q))?;
    let inner = raw.strip_prefix(quote)?.strip_suffix(quote)?;
    Some(clean_docstring(inner)).filter(|d| !d.is_empty())
}

/// A docstring as `inspect.cleandoc` shows it: the first line stripped, the common
/// indentation of the others removed, blank lines at either end dropped.
fn clean_docstring(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").trim().to_string();
    let rest: Vec<&str> = lines.collect();
    let indent = rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = vec![first];
    out.extend(rest.iter().map(|l| {
        l.get(indent..)
            .unwrap_or(l.trim_start())
            .trim_end()
            .to_string()
    }));
    out.join("\n").trim().to_string()
}
