//! History read from a small repository the test builds commit by commit with the `git`
//! command line (fixed authors and dates, so ids and snapshots are stable).

use codectx_corpus::GitRepo;
use codectx_history::{HistoryOff, HistoryOptions, HistoryRead, read_history};

/// A repository in a temporary directory (`project/`, so a sibling can be cloned beside it).
struct Repo {
    _dir: tempfile::TempDir,
    git: GitRepo,
}

impl std::ops::Deref for Repo {
    type Target = GitRepo;
    fn deref(&self) -> &GitRepo {
        &self.git
    }
}

impl std::ops::DerefMut for Repo {
    fn deref_mut(&mut self) -> &mut GitRepo {
        &mut self.git
    }
}

impl Repo {
    fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let git = GitRepo::init(&dir.path().join("project"));
        Repo { _dir: dir, git }
    }

    fn read(&self, since: Option<&str>) -> HistoryRead {
        read_history(self.root(), since, &HistoryOptions::default()).unwrap()
    }
}

const ROUTER: &str = "\
export function parse(text: string) {
  return text;
}

export class Router {
  routes: string[] = [];

  add(path: string) {
    this.routes.push(path);
  }

  match(path: string) {
    return this.routes.includes(path);
  }
}
";

/// Notes as `file qualified name: subject`, in a stable order.
fn lines(read: &HistoryRead) -> Vec<String> {
    let mut lines: Vec<String> = read
        .notes
        .iter()
        .map(|n| {
            let subject = n.text.lines().next().unwrap_or_default();
            format!("{} {}: {subject}", n.file, n.qualified_name)
        })
        .collect();
    lines.sort();
    lines
}

/// The repository of most tests: a router added, fixed, renamed, then changed on a branch
/// that is merged, then swept by a reformat of 60 files.
fn built() -> (Repo, String) {
    let mut repo = Repo::new();
    repo.write("src/router.ts", ROUTER);
    repo.write("README.md", "# router\n");
    repo.commit("feat: add the router");

    repo.write(
        "src/router.ts",
        &ROUTER.replace("includes(path)", "includes(path.toLowerCase())"),
    );
    repo.commit("fix(router): match paths case-insensitively\n\nUpper-case paths never matched.\n\nSigned-off-by: A <a@example.com>");

    repo.git(&["mv", "src/router.ts", "src/routing.ts"]);
    let renamed = repo.commit("refactor: rename router to routing");

    repo.git(&["checkout", "-q", "-b", "trim"]);
    let current = std::fs::read_to_string(repo.root().join("src/routing.ts")).unwrap();
    repo.write(
        "src/routing.ts",
        &current.replace("return text;", "return text.trim();"),
    );
    repo.commit("feat(parse): trim the input");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&[
        "merge",
        "-q",
        "--no-ff",
        "-m",
        "Merge branch 'trim' into main",
        "trim",
    ]);
    repo.next_day();

    let current = std::fs::read_to_string(repo.root().join("src/routing.ts")).unwrap();
    repo.write(
        "src/routing.ts",
        &current.replace("  routes: string[] = [];", "  routes: Array<string> = [];"),
    );
    for i in 0..60 {
        repo.write(
            &format!("src/generated/g{i}.ts"),
            &format!("export const g{i} = {i};\n"),
        );
    }
    repo.commit("chore: reformat everything");
    (repo, renamed)
}

#[test]
fn commit_subjects_attach_to_the_symbols_they_changed() {
    let (repo, _) = built();
    let read = repo.read(None);
    assert!(read.full);
    // add, fix, rename, trim, merge, reformat.
    assert_eq!(read.commits_read, 6);
    assert_eq!(read.commits_skipped, 2, "the merge and the sweep");
    insta::assert_snapshot!(lines(&read).join("\n"), @r"
    src/routing.ts Router > add: feat: add the router
    src/routing.ts Router > match: feat: add the router
    src/routing.ts Router > match: fix(router): match paths case-insensitively
    src/routing.ts Router > routes: feat: add the router
    src/routing.ts Router: feat: add the router
    src/routing.ts parse: feat(parse): trim the input
    src/routing.ts parse: feat: add the router
    ");
    let fix = read
        .notes
        .iter()
        .find(|n| n.text.starts_with("fix(router)"))
        .unwrap();
    assert_eq!(
        fix.text,
        "fix(router): match paths case-insensitively\nUpper-case paths never matched."
    );
    assert_eq!(fix.time, 1_704_196_800, "2024-01-02T12:00:00Z");
}

#[test]
fn an_incremental_read_reads_only_new_commits() {
    let (mut repo, _) = built();
    let first = repo.read(None);
    let head = first.head.clone();
    assert_eq!(repo.read(Some(&head)).commits_read, 0, "nothing new");

    let current = std::fs::read_to_string(repo.root().join("src/routing.ts")).unwrap();
    repo.write(
        "src/routing.ts",
        &current.replace("this.routes.push(path);", "this.routes.push(path.trim());"),
    );
    repo.commit("fix: trim added routes");
    let next = repo.read(Some(&head));
    assert!(!next.full);
    assert_eq!(next.commits_read, 1);
    assert_eq!(
        lines(&next),
        ["src/routing.ts Router > add: fix: trim added routes"]
    );
}

#[test]
fn a_rewritten_history_is_read_again() {
    let (mut repo, _) = built();
    let head = repo.read(None).head;
    repo.git(&["reset", "-q", "--hard", "HEAD~1"]);
    repo.write(
        "src/extra.ts",
        "export function extra() {\n  return 1;\n}\n",
    );
    repo.commit("feat: extra");
    let read = repo.read(Some(&head));
    assert!(read.full, "the recorded head is no longer an ancestor");
    assert!(lines(&read).contains(&"src/extra.ts extra: feat: extra".to_owned()));
    assert!(
        !read.notes.iter().any(|n| n.text.starts_with("chore")),
        "the dropped commit is gone"
    );
}

#[test]
fn a_rename_after_the_recorded_head_re_reads_everything() {
    let (mut repo, _) = built();
    let head = repo.read(None).head;
    repo.git(&["mv", "src/routing.ts", "src/router2.ts"]);
    repo.commit("refactor: rename again");
    let read = repo.read(Some(&head));
    assert!(read.full, "older notes must move to the new path");
    assert!(lines(&read).contains(
        &"src/router2.ts Router > match: fix(router): match paths case-insensitively".to_owned()
    ));
}

#[test]
fn a_root_below_the_work_tree_sees_its_own_files() {
    let (repo, _) = built();
    let read = read_history(&repo.root().join("src"), None, &HistoryOptions::default()).unwrap();
    assert!(lines(&read).contains(&"routing.ts parse: feat(parse): trim the input".to_owned()));
}

#[test]
fn limits_cap_the_commits_read() {
    let (repo, _) = built();
    let options = HistoryOptions {
        max_commits: 2,
        ..HistoryOptions::default()
    };
    let read = read_history(repo.root(), None, &options).unwrap();
    assert_eq!(read.commits_read, 2);
    let off = HistoryOptions {
        max_commits: 0,
        ..HistoryOptions::default()
    };
    assert_eq!(
        read_history(repo.root(), None, &off).unwrap_err(),
        HistoryOff::Disabled
    );
    let recent = HistoryOptions {
        max_age_days: 1,
        ..HistoryOptions::default()
    };
    // Newest first: the reformat (day 7), then the merge and the branch commit (day 5-6).
    assert!(
        read_history(repo.root(), None, &recent)
            .unwrap()
            .commits_read
            < 6
    );
}

#[test]
fn no_repository_no_commits_and_shallow_clones_turn_history_off() {
    let plain = tempfile::tempdir().unwrap();
    assert_eq!(
        read_history(plain.path(), None, &HistoryOptions::default()).unwrap_err(),
        HistoryOff::NotARepository
    );

    let empty = Repo::new();
    assert_eq!(
        read_history(empty.root(), None, &HistoryOptions::default()).unwrap_err(),
        HistoryOff::NoCommits
    );

    let (repo, _) = built();
    let shallow = repo.root().parent().unwrap().join("shallow");
    let url = format!("file://{}", repo.root().display());
    repo.git(&[
        "clone",
        "-q",
        "--depth",
        "1",
        &url,
        shallow.to_str().unwrap(),
    ]);
    assert_eq!(
        read_history(&shallow, None, &HistoryOptions::default()).unwrap_err(),
        HistoryOff::Shallow
    );
}

#[test]
fn a_corrupt_repository_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/HEAD"), "garbage").unwrap();
    let off = read_history(dir.path(), None, &HistoryOptions::default()).unwrap_err();
    assert!(matches!(off, HistoryOff::Unreadable(_)), "{off:?}");
}
