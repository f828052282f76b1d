//! `cargo xtask fuzz`: runs the fuzz targets of `crates/fuzz/targets` (cargo-fuzz and
//! libFuzzer, on the nightly toolchain) and writes their seed corpus from the fixtures.
//!
//! New inputs the fuzzer finds go to `target/fuzz-corpus/<target>`, outside the checkout;
//! only the seeds and crash reproducers (`crates/fuzz/targets/artifacts/<target>`) are
//! checked in, and `cargo test -p codectx-fuzz` replays both.

use std::path::{Path, PathBuf};
use std::process::Command;

const FUZZ_DIR: &str = "crates/fuzz/targets";

/// The dialect byte `codectx_fuzz` reads first: 0 ts, 1 tsx, 2 js, 3 jsx.
fn dialect(path: &Path) -> Option<u8> {
    match path.extension()?.to_str()? {
        "ts" | "mts" | "cts" => Some(0),
        "tsx" => Some(1),
        "js" | "mjs" | "cjs" => Some(2),
        "jsx" => Some(3),
        _ => None,
    }
}

/// Writes the seed corpus of every target from `fixtures/`: each source file for the
/// single-file targets, the first two files of each fixture directory for `project`, and
/// lookups of the auth fixture's names for `symbol_query`.
pub fn seed(workspace: &Path) -> anyhow::Result<()> {
    let corpus = workspace.join(FUZZ_DIR).join("corpus");
    let mut by_dir: std::collections::BTreeMap<PathBuf, Vec<PathBuf>> = Default::default();
    let mut files = 0;
    for entry in walk(&workspace.join("fixtures"))? {
        let Some(selector) = dialect(&entry) else {
            continue;
        };
        let mut data = vec![selector];
        data.extend(std::fs::read(&entry)?);
        let relative = entry
            .strip_prefix(workspace)?
            .to_string_lossy()
            .replace('/', "__");
        for target in ["chunks", "facts"] {
            write(&corpus.join(target), &relative, &data)?;
        }
        by_dir
            .entry(entry.parent().unwrap_or(workspace).to_path_buf())
            .or_default()
            .push(entry);
        files += 1;
    }
    for (dir, paths) in &by_dir {
        let mut data = vec![dialect(&paths[0]).unwrap_or(0)];
        data.extend(std::fs::read(&paths[0])?);
        if let Some(second) = paths.get(1) {
            data.push(0);
            data.extend(std::fs::read(second)?);
        }
        let relative = dir
            .strip_prefix(workspace)?
            .to_string_lossy()
            .replace('/', "__");
        write(&corpus.join("project"), &relative, &data)?;
    }
    let queries = [
        "symbol = TokenService > validateToken",
        "symbol = src/auth/tokenService.ts > validate",
        "symbol = validate",
        "symbol = AuthConfig > getSecret",
        "symbol = src/config/",
        "symbol = > >",
        "symbol = ../../etc/passwd > x",
        "symbol = /etc/passwd",
        "where are JWT tokens validated",
        "",
    ];
    for (i, q) in queries.iter().enumerate() {
        write(
            &corpus.join("symbol_query"),
            &format!("query-{i:02}"),
            q.as_bytes(),
        )?;
    }
    println!(
        "seeded {} from {files} fixture files and {} directories",
        corpus.display(),
        by_dir.len()
    );
    Ok(())
}

fn write(dir: &Path, name: &str, data: &[u8]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(name), data)?;
    Ok(())
}

/// Regular files under `dir`, sorted, not following symlinks.
fn walk(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Runs each target for `minutes` with libFuzzer and prints its last status line
/// (executions, coverage, corpus). Stops at the first target that crashes.
pub fn run(workspace: &Path, targets: &[String], minutes: f64) -> anyhow::Result<()> {
    let seconds = (minutes * 60.0).round().max(1.0) as u64;
    for target in targets {
        anyhow::ensure!(
            codectx_fuzz::TARGETS.contains(&target.as_str()),
            "unknown fuzz target {target:?} (targets: {})",
            codectx_fuzz::TARGETS.join(", ")
        );
        let work = workspace.join("target/fuzz-corpus").join(target);
        std::fs::create_dir_all(&work)?;
        let seeds = workspace.join(FUZZ_DIR).join("corpus").join(target);
        println!("fuzzing {target} for {seconds} s");
        let output = Command::new("cargo")
            .current_dir(workspace)
            .args(["+nightly", "fuzz", "run", "--fuzz-dir", FUZZ_DIR])
            .args(
                codectx_fuzz::ANSWER_TARGETS
                    .contains(&target.as_str())
                    .then_some("--features=answers"),
            )
            .arg(target)
            .arg(&work)
            .arg(&seeds)
            .args([
                "--",
                &format!("-max_total_time={seconds}"),
                "-max_len=65536",
                "-timeout=20",
                "-rss_limit_mb=4096",
                "-print_final_stats=1",
            ])
            .output()?;
        let log = String::from_utf8_lossy(&output.stderr);
        let status = log
            .lines()
            .filter(|l| l.starts_with('#') && l.contains("cov:"))
            .next_back()
            .unwrap_or("(no status line)");
        println!("  {status}");
        for line in log.lines().filter(|l| l.starts_with("stat::")) {
            println!("  {line}");
        }
        if !output.status.success() {
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            for line in tail.into_iter().rev() {
                eprintln!("  | {line}");
            }
            anyhow::bail!(
                "{target} failed; its reproducer is in {FUZZ_DIR}/artifacts/{target}/ \
                 (cargo test -p codectx-fuzz replays it)"
            );
        }
    }
    Ok(())
}
