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
