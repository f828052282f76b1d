//! `cargo xtask import-accuracy`: the graph's import edges against a language's own
//! resolution (002 SC-200: at least 90% of import statements correct).
//!
//! The truth is JSON lines of `{file, line, module, resolved}` (`resolved`: the project file
//! the language loads for `module`, or null when it is no file of the project), as
//! `xtask/truth/python_imports.py` writes from CPython's import system. An edge is correct
//! when the graph resolves the same statement (the same line; the same module too when a
//! line holds several) to the same file, or to no project file when the truth has none.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use codectx_graph::ProjectGraph;
use serde::Deserialize;

/// `a` of `b` in percent; 100 of nothing.
pub(crate) fn percent(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// A truth file: one JSON record per non-blank line.
pub(crate) fn read_truth<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{}:{}", path.display(), i + 1))
        })
        .collect()
}

#[derive(Deserialize)]
struct TruthEdge {
    file: String,
    line: u32,
    module: String,
    resolved: Option<String>,
}

/// An import statement the graph read on a line: its specifier, and the file it resolved to.
type ImportSeen = (String, Option<String>);

pub fn accuracy(root: &Path, truth: &Path, show: usize) -> anyhow::Result<()> {
    let truth: Vec<TruthEdge> = read_truth(truth)?;
    let graph = ProjectGraph::load(root)?;
    let index: HashMap<&str, u32> = graph
        .files()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i as u32))
        .collect();
    // A statement is found by its line; by its module too when a line holds several (the
    // graph shortens a very long specifier, so the text alone would miss it).
    let mut ours: HashMap<(String, u32), Vec<ImportSeen>> = HashMap::new();
    for (path, &i) in &index {
        for edge in graph.file_relationships(i).imports {
            let file =
                (edge.resolution == codectx_graph::Resolution::File).then(|| edge.file.clone());
            ours.entry((path.to_string(), edge.line))
                .or_default()
                .push((edge.specifier, file));
        }
    }
    let (mut correct, mut inside, mut inside_correct) = (0usize, 0usize, 0usize);
    let mut wrong = Vec::new();
    for t in &truth {
        let got =
            ours.get(&(t.file.clone(), t.line))
                .and_then(|on_line| match on_line.as_slice() {
                    [(_, file)] => Some(file),
                    several => several
                        .iter()
                        .find(|(specifier, _)| *specifier == t.module)
                        .map(|(_, file)| file),
                });
        let ok = got.is_some_and(|g| *g == t.resolved);
        correct += usize::from(ok);
        if t.resolved.is_some() {
            inside += 1;
            inside_correct += usize::from(ok);
        }
        if !ok {
            wrong.push(format!(
                "  {}:{} {:?}: truth {:?}, graph {:?}",
                t.file,
                t.line,
                t.module,
                t.resolved,
                got.map(|g| g.as_deref().unwrap_or("(no project file)"))
            ));
        }
    }
    println!(
        "Import edges against the language's own resolution ({})",
        root.display()
    );
    println!(
        "  all:           {correct} / {} correct ({:.1}%)",
        truth.len(),
        percent(correct, truth.len())
    );
    println!(
        "  project files: {inside_correct} / {inside} correct ({:.1}%)",
        percent(inside_correct, inside)
    );
    for line in wrong.iter().take(show) {
        println!("{line}");
    }
    Ok(())
}

#[derive(Deserialize)]
struct TruthChain {
    file: String,
    line: u32,
    name: String,
    ancestors: Vec<String>,
}

/// `cargo xtask hierarchy-accuracy`: every declaration's ancestor chain as
/// `get_symbol_hierarchy` gives it against a language's own (002 SC-201: at least 95%
/// correct), e.g. from `xtask/truth/python_hierarchy.py`. A declaration is found by its name
/// and file, and the line its name is written on.
pub fn hierarchy_accuracy(root: &Path, truth: &Path, show: usize) -> anyhow::Result<()> {
    let truth: Vec<TruthChain> = read_truth(truth)?;
    let project = codectx_retrieval::Project::open(root)?;
    let mut correct = 0usize;
    let mut wrong = Vec::new();
    for t in &truth {
        let found = codectx_retrieval::symbol_hierarchy(
            &project,
            &t.name,
            Some(&t.file),
            codectx_retrieval::Direction::Ancestors,
        )
        .unwrap_or_default();
        let got: Option<Vec<String>> = found
            .iter()
            .find(|h| {
                h.chain
                    .first()
                    .is_some_and(|n| n.start_line <= t.line && t.line <= n.end_line)
            })
            .map(|h| h.chain[1..].iter().rev().map(|n| n.name.clone()).collect());
        if got.as_ref() == Some(&t.ancestors) {
            correct += 1;
        } else {
            wrong.push(format!(
                "  {}:{} {}: truth {:?}, tool {:?}",
                t.file, t.line, t.name, t.ancestors, got
            ));
        }
    }
    let pct = percent(correct, truth.len());
    println!(
        "Ancestor chains against the language's own ({})",
        root.display()
    );
    println!(
        "  {correct} / {} declarations correct ({pct:.1}%)",
        truth.len()
    );
    for line in wrong.iter().take(show) {
        println!("{line}");
    }
    Ok(())
}
