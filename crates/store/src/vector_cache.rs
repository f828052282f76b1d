//! Vectors shared by content: what a model computed for a text, kept once for every index of
//! one repository. A second worktree, a branch switch back to code seen before, or a
//! signature cascade over unchanged text, embeds nothing the repository has embedded before.
//!
//! The cache is advisory. A store that cannot open, read or write it embeds as it would
//! without one, so a damaged or unwritable cache costs time, never an answer or a sync.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::TryStreamExt;
use lancedb::arrow::arrow_array::{Int64Array, RecordBatch, StringArray};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema};
use lancedb::index::Index;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::OptimizeAction;
use sha2::{Digest, Sha256};

use crate::process::hex;
use crate::sql::{
    in_list, reader, text_column, vector_array, vector_at, vector_column, vector_type,
};
use crate::store::{corrupt_error, lance_error};
use crate::{EmbeddingSpec, StoreError};

/// The cache's directory name inside the repository's common git directory.
pub(crate) const REPOSITORY_DIR: [&str; 2] = ["codectx", "vectors"];

/// Keys asked of LanceDB in one filter.
const KEYS_PER_QUERY: usize = 512;
/// Rows of a compacted fragment.
const FRAGMENT_ROWS: usize = 16_384;
/// Writes by one handle between two upkeeps (compaction, the key index, the size bound).
const UPKEEP_EVERY: u64 = 16;

/// One model's vectors by text ([`StoreOptions::shared_vectors`](crate::StoreOptions)): a LanceDB table per model, dimension and
/// view, rows `key` (SHA-256 of the embedded text, 128 bits in hex), `vector`, `added`
/// (nanoseconds since 1970).
pub(crate) struct VectorCache {
    uri: String,
    table: lancedb::Table,
    dimension: usize,
    /// Rows kept at most; beyond, the oldest quarter goes.
    max_rows: usize,
    writes: AtomicU64,
}

impl VectorCache {
    /// Opens (creating if needed) the cache of `spec`'s vectors in `dir`, holding at most about
    /// `max_bytes` of vectors.
    pub(crate) async fn open(
        dir: &Path,
        spec: &EmbeddingSpec,
        max_bytes: u64,
    ) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Io {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let uri = dir.to_string_lossy().into_owned();
        let lance = |action| lance_error(&uri, action);
        let db = lancedb::connect(&uri)
            .execute()
            .await
            .map_err(lance("connecting"))?;
        let name = table_name(spec);
        let table = match db.open_table(&name).execute().await {
            Ok(table) => table,
            Err(_) => {
                let schema = schema(spec.dimension);
                match db.create_empty_table(&name, schema).execute().await {
                    Ok(table) => table,
                    // Another process created it meanwhile.
                    Err(_) => db
                        .open_table(&name)
                        .execute()
                        .await
                        .map_err(lance("opening the shared vectors"))?,
                }
            }
        };
        let row_bytes = 4 * spec.dimension as u64 + 64;
        Ok(Self {
            uri,
            table,
            dimension: spec.dimension,
            max_rows: (max_bytes / row_bytes).max(1) as usize,
            writes: AtomicU64::new(0),
        })
    }

    /// The key of an embedded text.
    pub(crate) fn key(text: &str) -> String {
        hex(&Sha256::digest(text.as_bytes())[..16])
    }

    /// The vectors the cache holds of `keys`.
    pub(crate) async fn get(
        &self,
        keys: &[String],
    ) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        // Another process may have written since this handle looked; its upkeep may even
        // remove the version checked out here before the read, which then reads the next.
        let refresh = || async {
            self.table
                .checkout_latest()
                .await
                .map_err(lance_error(&self.uri, "refreshing the shared vectors"))
        };
        refresh().await?;
        crate::error::read_past_upkeep(2, refresh, || self.read(keys)).await
    }

    /// [`VectorCache::get`] on the version this handle is on.
    async fn read(&self, keys: &[String]) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        let mut found = HashMap::new();
        for keys in keys.chunks(KEYS_PER_QUERY) {
            let batches: Vec<RecordBatch> = self
                .table
                .query()
                .only_if(in_list("key", keys))
                .select(Select::columns(&["key", "vector"]))
                .execute()
                .await
                .map_err(lance_error(&self.uri, "reading shared vectors"))?
                .try_collect()
                .await
                .map_err(lance_error(&self.uri, "reading shared vectors"))?;
            for batch in &batches {
                let key = text_column(batch, "key").map_err(|r| self.corrupt(r))?;
                let vectors = vector_column(batch, "vector").map_err(|r| self.corrupt(r))?;
                for i in 0..batch.num_rows() {
                    if let Some(vector) = vector_at(vectors, i) {
                        found
                            .entry(key.value(i).to_string())
                            .or_insert_with(|| vector.to_vec());
                    }
                }
            }
        }
        Ok(found)
    }

    /// Adds `entries` (key, vector); vectors of another dimension are left out.
    pub(crate) async fn put(&self, entries: &[(String, Vec<f32>)]) -> Result<(), StoreError> {
        let entries: Vec<&(String, Vec<f32>)> = entries
            .iter()
            .filter(|(_, v)| v.len() == self.dimension)
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        // Nanoseconds: the size bound drops the oldest writes, and writes come fast.
        let added = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let batch = RecordBatch::try_new(
            schema(self.dimension),
            vec![
                Arc::new(StringArray::from_iter_values(
                    entries.iter().map(|(k, _)| k.as_str()),
                )),
                vector_array(self.dimension, entries.iter().map(|(_, v)| Some(&v[..]))),
                Arc::new(Int64Array::from(vec![added; entries.len()])),
            ],
        )
        .map_err(|e| self.corrupt(e.to_string()))?;
        self.table
            .add(reader(batch))
            .execute()
            .await
            .map_err(lance_error(&self.uri, "writing shared vectors"))?;
        if self.writes.fetch_add(1, Ordering::Relaxed) % UPKEEP_EVERY == UPKEEP_EVERY - 1 {
            self.upkeep().await?;
        }
        Ok(())
    }

    fn corrupt(&self, reason: String) -> StoreError {
        corrupt_error(&self.uri)(reason)
    }

    /// The size bound (the oldest quarter goes once it is passed), an index on the keys,
    /// compaction of the small appends.
    pub(crate) async fn upkeep(&self) -> Result<(), StoreError> {
        let lance = |action| lance_error(&self.uri, action);
        let rows = self
            .table
            .count_rows(None)
            .await
            .map_err(lance("counting shared vectors"))?;
        if rows > self.max_rows {
            let batches: Vec<RecordBatch> = self
                .table
                .query()
                .select(Select::columns(&["added"]))
                .execute()
                .await
                .map_err(lance("reading shared vectors"))?
                .try_collect()
                .await
                .map_err(lance("reading shared vectors"))?;
            let mut added: Vec<i64> = batches
                .iter()
                .filter_map(|b| b.column_by_name("added"))
                .filter_map(|c| c.as_any().downcast_ref::<Int64Array>())
                .flat_map(|a| a.values().iter().copied())
                .collect();
            added.sort_unstable();
            let cut = added[rows - self.max_rows * 3 / 4];
            self.table
                .delete(&format!("added < {cut}"))
                .await
                .map_err(lance("pruning shared vectors"))?;
        }
        let indexed = self
            .table
            .list_indices()
            .await
            .map_err(lance("listing indices"))?
            .iter()
            .any(|i| i.columns == ["key"]);
        if !indexed && rows > 0 {
            self.table
                .create_index(&["key"], Index::BTree(Default::default()))
                .execute()
                .await
                .map_err(lance("indexing shared vectors"))?;
        }
        for action in [
            // Only small appends are merged: a fragment of this many rows is left as it is,
            // so an upkeep does not rewrite the whole cache.
            OptimizeAction::Compact {
                options: lancedb::table::CompactionOptions {
                    target_rows_per_fragment: FRAGMENT_ROWS,
                    ..Default::default()
                },
                remap_options: None,
            },
            // Compaction rewrites the appends; the versions it replaced go now (LanceDB's
            // default keeps them a week: on vite, eight copies of the cache on disk). A
            // reader still on one fails its lookup and embeds: the cache is advisory. Files a
            // concurrent writer has not committed yet are younger than a week and stay.
            crate::maintain::prune_superseded(),
            OptimizeAction::Index(Default::default()),
        ] {
            self.table
                .optimize(action)
                .await
                .map_err(lance("compacting shared vectors"))?;
        }
        Ok(())
    }
}

fn table_name(spec: &EmbeddingSpec) -> String {
    let mut hash = Sha256::new();
    for part in [
        spec.model.as_str(),
        &spec.dimension.to_string(),
        spec.view.as_str(),
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    format!("vectors-{}", hex(&hash.finalize()[..8]))
}

fn schema(dimension: usize) -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("vector", vector_type(dimension), true),
        Field::new("added", DataType::Int64, false),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> EmbeddingSpec {
        EmbeddingSpec {
            model: "test:cache".into(),
            dimension: 4,
            view: codectx_embed::EmbeddingView::Code,
        }
    }

    #[tokio::test]
    async fn keeps_what_it_is_given_and_drops_the_oldest_beyond_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        // Ten rows of four floats.
        let cache = VectorCache::open(dir.path(), &spec(), 10 * (4 * 4 + 64))
            .await
            .unwrap();
        let entry = |i: usize| (VectorCache::key(&format!("text {i}")), vec![i as f32; 4]);
        for i in 0..12 {
            cache.put(&[entry(i)]).await.unwrap();
        }
        // A vector of another dimension is not taken.
        cache.put(&[("odd".into(), vec![1.0; 3])]).await.unwrap();
        let keys: Vec<String> = (0..12).map(|i| entry(i).0).collect();
        assert_eq!(cache.get(&keys).await.unwrap().len(), 12);
        cache.upkeep().await.unwrap();
        // Beyond ten rows, the oldest go until three quarters of the bound are left.
        let kept = cache.get(&keys).await.unwrap();
        let kept_keys: Vec<usize> = (0..12).filter(|&i| kept.contains_key(&keys[i])).collect();
        assert_eq!(kept_keys, (5..12).collect::<Vec<_>>());
        assert_eq!(kept[&keys[7]], vec![7.0; 4]);
        // The twelve appends were compacted, and the versions compaction replaced removed:
        // one copy of the cache on disk, not one per version.
        let data = dir
            .path()
            .join(format!("{}.lance/data", table_name(&spec())));
        assert_eq!(
            std::fs::read_dir(&data).unwrap().count(),
            1,
            "{}",
            data.display()
        );
        // Another handle (another worktree's server) reads what this one wrote.
        let other = VectorCache::open(dir.path(), &spec(), 1 << 20)
            .await
            .unwrap();
        assert_eq!(
            other.get(&keys[5..6]).await.unwrap()[&keys[5]],
            vec![5.0; 4]
        );
        // Another model has its own table.
        let mut another = spec();
        another.model = "test:other".into();
        let another = VectorCache::open(dir.path(), &another, 1 << 20)
            .await
            .unwrap();
        assert!(another.get(&keys).await.unwrap().is_empty());
    }
}
