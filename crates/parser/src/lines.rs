//! Byte offset ↔ 1-indexed line conversion.
//!
//! oxc spans are UTF-8 byte offsets; every consumer downstream speaks in lines, so the
//! conversion lives in one place. Only `\n` ends a line (as git and editors count them);
//! a `\r` before it belongs to the line terminator, not to the line's text.

/// Start offsets of every line of one source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    starts: Vec<u32>,
    len: u32,
}

impl Default for LineIndex {
    /// The index of the empty text.
    fn default() -> Self {
        Self::new("")
    }
}

impl LineIndex {
    /// Indexes `text`. Texts over 4 GiB are not supported (oxc has the same limit).
    pub fn new(text: &str) -> Self {
        // Source lines average well over 24 bytes: one allocation in the common case.
        let mut starts = Vec::with_capacity(text.len() / 24 + 1);
        starts.push(0u32);
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i as u32 + 1));
        Self {
            starts,
            len: text.len() as u32,
        }
    }

    /// True when this index was built from a text of `text`'s length: the cheap check that
    /// lets a consumer reuse the parser's index instead of rebuilding it.
    pub fn fits(&self, text: &str) -> bool {
        self.len as usize == text.len()
    }

    /// Number of lines; a trailing newline does not start a new line.
    pub fn line_count(&self) -> u32 {
        let n = self.starts.len() as u32;
        if n > 1 && *self.starts.last().unwrap() == self.len {
            n - 1
        } else {
            n
        }
    }

    /// 1-indexed line containing byte `offset`.
    pub fn line_of(&self, offset: u32) -> u32 {
        match self.starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }

    /// [`Self::line_of`] for walks that visit offsets mostly in ascending order: `hint`, a
    /// line returned before, and the line after it are tried before a binary search.
    pub fn line_of_near(&self, offset: u32, hint: u32) -> u32 {
        let h = hint as usize;
        if h == 0 || h > self.starts.len() || self.starts[h - 1] > offset {
            return self.line_of(offset);
        }
        // starts[h - 1] <= offset: the answer is h plus the later lines starting at or before it.
        let later = &self.starts[h..];
        match later {
            [] => hint,
            [next, ..] if offset < *next => hint,
            [_, next, ..] if offset < *next => hint + 1,
            [_] => hint + 1,
            _ => hint + later.partition_point(|&s| s <= offset) as u32,
        }
    }

    /// 1-indexed line of the last byte of a non-empty span ending at `end` (exclusive).
    pub fn end_line_of(&self, start: u32, end: u32) -> u32 {
        self.line_of(end.max(start + 1) - 1)
    }

    /// Byte offset where 1-indexed `line` starts.
    pub fn line_start(&self, line: u32) -> u32 {
        self.starts
            .get(line as usize - 1)
            .copied()
            .unwrap_or(self.len)
    }

    /// Byte offset where the text of 1-indexed `line` ends, excluding `\n` and a preceding `\r`.
    pub fn line_end(&self, line: u32, text: &str) -> u32 {
        let mut end = self
            .starts
            .get(line as usize)
            .map_or(self.len, |next| next - 1);
        let bytes = text.as_bytes();
        if end > self.line_start(line)
            && bytes.get(end as usize - 1) == Some(&b'\r')
            && (end as usize) < bytes.len()
            && bytes[end as usize] == b'\n'
        {
            end -= 1;
        }
        end
    }

    /// The exact text of lines `start..=end` (1-indexed), without the final line terminator.
    pub fn lines_text<'t>(&self, text: &'t str, start: u32, end: u32) -> &'t str {
        let from = self.line_start(start) as usize;
        let to = self.line_end(end, text) as usize;
        &text[from..to.max(from)]
    }
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    #[test]
    fn lines_and_crlf() {
        let text = "a\r\nbc\r\n\r\nd";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 4);
        assert_eq!(idx.line_of(0), 1);
        assert_eq!(idx.line_of(3), 2);
        assert_eq!(idx.lines_text(text, 1, 2), "a\r\nbc");
        assert_eq!(idx.lines_text(text, 3, 3), "");
        assert_eq!(idx.lines_text(text, 4, 4), "d");
    }

    #[test]
    fn a_hint_never_changes_the_answer() {
        let text = "ab\n\ncde\nf\n\n\nghij\n";
        let idx = LineIndex::new(text);
        for offset in 0..=text.len() as u32 + 2 {
            for hint in 0..=idx.line_count() + 3 {
                assert_eq!(
                    idx.line_of_near(offset, hint),
                    idx.line_of(offset),
                    "offset {offset}, hint {hint}"
                );
            }
        }
    }

    #[test]
    fn line_starts_match_a_plain_scan() {
        // Lines of many lengths, CRLF included.
        let mut text = String::new();
        for n in 0..150 {
            text.push_str(&"x".repeat(n % 70));
            text.push_str(if n % 3 == 0 { "\r\n" } else { "\n" });
        }
        let idx = LineIndex::new(&text);
        let expected: Vec<u32> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i as u32 + 1))
            .collect();
        assert_eq!(idx.starts, expected);
    }

    #[test]
    fn trailing_newline_is_not_a_line() {
        let idx = LineIndex::new("x\ny\n");
        assert_eq!(idx.line_count(), 2);
        assert_eq!(LineIndex::new("").line_count(), 1);
    }
}
