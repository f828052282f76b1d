//! Ancestor chains of a Rust project's items, from syn.
//!
//! Usage: rust-hierarchy-truth ROOT > truth.jsonl
//!
//! One JSON line per named item of every `.rs` file under ROOT (hidden directories and
//! `target` left out): {"file", "line", "name", "ancestors"}, where `line` is where its name
//! is written and `ancestors` the enclosing modules, traits, functions and `impl` blocks
//! (named by their type's last path segment), outermost first. `impl` blocks themselves are
//! not listed: they have no name of their own. The body of a macro invocation in item
//! position is read as items, as its expansion would be.

use std::path::Path;

fn main() {
    let root = std::env::args()
        .nth(1)
        .expect("usage: rust-hierarchy-truth ROOT");
    let root = Path::new(&root);
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let mut out = Out { file: rel };
        out.items(&file.items, &[]);
    }
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

struct Out {
    file: String,
}

impl Out {
    fn record(&self, ident: &syn::Ident, ancestors: &[String]) {
        let list: Vec<String> = ancestors.iter().map(|a| format!("\"{a}\"")).collect();
        println!(
            "{{\"file\": \"{}\", \"line\": {}, \"name\": \"{}\", \"ancestors\": [{}]}}",
            self.file,
            ident.span().start().line,
            ident.to_string().trim_start_matches("r#"),
            list.join(", ")
        );
    }

    fn items(&mut self, items: &[syn::Item], ancestors: &[String]) {
        for item in items {
            self.item(item, ancestors);
        }
    }

    fn item(&mut self, item: &syn::Item, ancestors: &[String]) {
        let inner = |name: &syn::Ident| {
            let mut chain = ancestors.to_vec();
            chain.push(name.to_string());
            chain
        };
        match item {
            syn::Item::Fn(f) => {
                self.record(&f.sig.ident, ancestors);
                self.block(&f.block, &inner(&f.sig.ident));
            }
            syn::Item::Struct(s) => self.record(&s.ident, ancestors),
            syn::Item::Enum(e) => self.record(&e.ident, ancestors),
            syn::Item::Union(u) => self.record(&u.ident, ancestors),
            syn::Item::Type(t) => self.record(&t.ident, ancestors),
            syn::Item::Const(c) => self.record(&c.ident, ancestors),
            syn::Item::Static(s) => self.record(&s.ident, ancestors),
            syn::Item::Macro(m) => {
                if let Some(ident) = &m.ident {
                    self.record(ident, ancestors);
                } else if let Ok(file) = syn::parse2::<syn::File>(m.mac.tokens.clone()) {
                    // An item-wrapping macro (`cfg_rt! { … }`): its body's items, as its
                    // expansion would declare them.
                    self.items(&file.items, ancestors);
                }
            }
            syn::Item::Mod(m) => {
                self.record(&m.ident, ancestors);
                if let Some((_, items)) = &m.content {
                    self.items(items, &inner(&m.ident));
                }
            }
            syn::Item::Trait(t) => {
                self.record(&t.ident, ancestors);
                let chain = inner(&t.ident);
                for item in &t.items {
                    match item {
                        syn::TraitItem::Fn(f) => self.record(&f.sig.ident, &chain),
                        syn::TraitItem::Const(c) => self.record(&c.ident, &chain),
                        syn::TraitItem::Type(t) => self.record(&t.ident, &chain),
                        _ => {}
                    }
                }
            }
            syn::Item::Impl(i) => {
                let Some(name) = type_name(&i.self_ty) else {
                    return;
                };
                let mut chain = ancestors.to_vec();
                chain.push(name);
                for item in &i.items {
                    match item {
                        syn::ImplItem::Fn(f) => {
                            self.record(&f.sig.ident, &chain);
                            let mut body = chain.clone();
                            body.push(f.sig.ident.to_string());
                            self.block(&f.block, &body);
                        }
                        syn::ImplItem::Const(c) => self.record(&c.ident, &chain),
                        syn::ImplItem::Type(t) => self.record(&t.ident, &chain),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// Items declared directly in a function body.
    fn block(&mut self, block: &syn::Block, ancestors: &[String]) {
        for stmt in &block.stmts {
            if let syn::Stmt::Item(item) = stmt {
                self.item(item, ancestors);
            }
        }
    }
}

/// The last path segment of an `impl`'s type: `Wrapper` for `Wrapper<T>`, `&mut Wrapper`,
/// `crate::a::Wrapper<T>`; the trait for `dyn Trait`.
fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        syn::Type::Group(g) => type_name(&g.elem),
        syn::Type::TraitObject(t) => t.bounds.iter().find_map(|b| match b {
            syn::TypeParamBound::Trait(t) => t.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        }),
        _ => None,
    }
}
