//! Capability tokens: the secrets that a URL carries to be let in (the InfluxDB endpoint's,
//! the live profiles'), 128 bits from the operating system's random source as hex, compared
//! in a time that says nothing of where a guess differs.

use std::io;

/// Random bytes of a token: 128 bits, past guessing (shown as twice as many hex digits).
const TOKEN_BYTES: usize = 16;

/// A new token from the operating system's random source.
pub fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|error| io::Error::other(error.to_string()))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether `given` is `ours`, in a time that depends on the lengths only; an empty token
/// matches nothing.
pub fn tokens_match(ours: &str, given: &str) -> bool {
    let (ours, given) = (ours.as_bytes(), given.as_bytes());
    let difference = ours
        .iter()
        .zip(given)
        .fold(0u8, |difference, (a, b)| difference | (a ^ b));
    std::hint::black_box(difference) == 0 && !ours.is_empty() && ours.len() == given.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_is_128_random_bits_in_hex() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 2 * TOKEN_BYTES);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn a_token_matches_itself_only_and_an_empty_one_nothing() {
        let token = new_token().unwrap();
        assert!(tokens_match(&token, &token));
        let mut other = token.clone();
        let last = if other.ends_with('0') { "1" } else { "0" };
        other.replace_range(other.len() - 1.., last);
        assert!(!tokens_match(&token, &other));
        assert!(!tokens_match(&token, &token[1..]));
        assert!(!tokens_match(&token, &format!("{token}0")));
        assert!(!tokens_match(&token, ""));
        assert!(!tokens_match("", ""));
    }
}
