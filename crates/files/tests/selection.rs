//! The one file selection on a tree with everything a repository throws at it.

use std::path::Path;

use codectx_files::FileSelection;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_walk_keeps_source_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for path in [
        "src/a.ts",
        "src/b.jsx",
        "src/nested dir/c.mjs",
        "src/types.d.ts",
        "src/readme.md",
        "node_modules/dep/index.js",
        "dist/bundle.js",
        ".hidden/x.ts",
        "ignored/y.ts",
        "my-index/chunks.lance/z.ts",
    ] {
        write(root, path, "export const x = 1;\n");
    }
    write(root, ".gitignore", "ignored/\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(root, root.join("src/loop")).unwrap();

    let selection = FileSelection {
        index_dir: Some(root.join("my-index")),
        ..FileSelection::default()
    };
    let files = selection.walk(root);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["src/a.ts", "src/b.jsx", "src/nested dir/c.mjs"]);
    assert_eq!(files[0].abs, root.join("src/a.ts"));
    assert_eq!(files[0].size, 20);
    assert!(files[0].mtime_ns > 0);

    let with_declarations = FileSelection {
        skip_declaration_files: false,
        ..selection.clone()
    };
    assert_eq!(with_declarations.walk(root).len(), 4);

    // A watcher watches the directories the walk enters, and no others.
    let dirs: Vec<String> = selection
        .directories(root)
        .iter()
        .map(|d| codectx_files::relative_path(root, d))
        .collect();
    assert_eq!(dirs, ["", "src", "src/nested dir"]);
    for (dir, entered) in [
        ("src/nested dir", true),
        ("ignored", false),
        ("node_modules/dep", false),
        (".hidden", false),
        ("my-index/chunks.lance", false),
    ] {
        assert_eq!(
            selection.enters_directory(root, &root.join(dir)),
            entered,
            "{dir}"
        );
    }
}

#[test]
fn watcher_events_matter_only_outside_skipped_places_and_the_index() {
    let root = Path::new("/repo");
    let selection = FileSelection {
        index_dir: Some(root.join("var/index")),
        ..FileSelection::default()
    };
    assert!(selection.may_matter(root, &root.join("src/a.ts")));
    assert!(
        selection.may_matter(root, &root.join("src")),
        "a directory rename matters"
    );
    for path in [
        "var/index/chunks.lance/data/1.lance",
        "node_modules/dep/index.js",
        ".git/index",
        ".codectx/meta.lance",
    ] {
        assert!(!selection.may_matter(root, &root.join(path)), "{path}");
    }
    assert!(!selection.may_matter(root, Path::new("/elsewhere/a.ts")));
}

#[test]
fn size_and_minified_checks() {
    use codectx_files::Generated;
    let selection = FileSelection::default();
    assert!(!selection.too_large(2 << 20));
    assert!(selection.too_large((2 << 20) + 1));
    assert_eq!(
        Generated::of("vendor/x.min.js", "a"),
        Some(Generated::Minified)
    );
    assert_eq!(
        Generated::of("x.js", &"a".repeat(6_000)),
        Some(Generated::Minified)
    );
    assert_eq!(Generated::of("x.js", "const a = 1;\nconst b = 2;\n"), None);
}

/// A compiler's output names its source map on its last line (marked commits
/// `lib/marked.cjs` beside `src/`); code that only mentions one is written by hand.
#[test]
fn build_output_names_its_source_map() {
    use codectx_files::Generated;
    let bundle = "/**\n * marked v7.0.4\n */\n\nclass _Tokenizer {\n  list(src) {}\n}\n\n\
                  exports.walkTokens = walkTokens;\n//# sourceMappingURL=marked.cjs.map\n\n";
    assert_eq!(
        Generated::of("lib/marked.cjs", bundle),
        Some(Generated::BuildOutput)
    );
    for last in [
        "//@ sourceMappingURL=a.js.map",
        "/*# sourceMappingURL=data:application/json;base64,e30= */",
        "  //# sourceMappingURL=a.js.map",
    ] {
        let source = format!("export const a = 1;\n{last}");
        assert_eq!(
            Generated::of("a.js", &source),
            Some(Generated::BuildOutput),
            "{last}"
        );
    }
    // Mentioned, not named on the last line: a plugin that writes such comments.
    for source in [
        "const comment = '//# sourceMappingURL=' + file;\nexport default comment;\n",
        "//# sourceMappingURL=a.js.map\nexport const a = 1;\n",
        "// sourceMappingURL=a.js.map\n",
    ] {
        assert_eq!(Generated::of("a.js", source), None, "{source}");
    }
}

/// Paths from elsewhere than the walk (a commit's tree, for history) are judged by the
/// same selection: no bundle in `dist/`, no declaration file, nothing hidden.
#[test]
fn a_path_alone_is_selected_as_the_walk_would() {
    let selection = codectx_files::FileSelection::default();
    assert!(selection.selects_path("src/router/index.ts"));
    assert!(selection.selects_path("lib/app.js"));
    assert!(!selection.selects_path("dist/index.js"));
    assert!(!selection.selects_path("packages/core/dist/index.mjs"));
    assert!(!selection.selects_path("types/index.d.ts"));
    assert!(!selection.selects_path(".github/scripts/release.js"));
    assert!(!selection.selects_path("node_modules/x/index.js"));
    assert!(!selection.selects_path("README.md"));
}

/// A walk of one directory finds what the whole walk finds there, by the same rules: the
/// root's and a nested directory's ignore files, git's exclude file, hidden and declaration
/// files, nothing from the directories below; module configurations alike.
#[test]
fn a_directory_walked_alone_holds_what_the_whole_walk_finds_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    write(root, ".git/info/exclude", "excluded.ts\n");
    write(root, ".gitignore", "*.gen.ts\n");
    write(root, "src/lib/.gitignore", "local.ts\n");
    for path in [
        "top.ts",
        "src/a.ts",
        "src/a.gen.ts",
        "src/excluded.ts",
        "src/types.d.ts",
        "src/.hidden.ts",
        "src/lib/b.ts",
        "src/lib/local.ts",
        "src/lib/deep/c.ts",
    ] {
        write(root, path, "export const x = 1;\n");
    }
    for path in [
        "package.json",
        "src/lib/tsconfig.json",
        "src/lib/tsconfig.build.json",
        "src/lib/deep/package.json",
        "src/lib/deep/other.json",
        "node_modules/x/package.json",
    ] {
        write(root, path, "{}\n");
    }
    let selection = FileSelection::default();
    let whole = selection.walk_with_module_configs(root);
    assert_eq!(whole.sources, selection.walk(root));
    let paths = |files: &[codectx_files::SourceFile], dir: Option<&str>| -> Vec<String> {
        files
            .iter()
            .map(|f| f.path.clone())
            .filter(|p| dir.is_none_or(|d| codectx_files::directory_of(p) == d))
            .collect()
    };
    let mut seen = 0;
    for dir in selection.directories(root) {
        let relative = codectx_files::relative_path(root, &dir);
        let alone = selection.walk_directory(root, &dir);
        let dir = Some(relative.as_str());
        assert_eq!(paths(&alone.sources, None), paths(&whole.sources, dir));
        assert_eq!(
            paths(&alone.module_configs, None),
            paths(&whole.module_configs, dir)
        );
        seen += alone.sources.len() + alone.module_configs.len();
    }
    assert_eq!(seen, whole.sources.len() + whole.module_configs.len());
    assert_eq!(
        paths(&whole.sources, None),
        ["src/a.ts", "src/lib/b.ts", "src/lib/deep/c.ts", "top.ts"]
    );
    assert_eq!(
        paths(&whole.module_configs, None),
        [
            "package.json",
            "src/lib/deep/package.json",
            "src/lib/tsconfig.build.json",
            "src/lib/tsconfig.json"
        ]
    );
}
