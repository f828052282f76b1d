//! The linked project saved beside the index (`project.image`): a one-shot command (a CLI
//! search) reads it in one go instead of reading every chunk row and every file's facts
//! and linking the whole graph again.
//!
//! An image is a cache, never the truth. It names the index state it was made from
//! ([`codectx_store::Store::content_digest`]); one that does not match, or does not read,
//! is ignored and the project is loaded from the index as before. It records the module
//! configurations its links were resolved under: when the walk finds them changed, every
//! import resolves again.
//!
//! Layout: the magic (which carries the layout's version), the digest, then four
//! length-prefixed sections: the root it was linked under; in postcard the graph
//! ([`ProjectGraph::write_linked`]: its facts decode only when read) and the files with
//! their chunks and the name index, which decode on two threads; last, the chunks' texts
//! one after another, which the chunks point into. A text is written once: a nested
//! chunk's source points into its root chunk's, an embedding text that is the whole source
//! points at the source (on vite, 8.2 MB of texts become 4.1 MB).
//!
//! The mapped image stays mapped while the project uses it: the graph's encoded facts and
//! the chunks' texts ([`ChunkText::shared`]) are slices of it, not copies. The texts have a
//! section of their own so that decoding the chunks never touches their pages: only those
//! an answer reads are loaded.

use std::collections::HashMap;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use codectx_chunker::{ChunkText, CodeChunk};
use codectx_graph::ProjectGraph;
use codectx_parser::{ByteSpan, Naming, SymbolKind};
use codectx_store::PROJECT_IMAGE as FILE_NAME;
use serde::{Deserialize, Serialize};

use super::ProjectFile;
use crate::search::NameIndex;

/// The first bytes of an image; the last byte is the layout's version.
const MAGIC: &[u8; 16] = b"codectx-project\x05";

/// A chunk as an image holds it: a [`CodeChunk`] without the paths its file gives, and
/// with its texts' places in the texts section.
#[derive(Serialize, Deserialize)]
struct ImageChunk<S> {
    id: S,
    node_kind: SymbolKind,
    name: S,
    naming: Naming,
    parent_name: Option<S>,
    parent_chunk_id: Option<S>,
    child_chunk_ids: Vec<S>,
    depth: u32,
    signature: S,
    full_source: TextAt,
    start_line: u32,
    end_line: u32,
    span: ByteSpan,
    symbol: u32,
    jsdoc: Option<S>,
    relevant_imports: Vec<S>,
    embedding_text: TextAt,
    breadcrumb: S,
}

/// Where a text lies in the texts section.
#[derive(Serialize, Deserialize, Clone, Copy)]
struct TextAt {
    start: u64,
    len: u64,
}

/// The texts section as it is written: each new text's place follows the one before, in
/// the order of the files, their chunks, and each chunk's source then embedding text.
#[derive(Default)]
struct TextsOut {
    next: std::cell::Cell<u64>,
}

/// Where a chunk's own texts come from; [`TextsOut::place_file`] and [`TextsOut::write`]
/// decide it alike.
struct Sources {
    /// Its source's offset in its root chunk's, the latest chunk of depth 0 before it.
    in_root: Option<u64>,
    /// Its embedding text is its whole source.
    embeds_source: bool,
}

impl Sources {
    /// What `chunk` shares with `root`, the latest chunk of depth 0 before it (its file's
    /// chunks come parents first).
    fn of(root: Option<&CodeChunk>, chunk: &CodeChunk) -> Self {
        Sources {
            in_root: root
                .filter(|_| chunk.depth > 0)
                .and_then(|root| offset_in(root, chunk)),
            embeds_source: chunk.embedding_text.as_str() == chunk.full_source.as_str(),
        }
    }
}

/// Where `chunk`'s source lies in `root`'s, when `root`'s lines hold its lines: after as
/// many line breaks as lines come before it.
fn offset_in(root: &CodeChunk, chunk: &CodeChunk) -> Option<u64> {
    if chunk.start_line < root.start_line || chunk.end_line > root.end_line {
        return None;
    }
    let (outer, inner) = (root.full_source.as_str(), chunk.full_source.as_str());
    let skip = (chunk.start_line - root.start_line) as usize;
    let offset = match skip {
        0 => 0,
        n => outer.match_indices('\n').nth(n - 1)?.0 + 1,
    };
    outer[offset..].starts_with(inner).then_some(offset as u64)
}

impl TextsOut {
    fn place(&self, text: &ChunkText) -> TextAt {
        let at = TextAt {
            start: self.next.get(),
            len: text.as_str().len() as u64,
        };
        self.next.set(at.start + at.len);
        at
    }

    /// The image's chunks of one file, their texts placed.
    fn place_file<'a>(&self, chunks: &'a [CodeChunk]) -> impl Iterator<Item = ImageChunk<&'a str>> {
        let mut root: Option<(&CodeChunk, TextAt)> = None;
        chunks.iter().map(move |c| {
            let sources = Sources::of(root.map(|(r, _)| r), c);
            let full_source = match (sources.in_root, root) {
                (Some(offset), Some((_, at))) => TextAt {
                    start: at.start + offset,
                    len: c.full_source.as_str().len() as u64,
                },
                _ => self.place(&c.full_source),
            };
            let embedding_text = match sources.embeds_source {
                true => full_source,
                false => self.place(&c.embedding_text),
            };
            if c.depth == 0 {
                root = Some((c, full_source));
            }
            ImageChunk::of(c, full_source, embedding_text)
        })
    }

    /// Writes the texts [`TextsOut::place_file`] placed, in its order.
    fn write(files: &[ProjectFile], out: &mut impl Write) -> std::io::Result<()> {
        for file in files {
            Self::write_file(&file.chunks, out)?;
        }
        Ok(())
    }

    /// Writes the texts of one file's chunks that [`TextsOut::place_file`] placed new.
    fn write_file(chunks: &[CodeChunk], out: &mut impl Write) -> std::io::Result<()> {
        let mut root = None;
        for chunk in chunks {
            let sources = Sources::of(root, chunk);
            if sources.in_root.is_none() {
                out.write_all(chunk.full_source.as_str().as_bytes())?;
            }
            if !sources.embeds_source {
                out.write_all(chunk.embedding_text.as_str().as_bytes())?;
            }
            if chunk.depth == 0 {
                root = Some(chunk);
            }
        }
        Ok(())
    }
}

impl<'a> ImageChunk<&'a str> {
    fn of(c: &'a CodeChunk, full_source: TextAt, embedding_text: TextAt) -> Self {
        ImageChunk {
            id: &c.id,
            node_kind: c.node_kind,
            name: &c.name,
            naming: c.naming,
            parent_name: c.parent_name.as_deref(),
            parent_chunk_id: c.parent_chunk_id.as_deref(),
            child_chunk_ids: c.child_chunk_ids.iter().map(String::as_str).collect(),
            depth: c.depth,
            signature: &c.signature,
            full_source,
            start_line: c.start_line,
            end_line: c.end_line,
            span: c.span,
            symbol: c.symbol,
            jsdoc: c.jsdoc.as_deref(),
            relevant_imports: c.relevant_imports.iter().map(String::as_str).collect(),
            embedding_text,
            breadcrumb: &c.breadcrumb,
        }
    }
}

impl ImageChunk<String> {
    /// The chunk, its texts sliced from `texts`, the image's texts section; `None` when
    /// they lie outside it.
    fn into_chunk(self, relative_path: &str, file_path: &str, texts: &Bytes) -> Option<CodeChunk> {
        let text = |at: TextAt| {
            let start = usize::try_from(at.start).ok()?;
            let end = start.checked_add(usize::try_from(at.len).ok()?)?;
            (end <= texts.len()).then(|| ChunkText::shared(texts.slice(start..end)))
        };
        Some(CodeChunk {
            id: self.id,
            file_path: file_path.to_string(),
            relative_path: relative_path.to_string(),
            node_kind: self.node_kind,
            name: self.name,
            naming: self.naming,
            parent_name: self.parent_name,
            parent_chunk_id: self.parent_chunk_id,
            child_chunk_ids: self.child_chunk_ids,
            depth: self.depth,
            signature: self.signature,
            full_source: text(self.full_source)?,
            start_line: self.start_line,
            end_line: self.end_line,
            span: self.span,
            symbol: self.symbol,
            jsdoc: self.jsdoc,
            relevant_imports: self.relevant_imports,
            embedding_text: text(self.embedding_text)?,
            breadcrumb: self.breadcrumb,
        })
    }
}

/// Module configurations as a sync stamps them: path → (mtime in ns, size).
pub(super) type ConfigStamps = HashMap<String, (i64, u64)>;

/// One file of the image's files section, as read: its path and its chunks.
type ImageFile = (String, Vec<ImageChunk<String>>);

/// The image's second section as written: the files' chunks are serialised one by one,
/// never gathered. It is read field by field ([`decode_files`]), each file turned into a
/// [`ProjectFile`] as soon as it is read.
#[derive(Serialize)]
struct FilesOut<'a> {
    /// `None` when the project was made by a handle that had not walked yet: its links'
    /// configurations are unknown.
    module_configs: Option<&'a ConfigStamps>,
    files: ChunksOf<'a>,
    names: &'a NameIndex,
}

/// The files' chunks, their texts placed in the texts section as they are serialised.
struct ChunksOf<'a>(&'a [ProjectFile], TextsOut);

impl Serialize for ChunksOf<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Chunks<'a>(&'a [CodeChunk], &'a TextsOut);
        impl Serialize for Chunks<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.1.place_file(self.0))
            }
        }
        serializer.collect_seq(
            self.0
                .iter()
                .map(|f| (f.relative_path.as_str(), Chunks(&f.chunks, &self.1))),
        )
    }
}

/// What an image gave: the project's parts, and the configurations its links assume.
pub(super) struct Loaded {
    pub(super) files: Vec<ProjectFile>,
    pub(super) graph: ProjectGraph,
    pub(super) names: NameIndex,
    pub(super) module_configs: Option<ConfigStamps>,
}

/// Writes the image of a project in the state `digest` names, replacing the one there
/// (written beside it, then renamed: a reader sees the old image or the new one). The
/// sections stream to the file; nothing is encoded in memory first.
pub(super) fn write(
    dir: &Path,
    root: &Path,
    digest: &[u8; 32],
    graph: &ProjectGraph,
    files: &[ProjectFile],
    names: &NameIndex,
    module_configs: Option<&ConfigStamps>,
) -> std::io::Result<()> {
    let files = FilesOut {
        module_configs,
        files: ChunksOf(files, TextsOut::default()),
        names,
    };
    remove_abandoned(dir);
    let temporary = dir.join(format!("{FILE_NAME}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut out = BufWriter::new(std::fs::File::create(&temporary)?);
        out.write_all(MAGIC)?;
        out.write_all(digest)?;
        section(&mut out, |out| {
            out.write_all(root.to_string_lossy().as_bytes())
        })?;
        section(&mut out, |out| graph.write_linked(out))?;
        section(&mut out, |out| {
            postcard::to_io(&files, out)
                .map(drop)
                .map_err(std::io::Error::other)
        })?;
        section(&mut out, |out| TextsOut::write(files.files.0, out))?;
        // Not synced to the disk: a cache lost to a crash is only read from the index again
        // (an image cut short does not read).
        out.flush()?;
        drop(out);
        std::fs::rename(&temporary, dir.join(FILE_NAME))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// An image being written that has not changed for this long was abandoned by a killed
/// writer: a save takes well under a second, even on babel's 61 MB.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the images killed writers left half written in `dir`.
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let abandoned = || {
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some(modified.elapsed().ok()? > ABANDONED_AFTER)
        };
        if name.starts_with(FILE_NAME) && name.ends_with(".tmp") && abandoned() == Some(true) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes a section: its length (a little-endian u64, filled in once known), then what
/// `write` writes.
fn section(
    out: &mut BufWriter<std::fs::File>,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let at = out.stream_position()?;
    out.write_all(&0u64.to_le_bytes())?;
    write(out)?;
    let end = out.stream_position()?;
    out.seek(SeekFrom::Start(at))?;
    out.write_all(&(end - at - 8).to_le_bytes())?;
    out.seek(SeekFrom::Start(end))?;
    Ok(())
}

/// The mapped image as the owner of the [`Bytes`] sliced from it, kept beside them so that
/// [`read`] can advise the kernel about its pages.
struct SharedMap(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Why an image was not used.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unused {
    #[error("no image ({0})")]
    Missing(std::io::Error),
    #[error("the image is of another index state")]
    OtherState,
    #[error("the image does not read: {0}")]
    Damaged(String),
}

/// The project in `dir`'s image, if the image is of the index state `digest` names.
pub(super) fn read(dir: &Path, root: &Path, digest: &[u8; 32]) -> Result<Loaded, Unused> {
    let file = std::fs::File::open(dir.join(FILE_NAME)).map_err(Unused::Missing)?;
    // SAFETY: an image is never written in place: each is written under another name and
    // renamed over the last, so the file mapped here does not change while the project
    // holds it (an unlinked file stays readable while mapped). Mapped, its pages are the
    // page cache's: reading it copies nothing, and a page nobody reads is never loaded.
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(Unused::Missing)?);
    let image = Bytes::from_owner(SharedMap(Arc::clone(&map)));
    let bytes: &[u8] = &image;
    let damaged = |what: &str| Unused::Damaged(what.to_string());
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| damaged("not an image of this version"))?;
    let (stamp, rest) = rest
        .split_first_chunk::<32>()
        .ok_or_else(|| damaged("truncated"))?;
    let (linked_under, rest) = split_section(rest).ok_or_else(|| damaged("truncated"))?;
    // Resolved paths are absolute: an image made in another checkout of a shared index
    // is of another state too.
    if stamp != digest || linked_under != root.to_string_lossy().as_bytes() {
        return Err(Unused::OtherState);
    }
    let (graph_bytes, rest) = split_section(rest).ok_or_else(|| damaged("truncated"))?;
    let (files_bytes, rest) = split_section(rest).ok_or_else(|| damaged("truncated"))?;
    let (texts, rest) = split_section(rest).ok_or_else(|| damaged("truncated"))?;
    if !rest.is_empty() {
        return Err(damaged("trailing bytes"));
    }
    // The graph and the files decode side by side.
    let started = std::time::Instant::now();
    let (graph, files) = std::thread::scope(|scope| {
        let graph = scope.spawn(|| {
            let graph = ProjectGraph::decode_linked(root, image.slice_ref(graph_bytes));
            (graph, started.elapsed())
        });
        let files = decode_files(root, files_bytes, &image.slice_ref(texts));
        let files_decoded = started.elapsed();
        let (graph, graph_decoded) = graph
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        tracing::debug!(?graph_decoded, ?files_decoded, "project image decoded");
        (graph, files)
    });
    // What was decoded is in the heap now; the pages it was read from are given back to
    // the page cache, so the process holds only the pages of the facts and texts it reads
    // from here on, each mapped again when first read.
    // SAFETY: the map is a shared, read-only mapping of a file never written in place (see
    // above): after MADV_DONTNEED a read maps the same page-cache pages again, so no slice
    // of it sees other bytes.
    if let Err(e) = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) } {
        tracing::debug!("the decoded image's pages stay mapped: {e}");
    }
    let graph = graph.map_err(Unused::Damaged)?;
    let (files, names, module_configs) = files?;
    Ok(Loaded {
        files,
        graph,
        names,
        module_configs,
    })
}

/// The section at the start of `bytes` (a little-endian u64 length, then that many bytes)
/// and what follows it.
fn split_section(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

type DecodedFiles = (Vec<ProjectFile>, NameIndex, Option<ConfigStamps>);

/// The files section `section`, its chunks' texts left in `texts`, the texts section.
fn decode_files(root: &Path, section: &[u8], texts: &Bytes) -> Result<DecodedFiles, Unused> {
    fn take<'a, T: Deserialize<'a>>(bytes: &mut &'a [u8]) -> Result<T, Unused> {
        let (value, rest) =
            postcard::take_from_bytes(bytes).map_err(|e| Unused::Damaged(e.to_string()))?;
        *bytes = rest;
        Ok(value)
    }
    // The fields of `FilesOut` in order; postcard writes a sequence as its length (a
    // varint, as a `usize` is) and then its elements. Each file becomes a `ProjectFile` as
    // it is read, so all the files' chunks are never held twice.
    let mut bytes: &[u8] = section;
    let module_configs: Option<ConfigStamps> = take(&mut bytes)?;
    let count: usize = take(&mut bytes)?;
    // A damaged count must not reserve memory it does not describe.
    let mut files = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let (relative_path, chunks): ImageFile = take(&mut bytes)?;
        let mut file = ProjectFile::new(root, relative_path, Vec::new(), None);
        let file_path = file.abs.to_string_lossy().into_owned();
        file.chunks = chunks
            .into_iter()
            .map(|c| c.into_chunk(&file.relative_path, &file_path, texts))
            .collect::<Option<_>>()
            .ok_or_else(|| Unused::Damaged("a chunk's text outside the texts".into()))?;
        files.push(file);
    }
    let names: NameIndex = take(&mut bytes)?;
    if !bytes.is_empty() {
        return Err(Unused::Damaged("trailing bytes in the files".into()));
    }
    let sorted = files.is_sorted_by(|a, b| a.relative_path < b.relative_path);
    if !sorted || !names.fits(&files) {
        return Err(Unused::Damaged(
            "files out of order, or names pointing past them".into(),
        ));
    }
    Ok((files, names, module_configs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each chunk's texts read back from where they were placed, though a nested chunk's
    /// source and an embedding text that is the whole source are not written again.
    #[test]
    fn texts_are_written_once_and_read_back_whole() {
        let source = "import { x } from './x';\n\nexport class A {\n  m() {\n    return x;\n  }\n\n  n() {\n    return function inner() {\n      return 1;\n    };\n  }\n}\n\nexport const f = () => x;\n";
        let parsed = codectx_parser::parse_source("src/a.ts", source);
        let chunks = codectx_chunker::chunk_file(&parsed, source, "/r/src/a.ts");
        assert!(chunks.iter().any(|c| c.depth > 0), "{chunks:?}");
        let texts = TextsOut::default();
        let placed: Vec<(TextAt, TextAt)> = texts
            .place_file(&chunks)
            .map(|c| (c.full_source, c.embedding_text))
            .collect();
        let mut written = Vec::new();
        TextsOut::write_file(&chunks, &mut written).unwrap();
        assert_eq!(written.len() as u64, texts.next.get());
        let read = |at: TextAt| {
            std::str::from_utf8(&written[at.start as usize..(at.start + at.len) as usize]).unwrap()
        };
        for (chunk, (full, embedding)) in chunks.iter().zip(placed) {
            assert_eq!(read(full), chunk.full_source.as_str(), "{}", chunk.name);
            assert_eq!(
                read(embedding),
                chunk.embedding_text.as_str(),
                "{}",
                chunk.name
            );
        }
        let every_text: usize = chunks
            .iter()
            .map(|c| c.full_source.len() + c.embedding_text.len())
            .sum();
        assert!(
            written.len() * 2 < every_text,
            "{} of {every_text}",
            written.len()
        );
    }
}
