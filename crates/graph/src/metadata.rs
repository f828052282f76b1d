//! The blueprint's `SymbolMetadata`: signature, hierarchy, call trees, references, type
//! flows and members of one declaration, from the linked graph.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::facts::{SymbolKind, Target};
use crate::{CallerRef, ProjectGraph, SymbolRef};

/// Deepest level a transitive (`call_depth = -1`) tree is expanded to; deeper levels are
/// marked `depthLimited`. Keeps 10,000-deep chains from building (and printing) 10,000
/// nested levels.
pub const MAX_TRANSITIVE_DEPTH: usize = 64;
/// Most nodes one call tree may hold; the rest is marked `depthLimited`.
pub const MAX_TREE_NODES: usize = 2_000;

#[derive(Debug, Clone)]
pub struct MetadataOptions {
    /// 1 = direct calls only; N = N hops; -1 = transitive (cycle-safe).
    pub call_depth: i32,
}

impl Default for MetadataOptions {
    fn default() -> Self {
        Self { call_depth: 1 }
    }
}

/// A declaration, as other structures point at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SymbolInfo {
    /// `path::Qualified.name@line`.
    pub id: String,
    pub name: String,
    pub qualified_name: String,
    pub kind: SymbolKind,
    pub file: String,
    pub start_line: u32,
    pub end_line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_abstract: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallNode {
    pub symbol: SymbolInfo,
    /// Line of the call site (in the caller's file).
    pub line: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cyclic: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub depth_limited: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<CallNode>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeHierarchy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<SymbolInfo>,
    pub implements: Vec<SymbolInfo>,
    pub subtypes: Vec<SymbolInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_abstract: Option<bool>,
    pub type_parameters: Vec<crate::facts::TypeParam>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceCount {
    /// Files other than the declaring one that reference the symbol.
    pub files: u32,
    /// Non-declaration occurrences across the project.
    pub occurrences: u32,
    pub file_list: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeFlow {
    /// Parameter name; empty for the return type.
    pub name: String,
    pub type_text: String,
    /// Project declarations of the types the annotation names.
    pub declared_in: Vec<SymbolInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeFlows {
    pub parameters: Vec<TypeFlow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<TypeFlow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SymbolMetadata {
    pub symbol: SymbolInfo,
    pub signature: String,
    pub modifiers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_hierarchy: Option<TypeHierarchy>,
    pub outgoing_calls: Vec<CallNode>,
    pub incoming_callers: Vec<CallNode>,
    pub reference_count: ReferenceCount,
    pub type_flows: TypeFlows,
    pub members: Vec<SymbolInfo>,
    /// Enclosing declarations, outermost first (seed 002's ancestors).
    pub ancestors: Vec<SymbolInfo>,
    /// Keyword, type and value of a variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant: Option<crate::facts::ConstantInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedSymbol {
    pub symbol: SymbolInfo,
    pub relation: Relation,
}

/// How a related symbol is tied to the one asked about, closest first (seed 002's priority).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Relation {
    SameFile,
    SameDirectory,
    ImportConnected,
}

impl Relation {
    /// The name the tools' answers give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::SameFile => "same-file",
            Relation::SameDirectory => "same-directory",
            Relation::ImportConnected => "import-connected",
        }
    }
}

impl std::fmt::Display for Relation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

pub(crate) fn info(g: &ProjectGraph, s: SymbolRef) -> SymbolInfo {
    let d = g.decl(s);
    SymbolInfo {
        id: g.symbol_id(s),
        name: d.name.clone(),
        qualified_name: d.qualified_name.clone(),
        kind: d.kind,
        file: g.files()[s.file as usize].path.clone(),
        start_line: d.start_line,
        end_line: d.end_line,
        is_abstract: d.is_abstract.then_some(true),
    }
}

fn caller_info(g: &ProjectGraph, c: CallerRef) -> SymbolInfo {
    match c {
        CallerRef::Symbol(s) => info(g, s),
        CallerRef::Module(f) => {
            let file = &g.files()[f as usize];
            SymbolInfo {
                id: g.caller_id(c),
                name: "<module>".into(),
                qualified_name: "<module>".into(),
                kind: SymbolKind::Module,
                file: file.path.clone(),
                start_line: 1,
                end_line: file.facts().line_count,
                is_abstract: None,
            }
        }
    }
}

/// `new Foo()` is shown as a call of Foo's constructor when it declares one.
fn shown_callee(g: &ProjectGraph, s: SymbolRef) -> SymbolRef {
    let d = g.decl(s);
    if d.kind == SymbolKind::Class
        && let Some(&ctor) = d.members.iter().find(|&&m| {
            g.decl(SymbolRef {
                file: s.file,
                decl: m,
            })
            .kind
                == SymbolKind::Constructor
        })
    {
        return SymbolRef {
            file: s.file,
            decl: ctor,
        };
    }
    s
}

/// The first edge to each node, in order. A hash set: hubs have thousands of callers.
fn dedupe<N: Copy + Eq + std::hash::Hash>(edges: &[(N, u32)]) -> Vec<(N, u32)> {
    let mut seen = std::collections::HashSet::with_capacity(edges.len());
    edges
        .iter()
        .copied()
        .filter(|&(n, _)| seen.insert(n))
        .collect()
}

fn max_depth(options: &MetadataOptions) -> usize {
    match options.call_depth {
        d if d < 0 => MAX_TRANSITIVE_DEPTH,
        0 => 1,
        d => (d as usize).min(MAX_TRANSITIVE_DEPTH),
    }
}

/// Expands call trees breadth-first with an explicit stack (no recursion on the graph),
/// marking back-edges `cyclic` and unexpanded frontiers `depthLimited`.
fn tree<N: Copy + PartialEq>(
    root: N,
    depth: usize,
    next: &dyn Fn(N) -> Vec<(N, u32)>,
    node: &dyn Fn(N, u32) -> CallNode,
) -> Vec<CallNode> {
    let mut budget = MAX_TREE_NODES;
    fn expand<N: Copy + PartialEq>(
        at: N,
        chain: &mut Vec<N>,
        level: usize,
        depth: usize,
        budget: &mut usize,
        next: &dyn Fn(N) -> Vec<(N, u32)>,
        node: &dyn Fn(N, u32) -> CallNode,
    ) -> Vec<CallNode> {
        let mut out = Vec::new();
        for (child, line) in next(at) {
            let mut n = node(child, line);
            if chain.contains(&child) {
                n.cyclic = true;
            } else if level + 1 >= depth || *budget == 0 {
                n.depth_limited = !next(child).is_empty();
            } else {
                *budget -= 1;
                chain.push(child);
                n.children = expand(child, chain, level + 1, depth, budget, next, node);
                chain.pop();
            }
            out.push(n);
        }
        out
    }
    let mut chain = vec![root];
    expand(root, &mut chain, 0, depth, &mut budget, next, node)
}

pub(crate) fn build(g: &ProjectGraph, s: SymbolRef, options: &MetadataOptions) -> SymbolMetadata {
    let d = g.decl(s);
    let depth = max_depth(options);

    let outgoing = tree(
        s,
        depth,
        // One entry per callee (the first call site), as the blueprint groups them.
        &|n: SymbolRef| dedupe(g.callees(n)),
        &|n, line| CallNode {
            symbol: info(g, shown_callee(g, n)),
            line,
            cyclic: false,
            depth_limited: false,
            children: Vec::new(),
        },
    );
    // Callers of a constructor are the `new` sites of its class.
    let incoming_root = match (d.kind, d.container) {
        (SymbolKind::Constructor, Some(class)) => SymbolRef {
            file: s.file,
            decl: class,
        },
        _ => s,
    };
    let incoming = tree(
        CallerRef::Symbol(incoming_root),
        depth,
        &|n: CallerRef| match n {
            CallerRef::Symbol(sym) => dedupe(g.callers(sym)),
            CallerRef::Module(_) => Vec::new(),
        },
        &|n, line| CallNode {
            symbol: caller_info(g, n),
            line,
            cyclic: false,
            depth_limited: false,
            children: Vec::new(),
        },
    );

    let (occurrences, ref_files) = g.references(s);
    let mut file_list: Vec<String> = ref_files
        .iter()
        .map(|&f| g.files()[f as usize].path.clone())
        .collect();
    file_list.sort();

    let hierarchy = matches!(d.kind, SymbolKind::Class | SymbolKind::Interface).then(|| {
        // A class extends at most one class; its other supertypes are implemented. An
        // interface's `extends` list is reported as `implements`, as the blueprint does.
        let extends = match d.kind {
            SymbolKind::Class => d.extends.first().and_then(|t| resolve_symbol(g, s.file, t)),
            _ => None,
        };
        TypeHierarchy {
            extends: extends.map(|e| info(g, e)),
            implements: g
                .supertypes(s)
                .into_iter()
                .filter(|&t| Some(t) != extends)
                .map(|t| info(g, t))
                .collect(),
            subtypes: g.subtypes(s).into_iter().map(|t| info(g, t)).collect(),
            is_abstract: d.is_abstract.then_some(true),
            type_parameters: d.type_params.clone(),
        }
    });

    let flow = |slot: &crate::facts::TypedSlot| TypeFlow {
        name: slot.name.clone(),
        type_text: slot.type_text.clone(),
        declared_in: slot
            .types
            .iter()
            .filter_map(|t| resolve_symbol(g, s.file, t))
            .map(|t| info(g, t))
            .collect(),
    };

    let mut modifiers = Vec::new();
    if d.exported {
        modifiers.push("exported".to_string());
    }
    if d.is_static {
        modifiers.push("static".to_string());
    }
    if d.is_abstract {
        modifiers.push("abstract".to_string());
    }

    let mut ancestors = Vec::new();
    let mut up = d.container;
    while let Some(c) = up {
        let cref = SymbolRef {
            file: s.file,
            decl: c,
        };
        ancestors.insert(0, info(g, cref));
        up = g.decl(cref).container;
    }

    SymbolMetadata {
        symbol: info(g, s),
        signature: d.signature.clone(),
        modifiers,
        type_hierarchy: hierarchy,
        outgoing_calls: outgoing,
        incoming_callers: incoming,
        reference_count: ReferenceCount {
            files: file_list.len() as u32,
            occurrences,
            file_list,
        },
        type_flows: TypeFlows {
            parameters: d.params.iter().map(flow).collect(),
            returns: d.returns.as_ref().map(flow),
        },
        members: d
            .members
            .iter()
            .map(|&m| {
                info(
                    g,
                    SymbolRef {
                        file: s.file,
                        decl: m,
                    },
                )
            })
            .collect(),
        ancestors,
        constant: d.constant.clone(),
    }
}

fn resolve_symbol(g: &ProjectGraph, file: u32, t: &Target) -> Option<SymbolRef> {
    crate::link::Linker::new(g.files()).symbol(file, t)
}

pub(crate) fn related(g: &ProjectGraph, s: SymbolRef, limit: usize) -> Vec<RelatedSymbol> {
    let mut out = Vec::new();
    let mut seen = HashSet::from([s]);
    let top_level = |f: u32| {
        file_level(&g.files()[f as usize].facts().decls)
            .into_iter()
            .map(move |i| SymbolRef {
                file: f,
                decl: i as u32,
            })
            .collect::<Vec<_>>()
    };
    let mut push = |sym: SymbolRef, relation: Relation, out: &mut Vec<RelatedSymbol>| {
        if out.len() < limit && seen.insert(sym) {
            out.push(RelatedSymbol {
                symbol: info(g, sym),
                relation,
            });
        }
    };
    for sym in top_level(s.file) {
        push(sym, Relation::SameFile, &mut out);
    }
    let dir = |f: u32| codectx_files::directory_of(&g.files()[f as usize].path);
    let my_dir = dir(s.file);
    for f in 0..g.files().len() as u32 {
        if f != s.file && dir(f) == my_dir {
            for sym in top_level(f) {
                push(sym, Relation::SameDirectory, &mut out);
            }
        }
    }
    let rel = g.file_relationships(s.file);
    for edge in rel.imports.iter().chain(&rel.imported_by) {
        if let Some(f) = g.file_index(&edge.file) {
            for sym in top_level(f) {
                push(sym, Relation::ImportConnected, &mut out);
            }
        }
    }
    out
}

/// The declarations a file holds at its own level, in source order: not a member of a type
/// or a value, and not a local of a function (`const res = ctx.res` inside `respond` is
/// `respond`'s, not a symbol its file offers).
fn file_level(decls: &[crate::facts::Decl]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..decls.len()).collect();
    order.sort_by_key(|&i| (decls[i].span.0, std::cmp::Reverse(decls[i].span.1)));
    // The ends of the functions around the declaration looked at.
    let mut around: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    for i in order {
        let d = &decls[i];
        while around.last().is_some_and(|&end| end <= d.span.0) {
            around.pop();
        }
        if around.is_empty() && d.container.is_none() && d.owner.is_none() {
            out.push(i);
        }
        if d.kind.is_callable() {
            around.push(d.span.1);
        }
    }
    out.sort_unstable();
    out
}
