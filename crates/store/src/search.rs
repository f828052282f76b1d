//! The two candidate channels of blueprint Stage 1, answered inside LanceDB with the path
//! and language filters applied in the query (not after it).

use lancedb::DistanceType;
use std::collections::HashMap;

use lancedb::arrow::arrow_array::{
    Array, FixedSizeListArray, Float32Array, RecordBatch, StringArray,
};
use lancedb::index::scalar::{CombinedFieldsQuery, FtsQuery, FullTextSearchQuery};
use lancedb::query::{QueryBase, Select};

use crate::schema::batch_to_chunks;
use crate::sql::{in_list, sql_string, text_column};
use crate::store::CollectBatches;
use crate::text_index::LEXICAL_COLUMNS;
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
    /// BM25F over a chunk's names and source (see [`LEXICAL_COLUMNS`]) with code-aware,
    /// stemmed tokens: `getUserName` matches `user`, `names` and itself. Several words are
    /// OR-ed, so a query is never empty just because one word is missing. Best first, with
    /// the score.
    pub async fn search_lexical(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<(StoredChunk, f32)>, StoreError> {
        let Some(q) = self.lexical_query(query, limit, filter)? else {
            return Ok(Vec::new());
        };
        let batches: Vec<RecordBatch> = match q.batches(self, "full-text search").await {
            Ok(batches) => batches,
            Err(_) if self.holds_no_chunks().await? => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut hits = self.scored(&batches, "_score", filter)?;
        // Equal scores come back in whatever order the parallel scan finished: order them by
        // id so the same query ranks the same way every time.
        hits.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| a.0.chunk.id.cmp(&b.0.chunk.id))
        });
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
        let Some(q) = self.lexical_query(query, limit, filter)? else {
            return Ok(Vec::new());
        };
        let columns: &[&str] = if self.history_searched {
            &["id", "relativePath", "history"]
        } else {
            &["id", "relativePath"]
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
            let id = text_column(batch, "id").map_err(|r| self.corrupt(r))?;
            let path = text_column(batch, "relativePath").map_err(|r| self.corrupt(r))?;
            let history = if self.history_searched {
                Some(text_column(batch, "history").map_err(|r| self.corrupt(r))?)
            } else {
                None
            };
            let score = batch
                .column_by_name("_score")
                .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
                .ok_or_else(|| self.corrupt("full-text hits lack _score".into()))?;
            for i in 0..batch.num_rows() {
                if score.is_valid(i) && filter.matches(path.value(i)) {
                    hits.push(LexicalHit {
                        id: id.value(i).to_string(),
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
        Ok(hits)
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

    /// The BM25F query of `query`'s words, filtered; `None` when there is nothing to search.
    fn lexical_query(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Option<lancedb::query::Query>, StoreError> {
        if query.trim().is_empty() || limit == 0 {
            return Ok(None);
        }
        // Without history the field stays out of the query: an index without it scores
        // exactly as before history existed.
        let fields = &LEXICAL_COLUMNS[..if self.history_searched { 3 } else { 2 }];
        let combined = CombinedFieldsQuery::try_new(
            query.to_string(),
            fields.iter().map(|(c, _)| c.to_string()).collect(),
        )
        .and_then(|q| q.try_with_boosts(fields.iter().map(|(_, w)| *w).collect()))
        .map_err(|e| StoreError::Filter(format!("full-text query: {e}")))?;
        let fts = FullTextSearchQuery::new_query(FtsQuery::CombinedFields(combined));
        let mut q = self.chunks.query().full_text_search(fts).limit(limit);
        if let Some(sql) = filter.to_sql()? {
            q = q.only_if(sql);
        }
        Ok(Some(q))
    }

    /// Nearest chunks to `vector` by cosine distance among embedded rows, best first. Only
    /// the hits' ids and paths are read, not their rows: on eslint (19,474 embedded chunks)
    /// reading the rows made a hybrid answer's p50 36-39 ms against 27-30 ms.
    pub async fn search_vector(
        &self,
        vector: &[f32],
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<VectorHit>, StoreError> {
        if self.options.embedding.is_none() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut predicate = "vector IS NOT NULL".to_string();
        if let Some(sql) = filter.to_sql()? {
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
            .select(Select::columns(&["id", "relativePath"]))
            .batches(self, "vector search")
            .await?;
        let mut hits = Vec::new();
        for batch in &batches {
            let id = text_column(batch, "id").map_err(|r| self.corrupt(r))?;
            let path = text_column(batch, "relativePath").map_err(|r| self.corrupt(r))?;
            let distance = batch
                .column_by_name("_distance")
                .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
                .ok_or_else(|| self.corrupt("vector hits lack _distance".into()))?;
            for i in 0..batch.num_rows() {
                if distance.is_valid(i) && filter.matches(path.value(i)) {
                    hits.push(VectorHit {
                        id: id.value(i).to_string(),
                        relative_path: path.value(i).to_string(),
                        distance: distance.value(i),
                    });
                }
            }
        }
        hits.sort_by(|a, b| {
            a.distance
                .total_cmp(&b.distance)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(hits)
    }

    /// The stored vectors of the chunks `ids` that have one, by id: the similarity of a
    /// candidate another channel found (one query, two columns).
    pub async fn vectors(&self, ids: &[String]) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        let mut out = HashMap::new();
        if self.options.embedding.is_none() || ids.is_empty() {
            return Ok(out);
        }
        let batches: Vec<RecordBatch> = self
            .chunks
            .query()
            .only_if(format!("vector IS NOT NULL AND {}", in_list("id", ids)))
            .select(Select::columns(&["id", "vector"]))
            .batches(self, "reading vectors")
            .await?;
        for batch in &batches {
            let (Some(id), Some(vector)) = (
                batch
                    .column_by_name("id")
                    .and_then(|c| c.as_any().downcast_ref::<StringArray>()),
                batch
                    .column_by_name("vector")
                    .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>()),
            ) else {
                return Err(self.corrupt("vectors lack the id or vector column".into()));
            };
            for i in 0..batch.num_rows() {
                let values = vector.value(i);
                if let Some(values) = values.as_any().downcast_ref::<Float32Array>() {
                    out.insert(id.value(i).to_string(), values.values().to_vec());
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
        for batch in batches {
            let scores = batch
                .column_by_name(score_column)
                .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
                .ok_or_else(|| self.corrupt(format!("search results lack {score_column}")))?;
            let rows = batch_to_chunks(batch, &self.root).map_err(|r| self.corrupt(r))?;
            for (i, row) in rows.into_iter().enumerate() {
                if filter.matches(&row.chunk.relative_path) && scores.is_valid(i) {
                    out.push((row, scores.value(i)));
                }
            }
        }
        Ok(out)
    }
}
