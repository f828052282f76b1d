//! Rust `use` paths and `mod` declarations → files: `crate::` from the crate's root module
//! (`src/lib.rs` or `src/main.rs` beside the nearest `Cargo.toml`), `self::` and `super::`
//! from the importing module, a child module by its name, another crate of the repository
//! by its package name ([`Crates`]). A path leads to the deepest module file it names; the
//! segments after it are items. Crates from elsewhere are external.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::Resolved;

/// The library crates of a repository: each `Cargo.toml` package's name as code writes it
/// (`my-crate` → `my_crate`) and its root module file (`[lib] path`, else `src/lib.rs`).
#[derive(Debug, Default)]
pub(super) struct Crates(HashMap<String, PathBuf>);

/// Directories never searched for manifests: build output and dependencies.
const SKIP: &[&str] = &["target", "node_modules"];

impl Crates {
    pub(super) fn find(root: &Path) -> Crates {
        let mut crates = HashMap::new();
        let mut dirs = vec![(root.to_path_buf(), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            if let Some((name, lib)) = library(&dir) {
                crates.entry(name).or_insert(lib);
            }
            // Workspaces nest their members a few levels down, not deeper.
            if depth == 6 {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir && !name.starts_with('.') && !SKIP.contains(&name.as_ref()) {
                    dirs.push((entry.path(), depth + 1));
                }
            }
        }
        Crates(crates)
    }
}

/// The package in `dir`'s `Cargo.toml` with a library: its name as code writes it and its
/// root module file.
fn library(dir: &Path) -> Option<(String, PathBuf)> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let manifest: toml::Table = text.parse().ok()?;
    let package = manifest.get("package")?.as_table()?;
    let lib = manifest.get("lib").and_then(|l| l.as_table());
    let name = lib
        .and_then(|l| l.get("name"))
        .or_else(|| package.get("name"))?
        .as_str()?
        .replace('-', "_");
    let file = match lib.and_then(|l| l.get("path")).and_then(|p| p.as_str()) {
        Some(path) => dir.join(path),
        None => dir.join("src/lib.rs"),
    };
    file.is_file().then_some((name, file))
}

/// Resolves a `use` argument (`crate::auth::{Claims, Token}`, `super::config::Settings`,
/// `self::child`, `other_crate::x`) as written in `from`.
pub(super) fn resolve(root: &Path, from: &Path, path: &str, crates: &Crates) -> Resolved {
    // The module path: what precedes a `{…}` list, a glob or an alias.
    let head = path.split(['{', '*']).next().unwrap_or(path);
    let head = head.split(" as ").next().unwrap_or(head);
    let segments: Vec<&str> = head
        .split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let Some((first, rest)) = segments.split_first() else {
        return Resolved::Unresolved(path.to_string());
    };
    let start = match *first {
        "crate" => crate_root(root, from),
        "self" => Some(Module::of(from)),
        "super" => Module::of(from).parent(),
        // A child module of this one (`mod a;` then `use a::X;`), else another crate: of
        // this repository, or from elsewhere.
        _ => {
            let here = Module::of(from);
            let start = here
                .child(first)
                .or_else(|| crates.0.get(*first).map(|lib| Module::of(lib)));
            return match start {
                Some(module) => Resolved::File(module.descend(rest).file),
                None => Resolved::External(path.to_string()),
            };
        }
    };
    // `super::super::x`: each further `super` one module up.
    let mut rest = rest;
    let mut start = start;
    while let (Some(module), Some((&"super", tail))) = (start.as_ref(), rest.split_first()) {
        start = module.parent();
        rest = tail;
    }
    match start {
        Some(module) => Resolved::File(module.descend(rest).file),
        None => Resolved::Unresolved(path.to_string()),
    }
}

/// A module: its file, and the directory its child modules' files are in.
#[derive(Debug, Clone)]
struct Module {
    file: PathBuf,
    dir: PathBuf,
}

impl Module {
    /// The module `file` defines: `lib.rs`, `main.rs` and `mod.rs` own their directory,
    /// `a.rs` owns `a/`.
    fn of(file: &Path) -> Module {
        let parent = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let dir = if matches!(stem, "lib" | "main" | "mod") {
            parent
        } else {
            parent.join(stem)
        };
        Module {
            file: file.to_path_buf(),
            dir,
        }
    }

    /// The child module `name`: `dir/name.rs` or `dir/name/mod.rs`.
    fn child(&self, name: &str) -> Option<Module> {
        let flat = self.dir.join(format!("{name}.rs"));
        if flat.is_file() {
            return Some(Module::of(&flat));
        }
        let nested = self.dir.join(name).join("mod.rs");
        nested.is_file().then(|| Module::of(&nested))
    }

    /// The module above: the owner of this module's file's directory.
    fn parent(&self) -> Option<Module> {
        let file_dir = self.file.parent()?;
        let owner_dir = if self.dir == file_dir {
            file_dir.parent()?
        } else {
            file_dir
        };
        ["mod.rs", "lib.rs", "main.rs"]
            .iter()
            .map(|f| owner_dir.join(f))
            .find(|f| f.is_file())
            .or_else(|| {
                let up = owner_dir.parent()?;
                let name = owner_dir.file_name()?.to_str()?;
                Some(up.join(format!("{name}.rs"))).filter(|f| f.is_file())
            })
            .map(|f| Module::of(&f))
    }

    /// The deepest module `segments` lead to from here; the rest are items.
    fn descend(self, segments: &[&str]) -> Module {
        let mut module = self;
        for segment in segments {
            match module.child(segment) {
                Some(child) => module = child,
                None => break,
            }
        }
        module
    }
}

/// The crate root module of `from`: `src/lib.rs` or `src/main.rs` beside the nearest
/// `Cargo.toml` above it (inside `root`).
fn crate_root(root: &Path, from: &Path) -> Option<Module> {
    let mut dir = from.parent()?;
    loop {
        if dir.join("Cargo.toml").is_file() {
            return ["src/lib.rs", "src/main.rs"]
                .iter()
                .map(|f| dir.join(f))
                .find(|f| f.is_file())
                .map(|f| Module::of(&f));
        }
        if dir == root {
            return None;
        }
        dir = dir.parent()?;
    }
}
