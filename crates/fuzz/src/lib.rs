//! What must hold for any bytes a user's repository can contain. Each function is one fuzz
//! target's body (`crates/fuzz/targets`, run by `cargo xtask fuzz`); it panics when a
//! property fails, and returns quietly on input the product rejects on purpose (non-UTF-8
//! text is refused by `codectx_parser::read_source` before anything parses it).
//!
//! The first byte of an input picks the file's dialect, so one corpus covers `.ts`, `.tsx`,
//! `.js` and `.jsx`.

#[cfg(feature = "answers")]
mod answers;
#[cfg(feature = "mcp")]
mod mcp;
mod seeds;
#[cfg(feature = "answers")]
pub use answers::{project, symbol_query};
#[cfg(feature = "mcp")]
pub use mcp::mcp_request;
pub use seeds::{Seed, seeds};

/// The fuzz targets, by name: the seed and artifact directories are named after them.
pub const TARGETS: [&str; 5] = ["chunks", "facts", "project", "symbol_query", "mcp_request"];

/// The cargo feature each target needs beyond the parser, chunker and graph, if any.
pub fn feature(target: &str) -> Option<&'static str> {
    match target {
        "project" | "symbol_query" => Some("answers"),
        "mcp_request" => Some("mcp"),
        _ => None,
    }
}

/// Runs target `name` on `data`; `false` for an unknown target or one this build lacks.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "chunks" => chunks(data),
        "facts" => facts(data),
        #[cfg(feature = "answers")]
        "project" => project(data),
        #[cfg(feature = "answers")]
        "symbol_query" => symbol_query(data),
        #[cfg(feature = "mcp")]
        "mcp_request" => mcp_request(data),
        _ => return false,
    }
    true
}

pub(crate) const DIALECTS: [&str; 4] = ["ts", "tsx", "js", "jsx"];

/// (file name, source) of an input: its first byte picks the dialect.
pub(crate) fn source_file(data: &[u8]) -> Option<(String, &str)> {
    let (&selector, text) = data.split_first()?;
    let source = std::str::from_utf8(text).ok()?;
    let ext = DIALECTS[selector as usize % DIALECTS.len()];
    Some((format!("src/input.{ext}"), source))
}

/// Source → parse → chunks: the blueprint's ten global chunking rules hold on every file
/// (`codectx_chunker::validate`), whatever oxc recovered from it.
pub fn chunks(data: &[u8]) {
    let Some((path, source)) = source_file(data) else {
        return;
    };
    let report = codectx_chunker::validate::check_file(&path, source);
    assert!(
        report.violations.is_empty(),
        "chunking rules broken on {path}: {:#?}",
        report.violations
    );
}

/// Source → graph facts: every index inside the facts points at something, every line is in
/// the file, and the facts survive the encoding the store keeps them in.
pub fn facts(data: &[u8]) {
    let Some((path, source)) = source_file(data) else {
        return;
    };
    // The parser's symbols, by number: where each declares its name.
    let (facts, declared_at) = codectx_parser::parse_with(&path, source, |parsed, program| {
        let declared_at: Vec<Option<u32>> = parsed.walk().map(|s| s.declared_at).collect();
        (
            codectx_graph::facts::facts_of(&parsed, program),
            declared_at,
        )
    });
    let decls = facts.decls.len() as u32;
    let lines = facts.line_count.max(1);
    for d in &facts.decls {
        assert!(
            1 <= d.start_line && d.start_line <= d.end_line && d.end_line <= lines,
            "{} spans lines {}-{} of {lines}",
            d.name,
            d.start_line,
            d.end_line
        );
        assert!(
            d.span.0 <= d.span.1 && d.span.1 as usize <= source.len(),
            "{} spans bytes {:?} of {}",
            d.name,
            d.span,
            source.len()
        );
        if let Some(symbol) = d.symbol {
            let at = declared_at.get(symbol as usize).copied().flatten();
            assert!(
                at.is_some_and(|at| d.span.0 <= at && at < d.span.1),
                "{} names parser symbol {symbol}, declared at {at:?}, outside {:?}",
                d.name,
                d.span
            );
        }
        for i in d.container.iter().chain(&d.owner).chain(&d.members) {
            assert!(
                *i < decls,
                "{} points at declaration {i} of {decls}",
                d.name
            );
        }
    }
    for call in &facts.calls {
        assert!(call.caller.is_none_or(|c| c < decls), "caller out of range");
    }
    let back =
        codectx_graph::facts::FileFacts::decode(&facts.encode()).expect("stored facts read back");
    assert_eq!(back, facts, "facts change through the store's encoding");
}
