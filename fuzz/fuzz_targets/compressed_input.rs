//! Arbitrary bytes read as a compressed input is (gzip and zstd recognised by their first
//! bytes, SPEC.md "Reading a damaged log"), under caps the input picks: reading never
//! panics, fails only at a cap, never passes on more than the size cap of a compressed
//! input, and the log reader on what it passes on never panics either.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::io::Read;
use tc_profile_finalizer::{decompressed_within, read_log, InputCaps, OverCap};

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    /// Small, so that a bomb stops in moments.
    max_size: u16,
    max_ratio: u8,
    bytes: &'a [u8],
}

fuzz_target!(|input: Input| {
    let caps = InputCaps {
        max_size: u64::from(input.max_size),
        max_ratio: u64::from(input.max_ratio).max(1),
    };
    let compressed = [&[0x1f, 0x8b][..], &[0x28, 0xb5, 0x2f, 0xfd]]
        .iter()
        .any(|magic| input.bytes.starts_with(magic));
    let mut text = Vec::new();
    let read = decompressed_within(input.bytes, caps).and_then(|mut r| r.read_to_end(&mut text));
    if let Err(error) = read {
        assert!(OverCap::of(&error).is_some(), "not a cap: {error}");
    }
    assert!(
        !compressed || text.len() as u64 <= caps.max_size,
        "{} bytes passed on past a cap of {}",
        text.len(),
        caps.max_size
    );
    if let Ok(input) = decompressed_within(input.bytes, caps) {
        let _ = read_log(input);
    }
});
