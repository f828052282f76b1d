//! Support for tests and benchmarks of code built on the store.

use std::sync::Mutex;

use async_trait::async_trait;

use crate::{EmbedError, Embedder, EmbeddingSpec};

/// A deterministic embedder by feature hashing: each identifier-like token of a text adds
/// one to a bucket picked by its hash, and the vector is normalized. It has no notion of
/// meaning — it exists so tests and benchmarks can count and replay embedding work without
/// a model — and it records every text it was given.
pub struct TokenHashEmbedder {
    dimension: usize,
    seen: Mutex<Vec<String>>,
}

impl TokenHashEmbedder {
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension: dimension.max(1),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Every text embedded since the last call, in order.
    pub fn take_seen(&self) -> Vec<String> {
        std::mem::take(&mut self.seen.lock().unwrap())
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        for token in text
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .filter(|t| !t.is_empty())
        {
            // FNV-1a: stable across runs and platforms, unlike std's hasher.
            let hash = token.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ b as u64).wrapping_mul(0x100000001b3)
            });
            v[(hash % self.dimension as u64) as usize] += 1.0;
        }
        let norm = v
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::EPSILON);
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }
}

#[async_trait]
impl Embedder for TokenHashEmbedder {
    fn spec(&self) -> EmbeddingSpec {
        EmbeddingSpec {
            model: format!("test:token-hash-{}", self.dimension),
            dimension: self.dimension,
            view: codectx_embed::EmbeddingView::Code,
        }
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.seen.lock().unwrap().extend(texts.iter().cloned());
        Ok(texts.iter().map(|t| self.embed(t)).collect())
    }
}
