//! One writer per index: an advisory lock on a file beside the tables.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::StoreError;

/// The lock file in a local index directory: one writer at a time.
pub(crate) const LOCK_FILE: &str = "write.lock";

/// The dirty mark of a local index: present from before a sync's first row write until
/// its last (see `Store::set_dirty`).
pub(crate) const DIRTY_FILE: &str = "sync.dirty";

/// Held for the duration of one sync; the OS releases it when the process dies, so a
/// killed writer never leaves the index locked.
pub(crate) struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Waits up to `timeout` for another writer to finish.
    pub(crate) async fn acquire(path: &Path, timeout: Duration) -> Result<Self, StoreError> {
        let io = |e: std::io::Error| StoreError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io)?;
        let start = Instant::now();
        let mut said = false;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    // Whoever waits next can say which process it waits for.
                    let mut file = file;
                    let _ = file
                        .set_len(0)
                        .and_then(|()| write!(file, "{}", std::process::id()));
                    return Ok(Self { _file: file });
                }
                Err(TryLockError::WouldBlock) if start.elapsed() < timeout => {
                    if !said && start.elapsed() >= Duration::from_secs(1) {
                        said = true;
                        let holder = std::fs::read_to_string(path).unwrap_or_default();
                        tracing::info!(
                            "waiting for another writer of this index (process {}) to finish: {}",
                            if holder.trim().is_empty() {
                                "unknown"
                            } else {
                                holder.trim()
                            },
                            path.display()
                        );
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(StoreError::Locked {
                        path: PathBuf::from(path),
                        waited_secs: start.elapsed().as_secs(),
                    });
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
    }
}
