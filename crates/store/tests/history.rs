//! The repository's history in the index: a repository the test builds commit by commit
//! with the `git` command line, synced after each step.

use std::path::{Path, PathBuf};

use codectx_corpus::GitRepo;
use codectx_store::{
    ChunkFilter, HistoryOff, HistoryOptions, HistoryStatus, Store, StoreOptions, SyncStats,
    TextSearch,
};

struct Repo {
    _dir: tempfile::TempDir,
    git: GitRepo,
}

impl Repo {
    fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let git = GitRepo::init(dir.path());
        Repo { _dir: dir, git }
    }

    fn root(&self) -> &Path {
        self.git.root()
    }

    fn commit(&mut self, path: &str, text: &str, message: &str) {
        self.git.write(path, text);
        self.git.commit(message);
    }
}

const CACHE: &str = "\
export function store(key: string, value: string) {
  map.set(key, value);
}

export function evict(key: string) {
  map.delete(key);
}
";

/// The cache file, committed, then fixed in a second commit whose words are not in the code.
fn cache_with_a_fix() -> Repo {
    let mut repo = Repo::new();
    repo.commit("src/cache.ts", CACHE, "feat: add the cache");
    repo.commit(
        "src/cache.ts",
        &CACHE.replace(
            "map.delete(key);",
            "map.delete(key);\n  stats.removed += 1;",
        ),
        "fix: count expired entries when purging stale sessions",
    );
    repo
}

async fn open(root: &Path, history: HistoryOptions) -> (Store, PathBuf) {
    // The index lives outside the repository, like an index in a user cache.
    let index = tempfile::tempdir().unwrap().keep();
    let store = Store::open(
        root,
        StoreOptions {
            uri: Some(index.to_string_lossy().into_owned()),
            history,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    (store, index)
}

async fn sync(store: &mut Store) -> SyncStats {
    store.sync(None, &()).await.unwrap()
}

/// `qualified name: notes` of every row with notes, sorted.
async fn notes(store: &Store) -> Vec<String> {
    let mut lines: Vec<String> = store
        .chunks(Some("history != ''"))
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            format!(
                "{}: {}",
                r.chunk.breadcrumb,
                r.history.replace("\n\n", " | ")
            )
        })
        .collect();
    lines.sort();
    lines
}

async fn top_hit(store: &Store, query: &str) -> Option<String> {
    store
        .search_lexical(query, 5, &ChunkFilter::default())
        .await
        .unwrap()
        .first()
        .map(|(row, _)| row.chunk.name.clone())
}

#[tokio::test]
async fn commit_notes_become_a_searchable_field_and_follow_new_commits() {
    let mut repo = cache_with_a_fix();
    let (mut store, _index) = open(repo.root(), HistoryOptions::default()).await;
    let stats = sync(&mut store).await;
    assert_eq!(stats.history_commits, 2);
    insta::assert_snapshot!(notes(&store).await.join("\n"), @r"
    src/cache.ts > evict: fix: count expired entries when purging stale sessions | feat: add the cache
    src/cache.ts > store: feat: add the cache
    ");
    // The words are only in the commit: the history field finds the symbol.
    assert_eq!(
        top_hit(&store, "purging stale sessions").await.as_deref(),
        Some("evict")
    );
    assert!(matches!(
        store.history(),
        HistoryStatus::On { symbols: 2, .. }
    ));

    // A new commit: only it is read, and its note goes first.
    repo.commit(
        "src/cache.ts",
        &std::fs::read_to_string(repo.root().join("src/cache.ts"))
            .unwrap()
            .replace("map.set(key, value);", "map.set(key, value.trim());"),
        "fix: normalise whitespace in stored values",
    );
    let stats = sync(&mut store).await;
    assert_eq!(stats.history_commits, 1);
    assert_eq!(stats.files_parsed, 1, "the edited file");
    // Its rows took the new note as they were written: no second write of them.
    assert_eq!(stats.history_rows, 0);
    insta::assert_snapshot!(notes(&store).await.join("\n"), @r"
    src/cache.ts > evict: fix: count expired entries when purging stale sessions | feat: add the cache
    src/cache.ts > store: fix: normalise whitespace in stored values | feat: add the cache
    ");
    // Nothing new: nothing read, nothing written.
    let stats = sync(&mut store).await;
    assert_eq!(
        (stats.history_commits, stats.history_rows, stats.commits),
        (0, 0, 0)
    );
}

/// With commit notes searched, the full-text fields kept in memory score the `history`
/// field as LanceDB's index does, and hand over each hit's notes.
#[tokio::test]
async fn commit_notes_in_memory_score_as_the_full_text_index() {
    let repo = cache_with_a_fix();
    let index = tempfile::tempdir().unwrap();
    let options = |text_search| StoreOptions {
        uri: Some(index.path().to_string_lossy().into_owned()),
        // Every rewritten row rebuilds the full-text index: a clean build's statistics,
        // which the copy in memory always has.
        fts_catch_up_rows: 1,
        text_search,
        ..StoreOptions::default()
    };
    let mut store = Store::open(repo.root(), options(TextSearch::Index))
        .await
        .unwrap();
    sync(&mut store).await;
    let memory = Store::open(repo.root(), options(TextSearch::Memory))
        .await
        .unwrap();
    let exact = |hits: Vec<codectx_store::LexicalHit>| -> Vec<(String, u32, String)> {
        hits.into_iter()
            .map(|h| (h.id, h.score.to_bits(), h.history))
            .collect()
    };
    for query in ["purging stale sessions", "add the cache", "map delete key"] {
        let all = ChunkFilter::default();
        let kept = memory.search_lexical_hits(query, 10, &all).await.unwrap();
        assert!(!kept.is_empty(), "{query}");
        let index = store.search_lexical_hits(query, 10, &all).await.unwrap();
        assert_eq!(exact(index), exact(kept), "{query}");
    }
    let purging = memory
        .search_lexical_hits("purging stale sessions", 1, &ChunkFilter::default())
        .await
        .unwrap();
    assert!(purging[0].history.contains("purging stale sessions"));
}

#[tokio::test]
async fn history_off_leaves_no_trace_and_says_why() {
    let mut repo = Repo::new();
    repo.commit("src/cache.ts", CACHE, "feat: purging stale sessions");
    let off = HistoryOptions {
        max_commits: 0,
        ..HistoryOptions::default()
    };
    let (mut store, index) = open(repo.root(), off.clone()).await;
    sync(&mut store).await;
    assert!(notes(&store).await.is_empty());
    assert_eq!(store.history(), &HistoryStatus::Off(HistoryOff::Disabled));

    // On, then off again: the notes go.
    let mut on = Store::open(
        repo.root(),
        StoreOptions {
            uri: Some(index.to_string_lossy().into_owned()),
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    sync(&mut on).await;
    assert_eq!(notes(&on).await.len(), 2);
    drop(on);
    let mut again = Store::open(
        repo.root(),
        StoreOptions {
            uri: Some(index.to_string_lossy().into_owned()),
            history: off,
            fts_catch_up_rows: 1,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap();
    let stats = sync(&mut again).await;
    assert!(notes(&again).await.is_empty());
    // The rows that lost their notes are in the full-text indexes again, not searched flat.
    assert_eq!(stats.history_rows, 2);
    let table = again.chunk_table();
    for index in table.list_indices().await.unwrap() {
        let indexed = table.index_stats(&index.name).await.unwrap().unwrap();
        assert_eq!(indexed.num_unindexed_rows, 0, "{}", index.name);
    }

    // Outside git: off, with the reason.
    let plain = tempfile::tempdir().unwrap();
    std::fs::write(plain.path().join("a.ts"), CACHE).unwrap();
    let (mut store, _index) = open(plain.path(), HistoryOptions::default()).await;
    sync(&mut store).await;
    assert_eq!(
        store.recorded_history().await.unwrap(),
        HistoryStatus::Off(HistoryOff::NotARepository)
    );
}

#[tokio::test]
async fn a_deferred_first_read_lands_from_a_catch_up_and_the_next_sync_searches_it() {
    let repo = cache_with_a_fix();
    let index = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        uri: Some(index.path().to_string_lossy().into_owned()),
        defer_history: true,
        ..StoreOptions::default()
    };
    let mut store = Store::open(repo.root(), options).await.unwrap();

    // The first sync indexes the code and leaves the history: no commit read, none searched.
    let stats = sync(&mut store).await;
    assert_eq!((stats.files_parsed, stats.history_commits), (1, 0));
    assert_eq!(store.history(), &HistoryStatus::Pending);
    assert!(notes(&store).await.is_empty());
    assert_eq!(top_hit(&store, "purging stale sessions").await, None);
    // Syncs before the catch-up lands stay pending and cheap.
    let stats = sync(&mut store).await;
    assert_eq!((stats.history_commits, stats.commits), (0, 0));

    let mut catch_up = store
        .history_catch_up()
        .await
        .unwrap()
        .expect("a read is pending");
    let stats = catch_up.run().await.unwrap();
    assert_eq!((stats.history_commits, stats.history_rows), (2, 2));

    // The engine's handle picks it up on its next sync, reading no commit again.
    let stats = sync(&mut store).await;
    assert_eq!((stats.history_commits, stats.history_rows), (0, 0));
    assert!(matches!(
        store.history(),
        HistoryStatus::On { symbols: 2, .. }
    ));
    assert!(store.history_catch_up().await.unwrap().is_none());
    insta::assert_snapshot!(notes(&store).await.join("\n"), @r"
    src/cache.ts > evict: fix: count expired entries when purging stale sessions | feat: add the cache
    src/cache.ts > store: feat: add the cache
    ");
    assert_eq!(
        top_hit(&store, "purging stale sessions").await.as_deref(),
        Some("evict")
    );

    // The same index without deferral: what a sync that read the history itself gives.
    let (mut eager, _eager_index) = open(repo.root(), HistoryOptions::default()).await;
    sync(&mut eager).await;
    assert_eq!(notes(&eager).await, notes(&store).await);
}

/// A background read that lost the lock to another writer (a long CLI `index`) is run again
/// once the writer is done, and lands in full.
#[tokio::test]
async fn a_catch_up_that_timed_out_on_the_lock_runs_again() {
    let repo = cache_with_a_fix();
    let index = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        uri: Some(index.path().to_string_lossy().into_owned()),
        defer_history: true,
        lock_timeout: std::time::Duration::from_millis(200),
        ..StoreOptions::default()
    };
    let mut store = Store::open(repo.root(), options).await.unwrap();
    sync(&mut store).await;
    let mut catch_up = store.history_catch_up().await.unwrap().unwrap();

    let lock = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(index.path().join("write.lock"))
        .unwrap();
    lock.lock().unwrap();
    let err = catch_up.run().await.unwrap_err();
    assert!(
        matches!(err, codectx_store::StoreError::Locked { .. }),
        "{err}"
    );
    drop(lock);

    let stats = catch_up.run().await.unwrap();
    assert_eq!((stats.history_commits, stats.history_rows), (2, 2));
    sync(&mut store).await;
    assert!(matches!(
        store.history(),
        HistoryStatus::On { symbols: 2, .. }
    ));
}

/// A head moved back (a reset, a switch to an older branch) is read again in full. A
/// symbol whose file is as it was there keeps the notes of its own ancestry only: its row
/// is rewritten for its notes alone, and the index ends as a clean build's.
#[tokio::test]
async fn a_head_moved_back_keeps_only_the_notes_of_its_ancestry() {
    let mut repo = cache_with_a_fix();
    let fixed = repo.git.git(&["rev-parse", "HEAD"]);
    let text = std::fs::read_to_string(repo.root().join("src/cache.ts")).unwrap();
    // A change to `store` and its revert: the file ends as it was.
    repo.commit(
        "src/cache.ts",
        &text.replace("map.set(key, value);", "map.set(key, value.trim());"),
        "feat: trim stored values",
    );
    repo.commit("src/cache.ts", &text, "revert: keep stored values as given");
    let (mut store, _index) = open(repo.root(), HistoryOptions::default()).await;
    assert_eq!(sync(&mut store).await.history_commits, 4);
    insta::assert_snapshot!(notes(&store).await.join("\n"), @r"
    src/cache.ts > evict: fix: count expired entries when purging stale sessions | feat: add the cache
    src/cache.ts > store: revert: keep stored values as given | feat: trim stored values | feat: add the cache
    ");

    repo.git.git(&["reset", "-q", "--hard", fixed.trim()]);
    let stats = sync(&mut store).await;
    assert_eq!(
        (
            stats.files_parsed,
            stats.history_commits,
            stats.history_rows
        ),
        (0, 2, 1),
        "nothing parsed, every commit read again, store's row rewritten for its notes"
    );
    let after = notes(&store).await;
    insta::assert_snapshot!(after.join("\n"), @r"
    src/cache.ts > evict: fix: count expired entries when purging stale sessions | feat: add the cache
    src/cache.ts > store: feat: add the cache
    ");
    let (mut clean, _clean_index) = open(repo.root(), HistoryOptions::default()).await;
    sync(&mut clean).await;
    assert_eq!(after, notes(&clean).await);
}

#[tokio::test]
async fn a_catch_up_that_finds_the_history_recorded_writes_nothing() {
    let mut repo = Repo::new();
    repo.commit("src/cache.ts", CACHE, "feat: add the cache");
    let index = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        uri: Some(index.path().to_string_lossy().into_owned()),
        defer_history: true,
        ..StoreOptions::default()
    };
    let mut store = Store::open(repo.root(), options.clone()).await.unwrap();
    sync(&mut store).await;
    let mut late = store.history_catch_up().await.unwrap().unwrap();
    // Another handle reads the history first (a CLI `index`).
    let mut other = Store::open(
        repo.root(),
        StoreOptions {
            defer_history: false,
            ..options
        },
    )
    .await
    .unwrap();
    assert_eq!(sync(&mut other).await.history_commits, 1);
    let stats = late.run().await.unwrap();
    assert_eq!((stats.history_rows, stats.commits), (0, 0));
    sync(&mut store).await;
    assert!(matches!(
        store.history(),
        HistoryStatus::On { symbols: 2, .. }
    ));
}

/// The count of annotated symbols is recorded with the chunk table's version: a reopened
/// index reads it instead of scanning, and an index rebuilt for another model (its tables
/// new, their versions counted from the start again) neither keeps a count of the old
/// tables nor loses its notes.
#[tokio::test]
async fn a_rebuild_for_another_model_keeps_the_notes_and_counts_them_anew() {
    let repo = cache_with_a_fix();
    let index = tempfile::tempdir().unwrap();
    let options = |embedding: Option<codectx_store::EmbeddingSpec>| StoreOptions {
        uri: Some(index.path().to_string_lossy().into_owned()),
        embedding,
        ..StoreOptions::default()
    };
    let mut store = Store::open(repo.root(), options(None)).await.unwrap();
    sync(&mut store).await;
    let before = notes(&store).await;
    assert_eq!(before.len(), 2);
    drop(store);

    let reopened = Store::open(repo.root(), options(None)).await.unwrap();
    assert!(matches!(
        reopened.recorded_history().await.unwrap(),
        HistoryStatus::On { symbols: 2, .. }
    ));
    drop(reopened);

    let spec = codectx_store::EmbeddingSpec {
        model: "test:another".into(),
        dimension: 8,
        view: Default::default(),
    };
    let mut rebuilt = Store::open(repo.root(), options(Some(spec))).await.unwrap();
    assert!(rebuilt.rebuilt().is_some());
    sync(&mut rebuilt).await;
    assert_eq!(notes(&rebuilt).await, before);
    assert!(matches!(
        rebuilt.history(),
        HistoryStatus::On { symbols: 2, .. }
    ));
}
