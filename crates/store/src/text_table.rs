//! The lexical channel's BM25F kept in memory ([`TextSearch::Memory`]): the same fields,
//! tokenizer and scoring as LanceDB's full-text search over the chunk table, without a
//! query plan per question. LanceDB's search costs about 3.4 ms of a warm answer on vite
//! whatever the query; this one well under a millisecond.
//!
//! Scores equal LanceDB's `combined_fields` query (Lucene's `CombinedFieldQuery`) on a table
//! whose full-text indexes cover every row: per term, `tf' = Σ w·tf` over the fields,
//! `docFreq' = max` of the fields' document frequencies; per row `dl' = Σ w·dl`; and
//! `avgdl' = Σ w·(field's tokens) / docCount'`, where `docCount'` is the largest field's
//! count of rows with a token. The additions run in LanceDB's order, so the sums round
//! alike. The scorer itself is LanceDB's ([`CombinedFieldsBM25Scorer`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use lance_index::scalar::inverted::CombinedFieldsBM25Scorer;
use lance_index::scalar::inverted::query::collect_query_tokens;
use lance_index::scalar::inverted::tokenizer::document_tokenizer::LanceTokenizer;
use lance_tokenizer::TokenStream;
use lancedb::Table;
use lancedb::arrow::arrow_array::{Array, RecordBatch, StringArray};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use crate::StoreError;
use crate::search::{ChunkFilter, LexicalHit, best_by};
use crate::sql::text_column;
use crate::store::{corrupt_error, lance_error};
use crate::text_index::{LEXICAL_COLUMNS, lexical_tokens};

/// Where the lexical channel's BM25F runs ([`StoreOptions::text_search`](crate::StoreOptions)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextSearch {
    /// LanceDB's full-text index: nothing to read first, the choice of a one-off search.
    #[default]
    Index,
    /// In memory: the searched fields are read and tokenized once per version of the chunk
    /// table (about 0.4 s on vite's 14,000 chunks), by the first search that needs them.
    Memory,
    /// In memory, read in the background: until a version's copy lands, searches use the
    /// index. A long-running server's choice: no answer waits for the read.
    MemoryInBackground,
}

/// One term's postings: each row holding it, with its blended frequency `tf'`.
#[derive(Debug, Default)]
struct Postings {
    /// `docFreq'`: the largest of the fields' counts of rows holding the term.
    doc_freq: usize,
    rows: Vec<(u32, f32)>,
}

/// The searched fields of one version of the chunk table, tokenized.
pub(crate) struct TextTable {
    /// Whether the `history` field is one of the fields (as the store searched it then).
    with_history: bool,
    /// What the rows' texts are a function of, summed over the rows ([`row_fingerprint`]):
    /// a later version of the table with the same sum has the same texts (only vectors
    /// were written), and this copy serves it too.
    fingerprint: u64,
    ids: Vec<String>,
    paths: Vec<String>,
    /// Each row's commit notes, returned with its hits (empty without history).
    history: Vec<String>,
    /// Each row's blended length `dl'`.
    lengths: Vec<f32>,
    terms: HashMap<String, u32>,
    postings: Vec<Postings>,
    /// `docCount'` and `avgdl'`.
    doc_count: usize,
    avg_doc_length: f32,
    /// The index's own tokenizer: a question's words split and stem as the rows' did.
    tokenizer: Mutex<Box<dyn LanceTokenizer>>,
}

/// The kept copy (and the table version it serves) and whether a background read of a
/// newer one is under way.
#[derive(Default)]
pub(crate) struct TextSlot {
    kept: Mutex<Option<(u64, Arc<TextTable>)>>,
    reading: AtomicBool,
}

impl TextSlot {
    /// The kept copy, when it serves `version` with the same fields.
    pub(crate) fn current(&self, version: u64, with_history: bool) -> Option<Arc<TextTable>> {
        self.kept()
            .filter(|(v, t)| *v == version && t.with_history == with_history)
            .map(|(_, t)| t)
    }

    fn kept(&self) -> Option<(u64, Arc<TextTable>)> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn keep(&self, version: u64, table: Arc<TextTable>) {
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some((version, table));
    }

    /// The copy for `version` of `chunks`: the kept one when the rows' texts are those it
    /// was read from (the versions between wrote only vectors: the background embedder
    /// commits one every few seconds), else read anew.
    async fn for_version(
        &self,
        chunks: &Table,
        uri: &str,
        with_history: bool,
    ) -> Result<Arc<TextTable>, StoreError> {
        let started = std::time::Instant::now();
        if let Some((_, table)) = self.kept().filter(|(_, t)| t.with_history == with_history)
            && fingerprint(chunks, uri, with_history).await? == table.fingerprint
        {
            tracing::debug!(
                elapsed = ?started.elapsed(),
                "full-text fields in memory kept: the rows' texts did not change"
            );
            return Ok(table);
        }
        Ok(Arc::new(TextTable::read(chunks, uri, with_history).await?))
    }

    /// The copy for `version` of `chunks` (the handle's), now, kept.
    pub(crate) async fn read(
        &self,
        chunks: &Table,
        uri: &str,
        version: u64,
        with_history: bool,
    ) -> Result<Arc<TextTable>, StoreError> {
        let table = self.for_version(chunks, uri, with_history).await?;
        self.keep(version, table.clone());
        Ok(table)
    }

    /// Starts bringing the copy to `version` of `chunks` in the background, unless that is
    /// under way. A copy made while another version was committed is dropped: the next
    /// search after that starts again.
    pub(crate) fn read_in_background(
        self: &Arc<Self>,
        chunks: &Table,
        uri: &str,
        version: u64,
        with_history: bool,
    ) {
        if self.reading.swap(true, Ordering::AcqRel) {
            return;
        }
        let (slot, chunks, uri) = (Arc::clone(self), chunks.clone(), uri.to_string());
        tokio::spawn(async move {
            match slot.for_version(&chunks, &uri, with_history).await {
                Ok(table) => {
                    if chunks.version().await.is_ok_and(|v| v == version) {
                        slot.keep(version, table);
                    }
                }
                Err(e) => tracing::warn!("reading the full-text fields into memory: {e}"),
            }
            slot.reading.store(false, Ordering::Release);
        });
    }
}

/// Every row of `chunks` (at the handle's version), `columns` only, batch by batch.
async fn scan(
    chunks: &Table,
    uri: &str,
    columns: &[&str],
    action: &'static str,
) -> Result<lancedb::arrow::SendableRecordBatchStream, StoreError> {
    chunks
        .query()
        .select(Select::columns(columns))
        .execute()
        .await
        .map_err(lance_error(uri, action))
}

/// What a row's searched texts are a function of: its id (path and name), its file's
/// content hash and, when searched, its commit notes.
fn row_fingerprint(id: &str, content_hash: &str, history: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (id, content_hash, history).hash(&mut hasher);
    hasher.finish()
}

/// The sum of [`row_fingerprint`] over the rows of `chunks`: three narrow columns, a small
/// fraction of a full read.
async fn fingerprint(chunks: &Table, uri: &str, with_history: bool) -> Result<u64, StoreError> {
    let action = "reading the chunks' fingerprints";
    let mut columns = vec!["id", "contentHash"];
    if with_history {
        columns.push("history");
    }
    let mut stream = scan(chunks, uri, &columns, action).await?;
    let corrupt = corrupt_error(uri);
    let mut sum = 0u64;
    while let Some(batch) = stream.try_next().await.map_err(lance_error(uri, action))? {
        let id = text_column(&batch, "id").map_err(&corrupt)?;
        let hash = text_column(&batch, "contentHash").map_err(&corrupt)?;
        let history = if with_history {
            Some(text_column(&batch, "history").map_err(&corrupt)?)
        } else {
            None
        };
        for i in 0..batch.num_rows() {
            let notes = history.map(|h| if h.is_valid(i) { h.value(i) } else { "" });
            sum = sum.wrapping_add(row_fingerprint(id.value(i), hash.value(i), notes));
        }
    }
    Ok(sum)
}

impl TextTable {
    /// Reads and tokenizes the searched fields of `chunks` (at the handle's version).
    async fn read(chunks: &Table, uri: &str, with_history: bool) -> Result<Self, StoreError> {
        let started = std::time::Instant::now();
        let table = Self::read_fields(chunks, uri, with_history).await?;
        tracing::debug!(
            rows = table.ids.len(),
            terms = table.postings.len(),
            postings = table.postings.iter().map(|p| p.rows.len()).sum::<usize>(),
            history_bytes = table.history.iter().map(String::len).sum::<usize>(),
            elapsed = ?started.elapsed(),
            "full-text fields read into memory"
        );
        Ok(table)
    }

    /// [`TextTable::read`] without the log.
    async fn read_fields(
        chunks: &Table,
        uri: &str,
        with_history: bool,
    ) -> Result<Self, StoreError> {
        let fields: Vec<(&str, f32)> = LEXICAL_COLUMNS[..if with_history { 3 } else { 2 }].to_vec();
        let mut columns = vec!["id", "relativePath", "contentHash"];
        columns.extend(fields.iter().map(|(c, _)| *c));
        let action = "reading the full-text fields";
        let mut stream = scan(chunks, uri, &columns, action).await?;
        let mut builder = Builder::new(fields, with_history, uri)?;
        // One batch at a time (the whole source of a large repository is hundreds of MB),
        // each tokenized off the async workers.
        while let Some(batch) = stream.try_next().await.map_err(lance_error(uri, action))? {
            let owned_uri = uri.to_string();
            builder = tokio::task::spawn_blocking(move || {
                builder.add_batch(&batch, &owned_uri)?;
                Ok::<_, StoreError>(builder)
            })
            .await
            .map_err(|e| {
                corrupt_error(uri)(format!("tokenizing the full-text fields panicked: {e}"))
            })??;
        }
        Ok(builder.finish())
    }

    /// The `limit` best rows for `query` among those `filter` admits, best first, ties by
    /// id: LanceDB's `combined_fields` search with its words OR-ed.
    pub(crate) fn search(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Vec<LexicalHit> {
        if limit == 0 || self.ids.is_empty() {
            return Vec::new();
        }
        let tokens = {
            let mut tokenizer = self.tokenizer.lock().unwrap_or_else(|e| e.into_inner());
            collect_query_tokens(query, &mut tokenizer)
        };
        let mut terms: Vec<String> = Vec::new();
        for token in tokens {
            if !terms.contains(&token) {
                terms.push(token);
            }
        }
        let postings: Vec<(&str, &Postings)> = terms
            .iter()
            .filter_map(|t| Some((t.as_str(), &self.postings[*self.terms.get(t)? as usize])))
            .collect();
        let scorer = CombinedFieldsBM25Scorer::new(
            self.doc_count,
            self.avg_doc_length,
            postings
                .iter()
                .map(|(t, p)| (t.to_string(), p.doc_freq))
                .collect(),
        );
        // Terms in the question's order, each row's score summed in that order: LanceDB's.
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for (term, p) in &postings {
            let idf = scorer.query_weight(term);
            for &(row, tf) in &p.rows {
                *scores.entry(row).or_insert(0.0) +=
                    idf * scorer.doc_weight(tf, self.lengths[row as usize]);
            }
        }
        let ranked: Vec<(f32, u32)> = scores
            .into_iter()
            .filter(|&(row, _)| filter.admits(&self.paths[row as usize]))
            .map(|(row, score)| (score, row))
            .collect();
        let order = |a: &(f32, u32), b: &(f32, u32)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.ids[a.1 as usize].cmp(&self.ids[b.1 as usize]))
        };
        best_by(ranked, limit, order)
            .into_iter()
            .map(|(score, row)| LexicalHit {
                id: self.ids[row as usize].clone(),
                relative_path: self.paths[row as usize].clone(),
                score,
                history: self.history[row as usize].clone(),
            })
            .collect()
    }
}

/// A [`TextTable`] being filled row by row.
struct Builder {
    fields: Vec<(&'static str, f32)>,
    table: TextTable,
    /// Per term, each field's count of rows holding it.
    field_doc_freqs: Vec<Vec<usize>>,
    /// Per field, its rows with a token and its tokens.
    field_docs: Vec<usize>,
    field_tokens: Vec<u64>,
    /// Scratch: one field's term counts, one row's blended frequencies (in first-seen order).
    counts: HashMap<u32, u32>,
    row: Vec<(u32, f32)>,
    row_at: HashMap<u32, usize>,
}

impl Builder {
    fn new(
        fields: Vec<(&'static str, f32)>,
        with_history: bool,
        uri: &str,
    ) -> Result<Self, StoreError> {
        let tokenizer = lexical_tokens()
            .build()
            .map_err(|e| corrupt_error(uri)(format!("the full-text tokenizer: {e}")))?;
        let n = fields.len();
        Ok(Self {
            fields,
            table: TextTable {
                with_history,
                fingerprint: 0,
                ids: Vec::new(),
                paths: Vec::new(),
                history: Vec::new(),
                lengths: Vec::new(),
                terms: HashMap::new(),
                postings: Vec::new(),
                doc_count: 0,
                avg_doc_length: 0.0,
                tokenizer: Mutex::new(tokenizer),
            },
            field_doc_freqs: Vec::new(),
            field_docs: vec![0; n],
            field_tokens: vec![0; n],
            counts: HashMap::new(),
            row: Vec::new(),
            row_at: HashMap::new(),
        })
    }

    /// Every row of `batch` (the id, the path, the file's content hash and the fields'
    /// columns).
    fn add_batch(&mut self, batch: &RecordBatch, uri: &str) -> Result<(), StoreError> {
        let corrupt = corrupt_error(uri);
        let id = text_column(batch, "id").map_err(&corrupt)?;
        let path = text_column(batch, "relativePath").map_err(&corrupt)?;
        let hash = text_column(batch, "contentHash").map_err(&corrupt)?;
        let texts: Vec<&StringArray> = self
            .fields
            .iter()
            .map(|(c, _)| text_column(batch, c).map_err(&corrupt))
            .collect::<Result<_, _>>()?;
        for i in 0..batch.num_rows() {
            let row_texts: Vec<Option<&str>> = texts
                .iter()
                .map(|column| column.is_valid(i).then(|| column.value(i)))
                .collect();
            let notes = self
                .table
                .with_history
                .then(|| row_texts.get(2).copied().flatten().unwrap_or_default());
            self.table.fingerprint = self.table.fingerprint.wrapping_add(row_fingerprint(
                id.value(i),
                hash.value(i),
                notes,
            ));
            self.add(id.value(i), path.value(i), &row_texts);
        }
        Ok(())
    }

    /// One row: its id, path and each field's text (`None` for null), in field order.
    fn add(&mut self, id: &str, path: &str, texts: &[Option<&str>]) {
        let row_number = self.table.ids.len() as u32;
        self.row.clear();
        self.row_at.clear();
        let mut lengths = Vec::with_capacity(texts.len());
        let tokenizer = self
            .table
            .tokenizer
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        for (field, text) in texts.iter().enumerate() {
            let weight = self.fields[field].1;
            self.counts.clear();
            let mut length: u32 = 0;
            if let Some(text) = text {
                let mut stream = tokenizer.token_stream_for_doc(text);
                while stream.advance() {
                    let word = &stream.token().text;
                    let term = match self.table.terms.get(word.as_str()) {
                        Some(&term) => term,
                        None => {
                            let term = self.table.postings.len() as u32;
                            self.table.terms.insert(word.clone(), term);
                            self.table.postings.push(Postings::default());
                            self.field_doc_freqs.push(vec![0; self.fields.len()]);
                            term
                        }
                    };
                    *self.counts.entry(term).or_insert(0) += 1;
                    length += 1;
                }
            }
            // A row without a token is no document of the field's index (LanceDB's rule).
            if length > 0 {
                self.field_docs[field] += 1;
                self.field_tokens[field] += u64::from(length);
            }
            lengths.push(weight * length as f32);
            for (&term, &count) in &self.counts {
                self.field_doc_freqs[term as usize][field] += 1;
                let at = *self.row_at.entry(term).or_insert_with(|| {
                    self.row.push((term, 0.0));
                    self.row.len() - 1
                });
                self.row[at].1 += weight * count as f32;
            }
        }
        for &(term, tf) in &self.row {
            self.table.postings[term as usize]
                .rows
                .push((row_number, tf));
        }
        self.table.lengths.push(lengths.into_iter().sum());
        self.table.ids.push(id.to_string());
        self.table.paths.push(path.to_string());
        let history = if self.table.with_history {
            texts.get(2).copied().flatten().unwrap_or_default()
        } else {
            ""
        };
        self.table.history.push(history.to_string());
    }

    fn finish(mut self) -> TextTable {
        for (postings, field_counts) in self.table.postings.iter_mut().zip(&self.field_doc_freqs) {
            postings.doc_freq = field_counts.iter().copied().max().unwrap_or(0);
        }
        let doc_count = self.field_docs.iter().copied().max().unwrap_or(0);
        let weighted_tokens: f64 = self
            .fields
            .iter()
            .zip(&self.field_tokens)
            .map(|((_, weight), &tokens)| *weight as f64 * tokens as f64)
            .fold(0.0, |sum, t| sum + t);
        self.table.doc_count = doc_count;
        self.table.avg_doc_length = if doc_count > 0 {
            (weighted_tokens / doc_count as f64) as f32
        } else {
            0.0
        };
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TokenHashEmbedder;
    use crate::{Embedder, Shared, Store, StoreOptions};

    /// Versions that write only vectors (the background embedder commits one every few
    /// seconds) keep the copy; a version that changes a row's text reads it anew.
    #[tokio::test]
    async fn the_copy_outlives_versions_that_write_only_vectors() {
        let root = tempfile::tempdir().unwrap();
        codectx_corpus::copy_tree(&codectx_corpus::fixture("index/workspace"), root.path());
        let embedder = TokenHashEmbedder::new(16);
        let options = StoreOptions {
            embedding: Some(embedder.spec()),
            shared_vectors: Shared::Off,
            text_search: TextSearch::Memory,
            ..StoreOptions::default()
        };
        let mut store = Store::open(root.path(), options).await.unwrap();
        store.sync(None, &()).await.unwrap();
        let all = ChunkFilter::default();
        let search = async |store: &Store| {
            store
                .search_lexical_hits("session token", 10, &all)
                .await
                .unwrap()
        };
        let version = async |store: &Store| store.chunks.version().await.unwrap();

        let before = search(&store).await;
        let (read_at, read) = store.text.kept().expect("a copy");
        assert_eq!(read_at, version(&store).await);

        let embedded = store
            .embed_pending(&embedder as &dyn Embedder, &())
            .await
            .unwrap();
        assert!(embedded.chunks_embedded > 0, "{embedded:?}");
        assert!(
            version(&store).await > read_at,
            "the vectors are a new version"
        );
        assert_eq!(search(&store).await, before);
        let (kept_at, kept) = store.text.kept().unwrap();
        assert_eq!(
            kept_at,
            version(&store).await,
            "the copy serves the new version"
        );
        assert!(
            Arc::ptr_eq(&read, &kept),
            "and is the same copy, not read again"
        );

        std::fs::write(
            root.path().join("src/util/quota.ts"),
            "export function sessionQuota(token: string) {\n  return token.length;\n}\n",
        )
        .unwrap();
        store.sync(None, &()).await.unwrap();
        let after = search(&store).await;
        let (_, fresh) = store.text.kept().unwrap();
        assert!(!Arc::ptr_eq(&read, &fresh), "a new row's text: read anew");
        assert!(after.iter().any(|h| h.relative_path == "src/util/quota.ts"));
    }
}
