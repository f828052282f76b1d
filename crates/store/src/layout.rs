//! Where a file's chunk rows sit in it: the part of a chunk that moves when code above it
//! changes, kept in the file's row of the files table instead of in the chunk rows.
//!
//! A chunk row is found by its `key`, which hashes what names the chunk (path, kind, name,
//! parent's key, and the rank among namesakes) but no position. The blueprint's id hashes
//! `startLine`, so an edit above a chunk gives it a new id while its row's content stays the
//! same. With the id and the positions here, that row stays where it is: an edit rewrites
//! the rows it changed, a worktree's index shares every row it did not change with the
//! index it was cloned from, and rewritten rows stay few enough for the full-text indexes
//! to take them in rather than be rebuilt.
//!
//! Each chunk of a file has one [`Placement`], in the chunker's order; a reader puts the id,
//! the parent's and children's ids and the positions back ([`FileLayout::place`]).

use std::collections::HashMap;

use codectx_chunker::CodeChunk;
use codectx_parser::ByteSpan;

/// A chunk row's key: 128 bits of blake3, stored as 32 lowercase hex digits.
pub(crate) type RowKey = [u8; 16];

/// One chunk's id and positions, as last indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The row this chunk is (`layout::placements` says how it is made).
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
}

/// Bytes per placement in the stored layout: key, id and six numbers (`u32::MAX`: no
/// parent).
const PLACEMENT_BYTES: usize = 16 + 16 + 6 * 4;

/// The placements of one file's chunks, in the chunker's order (parents before children),
/// each with its row's key. A key hashes the path, kind, name, the parent's key and the
/// chunk's rank among the earlier chunks with the same four: two overloads of one name have
/// two rows, and neither moves when a line is added above them.
///
/// A chunk's parent is the nearest earlier chunk with the parent's id, so two chunks with
/// one id (same kind, name, line and parent) each keep their own children; a parent that
/// does not come before its child counts as none.
pub(crate) fn placements(chunks: &[CodeChunk]) -> Vec<Placement> {
    let mut out: Vec<Placement> = Vec::with_capacity(chunks.len());
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
        });
        latest.insert(chunk.id.as_str(), i as u32);
    }
    out
}

/// `placements` as stored in the files table's `layout` column.
pub(crate) fn encode(placements: &[Placement]) -> Vec<u8> {
    let mut out = Vec::with_capacity(placements.len() * PLACEMENT_BYTES);
    for p in placements {
        out.extend_from_slice(&p.key);
        out.extend_from_slice(&p.id);
        for n in [
            p.start_line,
            p.end_line,
            p.start_byte,
            p.end_byte,
            p.symbol,
            p.parent.unwrap_or(u32::MAX),
        ] {
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    out
}

/// The placements [`encode`] stored; an error when the bytes are not a whole number of
/// placements or a parent is out of range.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Placement>, String> {
    if !bytes.len().is_multiple_of(PLACEMENT_BYTES) {
        return Err(format!(
            "a layout of {} bytes is not whole placements",
            bytes.len()
        ));
    }
    let count = bytes.len() / PLACEMENT_BYTES;
    let mut out = Vec::with_capacity(count);
    for entry in bytes.chunks_exact(PLACEMENT_BYTES) {
        let number = |i: usize| {
            let at = 32 + 4 * i;
            u32::from_le_bytes(entry[at..at + 4].try_into().expect("four bytes"))
        };
        let parent = match number(5) {
            u32::MAX => None,
            p if (p as usize) < count => Some(p),
            p => {
                return Err(format!(
                    "a layout's parent {p} is out of its {count} chunks"
                ));
            }
        };
        out.push(Placement {
            key: entry[..16].try_into().expect("sixteen bytes"),
            id: entry[16..32].try_into().expect("sixteen bytes"),
            start_line: number(0),
            end_line: number(1),
            start_byte: number(2),
            end_byte: number(3),
            symbol: number(4),
            parent,
        });
    }
    Ok(out)
}

/// One file's placements, found by row key.
pub(crate) struct FileLayout<'a> {
    placements: &'a [Placement],
    by_key: HashMap<RowKey, u32>,
    children: Vec<Vec<u32>>,
}

impl<'a> FileLayout<'a> {
    pub(crate) fn new(placements: &'a [Placement]) -> Self {
        let mut children = vec![Vec::new(); placements.len()];
        for (i, p) in placements.iter().enumerate() {
            if let Some(parent) = p.parent {
                children[parent as usize].push(i as u32);
            }
        }
        FileLayout {
            placements,
            by_key: placements
                .iter()
                .enumerate()
                .map(|(i, p)| (p.key, i as u32))
                .collect(),
            children,
        }
    }

    /// Puts `chunk` (read from row `key`, its id and positions unset) where this layout
    /// says; `false` when the layout has no such row (a row written after the files table
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
        true
    }
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
        let keys =
            |c: &[CodeChunk]| -> Vec<RowKey> { placements(c).iter().map(|p| p.key).collect() };
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

    /// A chunk read from its row and put in place by its layout is the chunk that was cut.
    #[test]
    fn a_layout_puts_every_chunk_back_as_cut() {
        let cut = chunks(
            "import { x } from './x';\n\nexport class A {\n  m() { return x; }\n  n() {}\n}\n\nexport function f() {}\n",
        );
        let stored = decode(&encode(&placements(&cut))).unwrap();
        let layout = FileLayout::new(&stored);
        for (chunk, key) in cut.iter().zip(stored.iter().map(|p| p.key)) {
            let mut read = CodeChunk {
                id: String::new(),
                start_line: 0,
                end_line: 0,
                span: ByteSpan::new(0, 0),
                symbol: 0,
                parent_chunk_id: None,
                child_chunk_ids: Vec::new(),
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
        let placed = placements(&twice);
        assert_eq!(
            placed.iter().map(|p| p.parent).collect::<Vec<_>>(),
            [None, Some(0), None, Some(2)]
        );
        assert_ne!(placed[0].key, placed[2].key, "one row each");
        let layout = FileLayout::new(&placed);
        let children = |at: usize| {
            let mut read = twice[at].clone();
            assert!(layout.place(&to_hex(&placed[at].key), &mut read));
            read.child_chunk_ids
        };
        assert_eq!(children(0), std::slice::from_ref(&method.id));
        assert_eq!(children(2), std::slice::from_ref(&other.id));
    }

    #[test]
    fn a_damaged_layout_is_an_error() {
        assert!(decode(&[0; PLACEMENT_BYTES + 1]).is_err());
        let mut bytes = vec![0; PLACEMENT_BYTES];
        bytes[PLACEMENT_BYTES - 4..].copy_from_slice(&7u32.to_le_bytes());
        assert!(decode(&bytes).is_err());
    }
}
