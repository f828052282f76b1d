//! The change corpus (`xtask/changes-corpus.toml`): questions shaped like an agent's task,
//! built at run time from real repositories' git history and never committed.
//!
//! - **change**: a commit's subject (conventional prefix and PR number stripped) → the
//!   functions and methods its hunks touched (the benchmark kit's CommitLoc rule);
//! - **long**: a commit's subject and body when the body is prose of at least
//!   [`LONG_MIN_WORDS`] words (a squash commit carrying its pull request's description) →
//!   the same targets.
//!
//! Each repository is checked out at a snapshot: the first-parent commit nearest to
//! [`WINDOW_MONTHS`] before its head. Questions come from the first-parent commits after
//! it, and a target counts only if a symbol of that name exists at the snapshot (the gold
//! lines are the snapshot's). The checkout is a real git worktree at the snapshot, so the
//! index reads the history up to it and no later.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use serde::Deserialize;

use crate::tuning::{Gold, Question, Split, read_questions, write_questions};

/// Bump when questions would come out differently: the cache is keyed by it.
const BUILDER_VERSION: u32 = 3;

/// How far before a repository's head its snapshot lies, unless its pin says otherwise.
const WINDOW_MONTHS: u64 = 36;

/// A long question's body has at least this many words of prose.
pub const LONG_MIN_WORDS: usize = 30;

/// A commit touching more source files than this is a sweep, not a task.
const MAX_FILES: usize = 5;

/// A question whose commit changed more targets than this is not one task.
const MAX_TARGETS: usize = 5;

/// The kind of a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Change,
    Long,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Change => "change",
            Kind::Long => "long",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoPin {
    /// `owner/name` on GitHub.
    pub name: String,
    pub split: Split,
    /// The snapshot's distance from the head in months (default [`WINDOW_MONTHS`]): shorter
    /// for a repository that moved so fast that few functions changed since live as long.
    #[serde(default)]
    pub months: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoList {
    repo: Vec<RepoPin>,
}

pub fn read_pins(path: &Path) -> anyhow::Result<Vec<RepoPin>> {
    Ok(crate::tuning::read_toml::<RepoList>(path)?.repo)
}

/// A repository checked out at its snapshot, with its questions of both kinds.
pub struct BuiltRepo {
    pub pin: RepoPin,
    /// The worktree at the snapshot (index this).
    pub source: PathBuf,
    /// Where its indexes and run files go.
    pub work: PathBuf,
    pub change: Vec<Question>,
    pub long: Vec<Question>,
}

/// The bare git directory of `pin`: `<mirrors>/<owner>+<name>/repo` when present (as the
/// workspace's fetch tool lays them out), else a bare clone from GitHub into the cache.
fn git_dir(pin: &RepoPin, mirrors: Option<&Path>, cache: &Path) -> anyhow::Result<PathBuf> {
    let flat = pin.name.replace('/', "+");
    if let Some(mirrors) = mirrors {
        let dir = mirrors.join(&flat).join("repo");
        if dir.exists() {
            return Ok(dir);
        }
    }
    let dir = cache.join("git").join(format!("{flat}.git"));
    if !dir.exists() {
        std::fs::create_dir_all(cache.join("git"))?;
        run(Command::new("git")
            .args(["clone", "--bare", "--quiet"])
            .arg(format!("https://github.com/{}.git", pin.name))
            .arg(&dir))?;
    }
    Ok(dir)
}

fn run(command: &mut Command) -> anyhow::Result<String> {
    let out = command.output().with_context(|| format!("{command:?}"))?;
    anyhow::ensure!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

struct Git<'a>(&'a Path);

impl Git<'_> {
    fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        run(Command::new("git").arg("--git-dir").arg(self.0).args(args))
    }

    fn show(&self, rev: &str, file: &str) -> Option<String> {
        self.run(&["show", &format!("{rev}:{file}")]).ok()
    }
}

/// Builds (once per repository, cached) every repository's questions.
pub fn build(
    pins: &[RepoPin],
    mirrors: Option<&Path>,
    cap: usize,
) -> anyhow::Result<Vec<BuiltRepo>> {
    let cache = codectx_corpus::cache_dir()
        .parent()
        .context("corpus cache has a parent")?
        .join("changes");
    pins.iter()
        .map(|pin| build_repo(pin, mirrors, &cache, cap))
        .collect()
}

fn build_repo(
    pin: &RepoPin,
    mirrors: Option<&Path>,
    cache: &Path,
    cap: usize,
) -> anyhow::Result<BuiltRepo> {
    let git_dir = git_dir(pin, mirrors, cache)?;
    let git = Git(&git_dir);
    let head = git.run(&["rev-parse", "HEAD"])?.trim().to_string();
    let months = pin.months.unwrap_or(WINDOW_MONTHS);
    let work = cache.join(format!(
        "{}-{}-v{BUILDER_VERSION}{}",
        pin.name.replace('/', "+"),
        &head[..12],
        // The default window keeps the caches made before windows were set per repository.
        pin.months.map_or_else(String::new, |m| format!("-{m}m"))
    ));
    let source = work.join("src");
    let done = work.join(".complete");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work)?;
        let snapshot = snapshot(&git, months)?;
        // A worktree sharing the mirror's objects, detached at the snapshot.
        run(Command::new("git")
            .args(["clone", "--quiet", "--shared", "--no-checkout"])
            .arg(&git_dir)
            .arg(&source))?;
        run(Command::new("git")
            .arg("-C")
            .arg(&source)
            .args(["checkout", "--quiet", "--detach", &snapshot]))?;
        let (change, long) = questions(&git, pin, &snapshot)?;
        for (kind, questions) in [(Kind::Change, &change), (Kind::Long, &long)] {
            write_questions(&work.join(format!("{}.jsonl", kind.as_str())), questions)?;
        }
        std::fs::write(&done, &snapshot)?;
    }
    let read = |kind: Kind| read_questions(&work.join(format!("{}.jsonl", kind.as_str())), cap);
    Ok(BuiltRepo {
        pin: pin.clone(),
        change: read(Kind::Change)?,
        long: read(Kind::Long)?,
        source,
        work,
    })
}

/// The first-parent commit nearest to `months` before the head (the first commit of a
/// younger repository).
fn snapshot(git: &Git, months: u64) -> anyhow::Result<String> {
    let head_time: u64 = git
        .run(&["log", "-1", "--format=%ct", "HEAD"])?
        .trim()
        .parse()?;
    let before = head_time.saturating_sub(months * 30 * 86_400);
    let sha = git
        .run(&[
            "log",
            "--first-parent",
            "-1",
            "--format=%H",
            &format!("--before={before}"),
            "HEAD",
        ])?
        .trim()
        .to_string();
    if !sha.is_empty() {
        return Ok(sha);
    }
    // A younger repository: its first commit.
    let first = git.run(&["rev-list", "--first-parent", "--max-parents=0", "HEAD"])?;
    first
        .lines()
        .next()
        .map(str::to_string)
        .context("a repository without commits")
}

/// Source files a target may be in: code, not tests, examples, docs, scripts or types.
fn is_source(path: &str) -> bool {
    let code = codectx_parser::Language::from_path(path).is_some()
        && !codectx_files::is_declaration_file(path);
    let aside = codectx_retrieval::is_test_file(path)
        || path.contains("playground/")
        || path.contains(".config.")
        || path.split('/').any(|d| {
            matches!(
                d,
                "test"
                    | "tests"
                    | "script"
                    | "scripts"
                    | "example"
                    | "examples"
                    | "doc"
                    | "docs"
                    | "benchmark"
                    | "benchmarks"
                    | "fixtures"
                    | "__fixtures__"
                    | "dist"
                    | "build"
            )
        });
    code && !aside
}

/// The subject without a conventional-commit prefix and a trailing PR number; `None` for
/// commits that are no task (releases, reverts, dependency bumps, docs, tests, chores).
fn task_subject(subject: &str) -> Option<String> {
    let lower = subject.trim().to_lowercase();
    let version = lower.strip_prefix('v').unwrap_or(&lower);
    if ["release", "revert", "merge ", "bump", "update dependencies"]
        .iter()
        .any(|s| lower.starts_with(s))
        || version.starts_with(|c: char| c.is_ascii_digit())
    {
        return None;
    }
    let mut text = subject.trim();
    // `fix(router): …`, `feat!: …`: the type says whether it is a task.
    if let Some((head, rest)) = text.split_once(':')
        && !head.contains(' ')
        && head.len() <= 40
    {
        let kind = head.split(['(', '!']).next().unwrap_or("").to_lowercase();
        if matches!(
            kind.as_str(),
            "chore"
                | "docs"
                | "doc"
                | "test"
                | "tests"
                | "ci"
                | "build"
                | "style"
                | "release"
                | "revert"
                | "deps"
                | "types"
        ) {
            return None;
        }
        text = rest.trim();
    }
    let mut text = text.to_string();
    if let Some(open) = text.rfind("(#")
        && text.ends_with(')')
    {
        text.truncate(open);
    }
    let text = text.trim().to_string();
    (text.split_whitespace().count() >= 3).then_some(text)
}

/// A commit body's prose: without trailers, squashed commit lists and links-only lines.
fn body_prose(body: &str) -> String {
    body.lines()
        .filter(|l| {
            let t = l.trim();
            !(t.starts_with("Co-authored-by:")
                || t.starts_with("Signed-off-by:")
                || t.starts_with("Reviewed-by:")
                || t.starts_with("* ")
                || t.starts_with("http"))
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// The changed line ranges of each file of `sha` against its first parent, on the
/// parent's side.
fn hunks(git: &Git, sha: &str) -> anyhow::Result<HashMap<String, Vec<(u32, u32)>>> {
    let diff = git.run(&["diff", "-U0", "--no-renames", &format!("{sha}^"), sha])?;
    let mut out: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("--- a/") {
            current = Some(path.to_string());
        } else if line.starts_with("--- /dev/null") {
            current = None;
        } else if let (Some(file), Some(rest)) = (&current, line.strip_prefix("@@ -")) {
            let range = rest.split(' ').next().unwrap_or("");
            let (start, count) = match range.split_once(',') {
                Some((s, c)) => (s.parse().unwrap_or(0), c.parse().unwrap_or(1)),
                None => (range.parse().unwrap_or(0), 1),
            };
            let end = if count == 0 { start } else { start + count - 1 };
            out.entry(file.clone()).or_default().push((start, end));
        }
    }
    Ok(out)
}

/// A file's functions: qualified name, first and last line.
type SymbolSpans = Vec<(String, u32, u32)>;

/// Functions and methods of one version of a file: qualified name → lines.
fn functions(text: &str, path: &str) -> SymbolSpans {
    let parsed = codectx_parser::parse_source(path, text);
    crate::tuning::qualified(&parsed.symbols)
        .into_iter()
        .filter(|(s, _)| {
            use codectx_parser::SymbolKind as K;
            matches!(
                s.kind,
                K::Function | K::Method | K::Constructor | K::Getter | K::Setter | K::Component
            )
        })
        .map(|(s, q)| (q, s.range.start, s.range.end))
        .collect()
}

fn questions(
    git: &Git,
    pin: &RepoPin,
    snapshot: &str,
) -> anyhow::Result<(Vec<Question>, Vec<Question>)> {
    // First-parent commits: squash commits, and the merge commits of repositories that
    // merge pull requests (each diffed against its first parent: the whole pull request).
    let log = git.run(&[
        "log",
        "--first-parent",
        "--reverse",
        "--format=%H%x1f%P%x1f%an%x1f%s%x1f%b%x1e",
        &format!("{snapshot}..HEAD"),
    ])?;
    // A file's symbols at the snapshot, read once: name and line span (`None`: no such file).
    let mut at_snapshot: HashMap<String, Option<SymbolSpans>> = HashMap::new();
    let (mut change, mut long) = (Vec::new(), Vec::new());
    for record in log.split('\u{1e}') {
        let fields: Vec<&str> = record.trim_start_matches('\n').split('\u{1f}').collect();
        let [sha, parents, author, subject, body] = fields[..] else {
            continue;
        };
        // A pull request's merge commit says "Merge pull request #N from …"; its title is the
        // body's first line, and its description (if any) the rest.
        let (subject, body) = if parents.split_whitespace().count() > 1 {
            if !subject.starts_with("Merge pull request") {
                continue;
            }
            let body = body.trim_start();
            body.split_once('\n').unwrap_or((body, ""))
        } else {
            (subject, body)
        };
        let author = author.to_lowercase();
        if author.contains("bot") || author.contains("renovate") {
            continue;
        }
        let Some(query) = task_subject(subject) else {
            continue;
        };
        let Ok(per_file) = hunks(git, sha) else {
            continue;
        };
        let files: Vec<&String> = per_file.keys().filter(|f| is_source(f)).collect();
        if files.is_empty() || files.len() > MAX_FILES {
            continue;
        }
        let mut gold: Vec<Gold> = Vec::new();
        let mut missing = false;
        for file in files {
            let Some(before) = git.show(&format!("{sha}^"), file) else {
                continue;
            };
            let symbols = functions(&before, file);
            let snap = at_snapshot
                .entry(file.clone())
                .or_insert_with(|| git.show(snapshot, file).map(|t| functions(&t, file)));
            for &(a, b) in &per_file[file] {
                // The innermost function the hunk touches.
                let Some((qname, _, _)) = symbols
                    .iter()
                    .filter(|(_, s, e)| *s <= b && a <= *e)
                    .min_by_key(|(_, s, e)| e - s)
                else {
                    continue;
                };
                let Some((_, start, end)) = snap
                    .as_ref()
                    .and_then(|syms| syms.iter().find(|(q, _, _)| q == qname))
                else {
                    missing = true;
                    continue;
                };
                if !gold.iter().any(|g| g.file == *file && g.qname == *qname) {
                    gold.push(Gold {
                        file: file.clone(),
                        qname: qname.clone(),
                        start: *start,
                        end: *end,
                    });
                }
            }
        }
        if missing || gold.is_empty() || gold.len() > MAX_TARGETS {
            continue;
        }
        let leaky = query.contains('`')
            || gold.iter().any(|g| {
                let name = g.qname.rsplit('.').next().unwrap_or("");
                name.len() > 2
                    && query
                        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '$')
                        .any(|w| w == name)
            });
        let id = format!("{}:{}", pin.name, &sha[..10]);
        let prose = body_prose(body);
        if prose.split_whitespace().count() >= LONG_MIN_WORDS {
            long.push(Question {
                id: id.clone(),
                query: format!("{query}\n\n{prose}"),
                leaky,
                gold: gold.clone(),
            });
        }
        change.push(Question {
            id,
            query,
            leaky,
            gold,
        });
    }
    Ok((change, long))
}
