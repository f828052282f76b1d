//! `cargo xtask import-accuracy`: the graph's import edges against a language's own
//! resolution (002 SC-200: at least 90% of import statements correct).
//!
//! The truth is JSON lines of `{file, line, module, resolved}` (`resolved`: the project file
//! the language loads for `module`, or null when it is no file of the project), as
//! `xtask/truth/python_imports.py` writes from CPython's import system. An edge is correct
//! when the graph resolves the same statement's module to the same file, or to no project
//! file when the truth has none.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use codectx_graph::ProjectGraph;
use serde::Deserialize;

#[derive(Deserialize)]
struct TruthEdge {
    file: String,
    line: u32,
    module: String,
    resolved: Option<String>,
}

pub fn accuracy(root: &Path, truth: &Path, show: usize) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(truth).with_context(|| truth.display().to_string())?;
    let truth: Vec<TruthEdge> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("truth line")?;
    let graph = ProjectGraph::load(root)?;
    let index: HashMap<&str, u32> = graph
        .files()
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i as u32))
        .collect();
    let mut ours: HashMap<(String, u32, String), Option<String>> = HashMap::new();
    for (path, &i) in &index {
        for edge in graph.file_relationships(i).imports {
            let file = (edge.resolution == "file").then(|| edge.file.clone());
            ours.insert((path.to_string(), edge.line, edge.specifier), file);
        }
    }
    let (mut correct, mut inside, mut inside_correct) = (0usize, 0usize, 0usize);
    let mut wrong = Vec::new();
    for t in &truth {
        let got = ours.get(&(t.file.clone(), t.line, t.module.clone()));
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
    let pct = |a: usize, b: usize| {
        if b == 0 {
            100.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    println!(
        "Import edges against the language's own resolution ({})",
        root.display()
    );
    println!(
        "  all:           {correct} / {} correct ({:.1}%)",
        truth.len(),
        pct(correct, truth.len())
    );
    println!(
        "  project files: {inside_correct} / {inside} correct ({:.1}%)",
        pct(inside_correct, inside)
    );
    for line in wrong.iter().take(show) {
        println!("{line}");
    }
    Ok(())
}
