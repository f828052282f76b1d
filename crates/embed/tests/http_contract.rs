//! The providers against a loopback server that speaks the Voyage and OpenAI APIs as their
//! documentation defines them: request bodies, batching, retries, errors, key hygiene.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codectx_embed::{
    ApiKey, EmbedError, Embedder, HttpOptions, OpenAiEmbedder, Reranker, VoyageEmbedder,
    VoyageReranker,
};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY: &str = "pa-secret-test-key-0123456789";

fn fast() -> HttpOptions {
    HttpOptions {
        timeout: Duration::from_millis(500),
        max_retries: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
    }
}

/// Answers an embeddings request with one vector per input (`[input index, length, 0…]`),
/// listed in reverse order to check that clients sort by `index`.
struct Embeddings {
    dimension: usize,
}

impl Respond for Embeddings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let inputs = body["input"].as_array().unwrap();
        let mut data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut v = vec![0.0f32; self.dimension];
                v[0] = i as f32;
                v[1] = text.as_str().unwrap().len() as f32;
                json!({"object": "embedding", "embedding": v, "index": i})
            })
            .collect();
        data.reverse();
        ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "data": data, "model": body["model"],
            "usage": {"total_tokens": 1}
        }))
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("function f{i}() {{}}")).collect()
}

#[tokio::test]
async fn voyage_embeds_documents_with_the_documented_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(body_partial_json(json!({
            "model": "voyage-code-3", "input_type": "document",
            "output_dimension": 8, "truncation": true
        })))
        .respond_with(Embeddings { dimension: 8 })
        .expect(1)
        .mount(&server)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        8,
        Some(&format!("{}/v1", server.uri())),
        fast(),
    )
    .unwrap();
    let vectors = voyage.embed_documents(&texts(3)).await.unwrap();
    assert_eq!(
        vectors.iter().map(|v| v[0]).collect::<Vec<_>>(),
        [0.0, 1.0, 2.0]
    );
    assert_eq!(voyage.spec().model, "voyage:voyage-code-3");
}

#[tokio::test]
async fn voyage_queries_say_so() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(body_partial_json(
            json!({"input_type": "query", "input": ["where is auth"]}),
        ))
        .respond_with(Embeddings { dimension: 4 })
        .expect(1)
        .mount(&server)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        4,
        Some(&format!("{}/v1", server.uri())),
        fast(),
    )
    .unwrap();
    assert_eq!(voyage.embed_query("where is auth").await.unwrap().len(), 4);
}

/// Records the number of inputs of each request.
struct CountingEmbeddings {
    sizes: Arc<Mutex<Vec<usize>>>,
}

impl Respond for CountingEmbeddings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        self.sizes
            .lock()
            .unwrap()
            .push(body["input"].as_array().unwrap().len());
        Embeddings { dimension: 2 }.respond(request)
    }
}

#[tokio::test]
async fn voyage_batches_within_the_per_request_limits() {
    let server = MockServer::start().await;
    let sizes = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(CountingEmbeddings {
            sizes: sizes.clone(),
        })
        .mount(&server)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        2,
        Some(&server.uri()),
        fast(),
    )
    .unwrap();
    // 2,500 small texts: 1,000 per request.
    let many = texts(2_500);
    let vectors = voyage.embed_documents(&many).await.unwrap();
    assert_eq!(vectors.len(), 2_500);
    assert_eq!(
        vectors[1_234][1],
        many[1_234].len() as f32,
        "order kept across batches"
    );
    assert_eq!(*sizes.lock().unwrap(), [1_000, 1_000, 500]);
    // Three texts of ~60k estimated tokens each: the token limit splits them.
    sizes.lock().unwrap().clear();
    let big: Vec<String> = (0..3)
        .map(|i| format!("{i}{}", "x".repeat(180_000)))
        .collect();
    voyage.embed_documents(&big).await.unwrap();
    assert_eq!(*sizes.lock().unwrap(), [1, 1, 1]);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_with_backoff() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(Embeddings { dimension: 2 })
        .with_priority(3)
        .mount(&server)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        2,
        Some(&server.uri()),
        fast(),
    )
    .unwrap();
    assert_eq!(voyage.embed_documents(&texts(2)).await.unwrap().len(), 2);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn persistent_failures_and_timeouts_give_up_with_a_clear_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded"))
        .mount(&server)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        2,
        Some(&server.uri()),
        fast(),
    )
    .unwrap();
    let err = voyage.embed_documents(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Unavailable(_)), "{err}");
    assert!(
        err.to_string().contains("500") && err.to_string().contains("gave up after 3 attempts"),
        "{err}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);

    let slow = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Embeddings { dimension: 2 }.respond_slowly())
        .mount(&slow)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        2,
        Some(&slow.uri()),
        fast(),
    )
    .unwrap();
    let err = voyage.embed_documents(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Unavailable(_)), "{err}");
    assert_eq!(slow.received_requests().await.unwrap().len(), 3);
}

trait Slowly {
    fn respond_slowly(self) -> SlowEmbeddings;
}

impl Slowly for Embeddings {
    fn respond_slowly(self) -> SlowEmbeddings {
        SlowEmbeddings(self)
    }
}

struct SlowEmbeddings(Embeddings);

impl Respond for SlowEmbeddings {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.respond(request).set_delay(Duration::from_secs(2))
    }
}

/// A writer for tracing output that the test can read back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_bad_key_fails_at_once_and_the_key_never_shows() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::TRACE)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let server = MockServer::start().await;
    // Servers do echo credentials back; neither errors nor logs may repeat them.
    Mock::given(method("POST"))
        .and(path("/embeddings"))
        .respond_with(
            ResponseTemplate::new(503).set_body_string(format!("overloaded for key {KEY}")),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_string(format!("invalid key {KEY}")))
        .with_priority(2)
        .mount(&server)
        .await;
    let voyage = VoyageEmbedder::new(
        ApiKey::new(KEY),
        "voyage-code-3",
        2,
        Some(&server.uri()),
        fast(),
    )
    .unwrap();
    let err = voyage.embed_documents(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Unauthorized(_)), "{err}");
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        2,
        "401 is not retried"
    );
    let shown = format!("{err} {err:?} {:?}", ApiKey::new(KEY));
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("401"), "{shown}");
    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("503"), "the retry is logged: {logged}");
    assert!(!logged.contains(KEY), "{logged}");
}

#[tokio::test]
async fn voyage_reranks_with_the_documented_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/rerank"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(body_partial_json(json!({
            "query": "token validation", "model": "rerank-2.5",
            "documents": ["a", "b", "c"]
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "object": "list", "model": "rerank-2.5", "usage": {"total_tokens": 3},
            "data": [
                {"index": 2, "relevance_score": 0.9},
                {"index": 0, "relevance_score": 0.5},
                {"index": 1, "relevance_score": 0.1}
            ]
        })))
        .expect(1)
        .mount(&server)
        .await;
    let rerank = VoyageReranker::new(
        ApiKey::new(KEY),
        "rerank-2.5",
        Some(&format!("{}/v1", server.uri())),
        fast(),
    )
    .unwrap();
    let docs: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    assert_eq!(
        rerank.rerank("token validation", &docs).await.unwrap(),
        [0.5, 0.1, 0.9]
    );
    assert_eq!(
        rerank.rerank("anything", &[]).await.unwrap(),
        Vec::<f32>::new()
    );
}

#[tokio::test]
async fn openai_compatible_servers_get_the_openai_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(body_partial_json(
            json!({"model": "nomic-embed-text", "encoding_format": "float"}),
        ))
        .respond_with(Embeddings { dimension: 3 })
        .mount(&server)
        .await;
    // A local server without a key: no Authorization header at all.
    let local = OpenAiEmbedder::new(
        &format!("{}/v1/", server.uri()),
        "nomic-embed-text",
        3,
        None,
        fast(),
    )
    .unwrap();
    let vectors = local.embed_documents(&texts(300)).await.unwrap();
    assert_eq!(vectors.len(), 300);
    assert_eq!(vectors[299][0], 43.0, "second batch of 256, index 43");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert!(
        requests
            .iter()
            .all(|r| !r.headers.contains_key("authorization"))
    );

    // With a key, and a server answering the wrong dimension: a clear protocol error.
    let wrong = OpenAiEmbedder::new(
        &format!("{}/v1", server.uri()),
        "nomic-embed-text",
        5,
        Some(ApiKey::new(KEY)),
        fast(),
    )
    .unwrap();
    let err = wrong.embed_documents(&texts(1)).await.unwrap_err();
    assert!(
        matches!(err, EmbedError::Protocol(_)) && err.to_string().contains("expected 5"),
        "{err}"
    );
    let last = server.received_requests().await.unwrap().pop().unwrap();
    assert_eq!(
        last.headers["authorization"],
        format!("Bearer {KEY}").as_str()
    );

    assert!(matches!(
        OpenAiEmbedder::new("", "m", 3, None, fast()),
        Err(EmbedError::Config(_))
    ));
}
