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
//!
//! A later version of the table is matched against the copy row by row ([`row_fingerprint`]):
//! the rows whose texts changed are taken out of its statistics and the new ones read and
//! tokenized, so a sync that touches a few files costs a few files' reading, and the copy
//! still equals a fresh read of the new version.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use lance_index::scalar::inverted::CombinedFieldsBM25Scorer;
use lancedb::Table;
use lancedb::arrow::arrow_array::{Array, RecordBatch, StringArray};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use crate::StoreError;
use crate::search::{ChunkFilter, LexicalHit, best_by};
use crate::sql::{in_list, text_column};
use crate::store::{corrupt_error, lance_error};
use crate::text_index::{LEXICAL_COLUMNS, query_terms};

/// Where the lexical channel's BM25F runs ([`StoreOptions::text_search`](crate::StoreOptions)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextSearch {
    /// LanceDB's full-text index: nothing to read first, the choice of a one-off search.
    #[default]
    Index,
    /// In memory: the searched fields' terms are read once per version of the chunk table
    /// (about 0.08 s on vite's 14,000 chunks), by the first search that needs them.
    Memory,
    /// In memory, read in the background: until a version's copy lands, searches use the
    /// index. A long-running server's choice: no answer waits for the read.
    MemoryInBackground,
}

/// The most fields the lexical channel searches ([`LEXICAL_COLUMNS`]).
const MAX_FIELDS: usize = LEXICAL_COLUMNS.len();

/// One term's postings: each row holding it, with its blended frequency `tf'`.
#[derive(Debug, Default)]
struct Postings {
    /// `docFreq'`: the largest of the fields' counts of rows holding the term.
    doc_freq: usize,
    rows: Vec<(u32, f32)>,
    /// Beside each row, a bit per field holding the term: what a patch takes out of the
    /// fields' document frequencies when the row goes.
    fields: Vec<u8>,
}

/// The searched fields of one version of the chunk table, tokenized.
pub(crate) struct TextTable {
    /// Whether the `history` field is one of the fields (as the store searched it then).
    with_history: bool,
    /// What each row's texts are a function of ([`row_fingerprint`]): a later version's rows
    /// with the same fingerprints have the same texts (versions that write only vectors),
    /// and the others are what a patch reads.
    fingerprints: Vec<u64>,
    keys: Vec<String>,
    paths: Vec<String>,
    /// Each row's commit notes, returned with its hits (empty without history).
    history: Vec<String>,
    /// Each row's blended length `dl'`.
    lengths: Vec<f32>,
    /// Each row's tokens in each field (what `lengths` blends; 0 for an absent field).
    field_lengths: Vec<[u32; MAX_FIELDS]>,
    terms: HashMap<String, u32>,
    postings: Vec<Postings>,
    /// `docCount'` and `avgdl'`.
    doc_count: usize,
    avg_doc_length: f32,
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
    /// commits one every few seconds), the kept one patched when some changed, else read
    /// anew.
    async fn for_version(
        &self,
        chunks: &Table,
        uri: &str,
        with_history: bool,
    ) -> Result<Arc<TextTable>, StoreError> {
        let started = std::time::Instant::now();
        let Some((_, kept)) = self.kept().filter(|(_, t)| t.with_history == with_history) else {
            return Ok(Arc::new(TextTable::read(chunks, uri, with_history).await?));
        };
        let changes = kept.changes(chunks, uri).await?;
        if changes.is_empty() {
            tracing::debug!(
                elapsed = ?started.elapsed(),
                "full-text fields in memory kept: the rows' texts did not change"
            );
            return Ok(kept);
        }
        // Past half the rows, reading them all costs less than looking each file up.
        if changes.added.len() <= changes.kept.len().max(1) / 2
            && let Some(patched) = kept.patched(chunks, uri, &changes).await?
        {
            tracing::debug!(
                removed = changes.kept.iter().filter(|k| !**k).count(),
                added = changes.added.len(),
                elapsed = ?started.elapsed(),
                "full-text fields in memory patched"
            );
            return Ok(Arc::new(patched));
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

/// What a row's searched texts are a function of: its key (path and name), its content
/// hash and, when searched, its commit notes.
fn row_fingerprint(key: &str, content_hash: &str, history: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (key, content_hash, history).hash(&mut hasher);
    hasher.finish()
}

/// How a later version of the chunk table differs from a copy: which of the copy's rows it
/// still has, and the fingerprints and paths of the rows it has anew.
struct Changes {
    kept: Vec<bool>,
    added: Vec<(u64, String)>,
}

impl Changes {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.kept.iter().all(|k| *k)
    }
}

/// How many files one lookup of a patch names.
const PATHS_A_QUERY: usize = 200;

impl TextTable {
    /// Reads the searched fields' terms of `chunks` (at the handle's version).
    async fn read(chunks: &Table, uri: &str, with_history: bool) -> Result<Self, StoreError> {
        let started = std::time::Instant::now();
        let table = Self::read_fields(chunks, uri, with_history).await?;
        tracing::debug!(
            rows = table.keys.len(),
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
        let mut builder = Builder::new(with_history);
        let action = "reading the full-text fields";
        let mut stream = scan(chunks, uri, &builder.columns(), action).await?;
        // One batch at a time (the whole source of a large repository is hundreds of MB).
        while let Some(batch) = stream.try_next().await.map_err(lance_error(uri, action))? {
            builder = builder.add_batch_off_async(batch, uri).await?;
        }
        Ok(builder.finish())
    }

    /// How `chunks` (at the handle's version) differs from this copy, from three narrow
    /// columns (a small fraction of a full read).
    async fn changes(&self, chunks: &Table, uri: &str) -> Result<Changes, StoreError> {
        let action = "reading the chunks' fingerprints";
        let mut columns = vec!["key", "relativePath", "contentHash"];
        if self.with_history {
            columns.push("history");
        }
        let mut stream = scan(chunks, uri, &columns, action).await?;
        let corrupt = corrupt_error(uri);
        // Each row of the new version takes one of this copy's rows with its fingerprint.
        let mut rows = Fingerprints::new(
            (0..self.fingerprints.len() as u32).map(|row| (self.fingerprints[row as usize], row)),
        );
        let mut added = Vec::new();
        while let Some(batch) = stream.try_next().await.map_err(lance_error(uri, action))? {
            let key = text_column(&batch, "key").map_err(&corrupt)?;
            let path = text_column(&batch, "relativePath").map_err(&corrupt)?;
            let hash = text_column(&batch, "contentHash").map_err(&corrupt)?;
            let history = if self.with_history {
                Some(text_column(&batch, "history").map_err(&corrupt)?)
            } else {
                None
            };
            for i in 0..batch.num_rows() {
                let notes = history.map(|h| if h.is_valid(i) { h.value(i) } else { "" });
                let fingerprint = row_fingerprint(key.value(i), hash.value(i), notes);
                if rows.take(fingerprint).is_none() {
                    added.push((fingerprint, path.value(i).to_string()));
                }
            }
        }
        let mut kept = vec![true; self.fingerprints.len()];
        for row in rows.untaken() {
            kept[row as usize] = false;
        }
        Ok(Changes { kept, added })
    }

    /// This copy without the rows `changes` drops, with the rows it adds read from
    /// `chunks` (their files' rows, by the path index). `None` when the table no longer
    /// holds what `changes` says (another writer committed since): read it anew.
    async fn patched(
        &self,
        chunks: &Table,
        uri: &str,
        changes: &Changes,
    ) -> Result<Option<TextTable>, StoreError> {
        let mut builder = Builder::keeping(self, &changes.kept);
        builder.wanted = Some(Fingerprints::new(
            changes
                .added
                .iter()
                .map(|(fingerprint, _)| (*fingerprint, ())),
        ));
        let mut paths: Vec<String> = changes.added.iter().map(|(_, p)| p.clone()).collect();
        paths.sort_unstable();
        paths.dedup();
        let action = "reading the changed rows' full-text fields";
        let columns = builder.columns();
        for group in paths.chunks(PATHS_A_QUERY) {
            let mut stream = chunks
                .query()
                .only_if(in_list("relativePath", group))
                .select(Select::columns(&columns))
                .execute()
                .await
                .map_err(lance_error(uri, action))?;
            while let Some(batch) = stream.try_next().await.map_err(lance_error(uri, action))? {
                builder = builder.add_batch_off_async(batch, uri).await?;
            }
        }
        Ok(builder
            .wanted
            .as_ref()
            .is_some_and(|w| w.untaken().next().is_none())
            .then(|| builder.finish()))
    }

    /// The `limit` best rows for `query` among those `filter` admits, best first, ties by
    /// row key: LanceDB's `combined_fields` search with its words OR-ed. Each hit's `id`
    /// is its row key until the store places it (`Store::placed_hits`).
    pub(crate) fn search(
        &self,
        query: &str,
        limit: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<LexicalHit>, String> {
        if limit == 0 || self.keys.is_empty() {
            return Ok(Vec::new());
        }
        // The question's words split and stem as the rows' stored terms did.
        let query_terms = query_terms(query)?;
        let mut terms: Vec<&str> = Vec::new();
        for term in query_terms.split_ascii_whitespace() {
            if !terms.contains(&term) {
                terms.push(term);
            }
        }
        let postings: Vec<(&str, &Postings)> = terms
            .iter()
            .filter_map(|&t| Some((t, &self.postings[*self.terms.get(t)? as usize])))
            // A term a patch took every row from is no term of the table.
            .filter(|(_, p)| !p.rows.is_empty())
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
                .then_with(|| self.keys[a.1 as usize].cmp(&self.keys[b.1 as usize]))
        };
        Ok(best_by(ranked, limit, order)
            .into_iter()
            .map(|(score, row)| LexicalHit {
                id: self.keys[row as usize].clone(),
                relative_path: self.paths[row as usize].clone(),
                score,
                history: self.history[row as usize].clone(),
            })
            .collect())
    }
}

/// Row fingerprints with what each stands for, matched against another version's rows:
/// each is taken at most once (two rows may share one).
struct Fingerprints<T> {
    entries: Vec<(u64, T)>,
    taken: Vec<bool>,
}

impl<T: Copy + Ord> Fingerprints<T> {
    fn new(entries: impl Iterator<Item = (u64, T)>) -> Self {
        let mut entries: Vec<(u64, T)> = entries.collect();
        entries.sort_unstable();
        let taken = vec![false; entries.len()];
        Self { entries, taken }
    }

    /// Takes one untaken entry of `fingerprint`, if there is one.
    fn take(&mut self, fingerprint: u64) -> Option<T> {
        let from = self.entries.partition_point(|(f, _)| *f < fingerprint);
        let at = (from..self.entries.len())
            .take_while(|&i| self.entries[i].0 == fingerprint)
            .find(|&i| !self.taken[i])?;
        self.taken[at] = true;
        Some(self.entries[at].1)
    }

    /// What no row took.
    fn untaken(&self) -> impl Iterator<Item = T> + '_ {
        self.entries
            .iter()
            .zip(&self.taken)
            .filter(|(_, taken)| !**taken)
            .map(|((_, t), _)| *t)
    }
}

/// A [`TextTable`] being filled row by row.
struct Builder {
    fields: Vec<(&'static str, f32)>,
    table: TextTable,
    /// In a patch, the fingerprints of the rows to add; `None`: every row read.
    wanted: Option<Fingerprints<()>>,
    /// Scratch: one field's term counts, one row's blended frequencies and fields (in
    /// first-seen order).
    counts: HashMap<u32, u32>,
    row: Vec<(u32, f32, u8)>,
    row_at: HashMap<u32, usize>,
}

impl Builder {
    fn new(with_history: bool) -> Self {
        let fields: Vec<(&str, f32)> = LEXICAL_COLUMNS[..if with_history { 3 } else { 2 }].to_vec();
        Self {
            fields,
            table: TextTable {
                with_history,
                fingerprints: Vec::new(),
                keys: Vec::new(),
                paths: Vec::new(),
                history: Vec::new(),
                lengths: Vec::new(),
                field_lengths: Vec::new(),
                terms: HashMap::new(),
                postings: Vec::new(),
                doc_count: 0,
                avg_doc_length: 0.0,
            },
            wanted: None,
            counts: HashMap::new(),
            row: Vec::new(),
            row_at: HashMap::new(),
        }
    }

    /// A builder holding the rows of `old` that `kept` marks, in their order (the first
    /// rows of a patch).
    fn keeping(old: &TextTable, kept: &[bool]) -> Self {
        let mut builder = Self::new(old.with_history);
        let table = &mut builder.table;
        let rows = kept.iter().filter(|k| **k).count();
        table.fingerprints.reserve_exact(rows);
        table.keys.reserve_exact(rows);
        table.paths.reserve_exact(rows);
        table.history.reserve_exact(rows);
        table.lengths.reserve_exact(rows);
        table.field_lengths.reserve_exact(rows);
        let mut renumbered = vec![u32::MAX; old.keys.len()];
        for (row, _) in kept.iter().enumerate().filter(|(_, k)| **k) {
            renumbered[row] = table.keys.len() as u32;
            table.fingerprints.push(old.fingerprints[row]);
            table.keys.push(old.keys[row].clone());
            table.paths.push(old.paths[row].clone());
            table.history.push(old.history[row].clone());
            table.lengths.push(old.lengths[row]);
            table.field_lengths.push(old.field_lengths[row]);
        }
        table.terms = old.terms.clone();
        table.postings = old
            .postings
            .iter()
            .map(|postings| {
                let mut left = Postings {
                    doc_freq: 0,
                    rows: Vec::with_capacity(postings.rows.len()),
                    fields: Vec::with_capacity(postings.fields.len()),
                };
                for (&(row, tf), &fields) in postings.rows.iter().zip(&postings.fields) {
                    let row = renumbered[row as usize];
                    if row == u32::MAX {
                        continue;
                    }
                    left.rows.push((row, tf));
                    left.fields.push(fields);
                }
                left
            })
            .collect();
        builder
    }

    /// The columns [`Builder::add_batch`] reads: with history, its notes beside their
    /// terms (a hit returns them, and they are part of a row's fingerprint).
    fn columns(&self) -> Vec<&'static str> {
        let mut columns = vec!["key", "relativePath", "contentHash"];
        columns.extend(self.fields.iter().map(|(c, _)| *c));
        if self.table.with_history {
            columns.push("history");
        }
        columns
    }

    /// [`Builder::add_batch`] on a blocking thread: counting terms is CPU work.
    async fn add_batch_off_async(self, batch: RecordBatch, uri: &str) -> Result<Self, StoreError> {
        let owned_uri = uri.to_string();
        tokio::task::spawn_blocking(move || {
            let mut builder = self;
            builder.add_batch(&batch, &owned_uri)?;
            Ok::<_, StoreError>(builder)
        })
        .await
        .map_err(|e| corrupt_error(uri)(format!("tokenizing the full-text fields panicked: {e}")))?
    }

    /// Every row of `batch` ([`Builder::columns`]), or in a patch those it wants.
    fn add_batch(&mut self, batch: &RecordBatch, uri: &str) -> Result<(), StoreError> {
        let corrupt = corrupt_error(uri);
        let key = text_column(batch, "key").map_err(&corrupt)?;
        let path = text_column(batch, "relativePath").map_err(&corrupt)?;
        let hash = text_column(batch, "contentHash").map_err(&corrupt)?;
        let texts: Vec<&StringArray> = self
            .fields
            .iter()
            .map(|(c, _)| text_column(batch, c).map_err(&corrupt))
            .collect::<Result<_, _>>()?;
        let history = if self.table.with_history {
            Some(text_column(batch, "history").map_err(&corrupt)?)
        } else {
            None
        };
        for i in 0..batch.num_rows() {
            let row_texts: Vec<Option<&str>> = texts
                .iter()
                .map(|column| column.is_valid(i).then(|| column.value(i)))
                .collect();
            let notes = history.map(|h| if h.is_valid(i) { h.value(i) } else { "" });
            let fingerprint = row_fingerprint(key.value(i), hash.value(i), notes);
            if self
                .wanted
                .as_mut()
                .is_some_and(|w| w.take(fingerprint).is_none())
            {
                continue;
            }
            self.table.fingerprints.push(fingerprint);
            self.add(
                key.value(i),
                path.value(i),
                &row_texts,
                notes.unwrap_or_default(),
            );
        }
        Ok(())
    }

    /// One row: its key, path, each field's terms (`None` for null) in field order, and its
    /// commit notes.
    fn add(&mut self, key: &str, path: &str, texts: &[Option<&str>], notes: &str) {
        let row_number = self.table.keys.len() as u32;
        self.row.clear();
        self.row_at.clear();
        let mut lengths = [0u32; MAX_FIELDS];
        for (field, text) in texts.iter().enumerate() {
            let weight = self.fields[field].1;
            self.counts.clear();
            if let Some(text) = text {
                // Stored analyzed: LanceDB's whitespace tokenizer splits on ASCII spaces.
                for word in text.split_ascii_whitespace() {
                    let term = match self.table.terms.get(word) {
                        Some(&term) => term,
                        None => {
                            let term = self.table.postings.len() as u32;
                            self.table.terms.insert(word.to_string(), term);
                            self.table.postings.push(Postings::default());
                            term
                        }
                    };
                    *self.counts.entry(term).or_insert(0) += 1;
                    lengths[field] += 1;
                }
            }
            for (&term, &count) in &self.counts {
                let at = *self.row_at.entry(term).or_insert_with(|| {
                    self.row.push((term, 0.0, 0));
                    self.row.len() - 1
                });
                self.row[at].1 += weight * count as f32;
                self.row[at].2 |= 1 << field;
            }
        }
        for &(term, tf, fields) in &self.row {
            let postings = &mut self.table.postings[term as usize];
            postings.rows.push((row_number, tf));
            postings.fields.push(fields);
        }
        // `dl'`, added field by field as LanceDB does.
        let length: f32 = self
            .fields
            .iter()
            .zip(lengths)
            .map(|((_, weight), length)| weight * length as f32)
            .sum();
        self.table.lengths.push(length);
        self.table.field_lengths.push(lengths);
        self.table.keys.push(key.to_string());
        self.table.paths.push(path.to_string());
        self.table.history.push(notes.to_string());
    }

    fn finish(mut self) -> TextTable {
        let table = &mut self.table;
        // `docFreq'`: the largest of the fields' counts of rows holding the term.
        for postings in &mut table.postings {
            let mut field_counts = [0usize; MAX_FIELDS];
            for &fields in &postings.fields {
                for (field, count) in field_counts.iter_mut().enumerate() {
                    *count += usize::from(fields & (1 << field) != 0);
                }
            }
            postings.doc_freq = field_counts.into_iter().max().unwrap_or(0);
        }
        // A row without a token is no document of the field's index (LanceDB's rule).
        let mut field_docs = [0usize; MAX_FIELDS];
        let mut field_tokens = [0u64; MAX_FIELDS];
        for lengths in &table.field_lengths {
            for (field, &length) in lengths.iter().enumerate() {
                field_docs[field] += usize::from(length > 0);
                field_tokens[field] += u64::from(length);
            }
        }
        let doc_count = field_docs.iter().copied().max().unwrap_or(0);
        let weighted_tokens: f64 = self
            .fields
            .iter()
            .zip(field_tokens)
            .map(|((_, weight), tokens)| *weight as f64 * tokens as f64)
            .fold(0.0, |sum, t| sum + t);
        table.doc_count = doc_count;
        table.avg_doc_length = if doc_count > 0 {
            (weighted_tokens / doc_count as f64) as f32
        } else {
            0.0
        };
        self.table
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::TokenHashEmbedder;
    use crate::{Embedder, Shared, Store, StoreOptions};

    /// The `index/workspace` fixture in a temporary root, and a store on it, synced, that
    /// embeds with `embedder` (shared vectors off) and searches text as `text_search` says.
    pub(crate) async fn embedded_workspace(
        embedder: &TokenHashEmbedder,
        text_search: TextSearch,
    ) -> (tempfile::TempDir, Store) {
        let root = tempfile::tempdir().unwrap();
        codectx_corpus::copy_tree(&codectx_corpus::fixture("index/workspace"), root.path());
        let options = StoreOptions {
            embedding: Some(embedder.spec()),
            shared_vectors: Shared::Off,
            text_search,
            ..StoreOptions::default()
        };
        let mut store = Store::open(root.path(), options).await.unwrap();
        store.sync(None, &()).await.unwrap();
        (root, store)
    }

    /// Versions that write only vectors (the background embedder commits one every few
    /// seconds) keep the copy; a version that changes a row's text reads it anew.
    #[tokio::test]
    async fn the_copy_outlives_versions_that_write_only_vectors() {
        let embedder = TokenHashEmbedder::new(16);
        let (root, mut store) = embedded_workspace(&embedder, TextSearch::Memory).await;
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

    /// Every statistic of a copy, by row id and term (rows and terms in any order).
    fn statistics(table: &TextTable) -> impl PartialEq + std::fmt::Debug {
        use std::collections::{BTreeMap, BTreeSet};
        let rows: BTreeMap<&str, _> = (0..table.keys.len())
            .map(|r| {
                let at = (
                    &table.paths[r],
                    &table.history[r],
                    table.lengths[r].to_bits(),
                    table.field_lengths[r],
                    table.fingerprints[r],
                );
                (table.keys[r].as_str(), at)
            })
            .collect();
        let terms: BTreeMap<&str, _> = table
            .terms
            .iter()
            .map(|(word, &term)| (word.as_str(), &table.postings[term as usize]))
            .filter(|(_, postings)| !postings.rows.is_empty())
            .map(|(word, postings)| {
                let rows: BTreeSet<_> = postings
                    .rows
                    .iter()
                    .zip(&postings.fields)
                    .map(|(&(row, tf), &fields)| {
                        (table.keys[row as usize].as_str(), tf.to_bits(), fields)
                    })
                    .collect();
                (word, (postings.doc_freq, rows))
            })
            .collect();
        (table.doc_count, table.avg_doc_length.to_bits(), rows, terms)
    }

    /// A sync that edits, adds and removes files patches the copy: only the changed files'
    /// rows are read, and the patched copy holds what a fresh read of the new version does,
    /// to the bit, so it ranks alike.
    #[tokio::test]
    async fn a_sync_patches_the_copy_to_what_a_fresh_read_gives() {
        let root = tempfile::tempdir().unwrap();
        codectx_corpus::copy_tree(&codectx_corpus::fixture("index/workspace"), root.path());
        patch_equals_fresh_read(root.path(), false, |_| {}).await;
    }

    /// The same with the repository's history on: a third field, the commit notes, which
    /// the history step rewrites for the rows a commit touched.
    #[tokio::test]
    async fn a_sync_patches_the_copy_with_commit_notes() {
        let dir = tempfile::tempdir().unwrap();
        let mut git = codectx_corpus::GitRepo::init(dir.path());
        codectx_corpus::copy_tree(&codectx_corpus::fixture("index/workspace"), git.root());
        git.commit("feat: sessions, tokens and routes");
        let root = git.root().to_path_buf();
        let git = std::cell::RefCell::new(git);
        patch_equals_fresh_read(&root, true, |message| {
            git.borrow_mut().commit(message);
        })
        .await;
    }

    /// Syncs `root`, edits, adds and removes a file (`commit` records the edit), syncs
    /// again, and compares the patched copy with a fresh read.
    async fn patch_equals_fresh_read(
        root: &std::path::Path,
        with_history: bool,
        commit: impl Fn(&str),
    ) {
        let options = StoreOptions {
            text_search: TextSearch::Memory,
            ..StoreOptions::default()
        };
        let mut store = Store::open(root, options).await.unwrap();
        store.sync(None, &()).await.unwrap();
        let all = ChunkFilter::default();
        let questions = [
            "session token",
            "format the route",
            "verify a contract",
            "quota",
            "expiry of sessions",
        ];
        store
            .search_lexical_hits(questions[0], 10, &all)
            .await
            .unwrap();
        let (_, old) = store.text.kept().expect("a copy");
        assert_eq!(old.with_history, with_history);

        std::fs::write(
            root.join("src/auth/token.ts"),
            "export function issueToken(session: string): string {\n  return `t-${session}`;\n}\n",
        )
        .unwrap();
        std::fs::write(
            root.join("src/util/quota.ts"),
            "/** The session's remaining quota. */\nexport function sessionQuota(token: string) {\n  return token.length;\n}\n",
        )
        .unwrap();
        std::fs::remove_file(root.join("src/util/format.ts")).unwrap();
        commit("fix: expiry of sessions, and a quota per token");
        store.sync(None, &()).await.unwrap();

        let changes = old.changes(&store.chunks, &store.uri).await.unwrap();
        let changed = [
            "src/auth/token.ts",
            "src/util/quota.ts",
            "src/util/format.ts",
        ];
        let removed: Vec<&str> = (0..old.keys.len())
            .filter(|&r| !changes.kept[r])
            .map(|r| old.paths[r].as_str())
            .collect();
        assert!(
            !removed.is_empty() && removed.iter().all(|p| changed.contains(p)),
            "{removed:?}"
        );
        assert!(
            !changes.added.is_empty()
                && changes
                    .added
                    .iter()
                    .all(|(_, p)| changed.contains(&p.as_str())),
            "{:?}",
            changes.added
        );
        let patched = old
            .patched(&store.chunks, &store.uri, &changes)
            .await
            .unwrap()
            .expect("the table holds what the changes say");
        let fresh = TextTable::read(&store.chunks, &store.uri, with_history)
            .await
            .unwrap();
        assert_eq!(statistics(&patched), statistics(&fresh));
        if with_history {
            assert!(
                fresh
                    .history
                    .iter()
                    .any(|h| h.contains("expiry of sessions"))
            );
        }

        // The store's own copy, brought to the new version by its next search.
        for question in questions {
            let hits = store.search_lexical_hits(question, 20, &all).await.unwrap();
            let scores: Vec<(String, u32)> = hits
                .iter()
                .map(|h| (h.id.clone(), h.score.to_bits()))
                .collect();
            // The table holds row keys; a search answers with the ids the files table places.
            let expected: Vec<(String, u32)> = store
                .placed_hits(fresh.search(question, 20, &all).unwrap())
                .iter()
                .map(|h| (h.id.clone(), h.score.to_bits()))
                .collect();
            assert_eq!(scores, expected, "{question}");
        }
        let (_, kept) = store.text.kept().unwrap();
        assert_eq!(statistics(&kept), statistics(&fresh));
        assert!(
            kept.paths.iter().any(|p| p == "src/util/quota.ts")
                && !kept.paths.iter().any(|p| p == "src/util/format.ts")
        );
    }
}
