//! A project saved beside the index (`project.image`) loads back as the project a fresh
//! load of the index gives, with a later sync's changes applied to it; an image of another
//! state, or one that does not read, is not used.

mod common;

use codectx_retrieval::{Engine, EngineOptions, FromImage, Project};
use codectx_store::{Store, StoreOptions};

/// Files, chunks (every field), every declaration's callees and callers, and every
/// file's facts and resolutions.
fn assert_same(project: &Project, fresh: &Project) {
    assert!(
        project.chunks().eq(fresh.chunks()),
        "the chunks differ from the index's"
    );
    assert_eq!(common::render(project), common::render(fresh));
    let facts = |project: &Project| -> Vec<_> {
        project
            .graph()
            .files()
            .iter()
            .map(|f| (f.path.clone(), f.facts().clone(), f.resolved.clone()))
            .collect()
    };
    assert!(
        facts(project) == facts(fresh),
        "the facts or resolutions differ"
    );
}

fn store_options() -> StoreOptions {
    StoreOptions {
        hand_over_changes: true,
        history: codectx_store::HistoryOptions {
            max_commits: 0,
            ..Default::default()
        },
        ..StoreOptions::default()
    }
}

/// The calls of `main` in `src/main.ts`, by id.
fn main_calls(project: &Project) -> Vec<String> {
    let graph = project.graph();
    let main = graph
        .find_by_name("main")
        .into_iter()
        .next()
        .expect("main is declared");
    graph
        .callees(main)
        .iter()
        .map(|(c, _)| graph.symbol_id(*c))
        .collect()
}

/// Loads the image as an engine's open does: the state before a sync, then the sync's
/// change set applied.
async fn sync_and_load_image(root: &std::path::Path) -> (Store, Option<FromImage>) {
    let mut store = Store::open(root, store_options()).await.unwrap();
    let before = store.content_digest();
    store.sync(None, &()).await.unwrap();
    let changes = store.take_changes();
    let loaded = Project::from_image(&store, &before, changes).await.unwrap();
    (store, loaded)
}

#[tokio::test]
async fn a_project_from_its_image_equals_a_fresh_load() {
    let root = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/search"), root.path());
    common::write_aliased_greet(root.path());
    let write = |path: &str, text: &str| common::write_file(root.path(), path, text);
    let paths = common::tsconfig_paths;
    let options = EngineOptions {
        store: store_options(),
        ..EngineOptions::default()
    };
    // The first build's project, saved.
    let mut engine = Engine::open(root.path(), options.clone()).await.unwrap();
    let image = root.path().join(".codectx/project.image");
    assert!(!image.exists(), "saved only when asked");
    engine.save_project_image();
    assert!(image.is_file());
    drop(engine);

    // Nothing changed since: the image is the project, with nothing applied.
    let (store, loaded) = sync_and_load_image(root.path()).await;
    let FromImage { project, patched } = loaded.expect("the image of this state is used");
    assert!(!patched);
    assert_same(&project, &Project::from_index(&store).await.unwrap());
    assert_eq!(main_calls(&project), ["src/lib/greet.ts::greet@1"]);
    drop(store);

    // Only a module configuration changed: the files are the image's, its links are not.
    write("tsconfig.json", &paths("src/alternative"));
    let (store, loaded) = sync_and_load_image(root.path()).await;
    let FromImage { project, patched } = loaded.expect("the image of these files is used");
    assert!(patched, "imports resolve again");
    assert_same(&project, &Project::from_index(&store).await.unwrap());
    assert_eq!(main_calls(&project), ["src/alternative/greet.ts::greet@1"]);
    drop(store);

    // An edit, a new file and a removal: the image is of the state before the sync, which
    // hands them over.
    common::edit_add_and_remove(root.path());
    let (store, loaded) = sync_and_load_image(root.path()).await;
    let FromImage { project, patched } =
        loaded.expect("the image of the state before the sync is used");
    assert!(patched);
    assert_same(&project, &Project::from_index(&store).await.unwrap());
    assert_eq!(main_calls(&project), ["src/alternative/greet.ts::greet@1"]);

    // The image is still of the old state: not used for the new one.
    let now = store.content_digest();
    assert!(
        Project::from_image(&store, &now, None)
            .await
            .unwrap()
            .is_none()
    );
    drop(store);

    // An engine opened now loads from the index and saves the image of this state.
    Engine::open(root.path(), options.clone())
        .await
        .unwrap()
        .save_project_image();
    let (store, loaded) = sync_and_load_image(root.path()).await;
    let FromImage { project, patched } = loaded.expect("the saved image is used");
    assert!(!patched);
    assert_same(&project, &Project::from_index(&store).await.unwrap());

    // An image cut short, with a byte of its facts changed (they are decoded only when
    // read, so a digest guards them), with chunks pointing past its texts, or not an image
    // at all, is not used, and nothing panics.
    let bytes = std::fs::read(&image).unwrap();
    let section_end = |at: usize| {
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        at + 8 + len as usize
    };
    // The magic and the state's digest, then the root, then the graph: its facts last.
    let graph_end = section_end(section_end(16 + 32));
    let mut facts_changed = bytes.clone();
    facts_changed[graph_end - 3] ^= 0x20;
    // Then the files, then the texts their chunks point into: here, none.
    let files_end = section_end(graph_end);
    let mut texts_missing = bytes[..files_end].to_vec();
    texts_missing.extend(0u64.to_le_bytes());
    for damaged in [
        facts_changed,
        texts_missing,
        bytes[..bytes.len() / 2].to_vec(),
        bytes[..bytes.len() - 1].to_vec(),
        b"codectx-project\x03".repeat(5),
        Vec::new(),
    ] {
        std::fs::write(&image, &damaged).unwrap();
        let now = store.content_digest();
        assert!(
            Project::from_image(&store, &now, None)
                .await
                .unwrap()
                .is_none(),
            "a damaged image of {} bytes was used",
            damaged.len()
        );
    }
    // An engine opening over it loads from the index and puts a good image back.
    drop(store);
    Engine::open(root.path(), options)
        .await
        .unwrap()
        .save_project_image();
    let (_store, loaded) = sync_and_load_image(root.path()).await;
    assert!(loaded.is_some());
}

/// A save removes what a killed save left half written, but not another process's save
/// in progress.
#[tokio::test]
async fn a_save_removes_images_killed_writers_left() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.ts"), "export function a() {}\n").unwrap();
    let options = EngineOptions {
        store: store_options(),
        ..EngineOptions::default()
    };
    let mut engine = Engine::open(root.path(), options).await.unwrap();
    let dir = root.path().join(".codectx");
    let abandoned = dir.join("project.image.4242.tmp");
    let in_progress = dir.join("project.image.4343.tmp");
    for path in [&abandoned, &in_progress] {
        std::fs::write(path, b"half an image").unwrap();
    }
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&abandoned)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    engine.save_project_image();
    assert!(dir.join("project.image").is_file());
    assert!(!abandoned.exists(), "an abandoned image is removed");
    assert!(in_progress.exists(), "a recent one may be another save's");
    // The index still opens: what it holds beside its tables is its own.
    drop(engine);
    let (_store, loaded) = sync_and_load_image(root.path()).await;
    assert!(loaded.is_some());
}
