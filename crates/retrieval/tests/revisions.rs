//! An engine at a git revision (`open_at_revision`): the revision's files, read from git
//! objects, with its module configurations, so imports resolve as in a checkout; written
//! once and reused; a name that resolves to nothing is a typed error.

use codectx_corpus::GitRepo;
use codectx_retrieval::{
    EngineOptions, RetrievalError, RevisionError, open_at_revision, resolve_revision,
};

fn names(engine: &codectx_retrieval::Engine) -> Vec<String> {
    let mut names: Vec<String> = engine
        .project()
        .files()
        .iter()
        .flat_map(|f| f.chunks.iter().map(|c| c.breadcrumb.clone()))
        .collect();
    names.sort();
    names
}

/// `src/lib/math.ts` writing `add`, committed and tagged `v1`: the caller's files go in
/// `before` (called first). Then `add` renamed to `sum` and committed.
fn tag_then_rename(repo: &mut GitRepo, before: impl FnOnce(&mut GitRepo)) {
    repo.write(
        "src/lib/math.ts",
        "export function add(a: number, b: number): number {\n  return a + b;\n}\n",
    );
    before(repo);
    repo.commit("first");
    repo.git(&["tag", "v1"]);
    repo.write(
        "src/lib/math.ts",
        "export function sum(a: number, b: number): number {\n  return a + b;\n}\n",
    );
    repo.commit("rename add to sum");
}

#[tokio::test]
async fn a_tag_answers_from_its_own_files_with_its_own_module_paths() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    tag_then_rename(&mut repo, |repo| {
        repo.write(
            "tsconfig.json",
            r#"{ "compilerOptions": { "baseUrl": ".", "paths": { "@lib/*": ["src/lib/*"] } } }"#,
        );
        repo.write(
            "src/app.ts",
            "import { add } from '@lib/math';\n\nexport function total(xs: number[]): number {\n  return xs.reduce(add, 0);\n}\n",
        );
        // Ignored by the work tree's rules, but tracked: a revision holds it.
        repo.write(".gitignore", "generated/\n");
        repo.write("generated/kept.ts", "export const kept = 1;\n");
        repo.git(&["add", "-f", "generated/kept.ts"]);
    });

    let revision = resolve_revision(dir.path(), "v1").unwrap();
    assert_eq!(revision.name, "v1");
    // A write a killed process left behind, an hour ago.
    // Kept once for the repository, whichever worktree asks.
    let root = dir.path().canonicalize().unwrap();
    let revision_dir = EngineOptions::default()
        .store
        .revision_dir(&root, &revision.commit)
        .unwrap();
    assert!(revision_dir.starts_with(root.join(".git/codectx/refs")));
    let abandoned = revision_dir.join("tree.partial-1");
    std::fs::create_dir_all(abandoned.join("src")).unwrap();
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(&abandoned)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let engine = open_at_revision(dir.path(), &revision, EngineOptions::default())
        .await
        .unwrap();
    insta::assert_snapshot!(names(&engine).join("\n"), @r"
    generated/kept.ts > kept
    src/app.ts > import:@lib/math
    src/app.ts > total
    src/lib/math.ts > add
    ");
    // The alias resolves through the revision's tsconfig.json.
    let rel = codectx_retrieval::file_relationships(engine.project(), "src/app.ts").unwrap();
    assert_eq!(rel.imports[0].file, "src/lib/math.ts");
    assert_eq!(rel.imports[0].resolution, codectx_graph::Resolution::File);

    // The files are written once, under the work tree's index, and reused.
    let tree = revision_dir.join("tree");
    assert!(tree.join("src/lib/math.ts").is_file());
    drop(engine);
    let again = open_at_revision(dir.path(), &revision, EngineOptions::default())
        .await
        .unwrap();
    assert!(names(&again).contains(&"src/lib/math.ts > add".to_string()));
    let mut leftovers: Vec<_> = std::fs::read_dir(&revision_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    leftovers.sort();
    // `used`: when the revision was last used, which pruning reads.
    assert_eq!(leftovers, ["index", "tree", "used"]);

    // The work tree's own engine sees none of the revision's copies.
    let live = codectx_retrieval::Engine::open(dir.path(), EngineOptions::default())
        .await
        .unwrap();
    assert!(names(&live).contains(&"src/lib/math.ts > sum".to_string()));
    assert!(!names(&live).iter().any(|n| n.contains("refs/")));
    assert!(!names(&live).iter().any(|n| n.contains("generated/")));
}

#[test]
fn a_name_that_resolves_to_no_commit_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write("a.ts", "export const a = 1;\n");
    repo.commit("first");
    match resolve_revision(dir.path(), "v9") {
        Err(RetrievalError::Revision(RevisionError::Unknown(name))) => assert_eq!(name, "v9"),
        other => panic!("{other:?}"),
    }
    let plain = tempfile::tempdir().unwrap();
    assert!(matches!(
        resolve_revision(plain.path(), "HEAD"),
        Err(RetrievalError::Revision(RevisionError::NotARepository))
    ));
}

/// Issue 40: a revision's commit notes are those of its own ancestry. At a tag, a symbol
/// carries the commits up to the tag and none made after it, though the work tree's
/// history has them; read later, as a server does, the notes land the same.
#[tokio::test]
async fn a_revision_reads_the_notes_of_its_own_ancestry() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write(
        "src/parse.ts",
        "export function parse(text: string): string[] {\n  return text.split(',');\n}\n",
    );
    repo.commit("add a comma-separated parser");
    repo.write(
        "src/parse.ts",
        "export function parse(text: string): string[] {\n  return text.split(',').map((s) => s.trim());\n}\n",
    );
    repo.commit("trim the parsed fields");
    repo.git(&["tag", "v1"]);
    repo.write(
        "src/parse.ts",
        "export function parse(text: string): string[] {\n  if (!text) return [];\n  return text.split(',').map((s) => s.trim());\n}\n",
    );
    repo.commit("stop crashing on empty input");

    let notes = |rows: Vec<codectx_store::StoredChunk>| -> String {
        rows.into_iter()
            .find(|r| r.chunk.name == "parse")
            .map(|r| r.history)
            .unwrap_or_default()
    };
    let revision = resolve_revision(dir.path(), "v1").unwrap();
    for deferred in [false, true] {
        let mut options = EngineOptions::default();
        options.store.defer_history = deferred;
        let mut engine = open_at_revision(dir.path(), &revision, options)
            .await
            .unwrap();
        if deferred {
            let mut catch_up = engine.history_catch_up().await.unwrap().expect("deferred");
            catch_up.run().await.unwrap();
            engine.refresh(&()).await.unwrap();
        }
        let at_v1 = notes(engine.store().chunks(None).await.unwrap());
        assert!(
            at_v1.contains("trim the parsed fields")
                && at_v1.contains("add a comma-separated parser"),
            "deferred={deferred}: {at_v1:?}"
        );
        assert!(
            !at_v1.contains("empty input"),
            "deferred={deferred}: {at_v1:?}"
        );
        // The deferred read starts from no index of the revision, as a first open does.
        drop(engine);
        let revision_dir = EngineOptions::default()
            .store
            .revision_dir(&dir.path().canonicalize().unwrap(), &revision.commit)
            .unwrap();
        let _ = std::fs::remove_dir_all(revision_dir);
    }
    let live = codectx_retrieval::Engine::open(dir.path(), EngineOptions::default())
        .await
        .unwrap();
    assert!(
        notes(live.store().chunks(None).await.unwrap()).contains("stop crashing on empty input")
    );
}

/// Every worktree of a repository answers a ref from one copy of its files and index,
/// written once; a subdirectory indexed on its own keeps its own (another set of files).
#[tokio::test]
async fn worktrees_answer_a_ref_from_one_copy() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(&dir.path().join("main"));
    tag_then_rename(&mut repo, |_| {});
    let task = repo.add_worktree(&dir.path().join("task"), "task");

    let (main_root, task_root) = (
        repo.root().canonicalize().unwrap(),
        task.root().canonicalize().unwrap(),
    );
    let revision = resolve_revision(&main_root, "v1").unwrap();
    let main_engine = open_at_revision(&main_root, &revision, EngineOptions::default())
        .await
        .unwrap();
    let task_engine = open_at_revision(&task_root, &revision, EngineOptions::default())
        .await
        .unwrap();
    let shared = main_engine.project().root().to_path_buf();
    assert_eq!(task_engine.project().root(), shared, "one copy");
    assert!(shared.starts_with(main_root.join(".git/codectx/refs")));
    assert!(names(&task_engine).contains(&"src/lib/math.ts > add".to_string()));
    assert!(!task_root.join(".codectx").exists());

    // `<refs>/<view>/<commit>/tree`: a subdirectory root is another view.
    let subdirectory = EngineOptions::default()
        .store
        .revision_dir(&main_root.join("src"), &revision.commit)
        .unwrap();
    let view = |dir: &std::path::Path| dir.parent().map(std::path::Path::to_path_buf);
    assert_ne!(view(&subdirectory), shared.parent().and_then(view));
}

/// Revisions an earlier version kept beside a worktree's index (`<root>/.codectx/refs`) are
/// read no more: an open removes those no process used within the hour, and leaves one in use.
#[tokio::test]
async fn revisions_an_earlier_version_kept_beside_the_index_go_once_unused() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = GitRepo::init(dir.path());
    repo.write("src/a.ts", "export const a = 1;\n");
    repo.commit("first");
    repo.git(&["tag", "v1"]);
    let root = dir.path().canonicalize().unwrap();
    let old = root.join(".codectx/refs");
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for (name, used) in [
        ("unused", two_hours_ago),
        ("in-use", std::time::SystemTime::now()),
    ] {
        std::fs::create_dir_all(old.join(name).join("tree")).unwrap();
        std::fs::File::create(old.join(name).join("used"))
            .unwrap()
            .set_modified(used)
            .unwrap();
    }
    let revision = resolve_revision(&root, "v1").unwrap();
    let engine = open_at_revision(&root, &revision, EngineOptions::default())
        .await
        .unwrap();
    assert!(names(&engine).contains(&"src/a.ts > a".to_string()));
    assert!(!old.join("unused").exists());
    assert!(old.join("in-use").is_dir());
    assert!(
        engine
            .project()
            .root()
            .starts_with(root.join(".git/codectx/refs"))
    );
}
