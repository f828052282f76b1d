//! The MCP front: `codebase_search` and the navigation tools over MCP, and the same engine on
//! the command line. The `mcp-server` binary (`main.rs`) only parses arguments and calls
//! [`cli`].
//!
//! As a library it serves MCP over any rmcp transport, not only stdin/stdout: start a
//! [`Service`] for a repository and serve a [`CodeContextServer`] over it (the fuzz target
//! for malformed requests does so over an in-memory pipe).
//!
//! - [`config`]: the TOML configuration and the providers it builds;
//! - [`service`]: the engine opened in the background, vectors and history filled in the
//!   background, the index state every answer reports;
//! - [`server`]: the MCP tools;
//! - [`watch`]: how a server learns that files changed without walking the tree;
//! - [`cli`]: the subcommands;
//! - [`setup`]: `mcp-server setup <agent>`.

pub mod cli;
pub mod config;
pub mod server;
pub mod service;
pub mod setup;
pub mod watch;

pub use config::Config;
pub use server::{CodeContextServer, serve};
pub use service::Service;

/// Returns to the system the memory that mimalloc (the binary's allocator) keeps freed, when
/// a sync has written its chunk rows. The sync's parse threads allocated those chunks and
/// have ended; the writer frees them, and their pages stay with the ended threads' heaps
/// until collected. Collected here, babel's cold index peaked at 440–461 MiB instead of
/// 487–514 (its full-text builds come after). A program whose global allocator is not
/// mimalloc only has mimalloc's own, unused heaps collected.
fn release_freed_memory() {
    let started = std::time::Instant::now();
    // SAFETY: `mi_collect` has no preconditions; it may run on any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
    tracing::debug!(elapsed = ?started.elapsed(), "freed memory returned");
}
