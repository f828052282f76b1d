//! Two `mcp-server serve` processes and a CLI `index` on one index while files change: every
//! answer sees every edit (no lost update), and the index ends equal to a clean build.

mod common;

use std::path::Path;
use std::process::Command;

use common::Session;

fn cli(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(args)
        .env("HOME", home)
        .env("RUST_LOG", "warn")
        .output()
        .expect("mcp-server runs")
}

fn status(home: &Path, root: &str) -> serde_json::Value {
    let out = cli(
        home,
        &["status", "--root", root, "--embedder", "none", "--json"],
    );
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn two_servers_and_a_cli_index_share_an_index_while_files_change() {
    let home = tempfile::tempdir().unwrap();
    let repo = common::auth_repo();
    let root = repo.path().to_str().unwrap().to_string();
    let args = ["--root", root.as_str(), "--embedder", "none", "serve"];
    let mut first = Session::start(home.path(), &args, &[]);
    let mut second = Session::start(home.path(), &args, &[]);

    for i in 0..8 {
        std::fs::write(
            repo.path().join(format!("src/added{i}.ts")),
            format!(
                "export function addedFunction{i}(n: number): number {{\n  return n + {i};\n}}\n"
            ),
        )
        .unwrap();
        // A CLI index races the servers' own syncs for the write lock.
        let (home_path, cli_root) = (home.path().to_path_buf(), root.clone());
        let indexer = std::thread::spawn(move || {
            cli(
                &home_path,
                &["index", "--root", &cli_root, "--embedder", "none"],
            )
        });
        for session in [&mut first, &mut second] {
            let found = session.call(
                "codebase_search",
                serde_json::json!({"query": format!("symbol = addedFunction{i}")}),
            );
            let names: Vec<&str> = found["results"]
                .as_array()
                .map(|r| r.iter().filter_map(|r| r["name"].as_str()).collect())
                .unwrap_or_default();
            assert_eq!(names, [format!("addedFunction{i}")], "edit {i}: {found}");
        }
        let indexed = indexer.join().unwrap();
        assert!(indexed.status.success(), "edit {i}: {indexed:?}");
    }
    drop((first, second));

    // The shared index equals a clean build of the same files.
    let shared = status(home.path(), &root);
    let clean_repo = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(repo.path(), clean_repo.path());
    std::fs::remove_dir_all(clean_repo.path().join(".codectx")).unwrap();
    let clean_root = clean_repo.path().to_str().unwrap();
    assert!(
        cli(
            home.path(),
            &["index", "--root", clean_root, "--embedder", "none"]
        )
        .status
        .success()
    );
    let clean = status(home.path(), clean_root);
    assert_eq!(
        (&shared["files"], &shared["chunks"]),
        (&clean["files"], &clean["chunks"])
    );
}
