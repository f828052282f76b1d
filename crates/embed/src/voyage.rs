//! Voyage AI: `voyage-code-3` embeddings and `rerank-2.5`.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::http::{HttpClient, batches};
use crate::{ApiKey, EmbedError, Embedder, EmbeddingSpec, HttpOptions, Reranker};

const DEFAULT_BASE_URL: &str = "https://api.voyageai.com/v1";
/// voyage-code-3's per-request limits: 1,000 texts and 120,000 tokens (we keep a margin
/// because our token count is an estimate).
const MAX_TEXTS: usize = 1_000;
const MAX_TOKENS: usize = 100_000;

/// `voyage-code-3` (or another Voyage embedding model) over Voyage's REST API.
pub struct VoyageEmbedder {
    http: HttpClient,
    base_url: String,
    model: String,
    dimension: usize,
}

#[derive(Serialize)]
struct EmbedRequest<'a> {
    input: &'a [String],
    model: &'a str,
    input_type: &'a str,
    output_dimension: usize,
    truncation: bool,
}

#[derive(Deserialize)]
struct EmbedResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    index: usize,
}

impl VoyageEmbedder {
    /// `voyage-code-3` at 1024 dimensions with the key in `VOYAGE_API_KEY`.
    pub fn from_env(options: HttpOptions) -> Result<Self, EmbedError> {
        let key = ApiKey::from_env("VOYAGE_API_KEY").ok_or_else(|| {
            EmbedError::Config("set VOYAGE_API_KEY to use the voyage provider".into())
        })?;
        Self::new(key, "voyage-code-3", 1024, None, options)
    }

    /// A Voyage model; `base_url` defaults to `https://api.voyageai.com/v1`.
    pub fn new(
        key: ApiKey,
        model: &str,
        dimension: usize,
        base_url: Option<&str>,
        options: HttpOptions,
    ) -> Result<Self, EmbedError> {
        Ok(Self {
            http: HttpClient::new("Voyage", Some(key), options)?,
            base_url: base_url
                .unwrap_or(DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .into(),
            model: model.into(),
            dimension,
        })
    }

    async fn embed(&self, texts: &[String], input_type: &str) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in batches(texts, MAX_TEXTS, MAX_TOKENS) {
            let response: EmbedResponse = self
                .http
                .post(
                    &format!("{}/embeddings", self.base_url),
                    &EmbedRequest {
                        input: batch,
                        model: &self.model,
                        input_type,
                        output_dimension: self.dimension,
                        truncation: true,
                    },
                )
                .await?;
            out.extend(in_order(
                response.data.into_iter().map(|d| (d.index, d.embedding)),
                batch.len(),
                self.dimension,
            )?);
        }
        Ok(out)
    }
}

/// The vectors of one response by their `index`, checked to be complete and of the
/// expected dimension.
pub(crate) fn in_order(
    items: impl Iterator<Item = (usize, Vec<f32>)>,
    expected: usize,
    dimension: usize,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (index, vector) in items {
        if vector.len() != dimension {
            return Err(EmbedError::Protocol(format!(
                "a vector has {} dimensions, expected {dimension}",
                vector.len()
            )));
        }
        match slots.get_mut(index) {
            Some(slot) => *slot = Some(vector),
            None => {
                return Err(EmbedError::Protocol(format!(
                    "vector index {index} is outside the {expected} inputs"
                )));
            }
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| EmbedError::Protocol(format!("no vector for input {i}"))))
        .collect()
}

#[async_trait]
impl Embedder for VoyageEmbedder {
    fn spec(&self) -> EmbeddingSpec {
        EmbeddingSpec {
            model: format!("voyage:{}", self.model),
            dimension: self.dimension,
            view: crate::EmbeddingView::Code,
        }
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed(texts, "document").await
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[query.to_string()], "query").await?;
        v.pop()
            .ok_or_else(|| EmbedError::Protocol("no vector for the query".into()))
    }
}

/// `rerank-2.5` (or another Voyage reranker).
pub struct VoyageReranker {
    http: HttpClient,
    base_url: String,
    model: String,
}

#[derive(Serialize)]
struct RerankRequest<'a> {
    query: &'a str,
    documents: &'a [String],
    model: &'a str,
    truncation: bool,
}

#[derive(Deserialize)]
struct RerankResponse {
    data: Vec<RerankItem>,
}

#[derive(Deserialize)]
struct RerankItem {
    index: usize,
    relevance_score: f32,
}

impl VoyageReranker {
    /// `rerank-2.5` with the key in `VOYAGE_API_KEY`.
    pub fn from_env(options: HttpOptions) -> Result<Self, EmbedError> {
        let key = ApiKey::from_env("VOYAGE_API_KEY").ok_or_else(|| {
            EmbedError::Config("set VOYAGE_API_KEY to use the voyage reranker".into())
        })?;
        Self::new(key, "rerank-2.5", None, options)
    }

    pub fn new(
        key: ApiKey,
        model: &str,
        base_url: Option<&str>,
        options: HttpOptions,
    ) -> Result<Self, EmbedError> {
        Ok(Self {
            http: HttpClient::new("Voyage", Some(key), options)?,
            base_url: base_url
                .unwrap_or(DEFAULT_BASE_URL)
                .trim_end_matches('/')
                .into(),
            model: model.into(),
        })
    }
}

#[async_trait]
impl Reranker for VoyageReranker {
    fn model(&self) -> String {
        format!("voyage:{}", self.model)
    }

    async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        // rerank-2.5 takes up to 1,000 documents per request.
        let mut scores = Vec::with_capacity(documents.len());
        for batch in documents.chunks(1_000) {
            let response: RerankResponse = self
                .http
                .post(
                    &format!("{}/rerank", self.base_url),
                    &RerankRequest {
                        query,
                        documents: batch,
                        model: &self.model,
                        truncation: true,
                    },
                )
                .await?;
            let mut batch_scores = vec![None; batch.len()];
            for item in response.data {
                let slot = batch_scores.get_mut(item.index).ok_or_else(|| {
                    EmbedError::Protocol(format!(
                        "rerank index {} is outside the batch",
                        item.index
                    ))
                })?;
                *slot = Some(item.relevance_score);
            }
            for (i, s) in batch_scores.into_iter().enumerate() {
                scores.push(
                    s.ok_or_else(|| EmbedError::Protocol(format!("no score for document {i}")))?,
                );
            }
        }
        Ok(scores)
    }
}
