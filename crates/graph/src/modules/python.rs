//! Python imports → files: relative imports from the importing file's package, absolute
//! ones from the root, a `src/` layout, or the directory holding the file's top package.
//! What matches no file is the standard library or an installed package: external.

use std::path::{Path, PathBuf};

use super::Resolved;

/// Resolves `module` (`auth.jwt`, `.models`, `..`) as imported by `from`.
pub(super) fn resolve(root: &Path, from: &Path, module: &str) -> Resolved {
    let dots = module.len() - module.trim_start_matches('.').len();
    let dotted = &module[dots..];
    let parts: Vec<&str> = dotted.split('.').filter(|p| !p.is_empty()).collect();
    if dots > 0 {
        // `.` is the importing file's package, each further dot one package up.
        let mut base = from.parent();
        for _ in 1..dots {
            base = base.and_then(Path::parent);
        }
        return match base.and_then(|b| module_file(b, &parts)) {
            Some(file) => Resolved::File(file),
            None => Resolved::Unresolved(module.to_string()),
        };
    }
    let mut bases = vec![root.to_path_buf(), root.join("src")];
    bases.extend(top_package_parent(root, from));
    bases
        .iter()
        .find_map(|base| module_file(base, &parts))
        .map_or_else(|| Resolved::External(module.to_string()), Resolved::File)
}

/// `base/a/b.py` or `base/a/b/__init__.py` for `["a", "b"]`; `base/__init__.py` for `[]`.
fn module_file(base: &Path, parts: &[&str]) -> Option<PathBuf> {
    let dir: PathBuf = parts
        .iter()
        .fold(base.to_path_buf(), |p, part| p.join(part));
    let candidates = match parts.split_last() {
        Some((last, _)) => vec![
            dir.with_file_name(format!("{last}.py")),
            dir.join("__init__.py"),
        ],
        None => vec![dir.join("__init__.py")],
    };
    candidates.into_iter().find(|c| c.is_file())
}

/// The directory holding `from`'s top-level package (the highest directory above it that
/// still has an `__init__.py`): where its absolute imports start when it is not the root.
fn top_package_parent(root: &Path, from: &Path) -> Option<PathBuf> {
    let mut dir = from.parent()?;
    let mut top = None;
    while dir.starts_with(root) && dir.join("__init__.py").is_file() {
        top = dir.parent();
        dir = dir.parent()?;
    }
    top.map(Path::to_path_buf)
}
