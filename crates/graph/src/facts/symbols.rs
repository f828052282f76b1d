//! Facts of a file the parser read with tree-sitter (Rust, Python, Go): its declarations,
//! straight from the [`ParsedSymbol`] tree, its exports, and its calls.
//!
//! What the tree gives is exact: which symbols are declared, inside which container, which
//! the language makes visible outside the file (`pub`, a capital letter, no leading `_`),
//! and which modules the file imports (and, in Rust, declares with `mod x;`), resolved by
//! `crate::modules`. Calls are resolved by the language's scoping of names only
//! ([`calls`]): a name declared around the call, an import's binding, the receiver inside a
//! method. There is no type inference, so `value.method()` on any other value stays
//! unresolved: the graph links nothing it would have to guess.

use codectx_parser::{
    CallHead, CallSyntax, Language, Modifier, ParsedFile, ParsedSymbol, SymbolKind,
};

use super::{
    CallSite, Callee, Decl, Export, ExportTarget, FileFacts, ModuleRequest, Receiver, RequestKind,
    SiteKind, Target,
};

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
    if parsed.language == Language::Rust {
        attach_impls(&mut facts);
    }
    let (requests, request_of_import) = requests(parsed);
    facts.requests = requests;
    if parsed.language == Language::Python {
        reexport_imports(parsed, &request_of_import, &mut facts);
        class_bases(parsed, &request_of_import, &mut facts);
    }
    facts.calls = calls(parsed, &request_of_import, &facts);
    facts
}

/// One request per imported module, and per Rust `mod x;` (a request for `self::x`), in line
/// order; and each import's request.
fn requests(parsed: &ParsedFile) -> (Vec<ModuleRequest>, Vec<u32>) {
    let lines = &parsed.lines;
    // Rust's inline modules (`mod tests { … }`), outermost first (the walk is in preorder).
    let inline: Vec<&codectx_parser::ParsedSymbol> = if parsed.language == Language::Rust {
        parsed
            .walk()
            .filter(|s| s.kind == SymbolKind::Module && s.body.is_some())
            .collect()
    } else {
        Vec::new()
    };
    let scope_at = |at: u32| -> Vec<String> {
        inline
            .iter()
            .filter(|m| m.span.start <= at && at < m.span.end)
            .map(|m| m.name.clone())
            .collect()
    };
    // (request, the import it is, if any)
    let mut requests: Vec<(ModuleRequest, Option<usize>)> = parsed
        .imports
        .iter()
        .enumerate()
        .map(|(i, import)| {
            let request = ModuleRequest {
                specifier: import.source.clone(),
                line: lines.line_of(import.span.start),
                kind: RequestKind::Import,
                names: import.local_names.clone(),
                scope: scope_at(import.span.start),
            };
            (request, Some(i))
        })
        .collect();
    if parsed.language == Language::Rust {
        let declared = parsed
            .walk()
            .filter(|s| s.kind == SymbolKind::Module && s.body.is_none());
        requests.extend(declared.map(|m| {
            let request = ModuleRequest {
                specifier: format!("self::{}", m.name),
                line: m.range.end,
                kind: RequestKind::Import,
                names: Vec::new(),
                scope: scope_at(m.span.start),
            };
            (request, None)
        }));
        requests.sort_by_key(|(r, _)| r.line);
    }
    let mut request_of_import = vec![0; parsed.imports.len()];
    for (r, (_, import)) in requests.iter().enumerate() {
        if let Some(i) = import {
            request_of_import[*i] = r as u32;
        }
    }
    (
        requests.into_iter().map(|(r, _)| r).collect(),
        request_of_import,
    )
}

/// A Python module's namespace holds what it imports from other modules: a package's
/// `__init__.py` saying `from .jwt import validate_token` is where `from app.auth import
/// validate_token` finds it. Names with a leading `_` stay private, as for declarations; an
/// import inside a function or class binds nothing in the module.
fn reexport_imports(parsed: &ParsedFile, request_of_import: &[u32], facts: &mut FileFacts) {
    for (i, import) in parsed.imports.iter().enumerate() {
        let at = import.span.start;
        let nested = facts.decls.iter().any(|d| d.span.0 <= at && at < d.span.1);
        if nested {
            continue;
        }
        for (local, item) in import.local_names.iter().zip(&import.imported) {
            let Some(item) = item else { continue };
            if local.starts_with('_') || facts.exports.iter().any(|e| &e.name == local) {
                continue;
            }
            facts.exports.push(Export {
                name: local.clone(),
                line: parsed.lines.line_of(at),
                target: ExportTarget::Reexport {
                    request: request_of_import[i],
                    name: item.clone(),
                },
            });
        }
    }
}

/// A Python class's bases named by one name (`class Prepared(EncodingMixin, HooksMixin):`)
/// are the types it extends: a method a base declares is found from the class
/// (`self.encode()`), and the type hierarchy links them. A keyword (`metaclass=…`), a dotted
/// or a computed base names nothing here.
fn class_bases(parsed: &ParsedFile, request_of_import: &[u32], facts: &mut FileFacts) {
    for d in 0..facts.decls.len() {
        if facts.decls[d].kind != SymbolKind::Class {
            continue;
        }
        let extends: Vec<Target> = base_names(&facts.decls[d].signature)
            .into_iter()
            .filter(|base| *base != facts.decls[d].name)
            .filter_map(|base| type_target(parsed, request_of_import, facts, base))
            .collect();
        facts.decls[d].extends = extends;
    }
}

/// The bases a Python class head lists: `["A", "B"]` for `class C(A, B[T], metaclass=M):`.
fn base_names(head: &str) -> Vec<&str> {
    let Some(open) = head.find('(') else {
        return Vec::new();
    };
    let mut depth = 0usize;
    let mut bases = Vec::new();
    let mut start = open + 1;
    for (i, c) in head.char_indices().skip_while(|&(i, _)| i <= open) {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth > 0 => depth -= 1,
            ',' | ')' if depth == 0 => {
                bases.push(head[start..i].trim());
                start = i + 1;
                if c == ')' {
                    break;
                }
            }
            _ => {}
        }
    }
    bases
        .into_iter()
        .map(|b| b.split('[').next().unwrap_or(b).trim())
        .filter(|b| {
            !b.is_empty()
                && b.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !b.starts_with(|c: char| c.is_ascii_digit())
        })
        .collect()
}

/// A Rust `impl X` block's methods are members of the type `X` the file declares, as a Go
/// method is of its receiver type: `X::new()` and `x.len()` look them up on the type. Each
/// stays inside its `impl` (its container), where the code puts it.
fn attach_impls(facts: &mut FileFacts) {
    for i in 0..facts.decls.len() {
        let block = &facts.decls[i];
        if block.kind != SymbolKind::Impl || block.container.is_some() {
            continue;
        }
        let Some(owner) = facts.decls.iter().position(|d| {
            d.container.is_none() && d.kind.is_type() && d.name == facts.decls[i].name
        }) else {
            continue;
        };
        let methods = facts.decls[i].members.clone();
        let members = &mut facts.decls[owner].members;
        members.extend(methods);
        members.sort_unstable();
        members.dedup();
    }
}

/// Whether a declaration of `kind` holds methods a receiver or a type path reaches.
fn is_method_holder(kind: SymbolKind) -> bool {
    matches!(
        kind,
        SymbolKind::Class | SymbolKind::Struct | SymbolKind::Impl | SymbolKind::Trait
    )
}

/// The file's calls whose callee the file alone can name, or (Go) its package can:
/// - a plain name: the declaration of that name around the call (the innermost
///   function, module or file declaring it; never a method), an import's binding, or
///   (Go only) a name of the package, left for the linker ([`Target::Global`]);
/// - a path: from the receiver inside a method (`self.m()`, `Self::new()`, `h.m()` for a Go
///   receiver `h`), an import's binding (`pkg.F()`, `Claims::new()`), or a type the file
///   declares (`Config::load()`), through the path's names.
///
/// Anything else (a local value's method, a builtin) is no call site: it names nothing the
/// graph knows without types.
fn calls(parsed: &ParsedFile, request_of_import: &[u32], facts: &FileFacts) -> Vec<CallSite> {
    parsed
        .calls
        .iter()
        .filter_map(|call| {
            let caller = enclosing(facts, call.at);
            let callee = callee(parsed, request_of_import, facts, caller, call)?;
            Some(CallSite {
                caller,
                line: parsed.lines.line_of(call.at),
                kind: SiteKind::Call,
                callee,
                in_named_expression: false,
            })
        })
        .collect()
}

/// The innermost function or type declaration whose text holds `at`; `None` at module
/// level. Declarations come in pre-order, so the last one holding `at` is the innermost.
fn enclosing(facts: &FileFacts, at: u32) -> Option<u32> {
    facts
        .decls
        .iter()
        .enumerate()
        .filter(|(_, d)| d.span.0 <= at && at < d.span.1)
        .filter(|(_, d)| d.kind.is_callable() || is_method_holder(d.kind))
        .map(|(i, _)| i as u32)
        .next_back()
}

/// `decl` and its containers, innermost first.
fn scopes(facts: &FileFacts, decl: Option<u32>) -> impl Iterator<Item = u32> + '_ {
    std::iter::successors(decl, |&d| facts.decls[d as usize].container)
}

fn callee(
    parsed: &ParsedFile,
    request_of_import: &[u32],
    facts: &FileFacts,
    caller: Option<u32>,
    call: &CallSyntax,
) -> Option<Callee> {
    let (first, rest) = call.path.split_first()?;
    let imported = |import: u32, binding: u32| {
        let info = parsed.imports.get(import as usize)?;
        let request = *request_of_import.get(import as usize)?;
        Some((request, info.imported.get(binding as usize)?.clone()))
    };
    let Some((name, middle)) = rest.split_last() else {
        let target = match call.head {
            // Calling the receiver or a parameter calls no declaration we know.
            CallHead::Receiver | CallHead::Typed { .. } => return None,
            CallHead::Import { import, binding } => {
                let (request, item) = imported(import, binding)?;
                // Calling a module itself is no call of a declaration.
                Target::Import {
                    request,
                    name: item?,
                }
            }
            CallHead::Name => match declared_around(facts, caller, first) {
                Some(decl) => Target::Local { decl },
                None if parsed.language == Language::Go => Target::Global {
                    name: first.clone(),
                },
                None => return None,
            },
        };
        return Some(Callee::Name { target });
    };
    let mut receiver = match &call.head {
        CallHead::Receiver => {
            match scopes(facts, caller).find(|&d| is_method_holder(facts.decls[d as usize].kind)) {
                Some(class) => Receiver::This { class },
                // A Go method whose type another file of the package declares.
                None => Receiver::Typed {
                    target: Target::Global {
                        name: receiver_type(parsed, facts, caller?)?,
                    },
                },
            }
        }
        CallHead::Typed { type_name } => Receiver::Typed {
            target: type_target(parsed, request_of_import, facts, type_name)?,
        },
        &CallHead::Import { import, binding } => match imported(import, binding)? {
            (request, None) => Receiver::Value {
                target: Target::Namespace { request },
            },
            (request, Some(item)) => Receiver::Value {
                target: Target::Import {
                    request,
                    name: item,
                },
            },
        },
        CallHead::Name => {
            let decl = facts.decls.iter().position(|d| {
                d.container.is_none()
                    && (d.kind.is_type() || d.kind == SymbolKind::Module)
                    && d.name == *first
            })?;
            Receiver::Value {
                target: Target::Local { decl: decl as u32 },
            }
        }
    };
    for step in middle {
        receiver = Receiver::Member {
            receiver: Box::new(receiver),
            name: step.clone(),
        };
    }
    Some(Callee::Member {
        receiver,
        name: name.clone(),
    })
}

/// The type a Go method's receiver names (`Cart` for `Cart.Add`), when the method is one.
fn receiver_type(parsed: &ParsedFile, facts: &FileFacts, method: u32) -> Option<String> {
    let d = &facts.decls[method as usize];
    if parsed.language != Language::Go || d.kind != SymbolKind::Method {
        return None;
    }
    let (type_name, _) = d.qualified_name.rsplit_once('.')?;
    Some(type_name.to_string())
}

/// What a parameter's declared type `name` denotes in this file: a type it declares, an
/// import's binding, or (Go) a name of its package.
fn type_target(
    parsed: &ParsedFile,
    request_of_import: &[u32],
    facts: &FileFacts,
    name: &str,
) -> Option<Target> {
    if let Some(decl) = facts
        .decls
        .iter()
        .position(|d| d.container.is_none() && d.kind.is_type() && d.name == name)
    {
        return Some(Target::Local { decl: decl as u32 });
    }
    for (i, import) in parsed.imports.iter().enumerate() {
        if let Some(b) = import.local_names.iter().position(|l| l == name) {
            return Some(Target::Import {
                request: request_of_import[i],
                name: import.imported.get(b)?.clone()?,
            });
        }
    }
    (parsed.language == Language::Go).then(|| Target::Global {
        name: name.to_string(),
    })
}

/// The function, type or constant named `name` that a plain name inside `caller` denotes:
/// declared in the innermost function or module around it, else at the top of the file.
/// A class, `impl` or trait body is no scope its methods see by plain name.
fn declared_around(facts: &FileFacts, caller: Option<u32>, name: &str) -> Option<u32> {
    let visible =
        |d: &Decl| d.name == name && d.kind != SymbolKind::Method && !d.kind.is_root_item();
    let scope_chain =
        scopes(facts, caller).filter(|&s| !is_method_holder(facts.decls[s as usize].kind));
    for scope in scope_chain {
        let found = facts.decls[scope as usize]
            .members
            .iter()
            .copied()
            .find(|&m| visible(&facts.decls[m as usize]));
        if found.is_some() {
            return found;
        }
    }
    facts
        .decls
        .iter()
        .position(|d| d.container.is_none() && visible(d))
        .map(|d| d as u32)
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
    fn python_class_heads_list_their_bases() {
        for (head, bases) in [
            ("class C(A, B):", vec!["A", "B"]),
            (
                "class C(Generic[T], Base, metaclass=Meta):",
                vec!["Generic", "Base"],
            ),
            ("class C(models.Model, Mixin):", vec!["Mixin"]),
            ("class C:", vec![]),
            ("class C():", vec![]),
        ] {
            assert_eq!(super::base_names(head), bases, "{head}");
        }
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
