//! Rust `use` paths and `mod` declarations → files: `crate::` from the root of the crate the
//! file is in (a target of the nearest package: its library, a binary, a test…), `self::`
//! and `super::` from the module holding the statement (an inline `mod tests { … }` is one),
//! a child module by its name, another crate of the repository by its package name
//! ([`Crates`]). A path leads to the deepest module file it names; the segments after it are
//! items. Crates from elsewhere are external.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::Resolved;

/// The crates of a repository, from its `Cargo.toml` files (found once per resolver): each
/// library by the name code writes it (`my-crate` → `my_crate`) with its root module file,
/// and each package's crate roots (library, binaries, tests, examples, benches).
#[derive(Debug, Default)]
pub(super) struct Crates {
    libraries: HashMap<String, PathBuf>,
    /// A package's directory → its targets' roots.
    roots: HashMap<PathBuf, Vec<CrateRoot>>,
}

/// A target's root file.
#[derive(Debug)]
struct CrateRoot {
    file: PathBuf,
    /// The modules it declares by name, read only when another root shares its directory
    /// (`tests/lib.rs` and `tests/other.rs`): which of them a file below belongs to.
    modules: Vec<String>,
}

/// Directories never searched for manifests: build output and dependencies.
const SKIP: &[&str] = &["target", "node_modules"];

impl Crates {
    pub(super) fn find(root: &Path) -> Crates {
        let mut crates = Crates::default();
        let mut dirs = vec![(root.to_path_buf(), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            if let Some(package) = Package::read(&dir) {
                if let Some((name, lib)) = package.library {
                    crates.libraries.entry(name).or_insert(lib);
                }
                crates.roots.insert(dir.clone(), package.roots);
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
        crates
    }
}

impl Crates {
    /// The targets' roots of the package `file` is in (the nearest above it).
    fn package_roots(&self, file: &Path) -> Option<&[CrateRoot]> {
        file.ancestors()
            .skip(1)
            .find_map(|dir| self.roots.get(dir))
            .map(Vec::as_slice)
    }

    /// The module `file` defines, as a crate root when it is one.
    fn module_of(&self, file: &Path) -> Module {
        let is_root = self
            .package_roots(file)
            .is_some_and(|roots| roots.iter().any(|r| r.file == file));
        if is_root {
            Module::crate_root(file)
        } else {
            Module::of(file)
        }
    }
}

/// What a package's `Cargo.toml` and Cargo's target discovery say.
struct Package {
    /// Its library's name as code writes it, and its root module file.
    library: Option<(String, PathBuf)>,
    /// Every target's root, the library's first.
    roots: Vec<CrateRoot>,
}

impl Package {
    fn read(dir: &Path) -> Option<Package> {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let manifest: toml::Table = text.parse().ok()?;
        let package = manifest.get("package")?.as_table()?;
        let lib = manifest.get("lib").and_then(|l| l.as_table());
        let lib_file = match lib.and_then(|l| l.get("path")).and_then(|p| p.as_str()) {
            Some(path) => dir.join(path),
            None => dir.join("src/lib.rs"),
        };
        let library = lib
            .and_then(|l| l.get("name"))
            .or_else(|| package.get("name"))
            .and_then(|n| n.as_str())
            .map(|n| (n.replace('-', "_"), lib_file.clone()))
            .filter(|_| lib_file.is_file());
        let mut roots = vec![lib_file];
        // Targets the manifest lists with a path…
        for section in ["bin", "test", "example", "bench"] {
            let listed = manifest.get(section).and_then(|t| t.as_array());
            for target in listed.into_iter().flatten() {
                if let Some(path) = target.get("path").and_then(|p| p.as_str()) {
                    roots.push(dir.join(path));
                }
            }
        }
        // …and those Cargo discovers: `src/main.rs`, `src/bin/*`, `tests/*`, `examples/*`,
        // `benches/*` (a file, or a directory's `main.rs`).
        roots.push(dir.join("src/main.rs"));
        for targets in ["src/bin", "tests", "examples", "benches"] {
            let Ok(entries) = std::fs::read_dir(dir.join(targets)) else {
                continue;
            };
            for path in entries.filter_map(Result::ok).map(|e| e.path()) {
                if path.extension().is_some_and(|e| e == "rs") {
                    roots.push(path);
                } else if path.join("main.rs").is_file() {
                    roots.push(path.join("main.rs"));
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        roots.retain(|r| r.is_file() && seen.insert(r.clone()));
        let shared = |file: &Path| {
            let dir = file.parent();
            roots.iter().filter(|r| r.parent() == dir).count() > 1
        };
        let roots = roots
            .iter()
            .map(|file| CrateRoot {
                file: file.clone(),
                modules: if shared(file) {
                    declared_modules(file)
                } else {
                    Vec::new()
                },
            })
            .collect();
        Some(Package { library, roots })
    }
}

/// Where a `use` is written: its file, and the modules declared inside that file around it
/// (`mod tests { … }`), outermost first.
pub(super) struct Scope<'a> {
    pub from: &'a Path,
    pub inline: &'a [String],
}

/// The modules a statement is nested in, innermost last: the file's module, then each
/// inline module around the statement.
struct Nesting(Vec<Module>);

impl Nesting {
    fn of(scope: &Scope<'_>, crates: &Crates) -> Nesting {
        let mut modules = vec![crates.module_of(scope.from)];
        for name in scope.inline {
            let dir = modules[modules.len() - 1].dir.join(name);
            modules.push(Module {
                file: scope.from.to_path_buf(),
                dir,
            });
        }
        Nesting(modules)
    }

    fn innermost(&self) -> &Module {
        &self.0[self.0.len() - 1]
    }

    /// One module up: the enclosing inline module, or the file module's parent.
    fn up(&mut self) -> Option<()> {
        if self.0.len() > 1 {
            self.0.pop();
        } else {
            self.0 = vec![self.0[0].parent()?];
        }
        Some(())
    }
}

/// Resolves a `use` argument (`crate::auth::{Claims, Token}`, `super::config::Settings`,
/// `self::child`, `other_crate::x`) as written in `scope`.
pub(super) fn resolve(scope: Scope<'_>, path: &str, crates: &Crates) -> Resolved {
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
    let mut nesting = Nesting::of(&scope, crates);
    match *first {
        "crate" => match crate_root(scope.from, crates) {
            Some(module) => nesting = Nesting(vec![module]),
            None => return Resolved::Unresolved(path.to_string()),
        },
        "self" => {}
        "super" => {
            if nesting.up().is_none() {
                return Resolved::Unresolved(path.to_string());
            }
        }
        // A child module of this one (`mod a;` then `use a::X;`), else another crate: of
        // this repository, or from elsewhere.
        _ => {
            let start = nesting.innermost().child(first).or_else(|| {
                crates
                    .libraries
                    .get(*first)
                    .map(|lib| Module::crate_root(lib))
            });
            return match start {
                Some(module) => Resolved::File(module.descend(rest).file),
                None => Resolved::External(path.to_string()),
            };
        }
    }
    // `super::super::x`: each further `super` one module up.
    let mut rest = rest;
    while let Some((&"super", tail)) = rest.split_first() {
        if nesting.up().is_none() {
            return Resolved::Unresolved(path.to_string());
        }
        rest = tail;
    }
    Resolved::File(nesting.innermost().clone().descend(rest).file)
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

    /// A crate's root module: like `lib.rs`, any root file (`tests/auth.rs`, `src/bin/x.rs`)
    /// owns its directory.
    fn crate_root(file: &Path) -> Module {
        Module {
            file: file.to_path_buf(),
            dir: file.parent().unwrap_or(Path::new("")).to_path_buf(),
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

/// The crate root module of `from`: of the package nearest above it, the target root whose
/// directory holds `from` most closely (`from` itself, when it is one), the one declaring
/// the module `from` is in on a tie.
fn crate_root(from: &Path, crates: &Crates) -> Option<Module> {
    let roots = crates.package_roots(from)?;
    if roots.iter().any(|r| r.file == from) {
        return Some(Module::crate_root(from));
    }
    // Each root holding `from`, with the first component below its directory (`dfa` for
    // `tests/dfa/suite.rs` below `tests/lib.rs`) and how deep `from` lies below it.
    let holding: Vec<(&CrateRoot, &std::ffi::OsStr, usize)> = roots
        .iter()
        .filter_map(|r| {
            let below = from.strip_prefix(r.file.parent()?).ok()?;
            Some((
                r,
                below.components().next()?.as_os_str(),
                below.components().count(),
            ))
        })
        .collect();
    let closest = holding.iter().map(|(_, _, depth)| *depth).min()?;
    let tied: Vec<_> = holding.iter().filter(|(_, _, d)| *d == closest).collect();
    // `tests/lib.rs` and `tests/other.rs` both hold `tests/dfa/suite.rs`: the one saying
    // `mod dfa` is its crate's root.
    let chosen = tied
        .iter()
        .find(|(r, top, _)| {
            let top = top.to_str().unwrap_or("");
            let top = top.strip_suffix(".rs").unwrap_or(top);
            r.modules.iter().any(|m| m == top)
        })
        .unwrap_or(&tied[0]);
    Some(Module::crate_root(&chosen.0.file))
}

/// The modules a root file declares (`mod x;`, `pub(crate) mod x {`), by a look at each
/// line's start: enough to tell apart the roots of one directory.
fn declared_modules(file: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            // A visibility in front: `pub`, `pub(crate)`, `pub(in …)`.
            let line = match line.strip_prefix("pub") {
                Some(rest) if rest.starts_with('(') => rest.split_once(')')?.1.trim_start(),
                Some(rest) => rest.trim_start(),
                None => line,
            };
            let name = line.strip_prefix("mod ")?.trim_end_matches([';', ' ', '{']);
            Some(name.to_string())
        })
        .collect()
}
