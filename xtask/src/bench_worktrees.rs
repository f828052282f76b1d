//! `cargo xtask bench worktrees`: one repository's worktrees sharing the vectors a model
//! computed and the history memo (issue 40), timed as a user runs `mcp-server index` in each.
//!
//! The repository is cloned into `--out`. The first-parent history of `--rev` back to
//! `--since` is thinned to `--commits` commits, evenly spaced. By default the clone indexes
//! the newest cold, then a worktree is added at each older commit and indexed once: tasks
//! started late on old commits. With `--main-advances`, the clone indexes the oldest cold
//! and moves forward through the commits, indexing at each, and a worktree is added at each
//! commit it reaches: parallel tasks branching from one main as it goes. Then the clone
//! switches to the commit farthest from it (content a worktree has seen) and back. Each `index` runs in the user's configuration (the
//! default model unless `--embedder` says otherwise), as a whole process: wall time and
//! peak RSS, and what it reports (files parsed, chunks embedded, vectors shared). Last, the
//! disk: one worktree's index and the shared part (`<common git dir>/codectx`) after its
//! cold index, then every worktree's index and the shared part at the end.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bench_cli::{Run, run};
use crate::index::dir_size;

pub struct WorktreesBench<'a> {
    pub repo: &'a Path,
    pub out: &'a Path,
    pub commits: usize,
    pub rev: &'a str,
    pub since: &'a str,
    pub embedder: Option<&'a str>,
    pub binary: Option<PathBuf>,
    /// Tasks branch from main as it moves forward (see the module's comment).
    pub main_advances: bool,
}

pub fn bench(bench: WorktreesBench) -> anyhow::Result<()> {
    // The figures are the binary's: a debug one is only worth a warning when it is ours.
    if cfg!(debug_assertions) && bench.binary.is_none() {
        println!(
            "warning: debug build; run `cargo xtask-release bench worktrees …` for real figures"
        );
    }
    let binary = crate::mcp_server_binary(bench.binary)?;
    let commits = thinned_history(bench.repo, bench.rev, bench.since, bench.commits.max(2))?;
    anyhow::ensure!(
        commits.len() >= 2,
        "{} has fewer than two first-parent commits from {} back to {}",
        bench.repo.display(),
        bench.rev,
        bench.since
    );
    if bench.out.exists() {
        std::fs::remove_dir_all(bench.out)?;
    }
    std::fs::create_dir_all(bench.out)?;
    let main = bench.out.join("main");
    git(
        bench.out,
        &["clone", "-q", &bench.repo.to_string_lossy(), "main"],
    )?;
    // Main's first commit, and the others in the order worktrees are added.
    let mut commits = commits;
    if bench.main_advances {
        commits.reverse();
    }
    let (start, farthest) = (&commits[0], &commits[commits.len() - 1]);
    git(&main, &["checkout", "-q", "--detach", &start.0])?;

    let index = |root: &Path| -> anyhow::Result<Run> {
        let mut command = Command::new(&binary);
        command.arg("--root").arg(root);
        if let Some(embedder) = bench.embedder {
            command.args(["--embedder", embedder]);
        }
        command
            .arg("index")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        run(command)
    };
    let cold = index(&main)?;
    line(&format!("cold, {}", start.1), &cold, None);
    // Where each worktree's index is (its git directory), as the binary decides it.
    let index_dir = |root: &Path| -> anyhow::Result<PathBuf> {
        Ok(codectx_store::default_index_dir(&root.canonicalize()?))
    };
    // Before the branch switches below add versions to it. The main worktree's index lies
    // inside the common directory: the shared part is the rest of it.
    let common = main.join(".git/codectx");
    let one = dir_size(&index_dir(&main)?);
    let one_shared = dir_size(&common) - one;

    let mut ratios = Vec::new();
    let mut trees = vec![main.clone()];
    for (i, (commit, date)) in commits[1..].iter().enumerate() {
        if bench.main_advances {
            git(&main, &["checkout", "-q", "--detach", commit])?;
            let moved = index(&main)?;
            line(&format!("main moved to {date}"), &moved, None);
        }
        let tree = bench.out.join(format!("w{}", i + 1));
        git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                &tree.to_string_lossy(),
                commit,
            ],
        )?;
        let first = index(&tree)?;
        line(&format!("new worktree, {date}"), &first, Some(&cold));
        ratios.push(first.millis / cold.millis);
        trees.push(tree);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "a new worktree's first index: median {:.1}% of the cold index (min {:.1}%, max {:.1}%)",
        100.0 * ratios[ratios.len() / 2],
        100.0 * ratios[0],
        100.0 * ratios[ratios.len() - 1]
    );

    // The commit farthest from where main is now, and back.
    let (now, away) = if bench.main_advances {
        (farthest, start)
    } else {
        (start, farthest)
    };
    git(&main, &["checkout", "-q", "--detach", &away.0])?;
    let switch = index(&main)?;
    line(&format!("main switched to {}", away.1), &switch, None);
    git(&main, &["checkout", "-q", "--detach", &now.0])?;
    let back = index(&main)?;
    line(&format!("main switched back to {}", now.1), &back, None);

    let mb = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let indexes = trees
        .iter()
        .map(|t| index_dir(t))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let all: u64 = indexes.iter().map(|d| dir_size(d)).sum();
    let shared = dir_size(&common) - dir_size(&indexes[0]);
    println!(
        "disk: one worktree's index {:.1} MB and shared part {:.1} MB (after its cold index); {} worktrees' indexes {:.1} MB (the clone's after its switches) and shared vectors, parses and history memo {:.1} MB: {:.2}× one index, {:.2}× one worktree's whole footprint",
        mb(one),
        mb(one_shared),
        trees.len(),
        mb(all),
        mb(shared),
        (all + shared) as f64 / one as f64,
        (all + shared) as f64 / (one + one_shared) as f64
    );
    // Where the bytes lie: main's index by table, the clones, and the shared parts.
    let main_index = &indexes[0];
    let [rows, row_indexes, files] = ["chunks.lance/data", "chunks.lance/_indices", "files.lance"]
        .map(|part| dir_size(&main_index.join(part)));
    let clones: u64 = indexes[1..].iter().map(|d| dir_size(d)).sum();
    let [parses, vectors, memo] =
        ["parsed", "vectors", "history"].map(|d| dir_size(&common.join(d)));
    println!(
        "where: main's chunk rows {:.1} MB, their indexes {:.1} MB, its files table {:.1} MB, the rest of its index {:.1} MB; the {} clones {:.1} MB; shared parses {:.1} MB, vectors {:.1} MB, history memo {:.1} MB",
        mb(rows),
        mb(row_indexes),
        mb(files),
        mb(dir_size(main_index) - rows - row_indexes - files),
        indexes.len() - 1,
        mb(clones),
        mb(parses),
        mb(vectors),
        mb(memo)
    );
    Ok(())
}

/// `(commit, date)` of the first-parent history of `rev` in `repo` since `since` (git's
/// `--since` syntax: "2026-07-22", "1 month ago"), thinned to `count` evenly spaced commits,
/// newest first. A bare date means its midnight, UTC ([`since_midnight`]).
fn thinned_history(
    repo: &Path,
    rev: &str,
    since: &str,
    count: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    let log = git(
        repo,
        &[
            "log",
            "--first-parent",
            "--format=%H %cs",
            &format!("--since={}", since_midnight(since)),
            rev,
        ],
    )?;
    let all: Vec<(String, String)> = log
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(c, d)| (c.to_string(), d.to_string()))
        .collect();
    if all.len() <= count {
        return Ok(all);
    }
    Ok((0..count)
        .map(|i| all[i * (all.len() - 1) / (count - 1)].clone())
        .collect())
}

/// `since`, with a bare date (`2026-07-22`) made its midnight UTC: git reads a bare date at
/// the current time of day, so runs at different hours started one commit apart.
fn since_midnight(since: &str) -> String {
    let bare_date = since.len() == 10
        && since.char_indices().all(|(i, c)| {
            if i == 4 || i == 7 {
                c == '-'
            } else {
                c.is_ascii_digit()
            }
        });
    if bare_date {
        format!("{since} 00:00:00 +0000")
    } else {
        since.to_string()
    }
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git").args(args).current_dir(dir).output()?;
    anyhow::ensure!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One `index` run: its time (and share of `cold`), peak RSS, and its own report line.
fn line(label: &str, run: &Run, cold: Option<&Run>) {
    let share = cold.map_or(String::new(), |c| {
        format!(" ({:.1}% of cold)", 100.0 * run.millis / c.millis)
    });
    let report = run.stdout.lines().next().unwrap_or("").trim();
    println!(
        "{label:<36} {:>8.2} s{share}, peak RSS {:.0} MB: {report}",
        run.millis / 1e3,
        run.peak_rss_mb
    );
}

#[cfg(test)]
mod tests {
    use super::since_midnight;

    #[test]
    fn a_bare_date_means_its_midnight_utc() {
        assert_eq!(since_midnight("2026-07-22"), "2026-07-22 00:00:00 +0000");
        assert_eq!(since_midnight("1 month ago"), "1 month ago");
        assert_eq!(since_midnight("2026-07-22 12:00"), "2026-07-22 12:00");
        assert_eq!(since_midnight("2026/07/22"), "2026/07/22");
    }
}
