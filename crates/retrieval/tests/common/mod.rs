//! Shared by the retrieval tests.

use std::sync::OnceLock;

use codectx_retrieval::Project;

/// `fixtures/retrieval/auth`, parsed once per test binary.
pub fn auth_project() -> &'static Project {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    PROJECT.get_or_init(|| {
        let root = codectx_corpus::fixture("retrieval/auth");
        Project::open(&root).unwrap()
    })
}
