//! The two candidate channels of blueprint Stage 1, answered inside LanceDB with the path
//! and language filters applied in the query (not after it).

use lance_linalg::distance::Dot;
use lancedb::DistanceType;
use std::collections::HashMap;
use std::sync::Arc;

use futures::TryStreamExt;
use lancedb::arrow::arrow_array::{Array, RecordBatch};
use lancedb::index::scalar::{CombinedFieldsQuery, FtsQuery, FullTextSearchQuery};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use crate::schema::{Placing, batch_to_chunks};
use crate::sql::{float_column, in_list, sql_string, text_column, vector_at, vector_column};
use crate::store::CollectBatches;
use crate::text_index::{LEXICAL_COLUMNS, query_terms};
use crate::text_table::{TextSearch, TextTable};
use crate::{Store, StoreError, StoredChunk};

/// One full-text hit without its row ([`Store::search_lexical_hits`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalHit {
    pub id: String,
    pub relative_path: String,
    /// BM25F score: higher is better.
    pub score: f32,
    /// The chunk's commit notes when history is searched (empty otherwise): with its name
    /// and code, what the chunk itself says, as opposed to its file's path.
    pub history: String,
}

/// One vector hit without its row ([`Store::search_vector`]).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorHit {
    pub id: String,
    pub relative_path: String,
    /// Cosine distance: 0 is the same direction, 2 the opposite.
    pub distance: f32,
}

/// Every stored vector of one version of the chunk table, row by row.
#[derive(Debug, Default)]
pub(crate) struct VectorTable {
    /// The table has a vector index: LanceDB searches it, and no vector is kept here.
    indexed: bool,
    keys: Vec<String>,
    paths: Vec<String>,
    /// The vectors one after another, `dimension` values each.
    values: Vec<f32>,
    norms: Vec<f32>,
    dimension: usize,
    /// Row numbers sorted by row key: a candidate's vector is looked up, not scanned for.
    by_key: Vec<u32>,
}

/// One version's vectors, read once: every caller after the first waits for its read.
type VectorCell = Arc<tokio::sync::OnceCell<Arc<VectorTable>>>;

/// The vectors a store keeps: those of the latest version asked for, read or being read.
#[derive(Debug, Default, Clone)]
pub(crate) struct VectorSlot(Arc<std::sync::Mutex<Option<(u64, VectorCell)>>>);

impl VectorSlot {
    /// The kept vectors, when they are those of `version` and have been read.
    fn current(&self, version: u64) -> Option<Arc<VectorTable>> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.as_ref()
            .filter(|(v, _)| *v == version)
            .and_then(|(_, cell)| cell.get().cloned())
    }

    /// The vectors of `version` of `chunks`: kept, being read (then waited for), or read
    /// now. A version older than the kept one (a handle behind another) is read and not
    /// kept.
    async fn get(
        &self,
        chunks: &lancedb::Table,
        uri: &str,
        version: u64,
    ) -> Result<Arc<VectorTable>, StoreError> {
        let cell = {
            let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match kept.as_ref() {
                Some((v, cell)) if *v == version => cell.clone(),
                Some((v, _)) if *v > version => VectorCell::default(),
                _ => kept.insert((version, VectorCell::default())).1.clone(),
            }
        };
        cell.get_or_try_init(|| async {
            Ok(Arc::new(VectorTable::read(chunks, uri, version).await?))
        })
        .await
        .cloned()
    }
}

impl VectorTable {
    /// Every vector of `version` of `chunks` (the handle's version), or, when the table
    /// has a vector index, none: LanceDB searches it.
    async fn read(
        chunks: &lancedb::Table,
        uri: &str,
        version: u64,
    ) -> Result<VectorTable, StoreError> {
        let indexed = chunks
            .list_indices()
            .await
            .map_err(crate::store::lance_error(uri, "listing indices"))?
            .iter()
            .any(|i| i.columns.iter().any(|c| c == "vector"));
        let mut table = VectorTable {
            indexed,
            ..VectorTable::default()
        };
        if indexed {
            return Ok(table);
        }
        let started = std::time::Instant::now();
        let action = "reading vectors";
        let mut stream = chunks
            .query()
            .only_if("vector IS NOT NULL")
            .select(Select::columns(&["key", "relativePath", "vector"]))
            .execute()
            .await
            .map_err(crate::store::lance_error(uri, action))?;
        let corrupt = crate::store::corrupt_error(uri);
        while let Some(batch) = stream
            .try_next()
            .await
            .map_err(crate::store::lance_error(uri, action))?
        {
            let key = text_column(&batch, "key").map_err(&corrupt)?;
            let path = text_column(&batch, "relativePath").map_err(&corrupt)?;
            let vectors = vector_column(&batch, "vector").map_err(&corrupt)?;
            for i in 0..batch.num_rows() {
                if let Some(vector) = vector_at(vectors, i) {
                    table.push(key.value(i), path.value(i), vector);
                }
            }
        }
        table.seal();
        tracing::debug!(rows = table.keys.len(), version, elapsed = ?started.elapsed(), "vectors read into memory");
        Ok(table)
    }

    /// Sorts the id lookup once every row is in.
    fn seal(&mut self) {
        let mut by_key: Vec<u32> = (0..self.keys.len() as u32).collect();
        by_key.sort_unstable_by(|&a, &b| self.keys[a as usize].cmp(&self.keys[b as usize]));
        self.by_key = by_key;
    }

    /// The stored vector of row `key`, if it has one.
    fn vector(&self, key: &str) -> Option<&[f32]> {
        let at = self
            .by_key
            .binary_search_by(|&row| self.keys[row as usize].as_str().cmp(key))
            .ok()?;
        let row = self.by_key[at] as usize;
        Some(&self.values[row * self.dimension..(row + 1) * self.dimension])
    }

    fn push(&mut self, key: &str, path: &str, vector: &[f32]) {
        if self.keys.is_empty() {
            self.dimension = vector.len();
        }
        if vector.len() != self.dimension {
            return;
        }
        self.keys.push(key.to_string());
        self.paths.push(path.to_string());
        self.values.extend_from_slice(vector);
        self.norms.push(dot(vector, vector).sqrt());
    }

    /// The `limit` rows nearest to `query` by cosine distance among those `filter` admits,
    /// nearest first, ties by row key (each hit's `id` holds its row key until the store
    /// places it). A zero vector is at no distance from anything: left out.
    fn nearest(&self, query: &[f32], limit: usize, filter: &ChunkFilter) -> Vec<VectorHit> {
        let query_norm = dot(query, query).sqrt();
        if query.len() != self.dimension || query_norm == 0.0 {
            return Vec::new();
        }
        // Every row's dot product in one pass of lance's SIMD kernel (chosen at run time).
        let mut dots = vec![0.0; self.keys.len()];
        f32::dot_batch_into(query, &self.values, self.dimension, &mut dots);
        let scored: Vec<(f32, usize)> = (0..self.keys.len())
            .filter(|&row| self.norms[row] > 0.0 && filter.admits(&self.paths[row]))
            .map(|row| (1.0 - dots[row] / (query_norm * self.norms[row]), row))
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| {
            a.0.total_cmp(&b.0)
                .then_with(|| self.keys[a.1].cmp(&self.keys[b.1]))
        };
        best_by(scored, limit, order)
            .into_iter()
            .map(|(distance, row)| VectorHit {
                id: self.keys[row].clone(),
                relative_path: self.paths[row].clone(),
                distance,
            })
            .collect()
    }
}

/// The first `limit` of `items` in `order`, sorted: a partial selection, then a sort of
/// what is kept.
pub(crate) fn best_by<T>(
    mut items: Vec<T>,
    limit: usize,
    order: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Vec<T> {
    if items.len() > limit {
        items.select_nth_unstable_by(limit, &order);
        items.truncate(limit);
    }
    items.sort_by(order);
    items
}

/// A scalar sum of products cannot be vectorised (float addition is not associative);
/// lance's kernel sums in SIMD lanes.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    lance_linalg::distance::dot_f32(a, b)
}

/// Which chunks a search may return: paths (files, directories or globs, relative to the
/// root) and languages. Empty lists mean no restriction.
#[derive(Debug, Clone, Default)]
pub struct ChunkFilter {
    /// `src/auth/token.ts`, `src/auth` (everything under it) or a glob like `src/**/*.tsx`.
    pub paths: Vec<String>,
    /// Languages as [`codectx_parser::LANGUAGE_FILTERS`] names them: `typescript` (`.ts .tsx
    /// .mts .cts`), `javascript` (`.js .jsx .mjs .cjs`), `rust`, `python`, `go`.
    pub languages: Vec<String>,
}

impl ChunkFilter {
    /// The filter as a LanceDB SQL predicate (`None`: everything), or an error naming a
    /// language this build does not know.
    pub fn to_sql(&self) -> Result<Option<String>, StoreError> {
        let mut clauses = Vec::new();
        if !self.paths.is_empty() {
            let paths: Vec<String> = self.paths.iter().map(|p| path_clause(p)).collect();
            clauses.push(format!("({})", paths.join(" OR ")));
        }
        if !self.languages.is_empty() {
            let mut exts: Vec<&str> = Vec::new();
            for language in &self.languages {
                let Some(extensions) = codectx_parser::extensions_named(language) else {
                    let known: Vec<&str> = codectx_parser::LANGUAGE_FILTERS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect();
                    return Err(StoreError::Filter(format!(
                        "unknown language {language:?} (use {})",
                        known.join(", ")
                    )));
                };
                exts.extend(extensions);
            }
            let exts: Vec<String> = exts
                .iter()
                .map(|e| format!("relativePath LIKE '%.{e}'"))
                .collect();
            clauses.push(format!("({})", exts.join(" OR ")));
        }
        Ok((!clauses.is_empty()).then(|| clauses.join(" AND ")))
    }

    /// Whether a chunk at `path` passes the whole filter, paths and languages, as the SQL
    /// of [`ChunkFilter::to_sql`] followed by [`ChunkFilter::matches`] does (languages
    /// unknown to the parser admit nothing; `to_sql` reports them).
    pub fn admits(&self, path: &str) -> bool {
        self.matches(path)
            && (self.languages.is_empty()
                || self.languages.iter().any(|language| {
                    codectx_parser::extensions_named(language).is_some_and(|extensions| {
                        extensions.iter().any(|e| path.ends_with(&format!(".{e}")))
                    })
                }))
    }

    /// Whether a relative path passes the exact glob semantics (`*` stays inside one
    /// directory), which LIKE can only approximate.
    pub fn matches(&self, path: &str) -> bool {
        self.paths.is_empty()
            || self.paths.iter().any(|p| {
                let p = p.trim_matches('/');
                if is_glob(p) {
                    globset::Glob::new(p).is_ok_and(|g| g.compile_matcher().is_match(path))
                } else {
                    path == p || path.starts_with(&format!("{p}/"))
                }
            })
    }
}

fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// A path as SQL: exact file, directory prefix, or a glob turned into LIKE (`*`, `**` → `%`,
/// `?` → `_`; `[…]` classes widen to `_`), refined by [`ChunkFilter::matches`].
fn path_clause(path: &str) -> String {
    let path = path.trim_matches('/');
    if is_glob(path) {
        let mut like = String::new();
        let mut chars = path.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => {
                    while chars.peek() == Some(&'*') {
                        chars.next();
                    }
                    like.push('%');
                }
                '?' => like.push('_'),
                '[' => {
                    for c in chars.by_ref() {
                        if c == ']' {
                            break;
                        }
                    }
                    like.push('_');
                }
                '\'' => like.push_str("''"),
                c => like.push(c),
            }
        }
        format!("relativePath LIKE '{like}'")
    } else {
        let exact = sql_string(path);
        let under = sql_string(&format!("{path}/%"));
        format!("(relativePath = {exact} OR relativePath LIKE {under})")
    }
}

impl Store {
    /// BM25F over a chunk's names and source (`text_index::LEXICAL_COLUMNS`) with code-aware,
    /// stemmed tokens: `getUserName` matches `user`, `names` and itself. Several words are
    /// OR-ed, so a query is never empty just because one word is missing. Best first, with
    /// the score. Whole rows come from LanceDB's index whatever
    /// [`StoreOptions::text_search`](crate::StoreOptions) says; the engine's channel is
    /// [`Store::search_lexical_hits`].
    pub async fn search_lexical(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<(StoredChunk, f32)>, StoreError> {
        self.on_live_version(|| self.search_lexical_here(query, limit, filter))
            .await
    }

    /// [`Store::search_lexical`] on this handle's version.
    async fn search_lexical_here(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<(StoredChunk, f32)>, StoreError> {
        let sql = filter.to_sql()?;
        if query.trim().is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let Some(q) = self.lexical_query(query, limit, sql)? else {
            return Ok(Vec::new());
        };
        let batches: Vec<RecordBatch> = match q.batches(self, "full-text search").await {
            Ok(batches) => batches,
            Err(_) if self.holds_no_chunks().await? => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut hits = self.scored(&batches, "_score", filter)?;
        // Equal scores come back in whatever order the parallel scan finished: order them by
        // row key (as every search does) so the same query ranks the same way every time.
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.key.cmp(&b.0.key)));
        Ok(hits)
    }

    /// [`Store::search_lexical`] reading only each hit's id and file: a wide candidate pool
    /// (hundreds of rows) for a caller that holds the chunks already.
    pub async fn search_lexical_hits(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        self.on_live_version(|| self.search_lexical_hits_here(query, limit, filter))
            .await
    }

    /// [`Store::search_lexical_hits`] on this handle's version.
    async fn search_lexical_hits_here(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<LexicalHit>, StoreError> {
        // A language this build does not know is an error on either search.
        let sql = filter.to_sql()?;
        if query.trim().is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        if let Some(table) = self.text_table().await? {
            let hits = table
                .search(query, limit, filter)
                .map_err(|e| self.corrupt(e))?;
            return Ok(self.placed_hits(hits));
        }
        let Some(q) = self.lexical_query(query, limit, sql)? else {
            return Ok(Vec::new());
        };
        let columns: &[&str] = if self.history_searched {
            &["key", "relativePath", "history"]
        } else {
            &["key", "relativePath"]
        };
        let batches: Vec<RecordBatch> = match q
            .select(Select::columns(columns))
            .batches(self, "full-text search")
            .await
        {
            Ok(batches) => batches,
            Err(_) if self.holds_no_chunks().await? => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut hits = Vec::new();
        for batch in &batches {
            let key = text_column(batch, "key").map_err(|r| self.corrupt(r))?;
            let path = text_column(batch, "relativePath").map_err(|r| self.corrupt(r))?;
            let history = if self.history_searched {
                Some(text_column(batch, "history").map_err(|r| self.corrupt(r))?)
            } else {
                None
            };
            let score = float_column(batch, "_score").map_err(|r| self.corrupt(r))?;
            for i in 0..batch.num_rows() {
                if score.is_valid(i) && filter.matches(path.value(i)) {
                    hits.push(LexicalHit {
                        id: key.value(i).to_string(),
                        relative_path: path.value(i).to_string(),
                        score: score.value(i),
                        history: history
                            .filter(|h| h.is_valid(i))
                            .map_or_else(String::new, |h| h.value(i).to_string()),
                    });
                }
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        Ok(self.placed_hits(hits))
    }

    /// `hits`, found by row key, with their chunks' ids; a row this handle's files table
    /// does not place (newer than it) is left out.
    pub(crate) fn placed_hits(&self, hits: Vec<LexicalHit>) -> Vec<LexicalHit> {
        let layouts = self.layouts();
        hits.into_iter()
            .filter_map(|mut hit| {
                hit.id = Store::placed_id(&layouts, &hit.relative_path, &hit.id)?;
                Some(hit)
            })
            .collect()
    }

    /// Starts what the first search would start: with [`TextSearch::MemoryInBackground`],
    /// reading the lexical channel's fields into memory (a server calls this when it opens
    /// an index, so that its first questions already find them); with
    /// [`TextSearch::Memory`], reading them now.
    pub async fn prepare_text_search(&self) -> Result<(), StoreError> {
        self.text_table().await.map(drop)
    }

    /// The lexical channel's fields in memory for the table's current version, when
    /// [`StoreOptions::text_search`](crate::StoreOptions) keeps them: read now
    /// ([`TextSearch::Memory`]), or started in the background and `None` until they land.
    async fn text_table(&self) -> Result<Option<Arc<TextTable>>, StoreError> {
        if self.options.text_search == TextSearch::Index {
            return Ok(None);
        }
        let version = self
            .chunks
            .version()
            .await
            .map_err(self.lance("reading the version"))?;
        let with_history = self.history_searched;
        if let Some(table) = self.text.current(version, with_history) {
            return Ok(Some(table));
        }
        match self.options.text_search {
            TextSearch::Index => Ok(None),
            TextSearch::Memory => {
                let table = self
                    .text
                    .read(&self.chunks, &self.uri, version, with_history)
                    .await?;
                Ok(Some(table))
            }
            TextSearch::MemoryInBackground => {
                self.text
                    .read_in_background(&self.chunks, &self.uri, version, with_history);
                Ok(None)
            }
        }
    }

    /// An index of no chunk (nothing under the root is a file it reads) has no full-text
    /// index either, and LanceDB refuses a full-text query then: that search finds nothing.
    async fn holds_no_chunks(&self) -> Result<bool, StoreError> {
        let rows = self
            .chunks
            .count_rows(None)
            .await
            .map_err(self.lance("counting"))?;
        Ok(rows == 0)
    }

    /// The BM25F query of `query`'s terms ([`query_terms`]), filtered by `sql`
    /// ([`ChunkFilter::to_sql`]); `None` when the question has no term to search.
    fn lexical_query(
        &self,
        query: &str,
        limit: usize,
        sql: Option<String>,
    ) -> Result<Option<lancedb::query::Query>, StoreError> {
        let terms = query_terms(query).map_err(|e| self.corrupt(e))?;
        if terms.is_empty() {
            return Ok(None);
        }
        // Without history the field stays out of the query: an index without it scores
        // exactly as before history existed.
        let fields = &LEXICAL_COLUMNS[..if self.history_searched { 3 } else { 2 }];
        let combined = CombinedFieldsQuery::try_new(
            terms,
            fields.iter().map(|(c, _)| c.to_string()).collect(),
        )
        .and_then(|q| q.try_with_boosts(fields.iter().map(|(_, w)| *w).collect()))
        .map_err(|e| StoreError::Filter(format!("full-text query: {e}")))?;
        let fts = FullTextSearchQuery::new_query(FtsQuery::CombinedFields(combined));
        let mut q = self.chunks.query().full_text_search(fts).limit(limit);
        if let Some(sql) = sql {
            q = q.only_if(sql);
        }
        Ok(Some(q))
    }

    /// Nearest chunks to `vector` by cosine distance among embedded rows, best first, ties
    /// by id. Below [`StoreOptions::vector_index_min_rows`](crate::StoreOptions) there is
    /// no vector index and the search is exact: the vectors are read once per version of
    /// the chunk table and kept (`VectorTable`), where LanceDB's exact search read and
    /// decoded all of them at every question (eslint, 19,474 vectors: most of a hybrid
    /// answer's time). With an index, LanceDB searches it.
    pub async fn search_vector(
        &self,
        vector: &[f32],
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<VectorHit>, StoreError> {
        self.on_live_version(|| self.search_vector_here(vector, limit, filter))
            .await
    }

    /// [`Store::search_vector`] on this handle's version.
    async fn search_vector_here(
        &self,
        vector: &[f32],
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<VectorHit>, StoreError> {
        if self.options.embedding.is_none() || limit == 0 {
            return Ok(Vec::new());
        }
        let sql = filter.to_sql()?;
        let table = self.vector_table().await?;
        let place = |hits: Vec<VectorHit>| -> Vec<VectorHit> {
            let layouts = self.layouts();
            hits.into_iter()
                .filter_map(|mut hit| {
                    hit.id = Store::placed_id(&layouts, &hit.relative_path, &hit.id)?;
                    Some(hit)
                })
                .collect()
        };
        if !table.indexed {
            return Ok(place(table.nearest(vector, limit, filter)));
        }
        let mut predicate = "vector IS NOT NULL".to_string();
        if let Some(sql) = sql {
            predicate = format!("{predicate} AND ({sql})");
        }
        let batches: Vec<RecordBatch> = self
            .chunks
            .query()
            .nearest_to(vector)
            .map_err(self.lance("preparing a vector query"))?
            .distance_type(DistanceType::Cosine)
            .only_if(predicate)
            .limit(limit)
            .select(Select::columns(&["key", "relativePath"]))
            .batches(self, "vector search")
            .await?;
        let mut hits = Vec::new();
        for batch in &batches {
            let key = text_column(batch, "key").map_err(|r| self.corrupt(r))?;
            let path = text_column(batch, "relativePath").map_err(|r| self.corrupt(r))?;
            let distance = float_column(batch, "_distance").map_err(|r| self.corrupt(r))?;
            for i in 0..batch.num_rows() {
                if distance.is_valid(i) && filter.matches(path.value(i)) {
                    hits.push(VectorHit {
                        id: key.value(i).to_string(),
                        relative_path: path.value(i).to_string(),
                        distance: distance.value(i),
                    });
                }
            }
        }
        // Ties by row key, as the in-memory search orders them.
        hits.sort_by(|a, b| {
            a.distance
                .total_cmp(&b.distance)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(place(hits))
    }

    /// The vectors as of the table's current version: kept from an earlier call (or a
    /// read [`Store::prepare_vectors`] started), or read now.
    async fn vector_table(&self) -> Result<Arc<VectorTable>, StoreError> {
        let version = self
            .chunks
            .version()
            .await
            .map_err(self.lance("reading the version"))?;
        self.vectors.get(&self.chunks, &self.uri, version).await
    }

    /// Starts reading the vectors of the table's current version in the background, unless
    /// they are kept or being read: a server calls this after every sync, so that its next
    /// hybrid answer does not wait for the read (about 50 ms on vite's 14,000 vectors).
    pub async fn prepare_vectors(&self) -> Result<(), StoreError> {
        if self.options.embedding.is_none() {
            return Ok(());
        }
        let version = self
            .chunks
            .version()
            .await
            .map_err(self.lance("reading the version"))?;
        if self.vectors.current(version).is_some() {
            return Ok(());
        }
        let (slot, chunks, uri) = (self.vectors.clone(), self.chunks.clone(), self.uri.clone());
        // A search that starts meanwhile waits for this read instead of making its own.
        tokio::spawn(async move {
            if let Err(e) = slot.get(&chunks, &uri, version).await {
                tracing::warn!("reading the vectors into memory: {e}");
            }
        });
        Ok(())
    }

    /// The stored vectors of the chunks `chunks` (path, id) that have one, by id: the
    /// similarity of a candidate another channel found, from the vectors a search keeps
    /// (see [`Store::search_vector`]), else one query of two columns.
    pub async fn vectors(
        &self,
        chunks: &[(&str, &str)],
    ) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        self.on_live_version(|| self.vectors_here(chunks)).await
    }

    /// [`Store::vectors`] on this handle's version.
    async fn vectors_here(
        &self,
        chunks: &[(&str, &str)],
    ) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        let mut out = HashMap::new();
        if self.options.embedding.is_none() || chunks.is_empty() {
            return Ok(out);
        }
        // Rows are found by key: the chunk's id is its file's layout.
        let layouts = self.layouts();
        let keys: HashMap<String, &str> = chunks
            .iter()
            .filter_map(|&(path, id)| Some((Store::row_key(&layouts, path, id)?, id)))
            .collect();
        // A vector search just read every vector of this version: no second read.
        let table = self.vector_table().await?;
        if !table.indexed {
            return Ok(keys
                .iter()
                .filter_map(|(key, id)| Some((id.to_string(), table.vector(key)?.to_vec())))
                .collect());
        }
        if keys.is_empty() {
            return Ok(out);
        }
        let wanted: Vec<String> = keys.keys().cloned().collect();
        let batches: Vec<RecordBatch> = self
            .chunks
            .query()
            .only_if(format!(
                "vector IS NOT NULL AND {}",
                in_list("key", &wanted)
            ))
            .select(Select::columns(&["key", "vector"]))
            .batches(self, "reading vectors")
            .await?;
        for batch in &batches {
            let key = text_column(batch, "key").map_err(|r| self.corrupt(r))?;
            let vector = vector_column(batch, "vector").map_err(|r| self.corrupt(r))?;
            for i in 0..batch.num_rows() {
                if let (Some(vector), Some(id)) = (vector_at(vector, i), keys.get(key.value(i))) {
                    out.insert(id.to_string(), vector.to_vec());
                }
            }
        }
        Ok(out)
    }

    fn scored(
        &self,
        batches: &[RecordBatch],
        score_column: &str,
        filter: &ChunkFilter,
    ) -> Result<Vec<(StoredChunk, f32)>, StoreError> {
        let mut out = Vec::new();
        let layouts = self.layouts();
        for batch in batches {
            let scores = float_column(batch, score_column).map_err(|r| self.corrupt(r))?;
            // A row newer than this handle's files table is left out; each row read keeps
            // its number in the batch, which is its score's.
            let rows = batch_to_chunks(batch, &self.root, Placing::By(&layouts))
                .map_err(|r| self.corrupt(r))?;
            for (i, row) in rows {
                if filter.matches(&row.chunk.relative_path) && scores.is_valid(i) {
                    out.push((row, scores.value(i)));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Embedder;
    use crate::testing::TokenHashEmbedder;
    use crate::text_table::tests::embedded_workspace;

    /// The in-memory search ranks as cosine distance computed plainly does: every row, a
    /// dimension that is no multiple of the SIMD lanes, a filter, a zero vector left out.
    #[test]
    fn the_nearest_rows_are_those_of_plain_cosine_distance() {
        let dimension = 19;
        let mut table = VectorTable::default();
        let vector = |row: usize| -> Vec<f32> {
            (0..dimension)
                .map(|i| (((row * 31 + i * 17) % 23) as f32 - 11.0) / 7.0)
                .collect()
        };
        for row in 0..300 {
            let dir = if row % 3 == 0 { "src" } else { "test" };
            table.push(
                &format!("id{row:03}"),
                &format!("{dir}/f{row}.ts"),
                &vector(row),
            );
        }
        table.push("zero", "src/zero.ts", &vec![0.0; dimension]);
        table.by_key = (0..table.keys.len() as u32).collect();
        let query = vector(1000);
        let plain = |v: &[f32]| -> f32 {
            let dot: f64 = v
                .iter()
                .zip(&query)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
            let norm = |x: &[f32]| x.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
            (1.0 - dot / (norm(v) * norm(&query))) as f32
        };
        let filter = ChunkFilter {
            paths: vec!["src".to_string()],
            ..ChunkFilter::default()
        };
        let hits = table.nearest(&query, 10, &filter);
        let mut expected: Vec<(f32, String)> = (0..300)
            .filter(|row| row % 3 == 0)
            .map(|row| (plain(&vector(row)), format!("id{row:03}")))
            .collect();
        expected.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        assert_eq!(hits.len(), 10);
        for (hit, (distance, id)) in hits.iter().zip(&expected) {
            assert_eq!(&hit.id, id);
            assert!(
                (hit.distance - distance).abs() < 1e-5,
                "{hit:?} against {distance}"
            );
        }
    }

    /// After a sync that writes rows, [`Store::prepare_vectors`] reads the new version's
    /// vectors in the background: the next vector search keeps them instead of reading
    /// them itself, and finds what a fresh read finds.
    #[tokio::test]
    async fn prepared_vectors_serve_the_next_search() {
        let embedder = TokenHashEmbedder::new(16);
        let (root, mut store) = embedded_workspace(&embedder, TextSearch::Index).await;
        let embedder: &dyn Embedder = &embedder;
        store.embed_pending(embedder, &()).await.unwrap();
        let query = embedder
            .embed_documents(&["session token".to_string()])
            .await
            .unwrap()
            .remove(0);
        let all = ChunkFilter::default();
        store.search_vector(&query, 5, &all).await.unwrap();

        std::fs::write(
            root.path().join("src/util/quota.ts"),
            "export function sessionQuota(token: string) {\n  return token.length;\n}\n",
        )
        .unwrap();
        store.sync(None, &()).await.unwrap();
        store.embed_pending(embedder, &()).await.unwrap();
        let version = store.chunks.version().await.unwrap();
        assert!(store.vectors.current(version).is_none(), "a new version");

        store.prepare_vectors().await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let prepared = loop {
            if let Some(table) = store.vectors.current(version) {
                break table;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the read never landed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        let hits = store.search_vector(&query, 5, &all).await.unwrap();
        let kept = store.vectors.current(version).unwrap();
        assert!(Arc::ptr_eq(&prepared, &kept), "the search read nothing");
        let fresh = VectorTable::read(&store.chunks, &store.uri, version)
            .await
            .unwrap();
        // The table holds row keys; a search answers with the ids the files table places.
        let expected: Vec<VectorHit> = fresh
            .nearest(&query, 5, &all)
            .into_iter()
            .map(|mut hit| {
                hit.id = Store::placed_id(&store.layouts(), &hit.relative_path, &hit.id).unwrap();
                hit
            })
            .collect();
        assert_eq!(hits, expected);
        assert!(fresh.paths.iter().any(|p| p == "src/util/quota.ts"));
    }
}
