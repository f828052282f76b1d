//! The two seams: text → vectors ([`Embedder`]) and (query, documents) → scores ([`Reranker`]).

use async_trait::async_trait;

/// Which model produced a table's vectors, and from which view of each chunk. Stored with
/// the chunk table: opening an index with a different model, dimension or view rebuilds it
/// instead of mixing vector spaces.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmbeddingSpec {
    /// Provider and model, e.g. `local:all-MiniLM-L6-v2` or `voyage:voyage-code-3`.
    pub model: String,
    /// Length of every vector.
    pub dimension: usize,
    /// What text of a chunk the model embeds.
    #[serde(default)]
    pub view: EmbeddingView,
}

/// The text of a chunk a model is given: the one it was trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmbeddingView {
    /// The blueprint's `embeddingText`: raw code with nested bodies collapsed. For code
    /// models (Voyage code-3, code-trained static models, OpenAI-compatible code models).
    #[default]
    Code,
    /// The chunk in words (`codectx_chunker::natural_language_view`): kind, split name,
    /// path, doc comment, signature and identifier words. For English sentence models.
    NaturalLanguage,
}

impl EmbeddingView {
    /// The name recorded in an index.
    pub fn as_str(self) -> &'static str {
        match self {
            EmbeddingView::Code => "code",
            EmbeddingView::NaturalLanguage => "natural-language",
        }
    }

    /// The view a recorded name means (`None`: a view this build does not know).
    pub fn parse(name: &str) -> Option<Self> {
        [EmbeddingView::Code, EmbeddingView::NaturalLanguage]
            .into_iter()
            .find(|v| v.as_str() == name)
    }
}

/// How to read one model's cosine similarities. A property of the model, measured on the
/// tuning corpus (`cargo xtask eval --corpus --embedder …`); configuration may override it.
/// Not part of [`EmbeddingSpec`]: a new calibration must not re-embed an index.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VectorCalibration {
    /// Cosine that means "unrelated" (maps to 0).
    pub floor: f32,
    /// Cosine that means "says the same thing" (maps to 1).
    pub ceiling: f32,
}

impl Default for VectorCalibration {
    /// all-MiniLM-L6-v2's: code unrelated to a query sits around 0.0–0.2, a chunk that
    /// does what the query says around 0.5–0.7.
    fn default() -> Self {
        Self {
            floor: 0.15,
            ceiling: 0.65,
        }
    }
}

/// Turns chunk `embedding_text`s into vectors (blueprint Stage 1's document side).
///
/// Implementations batch, retry and rate-limit as their backend needs; the store hands
/// them every pending text of one sync batch and expects one vector per text, in order.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The model and dimension this embedder produces.
    fn spec(&self) -> EmbeddingSpec;

    /// How this model's similarities read (see [`VectorCalibration`]).
    fn calibration(&self) -> VectorCalibration {
        VectorCalibration::default()
    }

    /// Embeds documents (as opposed to queries: some models embed the two differently).
    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Embeds a search query.
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.embed_documents(&[query.to_string()]).await?;
        vectors
            .pop()
            .ok_or_else(|| EmbedError::Protocol("no vector for the query".into()))
    }
}

/// Scores documents against a query (blueprint Stage 2).
#[async_trait]
pub trait Reranker: Send + Sync {
    /// The model, e.g. `voyage:rerank-2.5`.
    fn model(&self) -> String;

    /// One relevance score in [0, 1] per document, in the documents' order.
    async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError>;
}

/// Why an embedding request failed. Messages never contain API keys.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum EmbedError {
    #[error("the embedding service rejected the credentials ({0})")]
    Unauthorized(String),
    #[error("the embedding service is unavailable: {0}")]
    Unavailable(String),
    #[error("the embedding service answered something unexpected: {0}")]
    Protocol(String),
    #[error("the embedding model failed: {0}")]
    Model(String),
    #[error("the embedding configuration is incomplete: {0}")]
    Config(String),
}

impl EmbedError {
    /// What went wrong, without the kind's prefix: for messages that combine several errors.
    pub fn detail(&self) -> &str {
        match self {
            Self::Unauthorized(s)
            | Self::Unavailable(s)
            | Self::Protocol(s)
            | Self::Model(s)
            | Self::Config(s) => s,
        }
    }
}

/// Cosine similarity of two vectors (0 when either is zero): how close a query and a
/// chunk are, whatever the provider normalises.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let n = norm(a) * norm(b);
    if n > 0.0 { dot / n } else { 0.0 }
}
