//! After a sync, the engine patches its in-memory project for the files that changed; the
//! result must be the project a fresh load of the index gives: same files, chunks, facts
//! and cross-file edges.

mod common;

use codectx_retrieval::{Engine, EngineOptions, Project};
use codectx_store::StoreOptions;

use common::render;

/// The default options but history (these tests' trees are not repositories).
fn without_history() -> EngineOptions {
    EngineOptions {
        store: StoreOptions {
            history: codectx_store::HistoryOptions {
                max_commits: 0,
                ..Default::default()
            },
            ..StoreOptions::default()
        },
        ..EngineOptions::default()
    }
}

#[tokio::test]
async fn a_patched_project_equals_a_fresh_load() {
    let root = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/search"), root.path());
    let mut engine = Engine::open(root.path(), without_history()).await.unwrap();

    // An edit that adds a cross-file call, a new file calling into another, a removal.
    let session = root.path().join("src/auth/session.ts");
    let source = std::fs::read_to_string(&session).unwrap();
    std::fs::write(
        &session,
        format!(
            "import {{ slugify }} from \"../utils/slugify\";\n{source}\nexport function sessionSlug(id: string): string {{\n  return slugify(id);\n}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.path().join("src/auth/logout.ts"),
        "import { endSession } from \"./session\";\n\nexport function logout(token: string) {\n  endSession(token);\n}\n",
    )
    .unwrap();
    std::fs::remove_file(root.path().join("src/utils/retry.ts")).unwrap();

    let stats = engine.refresh(&()).await.unwrap();
    assert_eq!(
        stats.changed_paths,
        [
            "src/auth/logout.ts",
            "src/auth/session.ts",
            "src/utils/retry.ts"
        ]
    );
    let patched = render(engine.project());
    let line = |needle: &str| -> String {
        patched
            .lines()
            .find(|l| l.starts_with("decl") && l.contains(needle))
            .unwrap_or_default()
            .to_string()
    };
    // The new edges, across files, in both directions.
    assert!(line("logout.ts").contains("endSession"), "{patched}");
    assert!(line("sessionSlug").contains("slugify"), "{patched}");
    assert!(!patched.contains("src/utils/retry.ts"), "{patched}");
    let fresh = render(&Project::from_index(engine.store()).await.unwrap());
    assert_eq!(patched, fresh);
}

/// A project patched from what each sync hands over (its change set) is the project a
/// fresh load of the index gives: the first build, an edit, a new file and a removal, and
/// another process's sync, whose files alone are read from the index.
#[tokio::test]
async fn a_syncs_change_set_patches_the_project_to_a_fresh_load() {
    let root = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/search"), root.path());
    let options = || StoreOptions {
        hand_over_changes: true,
        history: codectx_store::HistoryOptions {
            max_commits: 0,
            ..Default::default()
        },
        ..StoreOptions::default()
    };
    let same_as_a_fresh_load = |project: &Project, fresh: &Project| {
        assert!(
            project.chunks().eq(fresh.chunks()),
            "the patched chunks differ from the index's"
        );
        assert_eq!(render(project), render(fresh));
    };
    let mut store = codectx_store::Store::open(root.path(), options())
        .await
        .unwrap();
    store.sync(None, &()).await.unwrap();
    let first = store
        .take_changes()
        .expect("the sync hands its changes over");
    assert!(store.take_changes().is_none(), "handed out once");
    assert!(
        first.complete,
        "a new index's changes are the whole project"
    );
    let mut project = Project::from_changes(&store, first).unwrap();
    assert!(project.chunks().count() > 20);
    same_as_a_fresh_load(&project, &Project::from_index(&store).await.unwrap());

    // This store's own sync: an edit, a new file, a removal.
    let edited = common::edit_add_and_remove(root.path());
    store.sync(None, &()).await.unwrap();
    let changes = store.take_changes().unwrap();
    assert!(!changes.complete);
    assert_eq!(changes.rewritten, edited);
    assert!(changes.elsewhere.is_empty(), "nothing to read back");
    // Built before the patch, the name index is patched or dropped with it.
    project.prepare_search();
    project.apply_changes(&store, changes).await.unwrap();
    same_as_a_fresh_load(&project, &Project::from_index(&store).await.unwrap());

    // Another process's sync: only its file is read from the index.
    let mut other = codectx_store::Store::open(root.path(), StoreOptions::default())
        .await
        .unwrap();
    std::fs::write(
        root.path().join("src/auth/logout.ts"),
        "export function logout() {}\n",
    )
    .unwrap();
    other.sync(None, &()).await.unwrap();
    store.sync(None, &()).await.unwrap();
    let changes = store.take_changes().unwrap();
    assert!(changes.rewritten.is_empty(), "{:?}", changes.rewritten);
    assert_eq!(changes.elsewhere, ["src/auth/logout.ts"]);
    project.prepare_search();
    project.apply_changes(&store, changes).await.unwrap();
    same_as_a_fresh_load(&project, &Project::from_index(&store).await.unwrap());
}

/// A module configuration edited, then removed, while the engine runs: its next sync (one
/// scoped to the configuration's directory, then one of the whole tree) resolves imports
/// again, and the project equals a fresh load.
#[tokio::test]
async fn a_module_configuration_edit_resolves_imports_again() {
    let root = tempfile::tempdir().unwrap();
    common::write_aliased_greet(root.path());
    let write = |path: &str, text: &str| common::write_file(root.path(), path, text);
    let paths = common::tsconfig_paths;
    let mut engine = Engine::open(root.path(), without_history()).await.unwrap();
    let main_calls = |project: &Project| {
        render(project)
            .lines()
            .find(|l| l.starts_with("decl src/main.ts::main"))
            .unwrap()
            .to_string()
    };
    assert!(main_calls(engine.project()).contains("src/lib/greet.ts::greet"));

    write("tsconfig.json", &paths("src/alternative"));
    let scope = codectx_retrieval::SyncScope::Directories([String::new()].into());
    let stats = engine.refresh_in(&scope, &()).await.unwrap();
    assert!(stats.changed_paths.is_empty(), "no source file changed");
    assert!(main_calls(engine.project()).contains("src/alternative/greet.ts::greet"));
    let fresh = Project::from_index(engine.store()).await.unwrap();
    assert_eq!(render(engine.project()), render(&fresh));

    std::fs::remove_file(root.path().join("tsconfig.json")).unwrap();
    engine.refresh(&()).await.unwrap();
    assert!(main_calls(engine.project()).contains("calls []"));
    let fresh = Project::from_index(engine.store()).await.unwrap();
    assert_eq!(render(engine.project()), render(&fresh));
}
