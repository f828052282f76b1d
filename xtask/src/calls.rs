//! `cargo xtask call-accuracy`: the graph's call edges against a language's own
//! go-to-definition (002 item 5: calls resolved where the grammar allows, no guess shown as
//! a fact).
//!
//! The truth is JSON lines of `{file, line, name, target}`: a call site (the caller's file,
//! the call's line, the callee's last name) and the definition the language's tooling goes
//! to (`{file, line}` of its name, or null outside the project), as
//! `xtask/truth/python_calls.py` writes with jedi. An edge of the graph is correct when the
//! truth has a call on the same line whose target lies in the callee's lines.
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

/// A call site as both sides know it: the caller's file and the call's line. The callee's
/// name is the truth's only: an aliased import (`from .x import A as B`) is written `B` and
/// declared `A`.
type Site = (String, u32);

pub fn accuracy(root: &Path, truth: &Path, show: usize) -> anyhow::Result<()> {
    let truth: Vec<TruthCall> = read_truth(truth)?;
    let graph = ProjectGraph::load(root)?;
    let mut theirs: HashMap<Site, Vec<(String, Option<TruthTarget>)>> = HashMap::new();
    for t in truth {
        theirs
            .entry((t.file, t.line))
            .or_default()
            .push((t.name, t.target));
    }
    // The truth may leave files out (Go's `_test.go` files): only the calls of files it
    // covers count.
    let covered: HashSet<&str> = theirs.keys().map(|(file, _)| file.as_str()).collect();
    let mut ours: HashMap<Site, Vec<SymbolRef>> = HashMap::new();
    for (f, file) in graph.files().iter().enumerate() {
        if !covered.contains(file.path.as_str()) {
            continue;
        }
        let f = f as u32;
        let mut edges: Vec<(SymbolRef, u32)> = graph.module_callees(f).to_vec();
        for d in 0..file.facts().decls.len() as u32 {
            edges.extend_from_slice(graph.callees(SymbolRef { file: f, decl: d }));
        }
        for (callee, line) in edges {
            ours.entry((file.path.clone(), line))
                .or_default()
                .push(callee);
        }
    }
    // Whether `target` lies in the lines of `callee`.
    let inside = |target: &TruthTarget, callee: SymbolRef| {
        let d = graph.decl(callee);
        target.file == graph.files()[callee.file as usize].path
            && d.start_line <= target.line
            && target.line <= d.end_line
    };
    let (mut edges, mut correct) = (0usize, 0usize);
    let mut wrong = Vec::new();
    for (site, callees) in &ours {
        let truth = theirs.get(site).map_or(&[][..], Vec::as_slice);
        for &callee in callees {
            edges += 1;
            if truth
                .iter()
                .any(|(_, t)| t.as_ref().is_some_and(|t| inside(t, callee)))
            {
                correct += 1;
            } else {
                wrong.push(format!(
                    "  extra {}:{}: graph {}, truth {:?}",
                    site.0,
                    site.1,
                    graph.symbol_id(callee),
                    truth
                        .iter()
                        .map(|(name, t)| (
                            name,
                            t.as_ref().map(|t| format!("{}:{}", t.file, t.line))
                        ))
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    // Recall: the truth's calls into the project that the graph links to the same place.
    let (mut inside_calls, mut found) = (0usize, 0usize);
    let mut missed = Vec::new();
    for (site, calls) in &theirs {
        let callees = ours.get(site).map_or(&[][..], Vec::as_slice);
        for (name, target) in calls {
            let Some(target) = target else { continue };
            inside_calls += 1;
            if callees.iter().any(|&c| inside(target, c)) {
                found += 1;
            } else {
                missed.push(format!("  missed {}:{} {name}", site.0, site.1));
            }
        }
    }
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
        "  recall:    {found} / {inside_calls} calls into the project found ({:.1}%)",
        percent(found, inside_calls)
    );
    for line in wrong.iter().take(show).chain(missed.iter().take(show)) {
        println!("{line}");
    }
    Ok(())
}
