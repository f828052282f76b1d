//! The Graph and Patterns sections: how the results connect to each other and to what they
//! share.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use codectx_graph::{CallNode, SymbolInfo, SymbolMetadata};

/// Most lines one pattern kind prints.
const MAX_PATTERN_LINES: usize = 5;

/// The results with their connections, indexed once.
pub(crate) struct View<'a> {
    results: &'a [SymbolMetadata],
    index: HashMap<&'a str, usize>,
    /// `edges[i]`: results that result `i` calls, ascending, deduplicated.
    edges: Vec<Vec<usize>>,
    /// Call trees deeper than one level are drawn as trees.
    deep: bool,
    /// Symbols outside the results that two or more results use (call, at any depth shown,
    /// or name as a type), by id, with the results using them.
    shared: BTreeMap<&'a str, (&'a SymbolInfo, Vec<usize>, SharedKind)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SharedKind {
    Call,
    Type,
}

impl<'a> View<'a> {
    pub fn new(results: &'a [SymbolMetadata], deep: bool) -> Self {
        let index: HashMap<&str, usize> = results
            .iter()
            .enumerate()
            .map(|(i, m)| (m.symbol.id.as_str(), i))
            .collect();
        // Edges between results only: a result calling itself (recursion, or a method that
        // reassigns itself) is in its details' `Calls`, not a connection or a cycle.
        let mut edges = vec![Vec::new(); results.len()];
        for (i, m) in results.iter().enumerate() {
            for call in &m.outgoing_calls {
                if let Some(&j) = index.get(call.symbol.id.as_str()).filter(|&&j| j != i) {
                    edges[i].push(j);
                }
            }
            for caller in &m.incoming_callers {
                if let Some(&j) = index.get(caller.symbol.id.as_str()).filter(|&&j| j != i) {
                    edges[j].push(i);
                }
            }
        }
        for e in &mut edges {
            e.sort_unstable();
            e.dedup();
        }

        let mut shared: BTreeMap<&str, (&SymbolInfo, Vec<usize>, SharedKind)> = BTreeMap::new();
        let mut note = |info: &'a SymbolInfo, user: usize, kind: SharedKind| {
            if index.contains_key(info.id.as_str()) {
                return;
            }
            let entry = shared
                .entry(info.id.as_str())
                .or_insert((info, Vec::new(), kind));
            if !entry.1.contains(&user) {
                entry.1.push(user);
            }
        };
        for (i, m) in results.iter().enumerate() {
            let mut stack: Vec<&CallNode> = m.outgoing_calls.iter().collect();
            while let Some(n) = stack.pop() {
                note(&n.symbol, i, SharedKind::Call);
                stack.extend(&n.children);
            }
            for info in type_uses(m) {
                note(info, i, SharedKind::Type);
            }
        }
        shared.retain(|_, (_, users, _)| users.len() >= 2);
        View {
            results,
            index,
            edges,
            deep,
            shared,
        }
    }

    /// `[n] Qualified.name` of result `i`.
    pub fn label(&self, i: usize) -> String {
        format!("[{}] {}", i + 1, self.results[i].symbol.qualified_name)
    }

    /// How a details line names another symbol: `[n] name` for a result, else
    /// `name (file)` with `◆` when two or more results share it.
    pub fn reference(&self, info: &SymbolInfo) -> String {
        match self.index.get(info.id.as_str()) {
            Some(&j) => self.label(j),
            None if self.shared.contains_key(info.id.as_str()) => {
                format!("{} ({}) ◆", info.qualified_name, info.file)
            }
            None => format!("{} ({})", info.qualified_name, info.file),
        }
    }

    pub fn graph_section(&self) -> String {
        if self.deep {
            self.trees()
        } else {
            self.chains()
        }
    }

    /// Flat topology: maximal call chains between results, each result expanded once.
    fn chains(&self) -> String {
        let n = self.results.len();
        let mut has_in = vec![false; n];
        for e in &self.edges {
            for &j in e {
                has_in[j] = true;
            }
        }
        let mut expanded = vec![false; n];
        let mut out = String::new();
        // Sources first, then whatever only a cycle reaches.
        let starts = (0..n)
            .filter(|&i| !has_in[i] && !self.edges[i].is_empty())
            .chain((0..n).filter(|&i| !self.edges[i].is_empty()));
        for start in starts.collect::<Vec<_>>() {
            if !expanded[start] {
                self.chain_from(start, self.label(start), &mut expanded, &mut out);
            }
        }
        for (i, &has_in) in has_in.iter().enumerate() {
            if !has_in && self.edges[i].is_empty() {
                let m = &self.results[i];
                writeln!(out, "  {} (standalone {})", self.label(i), kind_word(m)).unwrap();
            }
        }
        out
    }

    fn chain_from(&self, at: usize, line: String, expanded: &mut [bool], out: &mut String) {
        if expanded[at] || self.edges[at].is_empty() {
            writeln!(out, "  {line}").unwrap();
            return;
        }
        expanded[at] = true;
        for (k, &next) in self.edges[at].iter().enumerate() {
            let prefix = if k == 0 { line.clone() } else { self.label(at) };
            self.chain_from(
                next,
                format!("{prefix} → {}", self.label(next)),
                expanded,
                out,
            );
        }
    }

    /// Multi-hop topology: each result's call tree, results not already drawn inside an
    /// earlier tree first.
    fn trees(&self) -> String {
        let mut drawn = vec![false; self.results.len()];
        let mut out = String::new();
        for (i, m) in self.results.iter().enumerate() {
            if drawn[i] {
                continue;
            }
            drawn[i] = true;
            writeln!(out, "  {} ({})", self.label(i), m.symbol.file).unwrap();
            self.tree_lines(&m.outgoing_calls, 2, &mut drawn, &mut out);
        }
        out
    }

    pub fn tree_lines(
        &self,
        nodes: &[CallNode],
        indent: usize,
        drawn: &mut [bool],
        out: &mut String,
    ) {
        for n in nodes {
            let mut line = format!(
                "{}→ {} ({})",
                "  ".repeat(indent),
                n.symbol.qualified_name,
                n.symbol.file
            );
            if let Some(&j) = self.index.get(n.symbol.id.as_str()) {
                line.push_str(" ★");
                if !n.children.is_empty() {
                    drawn[j] = true;
                }
            } else if self.shared.contains_key(n.symbol.id.as_str()) {
                line.push_str(" ◆");
            }
            if n.cyclic {
                line.push_str(" [cycle]");
            }
            if n.depth_limited {
                line.push_str(" [depth limit]");
            }
            writeln!(out, "{line}").unwrap();
            self.tree_lines(&n.children, indent + 1, drawn, out);
        }
    }

    pub fn patterns_section(&self) -> String {
        let mut out = String::new();
        let n = self.results.len();
        let mut callers = vec![Vec::new(); n];
        for (i, e) in self.edges.iter().enumerate() {
            for &j in e {
                callers[j].push(i);
            }
        }
        // A result two or more results call is a hub when it calls on, a shared dependency
        // when it is where the calls end.
        for (j, c) in callers
            .iter()
            .enumerate()
            .filter(|(_, c)| c.len() >= 2)
            .take(MAX_PATTERN_LINES)
        {
            let word = if self.edges[j].is_empty() {
                "Shared dep"
            } else {
                "Hub"
            };
            let verb = if self.edges[j].is_empty() {
                "used by"
            } else {
                "called by"
            };
            writeln!(
                out,
                "  {word}: {} — {verb} {}",
                self.label(j),
                self.labels(c)
            )
            .unwrap();
        }
        for (kind, word) in [
            (SharedKind::Call, "Shared dep"),
            (SharedKind::Type, "Shared type"),
        ] {
            let mut list: Vec<_> = self.shared.values().filter(|s| s.2 == kind).collect();
            list.sort_by_key(|s| std::cmp::Reverse(s.1.len()));
            for (info, users, _) in list.into_iter().take(MAX_PATTERN_LINES) {
                let used_by = match kind {
                    SharedKind::Call => self.labels(users),
                    SharedKind::Type => format!("{}/{n} results", users.len()),
                };
                writeln!(
                    out,
                    "  {word}: {} ({}) ◆ — used by {used_by}",
                    info.qualified_name, info.file
                )
                .unwrap();
            }
        }
        for d in self.diamonds().into_iter().take(MAX_PATTERN_LINES) {
            writeln!(out, "  Diamond: {d}").unwrap();
        }
        for c in self.cycles().into_iter().take(MAX_PATTERN_LINES) {
            let path: Vec<String> = c.iter().chain(c.first()).map(|&i| self.label(i)).collect();
            writeln!(out, "  Cycle: {}", path.join(" → ")).unwrap();
        }
        out
    }

    fn labels(&self, list: &[usize]) -> String {
        let mut list = list.to_vec();
        list.sort_unstable();
        list.iter()
            .map(|&i| format!("[{}]", i + 1))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `A → B, C → D`: a result reaching one symbol along two distinct callees, over the
    /// results' call edges and their call trees.
    fn diamonds(&self) -> Vec<String> {
        // Successors by id, over result edges and every parent → child of the trees.
        let mut succ: BTreeMap<&str, Vec<&SymbolInfo>> = BTreeMap::new();
        fn add<'s>(
            succ: &mut BTreeMap<&'s str, Vec<&'s SymbolInfo>>,
            from: &'s str,
            to: &'s SymbolInfo,
        ) {
            let list = succ.entry(from).or_default();
            if !list.iter().any(|s| s.id == to.id) {
                list.push(to);
            }
        }
        for (i, m) in self.results.iter().enumerate() {
            for &j in &self.edges[i] {
                add(&mut succ, &m.symbol.id, &self.results[j].symbol);
            }
            let mut stack: Vec<(&str, &CallNode)> = m
                .outgoing_calls
                .iter()
                .map(|c| (m.symbol.id.as_str(), c))
                .collect();
            while let Some((parent, node)) = stack.pop() {
                add(&mut succ, parent, &node.symbol);
                stack.extend(node.children.iter().map(|c| (node.symbol.id.as_str(), c)));
            }
        }
        let mut out = Vec::new();
        for (i, m) in self.results.iter().enumerate() {
            let Some(mids) = succ.get(m.symbol.id.as_str()) else {
                continue;
            };
            'pairs: for (a, b) in mids
                .iter()
                .enumerate()
                .flat_map(|(k, a)| mids[k + 1..].iter().map(move |b| (*a, *b)))
            {
                let (Some(sa), Some(sb)) = (succ.get(a.id.as_str()), succ.get(b.id.as_str()))
                else {
                    continue;
                };
                for d in sa {
                    if d.id != m.symbol.id && sb.iter().any(|x| x.id == d.id) {
                        out.push(format!(
                            "{} → {}, {} → {}",
                            self.label(i),
                            self.short(a),
                            self.short(b),
                            self.short(d)
                        ));
                        break 'pairs;
                    }
                }
            }
        }
        out
    }

    fn short(&self, info: &SymbolInfo) -> String {
        match self.index.get(info.id.as_str()) {
            Some(&j) => self.label(j),
            None => info.qualified_name.clone(),
        }
    }

    /// Elementary cycles among results (each reported once, from its lowest result).
    fn cycles(&self) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::new();
        for start in 0..self.results.len() {
            let mut stack = vec![(start, vec![start])];
            while let Some((at, path)) = stack.pop() {
                for &next in &self.edges[at] {
                    if next == start {
                        out.push(path.clone());
                    } else if next > start && !path.contains(&next) && path.len() < 8 {
                        let mut p = path.clone();
                        p.push(next);
                        stack.push((next, p));
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// Project types a result names: parameter and return types, extends and implements.
pub(crate) fn type_uses(m: &SymbolMetadata) -> impl Iterator<Item = &SymbolInfo> {
    let flows = m
        .type_flows
        .parameters
        .iter()
        .chain(&m.type_flows.returns)
        .flat_map(|f| &f.declared_in);
    let heritage = m
        .type_hierarchy
        .iter()
        .flat_map(|h| h.extends.iter().chain(&h.implements));
    flows.chain(heritage)
}

/// `constant` for a `const` variable, else the kind.
pub(crate) fn kind_word(m: &SymbolMetadata) -> &str {
    match &m.constant {
        Some(c) if c.keyword == "const" => "constant",
        _ => m.symbol.kind.as_str(),
    }
}
