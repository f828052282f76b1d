//! `cargo xtask validate parser`: the blueprint's Parser Validation Summary.

use std::collections::BTreeMap;
use std::path::PathBuf;

use codectx_chunker::validate::{Rule, check_file};

pub fn parser(inputs: &[PathBuf]) -> anyhow::Result<()> {
    let files = crate::source_files(inputs)?;
    let (mut passed, mut failed) = (0, 0);
    let (mut symbols, mut chunks, mut lines, mut uncovered) = (0usize, 0usize, 0u64, 0u64);
    let mut max_tokens: (usize, String) = (0, String::new());
    let mut max_depth: (u32, String) = (0, String::new());
    let mut by_rule: BTreeMap<Rule, usize> = BTreeMap::new();
    let mut unreadable = Vec::new();
    let mut examples = Vec::new();
    for (path, shown) in &files {
        let source = match codectx_parser::read_source(path) {
            Ok(s) => s,
            Err(e) => {
                unreadable.push(e.to_string());
                continue;
            }
        };
        let report = check_file(shown, &source);
        symbols += report.symbol_count();
        chunks += report.chunks.len();
        lines += report.parsed.line_count as u64;
        if let Some((tokens, crumb)) = report.largest_chunk()
            && tokens > max_tokens.0
        {
            max_tokens = (tokens, crumb.to_string());
        }
        if report.max_depth() >= max_depth.0
            && (report.max_depth() > max_depth.0 || max_depth.1.is_empty())
        {
            max_depth = (report.max_depth(), shown.clone());
        }
        if report.violations.is_empty() {
            passed += 1;
        } else {
            failed += 1;
            for v in &report.violations {
                *by_rule.entry(v.rule).or_default() += 1;
                if v.rule == Rule::FullCoverage {
                    uncovered += 1;
                }
                if examples.len() < 20 {
                    examples.push(format!("  {shown}: {v}"));
                }
            }
        }
    }
    let coverage = if lines == 0 {
        100.0
    } else {
        100.0 * (lines - uncovered) as f64 / lines as f64
    };
    println!("Parser Validation Summary");
    println!("═══════════════════════════════════");
    println!("Fixtures: {passed} passed, {failed} failed");
    println!("Total symbols extracted: {symbols}");
    println!("Total chunks produced: {chunks}");
    println!("Total lines: {lines}");
    if uncovered == 0 {
        println!("Coverage: 100% (no uncovered lines)");
    } else {
        println!("Coverage: {coverage:.3}% ({uncovered} uncovered lines)");
    }
    println!("Max chunk token count: {} ({})", max_tokens.0, max_tokens.1);
    println!("Max depth observed: {} ({})", max_depth.0, max_depth.1);
    let ids_stable = !by_rule.contains_key(&Rule::DeterministicIds);
    println!(
        "Determinism: {} ({})",
        if ids_stable { "✓" } else { "✗" },
        if ids_stable {
            "all IDs stable across 2 runs"
        } else {
            "ids differ between runs"
        }
    );
    for rule in Rule::ALL {
        let n = by_rule.get(&rule).copied().unwrap_or(0);
        println!(
            "Rule {:>2} {:<26} {}",
            rule as u8,
            rule.title(),
            if n == 0 {
                "✓".to_string()
            } else {
                format!("✗ {n} violations")
            }
        );
    }
    for e in &unreadable {
        println!("Skipped: {e}");
    }
    if !examples.is_empty() {
        println!("\nFirst violations:");
        for e in &examples {
            println!("{e}");
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} files break the global rules");
    }
    Ok(())
}
