//! Configuration: a TOML file (`--config`, else `<root>/.codectx.toml`, else
//! `<user config dir>/codectx/config.toml`), every key optional. API keys come only from the
//! environment; the file never holds one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use codectx_embed::{
    ApiKey, DEFAULT_LOCAL_MODEL, DEFAULT_STATIC_MODEL, Embedder, HttpOptions, LocalEmbedder,
    OpenAiEmbedder, Reranker, StaticEmbedder, VoyageEmbedder, VoyageReranker, locate_model,
};
use codectx_retrieval::{EngineOptions, SearchOptions};
use codectx_retrieval::{Shared, StoreOptions};
use serde::Deserialize;

/// The file name looked for at the project root.
pub const PROJECT_CONFIG: &str = ".codectx.toml";

/// Every setting, with the defaults `mcp-server --help` documents.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub index: IndexConfig,
    pub embedding: EmbeddingConfig,
    pub rerank: RerankConfig,
    pub search: SearchConfig,
    pub history: HistoryConfig,
}

/// The repository's own history as retrieval evidence (read with gix, never the network).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryConfig {
    /// Newest commits read at most; `0` turns history off.
    pub max_commits: usize,
    /// Commits older than this many days are not read.
    pub max_age_days: u32,
    /// A commit changing more files than this (a reformat, a dependency bump) is skipped.
    pub max_files_per_commit: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        let d = codectx_retrieval::HistoryOptions::default();
        Self {
            max_commits: d.max_commits,
            max_age_days: d.max_age_days,
            max_files_per_commit: d.max_files_per_commit,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    /// Where the index lives (a directory or any LanceDB URI). Default: the worktree's git
    /// directory (`<git dir>/codectx/index`), outside git `<root>/.codectx`.
    pub dir: Option<String>,
    /// Files larger than this many bytes are not indexed.
    pub max_file_bytes: u64,
    /// Directory names never entered, on top of `.gitignore`.
    pub skip_dirs: Vec<String>,
    /// Chunks embedded per background step (each step commits once).
    pub embed_step: usize,
    /// Where vectors are shared by content between the indexes of one repository (its
    /// worktrees and refs): `"repository"` (default: `<common git dir>/codectx/vectors`,
    /// outside git `<index>/vectors`), `"off"`, or a directory.
    pub shared_vectors: SharedConfig,
    /// Megabytes of vectors the shared cache keeps at most (the oldest go first).
    pub shared_vectors_mb: u64,
    /// Where each parsed file version's chunks and facts are shared by content between the
    /// indexes of one repository: `"repository"` (default: `<common git dir>/codectx/parsed`,
    /// none outside git), `"off"`, or a directory.
    pub shared_parses: SharedConfig,
}

impl Default for IndexConfig {
    fn default() -> Self {
        let files = codectx_files::FileSelection::default();
        Self {
            dir: None,
            max_file_bytes: files.max_file_bytes,
            skip_dirs: files.skip_dirs,
            embed_step: 64,
            shared_vectors: SharedConfig::Keyword(SharedKeyword::Repository),
            shared_vectors_mb: codectx_retrieval::StoreOptions::default().shared_vectors_bytes
                >> 20,
            shared_parses: SharedConfig::Keyword(SharedKeyword::Repository),
        }
    }
}

/// `[index] shared_vectors` and `shared_parses`: a keyword, else a directory.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum SharedConfig {
    Keyword(SharedKeyword),
    Dir(PathBuf),
}

impl SharedConfig {
    /// What the store is told.
    fn shared(&self) -> Shared {
        match self {
            SharedConfig::Keyword(SharedKeyword::Repository) => Shared::Repository,
            SharedConfig::Keyword(SharedKeyword::Off) => Shared::Off,
            SharedConfig::Dir(dir) => Shared::At(dir.clone()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SharedKeyword {
    /// The repository's (see [`codectx_retrieval::Shared::Repository`]).
    Repository,
    /// None: every vector is computed, every changed file parsed.
    Off,
}

/// Which model embeds chunks and queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// all-MiniLM-L6-v2 on the CPU (offline once `mcp-server fetch-model` has fetched it).
    #[default]
    Local,
    /// Voyage `voyage-code-3` (key in `VOYAGE_API_KEY`).
    Voyage,
    /// Any OpenAI-compatible `/v1/embeddings` server (key in `OPENAI_API_KEY`, optional).
    Openai,
    /// A static (model2vec-format) model, potion-code-16M-v2 unless `embedding.model` names
    /// another: a token table, thousands of chunks a second on the CPU.
    Static,
    /// No vectors: lexical, name and structural search only.
    None,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub provider: Provider,
    /// Model name: the hub name for local and static (defaults
    /// `sentence-transformers/all-MiniLM-L6-v2`, `minishlab/potion-code-16M-v2`), the API's
    /// for voyage (default `voyage-code-3`) and openai (required).
    pub model: Option<String>,
    /// Vector size the model returns (openai needs it; voyage defaults to 1024).
    pub dimension: Option<usize>,
    /// API root for openai (e.g. `http://localhost:11434/v1`) or a Voyage proxy.
    pub base_url: Option<String>,
    /// Directory of the local or static model (default: `$CODECTX_MODEL_DIR` for the default
    /// local model, then the user cache, where `mcp-server fetch-model` puts it).
    pub model_dir: Option<PathBuf>,
    /// Override the model's calibration: the cosine that means unrelated…
    pub vector_floor: Option<f32>,
    /// …and the cosine that means "says the same thing".
    pub vector_ceiling: Option<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankProvider {
    #[default]
    None,
    /// Voyage `rerank-2.5` (key in `VOYAGE_API_KEY`).
    Voyage,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankConfig {
    pub provider: RerankProvider,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Results scoring under this are dropped (0–1).
    pub min_relevance: f32,
    /// Token budget of a `codebase_search` answer.
    pub max_tokens: usize,
    /// Call-tree depth in the connection graph (1 direct, N hops, -1 transitive).
    pub call_depth: i32,
    /// Stage 1 candidates of the vector channel.
    pub max_candidates: usize,
    /// Stage 1 candidates of the BM25, name and quoted channels.
    pub lexical_candidates: usize,
    /// An answer stops at the largest drop between neighbouring scores when that drop is
    /// at least this share of the best score (0–1; 1: it never stops early). Lower gives
    /// shorter answers that deliver the target less often (see `docs/benchmarks.md`).
    pub answer_knee: f32,
}

impl Default for SearchConfig {
    fn default() -> Self {
        let d = SearchOptions::default();
        Self {
            min_relevance: d.minimum_relevance_threshold,
            max_tokens: d.max_token_budget,
            call_depth: 1,
            max_candidates: d.max_vector_candidates,
            lexical_candidates: d.max_lexical_candidates,
            answer_knee: d.answer_knee,
        }
    }
}

impl Config {
    /// Reads `explicit`, else the project's `.codectx.toml`, else the user's config file,
    /// else the defaults. Returns the file it read, if any.
    pub fn load(root: &Path, explicit: Option<&Path>) -> anyhow::Result<(Self, Option<PathBuf>)> {
        let candidates: Vec<PathBuf> = match explicit {
            Some(path) => vec![path.to_path_buf()],
            None => [
                Some(root.join(PROJECT_CONFIG)),
                dirs::config_dir().map(|d| d.join("codectx").join("config.toml")),
            ]
            .into_iter()
            .flatten()
            .collect(),
        };
        for path in candidates {
            if explicit.is_none() && !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading the configuration {}", path.display()))?;
            // The parser's own message quotes the offending line, which may hold a secret
            // someone pasted: report the line number and the reason only.
            let config: Config = toml::from_str(&text).map_err(|e| {
                let line = e
                    .span()
                    .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
                anyhow::anyhow!(
                    "in the configuration {}{}: {}",
                    path.display(),
                    line.map_or(String::new(), |l| format!(", line {l}")),
                    e.message()
                )
            })?;
            config.validate()?;
            return Ok((config, Some(path)));
        }
        Ok((Config::default(), None))
    }

    fn validate(&self) -> anyhow::Result<()> {
        if !(0.0..=1.0).contains(&self.search.min_relevance) {
            bail!("search.min_relevance must be between 0 and 1");
        }
        if !(0.0..=1.0).contains(&self.search.answer_knee) {
            bail!("search.answer_knee must be between 0 and 1");
        }
        if self.search.max_tokens == 0 || self.index.embed_step == 0 {
            bail!("search.max_tokens and index.embed_step must be positive");
        }
        Ok(())
    }

    /// The search options these settings give.
    pub fn search_options(&self) -> SearchOptions {
        SearchOptions {
            minimum_relevance_threshold: self.search.min_relevance,
            max_token_budget: self.search.max_tokens,
            max_vector_candidates: self.search.max_candidates,
            max_lexical_candidates: self.search.lexical_candidates,
            answer_knee: self.search.answer_knee,
            vector_floor: self.embedding.vector_floor,
            vector_ceiling: self.embedding.vector_ceiling,
            ..SearchOptions::default()
        }
    }

    /// The store options (location, which files) — the embedder adds its vector spec.
    pub fn store_options(&self) -> StoreOptions {
        let mut store = StoreOptions {
            uri: self.index.dir.clone(),
            ..StoreOptions::default()
        };
        store.history = codectx_retrieval::HistoryOptions {
            max_commits: self.history.max_commits,
            max_age_days: self.history.max_age_days,
            max_files_per_commit: self.history.max_files_per_commit,
            // The store hands history its own file selection when it opens.
            ..Default::default()
        };
        store.shared_vectors = self.index.shared_vectors.shared();
        store.shared_vectors_bytes = self.index.shared_vectors_mb << 20;
        store.shared_parses = self.index.shared_parses.shared();
        store.files.max_file_bytes = self.index.max_file_bytes;
        store.files.skip_dirs = self.index.skip_dirs.clone();
        store
    }

    /// The hub name of the in-process model the configuration asks for (`embedding.model`,
    /// else the provider's default), or `None` for providers that run elsewhere.
    pub fn hub_model(&self) -> Option<&str> {
        let default = match self.embedding.provider {
            Provider::Local => DEFAULT_LOCAL_MODEL,
            Provider::Static => DEFAULT_STATIC_MODEL,
            Provider::Voyage | Provider::Openai | Provider::None => return None,
        };
        Some(self.embedding.model.as_deref().unwrap_or(default))
    }

    /// The hub name of the configured in-process model when it is simply not on this machine
    /// (not when it is there but broken): the case a download fixes.
    pub fn missing_model(&self) -> Option<String> {
        let hub = self.hub_model()?;
        locate_model(self.embedding.model_dir.as_deref(), hub)
            .is_err()
            .then(|| hub.to_string())
    }

    /// Builds the embedder. Loading the local model takes a moment (run it off the async
    /// threads); a missing model or key is an error whose text says how to fix it.
    pub fn embedder(&self) -> anyhow::Result<Option<Arc<dyn Embedder>>> {
        let e = &self.embedding;
        let http = HttpOptions::default();
        Ok(match e.provider {
            Provider::None => None,
            Provider::Local | Provider::Static => {
                let hub_model = self.hub_model().unwrap_or(DEFAULT_LOCAL_MODEL);
                let dir = locate_model(e.model_dir.as_deref(), hub_model)
                    .context("`mcp-server fetch-model` downloads it")?;
                if e.provider == Provider::Local {
                    Some(Arc::new(LocalEmbedder::load(&dir)?))
                } else {
                    Some(Arc::new(StaticEmbedder::load(&dir)?))
                }
            }
            Provider::Voyage => {
                let key = ApiKey::from_env("VOYAGE_API_KEY").context(
                    "embedding.provider = \"voyage\" needs VOYAGE_API_KEY in the environment",
                )?;
                Some(Arc::new(VoyageEmbedder::new(
                    key,
                    e.model.as_deref().unwrap_or("voyage-code-3"),
                    e.dimension.unwrap_or(1024),
                    e.base_url.as_deref(),
                    http,
                )?))
            }
            Provider::Openai => {
                let (Some(model), Some(dimension), Some(base_url)) =
                    (&e.model, e.dimension, &e.base_url)
                else {
                    bail!(
                        "embedding.provider = \"openai\" needs embedding.model, embedding.dimension and embedding.base_url"
                    );
                };
                Some(Arc::new(OpenAiEmbedder::new(
                    base_url,
                    model,
                    dimension,
                    ApiKey::from_env("OPENAI_API_KEY"),
                    http,
                )?))
            }
        })
    }

    /// Builds the reranker, if one is configured.
    pub fn reranker(&self) -> anyhow::Result<Option<Arc<dyn Reranker>>> {
        Ok(match self.rerank.provider {
            RerankProvider::None => None,
            RerankProvider::Voyage => Some(Arc::new(
                VoyageReranker::from_env(HttpOptions::default())
                    .context("rerank.provider = \"voyage\" needs VOYAGE_API_KEY")?,
            )),
        })
    }

    /// Engine options with the given models.
    pub fn engine_options(
        &self,
        embedder: Option<Arc<dyn Embedder>>,
        reranker: Option<Arc<dyn Reranker>>,
    ) -> EngineOptions {
        EngineOptions {
            store: self.store_options(),
            embedder,
            reranker,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_and_unknown_keys_are_refused() {
        let full = r#"
            [index]
            dir = "/tmp/idx"
            max_file_bytes = 1000
            skip_dirs = ["vendor"]
            embed_step = 8
            shared_vectors = "/tmp/vectors"
            shared_vectors_mb = 64
            shared_parses = "/tmp/parses"
            [embedding]
            provider = "openai"
            model = "nomic-embed-text"
            dimension = 768
            base_url = "http://localhost:11434/v1"
            [rerank]
            provider = "none"
            [search]
            min_relevance = 0.4
            max_tokens = 4000
            call_depth = 2
            max_candidates = 20
            lexical_candidates = 60
        "#;
        let config: Config = toml::from_str(full).unwrap();
        assert_eq!(config.embedding.provider, Provider::Openai);
        assert_eq!(config.search_options().max_token_budget, 4000);
        assert_eq!(config.search_options().max_vector_candidates, 20);
        assert_eq!(config.search_options().max_lexical_candidates, 60);
        assert_eq!(config.store_options().files.skip_dirs, vec!["vendor"]);
        assert_eq!(
            config.store_options().shared_vectors,
            Shared::At("/tmp/vectors".into())
        );
        assert_eq!(config.store_options().shared_vectors_bytes, 64 << 20);
        assert_eq!(
            config.store_options().shared_parses,
            Shared::At("/tmp/parses".into())
        );
        let off: Config = toml::from_str("[index]\nshared_parses = \"off\"").unwrap();
        assert_eq!(off.store_options().shared_parses, Shared::Off);
        for (value, expected) in [("off", Shared::Off), ("repository", Shared::Repository)] {
            let config: Config =
                toml::from_str(&format!("[index]\nshared_vectors = \"{value}\"")).unwrap();
            assert_eq!(config.store_options().shared_vectors, expected);
        }
        let default: Config = toml::from_str("").unwrap();
        assert_eq!(default.store_options().shared_vectors, Shared::Repository);
        assert_eq!(default.store_options().shared_parses, Shared::Repository);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[embedding]\napi_key = \"sk-secret\"\n").unwrap();
        let err = format!("{:#}", Config::load(dir.path(), Some(&path)).unwrap_err());
        assert!(
            err.contains("line 2") && err.contains("unknown field `api_key`"),
            "{err}"
        );
        assert!(!err.contains("sk-secret"), "{err}");
    }

    #[test]
    fn out_of_range_values_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[search]\nmin_relevance = 2.0\n").unwrap();
        let err = Config::load(dir.path(), Some(&path)).unwrap_err();
        assert!(format!("{err:#}").contains("min_relevance"), "{err:#}");
    }
}
