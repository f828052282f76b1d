//! Each changed file is parsed exactly once per sync: the chunks and the graph facts come
//! from one parse. (Its own test binary: the parse counter is process-wide.)

use codectx_store::{Store, StoreOptions};

#[tokio::test]
async fn a_sync_parses_each_changed_file_once() {
    let root = tempfile::tempdir().unwrap();
    codectx_corpus::copy_tree(&codectx_corpus::fixture("index/workspace"), root.path());
    // One file oxc gives up on until a line is blanked: still one parse (of several attempts).
    std::fs::write(
        root.path().join("src/broken.ts"),
        "export function ok() { return 1; }\nconst = = ;\nexport function after() {}\n",
    )
    .unwrap();
    let mut store = Store::open(root.path(), StoreOptions::default())
        .await
        .unwrap();

    let before = codectx_parser::parse_count();
    let stats = store.sync(None, &()).await.unwrap();
    assert_eq!(stats.files_parsed, 6, "{stats:?}");
    assert_eq!(codectx_parser::parse_count() - before, 6);
    let facts = store.load_facts().await.unwrap();
    assert_eq!(facts.len(), 6, "every parsed file has its facts");

    for file in ["src/auth/token.ts", "src/util/format.ts"] {
        let path = root.path().join(file);
        let source = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{source}\nexport const added = 1;\n")).unwrap();
    }
    let before = codectx_parser::parse_count();
    let stats = store.sync(None, &()).await.unwrap();
    assert_eq!(stats.files_parsed, 2, "{stats:?}");
    assert_eq!(codectx_parser::parse_count() - before, 2);

    let before = codectx_parser::parse_count();
    store.sync(None, &()).await.unwrap();
    assert_eq!(
        codectx_parser::parse_count() - before,
        0,
        "no change, no parse"
    );
}
