//! `serve` watches the files: answers skip the per-call sync while the watcher has seen no
//! change, and still reflect a file written, edited, moved or removed between two calls.

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

/// Asks until `done` holds for the answer and returns the last answer. On Linux the first
/// answer must hold: an answer reads the watch's queue before it decides whether to sync,
/// so it sees every change made before the call. Elsewhere the watcher's events arrive on
/// their own thread; it asks for at most ten seconds.
fn ask_until(s: &mut Session, name: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let started = Instant::now();
    let patience = if cfg!(target_os = "linux") {
        Duration::ZERO
    } else {
        Duration::from_secs(10)
    };
    loop {
        let files = found(s, name);
        if done(&files) || started.elapsed() >= patience {
            return files;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mcp-server serve` on `root`, lexical, with `flags`.
fn serve(home: &std::path::Path, root: &str, flags: &[&str]) -> Session {
    let args = [&["--root", root, "--embedder", "none", "serve"], flags].concat();
    Session::start(home, &args, &[])
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const REFUND_ORDER: &str =
    "export function refundOrder(id: string): boolean {\n  return id.length > 0;\n}\n";

/// The default `serve`: a file written, edited or removed, in a new directory or a renamed
/// one, is in the very next answer.
#[test]
fn a_watched_server_answers_from_the_files_as_they_are() {
    let home = tempfile::tempdir().unwrap();
    let repo = common::auth_repo();
    let root = repo.path().to_str().unwrap();
    let mut s = serve(home.path(), root, &[]);
    assert_eq!(found(&mut s, "validateToken"), ["src/auth/tokenService.ts"]);
    assert!(found(&mut s, "refundOrder").is_empty());

    // A new file in a new directory.
    let refunds = repo.path().join("src/billing/refunds.ts");
    write(&refunds, REFUND_ORDER);
    let files = ask_until(&mut s, "refundOrder", |f| !f.is_empty());
    assert_eq!(files, ["src/billing/refunds.ts"]);

    // An edit that renames it, inside the directory the watch has just taken in.
    write(
        &refunds,
        &REFUND_ORDER.replace("refundOrder", "refundPayment"),
    );
    let files = ask_until(&mut s, "refundOrder", |f| f.is_empty());
    assert!(files.is_empty(), "{files:?}");
    assert_eq!(found(&mut s, "refundPayment"), ["src/billing/refunds.ts"]);

    // The directory renamed, then a file of it edited under its new name.
    let payments = repo.path().join("src/payments");
    std::fs::rename(repo.path().join("src/billing"), &payments).unwrap();
    let files = ask_until(&mut s, "refundPayment", |f| {
        f == ["src/payments/refunds.ts"]
    });
    assert_eq!(files, ["src/payments/refunds.ts"]);
    write(&payments.join("refunds.ts"), REFUND_ORDER);
    let files = ask_until(&mut s, "refundOrder", |f| !f.is_empty());
    assert_eq!(files, ["src/payments/refunds.ts"]);

    // A new file in a directory the watch has had all along (a sync of that directory
    // alone).
    write(
        &repo.path().join("src/auth/refunds.ts"),
        &REFUND_ORDER.replace("refundOrder", "refundSession"),
    );
    let files = ask_until(&mut s, "refundSession", |f| !f.is_empty());
    assert_eq!(files, ["src/auth/refunds.ts"]);

    // A removal.
    std::fs::remove_file(payments.join("refunds.ts")).unwrap();
    let files = ask_until(&mut s, "refundOrder", |f| f.is_empty());
    assert!(files.is_empty(), "{files:?}");
    // The rest of the project is still there.
    assert_eq!(found(&mut s, "validateToken"), ["src/auth/tokenService.ts"]);
}

/// `--no-watch` syncs before every answer instead.
#[test]
fn an_unwatched_server_syncs_before_each_answer() {
    let home = tempfile::tempdir().unwrap();
    let repo = common::auth_repo();
    let root = repo.path().to_str().unwrap();
    let mut s = serve(home.path(), root, &["--no-watch"]);
    assert!(found(&mut s, "refundOrder").is_empty());
    write(&repo.path().join("src/billing/refunds.ts"), REFUND_ORDER);
    assert_eq!(found(&mut s, "refundOrder"), ["src/billing/refunds.ts"]);
}

/// A commit moves the history without changing a file: the watch sees HEAD's reflog grow,
/// and the next answer searches the commit's note.
#[test]
fn a_commit_reaches_a_watched_server() {
    let home = tempfile::tempdir().unwrap();
    let repo_dir = common::auth_repo();
    let mut repo = codectx_corpus::GitRepo::init(repo_dir.path());
    repo.commit("first");
    let root = repo_dir.path().to_str().unwrap();
    // Indexed first, so the history is read before the server starts (a server that
    // builds the index reads it in the background, and would race the commit below).
    let indexed = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(["--root", root, "--embedder", "none", "index"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(indexed.status.success(), "{indexed:?}");
    let mut s = serve(home.path(), root, &[]);
    let named = |s: &mut Session| -> Vec<String> {
        let content = s.call("codebase_search", json!({"query": "zebracorn"}));
        content["results"]
            .as_array()
            .map(|r| {
                r.iter()
                    .filter_map(|r| r["name"].as_str())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(named(&mut s).is_empty());
    let service = repo_dir.path().join("src/auth/tokenService.ts");
    let text = std::fs::read_to_string(&service).unwrap();
    std::fs::write(&service, text.replace("return", "return /* checked */")).unwrap();
    assert!(named(&mut s).is_empty(), "the edit alone");
    repo.commit("zebracorn checks");
    let started = Instant::now();
    let mut names = named(&mut s);
    while names.is_empty() && !cfg!(target_os = "linux") && started.elapsed().as_secs() < 10 {
        std::thread::sleep(Duration::from_millis(50));
        names = named(&mut s);
    }
    assert!(!names.is_empty(), "the commit's note is searched");
}
