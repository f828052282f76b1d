//! The protobuf compiler LanceDB's build scripts run, without building it.
//!
//! LanceDB's crates (`lance`, `lance-encoding`, `lance-file`, `lance-index`, `lance-table`,
//! `lance-datafusion`) compile `.proto` files in their build scripts. With their `protoc`
//! feature they set `PROTOC` to `protobuf_src::protoc()`. The workspace patches
//! `protobuf-src` with this crate, so that path is the compiler `protoc-bin-vendored` ships
//! for the host (Linux x86, x86_64, aarch64, ppc64le, s390x; macOS x86_64 and aarch64;
//! Windows), and a source build needs neither a system `protoc` nor CMake.
//!
//! On a host it has no compiler for, `PROTOC` names one, as prost-build reads it.

use std::path::PathBuf;

/// The protobuf compiler for this host.
///
/// # Panics
///
/// Only in a build script, on a host `protoc-bin-vendored` has no compiler for and with no
/// `PROTOC` set: the build cannot go on, and the message says what to do.
#[must_use]
pub fn protoc() -> PathBuf {
    protoc_bin_vendored::protoc_bin_path()
        .ok()
        .or_else(|| std::env::var_os("PROTOC").map(PathBuf::from))
        .unwrap_or_else(|| {
            panic!("no prebuilt protoc for this host: install protoc and set PROTOC to its path")
        })
}

/// The protobuf well-known types (`google/protobuf/*.proto`) that come with [`protoc`].
///
/// # Panics
///
/// As [`protoc`].
#[must_use]
pub fn include() -> PathBuf {
    protoc_bin_vendored::include_path()
        .ok()
        .or_else(|| std::env::var_os("PROTOC_INCLUDE").map(PathBuf::from))
        .unwrap_or_else(|| {
            panic!("no prebuilt protoc for this host: install protoc and set PROTOC_INCLUDE")
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_compiler_runs_and_its_well_known_types_are_there() {
        let out = std::process::Command::new(super::protoc())
            .arg("--version")
            .output()
            .expect("protoc runs");
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("libprotoc "));
        assert!(
            super::include()
                .join("google/protobuf/timestamp.proto")
                .is_file()
        );
    }
}
