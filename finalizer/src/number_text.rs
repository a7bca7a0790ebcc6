//! The JSON formatter a profile is written with: serde_json's compact one, but for a
//! number with at most three decimals (a time in milliseconds to the microsecond, nearly
//! every number of a profile), written straight from its digits. The bytes are the ones
//! serde_json's shortest round-trip formatter writes; it is half the work of it, and the
//! numbers were a third of writing a profile.

use serde_json::ser::{CompactFormatter, Formatter};
use std::io::{self, Write};

/// serde_json's compact formatter, short decimals written directly.
pub(crate) struct ProfileFormatter;

impl Formatter for ProfileFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let mut text = [0; SHORT_DECIMAL_MAX];
        match short_decimal(value, &mut text) {
            Some(written) => writer.write_all(written),
            None => CompactFormatter.write_f64(writer, value),
        }
    }
}

/// Numbers are written directly with three decimals at most: scaled by this.
const SCALE: f64 = 1e3;
/// Below this, an f64's neighbours are less than 10^-3 apart, so no other decimal of
/// three places or fewer reads as the same f64: the shortest text of one that such a
/// decimal reads as is that decimal. (It also keeps the scaled value exact and the text out
/// of serde_json's exponent notation, which starts at 1e16.)
const MAGNITUDE_LIMIT: f64 = 1e12;
/// `-`, 12 integer digits, `.`, 3 decimals.
const SHORT_DECIMAL_MAX: usize = 1 + 12 + 1 + 3;

/// Writes `value` at the end of `text` as its shortest round-trip text when that is a
/// decimal of three places or fewer (`5.0`, `-802.693`); the text, or None for
/// another number (zero, whose sign serde_json keeps, included).
fn short_decimal(value: f64, text: &mut [u8; SHORT_DECIMAL_MAX]) -> Option<&[u8]> {
    let magnitude = value.abs();
    if magnitude >= MAGNITUDE_LIMIT || value == 0.0 {
        return None;
    }
    // Rounded by truncating, and through i64: `f64::round` is a library call on x86_64's
    // baseline, and u64 conversions take several instructions each way.
    let scaled = (magnitude * SCALE + 0.5) as i64;
    // The decimal scaled/SCALE reads as `value`: a correctly rounded division of exact
    // operands (scaled is an integer below 2^53) gives `value` back.
    if scaled as f64 / SCALE != magnitude {
        return None;
    }
    // Unsigned from here: signed division by a constant takes more instructions.
    let scaled = scaled as u64;
    let (mut whole, fraction) = (scaled / 1000, scaled % 1000);
    // The three decimals, then as many as are not trailing zeros (one at least).
    let end = text.len();
    text[end - 3] = b'0' + (fraction / 100) as u8;
    text[end - 2] = b'0' + (fraction / 10 % 10) as u8;
    text[end - 1] = b'0' + (fraction % 10) as u8;
    let decimals = match fraction {
        _ if fraction % 100 == 0 => 1,
        _ if fraction % 10 == 0 => 2,
        _ => 3,
    };
    let mut at = end - 3;
    at -= 1;
    text[at] = b'.';
    while whole >= 10 {
        let pair = (whole % 100) as usize * 2;
        at -= 2;
        text[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        whole /= 100;
    }
    if whole > 0 || at == end - 4 {
        at -= 1;
        text[at] = b'0' + whole as u8;
    }
    if value < 0.0 {
        at -= 1;
        text[at] = b'-';
    }
    let length = end - 3 + decimals - at;
    Some(&text[at..at + length])
}

/// "00" to "99".
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn written(value: f64) -> String {
        let mut bytes = Vec::new();
        ProfileFormatter.write_f64(&mut bytes, value).unwrap();
        String::from_utf8(bytes).unwrap()
    }

    fn serde_json_text(value: f64) -> String {
        serde_json::to_string(&value).unwrap()
    }

    #[test]
    fn short_decimals_are_written_as_serde_json_writes_them() {
        let values = [
            5.0,
            0.001,
            0.1,
            0.5,
            4.769,
            802.693,
            1e11,
            999_999_999_999.999,
            -1.5,
            -0.002,
            1796141002773.6277,
            0.0,
            -0.0,
            1e-7,
            1e16,
            0.1 + 0.2,
            123.4567,
            1e12,
        ];
        for value in values {
            assert_eq!(written(value), serde_json_text(value), "{value:?}");
        }
        let mut text = [0; SHORT_DECIMAL_MAX];
        assert_eq!(short_decimal(802.693, &mut text), Some(&b"802.693"[..]));
        assert_eq!(short_decimal(0.1 + 0.2, &mut text), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn every_number_is_written_as_serde_json_writes_it(
            thousandths in -(1i64 << 50)..(1i64 << 50),
            bits in any::<u64>(),
        ) {
            let decimal = thousandths as f64 / 1000.0;
            prop_assert_eq!(written(decimal), serde_json_text(decimal));
            let any = f64::from_bits(bits);
            if any.is_finite() {
                prop_assert_eq!(written(any), serde_json_text(any));
            }
        }
    }
}
