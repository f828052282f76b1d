//! What each file change touched, kept by content for every later read of the repository's
//! history: a new worktree, a revision, or a full re-read after a rename or a rewritten
//! history parses no past file version that an earlier read parsed.
//!
//! A change is named by its path and the blob ids of its two versions, so an entry holds
//! wherever and whenever it is read. The memo is one file of JSON lines, appended under an
//! exclusive lock; readers take no lock and skip a line a killed writer left unfinished.
//! It is advisory: a memo that cannot be read or written costs parses, never a note.

use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use gix::ObjectId;
use serde::{Deserialize, Serialize};

/// Where the memo is kept ([`HistoryOptions::memo`](crate::HistoryOptions)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HistoryMemo {
    /// `<common git dir>/codectx/history`: one memo for all worktrees, branches and
    /// revisions of the repository.
    #[default]
    Repository,
    /// This directory (several repositories may share it: an entry names content).
    At(PathBuf),
    /// Every read parses every change it attributes.
    Off,
}

/// The memo's directory inside the repository's common git directory.
pub const MEMO_DIR: [&str; 2] = ["codectx", "history"];

/// The version of what an entry records: the innermost symbols' qualified names, from the
/// parser's symbols, the chunker's names and [`touched_symbols`](crate::attribute)'s rules.
/// Another version starts another memo file. `tests/touches_version.rs` fails when the
/// names change without it.
pub const TOUCHES_VERSION: u32 = 1;

/// A memo larger than this starts over: a bound on disk, far above a large repository's
/// 5,000 commits.
const MAX_BYTES: u64 = 256 << 20;

/// One change: a file's path in the commit, its version before (none: added) and after.
type Key = (String, Option<ObjectId>, ObjectId);

#[derive(Serialize, Deserialize)]
struct Entry {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    before: Option<String>,
    after: String,
    names: Vec<String>,
}

/// The memo as one history read uses it: loaded on first use, added to as the read parses,
/// saved once at its end.
pub(crate) struct TouchMemo {
    file: Option<PathBuf>,
    known: Option<HashMap<Key, Vec<String>>>,
    added: Vec<Entry>,
    /// Changes answered from the memo.
    pub(crate) hits: usize,
    /// Changes parsed.
    pub(crate) parsed: usize,
}

impl TouchMemo {
    /// The memo of the repository whose common git directory is `common_dir`. A read of a
    /// few new commits passes `load: false`: it adds what it parses without reading the
    /// whole memo first.
    pub(crate) fn new(memo: &HistoryMemo, common_dir: &Path, load: bool) -> TouchMemo {
        let dir = match memo {
            HistoryMemo::Repository => Some(
                MEMO_DIR
                    .iter()
                    .fold(common_dir.to_path_buf(), |d, p| d.join(p)),
            ),
            HistoryMemo::At(dir) => Some(dir.clone()),
            HistoryMemo::Off => None,
        };
        TouchMemo {
            file: dir.map(|d| d.join(format!("touched-v{TOUCHES_VERSION}.jsonl"))),
            known: (!load).then(HashMap::new),
            added: Vec::new(),
            hits: 0,
            parsed: 0,
        }
    }

    /// What the change touched, from the memo or from `compute` (then remembered).
    pub(crate) fn touched(
        &mut self,
        path: &str,
        before: Option<ObjectId>,
        after: ObjectId,
        compute: impl FnOnce() -> Result<BTreeSet<String>, crate::HistoryOff>,
    ) -> Result<Vec<String>, crate::HistoryOff> {
        if self.file.is_none() {
            self.parsed += 1;
            return Ok(compute()?.into_iter().collect());
        }
        let key = (path.to_owned(), before, after);
        let known = self.known.get_or_insert_with(|| load(self.file.as_deref()));
        if let Some(names) = known.get(&key) {
            self.hits += 1;
            return Ok(names.clone());
        }
        self.parsed += 1;
        let names: Vec<String> = compute()?.into_iter().collect();
        self.added.push(Entry {
            path: key.0.clone(),
            before: before.map(|id| id.to_string()),
            after: after.to_string(),
            names: names.clone(),
        });
        known.insert(key, names.clone());
        Ok(names)
    }

    /// Appends what this read parsed. A failure is logged and forgotten.
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

/// Every whole, well-formed line of the memo at `file` (none when it cannot be read).
fn load(file: Option<&Path>) -> HashMap<Key, Vec<String>> {
    let mut known = HashMap::new();
    let Some(Ok(opened)) = file.map(File::open) else {
        return known;
    };
    for line in BufReader::new(opened).split(b'\n') {
        let Ok(line) = line else { break };
        // A killed writer's last line is cut short: it does not parse.
        let Ok(entry) = serde_json::from_slice::<Entry>(&line) else {
            continue;
        };
        let before = match entry
            .before
            .as_deref()
            .map(|b| ObjectId::from_hex(b.as_bytes()))
        {
            None => None,
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => continue,
        };
        let Ok(after) = ObjectId::from_hex(entry.after.as_bytes()) else {
            continue;
        };
        known.insert((entry.path, before, after), entry.names);
    }
    known
}

/// Appends `entries` as whole lines under an exclusive lock, so that writers in several
/// processes never interleave.
fn append(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    file.lock()?;
    let len = file.metadata()?.len();
    let mut text = Vec::new();
    if len > MAX_BYTES {
        file.set_len(0)?;
    } else if len > 0 {
        // A writer killed mid-line left no newline: end its line, so ours parse.
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            text.push(b'\n');
        }
    }
    for entry in entries {
        serde_json::to_writer(&mut text, entry)?;
        text.push(b'\n');
    }
    file.write_all(&text)?;
    file.unlock()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_hex(format!("{n:040x}").as_bytes()).unwrap()
    }

    #[test]
    fn a_change_is_parsed_once_across_reads_and_a_cut_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let at = HistoryMemo::At(dir.path().to_path_buf());
        let names = || Ok(BTreeSet::from(["Router > match".to_string()]));

        let mut first = TouchMemo::new(&at, dir.path(), true);
        assert_eq!(
            first.touched("src/a.ts", None, id(1), names).unwrap(),
            ["Router > match"]
        );
        first.save();
        // A writer killed mid-line.
        let file = dir.path().join(format!("touched-v{TOUCHES_VERSION}.jsonl"));
        let mut cut = OpenOptions::new().append(true).open(&file).unwrap();
        cut.write_all(br#"{"path":"src/b.ts","after":"00"#).unwrap();

        let mut second = TouchMemo::new(&at, dir.path(), true);
        let unused = || -> Result<BTreeSet<String>, crate::HistoryOff> { panic!("parsed again") };
        assert_eq!(
            second.touched("src/a.ts", None, id(1), unused).unwrap(),
            ["Router > match"]
        );
        // Another change of the same file is its own entry, and is written after the cut.
        let other = || Ok(BTreeSet::from(["parse".to_string()]));
        assert_eq!(
            second
                .touched("src/a.ts", Some(id(1)), id(2), other)
                .unwrap(),
            ["parse"]
        );
        second.save();

        let mut third = TouchMemo::new(&at, dir.path(), true);
        assert_eq!(
            third
                .touched("src/a.ts", Some(id(1)), id(2), unused)
                .unwrap(),
            ["parse"]
        );
        assert_eq!(load(Some(&file)).len(), 2);
    }

    #[test]
    fn an_unwritable_memo_costs_parses_only() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "not a directory").unwrap();
        let at = HistoryMemo::At(blocked.join("memo"));
        let mut parses = 0;
        for _ in 0..2 {
            let mut memo = TouchMemo::new(&at, dir.path(), true);
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
