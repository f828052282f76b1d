//! Bad input gets a clear error or a best-effort tree; never a panic.

use codectx_parser::{ParseError, ParseStatus, SymbolKind, parse_source, read_source};

fn temp_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn binary_non_utf8_and_unsupported_files_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let binary = temp_file(&dir, "image.ts", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let err = read_source(&binary).unwrap_err();
    assert!(matches!(err, ParseError::Binary { .. }));
    assert!(err.to_string().contains("image.ts"), "{err}");

    let latin1 = temp_file(&dir, "latin1.js", b"const caf\xe9 = 1;\n");
    let err = read_source(&latin1).unwrap_err();
    assert!(
        matches!(err, ParseError::NotUtf8 { offset: 9, .. }),
        "{err}"
    );

    let md = temp_file(&dir, "notes.md", b"# hi\n");
    assert!(matches!(
        read_source(&md).unwrap_err(),
        ParseError::UnsupportedExtension { .. }
    ));

    let missing = std::env::temp_dir().join("codectx-definitely-missing.ts");
    assert!(matches!(
        read_source(&missing).unwrap_err(),
        ParseError::Io { .. }
    ));
}

#[test]
fn minified_one_line_file_is_one_root_item() {
    let body: String = (0..20_000)
        .map(|i| format!("function f{i}(a){{return a+{i}}}var v{i}=f{i}({i});"))
        .collect();
    let parsed = parse_source("bundle.min.js", &body);
    assert_eq!(parsed.status, ParseStatus::Clean);
    assert_eq!(
        parsed.symbols.len(),
        1,
        "statements sharing the one line merge into one item"
    );
    assert_eq!(parsed.symbols[0].range.start, 1);
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    let depth = 400;
    let mut src = String::from("export function outer() {\n");
    for i in 0..depth {
        // No indentation: nesting, not size (bodies over 128 KiB are itemized by design).
        src.push_str(&format!("run{i}(() => {{\n"));
    }
    for _ in 0..depth {
        src.push_str("});\n");
    }
    src.push_str("}\n");
    let parsed = parse_source("deep.ts", &src);
    let max_depth = parsed.walk().map(|s| s.depth).max().unwrap();
    assert_eq!(max_depth, depth as u32);
}

#[test]
fn garbage_text_never_panics() {
    for text in [
        "}}}}",
        "class {",
        "export default",
        "/* unterminated",
        "`${",
        "<div>",
        "\u{feff}",
        "\r\n\r\n",
        "import",
        "a\u{2028}b",
    ] {
        for ext in ["ts", "tsx", "js", "cjs"] {
            let parsed = parse_source(&format!("x.{ext}"), text);
            for sym in parsed.walk() {
                assert!(
                    sym.range.start >= 1 && sym.range.start <= sym.range.end,
                    "{text:?}.{ext}: {sym:?}"
                );
            }
        }
    }
    let parsed = parse_source("x.ts", "/* unterminated");
    assert!(
        parsed.status == ParseStatus::Failed
            || parsed
                .symbols
                .iter()
                .all(|s| s.kind != SymbolKind::Function)
    );
}

/// oxc 0.146 asserts (in debug builds) on a pure annotation that a line comment follows
/// inside parentheses. Whatever oxc does on such text, a parse returns: the file's lines
/// stay one best-effort tree and the caller's sync goes on.
#[test]
fn a_parser_panic_is_a_failed_parse_not_a_crash() {
    let text =
        "export function make() {\n  return (\n    /*#__PURE__*/\n    // why\n    0\n  );\n}\n";
    let parsed = parse_source("pure.js", text);
    assert!(!parsed.symbols.is_empty(), "{parsed:?}");
    assert!(
        parsed
            .walk()
            .all(|s| s.range.start >= 1 && s.range.end <= 7),
        "{parsed:?}"
    );
}

/// The validator's fresh parse of the same text returns too: no statements where oxc
/// failed, else the one function.
#[test]
fn the_validators_fresh_parse_survives_a_parser_panic() {
    let text =
        "export function make() {\n  return (\n    /*#__PURE__*/\n    // why\n    0\n  );\n}\n";
    let spans = codectx_parser::top_level_statements("pure.js", text);
    assert!(spans.as_ref().is_none_or(|s| s.len() == 1), "{spans:?}");
    let spans = codectx_parser::top_level_statements("a.js", "'use strict';\n// c\nf();\ng();\n");
    let spans: Vec<(u32, u32)> = spans.unwrap().iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(spans, [(0, 13), (19, 23), (24, 28)]);
}
