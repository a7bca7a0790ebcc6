//! Text from a task, made safe to print: a name or a line a task chose must not move the
//! cursor, recolour or clear the terminal, start a line of its own, or reverse what follows,
//! or it could forge tc-profile's own messages on stderr or hide them.

use std::borrow::Cow;

/// `text` with its control characters (ESC, newline, ...) and bidirectional overrides
/// escaped as Rust writes them (`\u{1b}`, `\n`, `\u{202e}`); the rest as it is. Text read
/// lossily (a file name that is not UTF-8) shows U+FFFD for each invalid byte already.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            escaped.extend(c.escape_debug());
        } else {
            escaped.push(c);
        }
    }
    Cow::Owned(escaped)
}

fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_direction_overrides_are_escaped() {
        assert_eq!(
            escape_controls("a\x1b[31m\r\nb\t\u{7f}\u{202e}c"),
            r"a\u{1b}[31m\r\nb\t\u{7f}\u{202e}c"
        );
    }

    #[test]
    fn other_text_is_kept_as_it_is() {
        for text in [r"C:\dir\file.jsonl", "naïve 日本 \u{fffd}", ""] {
            assert!(matches!(escape_controls(text), Cow::Borrowed(t) if t == text));
        }
    }
}
