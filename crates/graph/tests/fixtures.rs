//! Every directory of `fixtures/graph/` is a small project; its whole linked graph is
//! rendered as text and compared with an insta snapshot. Some fixtures also snapshot the
//! SymbolMetadata of chosen symbols (call trees at several depths, hierarchy, type flows).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use codectx_graph::{CallerRef, MetadataOptions, ProjectGraph, SymbolRef};

fn fixtures_dir() -> PathBuf {
    codectx_corpus::fixture("graph")
}

fn load(name: &str) -> ProjectGraph {
    ProjectGraph::load(&fixtures_dir().join(name)).expect("fixture loads")
}

/// The whole graph as text: per file its import edges, then each declaration with its
/// callees, callers, references and supertypes/subtypes.
fn render(g: &ProjectGraph) -> String {
    let mut out = String::new();
    for (f, file) in g.files().iter().enumerate() {
        writeln!(
            out,
            "== {} ({} syntax errors)",
            file.path,
            file.facts().syntax_errors
        )
        .unwrap();
        let rel = g.file_relationships(f as u32);
        for e in &rel.imports {
            writeln!(
                out,
                "  imports {} [{}] {:?} names {:?} line {}",
                e.file, e.resolution, e.kind, e.names, e.line
            )
            .unwrap();
        }
        for e in &rel.imported_by {
            writeln!(
                out,
                "  imported by {} names {:?} line {}",
                e.file, e.names, e.line
            )
            .unwrap();
        }
        let module_calls = g.module_callees(f as u32);
        if !module_calls.is_empty() {
            writeln!(
                out,
                "  <module> calls {}",
                list(g, module_calls.iter().map(|c| c.0))
            )
            .unwrap();
        }
        for d in 0..file.facts().decls.len() {
            let s = SymbolRef {
                file: f as u32,
                decl: d as u32,
            };
            let decl = g.decl(s);
            write!(out, "  {} {}", decl.kind.as_str(), g.symbol_id(s)).unwrap();
            if decl.exported {
                out.push_str(" exported");
            }
            out.push('\n');
            let callees = g.callees(s);
            if !callees.is_empty() {
                writeln!(out, "    calls {}", list(g, callees.iter().map(|c| c.0))).unwrap();
            }
            let callers = g.callers(s);
            if !callers.is_empty() {
                let names: Vec<String> = callers
                    .iter()
                    .map(|&(c, l)| format!("{}:{l}", g.caller_id(c)))
                    .collect();
                writeln!(out, "    called by {}", names.join(", ")).unwrap();
            }
            let (occurrences, files) = g.references(s);
            if occurrences > 0 {
                writeln!(out, "    refs {occurrences} in {} other files", files.len()).unwrap();
            }
            let supers = g.supertypes(s);
            if !supers.is_empty() {
                writeln!(out, "    supertypes {}", list(g, supers.into_iter())).unwrap();
            }
            let subs = g.subtypes(s);
            if !subs.is_empty() {
                writeln!(out, "    subtypes {}", list(g, subs.into_iter())).unwrap();
            }
        }
    }
    out
}

fn list(g: &ProjectGraph, items: impl Iterator<Item = SymbolRef>) -> String {
    items.map(|s| g.symbol_id(s)).collect::<Vec<_>>().join(", ")
}

fn metadata(g: &ProjectGraph, file: &str, name: &str, depth: i32) -> String {
    let s = g.find(file, name, None);
    assert_eq!(s.len(), 1, "{file} > {name}");
    let meta = g.metadata(s[0], &MetadataOptions { call_depth: depth });
    serde_json::to_string_pretty(&meta).unwrap()
}

#[test]
fn every_fixture_graph() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.len() >= 14,
        "fixtures/graph has {} cases",
        names.len()
    );
    for name in names {
        let g = load(&name);
        insta::assert_snapshot!(format!("graph__{name}"), render(&g));
    }
}

#[test]
fn multi_hop_depths_and_markers() {
    let g = load("multi-hop");
    for depth in [1, 2, 3, -1] {
        insta::assert_snapshot!(
            format!("multi_hop_handle_depth_{depth}"),
            metadata(&g, "entry.ts", "handle", depth)
        );
    }
    insta::assert_snapshot!(
        "multi_hop_log_callers_all",
        metadata(&g, "helper.ts", "log", -1)
    );
}

#[test]
fn cycles_are_marked_at_every_depth() {
    let g = load("cycle");
    for depth in [1, 2, -1] {
        insta::assert_snapshot!(
            format!("cycle_alpha_depth_{depth}"),
            metadata(&g, "cycle.ts", "alpha", depth)
        );
    }
    insta::assert_snapshot!("cycle_factorial", metadata(&g, "cycle.ts", "factorial", -1));
}

#[test]
fn constructor_type_hierarchy_flows_members() {
    let g = load("constructor");
    insta::assert_snapshot!(
        "constructor_open",
        metadata(&g, "constructor.ts", "open", 2)
    );
    insta::assert_snapshot!(
        "constructor_ctor",
        metadata(&g, "constructor.ts", "Account.constructor", 1)
    );
    let g = load("type-hierarchy");
    insta::assert_snapshot!(
        "hierarchy_base_model",
        metadata(&g, "models.ts", "BaseModel", 1)
    );
    insta::assert_snapshot!(
        "hierarchy_audited",
        metadata(&g, "diamond.ts", "AuditedModel", 1)
    );
    insta::assert_snapshot!(
        "hierarchy_dispatch",
        metadata(&g, "models.ts", "User.serialize", 1)
    );
    insta::assert_snapshot!(
        "hierarchy_queryable",
        metadata(&g, "generics.ts", "Queryable", 1)
    );
    insta::assert_snapshot!(
        "hierarchy_repository",
        metadata(&g, "generics.ts", "Repository", 1)
    );
    let g = load("type-flows");
    insta::assert_snapshot!("type_flows_bill", metadata(&g, "billing.ts", "bill", 1));
    let g = load("members");
    insta::assert_snapshot!("members_cart", metadata(&g, "members.ts", "Cart", 1));
    let g = load("references");
    insta::assert_snapshot!(
        "references_timeout",
        metadata(&g, "config.ts", "timeout", 1)
    );
    insta::assert_snapshot!(
        "references_constant",
        metadata(&g, "config.ts", "DEFAULT_TIMEOUT", 1)
    );
}

#[test]
fn related_symbols_and_file_relationships() {
    let g = load("call-chain");
    let s = g.find("validator.ts", "validate", None)[0];
    let related = g.related(s, 10);
    let text: Vec<String> = related
        .iter()
        .map(|r| format!("{} {}", r.relation, r.symbol.id))
        .collect();
    insta::assert_snapshot!("related_validate", text.join("\n"));
    let f = g.file_index("helper.ts").unwrap();
    insta::assert_snapshot!(
        "relationships_helper",
        serde_json::to_string_pretty(&g.file_relationships(f)).unwrap()
    );
}

/// A 10,000-deep call chain: transitive metadata stops at the documented depth instead of
/// overflowing the stack, and says so with `depthLimited`.
#[test]
fn ten_thousand_deep_call_chain() {
    let dir = tempdir("deep-chain");
    let mut src = String::new();
    for i in 0..10_000 {
        writeln!(src, "export function f{i}() {{ return f{}(); }}", i + 1).unwrap();
    }
    src.push_str("export function f10000() { return 0; }\n");
    std::fs::write(dir.join("chain.ts"), src).unwrap();
    let g = ProjectGraph::load(&dir).unwrap();
    let s = g.find("chain.ts", "f0", None)[0];
    let meta = g.metadata(s, &MetadataOptions { call_depth: -1 });
    let mut depth = 0;
    let mut node = &meta.outgoing_calls[0];
    while let Some(next) = node.children.first() {
        node = next;
        depth += 1;
    }
    assert!(node.depth_limited, "the frontier is marked depthLimited");
    assert_eq!(depth + 1, codectx_graph::MAX_TRANSITIVE_DEPTH);
    let last = g.find("chain.ts", "f10000", None)[0];
    assert_eq!(g.callers(last).len(), 1);
    assert!(matches!(g.callers(last)[0].0, CallerRef::Symbol(_)));
}

/// A directory symlink pointing at its parent must not hang or duplicate files.
#[cfg(unix)]
#[test]
fn symlink_loops_are_not_followed() {
    let dir = tempdir("symlink-loop");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/a.ts"), "export const a = 1;\n").unwrap();
    std::os::unix::fs::symlink("..", dir.join("sub/loop")).unwrap();
    let g = ProjectGraph::load(&dir).unwrap();
    assert_eq!(g.files().len(), 1);
}

#[test]
fn a_missing_root_is_a_clear_error() {
    let err = ProjectGraph::load(Path::new("/definitely/not/here"))
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn editing_one_file_relinks() {
    let dir = tempdir("relink");
    std::fs::write(dir.join("a.ts"), "export function a() { return 1; }\n").unwrap();
    std::fs::write(
        dir.join("b.ts"),
        "import { a } from './a';\nexport function b() { return a(); }\n",
    )
    .unwrap();
    let mut g = ProjectGraph::load(&dir).unwrap();
    let callers = |g: &ProjectGraph| {
        let a = g.find("a.ts", "a", None)[0];
        g.callers(a)
            .iter()
            .map(|&(c, _)| g.caller_id(c))
            .collect::<Vec<_>>()
    };
    assert_eq!(callers(&g), ["b.ts::b@2"]);
    let b = dir.join("b.ts");
    let edited = "import { a } from './a';\nexport function b() { return 2; }\nexport function c() { return a(); }\n";
    g.update_file(&b, Some(edited));
    assert_eq!(callers(&g), ["b.ts::c@3"]);
    g.update_file(&b, None);
    assert!(callers(&g).is_empty());
}

/// Every graph fixture copied into a temporary directory of its own (`{purpose}-{name}`),
/// with its name: the tests that edit files edit the copies.
fn fixture_copies(purpose: &str) -> Vec<(String, PathBuf)> {
    std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|entry| {
            let fixture = entry.unwrap().path();
            let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
            let dir = tempdir(&format!("{purpose}-{name}"));
            codectx_corpus::copy_tree(&fixture, &dir);
            (name, dir)
        })
        .collect()
}

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codectx-graph-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn syntax_errors_keep_the_rest_of_the_file() {
    let source = std::fs::read_to_string(fixtures_dir().join("bad-input/broken.ts")).unwrap();
    let facts = codectx_graph::extract_facts("broken.ts", &source);
    let names: Vec<&str> = facts.decls.iter().map(|d| d.name.as_str()).collect();
    assert!(facts.syntax_errors > 0);
    assert!(names.contains(&"before"), "{names:?}");
}

/// Every fixture file removed in turn, then written back, then renamed (removed and added
/// in one update, beside an edit of another file): each patched graph renders exactly as a
/// fresh load of the tree as it then is. Removing or adding a file renumbers the others and
/// can change what any specifier resolves to.
#[test]
fn an_added_or_removed_file_relinks_to_what_a_fresh_load_gives() {
    let mut changes = 0;
    for (name, dir) in fixture_copies("add-remove") {
        let mut g = ProjectGraph::load(&dir).unwrap();
        let files: Vec<(String, PathBuf)> = g
            .files()
            .iter()
            .map(|f| (f.path.clone(), f.abs.clone()))
            .collect();
        let check = |g: &ProjectGraph, what: &str| {
            let fresh = ProjectGraph::load(&dir).unwrap();
            assert_eq!(render(g), render(&fresh), "{name}: {what}");
        };
        for (n, (path, abs)) in files.iter().enumerate() {
            let source = std::fs::read_to_string(abs).unwrap();
            std::fs::remove_file(abs).unwrap();
            g.update_file(abs, None);
            check(&g, &format!("{path} removed"));
            std::fs::write(abs, &source).unwrap();
            g.update_file(abs, Some(&source));
            check(&g, &format!("{path} written back"));
            // Renamed to a name that sorts first, while the next file loses its first line.
            let renamed =
                abs.with_file_name(format!("0-{}", abs.file_name().unwrap().to_string_lossy()));
            // (A fixture of one file edits that file's new copy instead.)
            let (other_path, other) = &files[(n + 1) % files.len()];
            let other_source = std::fs::read_to_string(other).unwrap();
            std::fs::rename(abs, &renamed).unwrap();
            let other = if other == abs { &renamed } else { other };
            let edited: String = other_source
                .lines()
                .skip(1)
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(other, &edited).unwrap();
            let facts = |p: &std::path::Path| {
                let source = std::fs::read_to_string(p).unwrap();
                codectx_graph::extract_facts(&codectx_files::relative_path(&dir, p), &source)
            };
            g.update_facts([
                (abs.clone(), None),
                (renamed.clone(), Some(facts(&renamed))),
                (other.clone(), Some(facts(other))),
            ]);
            check(&g, &format!("{path} renamed, {other_path} edited"));
            std::fs::write(other, &other_source).unwrap();
            std::fs::rename(&renamed, abs).unwrap();
            let other = if other == &renamed { abs } else { other };
            g.update_facts([
                (renamed.clone(), None),
                (abs.clone(), Some(facts(abs))),
                (other.clone(), Some(facts(other))),
            ]);
            check(&g, &format!("{path} renamed back"));
            changes += 4;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(changes > 300, "{changes} changes");
}

/// Every module configuration of every fixture replaced in turn by one that says nothing
/// (then restored): after `resolve_again`, the graph renders as a fresh load of the tree as
/// it then is. The replacements that change what imports resolve to are listed.
#[test]
fn a_module_configuration_edit_resolves_imports_again() {
    let mut effective = Vec::new();
    for (name, dir) in fixture_copies("configs") {
        let mut g = ProjectGraph::load(&dir).unwrap();
        let configs = codectx_files::FileSelection::default()
            .walk_with_module_configs(&dir)
            .module_configs;
        for config in configs {
            let original = std::fs::read_to_string(&config.abs).unwrap();
            let says_nothing = match config.path.rsplit('/').next() {
                Some("go.mod") => "module example.com/elsewhere\n",
                Some("Cargo.toml") => "[package]\nname = \"elsewhere\"\n",
                _ => "{}\n",
            };
            let before = render(&g);
            for text in [says_nothing, original.as_str()] {
                std::fs::write(&config.abs, text).unwrap();
                g.resolve_again();
                let fresh = ProjectGraph::load(&dir).unwrap();
                assert_eq!(render(&g), render(&fresh), "{name}: {}", config.path);
                if text == says_nothing && render(&g) != before {
                    effective.push(format!("{name}/{}", config.path));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    // The others leave the graph as it was: packages nothing imports by name (a workspace
    // root, an app, a CommonJS package), crates no other crate uses, a workspace's root.
    effective.sort();
    assert_eq!(
        effective,
        [
            "go-calls/go.mod",
            "go-modules/go.mod",
            "rust-modules/Cargo.toml",
            "rust-workspace/crates/core/Cargo.toml",
            "tsconfig-paths/tsconfig.base.json",
            "tsconfig-paths/tsconfig.json",
            "workspace/packages/core/package.json",
        ]
    );
}

/// Every line of every fixture file deleted in turn, on a loaded graph: the patched graph
/// renders exactly as a fresh load of the edited tree. Deleting a line inside a body keeps
/// the file's outward facts (only that file is re-linked); deleting a declaration's line
/// does not (the file and its importers, transitively, are); both are checked, and the first
/// kind must occur.
#[test]
fn an_edited_file_relinks_to_what_a_fresh_load_gives() {
    let mut inward_edits = 0;
    let mut edits = 0;
    for (name, dir) in fixture_copies("relink") {
        let mut g = ProjectGraph::load(&dir).unwrap();
        let paths: Vec<(String, PathBuf)> = g
            .files()
            .iter()
            .map(|f| (f.path.clone(), f.abs.clone()))
            .collect();
        for (path, abs) in paths {
            let original = std::fs::read_to_string(&abs).unwrap();
            let lines: Vec<&str> = original.lines().collect();
            for skip in 0..lines.len() {
                let edited: String = lines
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != skip)
                    .map(|(_, l)| format!("{l}\n"))
                    .collect();
                let before = codectx_graph::extract_facts(&path, &original);
                let after = codectx_graph::extract_facts(&path, &edited);
                inward_edits += before.same_outward_facts(&after) as usize;
                edits += 1;
                std::fs::write(&abs, &edited).unwrap();
                g.update_file(&abs, Some(&edited));
                let fresh = ProjectGraph::load(&dir).unwrap();
                assert_eq!(
                    render(&g),
                    render(&fresh),
                    "{name}: {path} without line {}",
                    skip + 1
                );
                std::fs::write(&abs, &original).unwrap();
                g.update_file(&abs, Some(&original));
            }
        }
        let fresh = ProjectGraph::load(&dir).unwrap();
        assert_eq!(render(&g), render(&fresh), "{name} restored");
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        inward_edits > 50 && inward_edits < edits,
        "{inward_edits} of {edits} edits kept the outward facts"
    );
}
