//! The index on object storage: `index.dir` is an `s3://` URI, served by an S3-compatible
//! server (moto, installed from PyPI) that the test starts on loopback. One checkout builds
//! the index there and answers from it; a second checkout of the same files at another path
//! reads the same index without parsing a file, and sees its own edit after the next sync.
//!
//! Credentials and the endpoint come from the environment, as LanceDB reads them
//! (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`, …): the configuration file never holds a key.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// moto's S3 backend and the web server its `moto.server` needs, pinned.
const MOTO: &[&str] = &["moto[s3]==5.1.22", "flask==3.1.3", "flask-cors==6.0.5"];
const BUCKET: &str = "codectx-shared";

/// A moto server on a free loopback port, killed on drop.
struct S3Server {
    child: Child,
    endpoint: String,
}

impl S3Server {
    fn start(packages: &Path) -> S3Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .env("PYTHONPATH", packages)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let server = S3Server {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the S3 server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // The bucket, made with the boto3 that moto depends on.
        let made = Command::new("python3")
            .args([
                "-c",
                "import sys, boto3\n\
                 boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1',\n\
                     aws_access_key_id='test', aws_secret_access_key='test'\n\
                 ).create_bucket(Bucket=sys.argv[2])",
                &server.endpoint,
                BUCKET,
            ])
            .env("PYTHONPATH", packages)
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        server
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `mcp-server <args>` with the S3 environment and an empty HOME (no user configuration).
fn mcp_server(server: &S3Server, home: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(args)
        .args(["--embedder", "none"])
        .env("HOME", home)
        .env("RUST_LOG", "warn")
        .env_remove("AWS_PROFILE")
        .env("AWS_ENDPOINT", &server.endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .expect("mcp-server runs");
    assert!(out.status.success(), "mcp-server {args:?}: {out:?}");
    out
}

/// A copy of the auth fixture whose `.codectx.toml` puts the index in the bucket.
fn checkout() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    codectx_corpus::copy_tree(&codectx_corpus::fixture("retrieval/auth"), &root);
    std::fs::write(
        root.join(".codectx.toml"),
        format!("[index]\ndir = \"s3://{BUCKET}/index\"\n"),
    )
    .unwrap();
    (dir, root)
}

/// The `(N parsed now, …)` figure of `mcp-server index`.
fn parsed_now(out: &Output) -> usize {
    let line = String::from_utf8_lossy(&out.stdout);
    let (_, rest) = line.split_once(" files (").expect("the index summary");
    rest.split_once(" parsed now").unwrap().0.parse().unwrap()
}

fn index(server: &S3Server, home: &Path, root: &Path) -> Output {
    mcp_server(server, home, &["index", "--root", root.to_str().unwrap()])
}

fn search(server: &S3Server, home: &Path, root: &Path, query: &str) -> String {
    let out = mcp_server(
        server,
        home,
        &["search", "--root", root.to_str().unwrap(), query],
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn network_an_index_on_s3_serves_two_checkouts() {
    let Some(packages) = codectx_corpus::needs_network(
        "moto, an S3-compatible server, from PyPI",
        codectx_corpus::pip_packages("moto-s3", MOTO),
    ) else {
        return;
    };
    let server = S3Server::start(&packages);
    let home = tempfile::tempdir().unwrap();
    let (_first_dir, first) = checkout();
    let (_second_dir, second) = checkout();

    // The first checkout builds the index in the bucket and answers from it.
    let built = index(&server, home.path(), &first);
    assert!(parsed_now(&built) >= 7, "{built:?}");
    assert!(
        !first.join(".codectx").exists(),
        "nothing is written locally"
    );
    let answer = search(&server, home.path(), &first, "validate a token");
    assert!(
        answer.contains("function validate(token: string)"),
        "{answer}"
    );

    // The second checkout, at another path and with other mtimes, reads the same index:
    // nothing is parsed, and the answer comes from the index.
    let synced = index(&server, home.path(), &second);
    assert_eq!(parsed_now(&synced), 0, "{synced:?}");
    let answer = search(&server, home.path(), &second, "validate a token");
    assert!(
        answer.contains("function validate(token: string)"),
        "{answer}"
    );

    // An edit in the second checkout: one file parsed, and the new code is answered.
    std::fs::write(
        second.join("src/auth/revocation.ts"),
        "export function revokeRefreshToken(token: string): void {\n  console.log('revoked', token);\n}\n",
    )
    .unwrap();
    let edited = index(&server, home.path(), &second);
    assert_eq!(parsed_now(&edited), 1, "{edited:?}");
    let answer = search(&server, home.path(), &second, "revoke a refresh token");
    assert!(answer.contains("revokeRefreshToken"), "{answer}");
}
