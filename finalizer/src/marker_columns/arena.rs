//! The payloads' text of a set of columns: one string, or several once whole arenas of
//! other columns were taken over ([`Arena::append`]: a span's machine segments, whose
//! text is then never copied). A payload lies within one piece.

use std::ops::Range;

#[derive(Clone, Debug, Default)]
pub(super) struct Arena {
    /// The pieces in order; text pushed goes to the last one.
    pieces: Vec<String>,
    /// Where each piece starts in the whole text.
    starts: Vec<usize>,
    len: usize,
}

impl Arena {
    /// The length of the whole text.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn push_str(&mut self, text: &str) {
        match self.pieces.last_mut() {
            Some(last) => last.push_str(text),
            None => {
                self.pieces.push(text.to_owned());
                self.starts.push(0);
            }
        }
        self.len += text.len();
    }

    /// The text of `range`, which lies within one piece.
    pub(super) fn get(&self, range: Range<usize>) -> &str {
        let piece = match self.pieces.len() {
            // The one piece of every log's columns: no search.
            1 => 0,
            _ => {
                self.starts
                    .partition_point(|&start| start <= range.start)
                    .max(1)
                    - 1
            }
        };
        let start = self.starts.get(piece).copied().unwrap_or_default();
        match self.pieces.get(piece) {
            Some(text) => &text[range.start - start..range.end - start],
            None => &""[range],
        }
    }

    /// Moves `other`'s pieces in after these; where its text starts in the whole text.
    pub(super) fn append(&mut self, other: Arena) -> usize {
        let base = self.len;
        for (piece, start) in other.pieces.into_iter().zip(other.starts) {
            self.pieces.push(piece);
            self.starts.push(base + start);
        }
        self.len += other.len;
        base
    }

    /// Whether a piece holds `text`; a payload lies within one, so none is missed.
    pub(super) fn holds(&self, text: &str) -> bool {
        let finder = memchr::memmem::Finder::new(text);
        self.pieces
            .iter()
            .any(|piece| finder.find(piece.as_bytes()).is_some())
    }

    /// The whole text, for tests.
    #[cfg(test)]
    pub(super) fn text(&self) -> String {
        self.pieces.concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_found_in_whichever_piece_holds_it() {
        let mut arena = Arena::default();
        arena.push_str("{}[1]");
        let mut other = Arena::default();
        other.push_str("[2]");
        assert_eq!(arena.append(other), 5);
        arena.push_str("[33]");
        assert_eq!(arena.len(), 12);
        assert_eq!(arena.text(), "{}[1][2][33]");
        let pieces = [0..2, 2..5, 5..8, 8..12].map(|range| arena.get(range));
        assert_eq!(pieces, ["{}", "[1]", "[2]", "[33]"]);
        assert!(arena.holds("[33]") && arena.holds("{}"));
        assert!(!arena.holds("x"));
        assert_eq!(Arena::default().get(0..0), "");
    }
}
