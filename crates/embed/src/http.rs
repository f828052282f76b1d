//! The HTTP client every provider shares: retries, backoff, key handling.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::EmbedError;

/// An API key. It is sent in the `Authorization` header and nowhere else: `Debug` and
/// `Display` print `***`, and error texts are scrubbed of it.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key from an environment variable, if set and not empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| Self(k.trim().to_string()))
    }

    fn scrub(&self, text: &str) -> String {
        if self.0.len() >= 4 {
            text.replace(&self.0, "***")
        } else {
            text.to_string()
        }
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Timeouts and retry policy of a provider's requests.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries after the first attempt (429, 5xx, timeouts, connection errors).
    pub max_retries: u32,
    /// First backoff; each retry doubles it (a `Retry-After` header wins when longer).
    pub initial_backoff: Duration,
    /// Longest single wait.
    pub max_backoff: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_retries: 5,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

pub(crate) struct HttpClient {
    client: reqwest::Client,
    key: Option<ApiKey>,
    options: HttpOptions,
    /// For messages: which service this is.
    service: &'static str,
}

impl HttpClient {
    pub(crate) fn new(
        service: &'static str,
        key: Option<ApiKey>,
        options: HttpOptions,
    ) -> Result<Self, EmbedError> {
        let client = reqwest::Client::builder()
            .timeout(options.timeout)
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot create an HTTP client: {e}")))?;
        Ok(Self {
            client,
            key,
            options,
            service,
        })
    }

    /// POSTs `body` as JSON to `url` and decodes the answer, retrying what is worth retrying.
    pub(crate) async fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<R, EmbedError> {
        let mut backoff = self.options.initial_backoff;
        let mut attempt = 0;
        loop {
            let mut request = self.client.post(url).json(body);
            if let Some(key) = &self.key {
                request = request.bearer_auth(&key.0);
            }
            let failure = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        let bytes = response.bytes().await.map_err(|e| self.unavailable(e))?;
                        return serde_json::from_slice(&bytes).map_err(|e| {
                            EmbedError::Protocol(self.scrub(&format!(
                                "{} answered JSON this client does not understand: {e}",
                                self.service
                            )))
                        });
                    }
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let text = response.text().await.unwrap_or_default();
                    let detail = format!("{} answered {status}: {}", self.service, brief(&text));
                    if status == reqwest::StatusCode::UNAUTHORIZED
                        || status == reqwest::StatusCode::FORBIDDEN
                    {
                        return Err(EmbedError::Unauthorized(self.scrub(&detail)));
                    }
                    if !(status == reqwest::StatusCode::TOO_MANY_REQUESTS
                        || status.is_server_error())
                    {
                        return Err(EmbedError::Protocol(self.scrub(&detail)));
                    }
                    (detail, retry_after)
                }
                Err(e) => (self.scrub(&format!("{}: {e}", self.service)), None),
            };
            if attempt >= self.options.max_retries {
                return Err(EmbedError::Unavailable(self.scrub(&format!(
                    "{} (gave up after {} attempts)",
                    failure.0,
                    attempt + 1
                ))));
            }
            let wait = failure
                .1
                .map_or(backoff, |r| r.max(backoff))
                .min(self.options.max_backoff);
            tracing::warn!("{}; retrying in {:?}", self.scrub(&failure.0), wait);
            tokio::time::sleep(wait).await;
            backoff = (backoff * 2).min(self.options.max_backoff);
            attempt += 1;
        }
    }

    fn unavailable(&self, e: reqwest::Error) -> EmbedError {
        EmbedError::Unavailable(self.scrub(&format!("{}: {e}", self.service)))
    }

    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.scrub(text),
            None => text.to_string(),
        }
    }
}

/// The start of an error body, on one line.
fn brief(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > 300 {
        format!("{}…", line.chars().take(300).collect::<String>())
    } else {
        line
    }
}

/// Splits texts into request batches of at most `max_items` texts and `max_tokens`
/// estimated tokens (3 characters per token: code tokenizes densely).
pub(crate) fn batches(texts: &[String], max_items: usize, max_tokens: usize) -> Vec<&[String]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut tokens = 0;
    for (i, text) in texts.iter().enumerate() {
        let t = text.chars().count().div_ceil(3).max(1);
        if i > start && (i - start >= max_items || tokens + t > max_tokens) {
            out.push(&texts[start..i]);
            start = i;
            tokens = 0;
        }
        tokens += t;
    }
    if start < texts.len() {
        out.push(&texts[start..]);
    }
    out
}
