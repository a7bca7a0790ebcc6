//! Link settings of release builds. On Linux, the binary of `cargo build --release` and
//! `cargo install` leaves its debug information out, to be small on a worker; the static
//! build keeps it, and scripts/release moves it to a file of its own, for crash reports.
//! For x86_64-unknown-linux-gnu, settings that keep the recorder's resident set small:
//!
//! - the functions a recording runs are laid out together at the start of the code
//!   (link/symbol-order.txt, written by scripts/symbol-order): the kernel maps code 64 KiB
//!   around each page touched, so ~1,100 functions spread over 5.8 MB of code kept nearly
//!   all of it resident. Names not in the binary are skipped: a stale list costs only RSS.
//!   Only with rust-lld, rustup's default linker there since Rust 1.90 (other linkers do
//!   not take the list); any linker setting in RUSTFLAGS leaves it out.
//! - the executable is not position-independent: a PIE's ~9,000 dynamic relocations
//!   (220 KB) are read, and the pages they patch written, at every start. Like Go's
//!   binaries, the executable's own code then loads at a fixed address (libraries, heap and
//!   stacks are still randomized); a packager whose policy requires PIE builds with
//!   `TC_PROFILE_PIE=1`.
//! - the static build (scripts/release, crt-static) takes its own list, which also places
//!   libc's functions, and its relocation model from scripts/release: `-no-pie` would break
//!   a static PIE.

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    let is_static = env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|feature| feature == "crt-static"));
    let order = Path::new(if is_static {
        "link/symbol-order-static.txt"
    } else {
        "link/symbol-order.txt"
    });
    println!("cargo::rerun-if-changed={}", order.display());
    println!("cargo::rerun-if-env-changed=TC_PROFILE_PIE");
    let target = env::var("TARGET").unwrap_or_default();
    if env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    // The binary's (and its few unit tests', which cargo links alike): the e2e tests and the
    // crates' own keep their line tables, for their backtraces.
    let is_linux = env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    if is_linux && !is_static {
        println!("cargo::rustc-link-arg-bin=tc-profile=-Wl,--strip-debug");
    }
    if target != "x86_64-unknown-linux-gnu" {
        return;
    }
    if !is_static && env::var_os("TC_PROFILE_PIE").is_none() {
        println!("cargo::rustc-link-arg-bin=tc-profile=-no-pie");
    }
    // Relative, not absolute: a target directory shared by two checkouts (a global
    // CARGO_TARGET_DIR) shares this script's output too, so an absolute path would send one
    // checkout's link to the other's list, and fail once that checkout is gone. rustc runs
    // in the workspace root, this package's directory, and the linker with it.
    if order.exists() && links_with_rust_lld(&target) {
        println!(
            "cargo::rustc-link-arg-bin=tc-profile=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            order.display()
        );
    }
}

/// Whether rustc links with its own lld: its sysroot has it, and no flag chooses a linker.
fn links_with_rust_lld(target: &str) -> bool {
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|flag| flags.contains(flag))
    {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let Ok(output) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = String::from_utf8_lossy(&output.stdout);
    Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(target)
        .join("bin/gcc-ld/ld.lld")
        .exists()
}
