//! Any server speaking OpenAI's `POST /v1/embeddings`: OpenAI, Ollama, LM Studio,
//! llama.cpp's server, Hugging Face TEI.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::http::{HttpClient, batches};
use crate::voyage::in_order;
use crate::{ApiKey, EmbedError, Embedder, EmbeddingSpec, HttpOptions};

/// OpenAI's limit is 2,048 inputs per request; local servers are usually happier with less.
const MAX_TEXTS: usize = 256;
const MAX_TOKENS: usize = 100_000;

/// An embedding model behind an OpenAI-compatible endpoint.
pub struct OpenAiEmbedder {
    http: HttpClient,
    base_url: String,
    model: String,
    dimension: usize,
}

#[derive(Serialize)]
struct Request<'a> {
    input: &'a [String],
    model: &'a str,
    encoding_format: &'a str,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    index: usize,
}

impl OpenAiEmbedder {
    /// `base_url` is the API root, e.g. `https://api.openai.com/v1` or
    /// `http://localhost:11434/v1` (Ollama); the key is optional for local servers.
    /// `dimension` is what the model returns (checked on every answer).
    pub fn new(
        base_url: &str,
        model: &str,
        dimension: usize,
        key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Self, EmbedError> {
        if base_url.trim().is_empty() || model.trim().is_empty() || dimension == 0 {
            return Err(EmbedError::Config(
                "the openai-compatible provider needs a base URL, a model and its dimension".into(),
            ));
        }
        Ok(Self {
            http: HttpClient::new("the embedding server", key, options)?,
            base_url: base_url.trim_end_matches('/').into(),
            model: model.into(),
            dimension,
        })
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn spec(&self) -> EmbeddingSpec {
        EmbeddingSpec {
            model: format!("openai-compatible:{}", self.model),
            dimension: self.dimension,
            view: crate::EmbeddingView::Code,
        }
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in batches(texts, MAX_TEXTS, MAX_TOKENS) {
            let response: Response = self
                .http
                .post(
                    &format!("{}/embeddings", self.base_url),
                    &Request {
                        input: batch,
                        model: &self.model,
                        encoding_format: "float",
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
