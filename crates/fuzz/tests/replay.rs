//! Every checked-in corpus input and every crash reproducer of every fuzz target, replayed
//! through the target's checks (`crates/fuzz/targets/{corpus,artifacts}/<target>/`).

use std::path::Path;

#[test]
fn corpus_and_reproducers_replay() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets");
    for target in codectx_fuzz::TARGETS {
        let mut replayed = 0;
        for kind in ["corpus", "artifacts"] {
            let Ok(entries) = std::fs::read_dir(base.join(kind).join(target)) else {
                continue;
            };
            let mut paths: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
            paths.sort();
            for path in paths {
                let data = std::fs::read(&path).unwrap();
                let outcome = std::panic::catch_unwind(|| codectx_fuzz::run(target, &data));
                assert!(
                    matches!(outcome, Ok(true)),
                    "{target}: {} fails (its panic is printed above)",
                    path.display(),
                );
                replayed += 1;
            }
        }
        assert!(replayed > 0, "{target} has no corpus");
    }
}
