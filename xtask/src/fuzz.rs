//! `cargo xtask fuzz`: runs the fuzz targets of `crates/fuzz/targets` (cargo-fuzz and
//! libFuzzer, on the nightly toolchain).
//!
//! The fuzzer starts from seeds built from `fixtures/` (`target/fuzz-seeds/<target>`) and
//! keeps what it finds in `target/fuzz-corpus/<target>`, both outside the checkout. Only crash
//! reproducers (`crates/fuzz/targets/artifacts/<target>`) are checked in;
//! `cargo test -p codectx-fuzz` replays them and the seeds.

use std::path::{Path, PathBuf};
use std::process::Command;

const FUZZ_DIR: &str = "crates/fuzz/targets";

/// Writes the seed inputs of `target` (built from `fixtures/` by [`codectx_fuzz::seeds`])
/// afresh into `target/fuzz-seeds/<target>`.
fn write_seeds(workspace: &Path, target: &str) -> anyhow::Result<PathBuf> {
    let dir = workspace.join("target/fuzz-seeds").join(target);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    for seed in codectx_fuzz::seeds(&workspace.join("fixtures"))? {
        if seed.target == target {
            std::fs::write(dir.join(&seed.name), &seed.data)?;
        }
    }
    Ok(dir)
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
        let seeds = write_seeds(workspace, target)?;
        println!("fuzzing {target} for {seconds} s");
        let output = Command::new("cargo")
            .current_dir(workspace)
            .args(["+nightly", "fuzz", "run", "--fuzz-dir", FUZZ_DIR])
            .args(codectx_fuzz::feature(target).map(|f| format!("--features={f}")))
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
            .rfind(|l| l.starts_with('#') && l.contains("cov:"))
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
