//! Step 3 of a sync: reading, hashing and parsing the files that moved, on all cores and off
//! the async runtime. Each file is parsed once, for its chunks and its graph facts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use codectx_chunker::CodeChunk;
use codectx_files::{Generated, SourceFile};
use codectx_graph::facts::FileFacts;
use codectx_parser::ParseStatus;
use sha2::{Digest, Sha256};

use crate::layout;
use crate::parse_cache::{PackWriter, ParseCache};
use crate::report::{SyncEvent, SyncObserver};
use crate::schema::{FileRecord, FileStatus, SkipReason, chunk_hash, chunks_digest};

/// A file read and cut in this sync: its record, its chunks and its graph facts.
pub(crate) struct Processed {
    pub record: FileRecord,
    pub chunks: Vec<CodeChunk>,
    /// Each chunk's row key and content hash ([`chunk_hash`]), in `chunks`' order: hashed
    /// here, on all cores, for `record` (its layout and `chunks_digest`) and the rows alike.
    pub rows: Vec<(String, String)>,
    /// What `record.facts` holds encoded, when the sync hands its changes over (`None`
    /// otherwise, and for a skipped file): a whole repository's facts are not held twice.
    pub facts: Option<FileFacts>,
    /// The chunks and facts came from the shared parses, not from a parse.
    pub shared: bool,
    /// Parsed now and not shared yet: no entry holds the version it replaces, so its own
    /// entry waits until that version is added from the index's rows, to be compressed
    /// against it (`Store::share_replaced`).
    pub unshared: bool,
}

impl Processed {
    /// `file`, not cut, for `reason`: its record says why, and no rows are written.
    fn skipped(mut record: FileRecord, reason: SkipReason, detail: String) -> Self {
        record.status = FileStatus::Skipped { reason, detail };
        Processed {
            record,
            chunks: Vec::new(),
            rows: Vec::new(),
            facts: None,
            shared: false,
            unshared: false,
        }
    }
}

/// What a sync does with the shared parses: reads them, and adds its new parses to `pack`
/// as `new` says.
#[derive(Clone, Copy)]
pub(crate) struct Sharing<'p> {
    pub pack: &'p PackWriter<'p>,
    pub new: NewParses,
}

/// Which of a sync's new parses go to the shared parses, and how.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum NewParses {
    /// None: a build of every file, whose rows hold every version it parsed.
    Kept,
    /// Each as it is made, against the entry of its file's previous version if there is one
    /// (a new clone's first sync: the versions it replaces are its seed's to share).
    Added,
    /// As [`NewParses::Added`], but a parse whose previous version no entry holds waits for
    /// that version, read back from the rows (`Store::share_replaced`).
    AfterReplaced,
}

/// The record of `file` as the walk saw it, before its content is known.
fn record_of(file: &SourceFile) -> FileRecord {
    FileRecord {
        path: file.path.clone(),
        mtime_ns: file.mtime_ns,
        size: file.size,
        content_hash: String::new(),
        status: FileStatus::Indexed,
        chunk_count: 0,
        chunks_digest: chunks_digest([]),
        facts: None,
        layout: Default::default(),
    }
}

/// Records that `record`'s content was cut into `chunks` (their layout, count and digest);
/// returns their rows' keys and content hashes.
fn set_chunks(record: &mut FileRecord, chunks: &[CodeChunk]) -> Vec<(String, String)> {
    record.chunk_count = chunks.len() as u32;
    record.layout = layout::layout(chunks);
    let rows: Vec<(String, String)> = chunks
        .iter()
        .zip(&record.layout.placements)
        .map(|(chunk, placement)| {
            let key = layout::to_hex(&placement.key);
            let hash = chunk_hash(chunk, &key);
            (key, hash)
        })
        .collect();
    record.chunks_digest = chunks_digest(rows.iter().map(|(_, hash)| hash.as_str()));
    rows
}

/// What reading a file whose mtime or size moved found. One per moved file, consumed as
/// the sync sorts them: the larger variant is not boxed.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Moved {
    /// The same content as indexed (a git checkout, `touch`): every row still holds; only
    /// the record's mtime moves.
    Touched(FileRecord),
    /// New content: what it was cut into, or why it was skipped.
    Changed(Processed),
}

/// Runs CPU-bound `f` (parsing every changed file) without stalling the async runtime: on a
/// multi-threaded runtime the worker first hands its other tasks to the rest of the pool
/// (`block_in_place`); on a single-threaded one there is no other worker to hand them to.
pub(crate) fn off_the_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Reads, hashes and (when the content changed) parses the moved files on all cores, or
/// takes their parse from the shared parses; new parses go to `shared`'s pack as it says.
/// A changed file carries its decoded facts only when `keep_facts`.
pub(crate) fn process_files(
    files: &[SourceFile],
    known_hashes: &HashMap<String, String>,
    max_bytes: u64,
    keep_facts: bool,
    shared: Option<Sharing<'_>>,
    observer: &dyn SyncObserver,
) -> Vec<Moved> {
    let done = AtomicUsize::new(0);
    on_all_cores(files.iter().collect(), |file| {
        let known = known_hashes.get(&file.path);
        // A bug of ours on one file's content must not stop every sync of the repository:
        // the file is skipped with the reason, the rest indexed.
        let item = caught(file, || {
            process_file(file, known, max_bytes, keep_facts, shared)
        });
        if matches!(item, Moved::Changed(_)) {
            observer.event(SyncEvent::Parsed {
                done: done.fetch_add(1, Ordering::Relaxed) + 1,
                total: files.len(),
            });
        }
        item
    })
}

/// `f` of each item, on all cores (the caller waits), in the items' order. `f` must not
/// panic: a panic ends the caller too.
pub(crate) fn on_all_cores<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let count = items.len();
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(count.max(1));
    let items = Mutex::new(items.into_iter().enumerate());
    let next = || items.lock().unwrap_or_else(|e| e.into_inner()).next();
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    while let Some((i, item)) = next() {
                        out.push((i, f(item)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("the work does not panic"))
            .collect()
    });
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// Reads `file`; parses it (or takes its parse from `shared`) when its content is not the
/// `known_hash` one.
pub(crate) fn process_file(
    file: &SourceFile,
    known_hash: Option<&String>,
    max_bytes: u64,
    keep_facts: bool,
    shared: Option<Sharing<'_>>,
) -> Moved {
    let mut record = record_of(file);
    let skipped =
        |record, reason, detail| Moved::Changed(Processed::skipped(record, reason, detail));
    if file.size > max_bytes {
        record.content_hash = oversize_hash(file.size);
        return skipped(
            record,
            SkipReason::TooLarge,
            format!("{} bytes is over the {max_bytes}-byte limit", file.size),
        );
    }
    let bytes = match std::fs::read(&file.abs) {
        Ok(bytes) => bytes,
        Err(e) => return skipped(record, SkipReason::Unreadable, format!("unreadable ({e})")),
    };
    record.content_hash = content_hash(&bytes);
    if known_hash == Some(&record.content_hash) {
        return Moved::Touched(record);
    }
    let source = match codectx_parser::decode_source(bytes, &file.path) {
        Ok(source) => source,
        Err(e) => {
            let reason = match e {
                codectx_parser::ParseError::Binary { .. } => SkipReason::Binary,
                codectx_parser::ParseError::NotUtf8 { .. } => SkipReason::NotUtf8,
                codectx_parser::ParseError::TooLarge { .. } => SkipReason::TooLarge,
                _ => SkipReason::Unreadable,
            };
            // The path is shown next to the detail already.
            let detail = e.to_string();
            let detail = detail
                .strip_prefix(&format!("{}: ", file.path))
                .unwrap_or(&detail);
            return skipped(record, reason, detail.to_string());
        }
    };
    // Before the shared parses: a pack written by an earlier build may hold its parse.
    if let Some(generated) = Generated::of(&file.path, &source) {
        return skipped(record, generated.into(), generated.description().into());
    }
    let shared = shared.map(|sharing| (sharing, ParseCache::key(&file.path, &record.content_hash)));
    if let Some((sharing, key)) = &shared
        && let Some(parse) = sharing
            .pack
            .cache()
            .get(key, &file.abs.to_string_lossy(), &source)
    {
        // Facts that do not decode make the entry a miss: the files table never holds
        // facts a load would refuse.
        if let Ok(facts) = FileFacts::decode(&parse.facts) {
            if parse.recovered {
                record.status = FileStatus::Recovered;
            }
            let rows = set_chunks(&mut record, &parse.chunks);
            record.facts = Some(parse.facts);
            return Moved::Changed(Processed {
                record,
                chunks: parse.chunks,
                rows,
                facts: keep_facts.then_some(facts),
                shared: true,
                unshared: false,
            });
        }
    }
    // One parse feeds both the chunks and the graph facts.
    let (parsed, facts) = codectx_parser::parse_with(&file.path, &source, |parsed, program| {
        let facts = codectx_graph::facts::facts_of(&parsed, program);
        (parsed, facts)
    });
    if parsed.status != ParseStatus::Clean {
        record.status = FileStatus::Recovered;
    }
    let mut chunks = codectx_chunker::chunk_file(&parsed, &source, &file.abs.to_string_lossy());
    let encoded = facts.encode();
    // A parse oxc gave up on (or panicked in, which a debug build's assertions do where a
    // release build goes on) is not shared: it is cheap to redo, and another build may do
    // better.
    let mut unshared = false;
    if let Some((sharing, key)) = shared
        && sharing.new != NewParses::Kept
        && parsed.status != ParseStatus::Failed
    {
        let recovered = record.status == FileStatus::Recovered;
        match known_hash.map(|hash| ParseCache::key(&file.path, hash)) {
            Some(previous)
                if sharing.new == NewParses::AfterReplaced
                    && !sharing.pack.cache().has(&previous) =>
            {
                unshared = true
            }
            previous => sharing
                .pack
                .add(key, previous, recovered, &encoded, &mut chunks),
        }
    }
    record.facts = Some(encoded);
    let rows = set_chunks(&mut record, &chunks);
    Moved::Changed(Processed {
        record,
        chunks,
        rows,
        facts: keep_facts.then_some(facts),
        shared: false,
        unshared,
    })
}

/// `process`'s result for `file`, or, when it panics, the file skipped with the reason.
fn caught(file: &SourceFile, process: impl FnOnce() -> Moved) -> Moved {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(process))
        .unwrap_or_else(|panic| Moved::Changed(failed(file, panic.as_ref())))
}

/// The record of a file whose processing panicked: skipped, with the panic's message. Its
/// hash is the content's, so the file is tried again once it changes, not at every sync.
fn failed(file: &SourceFile, panic: &(dyn std::any::Any + Send)) -> Processed {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    tracing::warn!(
        "{}: indexing this file failed ({message}); it is skipped",
        file.path
    );
    let mut record = record_of(file);
    record.content_hash =
        std::fs::read(&file.abs).map_or_else(|_| oversize_hash(file.size), |b| content_hash(&b));
    Processed::skipped(
        record,
        SkipReason::InternalError,
        format!("an internal error of the indexer ({message})"),
    )
}

/// A file's content hash as its record holds it: SHA-256 of its bytes.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The content hash of a file not read (over the size limit, or unreadable): its size.
pub(crate) fn oversize_hash(size: u64) -> String {
    format!("size:{size}")
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_on_one_file_skips_that_file_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let abs = dir.path().join("a.ts");
        std::fs::write(&abs, "export const a = 1;\n").unwrap();
        let file = SourceFile {
            abs,
            path: "a.ts".into(),
            size: 20,
            mtime_ns: 7,
        };
        let Moved::Changed(processed) = caught(&file, || panic!("chunk out of range")) else {
            panic!("a failed file is a changed one");
        };
        let record = processed.record;
        assert_eq!(
            record.status,
            FileStatus::Skipped {
                reason: SkipReason::InternalError,
                detail: "an internal error of the indexer (chunk out of range)".into(),
            }
        );
        // The content's hash: tried again once the file changes, not at every sync.
        assert_eq!(
            record.content_hash,
            hex(&Sha256::digest(b"export const a = 1;\n"))
        );
        assert_eq!((record.chunk_count, record.facts), (0, None));
        assert!(processed.chunks.is_empty());
        // Stored and read back as it was.
        assert_eq!(
            FileStatus::parse(&record.status.as_str()),
            Ok(record.status.clone())
        );
    }
}
