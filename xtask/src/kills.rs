//! `cargo xtask validate kills`: SIGKILLs at random moments of real `mcp-server index`
//! processes on a copy of a real repository, each followed by a run that must leave the index
//! equal to a clean build. `crates/store/tests/index.rs` does the same on a few hundred
//! generated files in CI; this is the run at a large repository's size (babel: 17,500 files),
//! structure only, as `mcp-server index --no-embed` writes it.
//!
//! The copy alternates between two versions: A, the repository as it is, and B, where every
//! third source file gains a function, every tenth is gone and a few files are new. Each
//! version's files carry fixed mtimes, so an index of either can be compared with a clean
//! build of it row for row: every chunk row in full, every file record (facts included).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use codectx_store::{Store, StoreOptions};

/// Files version B adds.
const ADDED: usize = 5;

pub struct KillRun<'a> {
    pub root: &'a Path,
    pub kills: usize,
    pub binary: Option<PathBuf>,
}

pub fn run(run: KillRun<'_>) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        println!("warning: debug build; `cargo xtask-release validate kills …` runs at real speed");
    }
    let binary = crate::mcp_server_binary(run.binary)?;
    let work = tempfile::tempdir()?;
    let tree = work.path().join("tree");
    let started = Instant::now();
    copy_tree(&run.root.canonicalize()?, &tree)?;
    let versions = Versions::of(&tree)?;
    println!(
        "copied {} in {:.1} s: {} source files, {} changed, {} removed and {ADDED} added in version B",
        run.root.display(),
        started.elapsed().as_secs_f64(),
        versions.sources,
        versions.changed.len(),
        versions.removed.len(),
    );

    let runtime = tokio::runtime::Runtime::new()?;
    let index = work.path().join("index");
    let runs = IndexRuns {
        binary: &binary,
        tree: &tree,
        work: work.path(),
    };
    let clean = |version: Version| -> anyhow::Result<String> {
        versions.write(version)?;
        let dir = work.path().join(format!("clean-{version:?}"));
        runs.run(&dir)?;
        runtime.block_on(digest(&tree, &dir))
    };
    let clean_a = clean(Version::A)?;
    let clean_b = clean(Version::B)?;
    println!("clean builds: A {clean_a}; B {clean_b}");
    // The comparison could not see a lost update otherwise.
    anyhow::ensure!(clean_a != clean_b, "versions A and B index the same");

    // How long an uninterrupted run takes: cold (version B), then incremental (B to A).
    let timed = |version: Version| -> anyhow::Result<Duration> {
        versions.write(version)?;
        let started = Instant::now();
        runs.run(&index)?;
        Ok(started.elapsed())
    };
    let cold = timed(Version::B)?;
    let incremental = timed(Version::A)?;
    println!(
        "uninterrupted: cold {:.2} s, incremental {:.2} s",
        cold.as_secs_f64(),
        incremental.as_secs_f64()
    );

    // A fixed seed: a failure names its kill, and a rerun kills at the same moments (as far
    // as the machine's speed allows).
    let mut moments = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    let (mut kills, mut attempts, mut version) = (0, 0, Version::A);
    let started = Instant::now();
    while kills < run.kills {
        anyhow::ensure!(
            attempts < run.kills * 2,
            "only {kills} of {attempts} runs were still going when killed"
        );
        version = version.other();
        versions.write(version)?;
        let from_scratch = attempts % 5 == 0;
        if from_scratch && index.exists() {
            std::fs::remove_dir_all(&index)?;
        }
        let span = if from_scratch { cold } else { incremental };
        let delay = span.mul_f64(moments.f64());
        if runs.kill_after(&index, delay)? {
            kills += 1;
        }
        let repaired = Instant::now();
        runs.run(&index)?;
        let repaired = repaired.elapsed();
        let expected = match version {
            Version::A => &clean_a,
            Version::B => &clean_b,
        };
        let ours = runtime.block_on(digest(&tree, &index))?;
        anyhow::ensure!(
            &ours == expected,
            "attempt {attempts} ({}, killed after {delay:?}): the index differs from a clean build",
            if from_scratch { "cold" } else { "incremental" }
        );
        println!(
            "attempt {attempts:>3}: {} {:>5} ms in, next run {:>5} ms, equal to a clean build",
            if from_scratch {
                "cold       "
            } else {
                "incremental"
            },
            delay.as_millis(),
            repaired.as_millis()
        );
        attempts += 1;
    }
    println!(
        "{kills} kills in {attempts} runs ({:.0} s): every next run left the index equal to a clean build",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs of `mcp-server index --no-embed` on the copy, with the index where each call says.
struct IndexRuns<'a> {
    binary: &'a Path,
    tree: &'a Path,
    work: &'a Path,
}

impl IndexRuns<'_> {
    fn command(&self, index: &Path) -> anyhow::Result<Command> {
        let config = self.work.join(format!(
            "{}.toml",
            index.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::write(
            &config,
            format!(
                "[index]\ndir = {:?}\n\n[history]\nmax_commits = 0\n",
                index.to_string_lossy()
            ),
        )?;
        let mut command = Command::new(self.binary);
        command
            .arg("--root")
            .arg(self.tree)
            .arg("--config")
            .arg(&config)
            .args(["--embedder", "none", "index", "--no-embed"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Ok(command)
    }

    /// One run to completion.
    fn run(&self, index: &Path) -> anyhow::Result<()> {
        let output = self.command(index)?.output()?;
        anyhow::ensure!(
            output.status.success(),
            "mcp-server index failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(())
    }

    /// Starts a run and SIGKILLs it after `delay`: whether it was still going.
    fn kill_after(&self, index: &Path, delay: Duration) -> anyhow::Result<bool> {
        let mut child = self.command(index)?.stderr(Stdio::null()).spawn()?;
        std::thread::sleep(delay);
        let running = child.try_wait()?.is_none();
        // `Child::kill` is SIGKILL on Unix: no destructor, no flush.
        let _ = child.kill();
        child.wait()?;
        Ok(running)
    }
}

/// Every chunk row in full and every file record, facts included, sorted and hashed.
async fn digest(tree: &Path, index: &Path) -> anyhow::Result<String> {
    let mut options = StoreOptions {
        uri: Some(index.to_string_lossy().into_owned()),
        ..StoreOptions::default()
    };
    options.embedding = Store::recorded_embedding(tree, &options).await?;
    let store = Store::open(tree, options).await?;
    let mut rows: Vec<String> = store
        .chunks(None)
        .await?
        .into_iter()
        .map(|r| format!("{r:?}"))
        .collect();
    rows.sort();
    let mut files: Vec<String> = store.files().map(|f| format!("{f:?}")).collect();
    files.sort();
    let mut hasher = blake3::Hasher::new();
    for line in rows.iter().chain(&files) {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    Ok(format!(
        "{} chunks, {} files, {}",
        rows.len(),
        files.len(),
        hasher.finalize().to_hex()
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    A,
    B,
}

impl Version {
    fn other(self) -> Self {
        match self {
            Version::A => Version::B,
            Version::B => Version::A,
        }
    }

    /// The mtime of every file this version writes.
    fn mtime(self) -> SystemTime {
        let secs = match self {
            Version::A => 1_000_000,
            Version::B => 2_000_000,
        };
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }
}

/// What differs between the two versions of the copy.
struct Versions {
    tree: PathBuf,
    sources: usize,
    /// Files B appends a function to, with their content in A.
    changed: Vec<(PathBuf, Vec<u8>)>,
    /// Files B does not have, with their content in A.
    removed: Vec<(PathBuf, Vec<u8>)>,
}

impl Versions {
    /// Reads the files that change; the copy is left as version A.
    fn of(tree: &Path) -> anyhow::Result<Self> {
        let mut sources = codectx_files::FileSelection::default().walk(tree);
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        let (mut changed, mut removed) = (Vec::new(), Vec::new());
        for (i, file) in sources.iter().enumerate() {
            let content = std::fs::read(&file.abs)
                .with_context(|| format!("reading {}", file.abs.display()))?;
            if i % 10 == 0 {
                removed.push((file.abs.clone(), content));
            } else if i % 3 == 0 {
                changed.push((file.abs.clone(), content));
            }
        }
        let versions = Self {
            tree: tree.to_path_buf(),
            sources: sources.len(),
            changed,
            removed,
        };
        versions.write(Version::A)?;
        Ok(versions)
    }

    fn write(&self, version: Version) -> anyhow::Result<()> {
        let mtime = version.mtime();
        let write = |path: &Path, content: &[u8]| -> anyhow::Result<()> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(path, content)?;
            std::fs::File::options()
                .write(true)
                .open(path)?
                .set_modified(mtime)?;
            Ok(())
        };
        for (i, (path, content)) in self.changed.iter().enumerate() {
            match version {
                Version::A => write(path, content)?,
                Version::B => {
                    let mut changed = content.clone();
                    changed.extend_from_slice(
                        format!("\nexport function codectxKill{i}() {{\n  return {i};\n}}\n")
                            .as_bytes(),
                    );
                    write(path, &changed)?;
                }
            }
        }
        for (path, content) in &self.removed {
            match version {
                Version::A => write(path, content)?,
                Version::B => match std::fs::remove_file(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                    _ => {}
                },
            }
        }
        for i in 0..ADDED {
            let path = self.tree.join(format!("codectx-kill/added{i}.ts"));
            match version {
                Version::A => {
                    let _ = std::fs::remove_file(&path);
                }
                Version::B => write(
                    &path,
                    format!(
                        "import {{ codectxKill{i} }} from '../x';\n\nexport class Added{i} {{\n  run(): number {{\n    return codectxKill{i}();\n  }}\n}}\n"
                    )
                    .as_bytes(),
                )?,
            }
        }
        Ok(())
    }
}

/// Copies `from` into `to`, without `.git`, the index and symlinks.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" || name == ".codectx" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(&name))
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}
