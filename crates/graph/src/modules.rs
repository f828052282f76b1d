//! Module specifiers → files, with oxc_resolver configured the way TypeScript projects are
//! built: tsconfig `paths`/`baseUrl`/`extends`/references (found per file), package.json
//! `exports` and workspaces (through node_modules symlinks), `.js` → `.ts` extension aliases
//! and index files. Rust, Python and Go imports follow their languages' rules (`rust.rs`,
//! `python.rs`, `go.rs`), decided by the importing file's language.

mod go;
mod python;
mod rust;

use std::path::{Path, PathBuf};

use oxc_resolver::{ResolveError, ResolveOptions, Resolver, TsconfigDiscovery};

/// Where a specifier leads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Resolved {
    /// A file of the project (absolute path).
    File(PathBuf),
    /// A package, builtin, or file outside the project: kept by name, never followed.
    External(String),
    /// Nothing matched (a typo, a missing file, a bundler-only alias).
    Unresolved(String),
}

/// A resolver for one project root.
pub struct ModuleResolver {
    root: PathBuf,
    resolver: Resolver,
    /// The repository's Rust library crates, found on the first Rust import.
    rust_crates: std::sync::RwLock<Option<std::sync::Arc<rust::Crates>>>,
    /// The Go modules and packages read so far.
    go: go::Cache,
}

impl ModuleResolver {
    pub fn new(root: &Path) -> Self {
        let options = ResolveOptions {
            tsconfig: Some(TsconfigDiscovery::Auto),
            condition_names: ["types", "import", "module", "node", "require", "default"]
                .map(String::from)
                .to_vec(),
            extensions: [
                ".ts", ".tsx", ".mts", ".cts", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".json",
            ]
            .map(String::from)
            .to_vec(),
            extension_alias: vec![
                (
                    ".js".into(),
                    [".ts", ".tsx", ".d.ts", ".js", ".jsx"]
                        .map(String::from)
                        .to_vec(),
                ),
                (".jsx".into(), [".tsx", ".jsx"].map(String::from).to_vec()),
                (
                    ".mjs".into(),
                    [".mts", ".d.mts", ".mjs"].map(String::from).to_vec(),
                ),
                (
                    ".cjs".into(),
                    [".cts", ".d.cts", ".cjs"].map(String::from).to_vec(),
                ),
            ],
            main_fields: ["types", "typings", "module", "main"]
                .map(String::from)
                .to_vec(),
            builtin_modules: true,
            ..ResolveOptions::default()
        };
        Self {
            root: root.to_path_buf(),
            resolver: Resolver::new(options),
            rust_crates: Default::default(),
            go: go::Cache::default(),
        }
    }

    /// Resolves `request` as written in `from` (an absolute file path).
    pub fn resolve(&self, from: &Path, request: &crate::facts::ModuleRequest) -> Resolved {
        let specifier = request.specifier.as_str();
        match codectx_parser::Language::from_path(from) {
            Some(codectx_parser::Language::Rust) => {
                let scope = rust::Scope {
                    from,
                    inline: &request.scope,
                };
                return rust::resolve(scope, specifier, &self.rust_crates());
            }
            Some(codectx_parser::Language::Python) => {
                return python::resolve(&self.root, from, specifier);
            }
            Some(codectx_parser::Language::Go) => {
                return go::resolve(&self.root, from, specifier, &self.go);
            }
            _ => {}
        }
        match self.resolver.resolve_file(from, specifier) {
            Ok(resolution) => {
                let path = resolution.into_path_buf();
                let inside = path.starts_with(&self.root)
                    && !path.components().any(|c| c.as_os_str() == "node_modules");
                if inside {
                    Resolved::File(path)
                } else {
                    Resolved::External(specifier.to_string())
                }
            }
            Err(ResolveError::Builtin { .. }) => Resolved::External(specifier.to_string()),
            Err(_) if is_bare(specifier) => Resolved::External(specifier.to_string()),
            Err(_) => Resolved::Unresolved(specifier.to_string()),
        }
    }

    /// Forgets cached file-system lookups (after files were added or removed).
    pub fn clear_cache(&self) {
        self.resolver.clear_cache();
        *self.rust_crates.write().unwrap_or_else(|e| e.into_inner()) = None;
        self.go.clear();
    }

    fn rust_crates(&self) -> std::sync::Arc<rust::Crates> {
        if let Some(crates) = &*self.rust_crates.read().unwrap_or_else(|e| e.into_inner()) {
            return crates.clone();
        }
        let crates = std::sync::Arc::new(rust::Crates::find(&self.root));
        *self.rust_crates.write().unwrap_or_else(|e| e.into_inner()) = Some(crates.clone());
        crates
    }
}

fn is_bare(specifier: &str) -> bool {
    !(specifier.starts_with('.') || specifier.starts_with('/'))
}
