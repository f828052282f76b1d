//! The three tables' Arrow schemas and the conversions between rows and Rust values.
//!
//! Column names are the blueprint's `CodeChunk` field names (camelCase), so a user who
//! opens the index with LanceDB's Python or JS client sees the blueprint's schema.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use codectx_chunker::CodeChunk;
use codectx_parser::ByteSpan;
use lancedb::arrow::arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Int64Array, LargeBinaryArray, RecordBatch, StringArray,
    UInt32Array, UInt64Array,
};
use lancedb::arrow::arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use crate::EmbeddingSpec;
use crate::layout::{self, FileLayout, Layout};
use crate::sql::{vector_array, vector_at, vector_type};
use codectx_embed::EmbeddingView;

pub(crate) const CHUNKS: &str = "chunks";
pub(crate) const FILES: &str = "files";
pub(crate) const META: &str = "meta";

/// Field metadata keys on the `vector` column: the model that made the vectors.
pub(crate) const MODEL_KEY: &str = "codectx.embedding.model";
pub(crate) const DIMENSION_KEY: &str = "codectx.embedding.dimension";
/// The chunk view embedded; absent in indexes written before views existed (code).
pub(crate) const VIEW_KEY: &str = "codectx.embedding.view";

/// A chunk row: the blueprint's `CodeChunk` with the three fields the store adds.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredChunk {
    pub chunk: CodeChunk,
    /// The row's key (`layout::layout`, 32 hex digits): what names the chunk, not where
    /// it is. The chunk's id and positions live in its file's [`FileRecord::layout`].
    pub key: String,
    /// The chunk's own content hash (`schema::chunk_hash`). The blueprint's field holds the file's
    /// SHA-256; that lives in the files table, and a row hashes what it stores (no position),
    /// so an edit elsewhere in the file leaves the row as written (see `Store::write_chunks`).
    pub content_hash: String,
    /// The file's mtime (ms since the epoch) when the row was written.
    pub last_modified: i64,
    /// `None` until the chunk is embedded (or when the index has no embedding model).
    pub vector: Option<Vec<f32>>,
    /// The descriptions of the commits that changed this symbol, newest first, one
    /// [`HISTORY_SEPARATOR`]-separated note each (empty without history). A full-text field
    /// of its own; never part of `fullSource`, `embeddingText` or an answer's code.
    pub history: String,
}

/// Between two notes of [`StoredChunk::history`].
pub const HISTORY_SEPARATOR: &str = "\n\n";

/// What became of a file at its last sync.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum FileStatus {
    /// Parsed without diagnostics.
    Indexed,
    /// Parsed with syntax errors: chunks are what the parser recovered.
    Recovered,
    /// Not chunked, for `reason`; `detail` is the message shown beside the path.
    Skipped { reason: SkipReason, detail: String },
}

/// Why a file the walk found was not chunked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// Over the configured size limit.
    TooLarge,
    /// A bundle: a `.min.` name or very long lines.
    Minified,
    /// Compiled from other source: it names its source map
    /// ([`codectx_files::Generated::BuildOutput`]).
    BuildOutput,
    /// Holds NUL bytes.
    Binary,
    /// Not valid UTF-8.
    NotUtf8,
    /// Could not be read (permissions, vanished mid-sync).
    Unreadable,
    /// The indexer itself failed on it (a panic): left out until the file changes, while
    /// every other file is indexed.
    InternalError,
}

impl From<codectx_files::Generated> for SkipReason {
    fn from(generated: codectx_files::Generated) -> Self {
        match generated {
            codectx_files::Generated::Minified => SkipReason::Minified,
            codectx_files::Generated::BuildOutput => SkipReason::BuildOutput,
        }
    }
}

impl SkipReason {
    const ALL: [SkipReason; 7] = [
        SkipReason::TooLarge,
        SkipReason::Minified,
        SkipReason::BuildOutput,
        SkipReason::Binary,
        SkipReason::NotUtf8,
        SkipReason::Unreadable,
        SkipReason::InternalError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::TooLarge => "too-large",
            SkipReason::Minified => "minified",
            SkipReason::BuildOutput => "build-output",
            SkipReason::Binary => "binary",
            SkipReason::NotUtf8 => "not-utf8",
            SkipReason::Unreadable => "unreadable",
            SkipReason::InternalError => "internal-error",
        }
    }
}

impl FileStatus {
    /// As the files table stores it: `indexed`, `recovered`, `skipped <reason>: <detail>`.
    pub fn as_str(&self) -> String {
        match self {
            FileStatus::Indexed => "indexed".into(),
            FileStatus::Recovered => "recovered".into(),
            FileStatus::Skipped { reason, detail } => {
                format!("skipped {}: {detail}", reason.as_str())
            }
        }
    }

    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        match text {
            "indexed" => Ok(FileStatus::Indexed),
            "recovered" => Ok(FileStatus::Recovered),
            other => other
                .strip_prefix("skipped ")
                .and_then(|rest| rest.split_once(": "))
                .and_then(|(reason, detail)| {
                    let reason = SkipReason::ALL.into_iter().find(|r| r.as_str() == reason)?;
                    Some(FileStatus::Skipped {
                        reason,
                        detail: detail.to_string(),
                    })
                })
                .ok_or_else(|| format!("unknown file status {other:?}")),
        }
    }
}

/// A row of the files table: the sync's memory of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRecord {
    /// Path relative to the project root, `/`-separated.
    pub path: String,
    pub mtime_ns: i64,
    pub size: u64,
    /// SHA-256 (hex) of the content.
    pub content_hash: String,
    pub status: FileStatus,
    pub chunk_count: u32,
    /// `schema::chunks_digest` of the file's chunk rows: a killed sync's repair finds the files
    /// whose rows are not those of their recorded content.
    pub chunks_digest: String,
    /// The graph's per-file facts (`codectx_graph::facts::FileFacts::encode`), so a restart
    /// links the graph without parsing unchanged files.
    pub facts: Option<Vec<u8>>,
    /// Where each of the file's chunk rows sits in it, in the chunker's order, and the
    /// import statements they use: ids, positions and imports, which an edit elsewhere in
    /// the file changes without changing a row. Written with the record; the records
    /// [`Store::files`](crate::Store::files) lists leave it empty (the store keeps the
    /// layouts apart, for its reads).
    pub layout: Layout,
}

/// `field`, holding large values a project load reads in full (chunk text, graph facts),
/// stored in LZ4-compressed mini-blocks. Lance's default for wide values compresses each
/// value on its own, which decodes about thirty times slower: on babel, reading the two
/// text columns of 75,000 chunks took 1.25 s that way and 0.04 s this way, in 12 MB on disk
/// instead of 18.
fn read_whole(field: Field) -> Field {
    field.with_metadata(HashMap::from([
        (
            "lance-encoding:structural-encoding".to_string(),
            "miniblock".to_string(),
        ),
        ("lance-encoding:compression".to_string(), "lz4".to_string()),
    ]))
}

pub(crate) fn chunk_schema(spec: Option<&EmbeddingSpec>) -> SchemaRef {
    let mut fields = vec![
        // The blueprint's `id`, `parentChunkId`, `childChunkIds`, `startLine` and
        // `endLine` (and the byte span and symbol number) move with every edit above a
        // chunk, and `relevantImports` with an edit of an import statement: they are its
        // file's `layout` in the files table (`layout.rs`).
        Field::new("key", DataType::Utf8, false),
        Field::new("relativePath", DataType::Utf8, false),
        Field::new("nodeKind", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("naming", DataType::Utf8, false),
        Field::new("parentName", DataType::Utf8, true),
        Field::new("depth", DataType::UInt32, false),
        Field::new("signature", DataType::Utf8, false),
        read_whole(Field::new("fullSource", DataType::Utf8, false)),
        Field::new("jsdoc", DataType::Utf8, true),
        read_whole(Field::new("embeddingText", DataType::Utf8, false)),
        Field::new("breadcrumb", DataType::Utf8, false),
        // The repository's history of the symbol, for the lexical channel only.
        Field::new("history", DataType::Utf8, false),
        // Derived, for the lexical channel only: the analyzed terms of the chunk's names
        // ([`search_names`]), its source and its history (`text_index`).
        Field::new("nameTerms", DataType::Utf8, false),
        read_whole(Field::new("sourceTerms", DataType::Utf8, false)),
        Field::new("historyTerms", DataType::Utf8, false),
    ];
    if let Some(spec) = spec {
        fields.push(
            Field::new("vector", vector_type(spec.dimension), true).with_metadata(HashMap::from([
                (MODEL_KEY.to_string(), spec.model.clone()),
                (DIMENSION_KEY.to_string(), spec.dimension.to_string()),
                (VIEW_KEY.to_string(), spec.view.as_str().to_string()),
            ])),
        );
    }
    fields.push(Field::new("contentHash", DataType::Utf8, false));
    fields.push(Field::new("lastModified", DataType::Int64, false));
    Arc::new(Schema::new(fields))
}

/// The embedding spec recorded on a chunk table's `vector` column (`None`: no vectors).
pub(crate) fn recorded_spec(schema: &Schema) -> Result<Option<EmbeddingSpec>, String> {
    let Ok(field) = schema.field_with_name("vector") else {
        return Ok(None);
    };
    let meta = field.metadata();
    let model = meta
        .get(MODEL_KEY)
        .ok_or("the vector column does not name its model")?;
    let dimension = meta
        .get(DIMENSION_KEY)
        .and_then(|d| d.parse().ok())
        .ok_or("the vector column does not record its dimension")?;
    let view = match meta.get(VIEW_KEY) {
        None => EmbeddingView::Code,
        Some(name) => EmbeddingView::parse(name)
            .ok_or_else(|| format!("the vector column records an unknown view {name:?}"))?,
    };
    Ok(Some(EmbeddingSpec {
        model: model.clone(),
        dimension,
        view,
    }))
}

/// The content hash of a chunk row: blake3 (128 bits, hex) of `key` and every field of
/// `chunk` a row stores (`filePath` is not stored; ids, positions and imports are the
/// file's layout). Notes, vector and stamps are not part of it.
pub(crate) fn chunk_hash(chunk: &CodeChunk, key: &str) -> String {
    // Destructured whole, so that a new field of `CodeChunk` is a compile error here until
    // it is hashed (or said not to be stored).
    let CodeChunk {
        id: _,
        file_path: _,
        relative_path,
        node_kind,
        name,
        naming,
        parent_name,
        parent_chunk_id: _,
        child_chunk_ids: _,
        depth,
        signature,
        full_source,
        start_line: _,
        end_line: _,
        span: _,
        symbol: _,
        jsdoc,
        relevant_imports: _,
        embedding_text,
        breadcrumb,
    } = chunk;
    let mut hasher = blake3::Hasher::new();
    // Each field is length-prefixed (an absent one is a tag), so no two rows' fields
    // concatenate to the same bytes.
    let mut text = |value: Option<&str>| match value {
        None => {
            hasher.update(&[0]);
        }
        Some(value) => {
            hasher.update(&[1]);
            hasher.update(&(value.len() as u64).to_le_bytes());
            hasher.update(value.as_bytes());
        }
    };
    for value in [
        key,
        relative_path,
        node_kind.as_str(),
        name,
        naming.as_str(),
    ] {
        text(Some(value));
    }
    text(parent_name.as_deref());
    text(Some(signature));
    text(Some(full_source.as_str()));
    text(jsdoc.as_deref());
    text(Some(embedding_text.as_str()));
    text(Some(breadcrumb));
    hasher.update(&depth.to_le_bytes());
    let hash = hasher.finalize();
    hash.to_hex()[..32].to_string()
}

/// A file's [`FileRecord::chunks_digest`]: blake3 (128 bits, hex) of its rows' content
/// hashes in order, whatever order they come in.
pub(crate) fn chunks_digest<'h>(hashes: impl IntoIterator<Item = &'h str>) -> String {
    let mut hashes: Vec<&str> = hashes.into_iter().collect();
    hashes.sort_unstable();
    let mut hasher = blake3::Hasher::new();
    for hash in hashes {
        hasher.update(hash.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex()[..32].to_string()
}

pub(crate) fn files_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("mtimeNs", DataType::Int64, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("contentHash", DataType::Utf8, false),
        Field::new("status", DataType::Utf8, false),
        Field::new("chunkCount", DataType::UInt32, false),
        Field::new("chunksDigest", DataType::Utf8, false),
        read_whole(Field::new("facts", DataType::LargeBinary, true)),
        // `layout::encode` of the file's placements.
        Field::new("layout", DataType::LargeBinary, false),
    ]))
}

pub(crate) fn meta_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]))
}

/// The words that *name* a chunk: its file's path and its qualified name (the breadcrumb
/// without separators, `src/auth/token.ts TokenService verify`). The full-text search
/// weighs them above the words of the source (see `Store::search_lexical`): a question
/// that says "cookie" is more likely about `utils/cookie.ts` than about a function that
/// mentions a cookie once.
pub(crate) fn search_names(chunk: &CodeChunk) -> String {
    chunk
        .breadcrumb
        .replace(codectx_chunker::BREADCRUMB_SEPARATOR, " ")
}

pub(crate) fn chunks_to_batch(
    schema: &SchemaRef,
    rows: &[StoredChunk],
) -> Result<RecordBatch, ArrowError> {
    let text = |f: &dyn Fn(&StoredChunk) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let optional = |f: &dyn Fn(&StoredChunk) -> Option<&str>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    };
    let number = |f: &dyn Fn(&StoredChunk) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(rows.iter().map(f)))
    };
    let mut columns: Vec<ArrayRef> = vec![
        text(&|r| &r.key),
        text(&|r| &r.chunk.relative_path),
        text(&|r| r.chunk.node_kind.as_str()),
        text(&|r| &r.chunk.name),
        text(&|r| r.chunk.naming.as_str()),
        optional(&|r| r.chunk.parent_name.as_deref()),
        number(&|r| r.chunk.depth),
        text(&|r| &r.chunk.signature),
        text(&|r| r.chunk.full_source.as_str()),
        optional(&|r| r.chunk.jsdoc.as_deref()),
        text(&|r| r.chunk.embedding_text.as_str()),
        text(&|r| &r.chunk.breadcrumb),
        text(&|r| &r.history),
    ];
    // Analyzed from the row's texts at every write, so they cannot disagree with them.
    let names: Vec<String> = rows.iter().map(|r| search_names(&r.chunk)).collect();
    let terms = crate::text_index::term_columns(rows.iter().zip(&names).map(|(r, names)| {
        [
            names.as_str(),
            r.chunk.full_source.as_str(),
            r.history.as_str(),
        ]
    }))
    .map_err(ArrowError::ComputeError)?;
    columns.extend(terms);
    if let Ok(field) = schema.field_with_name("vector") {
        let DataType::FixedSizeList(_, dimension) = field.data_type() else {
            unreachable!("the vector column is a fixed-size list by construction");
        };
        columns.push(vector_array(
            *dimension as usize,
            rows.iter().map(|r| r.vector.as_deref()),
        ));
    }
    columns.push(text(&|r| &r.content_hash));
    columns.push(Arc::new(Int64Array::from_iter_values(
        rows.iter().map(|r| r.last_modified),
    )));
    RecordBatch::try_new(schema.clone(), columns)
}

/// The columns a [`CodeChunk`] is read from, with its file's layout: everything but the
/// vector, the history notes, the lexical terms and the file stamps. `filePath` is not
/// stored: the root gives it.
pub(crate) const CODE_CHUNK_COLUMNS: [&str; 12] = [
    "key",
    "relativePath",
    "nodeKind",
    "name",
    "naming",
    "parentName",
    "depth",
    "signature",
    "fullSource",
    "jsdoc",
    "embeddingText",
    "breadcrumb",
];

/// The text column `name` of `batch`.
fn text_of<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b StringArray, String> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| format!("column {name} is missing or not text"))
}

/// Every file's layout, by path.
pub(crate) type Layouts = HashMap<String, Layout>;

/// Where rows read are given their ids and positions.
#[derive(Clone, Copy)]
pub(crate) enum Placing<'a> {
    /// By these layouts; a row they do not place is left out.
    By(&'a Layouts),
    /// Nowhere: a writer rewriting rows needs their keys and content only. The chunks'
    /// ids, lines, spans, family and imports are left empty.
    Unplaced,
}

/// The chunk rows of `batch`, with their stamps, vectors and history, placed as `layouts`
/// says, each with its row's number in `batch`.
pub(crate) fn batch_to_chunks(
    batch: &RecordBatch,
    root: &Path,
    layouts: Placing<'_>,
) -> Result<Vec<(usize, StoredChunk)>, String> {
    let chunks = batch_to_code_chunks(batch, root, layouts)?;
    let key = text_of(batch, "key")?;
    let content_hash = text_of(batch, "contentHash")?;
    let last_modified = batch
        .column_by_name("lastModified")
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        .ok_or("column lastModified is missing or not i64")?;
    let vector = batch
        .column_by_name("vector")
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>());
    let history = text_of(batch, "history")?;
    Ok(chunks
        .into_iter()
        .map(|(i, chunk)| {
            (
                i,
                StoredChunk {
                    chunk,
                    key: key.value(i).into(),
                    content_hash: content_hash.value(i).into(),
                    last_modified: last_modified.value(i),
                    vector: vector.and_then(|v| vector_at(v, i)).map(<[f32]>::to_vec),
                    history: history.value(i).into(),
                },
            )
        })
        .collect())
}

/// The chunks of `batch`, which needs only [`CODE_CHUNK_COLUMNS`], each with its row's
/// number in `batch`. Ids and positions come from the files' layouts ([`Placing::By`]); a
/// row they do not place (written after the files table this handle read: its next sync
/// reads both) is left out. `filePath` is `root` joined with `relativePath`: an index built
/// in another checkout (ids are relative) names this one's files.
pub(crate) fn batch_to_code_chunks(
    batch: &RecordBatch,
    root: &Path,
    layouts: Placing<'_>,
) -> Result<Vec<(usize, CodeChunk)>, String> {
    let text = |name: &str| text_of(batch, name);
    let opt = |array: &StringArray, i: usize| -> Option<String> {
        array.is_valid(i).then(|| array.value(i).to_string())
    };
    let (key, relative_path, node_kind, name, naming) = (
        text("key")?,
        text("relativePath")?,
        text("nodeKind")?,
        text("name")?,
        text("naming")?,
    );
    let depth = batch
        .column_by_name("depth")
        .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
        .ok_or("column depth is missing or not u32")?;
    let (parent_name, signature, full_source) =
        (text("parentName")?, text("signature")?, text("fullSource")?);
    let (jsdoc, embedding_text, breadcrumb) =
        (text("jsdoc")?, text("embeddingText")?, text("breadcrumb")?);
    let mut out = Vec::with_capacity(batch.num_rows());
    // A file's chunks are neighbours: its absolute path is joined, and its layout indexed,
    // once.
    let mut file: Option<(&str, String, Option<FileLayout<'_>>)> = None;
    let mut unplaced = 0usize;
    for i in 0..batch.num_rows() {
        let path = relative_path.value(i);
        if file.as_ref().is_none_or(|(p, _, _)| *p != path) {
            file = Some((
                path,
                root.join(path).to_string_lossy().into_owned(),
                match layouts {
                    Placing::By(layouts) => layouts.get(path).map(FileLayout::new),
                    Placing::Unplaced => None,
                },
            ));
        }
        let Some((_, file_path, layout)) = &file else {
            unreachable!("set above")
        };
        let mut chunk = CodeChunk {
            id: String::new(),
            file_path: file_path.clone(),
            relative_path: path.into(),
            node_kind: node_kind.value(i).parse()?,
            name: name.value(i).into(),
            naming: naming.value(i).parse()?,
            parent_name: opt(parent_name, i),
            parent_chunk_id: None,
            child_chunk_ids: Vec::new(),
            depth: depth.value(i),
            signature: signature.value(i).into(),
            full_source: full_source.value(i).into(),
            start_line: 0,
            end_line: 0,
            span: ByteSpan::new(0, 0),
            symbol: 0,
            jsdoc: opt(jsdoc, i),
            relevant_imports: Vec::new(),
            embedding_text: embedding_text.value(i).into(),
            breadcrumb: breadcrumb.value(i).into(),
        };
        if matches!(layouts, Placing::Unplaced)
            || layout
                .as_ref()
                .is_some_and(|l| l.place(key.value(i), &mut chunk))
        {
            out.push((i, chunk));
        } else {
            unplaced += 1;
        }
    }
    if unplaced > 0 {
        tracing::debug!("{unplaced} chunk rows are newer than the files table read: left out");
    }
    Ok(out)
}

pub(crate) fn files_to_batch(rows: &[FileRecord]) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(
        files_schema(),
        vec![
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.path.as_str()),
            )),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.mtime_ns),
            )),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.size))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.content_hash.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.status.as_str()),
            )),
            Arc::new(UInt32Array::from_iter_values(
                rows.iter().map(|r| r.chunk_count),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.chunks_digest.as_str()),
            )),
            Arc::new(
                rows.iter()
                    .map(|r| r.facts.as_deref())
                    .collect::<LargeBinaryArray>(),
            ),
            Arc::new(LargeBinaryArray::from_iter_values(
                rows.iter().map(|r| layout::encode(&r.layout)),
            )),
        ],
    )
}

pub(crate) fn batch_to_files(batch: &RecordBatch) -> Result<Vec<FileRecord>, String> {
    fn column<'b, T: 'static>(batch: &'b RecordBatch, name: &str) -> Result<&'b T, String> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .ok_or_else(|| format!("files column {name} is missing or mistyped"))
    }
    let path = column::<StringArray>(batch, "path")?;
    let mtime = column::<Int64Array>(batch, "mtimeNs")?;
    let size = column::<UInt64Array>(batch, "size")?;
    let hash = column::<StringArray>(batch, "contentHash")?;
    let status = column::<StringArray>(batch, "status")?;
    let count = column::<UInt32Array>(batch, "chunkCount")?;
    let digest = column::<StringArray>(batch, "chunksDigest")?;
    // Callers that only need the sync state do not select the facts column.
    let facts = batch
        .column_by_name("facts")
        .and_then(|c| c.as_any().downcast_ref::<LargeBinaryArray>());
    let layouts = column::<LargeBinaryArray>(batch, "layout")?;
    (0..batch.num_rows())
        .map(|i| {
            Ok(FileRecord {
                path: path.value(i).into(),
                mtime_ns: mtime.value(i),
                size: size.value(i),
                content_hash: hash.value(i).into(),
                status: FileStatus::parse(status.value(i))?,
                chunk_count: count.value(i),
                chunks_digest: digest.value(i).into(),
                facts: facts.filter(|f| f.is_valid(i)).map(|f| f.value(i).into()),
                layout: layout::decode(layouts.value(i))
                    .map_err(|e| format!("layout of {}: {e}", path.value(i)))?,
            })
        })
        .collect()
}

pub(crate) fn meta_to_batch(pairs: &[(&str, &str)]) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(
        meta_schema(),
        vec![
            Arc::new(StringArray::from_iter_values(pairs.iter().map(|p| p.0))),
            Arc::new(StringArray::from_iter_values(pairs.iter().map(|p| p.1))),
        ],
    )
}

pub(crate) fn batch_to_meta(batch: &RecordBatch) -> Result<Vec<(String, String)>, String> {
    let key = batch
        .column_by_name("key")
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or("meta column key is missing")?;
    let value = batch
        .column_by_name("value")
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or("meta column value is missing")?;
    Ok((0..batch.num_rows())
        .map(|i| (key.value(i).to_string(), value.value(i).to_string()))
        .collect())
}
