use std::path::PathBuf;

use crate::EmbedError;

/// Errors of the store, each naming the index or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error(
        "{uri} is not a codectx index ({reason}); remove it or open the store with rebuild to replace it"
    )]
    Foreign { uri: String, reason: String },
    #[error("the index at {uri} is damaged ({reason}); open the store with rebuild to recreate it")]
    Corrupt { uri: String, reason: String },
    #[error(
        "another process is writing the index at {path} (lock held for {waited_secs} s); try again when it finishes"
    )]
    Locked { path: PathBuf, waited_secs: u64 },
    #[error("cannot write {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("LanceDB failed on {uri} while {action}: {message}")]
    Lance {
        uri: String,
        action: &'static str,
        message: String,
    },
    /// This handle reads a version of the index whose files upkeep has removed since:
    /// another handle wrote newer versions. Syncing (or reopening) reads the latest one.
    #[error(
        "the index at {uri} changed under this reader while {action}; sync or reopen to read its current version"
    )]
    Superseded { uri: String, action: &'static str },
    #[error("invalid search filter: {0}")]
    Filter(String),
    #[error("embedding failed: {0}")]
    Embed(#[from] EmbedError),
    #[error(
        "the embedder produced {got} vectors of dimension {dimension} for {expected} texts; the index expects dimension {expected_dimension}"
    )]
    EmbedShape {
        expected: usize,
        got: usize,
        dimension: usize,
        expected_dimension: usize,
    },
}
