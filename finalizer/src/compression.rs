//! Compressed artifacts: gzip and zstd. Output is compressed by the file name's extension
//! (`.gz`, `.zst`); input is recognised by its magic bytes, so a misnamed file still reads.
//! A compressed input cut off or corrupt part-way reads as far as it decompresses, then ends
//! like a log whose last line is torn. Decompression stops with an error past the caps of
//! [`InputCaps`], so that a small hostile file cannot make a reader work for hours or, read
//! whole, take the machine's memory.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use tc_profile_format::capped::{counted, CapReached, Capped, Caps};

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
/// zstd's default level: about gzip's ratio at several times its speed.
const ZSTD_LEVEL: i32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// By the output's extension: `.gz` or `.zst`, anything else is plain.
    pub fn for_output(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz") => Compression::Gzip,
            Some("zst") => Compression::Zstd,
            _ => Compression::None,
        }
    }

    fn sniff(start: &[u8]) -> Compression {
        if start.starts_with(GZIP_MAGIC) {
            Compression::Gzip
        } else if start.starts_with(ZSTD_MAGIC) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// Writes what `fill` writes into `out`, compressed, and ends the compressed stream.
    pub fn encode(
        self,
        out: &mut dyn Write,
        fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        match self {
            Compression::None => fill(out),
            Compression::Gzip => {
                let mut encoder =
                    flate2::write::GzEncoder::new(out, flate2::Compression::default());
                fill(&mut encoder)?;
                encoder.finish()?.flush()
            }
            Compression::Zstd => {
                let mut encoder = zstd::Encoder::new(out, ZSTD_LEVEL)?;
                fill(&mut encoder)?;
                encoder.finish()?.flush()
            }
        }
    }
}

/// How far a compressed input may decompress (SPEC.md, "Reading a damaged log").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputCaps {
    /// Decompressed bytes (`--max-input-size`).
    pub max_size: u64,
    /// Decompressed bytes per compressed byte read, once past [`RATIO_FROM`]
    /// (`--max-input-ratio`).
    pub max_ratio: u64,
}

impl Default for InputCaps {
    /// 4 GiB, four times a day-long log; 500 times, where the most compressible real
    /// files measured reach 150 (`zstd -19` of a processed profile of log lines) and
    /// gzip's zeros 1,030.
    fn default() -> InputCaps {
        InputCaps {
            max_size: 4 << 30,
            max_ratio: 500,
        }
    }
}

/// Decompressed bytes before the ratio is checked: a real file may start with a stretch
/// that compresses as well as a bomb's zeros (a processed profile's `data` column of
/// 200,000 markers alike, 5 MB), and its rest bring the ratio down. Small enough that a
/// bomb read whole (a profile) stops under 64 MB of memory.
const RATIO_FROM: u64 = 32 << 20;

/// Decompression stopped at a cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverCap {
    #[error(
        "decompresses past {max} bytes, the cap: raise it with --max-input-size if the file \
         is genuine"
    )]
    Size { max: u64 },
    #[error(
        "decompresses to over {max} times its size, the cap (a decompression bomb?): raise \
         it with --max-input-ratio if the file is genuine"
    )]
    Ratio { max: u64 },
}

impl OverCap {
    /// The cap an I/O error of a decompressed input stopped at, if that is what it is.
    pub fn of(error: &io::Error) -> Option<OverCap> {
        Some(match CapReached::of(error)? {
            CapReached::Size { max } => OverCap::Size { max },
            CapReached::Ratio { max } => OverCap::Ratio { max },
        })
    }
}

/// `input`, decompressed within the default caps when its first bytes say it is gzip or
/// zstd.
pub fn decompressed<'a>(input: impl BufRead + 'a) -> io::Result<Box<dyn BufRead + 'a>> {
    decompressed_within(input, InputCaps::default())
}

/// `input`, decompressed within `caps` when its first bytes say it is gzip or zstd; a read
/// past them fails with an error that [`OverCap::of`] names.
pub fn decompressed_within<'a>(
    mut input: impl BufRead + 'a,
    caps: InputCaps,
) -> io::Result<Box<dyn BufRead + 'a>> {
    let caps = Caps {
        max_size: caps.max_size,
        max_ratio: caps.max_ratio,
        ratio_from: RATIO_FROM,
    };
    let decoded: Box<dyn Read + 'a> = match Compression::sniff(input.fill_buf()?) {
        Compression::None => return Ok(Box::new(input)),
        Compression::Gzip => {
            let (input, consumed) = counted(input);
            let decoder = EndsAtDamage(flate2::bufread::MultiGzDecoder::new(input));
            Box::new(Capped::new(decoder, consumed, caps))
        }
        Compression::Zstd => {
            let (input, consumed) = counted(input);
            let decoder = EndsAtDamage(zstd::Decoder::with_buffer(input)?);
            Box::new(Capped::new(decoder, consumed, caps))
        }
    };
    Ok(Box::new(BufReader::with_capacity(1 << 16, decoded)))
}

/// A decoder whose stream, cut off or corrupt, ends where it stops decompressing: what
/// came before is kept, and a partial last line is then dropped as a torn tail.
struct EndsAtDamage<R>(R);

impl<R: Read> Read for EndsAtDamage<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf) {
            Err(e) if is_damage(&e) => Ok(0),
            result => result,
        }
    }
}

/// Errors of the compressed data itself, as opposed to errors reading the file.
fn is_damage(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput
    ) || (error.kind() == io::ErrorKind::Other && error.raw_os_error().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compress(compression: Compression, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        compression
            .encode(&mut out, |w| w.write_all(bytes))
            .unwrap();
        out
    }

    fn read_all(bytes: &[u8]) -> Vec<u8> {
        let mut text = Vec::new();
        decompressed(bytes).unwrap().read_to_end(&mut text).unwrap();
        text
    }

    const TEXT: &[u8] = b"{\"type\":\"meta\"}\nline two\nline three\n";

    #[test]
    fn every_format_round_trips() {
        for compression in [Compression::None, Compression::Gzip, Compression::Zstd] {
            assert_eq!(
                read_all(&compress(compression, TEXT)),
                TEXT,
                "{compression:?}"
            );
        }
    }

    #[test]
    fn output_format_follows_the_extension() {
        let of = |name: &str| Compression::for_output(Path::new(name));
        assert_eq!(of("p.json.gz"), Compression::Gzip);
        assert_eq!(of("p.json.zst"), Compression::Zstd);
        assert_eq!(of("p.json"), Compression::None);
        assert_eq!(of("gz"), Compression::None);
    }

    #[test]
    fn a_cut_off_compressed_stream_keeps_what_decompresses() {
        // Several of zstd's blocks (128 KiB of input each): it decodes whole blocks only.
        let mut seed = 1u64;
        let long: Vec<u8> = (0..20_000)
            .flat_map(|i| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                format!("line {i}: {seed}\n").into_bytes()
            })
            .collect();
        for compression in [Compression::Gzip, Compression::Zstd] {
            let compressed = compress(compression, &long);
            let cut = &compressed[..compressed.len() * 2 / 3];
            let text = read_all(cut);
            assert!(
                text.len() > long.len() / 3,
                "{compression:?}: {} bytes",
                text.len()
            );
            assert!(long.starts_with(&text), "{compression:?}: a prefix");
        }
    }

    /// A compressed stream of `frames` frames, each of `frame_bytes` zeros.
    fn zeros(compression: Compression, frames: usize, frame_bytes: usize) -> Vec<u8> {
        let frame = compress(compression, &vec![0; frame_bytes]);
        frame.repeat(frames)
    }

    fn read_within(bytes: &[u8], caps: InputCaps) -> io::Result<u64> {
        io::copy(&mut decompressed_within(bytes, caps)?, &mut io::sink())
    }

    #[test]
    fn a_bomb_stops_at_the_ratio_cap_past_its_first_stretch() {
        for compression in [Compression::Gzip, Compression::Zstd] {
            let bomb = zeros(compression, 64, 1 << 20);
            let error = read_within(&bomb, InputCaps::default()).unwrap_err();
            assert_eq!(
                OverCap::of(&error),
                Some(OverCap::Ratio { max: 500 }),
                "{compression:?}"
            );
            let raised = InputCaps {
                max_ratio: u64::MAX,
                ..InputCaps::default()
            };
            assert_eq!(read_within(&bomb, raised).unwrap(), 64 << 20);
        }
    }

    #[test]
    fn a_stream_stops_past_the_size_cap() {
        for compression in [Compression::Gzip, Compression::Zstd] {
            let stream = zeros(compression, 4, 1 << 20);
            let caps = InputCaps {
                max_size: 3 << 20,
                ..InputCaps::default()
            };
            let error = read_within(&stream, caps).unwrap_err();
            let cap = OverCap::of(&error);
            assert_eq!(cap, Some(OverCap::Size { max: 3 << 20 }));
            let said = cap.map(|cap| cap.to_string()).unwrap_or_default();
            assert!(said.contains("--max-input-size"), "{said}");
        }
    }

    #[test]
    fn a_plain_input_is_not_capped() {
        let plain = vec![b'x'; 4 << 20];
        let caps = InputCaps {
            max_size: 1,
            max_ratio: 1,
        };
        assert_eq!(read_within(&plain, caps).unwrap(), 4 << 20);
    }

    #[test]
    fn corrupt_compressed_bytes_end_the_stream_without_an_error() {
        for compression in [Compression::Gzip, Compression::Zstd] {
            let mut compressed = compress(compression, TEXT);
            let middle = compressed.len() / 2;
            compressed[middle..].iter_mut().for_each(|b| *b ^= 0x5a);
            // What garbage decompresses to is the log reader's to drop, line by line.
            read_all(&compressed);
        }
    }
}
