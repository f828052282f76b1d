//! A linked worktree's new index starts as a shallow clone of the main worktree's: Lance
//! tables whose manifests name the main index's data and index files instead of copying
//! them. The worktree's first sync then writes only what differs (its changed files, the
//! notes its ancestry gives other symbols): worktrees branched from the main one hold its
//! index once and a small delta each. The version cloned is the latest, or a version the
//! main index keeps (`revisit.rs`) whose commit is much nearer the worktree's `HEAD`.
//!
//! The main index keeps the files a clone names: each clone tags the versions it was made
//! from (`worktree-<hash of the clone's path>`), tagged versions survive upkeep, and a
//! registry file per tag (`<main index>/clones/<tag>`) names the clone, so the main index's
//! upkeep drops the tags of clones that are gone (`git worktree remove`). A clone whose main
//! index lost its tags (removed, or rebuilt for another model or format) is rebuilt from its
//! files at its next open.
//!
//! Cloning is an optimisation: any failure leaves an empty index, built as before.

use std::path::{Path, PathBuf};

use lancedb::Connection;

use codectx_embed::EmbeddingSpec;

use crate::revisit::{MIN_FILES_SAVED, RecordedHead, kept_head, newest_versions};
use crate::schema::{CHUNKS, FILES, META};
use crate::store::{FORMAT, IndexSeed};

/// The file in a clone's directory naming the index it was made from: read before any
/// table (a clone whose main index is gone cannot read its own).
pub(crate) const CLONED_FROM_FILE: &str = "cloned.from";

/// The directory of the main index's registry of clones (one file per tag).
pub(crate) const CLONES_DIR: &str = "clones";

/// What a clone's tags are called: this prefix, then a hash of the clone's directory.
const TAG_PREFIX: &str = "worktree-";

/// An index sharing files (a clone, or the index it was made from) compacts fragments of
/// fewer rows than this, not the 16,384 of an index of its own: a sync's small fragments
/// merge (once there are many: `maintain.rs`), the large shared ones stay as they are.
pub(crate) const SHARED_COMPACTED_FRAGMENT_ROWS: usize = 1024;

/// How long a registry file is kept whatever its clone's directory holds: far longer than
/// making a clone takes.
const MAKING_A_CLONE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The tag a clone at `dir` holds on the tables it was made from.
fn tag_for(dir: &Path) -> String {
    let hash = blake3::hash(&path_bytes(dir)).to_hex();
    format!("{TAG_PREFIX}{}", &hash[..16])
}

/// Makes the tables of the new, empty index `db` (at `dir`) shallow clones of the index
/// `at` names: of its latest versions, or of a version it keeps (for another clone, or a
/// recent head) that is much nearer the new index's commit ([`nearest_kept_version`]). `Err` names why not; the caller then builds the index anew
/// (after dropping whatever tables were made).
///
/// The seed must be an index of this build's format holding vectors of `spec`'s model (or
/// none, as `spec`): another would be rebuilt at once.
pub(crate) async fn clone_index(
    db: &Connection,
    dir: &Path,
    at: &IndexSeed,
    spec: Option<&EmbeddingSpec>,
) -> Result<(), String> {
    let seed = at.index.as_path();
    if !seed.join(format!("{META}.lance")).exists() {
        return Err(format!("no index at {}", seed.display()));
    }
    let seed_uri = seed.to_string_lossy().into_owned();
    let source = lancedb::connect(&seed_uri)
        .execute()
        .await
        .map_err(|e| format!("cannot open {seed_uri}: {e}"))?;
    let meta = crate::store::read_meta(&source, &seed_uri).await?;
    if meta.get("format").map(String::as_str) != Some(FORMAT) {
        return Err(format!("{seed_uri} is of another format"));
    }
    let (chunks, files, meta_table) = crate::store::open_tables(&source)
        .await
        .map_err(|e| format!("{seed_uri}: {e}"))?;
    let schema = chunks.schema().await.map_err(|e| e.to_string())?;
    if crate::schema::recorded_spec(&schema)?.as_ref() != spec {
        return Err(format!("{seed_uri} holds vectors of another model"));
    }
    let kept = match nearest_kept_version(&source, &files, &meta, at).await {
        Start::Latest => None,
        Start::Kept(tag) => Some(tag),
        Start::Anew(why) => return Err(why),
    };
    let mut versions = Vec::new();
    for table in [&chunks, &files, &meta_table] {
        let version = match &kept {
            Some(kept) => table
                .tags()
                .await
                .map_err(|e| e.to_string())?
                .list()
                .await
                .map_err(|e| e.to_string())?
                .get(kept)
                .map(|t| t.version)
                .ok_or_else(|| format!("{seed_uri} lost its tag {kept}"))?,
            None => table.version().await.map_err(|e| e.to_string())?,
        };
        versions.push(version);
    }
    let tag = tag_for(dir);
    // The registry first: a tag is never without the file that lets upkeep drop it.
    let registry = seed.join(CLONES_DIR);
    std::fs::create_dir_all(&registry)
        .and_then(|()| std::fs::write(registry.join(&tag), path_bytes(dir)))
        .map_err(|e| format!("cannot register the clone in {}: {e}", registry.display()))?;
    for ((name, table), version) in [(CHUNKS, chunks), (FILES, files), (META, meta_table)]
        .into_iter()
        .zip(versions)
    {
        let mut tags = table.tags().await.map_err(|e| e.to_string())?;
        // A worktree removed and added again at the same path finds its old tag.
        let tagged = match tags.create(&tag, version).await {
            Ok(()) => Ok(()),
            Err(_) => tags.update(&tag, version).await,
        };
        tagged.map_err(|e| format!("cannot tag {name} of {seed_uri}: {e}"))?;
        db.clone_table(name, format!("{seed_uri}/{name}.lance"))
            .source_tag(tag.clone())
            .execute()
            .await
            .map_err(|e| format!("cannot clone {name} of {seed_uri}: {e}"))?;
    }
    record_seed(dir, seed).map_err(|e| format!("cannot record the clone's origin: {e}"))
}

/// The version of a seed index a new index starts from.
enum Start {
    Latest,
    /// The version this tag names.
    Kept(String),
    /// None: a revision's index far from every version is built anew (a clone would
    /// rewrite most of its rows).
    Anew(String),
}

/// Which version of `files`' index (the seed) a new index `at` a commit is best started
/// from: the kept version whose recorded commit differs from the new index's in at most
/// half as many files as the latest version's, and in [`MIN_FILES_SAVED`] fewer (the rule
/// a branch switch restores by); else the latest. So a worktree added at an older commit
/// starts from what the index held there. Counted on commits' trees, not contents: the
/// first sync still writes whatever differs. A revision's index starts anew when even the
/// nearest version differs in more than half as many files as the seed holds. On any
/// failure, the latest.
async fn nearest_kept_version(
    source: &Connection,
    files: &lancedb::Table,
    latest: &std::collections::HashMap<String, String>,
    at: &IndexSeed,
) -> Start {
    let started = std::time::Instant::now();
    let Some(latest) = RecordedHead::of(|key| latest.get(key).cloned()) else {
        return Start::Latest;
    };
    let latest = latest.commit().to_string();
    // How far the latest version is first: a worktree added at the main one's commit, as
    // most are, reads no kept version.
    let (repository, commit) = (at.repository.clone(), at.commit.clone());
    let measured = tokio::task::spawn_blocking(move || {
        let head = match commit {
            Some(commit) => commit,
            None => codectx_history::resolve_commit(&repository, "HEAD").ok()?,
        };
        let now = codectx_history::files_between(&repository, &head, &[latest], usize::MAX)
            .ok()?
            .pop()
            .flatten()?;
        Some((head, now))
    })
    .await
    .ok()
    .flatten();
    let Some((head, now)) = measured else {
        return Start::Latest;
    };
    let diffed_latest = started.elapsed();
    let nearest = match (now / 2).min(now.saturating_sub(MIN_FILES_SAVED)) {
        0 => None,
        bound => nearest_tag(source, files, at, &head, bound).await,
    };
    if at.commit.is_some() {
        let differing = nearest.as_ref().map_or(now, |(_, d)| *d);
        let seed_files = files.count_rows(None).await.unwrap_or(0);
        if differing > seed_files / 2 {
            return Start::Anew(format!(
                "{differing} files differ from its nearest version, of {seed_files}"
            ));
        }
    }
    let Some((tag, differing)) = nearest else {
        return Start::Latest;
    };
    tracing::debug!(
        ?diffed_latest,
        chosen = ?started.elapsed(),
        "a new index starts from the kept version {tag} ({differing} files from its commit)"
    );
    Start::Kept(tag)
}

/// The kept version of `files`' index whose recorded commit differs from `head` in the
/// fewest files, at most `bound`, with that count.
async fn nearest_tag(
    source: &Connection,
    files: &lancedb::Table,
    at: &IndexSeed,
    head: &str,
    bound: usize,
) -> Option<(String, usize)> {
    let tagged = newest_versions(
        files
            .tags()
            .await
            .ok()?
            .list()
            .await
            .ok()?
            .into_iter()
            .map(|(tag, contents)| (tag, contents.version)),
    );
    let mut kept = Vec::new();
    for (tag, _) in tagged {
        if let Some(recorded) = kept_head(source, &tag).await {
            kept.push((tag, recorded.commit().to_string()));
        }
    }
    let commits: Vec<String> = kept.iter().map(|(_, commit)| commit.clone()).collect();
    let (repository, head) = (at.repository.clone(), head.to_string());
    let distances = tokio::task::spawn_blocking(move || {
        codectx_history::files_between(&repository, &head, &commits, bound).ok()
    })
    .await
    .ok()
    .flatten()?;
    kept.into_iter()
        .zip(distances)
        .filter_map(|((tag, _), d)| Some((tag, d?)))
        .filter(|(_, d)| *d <= bound)
        .min_by_key(|(_, d)| *d)
}

/// The index the clone at `dir` was made from; `None` for an index of its own.
pub(crate) fn cloned_from(dir: &Path) -> Option<PathBuf> {
    std::fs::read(dir.join(CLONED_FROM_FILE))
        .ok()
        .map(clone_dir)
}

/// Whether the index at `dir` shares its files: it is a clone, or has clones (whose
/// registry entries stay until the main index's upkeep finds them gone).
pub(crate) fn shares_files(dir: &Path) -> bool {
    cloned_from(dir).is_some()
        || std::fs::read_dir(dir.join(CLONES_DIR)).is_ok_and(|mut e| e.next().is_some())
}

/// Records, in the clone at `dir`, that it was made from `seed`.
fn record_seed(dir: &Path, seed: &Path) -> std::io::Result<()> {
    std::fs::write(dir.join(CLONED_FROM_FILE), path_bytes(seed))
}

/// The index the clone at `dir` was made from, when that index no longer holds the clone's
/// tags: it was removed, or rebuilt (another format, another model), and with it went the
/// files the clone's tables name. The clone is then rebuilt.
pub(crate) async fn orphaned(dir: &Path) -> Option<PathBuf> {
    let seed = cloned_from(dir)?;
    let tag = tag_for(dir);
    let holds_tags = async {
        let db = lancedb::connect(&seed.to_string_lossy())
            .execute()
            .await
            .ok()?;
        for name in [CHUNKS, FILES, META] {
            let table = db.open_table(name).execute().await.ok()?;
            let tags = table.tags().await.ok()?.list().await.ok()?;
            tags.contains_key(&tag).then_some(())?;
        }
        Some(())
    };
    match holds_tags.await {
        Some(()) => None,
        None => Some(seed),
    }
}

/// Drops the tags (on `tables`, the main index's) of clones whose directory holds no index
/// any more, or an index not cloned from this one, and their registry files. Runs in the
/// main index's upkeep, under its write lock; returns how many clones went.
pub(crate) async fn drop_gone_clones(
    index_dir: &Path,
    tables: [&lancedb::Table; 3],
) -> Result<usize, lancedb::Error> {
    let registry = index_dir.join(CLONES_DIR);
    let Ok(entries) = std::fs::read_dir(&registry) else {
        return Ok(0);
    };
    let mut gone = Vec::new();
    for entry in entries.flatten() {
        let tag = entry.file_name().to_string_lossy().into_owned();
        // A clone being made has its registry file before its tables: a young one stays.
        let young = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < MAKING_A_CLONE));
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        // A clone rebuilt as an index of its own (another model, a rebuild on request)
        // names no index it was cloned from, or another one.
        let clone = clone_dir(bytes);
        let holds = clone.join(format!("{CHUNKS}.lance")).exists()
            && cloned_from(&clone).is_some_and(|seed| same_dir(&seed, index_dir));
        if tag.starts_with(TAG_PREFIX) && !young && !holds {
            gone.push(tag);
        }
    }
    for tag in &gone {
        for table in tables {
            let mut tags = table.tags().await?;
            if tags.list().await?.contains_key(tag) {
                tags.delete(tag).await?;
            }
        }
        let _ = std::fs::remove_file(registry.join(tag));
    }
    Ok(gone.len())
}

/// Whether `a` and `b` name one directory (one of them may be spelt through a symlink).
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// A directory as a registry file holds it: its bytes on Unix, UTF-8 elsewhere.
fn path_bytes(dir: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        dir.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        dir.to_string_lossy().into_owned().into_bytes()
    }
}

/// A registry file's directory ([`path_bytes`] read back).
fn clone_dir(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(bytes))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}
