//! Snapshot of the symbol tree of every file in `fixtures/parser/`.
//! A new parser behaviour is a new fixture file; `cargo insta review` shows the diff.

use std::fmt::Write;

use codectx_parser::{LineIndex, ParsedFile, ParsedSymbol, parse_source};

fn render(parsed: &ParsedFile, source: &str) -> String {
    let lines = LineIndex::new(source);
    let mut out = String::new();
    writeln!(
        out,
        "status: {:?}, lines: {}",
        parsed.status, parsed.line_count
    )
    .unwrap();
    for d in &parsed.diagnostics {
        writeln!(out, "diagnostic L{}: {}", d.line.unwrap_or(0), d.message).unwrap();
    }
    for import in &parsed.imports {
        let mut used: Vec<u32> = import
            .reference_offsets
            .iter()
            .map(|&o| lines.line_of(o))
            .collect();
        used.dedup();
        writeln!(
            out,
            "import {:?} binds {:?} used on lines {:?}",
            import.source, import.local_names, used
        )
        .unwrap();
    }
    out.push('\n');
    for sym in &parsed.symbols {
        render_symbol(&mut out, sym);
    }
    out
}

fn render_symbol(out: &mut String, sym: &ParsedSymbol) {
    let indent = "  ".repeat(sym.depth as usize);
    let mods: Vec<&str> = sym.modifiers.iter().map(|m| m.as_str()).collect();
    write!(
        out,
        "{indent}L{}-{} {} {:?}",
        sym.range.start, sym.range.end, sym.kind, sym.name
    )
    .unwrap();
    if sym.naming.is_made_up() {
        write!(out, " <made up: {}>", sym.naming.as_str()).unwrap();
    }
    if !mods.is_empty() {
        write!(out, " [{}]", mods.join(", ")).unwrap();
    }
    if sym.is_body_bearing() {
        out.push_str(" {body}");
    }
    if let Some(parent) = &sym.parent_name {
        write!(out, " in {parent:?}").unwrap();
    }
    out.push('\n');
    if !sym.signature.is_empty() {
        writeln!(out, "{indent}  sig: {}", sym.signature).unwrap();
    }
    if let Some(doc) = &sym.jsdoc {
        writeln!(out, "{indent}  jsdoc: {doc:?}").unwrap();
    }
    for child in &sym.children {
        render_symbol(out, child);
    }
}

#[test]
fn symbol_trees() {
    insta::glob!("../../../fixtures/parser", "*.*", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let parsed = parse_source(name, &source);
        insta::assert_snapshot!(render(&parsed, &source));
    });
}
