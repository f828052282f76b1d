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

/// Runs `read`; when upkeep has removed the version it read from
/// ([`StoreError::Superseded`]: another handle wrote and compacted), `refresh`es the handle
/// to the latest version and reads again, at most `retries` times. Readers never wait on
/// writers, so a removed version is read past, not locked against.
pub(crate) async fn read_past_upkeep<T, Read, Refresh>(
    retries: usize,
    refresh: impl Fn() -> Refresh,
    read: impl Fn() -> Read,
) -> Result<T, StoreError>
where
    Read: std::future::Future<Output = Result<T, StoreError>>,
    Refresh: std::future::Future<Output = Result<(), StoreError>>,
{
    let mut left = retries;
    loop {
        match read().await {
            Err(StoreError::Superseded { .. }) if left > 0 => {
                left -= 1;
                refresh().await?;
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_removed_version_is_read_past_as_often_as_allowed() {
        let superseded = || StoreError::Superseded {
            uri: "mem://".into(),
            action: "reading",
        };
        // Two reads find their version removed; the third succeeds.
        let run = |retries| {
            let (reads, refreshes) = (Cell::new(0), Cell::new(0));
            let result = futures::executor::block_on(read_past_upkeep(
                retries,
                || async {
                    refreshes.set(refreshes.get() + 1);
                    Ok(())
                },
                || async {
                    reads.set(reads.get() + 1);
                    if reads.get() <= 2 {
                        Err(superseded())
                    } else {
                        Ok(reads.get())
                    }
                },
            ));
            (result, refreshes.get())
        };
        let (read, refreshes) = run(2);
        assert_eq!(read.unwrap(), 3);
        assert_eq!(refreshes, 2);
        let (read, refreshes) = run(1);
        assert!(matches!(read, Err(StoreError::Superseded { .. })));
        assert_eq!(refreshes, 1);
    }
}
