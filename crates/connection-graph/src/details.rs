//! The Details section (one block per result) and the single-result format.

use std::fmt::Write;

use codectx_graph::{SymbolInfo, SymbolKind, SymbolMetadata, TypeFlow};

use crate::topology::{View, kind_word};

/// Most entries a Calls / Called by / Members line lists before `+N more`.
const MAX_LIST: usize = 8;

/// `[n] Name — file` and its indented lines.
pub(crate) fn detail(view: &View<'_>, i: usize, m: &SymbolMetadata) -> String {
    let mut out = format!("{} — {}\n", view.label(i), m.symbol.file);
    lines(m, &|s| view.reference(s), &mut out);
    out
}

/// The blueprint's single-result format: no index, no sections.
/// With `deep` (callDepth ≠ 1) the call tree follows as a Graph section.
pub(crate) fn single(m: &SymbolMetadata, deep: bool) -> String {
    let mut out = format!("\n{} — {}\n", m.symbol.qualified_name, m.symbol.file);
    lines(
        m,
        &|s| format!("{} ({})", s.qualified_name, s.file),
        &mut out,
    );
    if deep && !m.outgoing_calls.is_empty() {
        out.push_str("\nGraph:\n");
        writeln!(out, "  {} ({})", m.symbol.qualified_name, m.symbol.file).unwrap();
        let view = View::new(std::slice::from_ref(m), true);
        view.tree_lines(&m.outgoing_calls, 2, &mut [true], &mut out);
    }
    out
}

fn lines(m: &SymbolMetadata, name: &dyn Fn(&SymbolInfo) -> String, out: &mut String) {
    const PAD: &str = "    ";
    let mut head = Vec::new();
    if m.signature.starts_with("async ") {
        head.push("async".to_string());
    }
    let modifiers: Vec<&str> = m
        .modifiers
        .iter()
        .map(String::as_str)
        .filter(|&x| x != "exported")
        .collect();
    let kind = match &m.constant {
        Some(c) => c.keyword.as_str(),
        None => kind_word(m),
    };
    head.push(if modifiers.is_empty() {
        kind.to_string()
    } else {
        format!("{} {kind}", modifiers.join(" "))
    });
    let mut facts = vec![head.join(" ")];
    if m.modifiers.iter().any(|x| x == "exported") {
        facts.push("exported".into());
    }
    let files = m.reference_count.files;
    facts.push(format!(
        "refs: {files} file{}",
        if files == 1 { "" } else { "s" }
    ));
    writeln!(out, "{PAD}{}", facts.join(" | ")).unwrap();

    if !m.signature.is_empty() && m.constant.is_none() {
        writeln!(out, "{PAD}Signature: {}", m.signature).unwrap();
    }
    if let Some(h) = &m.type_hierarchy {
        if let Some(e) = &h.extends {
            writeln!(out, "{PAD}Extends: {}", name(e)).unwrap();
        }
        if !h.implements.is_empty() {
            writeln!(out, "{PAD}Implements: {}", list(&h.implements, name)).unwrap();
        }
        if !h.subtypes.is_empty() {
            writeln!(out, "{PAD}Subtypes: {}", list(&h.subtypes, name)).unwrap();
        }
        if !h.type_parameters.is_empty() {
            let params: Vec<String> = h
                .type_parameters
                .iter()
                .map(|p| {
                    let mut s = p.name.clone();
                    if let Some(c) = &p.constraint {
                        write!(s, " extends {c}").unwrap();
                    }
                    if let Some(d) = &p.default {
                        write!(s, " = {d}").unwrap();
                    }
                    s
                })
                .collect();
            writeln!(out, "{PAD}Type parameters: {}", params.join(", ")).unwrap();
        }
    }
    let calls: Vec<&SymbolInfo> = m.outgoing_calls.iter().map(|c| &c.symbol).collect();
    if !calls.is_empty() {
        writeln!(out, "{PAD}Calls: {}", list(calls, name)).unwrap();
    }
    let callers: Vec<&SymbolInfo> = m.incoming_callers.iter().map(|c| &c.symbol).collect();
    if !callers.is_empty() {
        writeln!(out, "{PAD}Called by: {}", list(callers, name)).unwrap();
    }
    let types_in: Vec<String> = m
        .type_flows
        .parameters
        .iter()
        .filter_map(|f| flow(f, name))
        .collect();
    let types_out = m.type_flows.returns.as_ref().and_then(|f| flow(f, name));
    match (types_in.is_empty(), types_out) {
        (true, None) => {}
        (false, None) => writeln!(out, "{PAD}Types in: {}", types_in.join(", ")).unwrap(),
        (true, Some(o)) => writeln!(out, "{PAD}Types out: {o}").unwrap(),
        (false, Some(o)) => writeln!(
            out,
            "{PAD}Types in: {} | Types out: {o}",
            types_in.join(", ")
        )
        .unwrap(),
    }
    if !m.members.is_empty() {
        let members: Vec<String> = m
            .members
            .iter()
            .map(|s| match s.kind {
                SymbolKind::Method | SymbolKind::Constructor | SymbolKind::Function => {
                    format!("{}()", s.name)
                }
                _ => s.name.clone(),
            })
            .collect();
        writeln!(out, "{PAD}Members: {}", capped(members)).unwrap();
    }
    if let Some(c) = &m.constant {
        match (&c.type_text, &c.value) {
            (Some(t), Some(v)) => writeln!(out, "{PAD}Type: {t} (value: {v})").unwrap(),
            (Some(t), None) => writeln!(out, "{PAD}Type: {t}").unwrap(),
            (None, Some(v)) => writeln!(out, "{PAD}Value: {v}").unwrap(),
            (None, None) => {}
        }
    }
}

/// `token (string)` for a parameter; the declared project type with its file when there is
/// one (`JwtPayload (src/models/auth.ts)`).
fn flow(f: &TypeFlow, name: &dyn Fn(&SymbolInfo) -> String) -> Option<String> {
    if f.type_text.is_empty() {
        return None;
    }
    if !f.declared_in.is_empty() {
        // `(a: Context, b: Context) => Context` names Context once.
        let mut names: Vec<String> = Vec::new();
        for n in f.declared_in.iter().map(name) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        return Some(names.join(", "));
    }
    Some(if f.name.is_empty() {
        f.type_text.clone()
    } else {
        format!("{} ({})", f.name, f.type_text)
    })
}

fn list<'s>(
    items: impl IntoIterator<Item = &'s SymbolInfo>,
    name: &dyn Fn(&SymbolInfo) -> String,
) -> String {
    capped(items.into_iter().map(name).collect())
}

fn capped(items: Vec<String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.into_iter().take(MAX_LIST).collect();
    if total > MAX_LIST {
        shown.push(format!("+{} more", total - MAX_LIST));
    }
    shown.join(", ")
}
