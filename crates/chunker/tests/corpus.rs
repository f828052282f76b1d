//! The ten global rules on real code no one here wrote: the TypeScript sources of
//! rxjs@7.8.2 (`src/`) and the 200,000-line `lib/typescript.js` of typescript@5.9.3.
//!
//! The packages are fetched once with `npm pack` into a cache outside the repository
//! (`$CODECTX_CORPUS_DIR`, else `$XDG_CACHE_HOME/codectx/corpus`, else
//! `~/.cache/codectx/corpus`); nothing of them is committed.

use std::path::{Path, PathBuf};

use codectx_chunker::validate::check_file;
use codectx_corpus::{needs_network, relative, source_files, try_npm_package};

fn check_all(root: &Path, files: &[PathBuf]) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut chunks = 0;
    for file in files {
        let rel = relative(root, file);
        let source = std::fs::read_to_string(file).unwrap();
        let report = check_file(&rel, &source);
        chunks += report.chunks.len();
        failures.extend(
            report
                .violations
                .iter()
                .take(5)
                .map(|v| format!("{rel}: {v}")),
        );
    }
    (chunks, failures)
}

#[test]
fn network_rxjs_sources_pass_every_rule() {
    let Some(root) = needs_network("rxjs from npm", try_npm_package("rxjs", "7.8.2")) else {
        return;
    };
    let files = source_files(&root.join("src"));
    assert!(
        files.len() >= 240,
        "expected rxjs src/ to hold ~250 files, found {}",
        files.len()
    );
    let (chunks, failures) = check_all(&root, &files);
    assert!(
        failures.is_empty(),
        "{} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(chunks > files.len() * 3);
}

#[test]
fn network_typescript_js_passes_every_rule() {
    let Some(root) = needs_network(
        "typescript from npm",
        try_npm_package("typescript", "5.9.3"),
    ) else {
        return;
    };
    let file = root.join("lib").join("typescript.js");
    let (chunks, failures) = check_all(&root, &[file]);
    assert!(
        failures.is_empty(),
        "{} violations:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(chunks > 10_000, "only {chunks} chunks from typescript.js");
}
