//! Where in-process models live and how they arrive: a directory per model under the user
//! cache, found offline, or fetched from a Hugging Face hub.
//!
//! Both in-process kinds — a BERT sentence model ([`LocalEmbedder`](crate::LocalEmbedder))
//! and a model2vec static model ([`StaticEmbedder`](crate::StaticEmbedder)) — are the same
//! three files: `config.json`, `tokenizer.json` and `model.safetensors`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::provider::EmbedError;
use crate::registry::{PackageIndex, RegistryCopy};

/// The default local model, as the Hugging Face hub names it.
pub const DEFAULT_LOCAL_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The default static model: model2vec's code-trained potion model (distilled from
/// CodeRankEmbed; about 32 MB).
pub const DEFAULT_STATIC_MODEL: &str = "minishlab/potion-code-16M-v2";

/// Environment variable naming the directory of the default local model; it wins over the
/// user cache.
pub const MODEL_DIR_ENV: &str = "CODECTX_MODEL_DIR";

/// Environment variable naming the hub to download from (default `https://huggingface.co`),
/// as the Hugging Face tools read it: a mirror, or a local stand-in.
pub const HUB_ENDPOINT_ENV: &str = "HF_ENDPOINT";

/// Files every model directory holds.
pub(crate) const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Files fetched when the hub has them (sentence-transformers' `max_seq_length`).
pub(crate) const OPTIONAL_FILES: [&str; 1] = ["sentence_bert_config.json"];

/// An error naming every file of `files` that `dir` lacks (`what`: the kind of directory).
pub(crate) fn require_files(dir: &Path, files: &[&str], what: &str) -> Result<(), EmbedError> {
    let missing: Vec<&str> = files
        .iter()
        .filter(|f| !dir.join(f).is_file())
        .copied()
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(EmbedError::Config(format!(
        "{} is not a {what} directory: {} missing",
        dir.display(),
        missing.join(", ")
    )))
}

/// The user cache directory models are kept in: `$XDG_CACHE_HOME/codectx/models`, else
/// `~/.cache/codectx/models`.
pub fn model_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("codectx").join("models"))
}

/// Where a model's files are cached: the last segment of its hub name under
/// [`model_cache_dir`] (`…/models/all-MiniLM-L6-v2`).
pub fn cached_model_dir(hub_model: &str) -> Option<PathBuf> {
    let name = hub_model.rsplit('/').next().unwrap_or(hub_model);
    Some(model_cache_dir()?.join(name))
}

/// Finds a model directory without the network: `configured` (from configuration) first,
/// then `$CODECTX_MODEL_DIR` when `hub_model` is the default local model, then the user
/// cache. The error lists every place looked at.
pub fn locate_model(configured: Option<&Path>, hub_model: &str) -> Result<PathBuf, EmbedError> {
    let mut looked = Vec::new();
    let from_env = std::env::var_os(MODEL_DIR_ENV)
        .filter(|_| hub_model == DEFAULT_LOCAL_MODEL)
        .map(PathBuf::from);
    let candidates = configured
        .map(Path::to_path_buf)
        .into_iter()
        .chain(from_env)
        .chain(cached_model_dir(hub_model));
    for dir in candidates {
        if MODEL_FILES.iter().all(|f| dir.join(f).is_file()) {
            return Ok(dir);
        }
        looked.push(dir.display().to_string());
    }
    Err(EmbedError::Config(format!(
        "no model {hub_model} found (looked in {})",
        if looked.is_empty() {
            "no directory: HOME is not set".to_string()
        } else {
            looked.join(", ")
        }
    )))
}

/// How far a download has come: `file` has `done` of `total` bytes (when the hub says).
#[derive(Debug, Clone, Copy)]
pub struct DownloadProgress<'a> {
    pub file: &'a str,
    pub done: u64,
    pub total: Option<u64>,
}

/// A Hugging Face hub (or anything serving its `/<model>/resolve/main/<file>` layout).
#[derive(Debug, Clone)]
pub struct ModelHub {
    endpoint: String,
}

impl ModelHub {
    /// The hub at `endpoint`, e.g. `https://huggingface.co`.
    pub fn new(endpoint: &str) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_string(),
        }
    }

    /// `$HF_ENDPOINT`, else `https://huggingface.co`.
    pub fn from_env() -> Self {
        Self::new(
            &std::env::var(HUB_ENDPOINT_ENV).unwrap_or_else(|_| "https://huggingface.co".into()),
        )
    }

    /// Downloads `hub_model`'s files into `dir` and returns it. Files already present are
    /// kept. Each file streams to a temporary name and is renamed when complete, so an
    /// interrupted download leaves nothing that looks like a model, and memory stays flat.
    pub async fn download(
        &self,
        hub_model: &str,
        dir: &Path,
        progress: &mut (dyn FnMut(DownloadProgress<'_>) + Send),
    ) -> Result<PathBuf, EmbedError> {
        let local =
            |e: &dyn std::fmt::Display| EmbedError::Config(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(|e| local(&e))?;
        let client = download_client()?;
        for file in MODEL_FILES.iter().chain(&OPTIONAL_FILES) {
            let target = dir.join(file);
            if target.is_file() {
                continue;
            }
            let url = format!("{}/{hub_model}/resolve/main/{file}", self.endpoint);
            let response = client
                .get(&url)
                .send()
                .await
                .map_err(|e| EmbedError::Unavailable(format!("{url}: {e}")))?;
            if !response.status().is_success() {
                if OPTIONAL_FILES.contains(file) {
                    continue;
                }
                return Err(EmbedError::Unavailable(format!(
                    "{url}: {}",
                    response.status()
                )));
            }
            let partial = dir.join(format!("{file}.partial"));
            stream_to_file(response, file, &partial, progress).await?;
            std::fs::rename(&partial, &target).map_err(|e| local(&e))?;
        }
        require_files(dir, &MODEL_FILES, "model")?;
        Ok(dir.to_path_buf())
    }
}

/// The HTTP client downloads use: no overall timeout (a model is tens of megabytes), a
/// bounded wait to connect.
pub(crate) fn download_client() -> Result<reqwest::Client, EmbedError> {
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| EmbedError::Unavailable(e.to_string()))
}

/// Streams `response`'s body into the file `partial` (memory stays flat), reporting progress
/// under the name `file`; fails when the connection closes early. Returns the body's SHA-256,
/// lowercase hex.
pub(crate) async fn stream_to_file(
    mut response: reqwest::Response,
    file: &str,
    partial: &Path,
    progress: &mut (dyn FnMut(DownloadProgress<'_>) + Send),
) -> Result<String, EmbedError> {
    use sha2::Digest;
    let url = response.url().to_string();
    let local =
        |e: &dyn std::fmt::Display| EmbedError::Config(format!("{}: {e}", partial.display()));
    let unavailable = |e: &dyn std::fmt::Display| EmbedError::Unavailable(format!("{url}: {e}"));
    let total = response.content_length();
    let mut out = std::fs::File::create(partial).map_err(|e| local(&e))?;
    let mut hasher = sha2::Sha256::new();
    let mut done = 0u64;
    while let Some(bytes) = response.chunk().await.map_err(|e| unavailable(&e))? {
        out.write_all(&bytes).map_err(|e| local(&e))?;
        hasher.update(&bytes);
        done += bytes.len() as u64;
        progress(DownloadProgress { file, done, total });
    }
    if let Some(total) = total.filter(|&t| t != done) {
        return Err(unavailable(&format!(
            "the connection closed after {done} of {total} bytes"
        )));
    }
    out.sync_all().map_err(|e| local(&e))?;
    Ok(crate::registry::hex(&hasher.finalize()))
}

/// Fetches `hub_model` into [`cached_model_dir`], where [`locate_model`] finds it, and
/// returns that directory. The hub ([`ModelHub::from_env`]) is tried first; when it fails and
/// the model has a [`RegistryCopy`], the package index ([`PackageIndex::from_env`]) is tried
/// next. The error names what each source said.
pub async fn download_model(
    hub_model: &str,
    progress: &mut (dyn FnMut(DownloadProgress<'_>) + Send),
) -> Result<PathBuf, EmbedError> {
    let dir = cached_model_dir(hub_model)
        .ok_or_else(|| EmbedError::Config("HOME is not set: no cache directory".into()))?;
    let from_hub = ModelHub::from_env()
        .download(hub_model, &dir, progress)
        .await;
    let (hub_error, copy) = match (from_hub, RegistryCopy::known(hub_model)) {
        (Ok(dir), _) => return Ok(dir),
        (Err(e), None) => return Err(e),
        (Err(e), Some(copy)) => (e, copy),
    };
    tracing::info!(
        "{hub_model}: the hub failed ({}); trying the package index",
        hub_error.detail()
    );
    PackageIndex::from_env()
        .download(&copy, &dir, progress)
        .await
        .map_err(|e| {
            EmbedError::Unavailable(format!(
                "{hub_model} from the hub: {}; from the package index ({}): {}",
                hub_error.detail(),
                copy.package,
                e.detail()
            ))
        })
}
