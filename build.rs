//! Link settings that keep the recorder's resident set small, for release builds for
//! x86_64-unknown-linux-gnu (linked by rust-lld, rustc's default there since 1.90):
//!
//! - the functions a recording runs are laid out together at the start of the code
//!   (link/symbol-order.txt, written by scripts/symbol-order): the kernel maps code 64 KiB
//!   around each page touched, so ~1,400 functions spread over 5.8 MB of code kept nearly
//!   all of it resident. Names not in the binary are skipped: a stale list costs only RSS.
//! - the executable is not position-independent: a PIE's ~9,000 dynamic relocations
//!   (220 KB) are read, and the pages they patch written, at every start. Like Go's
//!   binaries, the executable's own code then loads at a fixed address (libraries and
//!   stacks are still randomized).

use std::env;
use std::path::Path;

fn main() {
    let order = Path::new("link/symbol-order.txt");
    println!("cargo::rerun-if-changed={}", order.display());
    let target = env::var("TARGET").unwrap_or_default();
    let profile = env::var("PROFILE").unwrap_or_default();
    if target != "x86_64-unknown-linux-gnu" || profile != "release" {
        return;
    }
    println!("cargo::rustc-link-arg-bin=tc-profile=-no-pie");
    if let Ok(order) = order.canonicalize() {
        println!(
            "cargo::rustc-link-arg-bin=tc-profile=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            order.display()
        );
    }
}
