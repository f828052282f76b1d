//! Where a file's chunk rows sit in it, and what of the rest of the file they use: the
//! parts of a chunk that change when code elsewhere in the file changes, kept in the file's
//! row of the files table instead of in the chunk rows.
//!
//! A chunk row is found by its `key`, which hashes what names the chunk (path, kind, name,
//! parent's key, and the rank among namesakes) but no position. The blueprint's id hashes
//! `startLine`, so an edit above a chunk gives it a new id while its row's content stays the
//! same. With the id and the positions here, that row stays where it is: an edit rewrites
//! the rows it changed, a worktree's index shares every row it did not change with the
//! index it was cloned from, and rewritten rows stay few enough for the full-text indexes
//! to take them in rather than be rebuilt.
//!
//! A chunk's `relevantImports` are the file's import statements, and one statement serves
//! many chunks: a name added to it changed every row that used it (on vite's month of ten
//! commits, 1,423 of the 3,083 rows rewritten changed in nothing else). The layout keeps
//! the file's statements once and each chunk's by number.
//!
//! Each chunk of a file has one [`Placement`], in the chunker's order; a reader puts the id,
//! the parent's and children's ids, the positions and the imports back
//! ([`FileLayout::place`]).

use std::collections::HashMap;

use codectx_chunker::CodeChunk;
use codectx_parser::ByteSpan;

/// A chunk row's key: 128 bits of blake3, stored as 32 lowercase hex digits.
pub(crate) type RowKey = [u8; 16];

/// One chunk's id, positions and imports, as last indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The row this chunk is (`layout::layout` says how it is made).
    pub key: [u8; 16],
    /// The blueprint's chunk id (`CodeChunk::id`, 32 hex digits), as bytes.
    pub id: [u8; 16],
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: u32,
    pub end_byte: u32,
    /// The parser's symbol number (`CodeChunk::symbol`).
    pub symbol: u32,
    /// The parent chunk's index in the layout.
    pub parent: Option<u32>,
    /// Its `relevantImports`, as indices into [`Layout::imports`].
    pub imports: Vec<u32>,
}

/// One file's layout: its chunks' placements and the import statements they use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Each chunk's placement, in the chunker's order (parents before children).
    pub placements: Vec<Placement>,
    /// The statements the chunks' `relevantImports` name, each once, in first use's order.
    pub imports: Vec<String>,
}

/// Bytes per placement in the stored layout before its imports: key, id and six numbers
/// (`u32::MAX`: no parent).
const PLACEMENT_BYTES: usize = 16 + 16 + 6 * 4;

/// The layout of one file's chunks: their placements, in the chunker's order (parents
/// before children), each with its row's key, and the import statements they use. A key
/// hashes the path, kind, name, the parent's key and the chunk's rank among the earlier
/// chunks with the same four: two overloads of one name have two rows, and neither moves
/// when a line is added above them.
///
/// A chunk's parent is the nearest earlier chunk with the parent's id, so two chunks with
/// one id (same kind, name, line and parent) each keep their own children; a parent that
/// does not come before its child counts as none.
pub(crate) fn layout(chunks: &[CodeChunk]) -> Layout {
    let mut out: Vec<Placement> = Vec::with_capacity(chunks.len());
    let mut imports: Vec<String> = Vec::new();
    let mut import_at: HashMap<&str, u32> = HashMap::new();
    let mut latest: HashMap<&str, u32> = HashMap::with_capacity(chunks.len());
    let mut ranks: HashMap<(RowKey, &str, &str), u32> = HashMap::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let parent = chunk
            .parent_chunk_id
            .as_deref()
            .and_then(|p| latest.get(p))
            .copied();
        let parent_key = parent.map_or_else(RowKey::default, |p| out[p as usize].key);
        let rank = ranks
            .entry((parent_key, chunk.node_kind.as_str(), chunk.name.as_str()))
            .or_default();
        let mut hasher = blake3::Hasher::new();
        for part in [
            chunk.relative_path.as_bytes(),
            chunk.node_kind.as_str().as_bytes(),
            chunk.name.as_bytes(),
            &parent_key,
            &rank.to_le_bytes(),
        ] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        *rank += 1;
        let mut key = [0u8; 16];
        key.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
        out.push(Placement {
            key,
            // Ids are 32 hex digits by construction (`codectx_chunker`).
            id: from_hex(&chunk.id).unwrap_or_default(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            start_byte: chunk.span.start,
            end_byte: chunk.span.end,
            symbol: chunk.symbol,
            parent,
            imports: chunk
                .relevant_imports
                .iter()
                .map(|statement| {
                    *import_at.entry(statement).or_insert_with(|| {
                        imports.push(statement.clone());
                        imports.len() as u32 - 1
                    })
                })
                .collect(),
        });
        latest.insert(chunk.id.as_str(), i as u32);
    }
    Layout {
        placements: out,
        imports,
    }
}

/// `layout` as stored in the files table's `layout` column: the statements (a count, then
/// each as a length and its bytes), then each placement (key, id, six numbers, a count of
/// imports and their indices). Numbers are `u32`, little-endian.
pub(crate) fn encode(layout: &Layout) -> Vec<u8> {
    let mut out = Vec::with_capacity(layout.placements.len() * (PLACEMENT_BYTES + 8));
    let number = |out: &mut Vec<u8>, n: u32| out.extend_from_slice(&n.to_le_bytes());
    number(&mut out, layout.imports.len() as u32);
    for statement in &layout.imports {
        number(&mut out, statement.len() as u32);
        out.extend_from_slice(statement.as_bytes());
    }
    number(&mut out, layout.placements.len() as u32);
    for p in &layout.placements {
        out.extend_from_slice(&p.key);
        out.extend_from_slice(&p.id);
        for n in [
            p.start_line,
            p.end_line,
            p.start_byte,
            p.end_byte,
            p.symbol,
            p.parent.unwrap_or(u32::MAX),
            p.imports.len() as u32,
        ] {
            number(&mut out, n);
        }
        for &i in &p.imports {
            number(&mut out, i);
        }
    }
    out
}

/// The layout [`encode`] stored; an error when the bytes end early or run on, or a parent
/// or an import is out of range.
pub(crate) fn decode(bytes: &[u8]) -> Result<Layout, String> {
    let mut rest = bytes;
    let mut take = |n: usize| -> Result<&[u8], String> {
        if rest.len() < n {
            return Err(format!("a layout of {} bytes ends early", bytes.len()));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let number = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("four bytes"));
    let statements = number(take(4)?) as usize;
    let mut imports = Vec::with_capacity(statements.min(bytes.len()));
    for _ in 0..statements {
        let len = number(take(4)?) as usize;
        let text = std::str::from_utf8(take(len)?)
            .map_err(|_| "a layout's import statement is not UTF-8".to_string())?;
        imports.push(text.to_string());
    }
    let count = number(take(4)?) as usize;
    let mut placements = Vec::with_capacity(count.min(bytes.len() / PLACEMENT_BYTES));
    for _ in 0..count {
        let entry = take(PLACEMENT_BYTES + 4)?;
        let at = |i: usize| number(&entry[32 + 4 * i..36 + 4 * i]);
        let parent = match at(5) {
            u32::MAX => None,
            p if (p as usize) < count => Some(p),
            p => {
                return Err(format!(
                    "a layout's parent {p} is out of its {count} chunks"
                ));
            }
        };
        let used = at(6) as usize;
        let indices = take(4 * used)?;
        let imports_used = indices
            .chunks_exact(4)
            .map(|b| match number(b) {
                i if (i as usize) < statements => Ok(i),
                i => Err(format!(
                    "a layout's import {i} is out of its {statements} statements"
                )),
            })
            .collect::<Result<_, _>>()?;
        placements.push(Placement {
            key: entry[..16].try_into().expect("sixteen bytes"),
            id: entry[16..32].try_into().expect("sixteen bytes"),
            start_line: at(0),
            end_line: at(1),
            start_byte: at(2),
            end_byte: at(3),
            symbol: at(4),
            parent,
            imports: imports_used,
        });
    }
    if !rest.is_empty() {
        return Err(format!(
            "a layout runs {} bytes past its chunks",
            rest.len()
        ));
    }
    Ok(Layout {
        placements,
        imports,
    })
}

/// One file's placements, found by row key.
pub(crate) struct FileLayout<'a> {
    placements: &'a [Placement],
    imports: &'a [String],
    by_key: HashMap<RowKey, u32>,
    children: Vec<Vec<u32>>,
}

impl<'a> FileLayout<'a> {
    pub(crate) fn new(layout: &'a Layout) -> Self {
        let placements = &layout.placements[..];
        let mut children = vec![Vec::new(); placements.len()];
        for (i, p) in placements.iter().enumerate() {
            if let Some(parent) = p.parent {
                children[parent as usize].push(i as u32);
            }
        }
        FileLayout {
            placements,
            imports: &layout.imports,
            by_key: placements
                .iter()
                .enumerate()
                .map(|(i, p)| (p.key, i as u32))
                .collect(),
            children,
        }
    }

    /// Puts `chunk` (read from row `key`, its id, positions and imports unset) where this
    /// layout says, with the imports it names; `false` when the layout has no such row (a row written after the files table
    /// this reader holds: its next sync sees it).
    pub(crate) fn place(&self, key: &str, chunk: &mut CodeChunk) -> bool {
        let Some(&at) = from_hex(key).and_then(|k| self.by_key.get(&k)) else {
            return false;
        };
        let p = &self.placements[at as usize];
        chunk.id = to_hex(&p.id);
        chunk.start_line = p.start_line;
        chunk.end_line = p.end_line;
        chunk.span = ByteSpan::new(p.start_byte, p.end_byte);
        chunk.symbol = p.symbol;
        chunk.parent_chunk_id = p
            .parent
            .map(|parent| to_hex(&self.placements[parent as usize].id));
        chunk.child_chunk_ids = self.children[at as usize]
            .iter()
            .map(|&c| to_hex(&self.placements[c as usize].id))
            .collect();
        chunk.relevant_imports = p
            .imports
            .iter()
            .map(|&i| self.imports[i as usize].clone())
            .collect();
        true
    }
}

/// Chunk rows read back and placed (`(key, chunk)`), in `layout`'s order, the chunker's:
/// the chunks as their file's parse gave them. `None` unless they are exactly its rows.
pub(crate) fn in_chunker_order(
    layout: &Layout,
    rows: Vec<(String, CodeChunk)>,
) -> Option<Vec<CodeChunk>> {
    let at: HashMap<RowKey, usize> = layout
        .placements
        .iter()
        .enumerate()
        .map(|(i, p)| (p.key, i))
        .collect();
    let mut slots: Vec<Option<CodeChunk>> = (0..at.len()).map(|_| None).collect();
    for (key, chunk) in rows {
        let i = *at.get(&from_hex(&key)?)?;
        if slots[i].replace(chunk).is_some() {
            return None;
        }
    }
    slots.into_iter().collect()
}

/// 32 lowercase hex digits.
pub(crate) fn to_hex(bytes: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for &b in bytes {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 0xf)] as char);
    }
    out
}

/// The bytes of 32 hex digits; `None` for anything else.
pub(crate) fn from_hex(text: &str) -> Option<[u8; 16]> {
    let text = text.as_bytes();
    if text.len() != 32 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = digit(text[2 * i])? << 4 | digit(text[2 * i + 1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(source: &str) -> Vec<CodeChunk> {
        let parsed = codectx_parser::parse_source("src/a.ts", source);
        codectx_chunker::chunk_file(&parsed, source, "/repo/src/a.ts")
    }

    /// A line added above a class moves it and its methods (new ids, new lines) but not
    /// their keys; overloads of one name keep two keys.
    #[test]
    fn keys_do_not_move_with_lines_and_namesakes_keep_their_own() {
        let source =
            "export class A {\n  m(a: string): void;\n  m(a: number): void;\n  m(a: any) {}\n}\n";
        let before = chunks(source);
        let after = chunks(&format!("// a comment\n\n{source}"));
        let keys = |c: &[CodeChunk]| -> Vec<RowKey> {
            layout(c).placements.iter().map(|p| p.key).collect()
        };
        let (kb, ka) = (keys(&before), keys(&after));
        let class = |c: &[CodeChunk]| c.iter().position(|c| c.name == "A").unwrap();
        let (cb, ca) = (class(&before), class(&after));
        assert_ne!(before[cb].id, after[ca].id);
        assert_eq!(kb[cb], ka[ca]);
        let methods = |c: &[CodeChunk], k: &[RowKey]| -> Vec<RowKey> {
            c.iter()
                .zip(k)
                .filter(|(c, _)| c.name == "m")
                .map(|(_, k)| *k)
                .collect()
        };
        let (mb, ma) = (methods(&before, &kb), methods(&after, &ka));
        assert_eq!(mb, ma);
        let distinct: std::collections::HashSet<_> = kb.iter().collect();
        assert_eq!(
            distinct.len(),
            kb.len(),
            "every row of a file has its own key"
        );
    }

    /// A chunk read from its row and put in place by its layout is the chunk that was cut,
    /// imports included; a statement two chunks use is stored once.
    #[test]
    fn a_layout_puts_every_chunk_back_as_cut() {
        let cut = chunks(
            "import { x, y } from './x';\nimport z from './z';\n\nexport class A {\n  m() { return x; }\n  n() { return x + z; }\n}\n\nexport function f() {}\n",
        );
        let stored = decode(&encode(&layout(&cut))).unwrap();
        assert_eq!(
            stored.imports,
            ["import { x, y } from './x';", "import z from './z';"]
        );
        assert!(cut.iter().any(|c| c.relevant_imports.len() == 2));
        let layout = FileLayout::new(&stored);
        for (chunk, key) in cut.iter().zip(stored.placements.iter().map(|p| p.key)) {
            let mut read = CodeChunk {
                id: String::new(),
                start_line: 0,
                end_line: 0,
                span: ByteSpan::new(0, 0),
                symbol: 0,
                parent_chunk_id: None,
                child_chunk_ids: Vec::new(),
                relevant_imports: Vec::new(),
                ..chunk.clone()
            };
            assert!(layout.place(&to_hex(&key), &mut read));
            assert_eq!(&read, chunk);
        }
        assert!(!layout.place(&"0".repeat(32), &mut cut[0].clone()));
    }

    /// Two chunks with one id (same kind, name, line and parent: the chunker's rules make
    /// them rare, so they are made by hand here) keep two rows, and each keeps its own
    /// children: a child's parent is the nearest earlier chunk with the parent's id.
    #[test]
    fn chunks_sharing_an_id_keep_their_own_children() {
        let cut = chunks("export class A {\n  m() {}\n}\n");
        let (class, method) = (cut[0].clone(), cut[1].clone());
        assert_eq!(method.parent_chunk_id.as_ref(), Some(&class.id));
        let other = CodeChunk {
            name: "n".into(),
            id: "f".repeat(32),
            ..method.clone()
        };
        let twice = [class.clone(), method.clone(), class.clone(), other.clone()];
        let placed = layout(&twice);
        assert_eq!(
            placed
                .placements
                .iter()
                .map(|p| p.parent)
                .collect::<Vec<_>>(),
            [None, Some(0), None, Some(2)]
        );
        let keys: Vec<RowKey> = placed.placements.iter().map(|p| p.key).collect();
        assert_ne!(keys[0], keys[2], "one row each");
        let layout = FileLayout::new(&placed);
        let children = |at: usize| {
            let mut read = twice[at].clone();
            assert!(layout.place(&to_hex(&keys[at]), &mut read));
            read.child_chunk_ids
        };
        assert_eq!(children(0), std::slice::from_ref(&method.id));
        assert_eq!(children(2), std::slice::from_ref(&other.id));
    }

    /// Bytes cut short, running on, or naming a parent or a statement that is not there are
    /// errors, not a layout.
    #[test]
    fn a_damaged_layout_is_an_error() {
        let whole = encode(&layout(&chunks(
            "import { x } from './x';\nexport class A {\n  m() { return x; }\n}\n",
        )));
        assert!(decode(&whole).is_ok());
        assert!(decode(&whole[..whole.len() - 1]).is_err());
        assert!(decode(&[whole.as_slice(), &[0]].concat()).is_err());
        let one = |parent: u32, import: u32| {
            let mut bytes = [0u32, 1].map(u32::to_le_bytes).concat();
            bytes.extend_from_slice(&[0; 32]);
            for n in [0, 0, 0, 0, 0, parent, 1, import] {
                bytes.extend_from_slice(&n.to_le_bytes());
            }
            bytes
        };
        assert!(decode(&one(u32::MAX, 0)).is_err(), "no statement 0");
        let with_statement = |parent, import| {
            let mut bytes = [1u32, 1].map(u32::to_le_bytes).concat();
            bytes.push(b'x');
            bytes.extend_from_slice(&one(parent, import)[4..]);
            bytes
        };
        assert!(decode(&with_statement(u32::MAX, 0)).is_ok());
        assert!(decode(&with_statement(7, 0)).is_err(), "no chunk 7");
        assert!(
            decode(&with_statement(u32::MAX, 1)).is_err(),
            "no statement 1"
        );
    }
}
