//! Parses shared by content: the chunks and graph facts of a file version, kept once for
//! every index of one repository. A new worktree, or a branch switch to a file version any
//! index of the repository parsed before, reads them instead of parsing.
//!
//! What an index holds is not copied here while it holds it. A first build adds nothing:
//! its rows hold every version it parsed, and a worktree's index starts as a copy of them
//! (`clone.rs`). A version is added when an index replaces it, read back from its rows, and
//! later parses as they are made. (A new clone's first sync replaces its seed's rows: the
//! seed adds those versions when it replaces them itself.) On vite, the first build's
//! entries were 2.6 MB beside a 12.9 MB index.
//!
//! An entry is named by what its parse depends on: the file's content (SHA-256), its
//! relative path (the language, the chunk ids and the facts' imports hang on it), and the
//! extractor (this build's [`FORMAT`](crate::store::FORMAT), the graph's
//! [`FACTS_VERSION`] and the crate version). So an entry holds wherever and whenever it is
//! read, and an index rebuilt for a new format starts a new set of names.
//!
//! A sync's new entries go into one pack file, appended by the parse workers as they go:
//! the entries, then an index of their names and places. (A file per entry cost a tenth of
//! vite's cold index in file creation alone.) A pack is written to a temporary file and
//! renamed into place, so a reader sees a whole pack or none. Readers list the packs at
//! each sync and read an entry by its offset.
//!
//! The cache is advisory. An entry that cannot be read or decoded is a miss, a failed write
//! is skipped, and either costs a parse, never a sync.

use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use codectx_chunker::CodeChunk;
use codectx_graph::facts::FACTS_VERSION;
use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use crate::process::hex;

/// The cache's directory inside the repository's common git directory. The layout's
/// version is part of it, so another layout starts beside this one (v2: compressed
/// entries; v3: chunks without their ids, an embedding text that is the whole text left
/// out; v4: an entry compressed against its file's previous version).
pub(crate) const REPOSITORY_DIR: [&str; 3] = ["codectx", "parsed", "v4"];

/// Layouts an earlier version wrote beside [`REPOSITORY_DIR`]: removed at a pack's upkeep.
const EARLIER_LAYOUTS: [&str; 3] = ["v1", "v2", "v3"];

/// An entry's first byte: its frame stands alone.
const WHOLE: u8 = 0;
/// An entry's first byte: the key of a whole entry follows, whose content its frame was
/// compressed against.
const AGAINST: u8 = 1;

/// Packs larger than this in all lose those used longest ago: about two full versions of
/// a 17,500-file repository (babel).
const MAX_BYTES: u64 = 1 << 30;

/// What one handle writes between two size checks.
const CHECK_EVERY_BYTES: u64 = MAX_BYTES / 16;

/// Packs of fewer entries than this are merged once there are [`MERGE_FROM_PACKS`] of
/// them: a watching server's syncs parse a file or two each.
const SMALL_PACK_ENTRIES: u32 = 64;
const MERGE_FROM_PACKS: usize = 32;

/// A pack's first and last bytes, so a file of anything else is skipped.
const MAGIC: &[u8; 8] = b"ctxpack1";
const PACK_EXTENSION: &str = "pack";

/// zstd's level for an entry. At the fastest level zstd finds few of a base's matches: on
/// vite's month of ten commits, the 444 entries compressed against another took 2.5 MB at
/// level 1, 1.4 MB at level 3 and 1.0 MB at level 9, at about half a millisecond each
/// (entries standing alone: 10% less than at level 1). A first build, which would write
/// thousands, writes none (`PackWriter::add_replaced`).
const ENTRY_COMPRESSION: i32 = 9;

/// An entry's name: 128 bits of SHA-256.
pub(crate) type Key = [u8; 16];

/// One index record: the name, the entry's offset in the pack and its length.
const RECORD_BYTES: usize = 16 + 8 + 8;
/// A pack's last bytes: its entry count, where its records start, and [`MAGIC`].
const TRAILER_BYTES: usize = 4 + 8 + 8;

/// What a parse of one file version gave: what the sync needs of it.
pub(crate) struct SharedParse {
    /// The parser recovered from syntax errors.
    pub recovered: bool,
    /// The graph facts, encoded ([`codectx_graph::facts::FileFacts::encode`]).
    pub facts: Vec<u8>,
    /// The chunks, with `file_path` as the reading checkout places the file.
    pub chunks: Vec<CodeChunk>,
}

pub(crate) struct ParseCache {
    dir: PathBuf,
    /// Where each known entry lies, as of the last [`ParseCache::refresh`] and this
    /// handle's own packs.
    index: Mutex<PackIndex>,
    /// Bytes this handle wrote since it last checked the cache's size.
    written: AtomicU64,
    /// Packs this sync read an entry from: marked used at its end, so that the size bound
    /// removes the packs used longest ago, not the oldest written.
    used: Mutex<HashSet<Arc<PathBuf>>>,
}

#[derive(Default)]
struct PackIndex {
    /// The packs read, by file name.
    packs: HashSet<String>,
    entries: HashMap<Key, Slot>,
}

#[derive(Clone)]
struct Slot {
    pack: Arc<PathBuf>,
    offset: u64,
    len: u64,
}

/// One sync's new pack, filled by the parse workers ([`PackWriter::add`]) and put in place
/// by [`PackWriter::finish`].
pub(crate) struct PackWriter<'c> {
    cache: &'c ParseCache,
    pack: Mutex<Option<OpenPack>>,
}

/// A pack being written: its temporary file (created at the first entry), where the next
/// entry goes, and the records so far.
struct OpenPack {
    file: BufWriter<NamedTempFile>,
    offset: u64,
    records: Vec<(Key, u64, u64)>,
}

/// Locks `mutex`, whose data stays whole even if a holder panicked (an index can be read
/// again; a pack is only renamed into place once finished).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl ParseCache {
    pub(crate) fn new(dir: PathBuf) -> Self {
        ParseCache {
            dir,
            index: Mutex::default(),
            written: AtomicU64::new(0),
            used: Mutex::default(),
        }
    }

    /// The entry's name for `relative_path` holding content `content_hash`.
    pub(crate) fn key(relative_path: &str, content_hash: &str) -> Key {
        let mut hasher = Sha256::new();
        for part in [
            crate::store::FORMAT,
            &FACTS_VERSION.to_string(),
            env!("CARGO_PKG_VERSION"),
            relative_path,
            content_hash,
        ] {
            hasher.update(part.as_bytes());
            hasher.update([0]);
        }
        hasher.finalize()[..16]
            .try_into()
            .expect("SHA-256 is longer than 16 bytes")
    }

    /// Reads the index of every pack written since the last refresh (by any process).
    /// Called once per sync, before its lookups.
    pub(crate) fn refresh(&self) {
        let listed: Vec<PathBuf> = pack_files(&self.dir);
        let names: HashSet<String> = listed
            .iter()
            .filter_map(|p| Some(p.file_name()?.to_str()?.to_string()))
            .collect();
        let mut index = lock(&self.index);
        if !index.packs.is_subset(&names) {
            // Packs go only when merged or over the size bound: rare enough to read all
            // again, so that an entry another pack also holds is found there.
            *index = PackIndex::default();
        }
        for path in listed {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !index.packs.insert(name.to_string()) {
                continue;
            }
            let pack = Arc::new(path.clone());
            match read_records(&path) {
                Ok(records) => {
                    for (key, offset, len) in records {
                        let slot = Slot {
                            pack: pack.clone(),
                            offset,
                            len,
                        };
                        index.entries.entry(key).or_insert(slot);
                    }
                }
                Err(e) => tracing::debug!("shared parses {} skipped: {e}", path.display()),
            }
        }
    }

    /// Whether the cache holds an entry under `key`, in a pack this handle has read or put
    /// in place (not this sync's, before its end).
    pub(crate) fn has(&self, key: &Key) -> bool {
        lock(&self.index).entries.contains_key(key)
    }

    /// The parse of `source` stored under `key`, with its chunks placed at `file_path`;
    /// `None` when there is none or it cannot be read.
    pub(crate) fn get(&self, key: &Key, file_path: &str, source: &str) -> Option<SharedParse> {
        let slot = lock(&self.index).entries.get(key).cloned()?;
        let parse = read_slot(&slot, slot.len).ok().and_then(|bytes| {
            let raw = match bytes.split_first()? {
                (&WHOLE, frame) => zstd::stream::decode_all(frame).ok()?,
                (&AGAINST, rest) => {
                    let (base, frame) = rest.split_first_chunk::<16>()?;
                    let base = self.whole_entry(base)?;
                    let mut decoder = zstd::stream::Decoder::with_dictionary(frame, &base).ok()?;
                    let mut raw = Vec::new();
                    decoder.read_to_end(&mut raw).ok()?;
                    raw
                }
                _ => return None,
            };
            let mut parse = decode(&raw)?;
            // Chunks are whole lines: each one's text is the source's on its lines.
            let lines = codectx_parser::LineIndex::new(source);
            for chunk in &mut parse.chunks {
                if !(1..=chunk.end_line).contains(&chunk.start_line)
                    || chunk.end_line > lines.line_count()
                {
                    return None;
                }
                chunk.full_source = lines
                    .lines_text(source, chunk.start_line, chunk.end_line)
                    .into();
                // Left out when it was the whole text (`PackWriter::add`); a chunk's text
                // is never empty, as it holds its lines.
                if chunk.embedding_text.is_empty() {
                    chunk.embedding_text = chunk.full_source.clone();
                }
                chunk.file_path = file_path.to_string();
            }
            Some(parse)
        });
        match &parse {
            Some(_) => {
                lock(&self.used).insert(slot.pack);
            }
            None => tracing::debug!("unreadable shared parse in {}", slot.pack.display()),
        }
        parse
    }

    /// The content of the whole entry `key` (not one compressed against another), marking
    /// its pack used; `None` when there is none.
    fn whole_entry(&self, key: &Key) -> Option<Vec<u8>> {
        let slot = lock(&self.index).entries.get(key).cloned()?;
        let bytes = read_slot(&slot, slot.len).ok()?;
        let raw = match bytes.split_first()? {
            (&WHOLE, frame) => zstd::stream::decode_all(frame).ok()?,
            _ => return None,
        };
        lock(&self.used).insert(slot.pack);
        Some(raw)
    }

    /// The whole entry a new version of a file is compressed against: the entry of its
    /// previous version `previous`, or the one that entry was compressed against, so that
    /// reading an entry reads at most one other. Its key and content.
    fn base_for(&self, previous: &Key) -> Option<(Key, Vec<u8>)> {
        let slot = lock(&self.index).entries.get(previous).cloned()?;
        // Its kind and, compressed against another, that one's key.
        let head = read_slot(&slot, 17).ok()?;
        let base = match head.split_first()? {
            (&WHOLE, _) => *previous,
            (&AGAINST, rest) => *rest.first_chunk::<16>()?,
            _ => return None,
        };
        Some((base, self.whole_entry(&base)?))
    }

    /// Marks the packs this sync read from as used now (their modification time, which the
    /// size bound goes by). A pack gone meanwhile is skipped.
    fn mark_used(&self) {
        let used = std::mem::take(&mut *lock(&self.used));
        let now = std::time::SystemTime::now();
        for pack in used {
            let marked = std::fs::File::options()
                .write(true)
                .open(&*pack)
                .and_then(|file| file.set_modified(now));
            if let Err(e) = marked {
                tracing::debug!("shared parses {} not marked used: {e}", pack.display());
            }
        }
    }

    /// A writer of one sync's new entries.
    pub(crate) fn writer(&self) -> PackWriter<'_> {
        PackWriter {
            cache: self,
            pack: Mutex::new(None),
        }
    }

    /// After a pack was added: keeps the packs few and their size bounded.
    fn upkeep(&self, added: u64) {
        self.written.fetch_add(added, Ordering::Relaxed);
        if let Some(parent) = self.dir.parent() {
            for layout in EARLIER_LAYOUTS {
                // Another process may read an entry there still: a miss for it.
                let _ = std::fs::remove_dir_all(parent.join(layout));
            }
        }
        self.merge_small_packs();
        if self.written.load(Ordering::Relaxed) >= CHECK_EVERY_BYTES {
            self.written.store(0, Ordering::Relaxed);
            let removed = remove_oldest(&self.dir, MAX_BYTES, MAX_BYTES / 4 * 3);
            if removed > 0 {
                tracing::debug!("removed {removed} old packs of shared parses");
                self.refresh();
            }
        }
    }

    /// Once [`MERGE_FROM_PACKS`] small packs lie about, writes their entries as one pack
    /// and removes them. Another process may still read one of them: its entry is a miss.
    fn merge_small_packs(&self) {
        let small: Vec<PathBuf> = pack_files(&self.dir)
            .into_iter()
            .filter(|path| pack_entries(path).is_some_and(|n| n < SMALL_PACK_ENTRIES))
            .collect();
        if small.len() < MERGE_FROM_PACKS {
            return;
        }
        let writer = self.writer();
        let mut merged = HashSet::new();
        for path in &small {
            let (Ok(records), Ok(bytes)) = (read_records(path), std::fs::read(path)) else {
                continue;
            };
            for (key, offset, len) in records {
                // `read_records` checked every entry lies inside the pack.
                let entry = &bytes[offset as usize..(offset + len) as usize];
                if merged.insert(key) {
                    writer.append(key, |out| out.write_all(entry));
                }
            }
        }
        if let Ok(Some((merged, _))) = writer.put_in_place() {
            // The merged pack is named by its entries: when one small pack held them all,
            // it is that pack, and stays.
            for path in small.iter().filter(|p| **p != merged) {
                let _ = std::fs::remove_file(path);
            }
            self.refresh();
        }
    }
}

impl PackWriter<'_> {
    /// The cache the pack goes to (for lookups).
    pub(crate) fn cache(&self) -> &ParseCache {
        self.cache
    }

    /// Adds a parse's entry, unless the cache has one under `key`. What a reader makes
    /// again is left out: the chunks' text, as the file holds it (`full_source`, and an
    /// `embedding_text` that is the whole of it: a chunk with no child collapsed, most of
    /// them), and their ids, which hash their fields and their parent's id (random digits
    /// that do not compress: a tenth of vite's entries). Each chunk's parent is kept by
    /// its place instead. What is taken out while the chunks are encoded is put back.
    ///
    /// An entry is compressed against its file's previous version (`previous`, the entry of
    /// the content the index held) when the cache has it: a file that changes is mostly
    /// the same text (on vite's month of ten commits, the entries took 30% less).
    pub(crate) fn add(
        &self,
        key: Key,
        previous: Option<Key>,
        recovered: bool,
        facts: &[u8],
        chunks: &mut [CodeChunk],
    ) {
        if self.cache.has(&key) {
            return;
        }
        let base = previous.and_then(|previous| self.cache.base_for(&previous));
        self.put(key, base.as_ref(), recovered, facts, chunks);
    }

    /// Adds the entry of a version an index replaces, read back from its rows (the caller
    /// found no entry of it), and then the entry of the version that replaces it (`next`),
    /// compressed against it. A first
    /// build shares no entry (its rows hold every version it parsed, and a worktree's
    /// index starts as a copy of them): a version is shared once it leaves the index.
    pub(crate) fn add_replaced(
        &self,
        replaced: (Key, &[u8], &mut [CodeChunk]),
        next: Option<(Key, bool, &[u8], &mut [CodeChunk])>,
    ) {
        let (key, facts, chunks) = replaced;
        let base = self
            .put(key, None, false, facts, chunks)
            .map(|content| (key, content));
        if let Some((key, recovered, facts, chunks)) = next
            && !self.cache.has(&key)
        {
            self.put(key, base.as_ref(), recovered, facts, chunks);
        }
    }

    /// Encodes and appends an entry, compressed against `base` when given; returns its
    /// content, the dictionary of an entry compressed against it.
    fn put(
        &self,
        key: Key,
        base: Option<&(Key, Vec<u8>)>,
        recovered: bool,
        facts: &[u8],
        chunks: &mut [CodeChunk],
    ) -> Option<Vec<u8>> {
        let parents = parent_places(chunks);
        let taken: Vec<_> = chunks
            .iter_mut()
            .map(|c| {
                let whole = c.embedding_text.as_str() == c.full_source.as_str();
                let embedding = whole.then(|| std::mem::take(&mut c.embedding_text));
                let family = (
                    std::mem::take(&mut c.id),
                    c.parent_chunk_id.take(),
                    std::mem::take(&mut c.child_chunk_ids),
                );
                (std::mem::take(&mut c.full_source), embedding, family)
            })
            .collect();
        let content = content(recovered, facts, &parents, chunks);
        for (chunk, (text, embedding, (id, parent, children))) in chunks.iter_mut().zip(taken) {
            chunk.full_source = text;
            if let Some(embedding) = embedding {
                chunk.embedding_text = embedding;
            }
            (chunk.id, chunk.parent_chunk_id, chunk.child_chunk_ids) = (id, parent, children);
        }
        match content.and_then(|content| Ok((compress(&content, base)?, content))) {
            Ok((entry, content)) => {
                self.append(key, |out| out.write_all(&entry));
                Some(content)
            }
            Err(e) => {
                tracing::debug!("shared parse not encoded: {e}");
                None
            }
        }
    }

    /// Appends an entry, streamed into the pack by `write` under the pack's lock: no copy
    /// of it is held (a buffer per worker cost babel's cold index 38 MiB of peak memory).
    /// A failed write abandons the pack: a miss for each of its entries later, never an
    /// error. So does a panic inside `write` (the sync skips that file and goes on): the
    /// bytes it wrote would otherwise shift every later entry from its recorded offset.
    fn append(&self, key: Key, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
        let mut pack = lock(&self.pack);
        if pack.is_none() {
            match OpenPack::create(&self.cache.dir) {
                Ok(open) => *pack = Some(open),
                Err(e) => {
                    tracing::debug!("no pack of shared parses: {e}");
                    return;
                }
            }
        }
        let Some(open) = pack.as_mut() else { return };
        let mut out = Counted {
            inner: &mut open.file,
            bytes: 0,
        };
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(&mut out)));
        let written = match written {
            Ok(written) => written,
            Err(panic) => {
                // Never put in place: the temporary file goes with it.
                *pack = None;
                drop(pack);
                std::panic::resume_unwind(panic)
            }
        };
        match written {
            Ok(()) => {
                let len = out.bytes;
                open.records.push((key, open.offset, len));
                open.offset += len;
            }
            Err(e) => {
                tracing::debug!("pack of shared parses abandoned: {e}");
                // Never put in place: the temporary file goes with it.
                *pack = None;
            }
        }
    }

    /// Puts the pack in place, marks the packs read from as used, then the cache's upkeep.
    pub(crate) fn finish(self) {
        let cache = self.cache;
        cache.mark_used();
        match self.put_in_place() {
            Ok(Some((_, bytes))) => cache.upkeep(bytes),
            Ok(None) => {}
            Err(e) => tracing::debug!("shared parses not written: {e}"),
        }
    }

    /// Writes the records and the trailer, names the pack by its entries' names (two
    /// writers of the same entries write the same file) and renames it into place. Returns
    /// its path and size; `None` when it holds nothing.
    fn put_in_place(self) -> std::io::Result<Option<(PathBuf, u64)>> {
        let cache = self.cache;
        let Some(mut open) = self.pack.into_inner().unwrap_or_else(|e| e.into_inner()) else {
            return Ok(None);
        };
        if open.records.is_empty() {
            return Ok(None);
        }
        open.records.sort_by_key(|r| r.0);
        let count = u32::try_from(open.records.len()).map_err(std::io::Error::other)?;
        let mut name = Sha256::new();
        for (key, offset, len) in &open.records {
            open.file.write_all(key)?;
            open.file.write_all(&offset.to_le_bytes())?;
            open.file.write_all(&len.to_le_bytes())?;
            name.update(key);
        }
        open.file.write_all(&count.to_le_bytes())?;
        open.file.write_all(&open.offset.to_le_bytes())?;
        open.file.write_all(MAGIC)?;
        let file = open.file.into_inner().map_err(|e| e.into_error())?;
        let path = cache
            .dir
            .join(format!("{}.{PACK_EXTENSION}", hex(&name.finalize()[..16])));
        file.persist(&path).map_err(|e| e.error)?;
        let size = open.offset + (open.records.len() * RECORD_BYTES + TRAILER_BYTES) as u64;

        let pack = Arc::new(path);
        let mut index = lock(&cache.index);
        if let Some(name) = pack.file_name().and_then(|n| n.to_str()) {
            index.packs.insert(name.to_string());
        }
        for (key, offset, len) in open.records {
            let slot = Slot {
                pack: pack.clone(),
                offset,
                len,
            };
            index.entries.insert(key, slot);
        }
        Ok(Some((pack.to_path_buf(), size)))
    }
}

/// A new pack's file in `dir`, readable by everyone the umask allows, as the files git
/// writes are: tempfile's own 0600 would keep another user of the repository from sharing
/// its parses.
fn pack_file_in(dir: &Path) -> std::io::Result<NamedTempFile> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    builder.tempfile_in(dir)
}

impl OpenPack {
    fn create(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut file = BufWriter::new(pack_file_in(dir)?);
        file.write_all(MAGIC)?;
        Ok(OpenPack {
            file,
            offset: MAGIC.len() as u64,
            records: Vec::new(),
        })
    }
}

/// Each chunk's parent as its place among `chunks` (`NO_PARENT`: none): the nearest
/// earlier chunk with the parent's id, as the store's layout finds it.
fn parent_places(chunks: &[CodeChunk]) -> Vec<u32> {
    let mut latest: HashMap<&str, u32> = HashMap::with_capacity(chunks.len());
    chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let parent = chunk
                .parent_chunk_id
                .as_deref()
                .and_then(|p| latest.get(p).copied())
                .unwrap_or(NO_PARENT);
            latest.insert(&chunk.id, i as u32);
            parent
        })
        .collect()
}

/// A chunk with no parent, in an entry's list of parents.
const NO_PARENT: u32 = u32::MAX;

/// An entry's content: the recovered flag, the facts' length (u64, little-endian), the
/// facts, the count of chunks and each one's parent (u32s), then the chunks as JSON (their
/// serde form skips default fields, which a binary format would misread). An entry is
/// [`WHOLE`] and one zstd frame of it, or [`AGAINST`], a whole entry's key and a frame
/// compressed against that entry's content ([`compress`]). It is built by the encoding
/// worker, off the pack's lock; compression takes vite's entries to about a fifth.
fn content(
    recovered: bool,
    facts: &[u8],
    parents: &[u32],
    chunks: &[CodeChunk],
) -> std::io::Result<Vec<u8>> {
    let mut out = vec![u8::from(recovered)];
    out.extend_from_slice(&(facts.len() as u64).to_le_bytes());
    out.extend_from_slice(facts);
    out.extend_from_slice(&(parents.len() as u32).to_le_bytes());
    for parent in parents {
        out.extend_from_slice(&parent.to_le_bytes());
    }
    serde_json::to_writer(&mut out, chunks)?;
    Ok(out)
}

/// An entry's bytes: its kind, and its `content` compressed alone or against `base`'s.
fn compress(content: &[u8], base: Option<&(Key, Vec<u8>)>) -> std::io::Result<Vec<u8>> {
    let mut out = match base {
        None => zstd::stream::Encoder::new(vec![WHOLE], ENTRY_COMPRESSION)?,
        Some((key, base)) => {
            let head = [&[AGAINST], key.as_slice()].concat();
            zstd::stream::Encoder::with_dictionary(head, ENTRY_COMPRESSION, base)?
        }
    };
    out.write_all(content)?;
    out.finish()
}

/// A writer that counts what goes through it: an entry's length as it is streamed.
struct Counted<'w, W> {
    inner: &'w mut W,
    bytes: u64,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// An entry's [`content`], decompressed: the chunks' ids and families made again (their
/// text is put back by [`ParseCache::get`]); `None` for anything else.
fn decode(bytes: &[u8]) -> Option<SharedParse> {
    let (&recovered, rest) = bytes.split_first()?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    let (facts, rest) = (rest.get(..len)?, rest.get(len..)?);
    let (count, rest) = rest.split_first_chunk::<4>()?;
    let count = u32::from_le_bytes(*count) as usize;
    let (parents, chunks) = rest.split_at_checked(count.checked_mul(4)?)?;
    let parents: Vec<u32> = parents
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("four bytes")))
        .collect();
    let mut chunks: Vec<CodeChunk> = serde_json::from_slice(chunks).ok()?;
    if chunks.len() != count {
        return None;
    }
    // Parents come before their children; each id hashes its parent's.
    for (i, &parent) in parents.iter().enumerate() {
        let parent = match parent {
            NO_PARENT => None,
            p if (p as usize) < i => Some(p as usize),
            _ => return None,
        };
        let parent_id = parent.map(|p| chunks[p].id.clone());
        let chunk = &mut chunks[i];
        chunk.id = codectx_chunker::chunk_id_of(
            &chunk.relative_path,
            chunk.node_kind,
            &chunk.name,
            chunk.start_line,
            parent_id.as_deref(),
        );
        chunk.parent_chunk_id = parent_id;
        if let Some(p) = parent {
            let id = chunks[i].id.clone();
            chunks[p].child_chunk_ids.push(id);
        }
    }
    Some(SharedParse {
        recovered: match recovered {
            0 => false,
            1 => true,
            _ => return None,
        },
        facts: facts.to_vec(),
        chunks,
    })
}

/// The first `limit` bytes (at most) of the entry at `slot`.
fn read_slot(slot: &Slot, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(&*slot.pack)?;
    file.seek(SeekFrom::Start(slot.offset))?;
    let mut bytes = Vec::new();
    file.take(slot.len.min(limit)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A pack's records, each entry checked to lie between the pack's first bytes and its
/// records.
fn read_records(path: &Path) -> std::io::Result<Vec<(Key, u64, u64)>> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not a pack of parses");
    let mut file = std::fs::File::open(path)?;
    let (count, records_at) = trailer(&mut file).ok_or_else(bad)?;
    let mut table = vec![0u8; count as usize * RECORD_BYTES];
    file.seek(SeekFrom::Start(records_at))?;
    file.read_exact(&mut table)?;
    table
        .chunks_exact(RECORD_BYTES)
        .map(|record| {
            let key: Key = record[..16].try_into().expect("16 bytes");
            let offset = u64::from_le_bytes(record[16..24].try_into().expect("8 bytes"));
            let len = u64::from_le_bytes(record[24..].try_into().expect("8 bytes"));
            match offset.checked_add(len) {
                Some(end) if offset >= MAGIC.len() as u64 && end <= records_at => {
                    Ok((key, offset, len))
                }
                _ => Err(bad()),
            }
        })
        .collect()
}

/// A pack's entry count and where its records start, when its first bytes, its trailer
/// and its size agree.
fn trailer(file: &mut std::fs::File) -> Option<(u32, u64)> {
    let size = file.metadata().ok()?.len();
    let mut head = [0u8; MAGIC.len()];
    file.read_exact(&mut head).ok()?;
    let mut tail = [0u8; TRAILER_BYTES];
    file.seek(SeekFrom::Start(size.checked_sub(TRAILER_BYTES as u64)?))
        .ok()?;
    file.read_exact(&mut tail).ok()?;
    let count = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes"));
    let records_at = u64::from_le_bytes(tail[4..12].try_into().expect("8 bytes"));
    let records_end = records_at.checked_add(u64::from(count) * RECORD_BYTES as u64)?;
    let whole = head == *MAGIC
        && tail[12..] == *MAGIC
        && records_at >= MAGIC.len() as u64
        && records_end.checked_add(TRAILER_BYTES as u64) == Some(size);
    whole.then_some((count, records_at))
}

/// How many entries a pack holds.
fn pack_entries(path: &Path) -> Option<u32> {
    let mut file = std::fs::File::open(path).ok()?;
    trailer(&mut file).map(|(count, _)| count)
}

fn pack_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == PACK_EXTENSION))
        .collect()
}

/// Removes the packs under `dir` written or used longest ago while they hold more than `over`
/// bytes, until they hold at most `down_to`. Returns how many went.
fn remove_oldest(dir: &Path, over: u64, down_to: u64) -> usize {
    let mut packs: Vec<(std::time::SystemTime, u64, PathBuf)> = pack_files(dir)
        .into_iter()
        .filter_map(|path| {
            let meta = std::fs::metadata(&path).ok()?;
            let written = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            Some((written, meta.len(), path))
        })
        .collect();
    let mut total: u64 = packs.iter().map(|(_, len, _)| len).sum();
    if total <= over {
        return 0;
    }
    packs.sort();
    let mut removed = 0;
    for (_, len, path) in packs {
        if total <= down_to {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str =
        "export class A {\r\n  m() {\r\n    return 1;\r\n  }\r\n}\r\nexport const b = 2;";

    fn chunks() -> Vec<CodeChunk> {
        let parsed = codectx_parser::parse_source("src/a.ts", SOURCE);
        codectx_chunker::chunk_file(&parsed, SOURCE, "/x/src/a.ts")
    }

    /// A file's new version is compressed against its previous one: far smaller than the
    /// first, read back whole, and a miss once the entry it was compressed against is gone.
    /// A third version is compressed against the first too, not the second.
    #[test]
    fn a_version_is_compressed_against_the_previous_one() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParseCache::new(dir.path().to_path_buf());
        let version = |n: usize| -> String {
            (0..200)
                .map(|i| {
                    format!(
                        "export function f{i}(x: number) {{\n  return x + {};\n}}\n",
                        if i == 0 { n } else { i }
                    )
                })
                .collect()
        };
        let cut = |source: &str| {
            let parsed = codectx_parser::parse_source("src/a.ts", source);
            codectx_chunker::chunk_file(&parsed, source, "/x/src/a.ts")
        };
        let keys = [1, 2, 3].map(|n| ParseCache::key("src/a.ts", &n.to_string()));
        let sizes: Vec<u64> = (0..3usize)
            .map(|n| {
                let before = pack_files(dir.path());
                let writer = cache.writer();
                let previous = n.checked_sub(1).map(|p| keys[p]);
                writer.add(
                    keys[n],
                    previous,
                    false,
                    b"facts",
                    &mut cut(&version(n + 1)),
                );
                writer.finish();
                let new: Vec<PathBuf> = pack_files(dir.path())
                    .into_iter()
                    .filter(|p| !before.contains(p))
                    .collect();
                std::fs::metadata(&new[0]).unwrap().len()
            })
            .collect();
        assert!(sizes[1] * 2 < sizes[0], "{sizes:?}");
        let entry_head = |key: &Key| {
            let slot = lock(&cache.index).entries.get(key).cloned().unwrap();
            let bytes = std::fs::read(&*slot.pack).unwrap();
            bytes[slot.offset as usize..slot.offset as usize + 17].to_vec()
        };
        assert_eq!(entry_head(&keys[0])[0], WHOLE);
        for key in &keys[1..] {
            assert_eq!(entry_head(key)[0], AGAINST);
            assert_eq!(entry_head(key)[1..], keys[0], "against the whole entry");
        }
        for (n, key) in keys.iter().enumerate().skip(1) {
            let read = cache
                .get(key, "/x/src/a.ts", &version(n + 1))
                .expect("read back");
            assert_eq!(read.chunks, cut(&version(n + 1)));
        }
        // The first version's pack gone: the others are misses, never wrong.
        let first = lock(&cache.index).entries[&keys[0]].pack.clone();
        std::fs::remove_file(&*first).unwrap();
        let other = ParseCache::new(dir.path().to_path_buf());
        other.refresh();
        assert!(other.get(&keys[1], "/x/src/a.ts", &version(2)).is_none());
    }

    /// One sync's pack of one entry.
    fn put(cache: &ParseCache, key: Key) {
        let writer = cache.writer();
        writer.add(key, None, false, b"facts", &mut chunks());
        writer.finish();
    }

    fn reopened(dir: &Path) -> ParseCache {
        let cache = ParseCache::new(dir.to_path_buf());
        cache.refresh();
        cache
    }

    /// A pack has the mode any file written here gets, less write for others: not
    /// tempfile's 0600.
    #[cfg(unix)]
    #[test]
    fn a_pack_is_readable_as_a_plain_file_is() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = ParseCache::new(dir.path().to_path_buf());
        put(&cache, ParseCache::key("src/a.ts", "1"));
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"").unwrap();
        let packs: Vec<u32> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == PACK_EXTENSION))
            .map(|p| mode(&p))
            .collect();
        assert_eq!(packs, [mode(&plain) & 0o644]);
    }

    /// Entries are compressed: an entry of chunks is a fraction of their JSON, and a layout
    /// an earlier version wrote (uncompressed) goes at the first upkeep.
    #[test]
    fn entries_are_compressed_and_an_earlier_layout_goes() {
        let parent = tempfile::tempdir().unwrap();
        let earlier = parent.path().join(EARLIER_LAYOUTS[0]);
        std::fs::create_dir_all(&earlier).unwrap();
        std::fs::write(earlier.join("old.pack"), b"ctxpack1").unwrap();
        let dir = parent.path().join(REPOSITORY_DIR[2]);
        let cache = ParseCache::new(dir.clone());
        let mut many: Vec<CodeChunk> = std::iter::repeat_n(chunks(), 20).flatten().collect();
        for chunk in &mut many {
            chunk.full_source = Default::default();
        }
        let json = serde_json::to_vec(&many).unwrap().len();
        let writer = cache.writer();
        writer.add(
            ParseCache::key("src/a.ts", "1"),
            None,
            false,
            b"",
            &mut many,
        );
        writer.finish();
        let pack = std::fs::metadata(&pack_files(&dir)[0]).unwrap().len() as usize;
        assert!(
            pack * 4 < json,
            "pack {pack} bytes, its chunks' JSON {json}"
        );
        assert!(!earlier.exists());
        let entry = cache.get(&ParseCache::key("src/a.ts", "1"), "/y/src/a.ts", SOURCE);
        assert_eq!(entry.unwrap().chunks.len(), many.len());
    }

    #[test]
    fn an_entry_reads_back_placed_where_the_reader_has_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParseCache::new(dir.path().to_path_buf());
        let key = ParseCache::key("src/a.ts", "abc");
        assert!(cache.get(&key, "/y/src/a.ts", SOURCE).is_none());
        let mut chunks = chunks();
        assert!(chunks.len() >= 3, "{chunks:?}");
        // Both kinds of embedding text: the whole text (left out of the entry) and a
        // container's, its children collapsed (kept).
        let whole = |c: &CodeChunk| c.embedding_text.as_str() == c.full_source.as_str();
        assert!(chunks.iter().any(whole) && !chunks.iter().all(whole));
        let made = chunks.clone();
        let writer = cache.writer();
        writer.add(key, None, true, b"facts", &mut chunks);
        assert_eq!(chunks, made, "the chunks are given back whole");
        writer.finish();
        assert_eq!(pack_files(dir.path()).len(), 1);
        put(&cache, key);
        assert_eq!(pack_files(dir.path()).len(), 1, "an entry is written once");

        // Another handle (another worktree's process) finds it once it refreshes.
        let other = ParseCache::new(dir.path().to_path_buf());
        assert!(other.get(&key, "/y/src/a.ts", SOURCE).is_none());
        other.refresh();
        let read = other.get(&key, "/y/src/a.ts", SOURCE).unwrap();
        assert!(read.recovered);
        assert_eq!(read.facts, b"facts");
        assert!(read.chunks.iter().all(|c| c.file_path == "/y/src/a.ts"));
        let placed: Vec<CodeChunk> = read
            .chunks
            .into_iter()
            .map(|c| CodeChunk {
                file_path: "/x/src/a.ts".into(),
                ..c
            })
            .collect();
        assert_eq!(placed, made);
    }

    #[test]
    fn a_panic_while_an_entry_is_written_costs_only_the_entries_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParseCache::new(dir.path().to_path_buf());
        let [before, broken, after] =
            ["src/a.ts", "src/b.ts", "src/c.ts"].map(|path| ParseCache::key(path, "abc"));
        let writer = cache.writer();
        writer.add(before, None, false, b"facts", &mut chunks());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            writer.append(broken, |out| {
                out.write_all(b"half an entry")?;
                panic!("an encoder's bug")
            })
        }));
        assert!(panicked.is_err());
        writer.add(after, None, false, b"facts", &mut chunks());
        writer.finish();
        let read = reopened(dir.path());
        assert!(
            read.get(&before, "/y", SOURCE).is_none(),
            "its pack was abandoned"
        );
        assert!(read.get(&broken, "/y", SOURCE).is_none());
        let entry = read.get(&after, "/y", SOURCE).expect("a new pack holds it");
        assert_eq!(entry.facts, b"facts");
        assert_eq!(pack_files(dir.path()).len(), 1);
        let temporary = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tmp")
            })
            .count();
        assert_eq!(temporary, 0, "the abandoned pack's file is gone");
    }

    #[test]
    fn the_path_and_the_content_both_name_an_entry() {
        let key = ParseCache::key("src/a.ts", "abc");
        assert_ne!(key, ParseCache::key("src/b.ts", "abc"));
        assert_ne!(key, ParseCache::key("src/a.ts", "abd"));
        assert_eq!(key, ParseCache::key("src/a.ts", "abc"));
    }

    #[test]
    fn a_damaged_pack_or_entry_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let key = ParseCache::key("src/a.ts", "abc");
        put(&ParseCache::new(dir.path().to_path_buf()), key);
        let path = pack_files(dir.path()).pop().unwrap();
        let whole = std::fs::read(&path).unwrap();
        assert!(reopened(dir.path()).get(&key, "/y", SOURCE).is_some());
        for cut in [0, 4, MAGIC.len() + 2, whole.len() / 2, whole.len() - 1] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            assert!(
                reopened(dir.path()).get(&key, "/y", SOURCE).is_none(),
                "cut at {cut}"
            );
        }
        // An entry whose facts run past its end.
        let mut long_facts = whole.clone();
        let at = MAGIC.len() + 1;
        long_facts[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, &long_facts).unwrap();
        assert!(reopened(dir.path()).get(&key, "/y", SOURCE).is_none());
        // A record pointing past the entries.
        let mut far = whole.clone();
        let records_at = whole.len() - TRAILER_BYTES - RECORD_BYTES;
        far[records_at + 16..records_at + 24].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(&path, &far).unwrap();
        assert!(reopened(dir.path()).get(&key, "/y", SOURCE).is_none());
        // Lines outside the source (a damaged entry, or a name collision).
        std::fs::write(&path, &whole).unwrap();
        let cache = reopened(dir.path());
        assert!(cache.get(&key, "/y", "export {};").is_none());
        assert!(cache.get(&key, "/y", SOURCE).is_some());
        // A pack removed after the refresh: a miss, then forgotten at the next refresh.
        std::fs::remove_file(&path).unwrap();
        assert!(cache.get(&key, "/y", SOURCE).is_none());
        cache.refresh();
        assert!(lock(&cache.index).entries.is_empty());
    }

    #[test]
    fn small_packs_are_merged_and_keep_their_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParseCache::new(dir.path().to_path_buf());
        let keys: Vec<Key> = (0..MERGE_FROM_PACKS + 3)
            .map(|i| ParseCache::key("src/a.ts", &i.to_string()))
            .collect();
        for key in &keys {
            put(&cache, *key);
        }
        assert!(pack_files(dir.path()).len() < MERGE_FROM_PACKS);
        let other = reopened(dir.path());
        for key in &keys {
            assert!(other.get(key, "/y", SOURCE).is_some());
            assert!(cache.get(key, "/y", SOURCE).is_some());
        }
    }

    /// Small packs whose entries one of them holds all of merge into that very pack: it is
    /// not removed with the others.
    #[test]
    fn a_merge_into_a_pack_already_there_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<Key> = (0..6)
            .map(|i| ParseCache::key("src/a.ts", &i.to_string()))
            .collect();
        // The whole set first, then other subsets, each by a handle that has not seen the
        // others' packs: distinct small packs, the last of which starts the merge.
        for mask in (1u32..64).rev().take(MERGE_FROM_PACKS) {
            let cache = ParseCache::new(dir.path().to_path_buf());
            let writer = cache.writer();
            for (i, key) in keys.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    writer.add(*key, None, false, b"facts", &mut chunks());
                }
            }
            writer.finish();
        }
        assert_eq!(pack_files(dir.path()).len(), 1);
        let cache = reopened(dir.path());
        for key in &keys {
            assert!(cache.get(key, "/y", SOURCE).is_some());
        }
    }

    #[test]
    fn a_pack_read_from_counts_as_new_for_the_size_bound() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<Key> = (0..2)
            .map(|i| ParseCache::key("src/a.ts", &i.to_string()))
            .collect();
        let writer = ParseCache::new(dir.path().to_path_buf());
        let mut packs = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            put(&writer, *key);
            let path = pack_files(dir.path())
                .into_iter()
                .find(|p| !packs.contains(p))
                .unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
            file.set_modified(at).unwrap();
            packs.push(path);
        }
        // A sync that reads the older pack's entry and writes nothing.
        let cache = reopened(dir.path());
        assert!(cache.get(&keys[0], "/y", SOURCE).is_some());
        cache.writer().finish();
        let one = std::fs::metadata(&packs[0]).unwrap().len();
        assert_eq!(remove_oldest(dir.path(), one, one), 1);
        assert!(packs[0].exists() && !packs[1].exists());
    }

    #[test]
    fn the_oldest_packs_go_first_when_the_cache_is_over_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParseCache::new(dir.path().to_path_buf());
        let mut packs = Vec::new();
        for i in 0..4u64 {
            put(&cache, ParseCache::key("src/a.ts", &i.to_string()));
            let path = pack_files(dir.path())
                .into_iter()
                .find(|p| !packs.contains(p))
                .unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i);
            file.set_modified(at).unwrap();
            packs.push(path);
        }
        let one = std::fs::metadata(&packs[0]).unwrap().len();
        assert_eq!(remove_oldest(dir.path(), 5 * one, 0), 0, "under the bound");
        assert_eq!(remove_oldest(dir.path(), 3 * one, 2 * one), 2);
        let left: Vec<bool> = packs.iter().map(|p| p.exists()).collect();
        assert_eq!(left, [false, false, true, true]);
    }
}
