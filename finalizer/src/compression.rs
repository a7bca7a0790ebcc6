//! Compressed artifacts: gzip and zstd. Output is compressed by the file name's extension
//! (`.gz`, `.zst`); input is recognised by its magic bytes, so a misnamed file still reads.
//! A compressed input cut off or corrupt part-way reads as far as it decompresses, then ends
//! like a log whose last line is torn.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;

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

/// `input`, decompressed when its first bytes say it is gzip or zstd.
pub fn decompressed<'a>(mut input: impl BufRead + 'a) -> io::Result<Box<dyn BufRead + 'a>> {
    let compression = Compression::sniff(input.fill_buf()?);
    Ok(match compression {
        Compression::None => Box::new(input),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            1 << 16,
            EndsAtDamage(flate2::bufread::MultiGzDecoder::new(input)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            1 << 16,
            EndsAtDamage(zstd::Decoder::with_buffer(input)?),
        )),
    })
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
