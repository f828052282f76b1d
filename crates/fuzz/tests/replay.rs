//! Every seed input (built from `fixtures/`) and every crash reproducer
//! (`crates/fuzz/targets/artifacts/<target>/`) of every fuzz target, replayed through the
//! target's checks.

use std::path::{Path, PathBuf};

fn replay(target: &str, what: &str, data: &[u8]) {
    let outcome = std::panic::catch_unwind(|| codectx_fuzz::run(target, data));
    assert!(
        matches!(outcome, Ok(true)),
        "{target}: {what} fails (its panic is printed above)"
    );
}

#[test]
fn seeds_and_reproducers_replay() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seeds = codectx_fuzz::seeds(&codectx_corpus::fixture("")).unwrap();
    for target in codectx_fuzz::TARGETS {
        let mut replayed = 0;
        for seed in seeds.iter().filter(|s| s.target == target) {
            replay(target, &format!("seed {}", seed.name), &seed.data);
            replayed += 1;
        }
        assert!(replayed > 0, "{target} has no seeds");
        let artifacts = crate_dir.join("targets/artifacts").join(target);
        let mut reproducers: Vec<PathBuf> = std::fs::read_dir(&artifacts)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        reproducers.sort();
        for path in reproducers {
            replay(
                target,
                &path.display().to_string(),
                &std::fs::read(&path).unwrap(),
            );
        }
    }
}
