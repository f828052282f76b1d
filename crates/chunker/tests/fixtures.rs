//! Data-driven runner: every file in `fixtures/parser/` must pass the blueprint's ten global
//! rules, and its chunk list is snapshotted (breadcrumb, kind, lines, collapsed or leaf,
//! relevantImports, and the embedding text wherever it differs from the full source).

use std::fmt::Write;

use codectx_chunker::validate::check_file;

fn render(chunks: &[codectx_chunker::CodeChunk]) -> String {
    let mut out = String::new();
    for c in chunks {
        let shape = if c.embedding_text == c.full_source {
            "leaf"
        } else {
            "collapsed"
        };
        let naming = if c.naming.is_made_up() {
            format!(" <made up: {}>", c.naming.as_str())
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}[{}] {}{naming} L{}-{} {shape}",
            "  ".repeat(c.depth as usize),
            c.node_kind,
            c.breadcrumb,
            c.start_line,
            c.end_line
        )
        .unwrap();
        for import in &c.relevant_imports {
            writeln!(out, "{}  uses: {import}", "  ".repeat(c.depth as usize)).unwrap();
        }
        if shape == "collapsed" {
            for line in c.embedding_text.lines() {
                writeln!(out, "{}  | {line}", "  ".repeat(c.depth as usize)).unwrap();
            }
        }
    }
    out
}

#[test]
fn chunks_pass_the_global_rules() {
    insta::glob!("../../../fixtures/parser", "*.*", |path| {
        let source = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_str().unwrap();
        let report = check_file(name, &source);
        let failures: Vec<String> = report
            .violations
            .iter()
            .map(|v| format!("{name}: {v}"))
            .collect();
        assert!(
            failures.is_empty(),
            "global rules broken:\n{}",
            failures.join("\n")
        );
        insta::assert_snapshot!(render(&report.chunks));
    });
}
