//! The stat data of touched files, kept beside the files table instead of in it.
//!
//! A touched file (new mtime, same content) used to get its files row rewritten for the
//! new mtime alone, facts and all. A linked worktree's first sync touches every file (a
//! checkout writes them all), so each worktree's clone of the main index rewrote its whole
//! files table: 1.6 MB of vite's 20.7 MB index, once per worktree. Now a local index keeps
//! a touched file's `(mtime, size)` in `touched.stamps` and its row stays as the content
//! was indexed.
//!
//! The stamps are advisory, like the walk's listings. A stamp counts only while its content
//! hash is the files row's: a stamp that a killed sync left behind, or that a later edit
//! made stale, is ignored, and the file is hashed again. So a stamp never makes a sync skip
//! content the index does not hold.
//!
//! The file is JSON in a zstd frame: the hex hashes and paths compress to under a third
//! (vite's 1,495 stamps: 278 → 79 KB), most of what a clone of an index holds.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::schema::FileRecord;

/// The stamps' file in a local index directory.
pub(crate) const STAMPS_FILE: &str = "touched.stamps";

/// What a sync saw of a touched file: its stat data and the content it still holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    pub path: String,
    pub mtime_ns: i64,
    pub size: u64,
    pub content_hash: String,
}

impl Stamp {
    pub(crate) fn of(record: &FileRecord) -> Self {
        Stamp {
            path: record.path.clone(),
            mtime_ns: record.mtime_ns,
            size: record.size,
            content_hash: record.content_hash.clone(),
        }
    }
}

/// zstd's level for the stamps: saved once per sync that touched files.
const COMPRESSION: i32 = 3;

/// The stamps saved at `path`; none when it is missing or unreadable. (A file of plain JSON,
/// as saved before the stamps were compressed, is read too.)
pub(crate) fn read(path: &Path) -> Vec<Stamp> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let json = zstd::stream::decode_all(bytes.as_slice()).unwrap_or(bytes);
    serde_json::from_slice(&json).unwrap_or_default()
}

/// Gives each record the stat data of its stamp, where the stamp holds the record's content.
pub(crate) fn apply(known: &mut HashMap<String, FileRecord>, stamps: &[Stamp]) {
    for stamp in stamps {
        if let Some(record) = known.get_mut(&stamp.path)
            && record.content_hash == stamp.content_hash
        {
            record.mtime_ns = stamp.mtime_ns;
            record.size = stamp.size;
        }
    }
}

/// Saves the stamps at `path` after a sync (under the write lock): those saved before
/// (another process's sync may have added some) and this sync's `touched`, without the
/// paths whose rows the sync wrote or removed (`rewritten`), and only those that still hold
/// their file's content in `known`, whole or not at all ([`crate::sync::save_whole`]).
/// Failing costs only the next sync a hash of those files.
pub(crate) fn save(
    path: &Path,
    touched: &[Stamp],
    rewritten: &[String],
    known: &HashMap<String, FileRecord>,
) {
    let rewritten: HashSet<&str> = rewritten.iter().map(String::as_str).collect();
    let mut stamps: HashMap<String, Stamp> = read(path)
        .into_iter()
        .chain(touched.iter().cloned())
        .map(|s| (s.path.clone(), s))
        .collect();
    let before = stamps.len();
    stamps.retain(|p, s| {
        !rewritten.contains(p.as_str())
            && known
                .get(p)
                .is_some_and(|k| k.content_hash == s.content_hash)
    });
    if touched.is_empty() && stamps.len() == before {
        return;
    }
    let mut stamps: Vec<Stamp> = stamps.into_values().collect();
    stamps.sort_by(|a, b| a.path.cmp(&b.path));
    let saved = serde_json::to_vec(&stamps)
        .map_err(std::io::Error::other)
        .and_then(|json| zstd::bulk::compress(&json, COMPRESSION))
        .and_then(|bytes| crate::sync::save_whole(path, &bytes));
    if let Err(e) = saved {
        tracing::debug!(%e, "touched files' stamps not saved");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::FileStatus;

    fn record(path: &str, mtime_ns: i64, hash: &str) -> FileRecord {
        FileRecord {
            path: path.into(),
            mtime_ns,
            size: 10,
            content_hash: hash.into(),
            status: FileStatus::Indexed,
            chunk_count: 1,
            chunks_digest: String::new(),
            facts: None,
            layout: Default::default(),
        }
    }

    #[test]
    fn a_stamp_counts_only_while_it_holds_the_rows_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STAMPS_FILE);
        let mut known: HashMap<String, FileRecord> =
            [record("a.ts", 1, "A"), record("b.ts", 1, "B")]
                .into_iter()
                .map(|r| (r.path.clone(), r))
                .collect();
        // Both touched: their rows keep mtime 1, the stamps say 5.
        let touched = [
            Stamp::of(&record("a.ts", 5, "A")),
            Stamp::of(&record("b.ts", 5, "B")),
        ];
        save(&path, &touched, &[], &known);
        let mut reloaded = known.clone();
        apply(&mut reloaded, &read(&path));
        assert_eq!(reloaded["a.ts"].mtime_ns, 5);
        assert_eq!(reloaded["b.ts"].mtime_ns, 5);

        // b.ts changes content: its row is rewritten, and its stamp goes.
        known.insert("b.ts".into(), record("b.ts", 9, "B2"));
        save(&path, &[], &["b.ts".into()], &known);
        assert_eq!(read(&path), vec![Stamp::of(&record("a.ts", 5, "A"))]);

        // A stamp left for content the row no longer holds (a killed sync) is ignored.
        let stale = [Stamp::of(&record("a.ts", 7, "old"))];
        let mut reloaded = known.clone();
        apply(&mut reloaded, &stale);
        assert_eq!(reloaded["a.ts"].mtime_ns, 1);
    }

    #[test]
    fn unreadable_stamps_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STAMPS_FILE);
        assert!(read(&path).is_empty());
        std::fs::write(&path, b"{not json").unwrap();
        assert!(read(&path).is_empty());
    }

    #[test]
    fn stamps_are_saved_compressed_and_plain_ones_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STAMPS_FILE);
        let known: HashMap<String, FileRecord> = [record("a.ts", 1, "A")]
            .into_iter()
            .map(|r| (r.path.clone(), r))
            .collect();
        let touched = [Stamp::of(&record("a.ts", 5, "A"))];
        save(&path, &touched, &[], &known);
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            serde_json::from_slice::<Vec<Stamp>>(&bytes).is_err(),
            "not plain JSON"
        );
        assert_eq!(read(&path), touched);
        std::fs::write(&path, serde_json::to_vec(&touched).unwrap()).unwrap();
        assert_eq!(read(&path), touched);
    }
}
