//! `cargo xtask call-accuracy`: the graph's call edges against a language's own
//! go-to-definition (002 item 5: calls resolved where the grammar allows, no guess shown as
//! a fact).
//!
//! The truth is JSON lines of `{file, line, name, target}`: a call site (the caller's file,
//! the call's line, the callee's last name) and the definition the language's tooling goes
//! to (`{file, line}` of its name, or null outside the project), as
//! `xtask/truth/python_calls.py` writes with jedi. An edge of the graph is correct when the
//! truth has the same site and its target lies in the callee's lines under the same name.
//! Only the files the truth covers count.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use codectx_graph::{ProjectGraph, SymbolRef};
use serde::Deserialize;

use crate::imports::{percent, read_truth};

#[derive(Deserialize)]
struct TruthCall {
    file: String,
    line: u32,
    name: String,
    target: Option<TruthTarget>,
}

#[derive(Deserialize, Clone)]
struct TruthTarget {
    file: String,
    line: u32,
}

/// A call site as both sides name it: caller's file, call line, callee's last name.
type Site = (String, u32, String);

pub fn accuracy(root: &Path, truth: &Path, show: usize) -> anyhow::Result<()> {
    let truth: Vec<TruthCall> = read_truth(truth)?;
    let graph = ProjectGraph::load(root)?;
    // One site may hold several calls of one name (`f(f(x))`): any target counts.
    let mut theirs: HashMap<Site, Vec<Option<TruthTarget>>> = HashMap::new();
    for t in truth {
        theirs
            .entry((t.file, t.line, t.name))
            .or_default()
            .push(t.target);
    }
    // The truth may leave files out (Go's `_test.go` files): only the calls of files it
    // covers count.
    let covered: HashSet<&str> = theirs.keys().map(|(file, _, _)| file.as_str()).collect();
    let mut ours: HashMap<Site, Vec<SymbolRef>> = HashMap::new();
    for (f, file) in graph.files().iter().enumerate() {
        if !covered.contains(file.path.as_str()) {
            continue;
        }
        let f = f as u32;
        let mut edges: Vec<(SymbolRef, u32)> = graph.module_callees(f).to_vec();
        for d in 0..file.facts.decls.len() as u32 {
            edges.extend_from_slice(graph.callees(SymbolRef { file: f, decl: d }));
        }
        for (callee, line) in edges {
            let name = graph.decl(callee).name.clone();
            ours.entry((file.path.clone(), line, name))
                .or_default()
                .push(callee);
        }
    }
    let hits = |site: &Site, callee: SymbolRef| {
        let d = graph.decl(callee);
        let path = &graph.files()[callee.file as usize].path;
        theirs.get(site).is_some_and(|targets| {
            targets
                .iter()
                .flatten()
                .any(|t| &t.file == path && d.start_line <= t.line && t.line <= d.end_line)
        })
    };
    let (mut edges, mut correct) = (0usize, 0usize);
    let mut wrong = Vec::new();
    for (site, callees) in &ours {
        for &callee in callees {
            edges += 1;
            if hits(site, callee) {
                correct += 1;
            } else {
                let truth = theirs.get(site).map(|t| {
                    t.iter()
                        .map(|x| x.as_ref().map(|x| format!("{}:{}", x.file, x.line)))
                        .collect::<Vec<_>>()
                });
                wrong.push(format!(
                    "  extra {}:{} {}: graph {}, truth {:?}",
                    site.0,
                    site.1,
                    site.2,
                    graph.symbol_id(callee),
                    truth
                ));
            }
        }
    }
    // Recall: sites whose truth is a project definition, found by the graph.
    let resolved: HashSet<&Site> = ours
        .iter()
        .filter(|(site, callees)| callees.iter().any(|&c| hits(site, c)))
        .map(|(site, _)| site)
        .collect();
    let inside: Vec<&Site> = theirs
        .iter()
        .filter(|(_, t)| t.iter().any(Option::is_some))
        .map(|(site, _)| site)
        .collect();
    let found = inside.iter().filter(|s| resolved.contains(*s)).count();
    let mut missed: Vec<String> = inside
        .iter()
        .filter(|s| !resolved.contains(*s))
        .map(|s| format!("  missed {}:{} {}", s.0, s.1, s.2))
        .collect();
    wrong.sort();
    missed.sort();
    println!(
        "Call edges against the language's own go-to-definition ({})",
        root.display()
    );
    println!(
        "  precision: {correct} / {edges} edges of the graph correct ({:.1}%)",
        percent(correct, edges)
    );
    println!(
        "  recall:    {found} / {} call sites into the project found ({:.1}%)",
        inside.len(),
        percent(found, inside.len())
    );
    for line in wrong.iter().take(show).chain(missed.iter().take(show)) {
        println!("{line}");
    }
    Ok(())
}
