//! The history memo: a second worktree of a repository reads the same notes without parsing
//! a past file version again (or diffing a commit: renames come from the memo too). One
//! test in its own binary, so that the process-wide parse count is this test's alone.

use codectx_corpus::GitRepo;
use codectx_history::{HistoryMemo, HistoryOptions, HistoryRead, MEMO_DIR, read_history};

fn notes(read: &HistoryRead) -> Vec<String> {
    let mut notes: Vec<String> = read
        .notes
        .iter()
        .map(|n| format!("{} {} {}: {}", n.file, n.qualified_name, n.commit, n.text))
        .collect();
    notes.sort();
    notes
}

/// Parses made by `f`, and what it returned.
fn parses<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = codectx_parser::parse_count();
    let value = f();
    (codectx_parser::parse_count() - before, value)
}

#[test]
fn a_second_worktree_reads_the_notes_without_parsing_past_versions() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(&dir.path().join("project"));
    let mut source = String::from("export function parse(text: string) {\n  return text;\n}\n");
    repo.write("src/parse.ts", &source);
    repo.commit("feat: add the parser");
    for i in 0..4 {
        source.push_str(&format!(
            "\nexport function step{i}(n: number) {{\n  return n + {i};\n}}\n"
        ));
        source = source.replace("return text;", &format!("return text.trim() + '{i}';"));
        repo.write("src/parse.ts", &source);
        repo.commit(&format!("fix: step {i} and trimming"));
    }
    // A script without an extension, later given one: its older notes land on the new
    // name too (the memo keeps changes of any file, not only of source names).
    repo.write(
        "bin/legacy",
        "function legacyHelper(argv) {\n  return argv.slice(2);\n}\n",
    );
    repo.commit("feat: the legacy helper");
    repo.git(&["mv", "bin/legacy", "bin/legacy.js"]);
    repo.commit("chore: name the legacy script");
    // A rename: older notes move to the new path, from the memo as from a diff.
    repo.git(&["mv", "src/parse.ts", "src/parser.ts"]);
    repo.write("src/parser.ts", &source.replace("n + 3", "n + 33"));
    repo.commit("refactor: the parser's own file");
    let options = HistoryOptions::default();
    let (parsed, first) = parses(|| read_history(repo.root(), None, &options).unwrap());
    assert!(parsed >= 5, "{parsed} parses");
    let memo = MEMO_DIR
        .iter()
        .fold(repo.root().join(".git"), |d, part| d.join(part));
    assert!(memo.is_dir(), "no memo in {}", memo.display());

    let other = repo.add_worktree(&dir.path().join("other"), "other");
    let (parsed, second) = parses(|| read_history(other.root(), None, &options).unwrap());
    assert_eq!(parsed, 0, "the second worktree parsed past versions again");
    assert_eq!(notes(&second), notes(&first));
    // Notes of commits older than a rename land on the file's new name.
    for (symbol, subject) in [
        ("bin/legacy.js legacyHelper ", "feat: the legacy helper"),
        ("src/parser.ts step2 ", "fix: step 2 and trimming"),
    ] {
        let found = notes(&first);
        assert!(
            found
                .iter()
                .any(|n| n.starts_with(symbol) && n.ends_with(subject)),
            "{symbol}: {found:#?}"
        );
    }

    // Without the memo, the same read parses every change again.
    let off = HistoryOptions {
        memo: HistoryMemo::Off,
        ..HistoryOptions::default()
    };
    let (parsed, third) = parses(|| read_history(other.root(), None, &off).unwrap());
    assert!(parsed >= 5, "{parsed} parses");
    assert_eq!(notes(&third), notes(&first));
}
