//! Phase 4 of the pipeline (… → graph → store → retrieval → **snapshot** + connection graph
//! → mcp): the blueprint's *smart structural snapshots*, the source text an agent receives.
//!
//! A snapshot of one file shows its target symbols in full and, around them, only the
//! same-file content they reference — imports, constants, type aliases, class properties —
//! plus the class or namespace declaration wrapping a target member. Everything else is
//! omitted without a marker: the text is the file's own lines, in source order, so an agent
//! can copy any of it as an `oldString` for an edit. Identifiers are resolved with
//! oxc_semantic, so a shadowing local never pulls in the outer declaration. Several targets
//! of one file merge into one snapshot.
//!
//! The crate also builds [`FileSkeleton`]s (every body collapsed to its signature), cached
//! by content hash in a [`SkeletonCache`].
//!
//! ```
//! use codectx_parser::LineRange;
//! let source = "import jwt from 'jsonwebtoken';\nimport fs from 'fs';\n\nconst TTL = 60;\nconst UNUSED = 1;\n\nexport class Tokens {\n  private secret = 'k';\n  private other = 2;\n\n  sign(id: string) {\n    return jwt.sign({ id }, this.secret, { expiresIn: TTL });\n  }\n\n  read() {\n    return fs.readFileSync('x');\n  }\n}\n";
//! let file = codectx_snapshot::SnapshotFile::parse("src/tokens.ts", source);
//! let snapshot = codectx_snapshot::smart_snapshot(&file, source, &[LineRange { start: 11, end: 13 }]).unwrap();
//! assert_eq!(snapshot.text, "// src/tokens.ts\n\nimport jwt from 'jsonwebtoken';\n\nconst TTL = 60;\n\nexport class Tokens {\n  private secret = 'k';\n\n  sign(id: string) {\n    return jwt.sign({ id }, this.secret, { expiresIn: TTL });\n  }\n}\n");
//! ```

mod refs;
mod skeleton;
mod snapshot;

pub use skeleton::{CacheStats, FileSkeleton, SkeletonCache, file_skeleton, symbol_skeleton};
pub use snapshot::{SmartSnapshot, SnapshotFile, smart_snapshot};

/// Why a snapshot could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SnapshotError {
    /// No symbol of the file spans exactly the target lines (the index is older than the file).
    #[error("{path}: no symbol spans lines {start_line}-{end_line}")]
    NoSymbolAt {
        path: String,
        start_line: u32,
        end_line: u32,
    },
}
