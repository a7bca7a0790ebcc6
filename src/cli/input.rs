//! How far a compressed input may decompress: the flags every reader of logs and profiles
//! takes.

use super::values::parse_size;
use clap::Args;
use tc_profile_finalizer::InputCaps;

/// How far a compressed input (gzip, zstd) may decompress: a bomb stops with an error.
#[derive(Args, Debug)]
pub struct InputCapArgs {
    /// Stop reading a compressed input past this many bytes decompressed (K, M, G: binary
    /// units).
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    pub max_input_size: u64,
    /// Stop reading a compressed input that decompresses to over this many times the bytes
    /// it was read from (checked past its first 32 MiB).
    #[arg(long, value_name = "RATIO", default_value = "500",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_input_ratio: u64,
}

impl InputCapArgs {
    pub fn caps(&self) -> InputCaps {
        InputCaps {
            max_size: self.max_input_size,
            max_ratio: self.max_input_ratio,
        }
    }
}
