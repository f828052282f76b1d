//! A revision's files come from git objects: a tag never checked out, a commit, a branch
//! under a subdirectory root; the index's file selection applies; a name that leads to no
//! commit is a typed error.

use codectx_corpus::GitRepo;
use codectx_files::FileSelection;
use codectx_history::{RevisionError, files_at, resolve_commit};

/// `path blob-prefix: first line` of each file.
fn listing(revision: &codectx_history::Revision) -> Vec<String> {
    revision
        .files
        .iter()
        .map(|f| {
            let text = String::from_utf8_lossy(&f.bytes);
            format!("{} {}", f.path, text.lines().next().unwrap_or(""))
        })
        .collect()
}

#[test]
fn a_tag_never_checked_out_gives_its_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write("src/a.ts", "export const a = 1;\n");
    repo.write("src/old.ts", "export const old = 1;\n");
    repo.write("src/types.d.ts", "export type T = 1;\n");
    repo.write("dist/bundle.js", "var a = 1;\n");
    repo.write("README.md", "# r\n");
    repo.write("package.json", "{\"name\": \"r\"}\n");
    repo.write("tsconfig.build.json", "{}\n");
    repo.write("dist/package.json", "{}\n");
    repo.write("go.mod", "module example.com/r\n");
    repo.write("Cargo.toml", "[package]\nname = \"r\"\n");
    let first = repo.commit("first");
    repo.git(&["tag", "v1"]);
    repo.write("src/a.ts", "export const a = 2;\n");
    repo.write("src/b.ts", "export const b = 1;\n");
    std::fs::remove_file(dir.path().join("src/old.ts")).unwrap();
    let second = repo.commit("second");

    let selection = FileSelection::default();
    let v1 = files_at(dir.path(), "v1", &selection).unwrap();
    assert_eq!(v1.commit, first);
    assert_eq!(v1.name, "v1");
    // The declaration file, the bundle and the README are not selected.
    assert_eq!(
        listing(&v1),
        [
            "src/a.ts export const a = 1;",
            "src/old.ts export const old = 1;"
        ]
    );
    // The module configurations come beside them, outside skipped directories.
    let configs: Vec<&str> = v1.module_configs.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        configs,
        [
            "Cargo.toml",
            "go.mod",
            "package.json",
            "tsconfig.build.json"
        ]
    );
    let head = files_at(dir.path(), "HEAD", &selection).unwrap();
    assert_eq!(head.commit, second);
    assert_eq!(resolve_commit(dir.path(), "v1").unwrap(), first);
    assert_eq!(resolve_commit(dir.path(), "HEAD").unwrap(), second);
    assert_eq!(
        listing(&head),
        [
            "src/a.ts export const a = 2;",
            "src/b.ts export const b = 1;"
        ]
    );
    // The same content is the same blob, whichever revision holds it.
    let parent = files_at(dir.path(), "HEAD~1", &selection).unwrap();
    assert_eq!(parent.files, v1.files);
    assert_ne!(v1.files[0].blob, head.files[0].blob);
    let by_id = files_at(dir.path(), &first, &selection).unwrap();
    assert_eq!(by_id.files, v1.files);
}

#[test]
fn a_root_inside_the_work_tree_names_files_relative_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write("packages/core/src/x.ts", "export const x = 1;\n");
    repo.write("packages/other/y.ts", "export const y = 1;\n");
    repo.commit("first");
    repo.git(&["branch", "feature"]);
    let core = files_at(
        &dir.path().join("packages/core"),
        "feature",
        &FileSelection::default(),
    )
    .unwrap();
    assert_eq!(listing(&core), ["src/x.ts export const x = 1;"]);
}

#[test]
fn oversized_files_are_listed_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write("small.js", "let s = 1;\n");
    repo.write("large.js", &"let l = 1;\n".repeat(100));
    repo.commit("first");
    let selection = FileSelection {
        max_file_bytes: 100,
        ..FileSelection::default()
    };
    let head = files_at(dir.path(), "HEAD", &selection).unwrap();
    assert_eq!(listing(&head), ["small.js let s = 1;"]);
    assert_eq!(head.too_large, ["large.js"]);
}

#[test]
fn a_name_that_leads_to_no_commit_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write("a.ts", "export const a = 1;\n");
    repo.commit("first");
    let selection = FileSelection::default();
    for name in ["v9.9.9", "no-such-branch", "HEAD~5", "0123456789abcdef"] {
        let err = files_at(dir.path(), name, &selection).unwrap_err();
        assert_eq!(err, RevisionError::Unknown(name.to_string()));
        assert_eq!(resolve_commit(dir.path(), name).unwrap_err(), err);
        assert!(err.to_string().contains(name), "{err}");
    }
    let plain = tempfile::tempdir().unwrap();
    assert_eq!(
        files_at(plain.path(), "HEAD", &selection).unwrap_err(),
        RevisionError::NotARepository
    );
}
