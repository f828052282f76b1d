//! Import edges of a Rust workspace as rustc's module tree resolves them: an independent
//! truth for `cargo xtask import-accuracy`.
//!
//! Usage: rust-imports-truth ROOT > truth.jsonl
//!
//! The crates and their root files come from `cargo metadata` (every target of every
//! workspace member). From each root, the module tree is built as rustc builds it: `mod x;`
//! loads `x.rs` or `x/mod.rs` from the module's directory, or the file a `#[path]` names;
//! `mod x { … }` is a module inside its file. Then every `use` is resolved in the module
//! that holds it (an inline `mod tests` is its own module): `crate`, `self`, `super`, a
//! child module, an item of the module, or a crate (a workspace member's library, or one
//! from elsewhere). The module path leads as deep as modules go; what follows is items.
//!
//! One JSON line per `use` and per `mod x;`: {"file", "line", "module", "resolved"}.
//! `module` is the `use` argument as written, whitespace collapsed (`self::x` for `mod x;`),
//! `line` where the statement starts (where `mod x;` ends), and `resolved` the file of the
//! module it leads to, relative to ROOT, or null for a crate from elsewhere. A `use` whose
//! first segment is a name another `use` brought in (`use Ordering::*` after `use
//! std::cmp::Ordering`) is left out and counted on stderr: which file it leads to depends
//! on name resolution beyond the module tree.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

fn main() {
    let root = std::env::args()
        .nth(1)
        .expect("usage: rust-imports-truth ROOT");
    let root = std::fs::canonicalize(&root).expect("ROOT exists");
    let metadata = cargo_metadata(&root);
    let mut tree = Tree::default();
    // Every target's root module, once per file (a library and a binary never share one).
    let mut roots_seen = HashSet::new();
    for target in &metadata.targets {
        if roots_seen.insert(target.src_path.clone()) {
            tree.load_crate(target);
        }
    }
    let mut out = Output::new(&root, &metadata);
    for id in 0..tree.modules.len() {
        out.module(&tree, id);
    }
    out.print();
}

/// What `cargo metadata` says: every target of the workspace's members, and the crate
/// names their code can write (each member's library, each dependency).
struct Metadata {
    targets: Vec<Target>,
    /// A workspace member's library by the name code writes it (`my-crate` → `my_crate`).
    libraries: HashMap<String, PathBuf>,
    /// Dependencies from elsewhere, by the name code writes them.
    external: HashSet<String>,
}

struct Target {
    src_path: PathBuf,
    /// The crate's own library name, when it is a binary or test of a package with one: a
    /// binary writes `my_crate::x`.
    package_library: Option<String>,
}

fn cargo_metadata(root: &Path) -> Metadata {
    let output = std::process::Command::new("cargo")
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("metadata JSON");
    let mut targets = Vec::new();
    let mut libraries = HashMap::new();
    let mut external = HashSet::new();
    let packages = json["packages"].as_array().cloned().unwrap_or_default();
    for package in &packages {
        let mut library = None;
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds: Vec<&str> = target["kind"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k.as_str())
                .collect();
            if kinds
                .iter()
                .any(|k| matches!(*k, "lib" | "rlib" | "proc-macro"))
            {
                let name = target["name"].as_str().unwrap_or("").replace('-', "_");
                let path = PathBuf::from(target["src_path"].as_str().unwrap_or(""));
                libraries.insert(name.clone(), path);
                library = Some(name);
            }
        }
        for target in package["targets"].as_array().into_iter().flatten() {
            if target["kind"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k.as_str() == Some("custom-build"))
            {
                continue;
            }
            targets.push(Target {
                src_path: PathBuf::from(target["src_path"].as_str().unwrap_or("")),
                package_library: library.clone(),
            });
        }
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let name = dependency["rename"]
                .as_str()
                .or_else(|| dependency["name"].as_str())
                .unwrap_or("")
                .replace('-', "_");
            external.insert(name);
        }
    }
    for name in libraries.keys() {
        external.remove(name);
    }
    Metadata {
        targets,
        libraries,
        external,
    }
}

/// rustc's module tree of every crate of the workspace.
#[derive(Default)]
struct Tree {
    modules: Vec<Module>,
    /// The root module of each crate root file.
    crate_roots: HashMap<PathBuf, usize>,
}

struct Module {
    /// The file the module's items are written in.
    file: PathBuf,
    /// Where its `mod x;` children's files are.
    dir: PathBuf,
    parent: Option<usize>,
    crate_root: usize,
    children: BTreeMap<String, usize>,
    /// Names of the items it declares (types, functions, constants…), not modules.
    items: HashSet<String>,
    /// Its `use` items, and its `mod x;` declarations with their end line.
    uses: Vec<syn::ItemUse>,
    declared: Vec<(String, usize)>,
    /// The crate's library name, for a binary's `my_crate::x`.
    package_library: Option<String>,
}

impl Tree {
    fn load_crate(&mut self, target: &Target) {
        let Some(items) = parse(&target.src_path) else {
            return;
        };
        let dir = target
            .src_path
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let id = self.add(target.src_path.clone(), dir, None, target);
        self.crate_roots.insert(target.src_path.clone(), id);
        self.fill(id, &items, target);
    }

    fn add(
        &mut self,
        file: PathBuf,
        dir: PathBuf,
        parent: Option<usize>,
        target: &Target,
    ) -> usize {
        let id = self.modules.len();
        let crate_root = parent.map_or(id, |p| self.modules[p].crate_root);
        self.modules.push(Module {
            file,
            dir,
            parent,
            crate_root,
            children: BTreeMap::new(),
            items: HashSet::new(),
            uses: Vec::new(),
            declared: Vec::new(),
            package_library: target.package_library.clone(),
        });
        id
    }

    /// Reads a module's items: its children (loading `mod x;` files), its names, its uses.
    fn fill(&mut self, id: usize, items: &[syn::Item], target: &Target) {
        for item in items {
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let path_attribute = path_attribute(&m.attrs);
                    let child = match &m.content {
                        Some((_, inner)) => {
                            let dir = match &path_attribute {
                                Some(p) => self.modules[id].dir.join(p),
                                None => self.modules[id].dir.join(&name),
                            };
                            let file = self.modules[id].file.clone();
                            let child = self.add(file, dir, Some(id), target);
                            self.fill(child, inner, target);
                            Some(child)
                        }
                        None => {
                            let end = m.semi.map_or(0, |s| s.span.end().line);
                            self.modules[id].declared.push((name.clone(), end));
                            self.load_file_module(id, &name, path_attribute.as_deref(), target)
                        }
                    };
                    if let Some(child) = child {
                        self.modules[id].children.insert(name, child);
                    }
                }
                syn::Item::Use(u) => self.modules[id].uses.push(u.clone()),
                syn::Item::Fn(f) => {
                    self.modules[id].items.insert(f.sig.ident.to_string());
                    // `use` inside a function body resolves in the module around it.
                    self.body_uses(id, &f.block);
                }
                syn::Item::Impl(i) => {
                    for item in &i.items {
                        if let syn::ImplItem::Fn(f) = item {
                            self.body_uses(id, &f.block);
                        }
                    }
                }
                // An item-wrapping macro (`cfg_rt! { mod x; pub use x::Y; }`, as tokio
                // writes): its body is items, as its expansion would be.
                syn::Item::Macro(m) if m.ident.is_none() => {
                    if let Ok(file) = syn::parse2::<syn::File>(m.mac.tokens.clone()) {
                        self.fill(id, &file.items, target);
                    }
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[id].items.insert(name);
                    }
                }
            }
        }
    }

    fn body_uses(&mut self, id: usize, block: &syn::Block) {
        for stmt in &block.stmts {
            if let syn::Stmt::Item(syn::Item::Use(u)) = stmt {
                self.modules[id].uses.push(u.clone());
            }
        }
    }

    /// `mod name;` in module `id`: `name.rs` or `name/mod.rs` in its directory, or the file
    /// `#[path]` names (relative to the declaring file's directory).
    fn load_file_module(
        &mut self,
        id: usize,
        name: &str,
        path_attribute: Option<&str>,
        target: &Target,
    ) -> Option<usize> {
        let module = &self.modules[id];
        let file = match path_attribute {
            Some(p) => {
                // A `#[path]` on a `mod` written at the top of a file is relative to that
                // file's directory; inside an inline module, to the inline module's.
                let base = if module
                    .parent
                    .is_some_and(|p| self.modules[p].file == module.file)
                {
                    module.dir.clone()
                } else {
                    module.file.parent()?.to_path_buf()
                };
                base.join(p)
            }
            None => {
                let flat = module.dir.join(format!("{name}.rs"));
                if flat.is_file() {
                    flat
                } else {
                    module.dir.join(name).join("mod.rs")
                }
            }
        };
        let items = parse(&file)?;
        let stem = file.file_stem()?.to_str()?.to_string();
        let dir = if stem == "mod" || path_attribute.is_some() && stem != name {
            file.parent()?.to_path_buf()
        } else {
            file.parent()?.join(&stem)
        };
        let child = self.add(file, dir, Some(id), target);
        self.fill(child, &items, target);
        Some(child)
    }
}

fn parse(file: &Path) -> Option<Vec<syn::Item>> {
    let text = std::fs::read_to_string(file).ok()?;
    syn::parse_file(&text).ok().map(|f| f.items)
}

fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| {
        let syn::Meta::NameValue(nv) = &a.meta else {
            return None;
        };
        if !nv.path.is_ident("path") {
            return None;
        }
        match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}

fn item_name(item: &syn::Item) -> Option<String> {
    Some(
        match item {
            syn::Item::Struct(s) => &s.ident,
            syn::Item::Enum(e) => &e.ident,
            syn::Item::Union(u) => &u.ident,
            syn::Item::Type(t) => &t.ident,
            syn::Item::Trait(t) => &t.ident,
            syn::Item::Const(c) => &c.ident,
            syn::Item::Static(s) => &s.ident,
            syn::Item::Macro(m) => m.ident.as_ref()?,
            _ => return None,
        }
        .to_string(),
    )
}

/// The records, each statement once (a file loaded by two crates gives the same answer).
struct Output<'a> {
    root: &'a Path,
    metadata: &'a Metadata,
    records: BTreeMap<(String, usize, String), Option<String>>,
    left_out: usize,
}

/// Where a `use` path's first segment leads.
enum Start {
    Module(usize),
    /// A crate from elsewhere: no project file.
    External,
    /// An item of the module itself (`use Kind::*` for its own enum): its file.
    OwnItem,
    /// A name another `use` brought in: beyond the module tree.
    Unknown,
}

impl<'a> Output<'a> {
    fn new(root: &'a Path, metadata: &'a Metadata) -> Self {
        Output {
            root,
            metadata,
            records: BTreeMap::new(),
            left_out: 0,
        }
    }

    fn relative(&self, file: &Path) -> String {
        file.strip_prefix(self.root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/")
    }

    fn module(&mut self, tree: &Tree, id: usize) {
        let module = &tree.modules[id];
        let file = self.relative(&module.file);
        // Each `use` is quoted from its file's text, read once per module.
        let text = std::fs::read_to_string(&module.file).unwrap_or_default();
        for (name, line) in &module.declared {
            let resolved = module
                .children
                .get(name)
                .map(|c| self.relative(&tree.modules[*c].file));
            self.records
                .insert((file.clone(), *line, format!("self::{name}")), resolved);
        }
        for item in &module.uses {
            let (line, written) = written(&text, item);
            let mut segments = Vec::new();
            let leading_colon = item.leading_colon.is_some();
            prefix(&item.tree, &mut segments);
            let resolved = match self.start(tree, id, &segments, leading_colon) {
                Start::Module(m) => {
                    Some(self.relative(&tree.modules[descend(tree, m, &segments[1..])].file))
                }
                Start::External => None,
                Start::OwnItem => Some(file.clone()),
                Start::Unknown => {
                    self.left_out += 1;
                    continue;
                }
            };
            self.records.insert((file.clone(), line, written), resolved);
        }
    }

    fn start(&self, tree: &Tree, id: usize, segments: &[String], leading_colon: bool) -> Start {
        let Some(first) = segments.first() else {
            return Start::Unknown;
        };
        let module = &tree.modules[id];
        let library = |name: &str| {
            let by_member = self.metadata.libraries.get(name)?;
            tree.crate_roots.get(by_member).copied()
        };
        if leading_colon {
            return match library(first) {
                Some(m) => Start::Module(m),
                None => Start::External,
            };
        }
        match first.as_str() {
            "crate" => Start::Module(module.crate_root),
            "self" => Start::Module(id),
            "super" => module.parent.map_or(Start::Unknown, Start::Module),
            name => {
                if let Some(child) = module.children.get(name) {
                    Start::Module(*child)
                } else if module.items.contains(name) {
                    Start::OwnItem
                } else if let Some(m) = library(name) {
                    Start::Module(m)
                } else if self.metadata.external.contains(name)
                    || matches!(name, "std" | "core" | "alloc" | "proc_macro" | "test")
                    || module.package_library.as_deref() == Some(name)
                {
                    Start::External
                } else {
                    Start::Unknown
                }
            }
        }
    }

    fn print(&self) {
        for ((file, line, module), resolved) in &self.records {
            println!(
                "{}",
                serde_json::json!({"file": file, "line": line, "module": module, "resolved": resolved})
            );
        }
        eprintln!(
            "{} statements; {} left out (their first segment is a name another `use` brought in)",
            self.records.len(),
            self.left_out
        );
    }
}

/// `super::super::x`: each further `super` one module up; then child modules as deep as
/// they go.
fn descend(tree: &Tree, mut id: usize, rest: &[String]) -> usize {
    let mut rest = rest;
    while let Some(("super", tail)) = rest.split_first().map(|(s, t)| (s.as_str(), t)) {
        match tree.modules[id].parent {
            Some(parent) => id = parent,
            None => break,
        }
        rest = tail;
    }
    for segment in rest {
        match tree.modules[id].children.get(segment) {
            Some(child) => id = *child,
            None => break,
        }
    }
    id
}

/// The path a `use` tree shares before it branches: `a::b` of `a::b::{c, d}`, `a::b::c` of
/// `a::b::c` and of `a::b::c as d`.
fn prefix(tree: &syn::UseTree, out: &mut Vec<String>) {
    match tree {
        syn::UseTree::Path(p) => {
            out.push(p.ident.to_string());
            prefix(&p.tree, out);
        }
        syn::UseTree::Name(n) => out.push(n.ident.to_string()),
        syn::UseTree::Rename(r) => out.push(r.ident.to_string()),
        syn::UseTree::Glob(_) | syn::UseTree::Group(_) => {}
    }
}

/// Where a `use` starts (its first line, attributes aside) and its argument as written.
fn written(text: &str, item: &syn::ItemUse) -> (usize, String) {
    use syn::spanned::Spanned;
    let start = item.use_token.span.start();
    let (from, to) = (item.tree.span().start(), item.tree.span().end());
    let slice = slice_of(text, from, to);
    let argument = match item.leading_colon {
        Some(_) => format!("::{slice}"),
        None => slice,
    };
    // `pub use` starts at `pub`.
    let line = match &item.vis {
        syn::Visibility::Inherited => start.line,
        vis => vis.span().start().line,
    };
    (
        line,
        argument.split_whitespace().collect::<Vec<_>>().join(" "),
    )
}

/// The text between two line/column positions (columns in characters).
fn slice_of(text: &str, from: proc_macro2::LineColumn, to: proc_macro2::LineColumn) -> String {
    let offset = |at: proc_macro2::LineColumn| -> usize {
        let mut offset = 0;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            if i + 1 == at.line {
                return offset
                    + line
                        .char_indices()
                        .nth(at.column)
                        .map_or(line.len(), |(b, _)| b);
            }
            offset += line.len();
        }
        offset
    };
    text[offset(from)..offset(to)].to_string()
}
