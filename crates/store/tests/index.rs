//! The blueprint's Phase 7 fixtures (`fixtures/index/`) and the store's fault handling.
//!
//! Every case copies `fixtures/index/workspace/` (five files) to a temporary root, syncs,
//! applies one change, syncs again, and snapshots the second sync's counters, the texts it
//! embedded and the chunk table. Every case also checks that the incremental result equals
//! a clean build of the same files in a fresh index.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use codectx_store::testing::TokenHashEmbedder;
use codectx_store::{
    Embedder, FileStatus, Shared, Store, StoreError, StoreOptions, StoredChunk, SyncScope,
    SyncStats, TextSearch, default_index_dir,
};

const DIMENSION: usize = 16;

fn fixtures() -> PathBuf {
    codectx_corpus::fixture("index")
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&fixtures().join("workspace"), dir.path());
    dir
}

/// A git repository at `<dir>/main` whose one commit is the workspace fixture: the main
/// worktree the worktree cases add others to.
fn workspace_repository(dir: &Path) -> codectx_corpus::GitRepo {
    let mut repo = codectx_corpus::GitRepo::init(&dir.join("main"));
    codectx_corpus::copy_tree(&fixtures().join("workspace"), repo.root());
    repo.commit("workspace");
    repo
}

/// `src/gen{i}.ts` of [`repository_of_steps`]: a function adding `step`.
fn step_file(i: usize, step: usize) -> String {
    format!("export function step{i}(x: number) {{\n  return x + {step};\n}}\n")
}

/// [`workspace_repository`] with 40 generated files committed: enough that a switch between
/// two versions of them is worth a restore (`revisit.rs`).
fn repository_of_steps(dir: &Path) -> codectx_corpus::GitRepo {
    let mut repo = workspace_repository(dir);
    for i in 0..40 {
        repo.write(&format!("src/gen{i}.ts"), &step_file(i, 0));
    }
    repo.commit("generated steps");
    repo
}

/// On a new branch `branch` of `repo`'s worktree, every generated file one step further,
/// committed.
fn steps_forward(repo: &mut codectx_corpus::GitRepo, branch: &str) {
    repo.git(&["checkout", "-q", "-b", branch]);
    for i in 0..40 {
        repo.write(&format!("src/gen{i}.ts"), &step_file(i, 1));
    }
    repo.commit("every step one further");
}

/// A sync after a branch switch restored a kept version and then parsed, wrote and
/// embedded nothing (`revisit.rs`).
fn assert_restored_writing_nothing(stats: &SyncStats) {
    assert!(
        stats.revisited.is_some(),
        "no kept version restored: {stats:?}"
    );
    assert_eq!(
        (
            stats.files_parsed,
            stats.chunks_written,
            stats.chunks_embedded
        ),
        (0, 0, 0),
        "the switch wrote rows: {stats:?}"
    );
}

/// [`workspace_repository`] with a worktree at `<dir>/task` on branch `task`.
fn repository_with_task(dir: &Path) -> (codectx_corpus::GitRepo, PathBuf) {
    let repo = workspace_repository(dir);
    let task = dir.join("task");
    repo.add_worktree(&task, "task");
    (repo, task)
}

/// `options` with the index of the repository at `dir` (a [`repository_with_task`]) in a
/// directory of its own: the task's first index is then built from the shared caches, not
/// cloned from the main worktree's (`a_worktrees_first_index_is_a_clone_of_the_main_worktrees`).
fn main_apart(dir: &Path, options: StoreOptions) -> StoreOptions {
    StoreOptions {
        uri: Some(dir.join("main-index").to_string_lossy().into_owned()),
        ..options
    }
}

/// The blueprint's cases count what the store itself sends to the model: no vectors shared
/// between indexes (`shared_vectors_*` tests cover sharing).
fn options(embedder: &TokenHashEmbedder) -> StoreOptions {
    StoreOptions {
        embedding: Some(embedder.spec()),
        shared_vectors: Shared::Off,
        ..StoreOptions::default()
    }
}

async fn sync(store: &mut Store, embedder: &TokenHashEmbedder) -> SyncStats {
    store
        .sync(Some(embedder as &dyn Embedder), &())
        .await
        .unwrap()
}

/// Rows sorted by file and line. Every call also checks that the projected read a search
/// loads its project with (`code_chunks`) gives the same chunks.
async fn rows(store: &Store) -> Vec<StoredChunk> {
    let mut rows = store.chunks(None).await.unwrap();
    rows.sort_by(|a, b| {
        (&a.chunk.relative_path, a.chunk.start_line, &a.chunk.id).cmp(&(
            &b.chunk.relative_path,
            b.chunk.start_line,
            &b.chunk.id,
        ))
    });
    let mut code = store.code_chunks(None).await.unwrap();
    code.sort_by(|a, b| {
        (&a.relative_path, a.start_line, &a.id).cmp(&(&b.relative_path, b.start_line, &b.id))
    });
    assert!(
        code.iter().eq(rows.iter().map(|r| &r.chunk)),
        "the projected chunks differ from the full rows"
    );
    rows
}

fn render_rows(rows: &[StoredChunk]) -> String {
    rows.iter()
        .map(|r| {
            format!(
                "{} L{}-{} [{}] {} vector:{} hash:{}",
                r.chunk.relative_path,
                r.chunk.start_line,
                r.chunk.end_line,
                r.chunk.node_kind,
                r.chunk.breadcrumb,
                if r.vector.is_some() { "yes" } else { "NO" },
                &r.content_hash[..8],
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a case's second sync did: counters, the first line of each embedded text, rows.
fn report(stats: &SyncStats, embedded: &[String], rows: &[StoredChunk]) -> String {
    let mut embedded: Vec<&str> = embedded
        .iter()
        .map(|t| {
            t.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
        })
        .collect();
    embedded.sort();
    format!(
        "{}\nembedded:\n{}\nrows:\n{}\n",
        serde_json::to_string_pretty(stats).unwrap(),
        embedded
            .iter()
            .map(|t| format!("  {t}"))
            .collect::<Vec<_>>()
            .join("\n"),
        render_rows(rows)
    )
}

/// The incremental index must equal a clean build of the same files.
async fn assert_same_as_clean_build(root: &Path, store: &Store) {
    assert_same_contents(
        &contents(store).await,
        &clean_build(root).await,
        "incremental",
    );
}

/// What a clean build of the tree at `root` holds: rows and file records.
async fn clean_build(root: &Path) -> (Vec<String>, Vec<codectx_store::FileRecord>) {
    let (_dir, clean) = clean_index(root).await;
    contents(&clean).await
}

/// A clean build of the tree at `root` in a directory of its own: every file is parsed,
/// nothing comes from the repository's shared parses.
async fn clean_index(root: &Path) -> (tempfile::TempDir, Store) {
    let embedder = TokenHashEmbedder::new(DIMENSION);
    clean_index_with(root, options(&embedder), &embedder).await
}

/// [`clean_index`] with `options` (history as they say).
async fn clean_index_with(
    root: &Path,
    options: StoreOptions,
    embedder: &TokenHashEmbedder,
) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let mut clean = Store::open(
        root,
        StoreOptions {
            uri: Some(dir.path().to_string_lossy().into_owned()),
            shared_parses: Shared::Off,
            ..options
        },
    )
    .await
    .unwrap();
    sync(&mut clean, embedder).await;
    (dir, clean)
}

/// An index's rows (rendered in full, but for `lastModified`) and file records (facts left
/// out), sorted. A row's `lastModified` is the mtime its content was indexed at: a touched
/// file keeps its rows, and a clean build made later sees a later mtime.
async fn contents(store: &Store) -> (Vec<String>, Vec<codectx_store::FileRecord>) {
    let rows = rows(store)
        .await
        .into_iter()
        .map(|r| {
            format!(
                "{:?}",
                StoredChunk {
                    last_modified: 0,
                    ..r
                }
            )
        })
        .collect();
    let mut files: Vec<_> = store.files().cloned().collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.iter_mut().for_each(|f| f.facts = None);
    (rows, files)
}

fn assert_same_contents(
    ours: &(Vec<String>, Vec<codectx_store::FileRecord>),
    clean: &(Vec<String>, Vec<codectx_store::FileRecord>),
    what: &str,
) {
    for (a, b) in ours.0.iter().zip(&clean.0) {
        assert_eq!(a, b, "{what} != clean build");
    }
    assert_eq!(ours.0.len(), clean.0.len(), "{what} != clean build");
    assert_eq!(ours.1, clean.1, "{what} != clean build");
}

fn set_mtime(path: &Path, secs_later: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    let now = file.metadata().unwrap().modified().unwrap();
    file.set_modified(now + Duration::from_secs(secs_later))
        .unwrap();
}

/// Runs one Phase 7 case: initial sync, `change`, second sync, snapshot.
async fn case(name: &str, change: impl FnOnce(&Path)) {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
    sync(&mut store, &embedder).await;
    embedder.take_seen();
    change(root.path());
    let stats = sync(&mut store, &embedder).await;
    let rows = rows(&store).await;
    insta::assert_snapshot!(name, report(&stats, &embedder.take_seen(), &rows));
    assert_same_as_clean_build(root.path(), &store).await;
}

#[tokio::test]
async fn initial_build() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
    let stats = sync(&mut store, &embedder).await;
    let rows = rows(&store).await;
    assert!(rows.iter().all(|r| r.vector.is_some()));
    insta::assert_snapshot!(
        "initial-build",
        report(&stats, &embedder.take_seen(), &rows)
    );
    // The default location keeps itself out of git.
    let ignore = std::fs::read_to_string(root.path().join(".codectx/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "*"));
}

#[tokio::test]
async fn no_change() {
    case("no-change", |_| {}).await;
}

#[tokio::test]
async fn mtime_only() {
    case("mtime-only", |root| {
        set_mtime(&root.join("src/auth/session.ts"), 60);
        set_mtime(&root.join("src/util/format.ts"), 60);
    })
    .await;
}

#[tokio::test]
async fn content_change() {
    case("content-change", |root| {
        codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), root);
        set_mtime(&root.join("src/util/format.ts"), 60);
    })
    .await;
}

#[tokio::test]
async fn file_added() {
    case("file-added", |root| {
        codectx_corpus::copy_tree(&fixtures().join("edits/file-added"), root)
    })
    .await;
}

#[tokio::test]
async fn file_removed() {
    case("file-removed", |root| {
        std::fs::remove_file(root.join("src/auth/session.ts")).unwrap()
    })
    .await;
}

/// A sync scoped to the directories a watcher reported reads their files alone: an edit,
/// a new file and a removed one there are taken in, a change elsewhere waits for a sync of
/// the whole tree, which then gives a clean build's index.
#[tokio::test]
async fn a_sync_scoped_to_directories_reads_only_them() {
    let root = workspace();
    let root = root.path();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root, options(&embedder)).await.unwrap();
    sync(&mut store, &embedder).await;
    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), root);
    set_mtime(&root.join("src/util/format.ts"), 60);
    codectx_corpus::copy_tree(&fixtures().join("edits/file-added"), root);
    std::fs::remove_file(root.join("src/auth/session.ts")).unwrap();
    std::fs::write(root.join("top.ts"), "export const top = 1;\n").unwrap();

    // The root is named "".
    let scope = SyncScope::Directories(
        [
            "".to_string(),
            "src/api".to_string(),
            "src/auth".to_string(),
        ]
        .into(),
    );
    let stats = store
        .sync_in(&scope, Some(&embedder as &dyn Embedder), &())
        .await
        .unwrap();
    assert_eq!(
        stats.changed_paths,
        ["src/api/health.ts", "src/auth/session.ts", "top.ts"],
        "{stats:?}"
    );
    assert_eq!(
        (stats.files_seen, stats.files_removed, stats.files_unchanged),
        (6, 1, 4),
        "the index's six files now, one removed, four not seen moving (format.ts is outside)"
    );
    let paths: Vec<&str> = store.files().map(|f| f.path.as_str()).collect();
    assert!(paths.contains(&"src/api/health.ts") && !paths.contains(&"src/auth/session.ts"));

    let stats = sync(&mut store, &embedder).await;
    assert_eq!(stats.changed_paths, ["src/util/format.ts"], "{stats:?}");
    assert_same_as_clean_build(root, &store).await;
}

#[tokio::test]
async fn signature_cascade() {
    case("signature-cascade", |root| {
        codectx_corpus::copy_tree(&fixtures().join("edits/signature-cascade"), root);
        set_mtime(&root.join("src/auth/token.ts"), 60);
    })
    .await;
}

/// The cascade reaching a file that is only touched in the same sync: its rows are
/// rewritten once (new `lastModified`, no vector), never sent twice.
#[tokio::test]
async fn signature_cascade_into_a_touched_file() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
    sync(&mut store, &embedder).await;
    embedder.take_seen();
    codectx_corpus::copy_tree(&fixtures().join("edits/signature-cascade"), root.path());
    set_mtime(&root.path().join("src/auth/token.ts"), 60);
    set_mtime(&root.path().join("src/auth/contracts.ts"), 60);
    let stats = sync(&mut store, &embedder).await;
    assert_eq!(
        (
            stats.files_parsed,
            stats.files_touched,
            stats.chunks_cascaded,
            stats.chunks_embedded
        ),
        (1, 1, 2, 4),
        "{stats:?}"
    );
    assert_same_as_clean_build(root.path(), &store).await;
}

/// A touched file (new mtime, same content) is hashed once: its files row stays as the
/// content was indexed, the new stat data is a stamp beside the table (no commit), and a
/// restart reads the stamp instead of hashing the file again. A stamp left for content the
/// row no longer holds counts for nothing.
#[tokio::test]
async fn a_touch_is_a_stamp_beside_the_files_table_and_survives_a_restart() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    {
        let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
        sync(&mut store, &embedder).await;
        set_mtime(&root.path().join("src/auth/token.ts"), 60);
        let stats = sync(&mut store, &embedder).await;
        assert_eq!(
            (stats.files_touched, stats.files_parsed, stats.commits),
            (1, 0, 0),
            "{stats:?}"
        );
        assert_same_as_clean_build(root.path(), &store).await;
    }
    let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
    let stats = sync(&mut store, &embedder).await;
    assert_eq!(
        (stats.files_touched, stats.files_unchanged, stats.commits),
        (0, stats.files_seen, 0),
        "{stats:?}"
    );
    assert_same_as_clean_build(root.path(), &store).await;

    // The file changes content: its row is rewritten, its stamp goes.
    std::fs::write(
        root.path().join("src/auth/token.ts"),
        "export function signToken() {\n  return 'changed';\n}\n",
    )
    .unwrap();
    set_mtime(&root.path().join("src/auth/token.ts"), 120);
    let stats = sync(&mut store, &embedder).await;
    assert_eq!(stats.files_parsed, 1, "{stats:?}");
    assert_same_as_clean_build(root.path(), &store).await;
    // The stamps are JSON in a zstd frame.
    let stamps =
        std::fs::read(codectx_store::default_index_dir(root.path()).join("touched.stamps"))
            .unwrap();
    let stamps = String::from_utf8(zstd::stream::decode_all(stamps.as_slice()).unwrap()).unwrap();
    assert!(!stamps.contains("token.ts"), "{stamps}");
}

/// A restart reads the files table and cached facts: nothing is parsed again, and the
/// structural graph links from the cache exactly as from the sources.
#[tokio::test]
async fn restart_parses_nothing_and_graph_links_from_cached_facts() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    {
        let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
        sync(&mut store, &embedder).await;
    }
    let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
    let stats = sync(&mut store, &embedder).await;
    assert_eq!(
        (stats.files_parsed, stats.chunks_embedded, stats.commits),
        (0, 0, 0)
    );
    assert_eq!(stats.files_unchanged, 5);

    let facts = store.load_facts().await.unwrap();
    let cached = codectx_graph::ProjectGraph::from_facts(
        store.root(),
        facts.into_iter().map(|(p, f)| (store.root().join(p), f)),
    );
    let parsed = codectx_graph::ProjectGraph::load(store.root()).unwrap();
    let describe = |g: &codectx_graph::ProjectGraph| {
        let mut out: Vec<String> = g
            .symbols()
            .map(|s| {
                let callers: Vec<String> =
                    g.callers(s).iter().map(|(c, _)| g.caller_id(*c)).collect();
                format!("{} <- {:?}", g.symbol_id(s), callers)
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(describe(&cached), describe(&parsed));
    assert!(
        describe(&cached)
            .iter()
            .any(|l| l.contains("signToken") && l.contains("open"))
    );
}

/// Facts written by another version of the graph's extractor are extracted again, once:
/// every file is parsed, no vector is recomputed.
#[tokio::test]
async fn stale_facts_are_extracted_again_keeping_vectors() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    {
        let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
        sync(&mut store, &embedder).await;
    }
    // Pretend an older extractor wrote the facts.
    let uri = root.path().join(".codectx");
    let db = lancedb::connect(uri.to_str().unwrap())
        .execute()
        .await
        .unwrap();
    let meta = db.open_table("meta").execute().await.unwrap();
    meta.update()
        .only_if("key = 'facts'")
        .column("value", "'1'")
        .execute()
        .await
        .unwrap();

    let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
    let stats = sync(&mut store, &embedder).await;
    assert_eq!((stats.files_parsed, stats.chunks_embedded), (5, 0));
    assert!(
        store
            .load_facts()
            .await
            .unwrap()
            .iter()
            .all(|(_, f)| f.version == codectx_graph::facts::FACTS_VERSION)
    );
    let stats = sync(&mut store, &embedder).await;
    assert_eq!((stats.files_parsed, stats.commits), (0, 0));
}

/// Build output, dependencies, minified bundles, binary and non-UTF-8 files never become
/// chunks; the ones the walk sees are recorded as skipped with the reason.
#[tokio::test]
async fn enumeration_skips_what_is_not_source() {
    let root = workspace();
    let r = root.path();
    for (path, content) in [
        (
            "node_modules/dep/index.js",
            b"export const dep = 1;\n".to_vec(),
        ),
        ("dist/app.js", b"export const built = 1;\n".to_vec()),
        ("generated/out.ts", b"export const gen = 1;\n".to_vec()),
        ("src/vendor/lib.min.js", b"var a=1;\n".to_vec()),
        (
            "src/vendor/bundle.js",
            format!("var x=[{}];\n", "1,".repeat(20_000)).into_bytes(),
        ),
        ("src/data/blob.ts", vec![0u8, 159, 146, 150, 0, 1]),
        (
            "src/data/latin1.ts",
            b"export const caf\xe9 = 1;\n".to_vec(),
        ),
        ("src/types.d.ts", b"declare const x: number;\n".to_vec()),
    ] {
        std::fs::create_dir_all(r.join(path).parent().unwrap()).unwrap();
        std::fs::write(r.join(path), content).unwrap();
    }
    std::fs::write(r.join(".gitignore"), "generated/\n").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(r, r.join("src/loop")).unwrap();

    let mut store = Store::open(r, StoreOptions::default()).await.unwrap();
    let stats = store.sync(None, &()).await.unwrap();
    let mut files: Vec<String> = store
        .files()
        .map(|f| format!("{} {}", f.path, f.status.as_str()))
        .collect();
    files.sort();
    insta::assert_snapshot!(
        "enumeration",
        format!(
            "{}\n{}",
            serde_json::to_string_pretty(&stats).unwrap(),
            files.join("\n")
        )
    );
    let paths: std::collections::HashSet<String> = rows(&store)
        .await
        .into_iter()
        .map(|r| r.chunk.relative_path)
        .collect();
    assert_eq!(paths.len(), 5, "{paths:?}");
}

/// A file the parser panics on (oxc 0.146's debug assertion on a pure annotation before a
/// line comment, reached in this test profile) is indexed as unparsed text: the sync ends,
/// the file has its row and its lines, and the other files are indexed as ever.
#[tokio::test]
async fn a_file_the_parser_panics_on_does_not_stop_the_sync() {
    let root = workspace();
    let r = root.path();
    std::fs::write(
        r.join("src/pure.js"),
        "export function make() {\n  return (\n    /*#__PURE__*/\n    // why\n    0\n  );\n}\n",
    )
    .unwrap();
    let parses = tempfile::tempdir().unwrap();
    let sharing = || StoreOptions {
        shared_parses: Shared::At(parses.path().to_path_buf()),
        ..StoreOptions::default()
    };
    let mut store = Store::open(r, sharing()).await.unwrap();
    let first = store.sync(None, &()).await.unwrap();
    let pure = store.files().find(|f| f.path == "src/pure.js").unwrap();
    assert!(
        matches!(pure.status, FileStatus::Indexed | FileStatus::Recovered),
        "{:?}",
        pure.status
    );
    let rows = rows(&store).await;
    let lines: Vec<(u32, u32)> = rows
        .iter()
        .filter(|r| r.chunk.relative_path == "src/pure.js" && r.chunk.depth == 0)
        .map(|r| (r.chunk.start_line, r.chunk.end_line))
        .collect();
    assert_eq!(lines, [(1, 7)], "the file's lines are one root chunk");
    let plain = workspace();
    let (_dir, clean) = clean_index(plain.path()).await;
    let others = |store: &Store| -> Vec<String> {
        let mut files: Vec<String> = store
            .files()
            .filter(|f| f.path != "src/pure.js")
            .map(|f| format!("{} {}", f.path, f.status.as_str()))
            .collect();
        files.sort();
        files
    };
    assert_eq!(others(&store), others(&clean));
    // The failed parse is not shared. Both files change (a first build shares nothing):
    // a second checkout reads the other file's new version, and parses this one again.
    let pure = r.join("src/pure.js");
    let mut text = std::fs::read_to_string(&pure).unwrap();
    text.push_str("export const more = 1;\n");
    std::fs::write(&pure, text).unwrap();
    set_mtime(&pure, 60);
    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), r);
    set_mtime(&r.join("src/util/format.ts"), 60);
    let edit = store.sync(None, &()).await.unwrap();
    assert_eq!(edit.files_parsed, 2, "{edit:?}");
    let copy = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(r, copy.path());
    std::fs::remove_dir_all(copy.path().join(codectx_store::DEFAULT_INDEX_DIR)).unwrap();
    let mut second = Store::open(copy.path(), sharing()).await.unwrap();
    let stats = second.sync(None, &()).await.unwrap();
    assert_eq!(
        (stats.files_parsed, stats.files_shared),
        (first.files_parsed - 1, 1),
        "{stats:?}"
    );
}

/// Every chunk read back (ids, lines, spans, parent and children from the files' layouts) is
/// the chunk the chunker cuts from the file on disk, after a cold index and after an edit
/// that moves every row of a file without changing it: those rows stay as written.
#[tokio::test]
async fn chunks_read_back_are_the_chunks_cut() {
    let root = workspace();
    let mut store = Store::open(root.path(), StoreOptions::default())
        .await
        .unwrap();
    store.sync(None, &()).await.unwrap();
    let cut = |root: &Path| -> Vec<codectx_store::CodeChunk> {
        let mut chunks = Vec::new();
        for path in [
            "src/auth/session.ts",
            "src/auth/token.ts",
            "src/api/routes.ts",
        ] {
            let abs = root.join(path);
            let source = std::fs::read_to_string(&abs).unwrap();
            let parsed = codectx_parser::parse_source(path, &source);
            chunks.extend(codectx_chunker::chunk_file(
                &parsed,
                &source,
                &abs.to_string_lossy(),
            ));
        }
        chunks.sort_by(|a, b| a.id.cmp(&b.id));
        chunks
    };
    async fn read(store: &Store) -> Vec<codectx_store::CodeChunk> {
        let mut chunks = store
            .code_chunks(Some(
                "relativePath IN ('src/auth/session.ts', 'src/auth/token.ts', 'src/api/routes.ts')",
            ))
            .await
            .unwrap();
        chunks.sort_by(|a, b| a.id.cmp(&b.id));
        chunks
    }
    assert_eq!(read(&store).await, cut(root.path()));

    let file = root.path().join("src/auth/session.ts");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("\n\n\n{text}")).unwrap();
    let stats = store.sync(None, &()).await.unwrap();
    assert_eq!(
        (
            stats.files_parsed,
            stats.chunks_written,
            stats.chunks_deleted
        ),
        (1, 0, 0),
        "three lines above every chunk move them all and change none: {stats:?}"
    );
    assert!(stats.chunks_kept > 3, "{stats:?}");
    let now = read(&store).await;
    assert_eq!(now, cut(root.path()));
    let session = now.iter().find(|c| c.name == "SessionStore").unwrap();
    assert_eq!((session.start_line, session.child_chunk_ids.len()), (8, 4));
}

/// The blueprint's schema, field for field, plus the model recorded on the vector column,
/// but for what a chunk's position decides. `filePath` is not stored: a chunk read back
/// takes it from the root, so an index serves any checkout of the repository. `id`,
/// `parentChunkId`, `childChunkIds`, `startLine` and `endLine` (with the byte span and
/// symbol number) are the file's layout in the files table: a row is found by a `key` that
/// an edit above the chunk does not move (`chunks_read_back_are_the_chunks_cut` shows the
/// chunk read back whole).
#[tokio::test]
async fn chunk_table_schema_is_the_blueprint_code_chunk_but_its_position() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let store = Store::open(root.path(), options(&embedder)).await.unwrap();
    let schema = store.chunk_table().schema().await.unwrap();
    let fields: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| {
            let mut meta: Vec<_> = f
                .metadata()
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            meta.sort();
            format!(
                "{}: {} nullable={} {}",
                f.name(),
                f.data_type(),
                f.is_nullable(),
                meta.join(" ")
            )
        })
        .collect();
    insta::assert_snapshot!("schema", fields.join("\n"));
}

mod faults {
    use super::*;

    fn example() -> PathBuf {
        // `cargo test` builds the crate's examples next to the test binaries' directory.
        let exe = std::env::current_exe().unwrap();
        let dir = exe.parent().unwrap().parent().unwrap();
        let path = dir
            .join("examples")
            .join(format!("sync{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.exists(),
            "{} missing: run through cargo test",
            path.display()
        );
        path
    }

    /// A workspace big enough that each sync makes several embedding batches.
    fn larger_workspace() -> tempfile::TempDir {
        let root = workspace();
        for i in 0..40 {
            let dir = root.path().join(format!("src/gen/m{}", i % 4));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                dir.join(format!("mod{i}.ts")),
                format!(
                    "import {{ formatDuration }} from '../../../util/format';\n\n\
                     /** Module {i}. */\nexport function run{i}(n: number): string {{\n  return formatDuration(n * {i});\n}}\n\n\
                     export class Worker{i} {{\n  step(x: number): number {{\n    return x + {i};\n  }}\n}}\n"
                ),
            )
            .unwrap();
        }
        root
    }

    fn run_child(root: &Path, crash_at: Option<&str>) -> std::process::Output {
        let mut cmd = std::process::Command::new(example());
        cmd.arg(root).args(["--embed", &DIMENSION.to_string()]);
        if let Some(point) = crash_at {
            cmd.args(["--crash-at", point]);
        }
        cmd.output().unwrap()
    }

    /// Issue 40: a sync killed between restoring the chunk table and the files table of a
    /// version kept for a worktree (a branch switch back) leaves the index marked; the next
    /// sync repairs it to exactly a clean build of the tree.
    #[tokio::test]
    async fn a_switch_back_killed_mid_restore_is_repaired_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut repo = repository_of_steps(dir.path());
        assert!(run_child(repo.root(), None).status.success());
        let task_root = dir.path().join("task");
        repo.add_worktree(&task_root, "task");
        assert!(run_child(&task_root, None).status.success());
        steps_forward(&mut repo, "steps");
        assert!(run_child(repo.root(), None).status.success());

        repo.git(&["checkout", "-q", "-"]);
        let killed = run_child(repo.root(), Some("chunks-restored"));
        assert!(!killed.status.success(), "the child was not killed");
        let embedder = TokenHashEmbedder::new(DIMENSION);
        let mut store = Store::open(repo.root(), options(&embedder)).await.unwrap();
        let stats = sync(&mut store, &embedder).await;
        assert!(stats.repaired, "{stats:?}");
        assert_same_as_clean_build(repo.root(), &store).await;
    }

    /// Killed at each point of a sync (first build and incremental), the next sync repairs
    /// the index to exactly what a clean build gives.
    #[tokio::test]
    async fn a_sync_killed_anywhere_is_repaired_by_the_next() {
        for point in [
            "marked-dirty",
            "chunks-written",
            "files-written",
            "embedded",
        ] {
            for incremental in [false, true] {
                let root = larger_workspace();
                if incremental {
                    assert!(run_child(root.path(), None).status.success());
                    codectx_corpus::copy_tree(
                        &fixtures().join("edits/signature-cascade"),
                        root.path(),
                    );
                    codectx_corpus::copy_tree(&fixtures().join("edits/file-added"), root.path());
                    set_mtime(&root.path().join("src/auth/token.ts"), 60);
                    std::fs::remove_file(root.path().join("src/gen/m1/mod5.ts")).unwrap();
                }
                let killed = run_child(root.path(), Some(point));
                assert!(
                    !killed.status.success(),
                    "{point}: the child was not killed"
                );
                // Between the crash and the next sync, the user reverts one file and
                // deletes another: the repair must not trust the half-written rows.
                if incremental {
                    codectx_corpus::copy_tree(
                        &fixtures().join("workspace/src/auth"),
                        &root.path().join("src/auth"),
                    );
                    set_mtime(&root.path().join("src/auth/token.ts"), 120);
                    std::fs::remove_file(root.path().join("src/api/health.ts")).unwrap();
                }
                let embedder = TokenHashEmbedder::new(DIMENSION);
                let mut store = Store::open(
                    root.path(),
                    StoreOptions {
                        embed_batch: 8,
                        ..options(&embedder)
                    },
                )
                .await
                .unwrap();
                let stats = sync(&mut store, &embedder).await;
                let expect_repair = point != "embedded";
                assert_eq!(
                    stats.repaired, expect_repair,
                    "{point} incremental={incremental}: {stats:?}"
                );
                assert_same_as_clean_build(root.path(), &store).await;
            }
        }
    }

    /// One of two versions of a generated tree of a few hundred files, written with fixed
    /// mtimes so that an index of either version can be compared with a clean build of it.
    /// Version B changes every third file, drops every tenth and adds a few.
    fn write_version(root: &Path, b: bool) {
        let mtime =
            SystemTime::UNIX_EPOCH + Duration::from_secs(if b { 2_000_000 } else { 1_000_000 });
        for i in 0..300 {
            let dir = root.join(format!("src/gen/m{}", i % 8));
            let path = dir.join(format!("mod{i}.ts"));
            let present = if b { i >= 290 || i % 10 != 0 } else { i < 290 };
            if !present {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let extra = if b && i % 3 == 0 {
                format!("\n  reset(): void {{\n    this.total = {i};\n  }}\n")
            } else {
                String::new()
            };
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(
                &path,
                format!(
                    "import {{ formatDuration }} from '../../../util/format';\n\n\
                     /** Module {i}. */\nexport function run{i}(n: number): string {{\n  return formatDuration(n * {i});\n}}\n\n\
                     export class Worker{i} {{\n  total = 0;\n  step(x: number): number {{\n    return x + {i};\n  }}\n{extra}}}\n"
                ),
            )
            .unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(mtime).unwrap();
        }
    }

    /// Fifty SIGKILLs at random moments of cold and incremental syncs of a few hundred
    /// files; after each, one sync gives exactly what a clean build of the files gives.
    #[cfg(unix)]
    #[tokio::test]
    async fn fifty_syncs_killed_at_random_moments_are_each_repaired() {
        let root = workspace();
        let index = root.path().join(".codectx");
        write_version(root.path(), false);
        let clean_a = clean_build(root.path()).await;
        write_version(root.path(), true);
        let clean_b = clean_build(root.path()).await;

        // How long an uninterrupted child takes, cold (version B) and incremental (to A).
        let timed = |root: &Path| {
            let started = std::time::Instant::now();
            assert!(run_child(root, None).status.success());
            started.elapsed()
        };
        let cold = timed(root.path());
        write_version(root.path(), false);
        let incremental = timed(root.path());

        // A fixed xorshift sequence: a failure names its kill, and reruns the same moments.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        // A kill drawn after the child's end counts for nothing: on a loaded machine the
        // children's times vary around the calibration, so allow attempts to spare.
        let (mut kills, mut version_b) = (0, false);
        for attempt in 0..150 {
            if kills == 50 {
                break;
            }
            version_b = !version_b;
            write_version(root.path(), version_b);
            let from_scratch = attempt % 5 == 0;
            if from_scratch {
                std::fs::remove_dir_all(&index).unwrap();
            }
            let span = if from_scratch { cold } else { incremental };
            let delay = span.mul_f64(uniform());
            let mut child = std::process::Command::new(example())
                .arg(root.path())
                .args(["--embed", &DIMENSION.to_string()])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(delay);
            if child.try_wait().unwrap().is_none() {
                kills += 1;
            }
            let _ = child.kill();
            let _ = child.wait();

            let embedder = TokenHashEmbedder::new(DIMENSION);
            let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
            sync(&mut store, &embedder).await;
            let expected = if version_b { &clean_b } else { &clean_a };
            let what = format!(
                "attempt {attempt} ({}, killed after {delay:?})",
                if from_scratch { "cold" } else { "incremental" }
            );
            assert_same_contents(&contents(&store).await, expected, &what);
        }
        assert_eq!(kills, 50, "too few syncs were still running when killed");
    }

    /// Issue 40: three worktrees of one repository sync at the same time, each into its own
    /// index (the two linked ones start as clones of the first's, which goes on writing)
    /// and all through the one cache of shared vectors in the common git directory;
    /// some syncs are killed at random moments. After each round, one more sync of each
    /// worktree gives exactly a clean build of that worktree's files (no vector of another
    /// worktree's text in it, none lost), and at the end the cache still serves a fourth
    /// worktree every vector it needs.
    #[cfg(unix)]
    #[tokio::test]
    async fn three_worktrees_sync_at_once_through_one_cache_and_survive_kills() {
        let dir = tempfile::tempdir().unwrap();
        let repo = workspace_repository(dir.path());
        let mut trees = vec![repo.root().to_path_buf()];
        for name in ["one", "two"] {
            trees.push(
                repo.add_worktree(&dir.path().join(name), name)
                    .root()
                    .to_path_buf(),
            );
        }
        // Each worktree also holds code of its own, so the three manifests differ.
        let write = |tree: &Path, k: usize, version_b: bool| {
            write_version(tree, version_b);
            std::fs::write(
                tree.join(format!("src/own{k}.ts")),
                format!("export function ownTo{k}(): number {{\n  return {k};\n}}\n"),
            )
            .unwrap();
        };
        let spawn = |tree: &Path| {
            std::process::Command::new(example())
                .arg(tree)
                .args(["--embed", &DIMENSION.to_string()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        // The first worktree is indexed before the rounds, so round 0 holds a no-change
        // sync: the shortest kind, within which round 1's kill is drawn.
        write(&trees[0], 0, false);
        assert!(spawn(&trees[0]).wait().unwrap().success());

        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        // A kill is drawn within the shortest sync of the round before, measured as it ran:
        // a span fixed up front (once three times a cold sync) outlasted this round's
        // incremental syncs whenever the machine's load changed, so no kill hit a sync.
        let mut span = Duration::ZERO;
        let (mut shared, mut kills) = (0, 0);
        for round in 0..6 {
            for (k, tree) in trees.iter().enumerate() {
                write(tree, k, (round + k) % 2 == 1);
            }
            let started = std::time::Instant::now();
            let mut children: Vec<_> = trees.iter().map(|t| spawn(t)).collect();
            // Every other round, one of the three is killed at a random moment.
            if round % 2 == 1 {
                std::thread::sleep(span.mul_f64(uniform()));
                let victim = &mut children[round % 3];
                if victim.try_wait().unwrap().is_none() {
                    kills += 1;
                }
                let _ = victim.kill();
            }
            let mut ended: Vec<Option<Duration>> = vec![None; children.len()];
            while ended.iter().any(Option::is_none) {
                for (child, end) in children.iter_mut().zip(&mut ended) {
                    if end.is_none() && child.try_wait().unwrap().is_some() {
                        *end = Some(started.elapsed());
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            span = ended.into_iter().flatten().min().unwrap_or_default();
            for child in children {
                let out = child.wait_with_output().unwrap();
                if out.status.success() {
                    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                    shared += stats["vectors_shared"].as_u64().unwrap();
                    // The cache is advisory, so a failure would not show in the index:
                    // syncs running side by side must not make it fail.
                    let warnings = String::from_utf8_lossy(&out.stderr);
                    assert!(warnings.is_empty(), "round {round}: {warnings}");
                } else {
                    assert!(
                        round % 2 == 1,
                        "round {round}: a sync failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
            for tree in &trees {
                let embedder = TokenHashEmbedder::new(DIMENSION);
                let mut store = Store::open(tree, options(&embedder)).await.unwrap();
                sync(&mut store, &embedder).await;
                let what = format!("round {round}, {}", tree.display());
                assert_same_contents(&contents(&store).await, &clean_build(tree).await, &what);
            }
        }
        assert!(kills > 0, "no sync was still running when killed");
        assert!(shared > 0, "the worktrees shared no vector");

        // A fourth worktree with the same files as the first embeds nothing.
        let fourth = dir.path().join("three");
        repo.add_worktree(&fourth, "three");
        write(&fourth, 0, true);
        std::fs::copy(trees[0].join("src/own0.ts"), fourth.join("src/own0.ts")).unwrap();
        let embedder = TokenHashEmbedder::new(DIMENSION);
        let mut store = Store::open(
            &fourth,
            // Apart: a default index would be a clone of the first worktree's, with every
            // vector already in its rows.
            StoreOptions {
                embedding: Some(embedder.spec()),
                uri: Some(
                    dir.path()
                        .join("index-three")
                        .to_string_lossy()
                        .into_owned(),
                ),
                ..StoreOptions::default()
            },
        )
        .await
        .unwrap();
        let stats = sync(&mut store, &embedder).await;
        assert_eq!(stats.chunks_embedded, 0, "{stats:?}");
        assert_eq!(stats.vectors_shared, rows(&store).await.len());
    }

    /// A second writer waits for the lock, then gives up with a clear error.
    #[tokio::test]
    async fn a_second_writer_waits_then_gets_a_clear_error() {
        let root = workspace();
        let mut store = Store::open(
            root.path(),
            StoreOptions {
                lock_timeout: Duration::from_millis(300),
                ..StoreOptions::default()
            },
        )
        .await
        .unwrap();
        let lock = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.path().join(".codectx/write.lock"))
            .unwrap();
        lock.lock().unwrap();
        let started = SystemTime::now();
        let err = store.sync(None, &()).await.unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        assert!(started.elapsed().unwrap() >= Duration::from_millis(300));
        assert!(
            err.to_string().contains("another process is writing"),
            "{err}"
        );

        // Released while the second writer waits: it proceeds.
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(lock);
        });
        store.set_lock_timeout(Duration::from_secs(10));
        let stats = store.sync(None, &()).await.unwrap();
        releaser.join().unwrap();
        assert_eq!(stats.files_parsed, 5);
    }

    #[tokio::test]
    async fn a_foreign_directory_is_refused_and_replaced_only_on_request() {
        let root = workspace();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("notes.txt"), "not an index").unwrap();
        let uri = other.path().to_string_lossy().into_owned();
        let opts = || StoreOptions {
            uri: Some(uri.clone()),
            ..StoreOptions::default()
        };
        let err = Store::open(root.path(), opts())
            .await
            .err()
            .expect("refused");
        assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
        assert!(err.to_string().contains("notes.txt"), "{err}");
        let mut store = Store::open(
            root.path(),
            StoreOptions {
                rebuild: true,
                ..opts()
            },
        )
        .await
        .unwrap();
        assert_eq!(store.sync(None, &()).await.unwrap().files_parsed, 5);
        // What was not ours is left alone.
        assert!(other.path().join("notes.txt").exists());
    }

    #[tokio::test]
    async fn a_damaged_index_says_so_and_rebuilds_on_request() {
        let root = workspace();
        {
            let mut store = Store::open(root.path(), StoreOptions::default())
                .await
                .unwrap();
            store.sync(None, &()).await.unwrap();
        }
        let versions = root.path().join(".codectx/chunks.lance/_versions");
        for entry in std::fs::read_dir(&versions).unwrap() {
            std::fs::write(entry.unwrap().path(), b"garbage").unwrap();
        }
        let err = Store::open(root.path(), StoreOptions::default())
            .await
            .err()
            .expect("damage detected");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("rebuild"), "{err}");
        let mut store = Store::open(
            root.path(),
            StoreOptions {
                rebuild: true,
                ..StoreOptions::default()
            },
        )
        .await
        .unwrap();
        assert!(store.rebuilt().is_some());
        let stats = store.sync(None, &()).await.unwrap();
        assert_eq!(stats.files_parsed, 5);
    }

    /// Another embedding model never mixes into the table: the index is rebuilt.
    #[tokio::test]
    async fn another_model_rebuilds_the_index() {
        let root = workspace();
        let small = TokenHashEmbedder::new(DIMENSION);
        {
            let mut store = Store::open(root.path(), options(&small)).await.unwrap();
            sync(&mut store, &small).await;
        }
        let large = TokenHashEmbedder::new(DIMENSION * 2);
        let mut store = Store::open(root.path(), options(&large)).await.unwrap();
        assert!(
            store.rebuilt().unwrap().contains("test:token-hash-16"),
            "{:?}",
            store.rebuilt()
        );
        let stats = sync(&mut store, &large).await;
        assert_eq!(stats.files_parsed, 5);
        let rows = rows(&store).await;
        assert!(
            rows.iter()
                .all(|r| r.vector.as_ref().is_some_and(|v| v.len() == DIMENSION * 2))
        );
        assert_eq!(stats.chunks_embedded, rows.len());
    }
}

mod search {
    use super::*;
    use codectx_store::ChunkFilter;

    async fn indexed() -> (tempfile::TempDir, Store, TokenHashEmbedder) {
        let root = workspace();
        let embedder = TokenHashEmbedder::new(DIMENSION);
        let mut store = Store::open(root.path(), options(&embedder)).await.unwrap();
        sync(&mut store, &embedder).await;
        (root, store, embedder)
    }

    fn show(hits: &[(StoredChunk, f32)]) -> Vec<String> {
        hits.iter()
            .map(|(r, _)| r.chunk.breadcrumb.clone())
            .collect()
    }

    fn filter(paths: &[&str], languages: &[&str]) -> ChunkFilter {
        ChunkFilter {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            languages: languages.iter().map(|l| l.to_string()).collect(),
        }
    }

    /// The light hits are the full search's ids, files and scores, in the same order.
    #[tokio::test]
    async fn lexical_hits_are_the_full_rows_ids_files_and_scores() {
        let (_root, store, _) = indexed().await;
        for (query, filter) in [
            ("token session", ChunkFilter::default()),
            ("token", filter(&["src/*/t*.ts"], &[])),
        ] {
            let rows = store.search_lexical(query, 20, &filter).await.unwrap();
            let hits = store.search_lexical_hits(query, 20, &filter).await.unwrap();
            assert!(!hits.is_empty(), "{query}");
            let rows: Vec<(String, String, f32)> = rows
                .into_iter()
                .map(|(r, s)| (r.chunk.id, r.chunk.relative_path, s))
                .collect();
            let hits: Vec<(String, String, f32)> = hits
                .into_iter()
                .map(|h| (h.id, h.relative_path, h.score))
                .collect();
            assert_eq!(rows, hits, "{query}");
        }
    }

    /// Hits as comparable values: scores by their bits, so "equal" means to the last bit.
    fn exact(hits: Vec<codectx_store::LexicalHit>) -> Vec<(String, String, u32, String)> {
        hits.into_iter()
            .map(|h| (h.id, h.relative_path, h.score.to_bits(), h.history))
            .collect()
    }

    /// The full-text fields kept in memory rank exactly as LanceDB's index when that index
    /// is a clean build (no rewritten rows, whose old postings LanceDB keeps counting): the
    /// same rows, files and scores to the bit, in the same order, with and without
    /// filters; and after a sync the copy follows the new version.
    #[tokio::test]
    async fn lexical_hits_in_memory_are_the_full_text_indexes() {
        let root = workspace();
        // No vectors: a background embedder would rewrite every row after the sync.
        let options = |text_search| StoreOptions {
            text_search,
            shared_vectors: Shared::Off,
            ..StoreOptions::default()
        };
        let mut memory = Store::open(root.path(), options(TextSearch::Memory))
            .await
            .unwrap();
        memory.sync(None, &()).await.unwrap();
        let queries = [
            ("token session", ChunkFilter::default()),
            (
                "sign a token for the user's session",
                ChunkFilter::default(),
            ),
            ("verify expired tokens", filter(&["src/auth"], &[])),
            ("token", filter(&["src/*/t*.ts"], &[])),
            ("format route", filter(&[], &["typescript"])),
            ("qpsozzz", ChunkFilter::default()),
            ("", ChunkFilter::default()),
        ];
        let same_as_the_index = async |memory: &Store| {
            let index = Store::open(root.path(), options(TextSearch::Index))
                .await
                .unwrap();
            for (query, filter) in &queries {
                let expected = index.search_lexical_hits(query, 20, filter).await.unwrap();
                let kept = memory.search_lexical_hits(query, 20, filter).await.unwrap();
                assert_eq!(exact(expected), exact(kept), "{query:?}");
            }
        };
        same_as_the_index(&memory).await;
        let all = ChunkFilter::default();
        let some = memory
            .search_lexical_hits("token session", 20, &all)
            .await
            .unwrap();
        assert!(some.len() > 3, "the queries find something: {some:?}");
        let top = memory
            .search_lexical_hits("token session", 2, &all)
            .await
            .unwrap();
        assert_eq!(
            exact(top),
            exact(some[..2].to_vec()),
            "a limit keeps the best"
        );
        let unknown = memory
            .search_lexical_hits("token", 5, &filter(&[], &["cobol"]))
            .await;
        assert!(
            matches!(unknown, Err(StoreError::Filter(ref e)) if e.contains("cobol")),
            "an unknown language is an error, as in the index's query: {unknown:?}"
        );

        // A new function in a new file: the copy is read again at the sync's version.
        std::fs::write(
            root.path().join("src/util/quota.ts"),
            "export function remainingQuota(used: number, limit: number) {\n  return limit - used;\n}\n",
        )
        .unwrap();
        memory.sync(None, &()).await.unwrap();
        let quota = memory
            .search_lexical_hits("remaining quota", 5, &all)
            .await
            .unwrap();
        assert_eq!(
            quota.first().map(|h| h.relative_path.as_str()),
            Some("src/util/quota.ts")
        );
        same_as_the_index(&memory).await;
    }

    /// Identifiers are split (`signToken` is found by "sign token"), several words are
    /// OR-ed (one unknown word does not empty the result), and filters apply in the query.
    #[tokio::test]
    async fn lexical_search_splits_identifiers_ors_words_and_filters() {
        let (_root, store, _) = indexed().await;
        let all = ChunkFilter::default();
        let hits = store.search_lexical("sign token", 5, &all).await.unwrap();
        assert!(
            show(&hits)[..2].iter().any(|b| b.ends_with("signToken")),
            "{:?}",
            show(&hits)
        );
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "best first");

        let hits = store
            .search_lexical("session expiry qpsozzz", 10, &all)
            .await
            .unwrap();
        assert!(!hits.is_empty());

        let only = store
            .search_lexical("token", 20, &filter(&["src/auth/session.ts"], &[]))
            .await
            .unwrap();
        assert!(
            !only.is_empty()
                && only
                    .iter()
                    .all(|(r, _)| r.chunk.relative_path == "src/auth/session.ts")
        );
        let dir = store
            .search_lexical("token", 20, &filter(&["src/auth/"], &[]))
            .await
            .unwrap();
        assert!(
            dir.iter()
                .all(|(r, _)| r.chunk.relative_path.starts_with("src/auth/"))
        );
        assert!(
            dir.iter()
                .any(|(r, _)| r.chunk.relative_path == "src/auth/token.ts")
        );
        let glob = store
            .search_lexical("token", 20, &filter(&["src/*/t*.ts"], &[]))
            .await
            .unwrap();
        assert!(
            !glob.is_empty()
                && glob
                    .iter()
                    .all(|(r, _)| r.chunk.relative_path == "src/auth/token.ts")
        );
        let js = store
            .search_lexical("token", 20, &filter(&[], &["javascript"]))
            .await
            .unwrap();
        assert!(js.is_empty(), "the fixture has no JavaScript");
        let ts = store
            .search_lexical("token", 20, &filter(&[], &["typescript"]))
            .await
            .unwrap();
        assert!(!ts.is_empty());
        let err = store
            .search_lexical("token", 5, &filter(&[], &["cobol"]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("cobol"), "{err}");
        assert!(
            store
                .search_lexical("  ", 5, &all)
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// Rows written after the full-text indexes were built (an edit, a new file) are found
    /// by both BM25F columns at once, and a removed file's rows are gone.
    #[tokio::test]
    async fn lexical_search_sees_rows_written_after_the_index() {
        let (root, mut store, embedder) = indexed().await;
        let all = ChunkFilter::default();
        std::fs::create_dir_all(root.path().join("src/billing")).unwrap();
        std::fs::write(
            root.path().join("src/billing/ledger.ts"),
            "export function reconcileAccounts(entries: number[]): number {\n  return entries.reduce((a, b) => a + b, 0);\n}\n",
        )
        .unwrap();
        std::fs::remove_file(root.path().join("src/util/format.ts")).unwrap();
        sync(&mut store, &embedder).await;
        // "ledger" is only in the new file's path; "reconciling" only stems to its name.
        let hits = show(
            &store
                .search_lexical("ledger reconciling", 5, &all)
                .await
                .unwrap(),
        );
        assert!(
            hits.first()
                .is_some_and(|b| b == "src/billing/ledger.ts > reconcileAccounts"),
            "{hits:?}"
        );
        let gone = show(
            &store
                .search_lexical("formatDuration", 10, &all)
                .await
                .unwrap(),
        );
        assert!(
            gone.iter().all(|b| !b.starts_with("src/util/format.ts")),
            "{gone:?}"
        );
    }

    /// Past `fts_catch_up_rows` rewritten rows, the sync folds them into the full-text
    /// indexes; the search answers the same before and after.
    #[tokio::test]
    async fn full_text_indexes_catch_up_with_rewritten_rows() {
        let root = workspace();
        let embedder = TokenHashEmbedder::new(DIMENSION);
        let mut store = Store::open(
            root.path(),
            StoreOptions {
                fts_catch_up_rows: 1,
                ..options(&embedder)
            },
        )
        .await
        .unwrap();
        sync(&mut store, &embedder).await;
        std::fs::write(
            root.path().join("src/util/format.ts"),
            "export function formatDurationVerbose(seconds: number): string {\n  return `${seconds} seconds`;\n}\n",
        )
        .unwrap();
        sync(&mut store, &embedder).await;
        let table = store.chunk_table();
        for index in table.list_indices().await.unwrap() {
            let stats = table.index_stats(&index.name).await.unwrap().unwrap();
            assert_eq!(stats.num_unindexed_rows, 0, "{}", index.name);
        }
        let hits = show(
            &store
                .search_lexical("verbose duration", 3, &ChunkFilter::default())
                .await
                .unwrap(),
        );
        assert_eq!(
            hits.first().map(String::as_str),
            Some("src/util/format.ts > formatDurationVerbose"),
            "{hits:?}"
        );
    }

    /// A sync that rewrites a large share of the rows (a new extractor version, a branch
    /// switch) leaves the full-text indexes as a clean build's: the same hits with the same
    /// scores. Updated in place, they kept the replaced rows in their BM25 statistics.
    #[tokio::test]
    async fn a_sync_rewriting_half_the_files_scores_as_a_clean_build() {
        const WORDS: &[&str] = &[
            "parse", "route", "token", "session", "cookie", "header", "stream", "render", "cache",
            "retry", "queue", "format", "user", "match", "path", "body",
        ];
        let root = tempfile::tempdir().unwrap();
        // Deterministic "random" words (a linear congruential sequence).
        let mut seed: u64 = 7;
        let mut word = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            WORDS[(seed >> 33) as usize % WORDS.len()]
        };
        let mut sources = Vec::new();
        for file in 0..200 {
            let mut text = String::new();
            for f in 0..20 {
                let (a, b, c) = (word(), word(), word());
                text.push_str(&format!(
                    "export function {a}_{b}_{f}(x: number) {{\n  return '{c} {a}' + x;\n}}\n\n"
                ));
            }
            let path = root.path().join(format!("src/{}/m{file}.ts", word()));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            sources.push(path);
        }
        let lexical = || StoreOptions::default();
        let mut store = Store::open(root.path(), lexical()).await.unwrap();
        store.sync(None, &()).await.unwrap();
        // Half the files: a rewrite of every row would double every statistic alike.
        for path in sources.iter().step_by(2) {
            let mut text = std::fs::read_to_string(path).unwrap();
            text.push('\n');
            std::fs::write(path, text).unwrap();
        }
        store.sync(None, &()).await.unwrap();

        let fresh_root = tempfile::tempdir().unwrap();
        codectx_corpus::copy_tree(root.path(), fresh_root.path());
        std::fs::remove_dir_all(fresh_root.path().join(".codectx")).unwrap();
        let mut fresh = Store::open(fresh_root.path(), lexical()).await.unwrap();
        fresh.sync(None, &()).await.unwrap();

        let all = ChunkFilter::default();
        for query in [
            "parse cookie header",
            "route match path",
            "session token retry",
        ] {
            let scored = |hits: Vec<codectx_store::LexicalHit>| -> Vec<(String, u32)> {
                hits.into_iter()
                    .map(|h| (h.id, (h.score * 1e4).round() as u32))
                    .collect()
            };
            let after = scored(store.search_lexical_hits(query, 20, &all).await.unwrap());
            let clean = scored(fresh.search_lexical_hits(query, 20, &all).await.unwrap());
            assert!(!clean.is_empty(), "{query}");
            assert_eq!(after, clean, "{query}");
        }
    }

    /// English meets identifiers through stemming ("formatting durations" finds
    /// `formatDuration`), and a chunk's path is searched with its name: `pad2`, which never
    /// says "format", is found by the name of its file `src/util/format.ts`, above
    /// `handleLogin`, whose source calls `formatDuration` once.
    #[tokio::test]
    async fn lexical_search_stems_words_and_searches_paths() {
        let (_root, store, _) = indexed().await;
        let all = ChunkFilter::default();
        let hits = store
            .search_lexical("formatting durations", 5, &all)
            .await
            .unwrap();
        assert!(
            show(&hits)
                .first()
                .is_some_and(|b| b.ends_with("formatDuration")),
            "{:?}",
            show(&hits)
        );
        let hits = show(&store.search_lexical("format", 10, &all).await.unwrap());
        let rank = |name: &str| hits.iter().position(|b| b.ends_with(name));
        assert!(
            rank("pad2").is_some() && rank("pad2") < rank("handleLogin"),
            "{hits:?}"
        );
    }

    #[tokio::test]
    async fn vector_search_finds_the_nearest_embedded_chunks() {
        let (_root, store, embedder) = indexed().await;
        let target = store
            .chunks(Some("name = 'formatDuration'"))
            .await
            .unwrap()
            .pop()
            .unwrap();
        let query = embedder
            .embed_query(&target.chunk.embedding_text)
            .await
            .unwrap();
        let hits = store
            .search_vector(&query, 3, &ChunkFilter::default())
            .await
            .unwrap();
        assert_eq!(hits[0].id, target.chunk.id);
        assert_eq!(hits[0].relative_path, target.chunk.relative_path);
        assert!(hits[0].distance < 1e-4, "distance {}", hits[0].distance);
        assert!(
            hits.windows(2).all(|w| w[0].distance <= w[1].distance),
            "nearest first"
        );
        let auth = store
            .search_vector(&query, 3, &filter(&["src/auth"], &[]))
            .await
            .unwrap();
        assert!(
            !auth.is_empty()
                && auth
                    .iter()
                    .all(|h| h.relative_path.starts_with("src/auth/"))
        );
    }
}

/// Past `vector_index_min_rows` embedded rows the store builds a vector index (IVF-PQ needs
/// 256 rows to train) and searches keep working through it.
#[tokio::test]
async fn a_vector_index_is_built_once_the_table_is_large_enough() {
    let root = workspace();
    for i in 0..120 {
        let dir = root.path().join(format!("src/many/m{}", i % 6));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i}.ts")),
            format!("export function task{i}(n: number): number {{\n  return n * {i};\n}}\n\nexport const LIMIT_{i} = {i};\n"),
        )
        .unwrap();
    }
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(
        root.path(),
        StoreOptions {
            vector_index_min_rows: 256,
            ..options(&embedder)
        },
    )
    .await
    .unwrap();
    let stats = sync(&mut store, &embedder).await;
    assert!(stats.chunks_embedded >= 256, "{stats:?}");
    let indices = store.chunk_table().list_indices().await.unwrap();
    let columns: Vec<String> = indices.iter().flat_map(|i| i.columns.clone()).collect();
    assert!(columns.contains(&"vector".to_string()), "{columns:?}");
    for fts in ["sourceTerms", "nameTerms"] {
        assert!(columns.contains(&fts.to_string()), "{columns:?}");
    }
    let target = store
        .chunks(Some("name = 'task77'"))
        .await
        .unwrap()
        .pop()
        .unwrap();
    let query = embedder
        .embed_query(&target.chunk.embedding_text)
        .await
        .unwrap();
    let hits = store
        .search_vector(&query, 10, &codectx_store::ChunkFilter::default())
        .await
        .unwrap();
    assert!(
        hits.iter().any(|h| h.id == target.chunk.id),
        "approximate search finds the exact text"
    );
}

/// An embedder that, on its first call, edits `file` and runs a foreground sync while the
/// background step is between reading its rows and committing their vectors.
struct EditWhileEmbedding {
    inner: TokenHashEmbedder,
    foreground: std::sync::Arc<tokio::sync::Mutex<Store>>,
    file: PathBuf,
    edited: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Embedder for EditWhileEmbedding {
    fn spec(&self) -> codectx_store::EmbeddingSpec {
        self.inner.spec()
    }

    async fn embed_documents(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, codectx_store::EmbedError> {
        if !self.edited.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let text = std::fs::read_to_string(&self.file).unwrap();
            std::fs::write(
                &self.file,
                text.replace("Number(expiry)", "Number.parseInt(expiry, 10)"),
            )
            .unwrap();
            set_mtime(&self.file, 5);
            // Not blocked: the background step holds no lock while it embeds.
            let stats = tokio::time::timeout(Duration::from_secs(10), async {
                self.foreground.lock().await.sync(None, &()).await
            })
            .await
            .expect("the foreground sync waited for the background embedder")
            .unwrap();
            assert_eq!(stats.files_parsed, 1);
        }
        self.inner.embed_documents(texts).await
    }
}

/// A background embedder on its own handle works in steps that hold the write lock only to
/// commit: a foreground sync that changes a file meanwhile is not blocked, and no row gets a
/// vector computed from text it no longer holds. The foreground handle sees the vectors.
#[tokio::test]
async fn embed_steps_on_a_second_handle_interleave_with_syncs() {
    let root = workspace();
    let hash = TokenHashEmbedder::new(DIMENSION);
    let mut foreground = Store::open(root.path(), options(&hash)).await.unwrap();
    foreground.sync(None, &()).await.unwrap();
    let before = foreground.vector_counts().await.unwrap();
    assert!(before.total > 0);
    assert_eq!(before.embedded, 0);

    let foreground = std::sync::Arc::new(tokio::sync::Mutex::new(foreground));
    let embedder = EditWhileEmbedding {
        inner: TokenHashEmbedder::new(DIMENSION),
        foreground: foreground.clone(),
        file: root.path().join("src/auth/token.ts"),
        edited: Default::default(),
    };
    let mut background = Store::open(root.path(), options(&hash)).await.unwrap();
    // One step reads every pending row; the edit lands while they are being embedded.
    let first = background.embed_step(&embedder, 10_000).await.unwrap();
    assert_eq!(first.embedded, before.total);
    assert!(
        first.pending > 0,
        "the edited rows must still be pending: {first:?}"
    );
    let mut steps = 0;
    while background.embed_step(&embedder, 4).await.unwrap().embedded > 0 {
        steps += 1;
        assert!(steps < 100, "embedding does not converge");
        // The count a step records (the last one's plus the rows it updated) is a count's.
        let with_vectors = rows(&background)
            .await
            .iter()
            .filter(|r| r.vector.is_some())
            .count();
        assert_eq!(
            background.vector_counts().await.unwrap().embedded,
            with_vectors
        );
    }

    let mut foreground = foreground.lock().await;
    let after = foreground.vector_counts().await.unwrap();
    assert_eq!(after.embedded, after.total, "{after:?}");
    for row in rows(&foreground).await {
        let expected = hash
            .embed_documents(&[row.chunk.embedding_text.to_string()])
            .await
            .unwrap();
        assert_eq!(row.vector.as_ref(), Some(&expected[0]), "{}", row.chunk.id);
    }
    assert_same_as_clean_build(root.path(), &foreground).await;
}

/// Sorted `(relativePath, id)` pairs of every row.
async fn ids(store: &Store) -> Vec<(String, String)> {
    let mut ids: Vec<_> = rows(store)
        .await
        .into_iter()
        .map(|r| (r.chunk.relative_path, r.chunk.id))
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn ids_are_portable_and_an_index_serves_another_checkout() {
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let (first, second) = (workspace(), workspace());
    let index_of = |dir: &tempfile::TempDir| StoreOptions {
        uri: Some(dir.path().join("index").to_string_lossy().into_owned()),
        ..options(&embedder)
    };
    let (first_index, second_index) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    // Two checkouts of the same files at different paths: the same ids.
    let mut a = Store::open(first.path(), index_of(&first_index))
        .await
        .unwrap();
    sync(&mut a, &embedder).await;
    let mut b = Store::open(second.path(), index_of(&second_index))
        .await
        .unwrap();
    sync(&mut b, &embedder).await;
    assert_eq!(ids(&a).await, ids(&b).await);
    drop((a, b));

    // The first checkout's index, opened from the second checkout (whose files have other
    // mtimes): nothing is parsed or embedded, and rows name the second checkout's files.
    for file in ["src/auth/token.ts", "src/util/format.ts"] {
        set_mtime(&second.path().join(file), 60);
    }
    let mut shared = Store::open(second.path(), index_of(&first_index))
        .await
        .unwrap();
    let stats = sync(&mut shared, &embedder).await;
    assert_eq!(
        (stats.files_parsed, stats.chunks_embedded),
        (0, 0),
        "{stats:?}"
    );
    let root = second.path().canonicalize().unwrap();
    for row in rows(&shared).await {
        assert!(
            Path::new(&row.chunk.file_path).starts_with(&root),
            "{}",
            row.chunk.file_path
        );
    }

    // After an edit there, the ids are those a fresh build of that checkout gives.
    let edited = second.path().join("src/auth/token.ts");
    let source = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, format!("// moved down a line\n{source}")).unwrap();
    let stats = sync(&mut shared, &embedder).await;
    assert_eq!(stats.files_parsed, 1, "{stats:?}");
    let fresh_index = tempfile::tempdir().unwrap();
    let mut fresh = Store::open(second.path(), index_of(&fresh_index))
        .await
        .unwrap();
    sync(&mut fresh, &embedder).await;
    assert_eq!(ids(&shared).await, ids(&fresh).await);
}

#[tokio::test]
async fn a_configured_index_directory_inside_the_root_is_not_indexed() {
    let root = workspace();
    let index = root.path().join("var/index");
    let options = StoreOptions {
        uri: Some(index.to_string_lossy().into_owned()),
        ..StoreOptions::default()
    };
    let mut store = Store::open(root.path(), options.clone()).await.unwrap();
    // The watcher asks the same selection: writes to the index are not changes.
    let canonical = root.path().canonicalize().unwrap();
    let selection = options.file_selection(&canonical);
    assert!(!selection.may_matter(
        &canonical,
        &canonical.join("var/index/chunks.lance/0.lance")
    ));
    assert!(selection.may_matter(&canonical, &canonical.join("src/auth/token.ts")));
    // A source-looking file in the index directory (e.g. left by a tool) is not project code.
    std::fs::write(index.join("stray.ts"), "export const stray = 1;\n").unwrap();
    let stats = store.sync(None, &()).await.unwrap();
    assert_eq!(stats.files_seen, 5, "{stats:?}");
    assert!(store.files().all(|f| !f.path.contains("stray")));
}

/// Every row's embedded text, sorted.
fn texts(rows: &[StoredChunk]) -> Vec<String> {
    let mut texts: Vec<String> = rows
        .iter()
        .map(|r| r.chunk.embedding_text.to_string())
        .collect();
    texts.sort();
    texts
}

/// Every row holds the vector the model gives its text.
async fn assert_model_vectors(rows: &[StoredChunk], embedder: &TokenHashEmbedder) {
    let texts: Vec<String> = rows
        .iter()
        .map(|r| r.chunk.embedding_text.to_string())
        .collect();
    let expected = embedder.embed_documents(&texts).await.unwrap();
    embedder.take_seen();
    for (row, vector) in rows.iter().zip(expected) {
        assert_eq!(row.vector.as_ref(), Some(&vector), "{}", row.chunk.id);
    }
}

/// Issue 40: the worktrees of one repository share what a model computed. A new worktree's
/// first sync embeds only the text the repository never embedded, and its rows hold the
/// vectors the model gives; the cache lives in the common git directory.
#[tokio::test]
async fn shared_vectors_serve_a_second_worktree() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, task) = repository_with_task(dir.path());
    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), &task);

    let embedder = TokenHashEmbedder::new(DIMENSION);
    let shared = StoreOptions {
        embedding: Some(embedder.spec()),
        ..StoreOptions::default()
    };
    let mut main = Store::open(repo.root(), main_apart(dir.path(), shared.clone()))
        .await
        .unwrap();
    let first = sync(&mut main, &embedder).await;
    assert_eq!(first.vectors_shared, 0);
    let main_texts = texts(&rows(&main).await);
    assert_eq!(embedder.take_seen().len(), main_texts.len());

    let mut second = Store::open(&task, shared).await.unwrap();
    let stats = sync(&mut second, &embedder).await;
    let task_rows = rows(&second).await;
    let mut embedded = embedder.take_seen();
    embedded.sort();
    let mut new_texts: Vec<String> = texts(&task_rows)
        .into_iter()
        .filter(|t| main_texts.binary_search(t).is_err())
        .collect();
    new_texts.dedup();
    assert!(!new_texts.is_empty(), "the task's edit makes new text");
    assert_eq!(
        embedded, new_texts,
        "only text the repository never embedded"
    );
    assert_eq!(stats.chunks_embedded, new_texts.len());
    assert_eq!(stats.vectors_shared, task_rows.len() - new_texts.len());
    assert_model_vectors(&task_rows, &embedder).await;
    let common = repo.root().join(".git/codectx/vectors");
    assert!(
        common.is_dir(),
        "{} holds the shared vectors",
        common.display()
    );
    assert!(!task.join(".codectx/vectors").exists());
}

/// Inside git, an index lives by default in its worktree's git directory: nothing in a work
/// tree, one index per worktree (and per subdirectory indexed apart) beside what the
/// repository's indexes share, removed with its worktree. Outside git, and where an index
/// already is, `<root>/.codectx`.
#[tokio::test]
async fn a_default_index_lives_in_its_worktrees_git_directory() {
    let dir = tempfile::tempdir().unwrap();
    let repo = workspace_repository(dir.path());
    let task_root = dir.path().join("task");
    let task = repo.add_worktree(&task_root, "task");
    let embedder = TokenHashEmbedder::new(DIMENSION);
    for root in [repo.root(), task.root(), &repo.root().join("src")] {
        let mut store = Store::open(root, options(&embedder)).await.unwrap();
        sync(&mut store, &embedder).await;
        assert_same_as_clean_build(root, &store).await;
    }
    let git = repo.root().canonicalize().unwrap().join(".git");
    let main_index = git.join("codectx/index");
    let task_index = git.join("worktrees/task/codectx/index");
    let indexes = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("index"))
            .collect();
        names.sort();
        names
    };
    for index in [&main_index, &task_index] {
        assert!(index.join("chunks.lance").is_dir(), "{}", index.display());
    }
    let main_dirs = indexes(&git.join("codectx"));
    assert_eq!(
        main_dirs.len(),
        2,
        "the main worktree's and its src/'s: {main_dirs:?}"
    );
    assert_eq!(main_dirs[0], "index");
    assert!(main_dirs[1].starts_with("index-"));
    // Nothing in either work tree: git sees no change, and no `.codectx` appeared.
    for worktree in [&repo, &task] {
        assert_eq!(worktree.git(&["status", "--porcelain"]), "");
        assert!(!worktree.root().join(".codectx").exists());
    }
    repo.git(&["worktree", "remove", &task_root.to_string_lossy()]);
    assert!(!task_index.exists(), "removed with its worktree");
    assert!(main_index.join("chunks.lance").is_dir());

    // Outside git, beside the files.
    let outside = workspace();
    assert_eq!(
        default_index_dir(&outside.path().canonicalize().unwrap()),
        outside.path().canonicalize().unwrap().join(".codectx")
    );
    // An index an earlier version made in the work tree stays in use there.
    let earlier = dir.path().join("earlier");
    let mut earlier = codectx_corpus::GitRepo::init(&earlier);
    codectx_corpus::copy_tree(&fixtures().join("workspace"), earlier.root());
    earlier.commit("workspace");
    let uri = earlier
        .root()
        .join(".codectx")
        .to_string_lossy()
        .into_owned();
    let at_uri = StoreOptions {
        uri: Some(uri),
        ..options(&embedder)
    };
    sync(
        &mut Store::open(earlier.root(), at_uri).await.unwrap(),
        &embedder,
    )
    .await;
    let mut store = Store::open(earlier.root(), options(&embedder))
        .await
        .unwrap();
    let again = sync(&mut store, &embedder).await;
    assert_eq!(
        again.files_unchanged + again.files_touched,
        again.files_seen,
        "the index found where it was: {again:?}"
    );
    assert!(!earlier.root().join(".git/codectx/index").exists());
    // A linked worktree's new index is a clone of that one.
    let linked = earlier.add_worktree(&dir.path().join("earlier-task"), "earlier-task");
    let mut store = Store::open(linked.root(), options(&embedder))
        .await
        .unwrap();
    let stats = sync(&mut store, &embedder).await;
    assert_eq!(stats.files_parsed, 0, "{stats:?}");
    assert_same_as_clean_build(linked.root(), &store).await;
    let linked_index = default_index_dir(&linked.root().canonicalize().unwrap());
    assert_eq!(
        std::fs::read(linked_index.join("cloned.from")).unwrap(),
        earlier
            .root()
            .canonicalize()
            .unwrap()
            .join(".codectx")
            .as_os_str()
            .as_encoded_bytes()
    );
}

/// A file that returns to a content seen before (a branch switch back, an undo) is embedded
/// from the shared vectors, outside git too (beside the index).
#[tokio::test]
async fn shared_vectors_serve_content_seen_before() {
    let root = workspace();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let shared = StoreOptions {
        embedding: Some(embedder.spec()),
        ..StoreOptions::default()
    };
    let mut store = Store::open(root.path(), shared).await.unwrap();
    sync(&mut store, &embedder).await;
    embedder.take_seen();
    let path = root.path().join("src/util/format.ts");
    let before = std::fs::read(&path).unwrap();
    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), root.path());
    set_mtime(&path, 60);
    let edit = sync(&mut store, &embedder).await;
    assert!(edit.chunks_embedded > 0 && !embedder.take_seen().is_empty());
    std::fs::write(&path, before).unwrap();
    set_mtime(&path, 120);
    let back = sync(&mut store, &embedder).await;
    assert_eq!(
        embedder.take_seen(),
        Vec::<String>::new(),
        "nothing embedded again"
    );
    assert_eq!(back.chunks_embedded, 0);
    assert!(back.vectors_shared > 0);
    assert_model_vectors(&rows(&store).await, &embedder).await;
    assert!(root.path().join(".codectx/vectors").is_dir());
    assert_same_as_clean_build(root.path(), &store).await;
}

/// The packs of shared parses in the repository at `root`, whatever the layout's version.
fn parse_packs(root: &Path) -> Vec<PathBuf> {
    let Ok(layouts) = std::fs::read_dir(root.join(".git/codectx/parsed")) else {
        return Vec::new();
    };
    layouts
        .flat_map(|layout| std::fs::read_dir(layout.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect()
}

/// A branch switch to content a worktree's index parsed, and back to content seen before,
/// parses nothing. A first build shares no parse: its rows hold them all, and a worktree's
/// index starts as a copy of them. The task's index (a clone) shares the version it
/// parsed; main, switching to it, shares its own version, read back from its rows, and its
/// switch back reads that entry. Each index equals a clean build of its files.
#[tokio::test]
async fn shared_parses_serve_a_switch_to_a_worktrees_content_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, task) = repository_with_task(dir.path());
    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), &task);
    let embedder = TokenHashEmbedder::new(DIMENSION);

    let mut main = Store::open(repo.root(), options(&embedder)).await.unwrap();
    let first = sync(&mut main, &embedder).await;
    assert!(first.files_parsed > 1, "{first:?}");
    assert_eq!(
        parse_packs(repo.root()),
        Vec::<PathBuf>::new(),
        "a first build shares none"
    );

    // The task differs from main in one file: the only one it parses, and shares. (Main's
    // version of it is main's to share.)
    let mut second = Store::open(&task, options(&embedder)).await.unwrap();
    let stats = sync(&mut second, &embedder).await;
    assert_eq!(
        (stats.files_parsed, stats.files_shared),
        (1, 0),
        "{stats:?}"
    );
    assert_eq!(parse_packs(repo.root()).len(), 1);
    assert_same_as_clean_build(&task, &second).await;
    let (_dir, clean) = clean_index(&task).await;
    assert_eq!(
        second.load_facts().await.unwrap(),
        clean.load_facts().await.unwrap()
    );

    // Main takes the task's version of the file, then its own again: both seen before.
    let path = repo.root().join("src/util/format.ts");
    let before = std::fs::read(&path).unwrap();
    std::fs::copy(task.join("src/util/format.ts"), &path).unwrap();
    set_mtime(&path, 60);
    let switch = sync(&mut main, &embedder).await;
    assert_eq!((switch.files_parsed, switch.files_shared), (0, 1));
    std::fs::write(&path, before).unwrap();
    set_mtime(&path, 120);
    let back = sync(&mut main, &embedder).await;
    assert_eq!((back.files_parsed, back.files_shared), (0, 1));
    assert_same_as_clean_build(repo.root(), &main).await;
    let (_dir, clean) = clean_index(repo.root()).await;
    assert_eq!(
        main.load_facts().await.unwrap(),
        clean.load_facts().await.unwrap()
    );
}

/// A file removed, then back with the same content (a branch switch away and back), is
/// read from the shared parses: the sync that removed it shared its version, read back
/// from the rows. (Outside git: a file back in a repository's work tree, with no commit
/// read, does not get its notes back, shared parses or not.)
#[tokio::test]
async fn a_removed_file_comes_back_from_the_shared_parses() {
    let root = workspace();
    let parses = tempfile::tempdir().unwrap();
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let sharing = StoreOptions {
        shared_parses: Shared::At(parses.path().to_path_buf()),
        ..options(&embedder)
    };
    let mut store = Store::open(root.path(), sharing).await.unwrap();
    sync(&mut store, &embedder).await;
    let path = root.path().join("src/util/format.ts");
    let text = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let removed = sync(&mut store, &embedder).await;
    assert_eq!(removed.files_removed, 1, "{removed:?}");
    std::fs::write(&path, text).unwrap();
    set_mtime(&path, 60);
    let back = sync(&mut store, &embedder).await;
    assert_eq!((back.files_parsed, back.files_shared), (0, 1), "{back:?}");
    assert_same_as_clean_build(root.path(), &store).await;
}

/// A damaged shared parse costs a parse, not the sync: its file is parsed again and the
/// index is as a clean build's.
#[tokio::test]
async fn a_damaged_shared_parse_is_parsed_again() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, task) = repository_with_task(dir.path());
    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), &task);
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut main = Store::open(repo.root(), options(&embedder)).await.unwrap();
    sync(&mut main, &embedder).await;
    let mut second = Store::open(&task, options(&embedder)).await.unwrap();
    sync(&mut second, &embedder).await;
    // A stretch of the pack's entries zeroed: its records still read, its entries do not.
    let packs = parse_packs(repo.root());
    assert_eq!(packs.len(), 1, "one sync, one pack: {packs:?}");
    for path in packs {
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len();
        bytes[len / 8..len / 2].fill(0);
        std::fs::write(&path, bytes).unwrap();
    }
    let path = repo.root().join("src/util/format.ts");
    std::fs::copy(task.join("src/util/format.ts"), &path).unwrap();
    set_mtime(&path, 60);
    let stats = sync(&mut main, &embedder).await;
    assert_eq!(
        (stats.files_parsed, stats.files_shared),
        (1, 0),
        "{stats:?}"
    );
    assert_same_as_clean_build(repo.root(), &main).await;
}

/// Upkeep removes the files only superseded versions use (LanceDB's default keeps them a
/// week): after syncs that rewrite rows and a compaction, the chunk table keeps little more
/// than its live version. A handle still on a version whose files went reads the latest one
/// instead of failing.
#[tokio::test]
async fn compaction_removes_superseded_versions_and_a_stale_reader_reads_the_latest() {
    let root = workspace();
    let hash = TokenHashEmbedder::new(DIMENSION);
    let options = StoreOptions {
        compact_every: 4,
        ..options(&hash)
    };
    let mut writer = Store::open(root.path(), options.clone()).await.unwrap();
    sync(&mut writer, &hash).await;
    let reader = Store::open(root.path(), options.clone()).await.unwrap();
    let all = codectx_store::ChunkFilter::default();
    assert!(
        !reader
            .search_lexical("token", 5, &all)
            .await
            .unwrap()
            .is_empty()
    );

    let file = root.path().join("src/auth/token.ts");
    for round in 0..8 {
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(&format!(
            "\nexport function rotated{round}(): number {{\n  return {round};\n}}\n"
        ));
        std::fs::write(&file, text).unwrap();
        sync(&mut writer, &hash).await;
    }
    let versions = std::fs::read_dir(root.path().join(".codectx/chunks.lance/_versions"))
        .unwrap()
        .count();
    // Each round commits its rows, their vectors and index upkeep: kept a week, that is
    // dozens of versions and a copy of every rewritten row.
    assert!(
        versions <= 2 * 4,
        "{versions} versions of the chunk table are kept"
    );
    // The meta table's small commits (history heads, recorded counts) are compacted too.
    let meta_files = std::fs::read_dir(root.path().join(".codectx/meta.lance/data"))
        .unwrap()
        .count();
    assert!(meta_files <= 8, "{meta_files} data files in the meta table");

    // The reader never synced: its versions' files are gone. Its searches and the reads a
    // project is loaded from take the latest versions instead.
    let hits = reader.search_lexical("rotated7", 5, &all).await.unwrap();
    assert!(
        hits.iter().any(|(row, _)| row.chunk.name == "rotated7"),
        "{:?}",
        hits.iter().map(|(r, _)| &r.chunk.name).collect::<Vec<_>>()
    );
    // Every file rewritten: none of the rows this reader's version holds stays.
    let reader = Store::open(root.path(), options).await.unwrap();
    let files: Vec<PathBuf> = writer.files().map(|f| root.path().join(&f.path)).collect();
    for round in 8..16 {
        for file in &files {
            let mut text = std::fs::read_to_string(file).unwrap();
            text.push_str(&format!(
                "\nexport function rotated{round}(): number {{\n  return {round};\n}}\n"
            ));
            std::fs::write(file, text).unwrap();
        }
        sync(&mut writer, &hash).await;
    }
    let facts = reader.load_facts().await.unwrap();
    assert!(facts.iter().any(|(path, _)| path == "src/auth/token.ts"));
    let chunks = reader.code_chunks(None).await.unwrap();
    assert!(chunks.iter().any(|c| c.name == "rotated15"));
}

/// The workspace fixture's file the row-keeping tests edit.
const TOKEN: &str = "src/auth/token.ts";

/// [`rows`] of the file at `path`.
async fn rows_of(store: &Store, path: &str) -> Vec<StoredChunk> {
    let mut rows = rows(store).await;
    rows.retain(|r| r.chunk.relative_path == path);
    rows
}

/// An edit rewrites the rows it changed or moved; the file's other rows stay as written
/// (the table versions other worktrees' indexes name keep sharing them), and the index is
/// still a clean build's.
#[tokio::test]
async fn an_edit_keeps_the_rows_it_did_not_change() {
    let root = workspace();
    let hash = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root.path(), options(&hash)).await.unwrap();
    sync(&mut store, &hash).await;
    let before = rows_of(&store, TOKEN).await;
    let file = root.path().join(TOKEN);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\nexport function rotate(): number {\n  return 1;\n}\n");
    std::fs::write(&file, text).unwrap();
    let stats = sync(&mut store, &hash).await;
    assert_eq!(
        (
            stats.files_parsed,
            stats.chunks_written,
            stats.chunks_deleted
        ),
        (1, 1, 0)
    );
    assert_eq!(stats.chunks_kept, before.len() as u64);
    let after = rows_of(&store, TOKEN).await;
    for row in &before {
        assert!(after.contains(row), "{} was rewritten", row.chunk.id);
    }
    assert_same_as_clean_build(root.path(), &store).await;
}

/// A name added to an import statement rewrites the statement's row only: the rows of the
/// chunks that use it stay as written, and read back with the new statement, as a clean
/// build's (their imports are the file's layout, not part of the rows).
#[tokio::test]
async fn an_edited_import_keeps_the_rows_that_use_it() {
    let root = workspace();
    let hash = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root.path(), options(&hash)).await.unwrap();
    sync(&mut store, &hash).await;
    let before = rows_of(&store, TOKEN).await;
    let file = root.path().join(TOKEN);
    let text = std::fs::read_to_string(&file).unwrap();
    let (old, new) = (
        "import { createHmac } from 'node:crypto';",
        "import { createHmac, randomBytes } from 'node:crypto';",
    );
    assert!(text.contains(old));
    std::fs::write(&file, text.replace(old, new)).unwrap();
    let stats = sync(&mut store, &hash).await;
    assert_eq!((stats.files_parsed, stats.chunks_written), (1, 1));
    assert_eq!(stats.chunks_kept, before.len() as u64 - 1);
    let after = rows_of(&store, TOKEN).await;
    let users: Vec<&StoredChunk> = before
        .iter()
        .filter(|r| r.chunk.name == "mac" || r.chunk.name == "HmacIssuer")
        .collect();
    assert_eq!(users.len(), 2);
    for row in users {
        // The same row: its key and content, and the vector and notes written with it.
        let same = |r: &&StoredChunk| {
            (&r.key, &r.content_hash, &r.vector, &r.history)
                == (&row.key, &row.content_hash, &row.vector, &row.history)
        };
        assert!(
            after.iter().any(|r| same(&r)),
            "{} was rewritten",
            row.chunk.name
        );
    }
    let mac = store.code_chunks(Some("name = 'mac'")).await.unwrap();
    assert_eq!(mac.len(), 1);
    assert_eq!(mac[0].relevant_imports, [new]);
    assert_same_as_clean_build(root.path(), &store).await;
}

/// A sync that rewrites most of the table (a branch switch, a new extractor) leaves as many
/// superseded rows: upkeep removes them with the versions that named them at once, not
/// `compact_every` commits later.
#[tokio::test]
async fn a_sync_rewriting_most_rows_removes_what_it_superseded() {
    let root = workspace();
    let options = StoreOptions {
        compact_every: 1000,
        // This fixture's table is small: any quarter of it counts.
        fts_catch_up_rows: 1,
        ..StoreOptions::default()
    };
    let mut store = Store::open(root.path(), options).await.unwrap();
    store.sync(None, &()).await.unwrap();
    let chunks = root.path().join(".codectx/chunks.lance");
    let count = |dir: &str| std::fs::read_dir(chunks.join(dir)).unwrap().count();
    let before = (count("_versions"), count("data"));
    assert!(before.0 > 2, "the cold index's commits: {before:?}");
    let files: Vec<PathBuf> = store.files().map(|f| root.path().join(&f.path)).collect();
    // Every line indented: each row's text changes, so each is rewritten. (A line added
    // above them would only move them: their rows would stay.)
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let indented: String = text.lines().map(|line| format!(" {line}\n")).collect();
        let text = format!("export function switched(): number {{ return 1; }}\n{indented}");
        std::fs::write(file, text).unwrap();
    }
    let stats = store.sync(None, &()).await.unwrap();
    assert_eq!(stats.files_parsed, files.len());
    assert_eq!(stats.chunks_kept, 0);
    // The rows in the one file compaction wrote, named by the latest versions only.
    let after = (count("_versions"), count("data"));
    assert!(after.0 <= 2 && after.1 == 1, "{before:?} -> {after:?}");
    let added = store.chunks(Some("name = 'switched'")).await.unwrap();
    assert_eq!(added.len(), files.len());
}

/// The count of rows with a vector is recorded with the chunk table's version it was taken
/// at: a sync that rewrites rows without embedding them, or an embedding step, makes the
/// next count (in this process or another) follow the rows.
#[tokio::test]
async fn the_recorded_vector_count_follows_the_rows() {
    let root = workspace();
    let hash = TokenHashEmbedder::new(DIMENSION);
    let mut store = Store::open(root.path(), options(&hash)).await.unwrap();
    sync(&mut store, &hash).await;
    let embedded = |rows: &[StoredChunk]| rows.iter().filter(|r| r.vector.is_some()).count();
    let all = store.vector_counts().await.unwrap();
    assert_eq!(all.embedded, rows(&store).await.len());

    let file = root.path().join(TOKEN);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("\nexport function rotate(): number {\n  return 1;\n}\n");
    std::fs::write(&file, text).unwrap();
    store.sync(None, &()).await.unwrap();
    let after = store.vector_counts().await.unwrap();
    assert_eq!(after.embedded, embedded(&rows(&store).await));
    assert!(after.embedded < after.total, "{after:?}");

    let mut other = Store::open(root.path(), options(&hash)).await.unwrap();
    assert_eq!(other.vector_counts().await.unwrap(), after);
    let step = other.embed_step(&hash, 10_000).await.unwrap();
    assert_eq!(step.pending, 0);
    let filled = store.vector_counts().await.unwrap();
    assert_eq!((filled.embedded, filled.total), (after.total, after.total));
}

/// The bytes of the files under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => disk_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// Issue 40: one checkout switching between two branches. The index keeps the version of
/// each history head it recorded lately, so the switch back restores it: nothing parsed,
/// written or embedded, and the index is a clean build of the tree.
#[tokio::test]
async fn a_switch_back_to_a_recent_branch_restores_its_version() {
    let embedder = TokenHashEmbedder::new(DIMENSION);
    switch_back_and_forth(options(&embedder), &embedder).await;
}

/// An index without history (turned off here, as a shallow clone's is) has no history head
/// to keep versions by: it records the commit checked out instead.
#[tokio::test]
async fn a_switch_back_without_history_restores_its_version() {
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let without_history = StoreOptions {
        history: codectx_store::HistoryOptions {
            max_commits: 0,
            ..Default::default()
        },
        ..options(&embedder)
    };
    switch_back_and_forth(without_history, &embedder).await;
}

/// A repository of steps checked out on a branch `steps` forward of its main branch and
/// back twice: each switch back restores the version kept for the branch.
async fn switch_back_and_forth(options: StoreOptions, embedder: &TokenHashEmbedder) {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = repository_of_steps(dir.path());
    let mut main = Store::open(repo.root(), options.clone()).await.unwrap();
    sync(&mut main, embedder).await;

    steps_forward(&mut repo, "steps");
    let moved = sync(&mut main, embedder).await;
    assert_eq!(
        (moved.files_parsed, moved.revisited),
        (40, None),
        "{moved:?}"
    );

    for _ in 0..2 {
        repo.git(&["checkout", "-q", "-"]);
        let back = sync(&mut main, embedder).await;
        assert_restored_writing_nothing(&back);
        let (_dir, clean) = clean_index_with(repo.root(), options.clone(), embedder).await;
        assert_same_contents(&contents(&main).await, &contents(&clean).await, "restored");
    }
}

/// Embeds in steps, as a server's background filler does, until nothing is pending;
/// returns how many chunks it embedded.
async fn fill_vectors(store: &mut Store, embedder: &TokenHashEmbedder) -> usize {
    let mut embedded = 0;
    loop {
        let step = store.embed_step(embedder, 64).await.unwrap();
        embedded += step.embedded;
        if step.pending == 0 {
            return embedded;
        }
    }
}

/// A server syncs the structure first and fills vectors in steps after it: the version kept
/// for a head follows the vectors, so a switch back restores them too.
#[tokio::test]
async fn a_head_restored_after_background_embedding_keeps_its_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = repository_of_steps(dir.path());
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut main = Store::open(repo.root(), options(&embedder)).await.unwrap();
    main.sync(None, &()).await.unwrap();
    assert!(fill_vectors(&mut main, &embedder).await > 0);

    steps_forward(&mut repo, "steps");
    main.sync(None, &()).await.unwrap();
    fill_vectors(&mut main, &embedder).await;

    repo.git(&["checkout", "-q", "-"]);
    let back = main.sync(None, &()).await.unwrap();
    assert!(back.revisited.is_some(), "nothing restored: {back:?}");
    assert_eq!(
        fill_vectors(&mut main, &embedder).await,
        0,
        "the restored version lacked vectors"
    );
    assert_same_as_clean_build(repo.root(), &main).await;
}

/// Issue 40: a worktree added at an older commit, one the main index kept a version for (a
/// recent head), starts from that version instead of the latest: its first sync writes
/// nothing.
#[tokio::test]
async fn a_worktree_added_at_an_older_commit_starts_from_its_kept_version() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = repository_of_steps(dir.path());
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut main = Store::open(repo.root(), options(&embedder)).await.unwrap();
    sync(&mut main, &embedder).await;
    steps_forward(&mut repo, "steps");
    sync(&mut main, &embedder).await;
    drop(main);

    let old = dir.path().join("old");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        &old.to_string_lossy(),
        "HEAD~1",
    ]);
    let mut worktree = Store::open(&old, options(&embedder)).await.unwrap();
    let first = sync(&mut worktree, &embedder).await;
    assert_eq!(
        (
            first.files_parsed,
            first.files_shared,
            first.chunks_written,
            first.chunks_embedded
        ),
        (0, 0, 0, 0),
        "{first:?}"
    );
    assert_same_as_clean_build(&old, &worktree).await;
}

/// A worktree's index (a clone) keeps its own recent heads: the worktree's switch back to
/// its branch restores the clone's version of it.
#[tokio::test]
async fn a_worktrees_switch_back_restores_its_own_version() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository_of_steps(dir.path());
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let mut main = Store::open(repo.root(), options(&embedder)).await.unwrap();
    sync(&mut main, &embedder).await;
    drop(main);
    let task_root = dir.path().join("task");
    let mut task_repo = repo.add_worktree(&task_root, "task");
    let mut task = Store::open(&task_root, options(&embedder)).await.unwrap();
    sync(&mut task, &embedder).await;

    steps_forward(&mut task_repo, "task-steps");
    assert_eq!(sync(&mut task, &embedder).await.files_parsed, 40);

    task_repo.git(&["checkout", "-q", "task"]);
    let back = sync(&mut task, &embedder).await;
    assert_restored_writing_nothing(&back);
    assert_same_as_clean_build(&task_root, &task).await;
}

/// Issue 40: a branch switch back to content the index held when a worktree was added
/// writes nothing. The main index restores the version the worktree's clone was made from
/// (tagged, so its rows are still on disk) and syncs only what differs; it then holds what
/// a clean build of the tree holds, and the project hears of every file the restore changed.
#[tokio::test]
async fn a_switch_back_restores_the_version_a_worktree_was_made_from() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = repository_of_steps(dir.path());
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let handing_over = || StoreOptions {
        hand_over_changes: true,
        ..options(&embedder)
    };
    let mut main = Store::open(repo.root(), handing_over()).await.unwrap();
    sync(&mut main, &embedder).await;
    // The worktree's first index tags the version it is cloned from.
    let task_root = dir.path().join("task");
    repo.add_worktree(&task_root, "task");
    let mut task = Store::open(&task_root, options(&embedder)).await.unwrap();
    sync(&mut task, &embedder).await;
    drop(task);

    steps_forward(&mut repo, "steps");
    let moved = sync(&mut main, &embedder).await;
    assert_eq!(
        (moved.files_parsed, moved.revisited),
        (40, None),
        "{moved:?}"
    );
    main.take_changes();

    repo.git(&["checkout", "-q", "-"]);
    let back = sync(&mut main, &embedder).await;
    assert_restored_writing_nothing(&back);
    let changes = main.take_changes().unwrap();
    let generated_files = changes
        .elsewhere
        .iter()
        .filter(|p| p.starts_with("src/gen"))
        .count();
    assert_eq!(generated_files, 40, "{:?}", changes.elsewhere);
    assert_same_as_clean_build(repo.root(), &main).await;

    // Reopened, the index is the same; the switch forth restores the version kept for the
    // `steps` head.
    drop(main);
    let mut main = Store::open(repo.root(), handing_over()).await.unwrap();
    assert_eq!(sync(&mut main, &embedder).await.files_parsed, 0);
    repo.git(&["checkout", "-q", "steps"]);
    let forth = sync(&mut main, &embedder).await;
    assert!(forth.revisited.is_some(), "{forth:?}");
    assert_eq!(
        (forth.files_parsed, forth.chunks_written),
        (0, 0),
        "{forth:?}"
    );
    assert_same_as_clean_build(repo.root(), &main).await;
}

/// A main index does not merge a small fragment its clone holds with the next sync's: the
/// merge would copy the held rows, and the clone's version keeps the original beside the
/// copy. (Merged once there are many fragments: the test above.)
#[tokio::test]
async fn a_main_index_does_not_copy_the_rows_its_clone_holds() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = workspace_repository(dir.path());
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let compacting = || StoreOptions {
        compact_every: 1,
        ..options(&embedder)
    };
    let mut main = Store::open(repo.root(), compacting()).await.unwrap();
    sync(&mut main, &embedder).await;
    // A fragment of a few hundred rows, small enough to be merged.
    let functions: String = (0..300)
        .map(|f| format!("export function added{f}(x: number) {{\n  return x + {f};\n}}\n"))
        .collect();
    std::fs::write(repo.root().join("src/added.ts"), functions).unwrap();
    repo.commit("added functions");
    sync(&mut main, &embedder).await;
    let task_root = dir.path().join("task");
    repo.add_worktree(&task_root, "task");
    let mut task = Store::open(&task_root, options(&embedder)).await.unwrap();
    sync(&mut task, &embedder).await;

    let data = || {
        let git = repo.root().canonicalize().unwrap().join(".git");
        disk_bytes(&git.join("codectx/index/chunks.lance/data"))
    };
    let held = data();
    std::fs::write(repo.root().join("src/next.ts"), "export const next = 1;\n").unwrap();
    sync(&mut main, &embedder).await;
    assert!(
        data() < held + held / 4,
        "the main index's rows went from {held} to {} bytes: a merge copied them",
        data()
    );
    assert_same_as_clean_build(repo.root(), &main).await;
    sync(&mut task, &embedder).await;
    assert_same_as_clean_build(&task_root, &task).await;
}

/// A linked worktree's first index is a shallow clone of the main worktree's: its sync
/// writes only the files that differ, and it stays a clean build of its own tree while the
/// main index moves on and compacts. The main index's upkeep releases a removed worktree's
/// hold; a clone whose main index was rebuilt or is gone is rebuilt.
#[tokio::test]
async fn a_worktrees_first_index_is_a_clone_of_the_main_worktrees() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = workspace_repository(dir.path());
    // Enough rows that a table's bytes are its rows, not its files' fixed parts.
    for i in 0..60 {
        let functions: String = (0..10)
            .map(|f| format!("export function step{i}_{f}(x: number) {{\n  return x + {f};\n}}\n"))
            .collect();
        std::fs::write(repo.root().join(format!("src/gen{i}.ts")), functions).unwrap();
    }
    repo.commit("generated steps");
    let task_root = dir.path().join("task");
    repo.add_worktree(&task_root, "task");
    let embedder = TokenHashEmbedder::new(DIMENSION);
    let compacting = || StoreOptions {
        compact_every: 1,
        ..options(&embedder)
    };
    let mut main = Store::open(repo.root(), compacting()).await.unwrap();
    sync(&mut main, &embedder).await;

    codectx_corpus::copy_tree(&fixtures().join("edits/content-change"), &task_root);
    codectx_corpus::copy_tree(&fixtures().join("edits/file-added"), &task_root);
    // (A clone compacts only fragments smaller than this fixture's whole table.)
    let mut task = Store::open(&task_root, options(&embedder)).await.unwrap();
    let stats = sync(&mut task, &embedder).await;
    assert_eq!(
        (
            stats.files_parsed,
            stats.files_touched,
            stats.chunks_embedded + stats.vectors_reused
        ),
        (
            2,
            stats.files_seen - 2,
            (stats.chunks_written + stats.chunks_kept) as usize
        ),
        "only the two files that differ are parsed, embedded and written: {stats:?}"
    );
    assert_same_as_clean_build(&task_root, &task).await;
    let git = repo.root().canonicalize().unwrap().join(".git");
    let (main_dir, task_dir) = (
        git.join("codectx/index"),
        git.join("worktrees/task/codectx/index"),
    );
    let data = |index: &Path| disk_bytes(&index.join("chunks.lance/data"));
    assert!(
        data(&task_dir) * 2 < data(&main_dir),
        "the clone's rows are {} bytes, the main index's {}",
        data(&task_dir),
        data(&main_dir)
    );
    // The checkout touched every file: their rows stay the main index's, and the new
    // mtimes are stamps beside the table.
    let files = |index: &Path| disk_bytes(&index.join("files.lance/data"));
    assert!(
        files(&task_dir) * 4 < files(&main_dir),
        "the clone's files rows are {} bytes, the main index's {}",
        files(&task_dir),
        files(&main_dir)
    );

    // The main index moves on: the clone keeps what it reads.
    std::fs::remove_file(repo.root().join("src/auth/session.ts")).unwrap();
    repo.commit("remove the session store");
    sync(&mut main, &embedder).await;
    assert_same_as_clean_build(repo.root(), &main).await;
    let mut task = Store::open(&task_root, options(&embedder)).await.unwrap();
    sync(&mut task, &embedder).await;
    assert_same_as_clean_build(&task_root, &task).await;

    // Once a sharing index has many fragments, it merges them (compacts); the clone keeps
    // reading the files its version names.
    let fragments = || {
        std::fs::read_dir(main_dir.join("chunks.lance/data"))
            .unwrap()
            .count()
    };
    let mut merged = false;
    for i in 0..40 {
        let before = fragments();
        std::fs::write(
            repo.root().join(format!("src/moved{i}.ts")),
            format!("export const moved{i} = {i};\n"),
        )
        .unwrap();
        sync(&mut main, &embedder).await;
        if fragments() < before {
            merged = true;
            break;
        }
    }
    assert!(merged, "{} data files and no merge", fragments());
    assert_same_as_clean_build(repo.root(), &main).await;
    let mut task = Store::open(&task_root, options(&embedder)).await.unwrap();
    sync(&mut task, &embedder).await;
    assert_same_as_clean_build(&task_root, &task).await;

    // A removed worktree's hold goes at the main index's next upkeep.
    let registry = main_dir.join("clones");
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 1);
    drop(task);
    repo.git(&[
        "worktree",
        "remove",
        "--force",
        &task_root.to_string_lossy(),
    ]);
    std::fs::write(repo.root().join("src/late.ts"), "export const late = 1;\n").unwrap();
    sync(&mut main, &embedder).await;
    assert_eq!(
        std::fs::read_dir(&registry).unwrap().count(),
        1,
        "a registry entry under an hour old may be a clone being made"
    );
    let age_registry = || {
        for entry in std::fs::read_dir(&registry).unwrap() {
            let file = std::fs::File::options()
                .write(true)
                .open(entry.unwrap().path())
                .unwrap();
            let hours_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 3600);
            file.set_modified(hours_ago).unwrap();
        }
    };
    age_registry();
    std::fs::write(
        repo.root().join("src/later.ts"),
        "export const later = 1;\n",
    )
    .unwrap();
    sync(&mut main, &embedder).await;
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 0);
    assert_same_as_clean_build(repo.root(), &main).await;

    // A clone rebuilt as an index of its own (here for another model) names the main index
    // no more: its hold goes too, though its worktree stays.
    let own_root = dir.path().join("own");
    repo.add_worktree(&own_root, "own");
    let mut own = Store::open(&own_root, options(&embedder)).await.unwrap();
    sync(&mut own, &embedder).await;
    drop(own);
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 1);
    let model = TokenHashEmbedder::new(DIMENSION + 8);
    let mut own = Store::open(&own_root, options(&model)).await.unwrap();
    assert!(own.rebuilt().is_some());
    sync(&mut own, &model).await;
    drop(own);
    let own_dir = git.join("worktrees/own/codectx/index");
    assert!(own_dir.join("chunks.lance").exists() && !own_dir.join("cloned.from").exists());
    age_registry();
    std::fs::write(repo.root().join("src/last.ts"), "export const last = 1;\n").unwrap();
    sync(&mut main, &embedder).await;
    assert_eq!(
        std::fs::read_dir(&registry).unwrap().count(),
        0,
        "a rebuilt clone's hold is released"
    );
    assert_same_as_clean_build(repo.root(), &main).await;

    // A clone whose main index was rebuilt, or is gone, is built anew.
    drop(main);
    for (name, end_main) in [("rebuilt", false), ("removed", true)] {
        // The main index with this test's model (back from the other one, the second time).
        let mut main = Store::open(repo.root(), options(&embedder)).await.unwrap();
        sync(&mut main, &embedder).await;
        drop(main);
        let other_root = dir.path().join(name);
        repo.add_worktree(&other_root, name);
        sync(
            &mut Store::open(&other_root, options(&embedder)).await.unwrap(),
            &embedder,
        )
        .await;
        if end_main {
            std::fs::remove_dir_all(&main_dir).unwrap();
        } else {
            // Another model: the main index's chunk and file tables are made anew.
            let model = TokenHashEmbedder::new(DIMENSION + 8);
            let mut main = Store::open(repo.root(), options(&model)).await.unwrap();
            assert!(main.rebuilt().is_some());
            sync(&mut main, &model).await;
        }
        let mut other = Store::open(&other_root, options(&embedder)).await.unwrap();
        assert!(
            other.rebuilt().is_some_and(|r| r.contains("cloned from")),
            "{name}: {:?}",
            other.rebuilt()
        );
        sync(&mut other, &embedder).await;
        assert_same_as_clean_build(&other_root, &other).await;
    }
}
