//! A walk that reuses the last walk's directory listings finds what a full walk finds, after
//! every kind of change a work tree sees, and reads no directory that did not change.

use std::path::Path;
use std::time::{Duration, SystemTime};

use codectx_files::{FileSelection, Listings, Walked};

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Gives the entries under `root` (and `root`) changed in the last minute the modification
/// time `seconds` ago, as if the change were old enough for its stamps to be trusted. Each
/// round passes its own `seconds`, so a changed entry's stamp differs from the last
/// round's, while the entries a change did not touch keep theirs.
fn age(root: &Path, seconds: u64) {
    let now = SystemTime::now();
    let when = now - Duration::from_secs(seconds);
    fn visit(path: &Path, now: SystemTime, when: SystemTime) {
        let meta = std::fs::symlink_metadata(path).unwrap();
        if meta.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                visit(&entry.unwrap().path(), now, when);
            }
        }
        let recent = now
            .duration_since(meta.modified().unwrap())
            .is_ok_and(|d| d < Duration::from_secs(60))
            || meta.modified().unwrap() > now;
        if !meta.is_symlink() && recent {
            std::fs::File::open(path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
    }
    visit(root, now, when);
}

fn paths(walked: &Walked) -> (Vec<&str>, Vec<&str>) {
    (
        walked.sources.iter().map(|f| f.path.as_str()).collect(),
        walked
            .module_configs
            .iter()
            .map(|f| f.path.as_str())
            .collect(),
    )
}

#[test]
fn reused_listings_find_what_a_full_walk_finds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for path in [
        "src/a.ts",
        "src/lib/b.ts",
        "src/lib/deep/c.js",
        "src/generated/g.ts",
        "test/t.ts",
        "package.json",
        "node_modules/dep/index.js",
    ] {
        write(root, path, "export const x = 1;\n");
    }
    write(root, ".gitignore", "generated/\n");
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    write(root, ".git/info/exclude", "");
    let selection = FileSelection::default();
    let mut listings = Listings::default();

    // Each change, then the walk both ways; `seconds` makes each round's stamps its own.
    type Change<'a> = (&'a str, &'a dyn Fn(&Path));
    let changes: &[Change<'_>] = &[
        ("nothing", &|_| {}),
        ("a file added", &|r| {
            write(r, "src/lib/deep/d.ts", "let d;\n")
        }),
        ("a file removed", &|r| {
            std::fs::remove_file(r.join("src/lib/b.ts")).unwrap()
        }),
        ("a file grown", &|r| {
            write(r, "src/a.ts", "export const a = 12345;\n")
        }),
        ("a directory added", &|r| {
            write(r, "src/new/e.ts", "");
            write(r, "src/new/inner/f.tsx", "");
        }),
        ("a directory renamed", &|r| {
            std::fs::rename(r.join("src/new"), r.join("src/renamed")).unwrap()
        }),
        ("a directory removed", &|r| {
            std::fs::remove_dir_all(r.join("src/renamed")).unwrap()
        }),
        ("a .gitignore edited in place", &|r| {
            write(r, ".gitignore", "generated/\ndeep/\n")
        }),
        ("a .gitignore edited back", &|r| {
            write(r, ".gitignore", "generated/\n")
        }),
        ("a .gitignore created below", &|r| {
            write(r, "src/lib/.gitignore", "*.js\n")
        }),
        ("a .gitignore removed below", &|r| {
            std::fs::remove_file(r.join("src/lib/.gitignore")).unwrap()
        }),
        ("git's excludes edited", &|r| {
            write(r, ".git/info/exclude", "test/\n")
        }),
        ("a module configuration added", &|r| {
            write(r, "src/lib/tsconfig.json", "{}")
        }),
        ("a hidden and a skipped directory added", &|r| {
            write(r, "src/.cache/h.ts", "");
            write(r, "src/dist/bundle.js", "");
        }),
        ("a directory replaced by another of the same name", &|r| {
            write(r, "other/lib/z.ts", "");
            std::fs::remove_dir_all(r.join("src/lib")).unwrap();
            std::fs::rename(r.join("other/lib"), r.join("src/lib")).unwrap();
        }),
    ];
    for (round, (change, apply)) in changes.iter().enumerate() {
        apply(root);
        age(root, 3_600 - round as u64);
        let reused = selection.walk_reusing(root, &mut listings);
        let full = selection.walk_with_module_configs(root);
        assert_eq!(paths(&reused), paths(&full), "after {change}");
        assert_eq!(reused, full, "after {change}: stamps");
        assert!(
            !listings.is_empty(),
            "after {change}: the listings are kept"
        );
        // The listings survive being written and read back.
        listings = Listings::from_bytes(&listings.to_bytes());
    }

    // Without aging, the stamps are too young to trust: still the full walk's answer.
    write(root, "src/young.ts", "");
    let reused = selection.walk_reusing(root, &mut listings);
    assert_eq!(reused, selection.walk_with_module_configs(root));
}

#[test]
fn an_unchanged_directory_is_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/a.ts", "");
    write(root, "src/b.ts", "");
    age(root, 3_600);
    let selection = FileSelection::default();
    let mut listings = Listings::default();
    let first = selection.walk_reusing(root, &mut listings);
    assert_eq!(paths(&first).0, ["src/a.ts", "src/b.ts"]);
    assert!(listings.read_again());
    assert_eq!(selection.walk_reusing(root, &mut listings), first);
    assert!(!listings.read_again(), "nothing changed, nothing read");

    // A file added behind the listing's back: `src` gets its old stamp again, so the
    // reused listing does not show the file, which proves `src` was not read again.
    let src_stamp = std::fs::metadata(root.join("src"))
        .unwrap()
        .modified()
        .unwrap();
    write(root, "src/c.ts", "");
    std::fs::File::open(root.join("src"))
        .unwrap()
        .set_modified(src_stamp)
        .unwrap();
    let reused = selection.walk_reusing(root, &mut listings);
    assert_eq!(paths(&reused).0, ["src/a.ts", "src/b.ts"]);

    // Listings of another selection, or damaged ones, are not used.
    let other = FileSelection {
        skip_dirs: vec!["vendor".into()],
        ..FileSelection::default()
    };
    let mut copy = listings.clone();
    assert_eq!(paths(&other.walk_reusing(root, &mut copy)).0.len(), 3);
    let mut damaged = Listings::from_bytes(b"not listings");
    assert!(damaged.is_empty());
    assert_eq!(
        paths(&selection.walk_reusing(root, &mut damaged)).0.len(),
        3
    );
}
