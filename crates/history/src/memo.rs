//! What each commit changed and what each file change touched, kept for every later read of
//! the repository's history: a new worktree, a revision, or a full re-read after a branch
//! switch, a rename or a rewritten history diffs no commit and parses no past file version
//! that an earlier read did.
//!
//! Both kinds of entry name content: a commit by its id, a file change by its path and the
//! blob ids of its two versions. So an entry holds wherever and whenever it is read. The
//! memo is one file of records, each a read's entries as JSON lines in a zstd frame after
//! its length (hex object ids and JSON compress to a fifth: vite's memo 5.5 → 1.1 MB).
//! Records are appended under an exclusive lock, and the writer first cuts off a record a
//! killed writer left unfinished; readers take no lock and stop at a record that does not
//! fit. It is advisory: a memo that cannot be read or written costs diffs and parses, never
//! a note.

use std::collections::{BTreeSet, HashMap};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use crate::HistoryOff;

/// Where the memo is kept ([`HistoryOptions::memo`](crate::HistoryOptions)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HistoryMemo {
    /// `<common git dir>/codectx/history`: one memo for all worktrees, branches and
    /// revisions of the repository.
    #[default]
    Repository,
    /// This directory (several repositories may share it: an entry names content).
    At(PathBuf),
    /// Every read diffs every commit and parses every change it attributes.
    Off,
}

/// The memo's directory inside the repository's common git directory.
pub const MEMO_DIR: [&str; 2] = ["codectx", "history"];

/// The version of what the entries record: the innermost symbols' qualified names (the
/// parser's symbols, the chunker's names, `attribute.rs`'s rules), a commit's changes (gix's
/// rename detection) and its note ([`note_text`](crate::note_text)). Another version starts
/// another memo file. A test in `attribute.rs` fails when the names or notes change
/// without it. 2: a function assigned to `A.prototype.m` inside a wrapper is named `A.m`.
/// 3: a named class or function given to `module.exports` is named by its own name.
pub const MEMO_VERSION: u32 = 3;

/// A memo larger than this starts over: a bound on disk, far above a large repository's
/// 5,000 commits.
const MAX_BYTES: u64 = 64 << 20;

/// The memo's file in its directory; the uncompressed layout of the same version was
/// [`earlier_file`].
fn memo_file(dir: &Path) -> PathBuf {
    dir.join(format!("memo-v{MEMO_VERSION}.zst"))
}

/// Removed when the memo is written.
fn earlier_file(dir: &Path) -> PathBuf {
    dir.join(format!("memo-v{MEMO_VERSION}.jsonl"))
}

/// zstd's level for a record: a read's entries are written once, at its end.
const RECORD_COMPRESSION: i32 = 3;

/// A record's length prefix (little-endian `u32`).
const LENGTH_BYTES: u64 = 4;

/// One file change: its path in the commit, its version before (none: added) and after.
type ChangeKey = (String, Option<ObjectId>, ObjectId);

/// What a non-merge commit changed, as the walk needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CommitChanges {
    /// Blob entries changed, deletions included: a sweep changes many.
    pub(crate) blobs: usize,
    /// The commit's note ([`note_text`](crate::note_text) of its message).
    pub(crate) text: String,
    /// Every change but deletions and directories' changes (renames kept), in the diff's
    /// order.
    pub(crate) changes: Vec<FileChange>,
}

/// One change of a commit, deletions aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileChange {
    /// The path in the commit.
    pub(crate) path: String,
    /// The path before, when git saw a rename (not a copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) renamed_from: Option<String>,
    /// The version before (none: added).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_opt")]
    pub(crate) before: Option<ObjectId>,
    #[serde(with = "hex")]
    pub(crate) after: ObjectId,
    /// The entry is a file (not a link or a submodule): only files are attributed.
    pub(crate) blob: bool,
}

/// One line of the memo file.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Line {
    Touched {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "hex_opt")]
        before: Option<ObjectId>,
        #[serde(with = "hex")]
        after: ObjectId,
        names: Vec<String>,
    },
    Commit {
        #[serde(with = "hex")]
        commit: ObjectId,
        #[serde(flatten)]
        changes: CommitChanges,
    },
}

/// The memo as one history read uses it: loaded on first use, added to as the read diffs
/// and parses, saved once at its end.
pub(crate) struct Memo {
    file: Option<PathBuf>,
    known: Option<Known>,
    added: Vec<Line>,
    /// Commits and file changes answered from the memo.
    pub(crate) hits: usize,
    /// Commits diffed.
    pub(crate) diffed: usize,
    /// File changes parsed.
    pub(crate) parsed: usize,
}

#[derive(Default)]
struct Known {
    touched: HashMap<ChangeKey, Vec<String>>,
    commits: HashMap<ObjectId, CommitChanges>,
}

impl Memo {
    /// The memo of the repository whose common git directory is `common_dir`. A read of a
    /// few new commits passes `load: false`: it adds what it computes without reading the
    /// whole memo first.
    pub(crate) fn new(memo: &HistoryMemo, common_dir: &Path, load: bool) -> Memo {
        let dir = match memo {
            HistoryMemo::Repository => Some(
                MEMO_DIR
                    .iter()
                    .fold(common_dir.to_path_buf(), |d, p| d.join(p)),
            ),
            HistoryMemo::At(dir) => Some(dir.clone()),
            HistoryMemo::Off => None,
        };
        Memo {
            file: dir.as_deref().map(memo_file),
            known: (!load).then(Known::default),
            added: Vec::new(),
            hits: 0,
            diffed: 0,
            parsed: 0,
        }
    }

    fn known(&mut self) -> Option<&mut Known> {
        let file = self.file.as_deref()?;
        Some(self.known.get_or_insert_with(|| load(file)))
    }

    /// What commit `id` changed, from the memo or from `diff` (then remembered).
    pub(crate) fn commit(
        &mut self,
        id: ObjectId,
        diff: impl FnOnce() -> Result<CommitChanges, HistoryOff>,
    ) -> Result<CommitChanges, HistoryOff> {
        if let Some(changes) = self.known().and_then(|k| k.commits.get(&id)).cloned() {
            self.hits += 1;
            return Ok(changes);
        }
        self.diffed += 1;
        let changes = diff()?;
        if let Some(known) = self.known() {
            known.commits.insert(id, changes.clone());
            self.added.push(Line::Commit {
                commit: id,
                changes: changes.clone(),
            });
        }
        Ok(changes)
    }

    /// What the change touched, from the memo or from `parse` (then remembered).
    pub(crate) fn touched(
        &mut self,
        path: &str,
        before: Option<ObjectId>,
        after: ObjectId,
        parse: impl FnOnce() -> Result<BTreeSet<String>, HistoryOff>,
    ) -> Result<Vec<String>, HistoryOff> {
        let key = (path.to_owned(), before, after);
        if let Some(names) = self.known().and_then(|k| k.touched.get(&key)).cloned() {
            self.hits += 1;
            return Ok(names);
        }
        self.parsed += 1;
        let names: Vec<String> = parse()?.into_iter().collect();
        if let Some(known) = self.known() {
            known.touched.insert(key, names.clone());
            self.added.push(Line::Touched {
                path: path.to_owned(),
                before,
                after,
                names: names.clone(),
            });
        }
        Ok(names)
    }

    /// Appends what this read computed. A failure is logged and forgotten.
    pub(crate) fn save(&mut self) {
        let (Some(file), false) = (&self.file, self.added.is_empty()) else {
            return;
        };
        if let Err(e) = append(file, &self.added) {
            tracing::debug!("the history memo {} was not written: {e}", file.display());
        }
        self.added.clear();
    }
}

/// Every entry of the memo at `file` (none when it cannot be read): the records that fit
/// in the file, less any that does not decode.
fn load(file: &Path) -> Known {
    let started = std::time::Instant::now();
    let mut known = Known::default();
    let Ok(bytes) = std::fs::read(file) else {
        return known;
    };
    for record in records(&bytes) {
        let Ok(lines) = zstd::stream::decode_all(record) else {
            continue;
        };
        for line in lines.split(|b| *b == b'\n') {
            match serde_json::from_slice::<Line>(line) {
                Ok(Line::Touched {
                    path,
                    before,
                    after,
                    names,
                }) => {
                    known.touched.insert((path, before, after), names);
                }
                Ok(Line::Commit { commit, changes }) => {
                    known.commits.insert(commit, changes);
                }
                Err(_) => {}
            }
        }
    }
    tracing::debug!(
        commits = known.commits.len(),
        changes = known.touched.len(),
        "history memo loaded: {:?}",
        started.elapsed()
    );
    known
}

/// The whole records of a memo's bytes, in order: a length, then that many bytes. The
/// first that does not fit (a killed writer's) ends them.
fn records(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        let (length, after) = rest.split_first_chunk::<{ LENGTH_BYTES as usize }>()?;
        let record = after.get(..u32::from_le_bytes(*length) as usize)?;
        rest = &after[record.len()..];
        Some(record)
    })
}

/// Appends `lines` as one record under an exclusive lock, so that writers in several
/// processes never interleave, after cutting off a record a killed writer left unfinished.
fn append(path: &Path, lines: &[Line]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .write(true)
        .truncate(false)
        .open(path)?;
    file.lock()?;
    let _ = std::fs::remove_file(earlier_file(dir));
    let len = file.metadata()?.len();
    let end = if len > MAX_BYTES {
        0
    } else {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        whole_len(&bytes)
    };
    if end < len {
        file.set_len(end)?;
    }
    let mut text = Vec::new();
    for line in lines {
        serde_json::to_writer(&mut text, line)?;
        text.push(b'\n');
    }
    let frame = zstd::bulk::compress(&text, RECORD_COMPRESSION)?;
    let length = u32::try_from(frame.len()).map_err(std::io::Error::other)?;
    let mut record = Vec::with_capacity(LENGTH_BYTES as usize + frame.len());
    record.extend_from_slice(&length.to_le_bytes());
    record.extend_from_slice(&frame);
    file.seek(SeekFrom::Start(end))?;
    file.write_all(&record)?;
    file.unlock()
}

/// How many of `bytes`' first bytes its whole records take.
fn whole_len(bytes: &[u8]) -> u64 {
    records(bytes)
        .map(|record| LENGTH_BYTES + record.len() as u64)
        .sum()
}

/// An object id as hex in JSON.
mod hex {
    use gix::ObjectId;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(id: &ObjectId, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(id)
    }

    pub(super) fn deserialize<'d, D: Deserializer<'d>>(d: D) -> Result<ObjectId, D::Error> {
        let text = String::deserialize(d)?;
        ObjectId::from_hex(text.as_bytes()).map_err(D::Error::custom)
    }
}

/// An optional object id as hex in JSON.
mod hex_opt {
    use gix::ObjectId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(id: &Option<ObjectId>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => super::hex::serialize(id, s),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'d, D: Deserializer<'d>>(d: D) -> Result<Option<ObjectId>, D::Error> {
        #[derive(Deserialize)]
        struct Hex(#[serde(with = "super::hex")] ObjectId);
        Ok(Option::<Hex>::deserialize(d)?.map(|Hex(id)| id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_hex(format!("{n:040x}").as_bytes()).unwrap()
    }

    fn never<T>() -> Result<T, HistoryOff> {
        panic!("computed again")
    }

    #[test]
    fn entries_are_computed_once_across_reads_and_a_cut_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let at = HistoryMemo::At(dir.path().to_path_buf());
        let names = || Ok(BTreeSet::from(["Router > match".to_string()]));
        let changes = CommitChanges {
            blobs: 2,
            text: "fix: match\nThe body.".into(),
            changes: vec![FileChange {
                path: "src/b.ts".into(),
                renamed_from: Some("src/a.ts".into()),
                before: Some(id(1)),
                after: id(2),
                blob: true,
            }],
        };

        let mut first = Memo::new(&at, dir.path(), true);
        assert_eq!(
            first.touched("src/a.ts", None, id(1), names).unwrap(),
            ["Router > match"]
        );
        assert_eq!(
            first.commit(id(9), || Ok(changes.clone())).unwrap(),
            changes
        );
        first.save();
        // A writer killed mid-record: a length, and less than that.
        let file = memo_file(dir.path());
        let whole = std::fs::metadata(&file).unwrap().len();
        let mut cut = OpenOptions::new().append(true).open(&file).unwrap();
        cut.write_all(&[200, 0, 0, 0, 40, 181, 47]).unwrap();

        let mut second = Memo::new(&at, dir.path(), true);
        assert_eq!(
            second.touched("src/a.ts", None, id(1), never).unwrap(),
            ["Router > match"]
        );
        assert_eq!(second.commit(id(9), never).unwrap(), changes);
        // Another change of the same file is its own entry, and is written after the cut.
        let other = || Ok(BTreeSet::from(["parse".to_string()]));
        assert_eq!(
            second
                .touched("src/a.ts", Some(id(1)), id(2), other)
                .unwrap(),
            ["parse"]
        );
        second.save();
        assert_eq!((second.hits, second.parsed, second.diffed), (2, 1, 0));

        let mut third = Memo::new(&at, dir.path(), true);
        assert_eq!(
            third
                .touched("src/a.ts", Some(id(1)), id(2), never)
                .unwrap(),
            ["parse"]
        );
        let known = load(&file);
        assert_eq!((known.touched.len(), known.commits.len()), (2, 1));
        // The cut record was cut off before the second read's record went in.
        let records = records(&std::fs::read(&file).unwrap()).count();
        assert_eq!(records, 2);
        assert!(std::fs::metadata(&file).unwrap().len() > whole);
    }

    #[test]
    fn an_unwritable_memo_costs_parses_only() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "not a directory").unwrap();
        let at = HistoryMemo::At(blocked.join("memo"));
        let mut parses = 0;
        for _ in 0..2 {
            let mut memo = Memo::new(&at, dir.path(), true);
            let names = memo
                .touched("src/a.ts", None, id(1), || {
                    parses += 1;
                    Ok(BTreeSet::from(["parse".to_string()]))
                })
                .unwrap();
            assert_eq!(names, ["parse"]);
            memo.save();
        }
        assert_eq!(parses, 2);
    }
}
