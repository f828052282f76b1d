//! What reading a repository's history costs: a cold (full) read and an incremental read of
//! the commits after `--since`, each timed over several runs.
//!
//! ```text
//! cargo run --release -p codectx-history --example history_cost -- --root <checkout> \
//!     [--since <commit>] [--max-commits 5000] [--max-age-days 1095] [--runs 3]
//! ```
//!
//! Build in release: a debug build measures the compiler, not the walk.

use std::path::PathBuf;
use std::time::Instant;

use codectx_history::{HistoryOptions, read_history};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut root = PathBuf::from(".");
    let mut since: Option<String> = None;
    let mut options = HistoryOptions::default();
    let mut runs = 3usize;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--root" => root = value.into(),
            "--since" => since = Some(value),
            "--max-commits" => options.max_commits = value.parse()?,
            "--max-age-days" => options.max_age_days = value.parse()?,
            "--max-files-per-commit" => options.max_files_per_commit = value.parse()?,
            "--runs" => runs = value.parse()?,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    let mut reads = vec![("cold", None)];
    if let Some(since) = since {
        reads.push(("incremental", Some(since)));
    }
    for (what, since) in reads {
        let mut seconds = Vec::new();
        let mut last = None;
        for _ in 0..runs.max(1) {
            let started = Instant::now();
            let read = read_history(&root, since.as_deref(), &options)?;
            seconds.push(started.elapsed().as_secs_f64());
            last = Some(read);
        }
        seconds.sort_by(f64::total_cmp);
        let read = last.expect("at least one run");
        let symbols: std::collections::HashSet<_> = read
            .notes
            .iter()
            .map(|n| (&n.file, &n.qualified_name))
            .collect();
        println!(
            "{what}: median {:.2} s of {} runs ({:?}); {} commits walked, {} skipped (merges, sweeps), {} notes on {} symbols{}",
            seconds[seconds.len() / 2],
            seconds.len(),
            seconds
                .iter()
                .map(|s| format!("{s:.2}"))
                .collect::<Vec<_>>(),
            read.commits_read,
            read.commits_skipped,
            read.notes.len(),
            symbols.len(),
            if read.full && what == "incremental" {
                " (fell back to a full read)"
            } else {
                ""
            },
        );
    }
    Ok(())
}
