//! Data-driven runner for `fixtures/snapshot/`: each case of `cases.json` names a file and
//! its targets by breadcrumb (as the chunker writes them, without the file). The smart
//! snapshot of those chunks is checked for the blueprint's gate (it parses without errors,
//! every line at most once, header first, every target in full) and snapshotted.

use std::path::PathBuf;

use codectx_chunker::CodeChunk;
use codectx_parser::LineRange;
use codectx_snapshot::{SkeletonCache, file_skeleton, smart_snapshot};

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    file: String,
    targets: Vec<String>,
}

fn fixtures() -> PathBuf {
    codectx_corpus::fixture("snapshot")
}

/// Syntax errors oxc reports for `text` parsed as `path`.
fn syntax_errors(path: &str, text: &str) -> Vec<String> {
    let allocator = oxc_allocator::Allocator::default();
    let ret =
        oxc_parser::Parser::new(&allocator, text, codectx_parser::source_type_for(path)).parse();
    ret.diagnostics.iter().map(|e| e.to_string()).collect()
}

fn snapshot_case(case: &Case) -> String {
    let source = std::fs::read_to_string(fixtures().join(&case.file)).unwrap();
    let file = codectx_snapshot::SnapshotFile::parse(&case.file, &source);
    let parsed = file.parsed();
    let chunks = codectx_chunker::chunk_file(parsed, &source, &case.file);
    let targets: Vec<&CodeChunk> = case
        .targets
        .iter()
        .map(|t| {
            let crumb = format!("{} > {t}", case.file);
            chunks
                .iter()
                .find(|c| c.breadcrumb == crumb)
                .unwrap_or_else(|| {
                    let all: Vec<_> = chunks.iter().map(|c| &c.breadcrumb).collect();
                    panic!("{}: no chunk {crumb:?}; chunks: {all:#?}", case.name)
                })
        })
        .collect();
    let ranges: Vec<LineRange> = targets
        .iter()
        .map(|c| LineRange {
            start: c.start_line,
            end: c.end_line,
        })
        .collect();
    let snapshot = smart_snapshot(&file, &source, &ranges).unwrap();

    let errors = syntax_errors(&case.file, &snapshot.text);
    assert!(
        errors.is_empty(),
        "{}: snapshot does not parse: {errors:?}\n{}",
        case.name,
        snapshot.text
    );
    assert!(snapshot.text.starts_with(&format!("// {}\n\n", case.file)));
    assert!(
        snapshot.lines.windows(2).all(|w| w[0] < w[1]),
        "{}: a line twice",
        case.name
    );
    for t in &targets {
        assert!(
            (t.start_line..=t.end_line).all(|l| snapshot.lines.contains(&l)),
            "{}: target {} not in full",
            case.name,
            t.breadcrumb
        );
    }
    snapshot.text
}

#[test]
fn blueprint_snapshot_cases() {
    let cases: Vec<Case> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("cases.json")).unwrap())
            .unwrap();
    for case in &cases {
        let text = snapshot_case(case);
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_suffix(case.name.clone());
        settings.set_description(format!("{} → {:?}", case.file, case.targets));
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_snapshot!(text));
    }
}

/// The parse gate on every symbol of every fixture, not only the chosen targets.
#[test]
fn every_fixture_symbol_snapshot_parses() {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if codectx_parser::Language::from_path(&path).is_none() {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        let file = codectx_snapshot::SnapshotFile::parse(&name, &source);
        for sym in file.parsed().walk() {
            let snapshot = smart_snapshot(&file, &source, &[sym.range]).unwrap();
            let errors = syntax_errors(&name, &snapshot.text);
            assert!(
                errors.is_empty(),
                "{name} > {}: {errors:?}\n{}",
                sym.name,
                snapshot.text
            );
        }
    }
}

#[test]
fn unknown_target_is_an_error_not_a_panic() {
    let source = "const a = 1;\n";
    let file = codectx_snapshot::SnapshotFile::parse("a.ts", source);
    let err = smart_snapshot(&file, source, &[LineRange { start: 5, end: 9 }]).unwrap_err();
    assert_eq!(err.to_string(), "a.ts: no symbol spans lines 5-9");
}

#[test]
fn skeletons() {
    for file in [
        "single-method.ts",
        "object-literal.ts",
        "component.tsx",
        "commonjs.cjs",
    ] {
        let source = std::fs::read_to_string(fixtures().join(file)).unwrap();
        let parsed = codectx_parser::parse_source(file, &source);
        let skeleton = file_skeleton(&parsed, &source);
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_suffix(file);
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_snapshot!(skeleton.text));
    }
}

#[test]
fn skeleton_cache_parses_an_unchanged_file_once() {
    let cache = SkeletonCache::new(8);
    let source = std::fs::read_to_string(fixtures().join("single-method.ts")).unwrap();
    let first = cache.get("single-method.ts", &source);
    let second = cache.get("single-method.ts", &source);
    assert!(std::sync::Arc::ptr_eq(&first, &second));
    assert_eq!((cache.stats().parses, cache.stats().hits), (1, 1));
    let edited = source.replace("TOKEN_EXPIRY = 3600", "TOKEN_EXPIRY = 60");
    let third = cache.get("single-method.ts", &edited);
    assert!(third.text.contains("TOKEN_EXPIRY = 60"));
    assert_eq!((cache.stats().parses, cache.stats().hits), (2, 1));
}
