//! The blueprint's parse gate on real code: the smart snapshot of every body-bearing symbol
//! of rxjs@7.8.2's `src/` (fetched once with `npm pack`, see `codectx-corpus`) parses with
//! oxc without errors, shows its target in full, and is built from the file's own lines.

use codectx_corpus::{needs_network, relative, source_files, try_npm_package};
use codectx_snapshot::smart_snapshot;

#[test]
fn network_every_rxjs_body_bearing_symbol_snapshot_parses() {
    let Some(root) = needs_network("rxjs from npm", try_npm_package("rxjs", "7.8.2")) else {
        return;
    };
    let files = source_files(&root.join("src"));
    assert!(files.len() >= 240, "rxjs src/ holds {} files", files.len());
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let rel = relative(&root, file);
        let source = std::fs::read_to_string(file).unwrap();
        let file = codectx_snapshot::SnapshotFile::parse(&rel, &source);
        let source_lines: Vec<&str> = source.lines().collect();
        for sym in file.parsed().walk().filter(|s| s.is_body_bearing()) {
            checked += 1;
            let snapshot = match smart_snapshot(&file, &source, &[sym.range]) {
                Ok(s) => s,
                Err(e) => {
                    failures.push(format!("{rel} > {}: {e}", sym.name));
                    continue;
                }
            };
            let allocator = oxc_allocator::Allocator::default();
            let ret = oxc_parser::Parser::new(
                &allocator,
                &snapshot.text,
                codectx_parser::source_type_for(&rel),
            )
            .parse();
            if let Some(first) = ret.diagnostics.first() {
                failures.push(format!(
                    "{rel} > {} L{}: {first}",
                    sym.name, sym.range.start
                ));
            }
            let shown: Vec<&str> = snapshot
                .text
                .lines()
                .filter(|l| !l.is_empty())
                .skip(1)
                .collect();
            let own: Vec<&str> = snapshot
                .lines
                .iter()
                .map(|&l| source_lines[l as usize - 1].trim_end_matches('\r'))
                .filter(|l| !l.is_empty())
                .collect();
            if shown != own {
                failures.push(format!(
                    "{rel} > {}: text is not the file's lines",
                    sym.name
                ));
            }
            if !(sym.range.start..=sym.range.end).all(|l| snapshot.lines.contains(&l)) {
                failures.push(format!("{rel} > {}: target not in full", sym.name));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} snapshots fail:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
