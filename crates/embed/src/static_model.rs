//! Static embeddings in the model2vec format: a token table looked up and mean-pooled, no
//! network, no neural forward pass — thousands of chunks per second on one core.
//!
//! A model directory holds `tokenizer.json` (any Hugging Face tokenizer), `model.safetensors`
//! and `config.json`. The safetensors file holds
//!
//! - `embeddings` (or `0`): the table, `[rows, dimension]`, in f32, f16 or i8;
//! - `mapping` (optional, i32 or i64): token id → table row, so several tokens (a word's
//!   inflections and capitalisations, or a quantised vocabulary) share one row;
//! - `weights` (optional, f32, f16 or f64): a scale per token id (a token's importance,
//!   and the row's dequantisation scale for an i8 table).
//!
//! A text's vector is the mean of its tokens' scaled rows (special tokens are not added and
//! the unknown token is dropped), L2-normalised when `config.json` says `"normalize": true`
//! (its default) — how model2vec computes it, e.g. for the code-trained potion-code models.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use safetensors::{Dtype, SafeTensors};
use tokenizers::Tokenizer;

use crate::provider::{EmbedError, Embedder, EmbeddingSpec, VectorCalibration};

/// Files a static model directory must hold.
const STATIC_FILES: [&str; 3] = ["tokenizer.json", "model.safetensors", "config.json"];

/// A model2vec-format static embedder.
#[derive(Clone)]
pub struct StaticEmbedder {
    inner: Arc<StaticModel>,
}

struct StaticModel {
    tokenizer: Tokenizer,
    /// `rows × dimension`, row-major.
    table: Vec<f32>,
    dimension: usize,
    mapping: Option<Vec<usize>>,
    weights: Option<Vec<f32>>,
    unknown: Option<u32>,
    normalize: bool,
    spec: EmbeddingSpec,
    calibration: VectorCalibration,
}

impl std::fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("spec", &self.inner.spec)
            .finish_non_exhaustive()
    }
}

impl StaticEmbedder {
    /// Loads the model2vec directory `dir`. Its name in the [`EmbeddingSpec`] is
    /// `static:<directory name>`.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        crate::hub::require_files(dir, &STATIC_FILES, "static model")?;
        let read = |file: &str| {
            std::fs::read(dir.join(file))
                .map_err(|e| EmbedError::Model(format!("{}: {file}: {e}", dir.display())))
        };
        let name = dir
            .file_name()
            .map_or_else(|| "model".to_string(), |n| n.to_string_lossy().into_owned());
        Self::from_bytes(
            &format!("static:{name}"),
            &read("tokenizer.json")?,
            &read("model.safetensors")?,
            &read("config.json")?,
        )
        .map_err(|e| match e {
            EmbedError::Model(m) => EmbedError::Model(format!("{}: {m}", dir.display())),
            other => other,
        })
    }

    /// Builds the model from the three files' bytes (a model the binary carries); `model` is
    /// its name in the [`EmbeddingSpec`].
    pub fn from_bytes(
        model: &str,
        tokenizer_json: &[u8],
        safetensors: &[u8],
        config_json: &[u8],
    ) -> Result<Self, EmbedError> {
        let bad = |file: &str, e: &dyn std::fmt::Display| EmbedError::Model(format!("{file}: {e}"));
        let tokenizer =
            Tokenizer::from_bytes(tokenizer_json).map_err(|e| bad("tokenizer.json", &e))?;
        let config: serde_json::Value =
            serde_json::from_slice(config_json).map_err(|e| bad("config.json", &e))?;
        let normalize = config
            .get("normalize")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true);
        // A model may carry its measured calibration (`codectx.calibration` in config.json,
        // as `cargo xtask vocabulary` writes it); others get the default.
        let calibration = config
            .pointer("/codectx/calibration")
            .and_then(|c| serde_json::from_value(c.clone()).ok())
            .unwrap_or_default();
        let tokenizer_spec: serde_json::Value =
            serde_json::from_slice(tokenizer_json).map_err(|e| bad("tokenizer.json", &e))?;
        let unknown = tokenizer_spec
            .pointer("/model/unk_token")
            .and_then(serde_json::Value::as_str)
            .and_then(|t| tokenizer.token_to_id(t));

        let tensors =
            SafeTensors::deserialize(safetensors).map_err(|e| bad("model.safetensors", &e))?;
        let table = tensors
            .tensor("embeddings")
            .or_else(|_| tensors.tensor("0"))
            .map_err(|_| bad("model.safetensors", &"no `embeddings` tensor"))?;
        let [rows, dimension]: [usize; 2] = table
            .shape()
            .try_into()
            .map_err(|_| bad("model.safetensors", &"the embedding table is not 2-D"))?;
        let values = floats(table.dtype(), table.data())
            .ok_or_else(|| bad("model.safetensors", &format!("{:?} table", table.dtype())))?;
        let vocabulary = tokenizer.get_vocab_size(true);
        let mapping = match tensors.tensor("mapping") {
            Ok(m) => Some(
                integers(m.dtype(), m.data())
                    .ok_or_else(|| bad("model.safetensors", &format!("{:?} mapping", m.dtype())))?,
            ),
            Err(_) => None,
        };
        let weights = match tensors.tensor("weights") {
            Ok(w) => Some(
                floats(w.dtype(), w.data())
                    .ok_or_else(|| bad("model.safetensors", &format!("{:?} weights", w.dtype())))?,
            ),
            Err(_) => None,
        };
        // Every token must land on a row: checked once here, so embedding never indexes out
        // of the table.
        let rows_needed = match &mapping {
            Some(m) => m.iter().map(|&r| r + 1).max().unwrap_or(0),
            None => vocabulary,
        };
        if mapping.as_ref().is_some_and(|m| m.len() < vocabulary) || rows_needed > rows {
            return Err(bad(
                "model.safetensors",
                &format!("{rows} rows do not cover the tokenizer's {vocabulary} tokens"),
            ));
        }
        Ok(Self {
            inner: Arc::new(StaticModel {
                tokenizer,
                table: values,
                dimension,
                mapping,
                weights,
                unknown,
                normalize,
                spec: EmbeddingSpec {
                    model: model.to_string(),
                    dimension,
                    // Static models are trained on code tokens (potion-code, the code
                    // vocabulary): they read the code.
                    view: crate::EmbeddingView::Code,
                },
                calibration,
            }),
        })
    }

    /// Embeds `texts` on the calling thread.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.inner.embed(t)).collect()
    }
}

impl StaticModel {
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode_fast(text, false)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
        let mut sum = vec![0.0f32; self.dimension];
        let mut count = 0usize;
        for &id in encoding.get_ids() {
            if Some(id) == self.unknown {
                continue;
            }
            let id = id as usize;
            let row = self.mapping.as_ref().map_or(id, |m| m[id]);
            let scale = self
                .weights
                .as_ref()
                .and_then(|w| w.get(id).copied())
                .unwrap_or(1.0);
            let values = &self.table[row * self.dimension..(row + 1) * self.dimension];
            for (s, v) in sum.iter_mut().zip(values) {
                *s += v * scale;
            }
            count += 1;
        }
        if count > 0 {
            let n = count as f32;
            sum.iter_mut().for_each(|s| *s /= n);
        }
        if self.normalize {
            let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt();
            if norm > 0.0 {
                sum.iter_mut().for_each(|s| *s /= norm);
            }
        }
        Ok(sum)
    }
}

fn floats(dtype: Dtype, data: &[u8]) -> Option<Vec<f32>> {
    Some(match dtype {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        Dtype::F64 => data
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32)
            .collect(),
        Dtype::I8 => data.iter().map(|&b| f32::from(b as i8)).collect(),
        _ => return None,
    })
}

fn integers(dtype: Dtype, data: &[u8]) -> Option<Vec<usize>> {
    let rows: Vec<i64> = match dtype {
        Dtype::I32 => data
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        Dtype::I64 => data
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
        _ => return None,
    };
    rows.into_iter().map(|r| usize::try_from(r).ok()).collect()
}

#[async_trait]
impl Embedder for StaticEmbedder {
    fn spec(&self) -> EmbeddingSpec {
        self.inner.spec.clone()
    }

    fn calibration(&self) -> VectorCalibration {
        self.inner.calibration
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Lookups are cheap, but a sync batch can hold thousands of texts: keep them off the
        // async threads all the same.
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || this.embed_blocking(&texts))
            .await
            .map_err(|e| EmbedError::Model(format!("the embedding worker stopped: {e}")))?
    }
}
