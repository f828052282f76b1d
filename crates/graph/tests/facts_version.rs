//! The store caches each file's facts and re-extracts them only when `FACTS_VERSION`
//! changes. So when the extractor starts finding different facts, the version must move:
//! this test records the version beside a digest of every fixture file's facts and fails
//! when the digest moves without the version.

use std::path::Path;

use codectx_graph::facts::FACTS_VERSION;

/// `<version> <digest>` as last recorded.
const RECORD: &str = "tests/facts_version.txt";

fn fixture_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            fixture_files(&path, out);
        } else if codectx_parser::Language::from_path(&path).is_some() {
            out.push(path);
        }
    }
}

#[test]
fn facts_do_not_change_without_a_new_facts_version() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixtures = codectx_corpus::fixture("graph");
    let mut files = Vec::new();
    fixture_files(&fixtures, &mut files);
    assert!(files.len() > 20, "{} fixture files", files.len());
    // What an index stores: the encoded facts.
    let mut digest = Vec::new();
    for path in &files {
        let relative = path
            .strip_prefix(&fixtures)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let source = std::fs::read_to_string(path).unwrap();
        let facts = codectx_graph::extract_facts(&relative, &source);
        digest.extend(facts.encode());
    }
    let digest = digest_hex(&digest);
    let now = format!("{FACTS_VERSION} {digest}");
    let recorded = std::fs::read_to_string(manifest.join(RECORD)).unwrap_or_default();
    let recorded = recorded.trim();
    if recorded == now {
        return;
    }
    let recorded_version = recorded.split(' ').next().unwrap_or("");
    assert_ne!(
        recorded_version,
        FACTS_VERSION.to_string(),
        "the facts of the graph fixtures changed but FACTS_VERSION is still {FACTS_VERSION}: \
         indexes would keep stale cached facts. Bump FACTS_VERSION, then write `{now}` \
         into crates/graph/{RECORD}"
    );
    panic!(
        "FACTS_VERSION moved: record the new facts by writing `{now}` into crates/graph/{RECORD}"
    );
}

/// FNV-1a, 64 bits: a stable digest with no dependency (not a security boundary).
fn digest_hex(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}
