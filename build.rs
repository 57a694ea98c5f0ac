//! Finds the system's ISA-L (Debian's `libisal-dev`: headers and `libisal.so`, no assembler
//! needed) for the WARC writer's level-1 deflate, which takes about 60 % of zlib-rs's CPU
//! and writes smaller files. Found, a small C shim (`csrc/isal_shim.c`) is compiled against
//! its headers and `cfg(isal_engine)` set; not found, the writer uses zlib-rs. The opt-in
//! `isal` feature builds ISA-L from source instead (nasm and the autotools).
//! `SPINNERET_NO_SYSTEM_ISAL=1` skips the search (a binary for machines without libisal2).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(isal_engine)");
    println!("cargo::rerun-if-env-changed=SPINNERET_NO_SYSTEM_ISAL");
    println!("cargo::rerun-if-changed=csrc/isal_shim.c");
    if std::env::var_os("CARGO_FEATURE_ISAL").is_some() {
        println!("cargo::rustc-cfg=isal_engine");
        return;
    }
    if std::env::var_os("SPINNERET_NO_SYSTEM_ISAL").is_some_and(|v| v != "0") {
        return;
    }
    let Some(include) = system_isal() else {
        println!(
            "cargo::warning=ISA-L not found (apt-get install libisal-dev, then \
             cargo clean -p spinneret and build again): WARC deflate uses zlib-rs, about 1.7x \
             the CPU"
        );
        return;
    };
    let mut build = cc::Build::new();
    build.file("csrc/isal_shim.c").opt_level(2).warnings(true);
    if let Some(dir) = include {
        build.include(dir);
    }
    if build.try_compile("spinneret_isal_shim").is_err() {
        println!("cargo::warning=ISA-L headers found but the shim did not build: using zlib-rs");
        return;
    }
    println!("cargo::rustc-link-lib=isal");
    println!("cargo::rustc-cfg=isal_engine");
}

/// `Some(extra include dir)` when ISA-L's headers and library are there: from pkg-config,
/// else the usual system paths.
fn system_isal() -> Option<Option<String>> {
    if let Ok(out) = Command::new("pkg-config")
        .args(["--cflags-only-I", "--libs-only-L", "libisal"])
        .output()
    {
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            let mut include = None;
            for flag in text.split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    println!("cargo::rustc-link-search=native={dir}");
                } else if let Some(dir) = flag.strip_prefix("-I") {
                    include = Some(dir.to_string());
                }
            }
            return Some(include);
        }
    }
    let header = ["/usr/include", "/usr/local/include"]
        .iter()
        .any(|d| Path::new(d).join("isa-l/igzip_lib.h").is_file());
    let lib = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .any(|d| Path::new(d).join("libisal.so").exists());
    (header && lib).then_some(None)
}
