//! `serve --watch`: answers skip the per-call sync while the watcher has seen no change, and
//! still reflect a file written, edited or removed between two calls.

use std::time::{Duration, Instant};

use serde_json::json;

mod common;

use common::Session;

/// The files of the results named `name` in the answer to `symbol = name`.
fn found(s: &mut Session, name: &str) -> Vec<String> {
    let content = s.call(
        "codebase_search",
        json!({"query": format!("symbol = {name}")}),
    );
    content["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter(|r| {
                    // Results name a method with its class (`TokenService.validateToken`).
                    r["name"].as_str().and_then(|n| n.rsplit('.').next()) == Some(name)
                })
                .map(|r| r["file"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Asks until `done` holds for the answer, for at most ten seconds (the watcher's events
/// arrive on their own thread), and returns the last answer.
fn ask_until(
    s: &mut Session,
    name: &str,
    done: impl Fn(&[String]) -> bool,
) -> (Vec<String>, Duration) {
    let started = Instant::now();
    loop {
        let files = found(s, name);
        if done(&files) || started.elapsed() > Duration::from_secs(10) {
            return (files, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_watched_server_answers_from_the_files_as_they_are() {
    let home = tempfile::tempdir().unwrap();
    let repo = common::auth_repo();
    let root = repo.path().to_str().unwrap();
    let mut s = Session::start(
        home.path(),
        &["--root", root, "--embedder", "none", "serve", "--watch"],
        &[],
    );
    assert_eq!(found(&mut s, "validateToken"), ["src/auth/tokenService.ts"]);
    assert!(found(&mut s, "refundOrder").is_empty());

    // A new file.
    let refunds = repo.path().join("src/billing/refunds.ts");
    std::fs::create_dir_all(refunds.parent().unwrap()).unwrap();
    std::fs::write(
        &refunds,
        "export function refundOrder(id: string): boolean {\n  return id.length > 0;\n}\n",
    )
    .unwrap();
    let (files, waited) = ask_until(&mut s, "refundOrder", |f| !f.is_empty());
    assert_eq!(files, ["src/billing/refunds.ts"], "after {waited:?}");

    // An edit that renames it.
    std::fs::write(
        &refunds,
        "export function refundPayment(id: string): boolean {\n  return id.length > 0;\n}\n",
    )
    .unwrap();
    let (files, waited) = ask_until(&mut s, "refundOrder", |f| f.is_empty());
    assert!(files.is_empty(), "after {waited:?}: {files:?}");
    assert_eq!(found(&mut s, "refundPayment"), ["src/billing/refunds.ts"]);

    // A removal.
    std::fs::remove_file(&refunds).unwrap();
    let (files, waited) = ask_until(&mut s, "refundPayment", |f| f.is_empty());
    assert!(files.is_empty(), "after {waited:?}: {files:?}");
    // The rest of the project is still there.
    assert_eq!(found(&mut s, "validateToken"), ["src/auth/tokenService.ts"]);
}
