//! Decompression within caps: a decoder's output bounded by its size and by its ratio to the
//! compressed bytes the decoder has taken, so that a small hostile input ends in an error,
//! not in hours of work or the machine's memory. The finalizer's inputs (gzip and zstd
//! files) and the InfluxDB endpoint's gzip bodies read through it, each with caps of its own.

use std::cell::Cell;
use std::io::{self, BufRead, Read};
use std::rc::Rc;

/// How far an input may decompress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Decompressed bytes.
    pub max_size: u64,
    /// Decompressed bytes per compressed byte taken, once past `ratio_from`.
    pub max_ratio: u64,
    /// Decompressed bytes before the ratio is checked: a real input may start with a
    /// stretch that compresses as well as a bomb's zeros.
    pub ratio_from: u64,
}

/// The cap a decompression stopped at, carried inside the `io::Error` of the read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CapReached {
    #[error("decompresses past {max} bytes")]
    Size { max: u64 },
    #[error("decompresses to over {max} times its size")]
    Ratio { max: u64 },
}

impl CapReached {
    /// The cap an I/O error of a capped read stopped at, if that is what it is.
    pub fn of(error: &io::Error) -> Option<CapReached> {
        error.get_ref()?.downcast_ref::<CapReached>().copied()
    }
}

/// `input` counted, for a decoder to read: its count goes to the [`Capped`] that caps that
/// decoder, so that the ratio is to the bytes the decoder took, not to those read ahead.
pub fn counted<R>(input: R) -> (Counted<R>, Consumed) {
    let consumed = Rc::new(Cell::new(0));
    let counted = Counted {
        inner: input,
        consumed: Rc::clone(&consumed),
    };
    (counted, Consumed(consumed))
}

/// The count of a [`Counted`] input's bytes taken.
pub struct Consumed(Rc<Cell<u64>>);

/// Compressed input, counting the bytes its decoder takes.
pub struct Counted<R> {
    inner: R,
    consumed: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.set(self.consumed.get() + n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.consumed.set(self.consumed.get() + amount as u64);
        self.inner.consume(amount);
    }
}

/// A decoder that fails with a [`CapReached`] once its output passes the caps.
pub struct Capped<D> {
    inner: D,
    /// The compressed bytes taken so far.
    consumed: Consumed,
    produced: u64,
    caps: Caps,
}

impl<D: Read> Capped<D> {
    /// `decoder`, reading an input [`counted`] into `consumed`, capped by `caps`.
    pub fn new(decoder: D, consumed: Consumed, caps: Caps) -> Capped<D> {
        Capped {
            inner: decoder,
            consumed,
            produced: 0,
            caps,
        }
    }
}

impl<D: Read> Read for Capped<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.produced += n as u64;
        let reached = if self.produced > self.caps.max_size {
            CapReached::Size {
                max: self.caps.max_size,
            }
        } else if self.produced > self.caps.ratio_from
            && self.produced / self.consumed.0.get().max(1) > self.caps.max_ratio
        {
            CapReached::Ratio {
                max: self.caps.max_ratio,
            }
        } else {
            return Ok(n);
        };
        Err(io::Error::other(reached))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads through a stand-in decoder that makes 100 bytes of each byte it takes.
    fn read_all(input: &[u8], caps: Caps) -> io::Result<usize> {
        struct Hundredfold<R>(R);
        impl<R: Read> Read for Hundredfold<R> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let mut one = [0];
                let n = self.0.read(&mut one)?;
                let made = (100 * n).min(buf.len());
                buf[..made].fill(b'x');
                Ok(made)
            }
        }
        let (counted, consumed) = counted(input);
        let mut reader = Capped::new(Hundredfold(counted), consumed, caps);
        io::copy(&mut reader, &mut io::sink()).map(|n| n as usize)
    }

    #[test]
    fn the_size_and_the_ratio_past_its_start_are_capped() {
        let input = [0; 1000];
        let loose = Caps {
            max_size: 1 << 20,
            max_ratio: 100,
            ratio_from: 0,
        };
        assert_eq!(read_all(&input, loose).unwrap(), 100_000);
        let small = Caps {
            max_size: 5000,
            ..loose
        };
        let error = read_all(&input, small).unwrap_err();
        assert_eq!(CapReached::of(&error), Some(CapReached::Size { max: 5000 }));
        let strict = Caps {
            max_ratio: 99,
            ratio_from: 1000,
            ..loose
        };
        let error = read_all(&input, strict).unwrap_err();
        assert_eq!(CapReached::of(&error), Some(CapReached::Ratio { max: 99 }));
        assert!(CapReached::of(&io::Error::other("else")).is_none());
    }
}
