//! Which comments belong to a declaration and which stand alone.
//!
//! oxc attaches a comment to the next token even across blank lines, so "attached" is
//! decided here: a comment block belongs to the node below it when nothing but whitespace
//! with at most one newline separates them and each comment starts its own line.

use oxc_ast::{Comment, ast::CommentKind};

/// The file's comments in source order, with the text they live in.
pub(crate) struct Comments<'s> {
    text: &'s str,
    all: Vec<CommentInfo>,
}

/// One comment: where it is, whether it is JSDoc and whether it starts its line.
struct CommentInfo {
    start: u32,
    end: u32,
    is_jsdoc: bool,
    starts_line: bool,
}

impl<'s> Comments<'s> {
    pub fn new(text: &'s str, comments: &[Comment]) -> Self {
        let all = comments
            .iter()
            .map(|c| {
                let is_jsdoc = c.kind != CommentKind::Line
                    && text[c.span.start as usize..].starts_with("/**")
                    && !text[c.span.start as usize..].starts_with("/**/");
                CommentInfo {
                    start: c.span.start,
                    end: c.span.end,
                    is_jsdoc,
                    starts_line: starts_line(text, c.span.start),
                }
            })
            .collect();
        Self { text, all }
    }

    /// `(start, end)` of every comment.
    pub fn spans(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.all.iter().map(|c| (c.start, c.end))
    }

    /// The start of the comment block attached above `node_start` (or `node_start` itself),
    /// and the text of the JSDoc comment closest to the node, if any. Comments at or before
    /// `floor` (the end of the previous sibling) are never taken.
    pub fn leading(&self, node_start: u32, floor: u32) -> (u32, Option<String>) {
        let mut start = node_start;
        let mut jsdoc = None;
        let mut i = self.all.partition_point(|c| c.end <= node_start);
        while i > 0 {
            let c = &self.all[i - 1];
            if c.start < floor || !c.starts_line || !self.only_gap(c.end, start) {
                break;
            }
            // The JSDoc nearest the node wins (an eslint line comment may sit in between).
            if c.is_jsdoc && jsdoc.is_none() {
                jsdoc = Some(clean_jsdoc(&self.text[c.start as usize..c.end as usize]));
            }
            start = c.start;
            i -= 1;
        }
        (start, jsdoc)
    }

    /// True when `text[from..to]` is whitespace holding at most one newline.
    fn only_gap(&self, from: u32, to: u32) -> bool {
        if from > to {
            return false;
        }
        let gap = &self.text[from as usize..to as usize];
        gap.bytes().all(|b| b.is_ascii_whitespace())
            && gap.bytes().filter(|&b| b == b'\n').count() <= 1
    }
}

/// True when only whitespace precedes `offset` on its line.
fn starts_line(text: &str, offset: u32) -> bool {
    let before = &text[..offset as usize];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    before[line_start..]
        .trim_start_matches('\u{feff}')
        .trim()
        .is_empty()
}

/// Strips `/**`, `*/` and the leading ` * ` of each line.
pub fn clean_jsdoc(raw: &str) -> String {
    let inner = raw.trim_start_matches("/**").trim_end_matches("*/");
    let mut out = String::with_capacity(inner.len());
    // Blank lines are written only once a non-blank line follows: none lead or trail.
    let mut blanks = 0;
    // JSDoc can run to hundreds of lines: split with memchr and trim ASCII first, falling
    // back to Unicode trimming only when a line's edge is not ASCII.
    let mut from = 0;
    let bytes = inner.as_bytes();
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    for to in ends {
        let line = &inner[from..to];
        from = to + 1;
        let t = trim(line);
        let t = t.strip_prefix('*').unwrap_or(t);
        let t = t.strip_prefix(' ').unwrap_or(t);
        let t = trim_end(t);
        if t.is_empty() {
            blanks += 1;
            continue;
        }
        if !out.is_empty() {
            (0..=blanks).for_each(|_| out.push('\n'));
        }
        blanks = 0;
        out.push_str(t);
    }
    out
}

/// `str::trim`, with a fast path for ASCII edges.
fn trim(s: &str) -> &str {
    trim_end(trim_start(s))
}

fn trim_start(s: &str) -> &str {
    let t = s.trim_ascii_start();
    if t.as_bytes().first().is_some_and(|b| !b.is_ascii()) {
        t.trim_start()
    } else {
        t
    }
}

fn trim_end(s: &str) -> &str {
    let t = s.trim_ascii_end();
    if t.as_bytes().last().is_some_and(|b| !b.is_ascii()) {
        t.trim_end()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::clean_jsdoc;

    #[test]
    fn jsdoc_markers_are_stripped() {
        assert_eq!(
            clean_jsdoc("/**\n * Validates a token.\n * @param t the token\n */"),
            "Validates a token.\n@param t the token"
        );
        assert_eq!(clean_jsdoc("/** One line. */"), "One line.");
        // Unicode whitespace at a line's edges is trimmed like any other (after the `* `
        // prefix only the one space goes); `\r\n` ends a line.
        assert_eq!(
            clean_jsdoc("/**\r\n * \u{a0}Non-breaking.\u{2003}\r\n *   indented\r\n */"),
            "\u{a0}Non-breaking.\n  indented"
        );
        assert_eq!(
            clean_jsdoc("/**\n *\n * First.\n *\n *\n * Second.\n *\n */"),
            "First.\n\n\nSecond."
        );
    }
}
