//! A skeleton request reuses the project's parse of the file: it never parses it again.
//! (Its own test binary: the parse counter is process-wide.)

use codectx_retrieval::{Project, file_skeleton};
use codectx_snapshot::SkeletonCache;

#[test]
fn a_skeleton_reuses_the_projects_parse() {
    let root = codectx_corpus::fixture("retrieval/auth");
    let project = Project::open(&root).unwrap();
    let path = "src/auth/tokenService.ts";
    // The project's own parse of the file, made when first asked for.
    assert!(project.file(path).unwrap().parsed().is_some());
    let cache = SkeletonCache::default();
    let before = codectx_parser::parse_count();
    let skeleton = file_skeleton(&project, &cache, path).unwrap();
    assert_eq!(codectx_parser::parse_count() - before, 0);
    assert!(skeleton.text.contains("class TokenService"));
    assert_eq!(cache.stats().parses, 1);
}
