//! A branch switch back to content the index held before writes nothing: the sync starts
//! from the tagged version nearest the working tree.
//!
//! An index keeps a version per clone (`clone.rs`): the state it was in when a worktree
//! was added, tagged so upkeep keeps its files. It also keeps the versions of the last
//! [`KEPT_HEADS`] history heads it recorded (`head-<commit>` tags). Its rows were deleted from the
//! latest version as main moved on, not from the disk. When `HEAD` moved and many files
//! changed with it, the sync compares the working tree, by content hash, with each tagged
//! version's files table; if one holds far more of it than the latest version, the chunk
//! and files tables are restored to it (a new version naming the old data files: nothing
//! is copied) and the sync goes on from there, writing only what still differs.
//!
//! A restore is a state this index was really in, notes included, so the history step
//! resumes from that version's recorded head. An index without history (a shallow clone,
//! history turned off) records the commit `HEAD` named instead, and keeps and restores its
//! versions by it. It is only an optimisation: a failure to read a tagged version leaves
//! the sync as it was.

use std::collections::HashMap;

use lancedb::Table;
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use codectx_files::{SourceFile, Walked};
use codectx_history::HistoryOff;

use crate::process::{content_hash, off_the_runtime, oversize_hash};
use crate::report::{SyncEvent, SyncObserver, SyncStats};
use crate::schema::{CHUNKS, FILES, META};
use crate::sql::text_column;
use crate::store::{CHECKED_OUT_KEY, FACTS_KEY, HISTORY_HEAD_KEY, HistoryStatus};
use crate::{Store, StoreError};

/// A restore is worth it when the latest version differs from the working tree in at
/// least this many files more than the tagged version does (and in twice as many): below
/// it the sync's own writes cost less than reloading every file record.
pub(crate) const MIN_FILES_SAVED: usize = 32;

/// Tagged versions compared at most, the newest first: each costs a read of its files
/// table's paths and hashes.
const MAX_CANDIDATES: usize = 16;

/// Versions kept for the last heads a sync recorded, besides those kept for clones: a
/// switch back to a branch checked out lately restores its version.
const KEPT_HEADS: usize = 4;

/// What the tags of those versions are called: this prefix, then the commit's first 16
/// hex digits.
const HEAD_TAG_PREFIX: &str = "head-";

/// A tagged version of the index, and how far its files are from the working tree.
struct Candidate {
    tag: String,
    files_version: u64,
    /// The commit it holds: what the meta table records after a restore.
    head: RecordedHead,
    differing: usize,
}

/// The commit a version of the index holds, as its meta table records it: the history
/// head, or without history the commit checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordedHead {
    history_head: String,
    checked_out: String,
}

impl RecordedHead {
    /// From a meta table's values; `None` when it records no commit.
    pub(crate) fn of(mut value: impl FnMut(&str) -> Option<String>) -> Option<Self> {
        let head = RecordedHead {
            history_head: value(HISTORY_HEAD_KEY).unwrap_or_default(),
            checked_out: value(CHECKED_OUT_KEY).unwrap_or_default(),
        };
        (!head.commit().is_empty()).then_some(head)
    }

    /// The commit: the history head, which is `HEAD` as history read it, when there is
    /// one.
    pub(crate) fn commit(&self) -> &str {
        if self.history_head.is_empty() {
            &self.checked_out
        } else {
            &self.history_head
        }
    }
}

impl Store {
    /// Restores the chunk and files tables to the tagged version nearest the working tree
    /// when `HEAD` moved since the last sync and that version holds far more of the tree
    /// than the latest one (see the module's comment). Returns the files whose records
    /// the restore changed (for the in-memory project, as changed elsewhere).
    pub(crate) async fn revisit_nearest_version(
        &mut self,
        walked: &Walked,
        observer: &dyn SyncObserver,
        stats: &mut SyncStats,
    ) -> Result<Vec<String>, StoreError> {
        // In memory first: most syncs move few files, and need no meta read or `HEAD`.
        if self.local_dir.is_none() || self.known.is_empty() || !self.moved_enough(walked) {
            return Ok(Vec::new());
        }
        let Some(recorded) = self.recorded_commit().await? else {
            return Ok(Vec::new());
        };
        let Some(head) = self.checked_out().await else {
            return Ok(Vec::new());
        };
        if head == recorded.commit() {
            return Ok(Vec::new());
        }
        let tags = match self.files.tags().await {
            Ok(tags) => tags.list().await.unwrap_or_default(),
            Err(_) => return Ok(Vec::new()),
        };
        if tags.is_empty() {
            return Ok(Vec::new());
        }
        let started = std::time::Instant::now();
        let tree = self.tree_hashes(walked);
        let hashed = started.elapsed();
        let differing_now = differing(&tree, self.known.iter().map(|(p, r)| (p, &r.content_hash)));
        if differing_now < MIN_FILES_SAVED {
            return Ok(Vec::new());
        }
        let Ok(db) = lancedb::connect(&self.uri).execute().await else {
            return Ok(Vec::new());
        };
        let tagged = newest_versions(
            tags.into_iter()
                .map(|(tag, contents)| (tag, contents.version)),
        );
        let mut best: Option<Candidate> = None;
        for (tag, files_version) in tagged {
            // Only a version that could be restored, and is nearer than the best so far,
            // has its other tables read.
            let bound = best
                .as_ref()
                .map_or(differing_now / 2, |b| b.differing.saturating_sub(1))
                .min(differing_now - MIN_FILES_SAVED);
            let Some(candidate) = candidate(&db, &tag, files_version, &tree, bound).await else {
                continue;
            };
            if best
                .as_ref()
                .is_none_or(|b| candidate.differing < b.differing)
            {
                best = Some(candidate);
            }
        }
        tracing::debug!(
            ?hashed,
            compared = ?started.elapsed(),
            differing_now,
            nearest = best.as_ref().map(|b| b.differing),
            "tagged versions compared with the tree"
        );
        // Every candidate kept passed the bound: half as many files differ, and 32 fewer.
        let Some(best) = best else {
            return Ok(Vec::new());
        };
        tracing::debug!(
            "restoring tagged version {} ({} files differ from the tree, {} in the latest)",
            best.tag,
            best.differing,
            differing_now
        );
        // Killed midway, the index is marked (repair matches rows to files again) and has
        // no history head (the next sync reads every note again).
        self.set_dirty(true, stats).await?;
        self.set_meta(HISTORY_HEAD_KEY, "").await?;
        restore(&self.chunks, &best.tag)
            .await
            .map_err(self.lance("restoring the chunk table"))?;
        observer.event(SyncEvent::ChunksRestored);
        restore(&self.files, &best.tag)
            .await
            .map_err(self.lance("restoring the files table"))?;
        self.set_meta(CHECKED_OUT_KEY, &best.head.checked_out)
            .await?;
        self.set_meta(HISTORY_HEAD_KEY, &best.head.history_head)
            .await?;
        self.set_dirty(false, stats).await?;
        stats.commits += 4;
        stats.revisited = Some(best.files_version);
        // The version may have been kept before its vectors were written.
        self.check_pending = true;
        self.reload_known().await
    }

    /// Tags the tables' versions with the history head they hold (`head-<commit>`), once
    /// per head or `again` (vectors were written since), and drops the tags of all but the
    /// [`KEPT_HEADS`] newest heads. Failing costs only a later switch its restore.
    pub(crate) async fn keep_head_version(&mut self, again: bool) {
        if self.local_dir.is_none() {
            return;
        }
        // At a sync's end this handle knows the commit it recorded; after vectors were
        // written (maybe by a handle that never synced) the meta table says.
        let head = match (&self.history, again) {
            (HistoryStatus::On { head, .. }, false) => head.clone(),
            // Off for want of commits to read, not of a repository.
            (HistoryStatus::Off(HistoryOff::Disabled | HistoryOff::Shallow), false) => {
                let Some(head) = self.checked_out().await else {
                    return;
                };
                if self.kept_head.as_deref() != Some(head.as_str())
                    && let Err(e) = self.record_checked_out(&head).await
                {
                    tracing::debug!("cannot record the commit checked out: {e}");
                    return;
                }
                head
            }
            _ => match self.recorded_commit().await {
                Ok(Some(recorded)) => recorded.commit().to_string(),
                _ => return,
            },
        };
        if !again && self.kept_head.as_deref() == Some(head.as_str()) {
            return;
        }
        let tag = format!("{HEAD_TAG_PREFIX}{}", &head[..head.len().min(16)]);
        for table in [&self.chunks, &self.files, &self.meta] {
            if let Err(e) = keep_version(table, &tag).await {
                tracing::debug!("cannot keep the version of head {head}: {e}");
                return;
            }
        }
        self.kept_head = Some(head);
    }

    /// The commit the index's latest version holds, if it records one.
    async fn recorded_commit(&self) -> Result<Option<RecordedHead>, StoreError> {
        let history_head = self.meta_value(HISTORY_HEAD_KEY).await?;
        let checked_out = self.meta_value(CHECKED_OUT_KEY).await?;
        Ok(RecordedHead::of(|key| match key {
            HISTORY_HEAD_KEY => history_head.clone(),
            _ => checked_out.clone(),
        }))
    }

    /// The commit `HEAD` names now; `None` outside git.
    async fn checked_out(&self) -> Option<String> {
        let root = self.root.clone();
        tokio::task::spawn_blocking(move || codectx_history::resolve_commit(&root, "HEAD"))
            .await
            .expect("resolving HEAD does not panic")
            .ok()
    }

    /// Records `head` as the commit checked out, for an index without history (whose
    /// versions are kept and found by it): written only when it is not recorded yet.
    async fn record_checked_out(&mut self, head: &str) -> Result<(), StoreError> {
        if self.meta_value(CHECKED_OUT_KEY).await?.as_deref() != Some(head) {
            self.set_meta(CHECKED_OUT_KEY, head).await?;
        }
        Ok(())
    }

    /// Whether enough files moved (stat data not the record's, new or gone) for a restore to
    /// be worth it: as many as differ in content, at least.
    fn moved_enough(&self, walked: &Walked) -> bool {
        let unmoved = walked.sources.iter().filter(|f| self.unmoved(f)).count();
        walked.sources.len() - unmoved + (self.known.len() - unmoved) >= MIN_FILES_SAVED
    }

    /// The file's stat data is its record's: its content is the known one.
    fn unmoved(&self, file: &SourceFile) -> bool {
        self.known
            .get(&file.path)
            .is_some_and(|k| k.mtime_ns == file.mtime_ns && k.size == file.size)
    }

    /// Every file of the working tree with its content hash: the known one for a file that
    /// did not move, read and hashed otherwise, as a sync records it.
    fn tree_hashes(&self, walked: &Walked) -> HashMap<String, String> {
        let max_bytes = self.options.files.max_file_bytes;
        off_the_runtime(|| {
            walked
                .sources
                .iter()
                .filter_map(|file| {
                    let hash = if self.unmoved(file) {
                        self.known[&file.path].content_hash.clone()
                    } else if file.size > max_bytes {
                        oversize_hash(file.size)
                    } else {
                        content_hash(&std::fs::read(&file.abs).ok()?)
                    };
                    Some((file.path.clone(), hash))
                })
                .collect()
        })
    }
}

/// The tagged version `tag`, when it differs from the tree in at most `bound` files, its
/// tables can be read at it and its facts are this build's.
async fn candidate(
    db: &lancedb::Connection,
    tag: &str,
    files_version: u64,
    tree: &HashMap<String, String>,
    bound: usize,
) -> Option<Candidate> {
    let files = tagged_table(db, FILES, tag).await?;
    let hashes = read_pairs(&files, "path", "contentHash").await?;
    let differing = differing(tree, hashes.iter());
    if differing > bound {
        return None;
    }
    let head = kept_head(db, tag).await?;
    Some(Candidate {
        tag: tag.to_string(),
        files_version,
        head,
        differing,
    })
}

/// The tagged versions (tag, files table version) worth comparing, newest first: one tag
/// per version, the [`MAX_CANDIDATES`] newest.
pub(crate) fn newest_versions(
    tagged: impl IntoIterator<Item = (String, u64)>,
) -> Vec<(String, u64)> {
    let mut tagged: Vec<(String, u64)> = tagged.into_iter().collect();
    tagged.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    tagged.dedup_by_key(|(_, version)| *version);
    tagged.truncate(MAX_CANDIDATES);
    tagged
}

/// The commit the version `tag` (of the files table) names holds, when it can be started
/// from: its meta and chunk tables can be read at it and its facts are this build's.
pub(crate) async fn kept_head(db: &lancedb::Connection, tag: &str) -> Option<RecordedHead> {
    let meta = tagged_table(db, META, tag).await?;
    let values = read_pairs(&meta, "key", "value").await?;
    if values.get(FACTS_KEY).map(String::as_str)
        != Some(codectx_graph::facts::FACTS_VERSION.to_string().as_str())
    {
        return None;
    }
    let head = RecordedHead::of(|key| values.get(key).cloned())?;
    // Restored or cloned with the files table: the tag must name a version of it too.
    tagged_table(db, CHUNKS, tag).await?;
    Some(head)
}

/// How many files differ between the working tree and `records` (path → content hash):
/// changed, added or removed.
fn differing<'a>(
    tree: &HashMap<String, String>,
    records: impl Iterator<Item = (&'a String, &'a String)>,
) -> usize {
    let (mut records_len, mut in_tree, mut same) = (0, 0, 0);
    for (path, hash) in records {
        records_len += 1;
        if let Some(h) = tree.get(path) {
            in_tree += 1;
            same += usize::from(h == hash);
        }
    }
    // Changed or removed, then added.
    (records_len - same) + (tree.len() - in_tree)
}

/// Tags `table`'s version `tag` (moving the tag if it named an older one), and drops the
/// head tags beyond the [`KEPT_HEADS`] newest.
async fn keep_version(table: &Table, tag: &str) -> lancedb::Result<()> {
    let version = table.version().await?;
    let mut tags = table.tags().await?;
    let listed = tags.list().await?;
    match listed.get(tag) {
        // A new process syncing nothing finds it kept already: nothing is written.
        Some(kept) if kept.version == version => return Ok(()),
        Some(_) => tags.update(tag, version).await?,
        None => tags.create(tag, version).await?,
    }
    // The head tags as they are now: the listing, with `tag` at `version`.
    let mut heads: Vec<(u64, String)> = listed
        .into_iter()
        .filter(|(name, _)| name.starts_with(HEAD_TAG_PREFIX) && name != tag)
        .map(|(name, contents)| (contents.version, name))
        .chain([(version, tag.to_string())])
        .collect();
    heads.sort();
    let surplus = heads.len().saturating_sub(KEPT_HEADS);
    for (_, name) in heads.into_iter().take(surplus) {
        tags.delete(&name).await?;
    }
    Ok(())
}

/// Makes the version `tag` names the latest of `table`.
async fn restore(table: &Table, tag: &str) -> lancedb::Result<()> {
    table.checkout_tag(tag).await?;
    table.restore().await
}

async fn tagged_table(db: &lancedb::Connection, name: &str, tag: &str) -> Option<Table> {
    let table = db.open_table(name).execute().await.ok()?;
    table.checkout_tag(tag).await.ok()?;
    Some(table)
}

/// Two text columns of a table as a map from the first to the second.
async fn read_pairs(table: &Table, key: &str, value: &str) -> Option<HashMap<String, String>> {
    use futures::TryStreamExt;
    let batches: Vec<_> = table
        .query()
        .select(Select::columns(&[key, value]))
        .execute()
        .await
        .ok()?
        .try_collect()
        .await
        .ok()?;
    let mut out = HashMap::new();
    for batch in &batches {
        let keys = text_column(batch, key).ok()?;
        let values = text_column(batch, value).ok()?;
        for i in 0..batch.num_rows() {
            out.insert(keys.value(i).to_string(), values.value(i).to_string());
        }
    }
    Some(out)
}
