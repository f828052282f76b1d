//! Shared by the retrieval tests.

use std::path::Path;
use std::sync::OnceLock;

use codectx_retrieval::Project;

/// `fixtures/retrieval/auth`, parsed once per test binary.
pub fn auth_project() -> &'static Project {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let root = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/retrieval/auth"
        ));
        Project::open(root).unwrap()
    })
}
