//! `mcp-server status` says what was not indexed and why, and what was indexed from a
//! parser's recovery.

use std::process::Command;

fn mcp_server(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(args)
        .args(["--embedder", "none"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("mcp-server runs")
}

#[test]
fn status_counts_skipped_files_by_reason_and_recovered_files() {
    let repo = tempfile::tempdir().unwrap();
    let src = repo.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("ok.ts"), "export function ok() { return 1; }\n").unwrap();
    std::fs::write(
        src.join("broken.ts"),
        "export function broken( {\n  return 2;\n}\nexport const after = 3;\n",
    )
    .unwrap();
    std::fs::write(src.join("vendor.min.js"), "var a=1;").unwrap();
    // A bundle committed beside its source: it names its source map.
    std::fs::write(
        src.join("ok.cjs"),
        "function ok() { return 1; }\nexports.ok = ok;\n//# sourceMappingURL=ok.cjs.map\n",
    )
    .unwrap();
    std::fs::write(src.join("blob.ts"), [0u8, 1, 2]).unwrap();
    std::fs::write(src.join("latin1.ts"), b"export const caf\xe9 = 1;\n").unwrap();
    let root = repo.path().to_str().unwrap();

    let index = mcp_server(&["index", "--root", root]);
    assert!(index.status.success(), "{index:?}");
    let status = mcp_server(&["status", "--root", root, "--json"]);
    assert!(status.status.success(), "{status:?}");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["files"], 6);
    assert_eq!(status["recovered_files"], 1);
    assert_eq!(
        status["skipped_files"],
        serde_json::json!({"minified": 1, "build-output": 1, "binary": 1, "not-utf8": 1})
    );

    let text = mcp_server(&["status", "--root", root]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("skipped 4 files: 1 minified, 1 build-output, 1 binary, 1 not-utf8"),
        "{text}"
    );
}

/// `lookup` takes a bare name or a `symbol = …` query; a name that begins with the letters
/// "symbol" is a name (it used to panic), and a question that does is a question.
#[test]
fn lookup_takes_names_that_begin_with_symbol() {
    let repo = tempfile::tempdir().unwrap();
    let src = repo.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("names.ts"),
        "export function symbolize(text: string) { return Symbol(text); }\n\
         export const SELECTOR = '.symbol';\n",
    )
    .unwrap();
    let root = repo.path().to_str().unwrap();

    let found = mcp_server(&["lookup", "--root", root, "--json", "symbolize"]);
    assert!(found.status.success(), "{found:?}");
    let found: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(found[0]["symbol"]["name"], "symbolize");

    let query = mcp_server(&["lookup", "--root", root, "--json", "symbol = SELECTOR"]);
    assert!(query.status.success(), "{query:?}");
    let query: serde_json::Value = serde_json::from_slice(&query.stdout).unwrap();
    assert_eq!(query[0]["symbol"]["name"], "SELECTOR");

    let missing = mcp_server(&["lookup", "--root", root, "symbolic"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("symbol_not_found"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A question beginning with "symbols" is searched, not looked up.
    let search = mcp_server(&[
        "search",
        "--root",
        root,
        "--json",
        "symbols exported by names",
    ]);
    assert!(search.status.success(), "{search:?}");
    let stdout = String::from_utf8_lossy(&search.stdout);
    assert!(stdout.contains("symbolize"), "{stdout}");
}

/// A tree with nothing to index (empty, or only files of languages not read) answers that
/// nothing is indexed and which languages are read, instead of a LanceDB error.
#[test]
fn a_tree_with_nothing_to_index_answers_plainly() {
    let empty = tempfile::tempdir().unwrap();
    let java_only = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(java_only.path().join("src")).unwrap();
    std::fs::write(
        java_only.path().join("src/Main.java"),
        "class Main { public static void main(String[] a) {} }\n",
    )
    .unwrap();
    std::fs::write(java_only.path().join("pom.xml"), "<project/>\n").unwrap();
    for tree in [empty.path(), java_only.path()] {
        let root = tree.to_str().unwrap();
        let out = mcp_server(&["search", "--root", root, "main function"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.contains(
                "Nothing is indexed: no files of the languages read (typescript, javascript, \
                 rust, python, go)"
            ),
            "{stdout}"
        );
        assert!(!stderr.contains("LanceDB"), "{stderr}");
    }
}
