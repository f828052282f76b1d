//! `cargo xtask graph-accuracy` and `cargo xtask bench graph`.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use codectx_graph::{CallerRef, MetadataOptions, ProjectGraph, SymbolKind, SymbolRef};
use serde_json::Value;

struct Truth {
    id: String,
    kind: String,
    callers: BTreeSet<String>,
    callees: BTreeSet<String>,
    ref_files: u64,
    supertypes: BTreeSet<String>,
    subtypes: BTreeSet<String>,
}

#[derive(Default)]
struct Score {
    tp: usize,
    ours: usize,
    theirs: usize,
}

impl Score {
    fn add(&mut self, ours: &BTreeSet<String>, theirs: &BTreeSet<String>) {
        self.tp += ours.intersection(theirs).count();
        self.ours += ours.len();
        self.theirs += theirs.len();
    }
    fn p(&self) -> f64 {
        ratio(self.tp, self.ours)
    }
    fn r(&self) -> f64 {
        ratio(self.tp, self.theirs)
    }
    fn f1(&self) -> f64 {
        let (p, r) = (self.p(), self.r());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

fn set(v: &Value, key: &str) -> BTreeSet<String> {
    v[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn accuracy(root: &Path, truth_path: &Path, show: usize) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(truth_path)
        .with_context(|| format!("reading {}", truth_path.display()))?;
    let truth: Vec<Truth> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l)?;
            Ok(Truth {
                id: v["id"].as_str().unwrap_or_default().to_string(),
                kind: v["kind"].as_str().unwrap_or_default().to_string(),
                callers: set(&v, "callers"),
                callees: set(&v, "callees"),
                ref_files: v["ref_files"].as_u64().unwrap_or(0),
                supertypes: set(&v, "supertypes"),
                subtypes: set(&v, "subtypes"),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    // The truth covers some top-level directories of the root (e.g. `src/`): only edges
    // from those count, as only those files were given to the compiler.
    let scopes: BTreeSet<String> = truth
        .iter()
        .filter_map(|t| t.id.split_once('/').map(|(d, _)| format!("{d}/")))
        .collect();
    let in_scope = |path: &str| scopes.iter().any(|s| path.starts_with(s.as_str()));

    let start = Instant::now();
    let graph = ProjectGraph::load(root)?;
    let load = start.elapsed();

    let by_id: HashMap<String, SymbolRef> =
        graph.symbols().map(|s| (graph.symbol_id(s), s)).collect();
    let mut callee = Score::default();
    let mut caller = Score::default();
    let mut supers = Score::default();
    let mut subs = Score::default();
    let (mut ref_exact, mut ref_total, mut found) = (0usize, 0usize, 0usize);
    let mut misses: Vec<(usize, String, String)> = Vec::new();
    for t in &truth {
        let ours = by_id.get(&t.id).copied();
        found += usize::from(ours.is_some());
        // The truth file speaks TypeScript's kinds (`accessor`), not ours.
        let fn_kind = matches!(
            t.kind.as_str(),
            "function" | "method" | "constructor" | "accessor"
        );
        if fn_kind {
            let out: BTreeSet<String> = ours
                .map(|s| {
                    graph
                        .callees(s)
                        .iter()
                        .map(|&(c, _)| graph.symbol_id(c))
                        .collect()
                })
                .unwrap_or_default();
            callee.add(&out, &t.callees);
            let inc: BTreeSet<String> = ours
                .map(|s| {
                    graph
                        .callers_of_constructor_or_self(s)
                        .iter()
                        .filter(|(c, _)| {
                            let file = match c {
                                CallerRef::Symbol(s) => s.file,
                                CallerRef::Module(f) => *f,
                            };
                            in_scope(&graph.files()[file as usize].path)
                        })
                        .map(|&(c, _)| graph.caller_id(c))
                        .collect()
                })
                .unwrap_or_default();
            caller.add(&inc, &t.callers);
            if show > 0 {
                let missed =
                    t.callees.difference(&out).count() + t.callers.difference(&inc).count();
                let extra = out.difference(&t.callees).count() + inc.difference(&t.callers).count();
                if missed + extra > 0 {
                    let detail = format!(
                        "missed callees {:?} extra callees {:?} missed callers {:?} extra callers {:?}",
                        t.callees.difference(&out).collect::<Vec<_>>(),
                        out.difference(&t.callees).collect::<Vec<_>>(),
                        t.callers.difference(&inc).take(5).collect::<Vec<_>>(),
                        inc.difference(&t.callers).take(5).collect::<Vec<_>>(),
                    );
                    misses.push((missed + extra, t.id.clone(), detail));
                }
            }
        }
        ref_total += 1;
        if let Some(s) = ours {
            let (_, files) = graph.references(s);
            let n = files
                .iter()
                .filter(|&&f| in_scope(&graph.files()[f as usize].path))
                .count() as u64;
            ref_exact += usize::from(n == t.ref_files);
        }
        if matches!(t.kind.as_str(), "class" | "interface") {
            let ids = |v: Vec<SymbolRef>| -> BTreeSet<String> {
                v.into_iter().map(|s| graph.symbol_id(s)).collect()
            };
            supers.add(
                &ours.map(|s| ids(graph.supertypes(s))).unwrap_or_default(),
                &t.supertypes,
            );
            subs.add(
                &ours
                    .map(|s| {
                        ids(graph
                            .subtypes(s)
                            .into_iter()
                            .filter(|x| in_scope(&graph.files()[x.file as usize].path))
                            .collect())
                    })
                    .unwrap_or_default(),
                &t.subtypes,
            );
        }
    }
    println!(
        "graph of {} files in {:.2} s; {} of {} truth symbols found by id",
        graph.files().len(),
        load.as_secs_f64(),
        found,
        truth.len()
    );
    println!(
        "callee P {:.3} R {:.3} F1 {:.3}",
        callee.p(),
        callee.r(),
        callee.f1()
    );
    println!(
        "caller P {:.3} R {:.3} F1 {:.3}",
        caller.p(),
        caller.r(),
        caller.f1()
    );
    println!("ref-files exact {:.2}", ratio(ref_exact, ref_total));
    println!("supertypes P {:.3} R {:.3}", supers.p(), supers.r());
    println!("subtypes P {:.3} R {:.3}", subs.p(), subs.r());
    if show > 0 {
        misses.sort_by_key(|m| std::cmp::Reverse(m.0));
        for (_, id, detail) in misses.iter().take(show) {
            println!("  {id}: {detail}");
        }
        let missing: Vec<&str> = truth
            .iter()
            .filter(|t| !by_id.contains_key(&t.id))
            .map(|t| t.id.as_str())
            .take(show)
            .collect();
        println!("  not found by id: {missing:?}");
    }
    Ok(())
}

pub fn bench(root: &Path, runs: usize) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        println!("warning: debug build; use `cargo xtask-release bench graph …` for real figures");
    }
    let files: Vec<std::path::PathBuf> = codectx_files::FileSelection::default()
        .walk(&root.canonicalize()?)
        .into_iter()
        .map(|f| f.abs)
        .collect();
    let sources: Vec<(std::path::PathBuf, String)> = files
        .into_iter()
        .filter_map(|p| codectx_parser::read_source(&p).ok().map(|s| (p, s)))
        .collect();
    let bytes: usize = sources.iter().map(|(_, s)| s.len()).sum();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let runs = runs.max(1);
    let mut parse = Vec::new();
    let mut facts = Vec::new();
    let mut build = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        for (p, s) in &sources {
            let allocator = oxc_allocator::Allocator::default();
            let name = p.to_string_lossy();
            let ret =
                oxc_parser::Parser::new(&allocator, s, codectx_parser::source_type_for(&name))
                    .parse();
            std::hint::black_box(ret.program.body.len());
        }
        parse.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for (p, s) in &sources {
            std::hint::black_box(
                codectx_graph::extract_facts(&p.to_string_lossy(), s)
                    .decls
                    .len(),
            );
        }
        facts.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let g = ProjectGraph::from_sources(&root.canonicalize()?, sources.clone());
        build.push(t.elapsed().as_secs_f64());
        std::hint::black_box(g.files().len());
    }
    let (parse, facts, build) = (median(parse), median(facts), median(build));
    println!(
        "{} files, {:.1} MB: oxc parse {:.3} s | facts (parse+semantic+extract) {:.3} s = {:.2}x parse | facts+resolve+link {:.3} s = {:.2}x parse  (median of {runs})",
        sources.len(),
        bytes as f64 / 1e6,
        parse,
        facts,
        facts / parse,
        build,
        build / parse
    );

    let root_abs = root.canonicalize()?;
    let mut graph = ProjectGraph::from_sources(&root_abs, sources.clone());
    // Metadata at callDepth 1 of the 200 most-connected callables.
    let mut callables: Vec<SymbolRef> = graph
        .symbols()
        .filter(|&s| graph.decl(s).kind.is_callable() || graph.decl(s).kind == SymbolKind::Class)
        .collect();
    callables.sort_by_key(|&s| std::cmp::Reverse(graph.callers(s).len() + graph.callees(s).len()));
    callables.truncate(200);
    let mut per_symbol = Vec::new();
    for &s in &callables {
        let t = Instant::now();
        std::hint::black_box(graph.metadata(s, &MetadataOptions::default()));
        per_symbol.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let worst = per_symbol.iter().cloned().fold(0.0, f64::max);
    println!(
        "metadata at callDepth 1: median {:.3} ms, worst {:.3} ms over the {} most-connected symbols",
        median(per_symbol.clone()),
        worst,
        per_symbol.len()
    );
    // An edit inside bodies (the file's text unchanged: its outward facts hold) re-links
    // the file alone; one that adds a declaration re-links it and its importers,
    // transitively. Measured on the largest file and on the one most files import.
    let mut importers = vec![0usize; graph.files().len()];
    for f in graph.files() {
        for &t in f.request_files.iter().flatten() {
            importers[t as usize] += 1;
        }
    }
    let most_imported = (0..importers.len()).max_by_key(|&i| importers[i]);
    let largest = sources.iter().max_by_key(|(_, s)| s.len()).map(|(p, _)| p);
    for abs in [largest, most_imported.map(|i| &graph.files()[i].abs)]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
    {
        let Some((_, source)) = sources.iter().find(|(p, _)| *p == abs) else {
            continue;
        };
        let path = abs.strip_prefix(&root_abs).unwrap_or(&abs).display();
        let added = format!("{source}\nexport function codectxBenchAdded() {{}}\n");
        let (mut inward, mut outward, mut relinked) = (Vec::new(), Vec::new(), 0);
        for run in 0..runs {
            // The text the graph holds, again.
            let text = if run % 2 == 0 { source } else { &added };
            let facts = codectx_graph::extract_facts(&path.to_string(), text);
            let t = Instant::now();
            graph.update_facts([(abs.clone(), Some(facts))]);
            inward.push(t.elapsed().as_secs_f64() * 1e3);
            // Added, then taken away again: both change the file's declarations.
            let text = if run % 2 == 0 { &added } else { source };
            let facts = codectx_graph::extract_facts(&path.to_string(), text);
            let t = Instant::now();
            relinked = graph.update_facts([(abs.clone(), Some(facts))]);
            outward.push(t.elapsed().as_secs_f64() * 1e3);
        }
        graph.update_file(&abs, Some(source));
        println!(
            "{path}: an edit inside bodies re-linked in {:.1} ms; a declaration added or removed: {relinked} of {} files re-linked in {:.1} ms (medians)",
            median(inward),
            graph.files().len(),
            median(outward)
        );
    }
    // A new file beside the largest one, importing it, then the same file removed, then a
    // module configuration changed: each resolves every import again and re-links where
    // the resolution moved.
    if let Some(abs) = largest {
        let new = abs.with_file_name("codectxBenchAdded.ts");
        let path = new
            .strip_prefix(&root_abs)
            .unwrap_or(&new)
            .display()
            .to_string();
        let stem = abs.file_stem().unwrap_or_default().to_string_lossy();
        let text = format!(
            "import * as probed from './{stem}';\nexport function codectxBenchAdded() {{ return probed; }}\n"
        );
        let (mut added, mut removed, mut resolved) = (Vec::new(), Vec::new(), Vec::new());
        let (mut relinked_added, mut relinked_removed, mut relinked_resolved) = (0, 0, 0);
        for _ in 0..runs {
            let facts = codectx_graph::extract_facts(&path, &text);
            let t = Instant::now();
            relinked_added = graph.update_facts([(new.clone(), Some(facts))]);
            added.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            relinked_removed = graph.update_facts([(new.clone(), None)]);
            removed.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            relinked_resolved = graph.resolve_again();
            resolved.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "{path} added: {relinked_added} files re-linked in {:.1} ms; removed: {relinked_removed} in {:.1} ms; a module configuration changed, nothing moved: {relinked_resolved} in {:.1} ms (medians)",
            median(added),
            median(removed),
            median(resolved)
        );
    }
    println!("peak RSS {:.1} MB", crate::bench::peak_rss_mb());
    Ok(())
}
