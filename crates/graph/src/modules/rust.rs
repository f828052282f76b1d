//! Rust `use` paths and `mod` declarations → files: `crate::` from the crate's root module
//! (`src/lib.rs` or `src/main.rs` beside the nearest `Cargo.toml`), `self::` and `super::`
//! from the importing module, a child module by its name. A path leads to the deepest
//! module file it names; the segments after it are items. Other crates are external.

use std::path::{Path, PathBuf};

use super::Resolved;

/// Resolves a `use` argument (`crate::auth::{Claims, Token}`, `super::config::Settings`,
/// `self::child`) as written in `from`.
pub(super) fn resolve(root: &Path, from: &Path, path: &str) -> Resolved {
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
        // A child module of this one (`mod a;` then `use a::X;`), else another crate.
        _ => {
            let here = Module::of(from);
            return match here.child(first) {
                Some(child) => Resolved::File(child.descend(rest).file),
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
