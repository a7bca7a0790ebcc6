//! Tokens that announce themselves by a prefix (GitHub, Slack, AWS key ids, JWTs): masked
//! in a command line wherever they stand, with no option or variable naming them.

/// What a secret is replaced with, here and in the rest of the command line.
pub(super) const MASK: &str = "***";
/// Every token that announces itself by its prefix (GitHub, Slack, AWS key ids, JWTs),
/// wherever it starts in the word after a character that is not a letter or digit.
pub(super) fn mask_tokens(word: &str) -> String {
    let mut masked = String::with_capacity(word.len());
    let mut kept = 0;
    let mut at = 0;
    while at < word.len() {
        let bytes = word.as_bytes();
        // Every prefix starts with an ASCII letter, which is also where a character starts.
        let may_start =
            bytes[at].is_ascii_alphabetic() && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric());
        match may_start.then(|| token_length(&word[at..])).flatten() {
            Some(length) => {
                masked.push_str(&word[kept..at]);
                masked.push_str(MASK);
                at += length;
                kept = at;
            }
            None => at += 1,
        }
    }
    masked.push_str(&word[kept..]);
    masked
}

const GITHUB_PREFIXES: [&str; 6] = ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];
const SLACK_PREFIXES: [&str; 6] = ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-"];
const AWS_KEY_ID_PREFIXES: [&str; 2] = ["AKIA", "ASIA"];

/// The length of the token `text` starts with, if it starts with one.
fn token_length(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let run = |from: usize, part_of: fn(&u8) -> bool| {
        from + bytes[from..].iter().take_while(|b| part_of(b)).count()
    };
    let prefix = |prefixes: &[&str]| {
        prefixes
            .iter()
            .find(|p| text.starts_with(**p))
            .map(|p| p.len())
    };
    if let Some(start) = prefix(&GITHUB_PREFIXES) {
        // 36 characters after the prefix (82 for `github_pat_`); 30 leaves room for old ones.
        let end = run(start, |b| b.is_ascii_alphanumeric() || *b == b'_');
        return (end - start >= 30).then_some(end);
    }
    if let Some(start) = prefix(&SLACK_PREFIXES) {
        let end = run(start, |b| b.is_ascii_alphanumeric() || *b == b'-');
        return (end - start >= 10).then_some(end);
    }
    if let Some(start) = prefix(&AWS_KEY_ID_PREFIXES) {
        let end = run(start, u8::is_ascii_alphanumeric);
        let id = &bytes[start..end];
        let is_key_id = id.len() == 16
            && id
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        return is_key_id.then_some(end);
    }
    if text.starts_with("eyJ") {
        // A JWT: a JSON header, `.`, a JSON payload, `.`, a signature (empty when unsigned).
        let is_base64url = |b: &u8| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_';
        let header_end = run(0, is_base64url);
        let payload = header_end + 1;
        if bytes.get(header_end) != Some(&b'.') || !text[payload..].starts_with("eyJ") {
            return None;
        }
        let payload_end = run(payload, is_base64url);
        return (bytes.get(payload_end) == Some(&b'.')).then(|| run(payload_end + 1, is_base64url));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_that_merely_start_like_a_token_are_kept() {
        let words = [
            "ghp_short",
            "AKIAshort",
            "AKIAIOSFODNN7EXAMPLEMORE",
            "xoxb-1",
            "eyJ.notajwt",
            "MAKIAIOSFODNN7EXAMPLE",
            "src/github_pat_check.rs",
            "é€ghp_é",
        ];
        for word in words {
            assert_eq!(mask_tokens(word), word);
        }
    }
}
