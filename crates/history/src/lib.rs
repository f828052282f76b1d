//! The repository's own history as retrieval evidence (`codectx-history`).
//!
//! Developers describe behaviour in the words they use when they change it ("respect readonly
//! during ref unwrapping"), and those words are often in a commit subject and nowhere in the
//! code. [`read_history`] walks the history of the git repository around an indexed root
//! with gix (no network, no `git` binary), and for every commit finds the symbols whose lines
//! its hunks touched, in that commit's version of each file, named by file and qualified name
//! ([`codectx_chunker::CodeChunk::qualified_name`]) so they meet the current symbols of the
//! same name. The store keeps the notes and indexes them as a full-text field of their own.
//!
//! ```no_run
//! use codectx_history::{read_history, HistoryOptions};
//!
//! let read = read_history(std::path::Path::new("."), None, &HistoryOptions::default())?;
//! for note in &read.notes {
//!     println!("{} {}: {}", note.file, note.qualified_name, note.text);
//! }
//! # Ok::<(), codectx_history::HistoryOff>(())
//! ```
//!
//! What a commit contributes, and what it does not:
//! - its subject and the first paragraph of its body (trailers and later paragraphs are
//!   boilerplate more often than description);
//! - to the innermost symbol around each changed line of a JS/TS file, as the commit left the
//!   file (a line removed between two lines of one symbol counts for that symbol);
//! - nothing from a merge commit (its changes were described by the commits it merges) or from
//!   a commit touching more than [`HistoryOptions::max_files_per_commit`] files (a sweeping
//!   reformat or dependency bump describes no symbol);
//! - renames reported by git's similarity detection are followed: notes of older commits
//!   land on the file's current path.
//!
//! Diffing commits and parsing past file versions are a read's time. What each commit changed
//! and what each file change touched are kept by content ([`HistoryMemo`], in the
//! repository's common git directory by default), so a second worktree, a revision or a
//! full re-read repeats neither for what an earlier read saw.
//!
//! [`files_at`] reads what any revision (branch, tag, commit) holds: the selected files under
//! the root with their blob ids and bytes, from git objects, without a checkout.

mod attribute;
mod memo;
mod tree;
mod walk;

pub use memo::{HistoryMemo, MEMO_DIR, MEMO_VERSION};
pub use tree::{
    Revision, RevisionError, RevisionFile, WorktreePlace, common_dir, exclude_dir, files_at,
    files_between, head_log, resolve_commit, worktree_place,
};
pub use walk::{Repository, probe, read_history};

/// How much history is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryOptions {
    /// Newest commits read at most; `0` turns history off.
    pub max_commits: usize,
    /// Commits older than this many days (before the newest one read) are not read.
    pub max_age_days: u32,
    /// A commit changing more files than this contributes nothing.
    pub max_files_per_commit: usize,
    /// Which files' symbols get notes: the index's own selection, so that no commit's
    /// `dist/` bundle or declaration file is parsed for nothing.
    pub files: codectx_files::FileSelection,
    /// Read a revision's history instead of the work tree's: for an index of a revision's
    /// files written elsewhere (`files_at`), the notes of that commit's own ancestry.
    pub at: Option<HistoryAt>,
    /// Where what each commit changed and each file change touched is kept, so that no
    /// later read (a new worktree, a revision, a full re-read) diffs or parses them again.
    pub memo: HistoryMemo,
}

/// The revision a history is read from ([`HistoryOptions::at`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryAt {
    /// The root inside the work tree whose files the revision's files are, as given to
    /// [`files_at`]: where the repository is found, and which of its paths are the index's.
    pub root: std::path::PathBuf,
    /// The commit (hex) whose ancestry is read, in place of `HEAD`.
    pub commit: String,
}

impl Default for HistoryOptions {
    /// The last 5,000 commits or 3 years, whichever is fewer; sweeps over 50 files skipped.
    fn default() -> Self {
        HistoryOptions {
            max_commits: 5_000,
            max_age_days: 3 * 365,
            max_files_per_commit: 50,
            files: codectx_files::FileSelection::default(),
            at: None,
            memo: HistoryMemo::default(),
        }
    }
}

/// One commit's description attached to one symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolNote {
    /// The file's current path, relative to the indexed root, `/`-separated.
    pub file: String,
    /// `Parent > name`, as [`codectx_chunker::CodeChunk::qualified_name`] spells it.
    pub qualified_name: String,
    /// The commit's full hex id.
    pub commit: String,
    /// Commit time, seconds since the Unix epoch.
    pub time: i64,
    /// The subject, then the first paragraph of the body on the next line when there is one.
    pub text: String,
}

/// What one [`read_history`] call found.
#[derive(Debug, Clone, Default)]
pub struct HistoryRead {
    /// The commit the history was read from (`HEAD`); pass it as `since` next time.
    pub head: String,
    /// The notes are the whole history's, not an addition to an earlier read: `since` was
    /// absent, no longer an ancestor of `HEAD` (a rebase or force-push rewrote history), or
    /// a new commit renamed a file (older notes must move to the new path). The caller
    /// replaces what it kept.
    pub full: bool,
    /// Commits walked (new ones only when incremental).
    pub commits_read: usize,
    /// Of those, merges and sweeps that contributed nothing.
    pub commits_skipped: usize,
    pub notes: Vec<SymbolNote>,
}

/// Why history is off for a root; the index is built exactly as without it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryOff {
    #[error("history is turned off (max_commits = 0)")]
    Disabled,
    #[error("the root is not inside a git repository")]
    NotARepository,
    #[error("the repository is a shallow clone, so its history is incomplete")]
    Shallow,
    #[error("the repository has no commits yet")]
    NoCommits,
    #[error("the repository has no work tree (a bare repository)")]
    Bare,
    #[error("the repository could not be read: {0}")]
    Unreadable(String),
}

/// A commit message as a note: the subject, and the first paragraph of the body, each
/// with its whitespace collapsed.
pub fn note_text(message: &str) -> String {
    let mut paragraphs = message
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty());
    let subject = paragraphs.next().unwrap_or_default();
    match paragraphs.next() {
        // A body made of trailers (`Signed-off-by: …`, `Co-authored-by: …`) says nothing
        // about the change.
        Some(body) if !is_trailer(&body) => format!("{subject}\n{body}"),
        _ => subject,
    }
}

fn is_trailer(paragraph: &str) -> bool {
    paragraph.split_once(": ").is_some_and(|(key, _)| {
        !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_text_keeps_the_subject_and_first_paragraph() {
        assert_eq!(
            note_text(
                "fix(router): respect trailing slash\n\nThe matcher dropped it\nwhen strict.\n\nMore text."
            ),
            "fix(router): respect trailing slash\nThe matcher dropped it when strict."
        );
        assert_eq!(
            note_text("feat: add cookie helper\n\nSigned-off-by: A <a@b.c>"),
            "feat: add cookie helper"
        );
        assert_eq!(note_text("  subject only \n"), "subject only");
    }
}
