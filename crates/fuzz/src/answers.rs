//! The targets that build answers: a whole two-file project, and the `symbol =` query
//! language on a fixed one.

use std::sync::OnceLock;

use codectx_retrieval::{AnswerOptions, Project, search_symbol};

use crate::DIALECTS;

/// A two-file project (the input split at its first NUL byte: `src/a.*` and `src/b.*`)
/// → chunks, linked graph, then a `symbol =` answer for every named chunk: each answer
/// keeps to its budget and every snapshot is the file's own lines.
pub fn project(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (a, b) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let (Ok(a), Ok(b)) = (std::str::from_utf8(a), std::str::from_utf8(b)) else {
        return;
    };
    let ext = DIALECTS[selector as usize % DIALECTS.len()];
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::create_dir(dir.path().join("src")).expect("src directory");
    for (name, text) in [("a", a), ("b", b)] {
        std::fs::write(dir.path().join(format!("src/{name}.{ext}")), text).expect("write file");
    }
    let project = Project::open(dir.path()).expect("a readable directory opens");
    let options = AnswerOptions {
        budget: 600,
        call_depth: 2,
    };
    let names: Vec<String> = project.chunks().map(|c| c.name.clone()).collect();
    for name in names.iter().take(16) {
        let query = format!("symbol = {name}");
        let Some(Ok(answer)) = search_symbol(&project, &query, &options) else {
            continue;
        };
        assert!(
            answer.estimated_tokens <= answer.budget,
            "{query}: {} tokens over a budget of {}",
            answer.estimated_tokens,
            answer.budget
        );
    }
}

/// The `symbol = …` query language on a fixed project: any text is a lookup, a clear
/// error, or not a lookup; never a panic.
pub fn symbol_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let project = fixture_project();
    let options = AnswerOptions::default();
    for query in [text.to_string(), format!("symbol = {text}")] {
        if let Some(Ok(answer)) = search_symbol(project, &query, &options) {
            assert!(answer.estimated_tokens <= answer.budget);
        }
    }
}

/// `fixtures/retrieval/auth`, opened once per process.
fn fixture_project() -> &'static Project {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let root = codectx_corpus::fixture("retrieval/auth");
        Project::open(&root).expect("the auth fixture opens")
    })
}
