//! Which symbols a change touched: the line diff of a file's two versions, mapped onto the
//! chunks of the newer version.

use std::collections::BTreeSet;

use gix::diff::blob::{Algorithm, Diff, InternedInput};

/// The qualified names of the innermost chunks around the lines `after` changed from
/// `before` (`before` empty: the file was added, so every line is new). A line removed
/// between two lines of one chunk counts for that chunk; a removal between two chunks is
/// nobody's.
pub(crate) fn touched_symbols(path: &str, before: &str, after: &str) -> BTreeSet<String> {
    let input = InternedInput::new(before, after);
    let diff = Diff::compute(Algorithm::Histogram, &input);
    // Lines of the new version, 1-based like chunk ranges: changed ones, and the pairs
    // around a removal.
    let mut changed: Vec<u32> = Vec::new();
    let mut removals: Vec<(u32, u32)> = Vec::new();
    for hunk in diff.hunks() {
        if hunk.after.is_empty() {
            // Removed before 0-based line `start`: between 1-based lines `start` and `start + 1`.
            removals.push((hunk.after.start, hunk.after.start + 1));
        } else {
            changed.extend(hunk.after.start + 1..=hunk.after.end);
        }
    }
    if changed.is_empty() && removals.is_empty() {
        return BTreeSet::new();
    }
    let parsed = codectx_parser::parse_source(path, after);
    let chunks = codectx_chunker::chunk_file(&parsed, after, path);
    let innermost = |line: u32| {
        chunks
            .iter()
            .filter(|c| c.start_line <= line && line <= c.end_line)
            .max_by_key(|c| c.depth)
    };
    let mut names = BTreeSet::new();
    for line in changed {
        if let Some(chunk) = innermost(line) {
            names.insert(chunk.qualified_name().to_owned());
        }
    }
    for (above, below) in removals {
        if let (Some(a), Some(b)) = (innermost(above), innermost(below))
            && a.id == b.id
        {
            names.insert(a.qualified_name().to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MEMO_VERSION;

    const BEFORE: &str = "\
export function parse(text: string) {
  return text.trim();
}

export class Router {
  add(path: string) {
    this.routes.push(path);
  }

  match(path: string) {
    return this.routes.includes(path);
  }
}
";

    #[test]
    fn a_changed_line_counts_for_its_innermost_symbol() {
        let after = BEFORE.replace(
            "this.routes.includes(path)",
            "this.routes.includes(path.toLowerCase())",
        );
        let names = touched_symbols("src/router.ts", BEFORE, &after);
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["Router > match"]);
    }

    #[test]
    fn a_removal_inside_a_symbol_counts_for_it_and_one_between_symbols_for_nobody() {
        let after = BEFORE.replace("    this.routes.push(path);\n", "");
        let names = touched_symbols("src/router.ts", BEFORE, &after);
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["Router > add"]);

        let with_gap = BEFORE.replace("}\n\nexport class", "}\n\n\nexport class");
        let names = touched_symbols("src/router.ts", &with_gap, BEFORE);
        assert!(names.is_empty(), "{names:?}");
    }

    /// The history memo keeps these names and commit notes across releases, so when they
    /// change (the parser's symbols, the chunker's names, the rules above, `note_text`),
    /// `MEMO_VERSION` must move: this test records the version beside a digest of what every
    /// graph fixture file touches, added and edited, and of a few notes, and fails when the
    /// digest moves without the version.
    #[test]
    fn memo_entries_do_not_change_without_a_new_memo_version() {
        const RECORD: &str = "src/memo_version.txt";
        let fixtures = codectx_corpus::fixture("graph");
        let mut files = Vec::new();
        let mut dirs = vec![fixtures.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if codectx_parser::Language::from_path(&path).is_some() {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(files.len() > 20, "{} fixture files", files.len());
        let mut hasher = blake3::Hasher::new();
        for path in &files {
            let relative = path.strip_prefix(&fixtures).unwrap().to_string_lossy();
            let after = std::fs::read_to_string(path).unwrap();
            // Every third line changed, one line in seven removed.
            let before: String = after
                .lines()
                .enumerate()
                .filter(|(i, _)| i % 7 != 3)
                .map(|(i, line)| {
                    if i % 3 == 0 {
                        format!("{line} \n")
                    } else {
                        format!("{line}\n")
                    }
                })
                .collect();
            for from in ["", before.as_str()] {
                for name in touched_symbols(&relative, from, &after) {
                    hasher.update(name.as_bytes());
                    hasher.update(b"\n");
                }
            }
        }
        for message in [
            "fix(router): keep the slash\n\nThe matcher  dropped it.\n\nMore.",
            "feat: cookies\n\nSigned-off-by: A <a@b.c>",
            "  subject only \n",
        ] {
            hasher.update(crate::note_text(message).as_bytes());
        }
        let now = format!("{MEMO_VERSION} {}", &hasher.finalize().to_hex()[..16]);
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let recorded = std::fs::read_to_string(manifest.join(RECORD)).unwrap_or_default();
        let recorded = recorded.trim();
        if recorded == now {
            return;
        }
        assert_ne!(
            recorded.split(' ').next().unwrap_or(""),
            MEMO_VERSION.to_string(),
            "what changes touch (or a note) moved but MEMO_VERSION is still {MEMO_VERSION}: \
             history memos would keep stale entries. Bump it, then write `{now}` into \
             crates/history/{RECORD}"
        );
        panic!("MEMO_VERSION moved: write `{now}` into crates/history/{RECORD}");
    }

    #[test]
    fn an_added_file_touches_every_symbol() {
        let names = touched_symbols("src/router.ts", "", BEFORE);
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["Router", "Router > add", "Router > match", "parse"]
        );
    }
}
