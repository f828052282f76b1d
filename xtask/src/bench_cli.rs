//! `cargo xtask bench cli`: the `mcp-server` binary timed the way a user runs it — whole
//! processes, from exec to exit, with each process's own peak RSS (from `wait4`).
//!
//! Figures: cold structural `index` (a fresh index directory each run), no-change `index`,
//! and one `search` (CLI, lexical: `--embedder none`). Medians over `runs`. The index lives
//! in a temporary directory (through a configuration file), so the tree is never written.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One finished process: wall time, peak resident memory, and what it printed when its
/// standard output was piped.
pub(crate) struct Run {
    pub millis: f64,
    pub peak_rss_mb: f64,
    pub stdout: String,
}

pub fn bench(root: &Path, runs: usize, query: &str, binary: Option<PathBuf>) -> anyhow::Result<()> {
    // The figures are the binary's: a debug one is only worth a warning when it is ours.
    if cfg!(debug_assertions) && binary.is_none() {
        println!("warning: debug build; run `cargo xtask-release bench cli …` for real figures");
    }
    let binary = crate::mcp_server_binary(binary)?;
    let root = root.canonicalize()?;
    let work = tempfile::tempdir()?;
    let config = work.path().join("config.toml");
    let index = work.path().join("index");
    std::fs::write(
        &config,
        format!("[index]\ndir = {:?}\n", index.to_string_lossy()),
    )?;
    let runs = runs.max(1);
    let mcp_server = |args: &[&str]| -> anyhow::Result<Run> {
        let mut command = Command::new(&binary);
        command
            .args(["--root"])
            .arg(&root)
            .arg("--config")
            .arg(&config)
            .args(["--embedder", "none"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        run(command)
    };

    let mut cold = Vec::new();
    for _ in 0..runs {
        let _ = std::fs::remove_dir_all(&index);
        cold.push(mcp_server(&["index", "--no-embed"])?);
    }
    report("cold structural `index`", &mut cold);
    let mut unchanged = Vec::new();
    for _ in 0..runs {
        unchanged.push(mcp_server(&["index", "--no-embed"])?);
    }
    report("no-change `index`", &mut unchanged);
    let mut search = Vec::new();
    for _ in 0..runs {
        search.push(mcp_server(&["search", query])?);
    }
    report(&format!("one `search {query:?}`"), &mut search);
    Ok(())
}

/// Runs `command` to completion; an error when it fails. A piped standard output is
/// read after the exit (the caller pipes only short reports, which fit the pipe).
pub(crate) fn run(mut command: Command) -> anyhow::Result<Run> {
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value, and wait4 writes it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child and nothing else waits for it (dropping a `Child` neither
    // waits nor kills). std's `wait` does not report the child's resource usage.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let millis = started.elapsed().as_secs_f64() * 1e3;
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        std::io::Read::read_to_string(&mut out, &mut stdout)?;
    }
    drop(child);
    anyhow::ensure!(
        waited == pid,
        "wait4 failed: {}",
        std::io::Error::last_os_error()
    );
    anyhow::ensure!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{command:?} failed (status {status})"
    );
    Ok(Run {
        millis,
        // Linux reports ru_maxrss in kilobytes.
        peak_rss_mb: usage.ru_maxrss as f64 / 1024.0,
        stdout,
    })
}

fn report(label: &str, runs: &mut [Run]) {
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let mut millis: Vec<f64> = runs.iter().map(|r| r.millis).collect();
    let mut rss: Vec<f64> = runs.iter().map(|r| r.peak_rss_mb).collect();
    let (min, max) = (
        millis.iter().copied().fold(f64::INFINITY, f64::min),
        millis.iter().copied().fold(0.0, f64::max),
    );
    println!(
        "{label:<48} median {:>8.1} ms  (min {min:.1}, max {max:.1}, n={})  peak RSS median {:.0} MB",
        median(&mut millis),
        runs.len(),
        median(&mut rss)
    );
}
