//! Lines cut out of a stream of bytes read in chunks: only a line's first
//! [`MAX_LINE_BYTES`] are kept, so a line of any length costs at most that much memory.

use super::line::{Captured, MAX_LINE_BYTES};

/// The line being read: its head, its length so far, and when its first byte came.
#[derive(Default)]
pub struct LineSplitter {
    head: Vec<u8>,
    length: usize,
    arrival: Option<f64>,
}

impl LineSplitter {
    /// Takes a chunk read at `now`, handing each line it ends to `emit` with the time its
    /// first byte was read. Returns where the chunk's last whole line ends (after its
    /// newline), if it ends one.
    pub fn take(
        &mut self,
        chunk: &[u8],
        now: f64,
        emit: &mut impl FnMut(Captured, f64),
    ) -> Option<usize> {
        let mut position = 0;
        let mut last_end = None;
        while position < chunk.len() {
            self.arrival.get_or_insert(now);
            let rest = &chunk[position..];
            match rest.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.extend(&rest[..end]);
                    self.finish(emit);
                    position += end + 1;
                    last_end = Some(position);
                }
                None => {
                    self.extend(rest);
                    break;
                }
            }
        }
        last_end
    }

    fn extend(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.length += bytes.len();
    }

    /// Hands on the line begun, if any: at its newline, or at the end of the stream.
    pub fn finish(&mut self, emit: &mut impl FnMut(Captured, f64)) {
        if let Some(arrival) = self.arrival.take() {
            emit(Captured::new(&self.head, self.length), arrival);
            self.discard();
        }
    }

    /// Forgets the line begun (it will be read again from its start).
    pub fn discard(&mut self) {
        self.head.clear();
        self.length = 0;
        self.arrival = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(chunks: &[&[u8]]) -> Vec<(String, usize, f64)> {
        let mut splitter = LineSplitter::default();
        let mut out = Vec::new();
        let mut emit = |line: Captured, arrival: f64| out.push((line.text, line.length, arrival));
        for (time, chunk) in chunks.iter().enumerate() {
            splitter.take(chunk, time as f64, &mut emit);
        }
        splitter.finish(&mut emit);
        out
    }

    #[test]
    fn lines_are_cut_at_newlines_across_chunks_and_a_last_partial_line_is_kept() {
        let got = lines(&[b"one\ntw", b"o\n\nthr", b"ee"]);
        let want = [
            ("one", 3, 0.0),
            ("two", 3, 0.0),
            ("", 0, 1.0),
            ("three", 5, 1.0),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(t, l, a)| ((*t).to_owned(), *l, *a))
            .collect();
        assert_eq!(got, want);
        assert!(
            lines(&[b"end\n"]).len() == 1,
            "no empty line after the last newline"
        );
    }

    #[test]
    fn a_long_line_keeps_only_its_head_and_its_length() {
        let long = vec![b'x'; 3 << 20];
        let chunks: Vec<&[u8]> = long.chunks(64 << 10).chain([&b"\nok\n"[..]]).collect();
        let got = lines(&chunks);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0.len(), got[0].1), (MAX_LINE_BYTES, 3 << 20));
        assert_eq!(got[1].0, "ok");
    }

    #[test]
    fn take_says_where_the_last_whole_line_ends() {
        let mut splitter = LineSplitter::default();
        let mut emit = |_: Captured, _: f64| {};
        assert_eq!(splitter.take(b"ab\ncd\nef", 0.0, &mut emit), Some(6));
        assert_eq!(splitter.take(b"gh", 0.0, &mut emit), None);
    }
}
