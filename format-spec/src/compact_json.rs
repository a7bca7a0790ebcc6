//! The one scanner of JSON text without escapes, compact as the encoder writes it and most
//! marker files do, or spaced between tokens as Python's `json.dumps` writes it
//! ([`Cursor::spaced`]). A [`Cursor`] reads it forward, finding fields and the ends of
//! values without building anything, and refuses (None) whatever it does not know to be
//! JSON that serde_json reads the same way, so a caller sends those bytes to serde_json
//! instead. Two fast paths stand on it: a log's marker lines ([`each_field`], for
//! `lines.rs`, compact only: reading them through serde_json's derive took most of the time
//! of finalizing) and marker-file lines (`marker_file/fast.rs`).

/// Nesting of a field's value deeper than this is left to serde_json (which refuses past
/// 128).
pub(crate) const FIELD_DEPTH_MAX: usize = 32;
/// Longest run of digits in a [`Numbers::InRange`] number: a longer one could overflow an
/// f64.
const DIGITS_MAX: usize = 300;

/// Calls `field` with the cursor at each key of the object that is all of `text`: `field`
/// reads the key and its value (a number read as one, in one pass); None when `text` is
/// not such an object or `field` returns None.
pub(crate) fn each_field<'a>(
    text: &'a str,
    field: impl FnMut(&mut Cursor<'a>) -> Option<()>,
) -> Option<()> {
    let mut cursor = Cursor::new(text);
    cursor.keyed_object(field)?;
    cursor.at_end().then_some(())
}

/// The numbers a value may hold.
#[derive(Clone, Copy)]
pub(crate) enum Numbers {
    /// JSON's number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    Any,
    /// Without exponent, each run of digits [`DIGITS_MAX`] long at most: none overflows an
    /// f64.
    InRange,
}

/// A number as its digits were read: `mantissa` is exact while `digits` is 19 at most.
struct Decimal {
    negative: bool,
    mantissa: u64,
    digits: usize,
    /// The power of ten the mantissa is multiplied by (i64::MAX when its digits overflow).
    exponent: i64,
}

/// Powers of ten an f64 holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

impl Decimal {
    /// The value, when a single correctly rounded operation on exact operands gives it
    /// (Clinger's fast path: a mantissa below 2^53 and a power of ten of 22 at most), so it
    /// is the correctly rounded value; None otherwise.
    fn fast_f64(&self) -> Option<f64> {
        if self.digits > 19 || self.mantissa > 1 << 53 {
            return None;
        }
        let power = *EXACT_POWERS_OF_TEN.get(self.exponent.unsigned_abs() as usize)?;
        let mantissa = self.mantissa as f64;
        let magnitude = match self.exponent < 0 {
            true => mantissa / power,
            false => mantissa * power,
        };
        Some(if self.negative { -magnitude } else { magnitude })
    }
}

/// The bytes that end a string's scan: a quote, a backslash, a control byte.
const ENDS_A_SCAN: [bool; 256] = {
    let mut ends = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        ends[byte] = true;
        byte += 1;
    }
    ends[b'"' as usize] = true;
    ends[b'\\' as usize] = true;
    ends
};

/// Reads a text forward; each step is None where the text is not compact JSON of the
/// shape asked for.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    at: usize,
    /// Whether JSON's whitespace may stand between tokens.
    spaced: bool,
    /// Whether some did.
    saw_space: bool,
}

impl<'a> Cursor<'a> {
    /// A cursor of compact text: whitespace between tokens is refused.
    pub(crate) fn new(text: &'a str) -> Self {
        Cursor {
            text,
            at: 0,
            spaced: false,
            saw_space: false,
        }
    }

    /// A cursor that passes over JSON's whitespace between tokens (and at the end), as
    /// serde_json does.
    pub(crate) fn spaced(text: &'a str) -> Self {
        Cursor {
            spaced: true,
            ..Cursor::new(text)
        }
    }

    /// Whether whitespace stood between some tokens read so far.
    pub(crate) fn saw_space(&self) -> bool {
        self.saw_space
    }

    /// At the end of the text, past any whitespace a spaced cursor allows.
    pub(crate) fn at_end(&mut self) -> bool {
        self.space();
        self.at == self.text.len()
    }

    /// The first byte of the next token.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.space();
        self.byte()
    }

    /// The byte at the cursor, whitespace or not.
    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Passes over whitespace, when spaced. Inlined to one test of the byte at the cursor
    /// (whitespace and the control bytes, never valid between tokens, are below `!`):
    /// compact text has none, and this runs before every token.
    #[inline(always)]
    fn space(&mut self) {
        if self.byte().is_some_and(|byte| byte <= b' ') && self.spaced {
            self.skip_space();
        }
    }

    fn skip_space(&mut self) {
        let rest = &self.text.as_bytes()[self.at..];
        let length = rest
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .unwrap_or(rest.len());
        self.saw_space |= length > 0;
        self.at += length;
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// The text that `read` reads.
    pub(crate) fn with_text(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<&'a str> {
        self.space();
        let start = self.at;
        read(self)?;
        Some(&self.text[start..self.at])
    }

    /// An object, each field's value read by `field`, given the cursor at the value and
    /// the key.
    pub(crate) fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.keyed_object(|cursor| {
            let key = cursor.key()?;
            field(cursor, key)
        })
    }

    /// An object, each field read by `field` from its key on: for a caller that tells the
    /// keys it knows with [`Self::skip_known`] before scanning any.
    pub(crate) fn keyed_object(
        &mut self,
        field: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.items(b'}', field)
    }

    /// A key and its colon.
    pub(crate) fn key(&mut self) -> Option<&'a str> {
        let key = self.string()?;
        self.eat(b':')?;
        Some(key)
    }

    /// Passes over `bytes` if the text goes on with them; whether it did. One comparison of
    /// a length known when compiling, where [`Self::string`] looks at each byte: a key
    /// checked whole this way (`"name":`) is the key that scanning would have read, as a
    /// scanned key holds no quote.
    #[inline(always)]
    pub(crate) fn skip_known<const N: usize>(&mut self, bytes: &[u8; N]) -> bool {
        let known = self.text.as_bytes()[self.at..].first_chunk::<N>() == Some(bytes);
        if known {
            self.at += N;
        }
        known
    }

    /// The byte after the next one, if any.
    pub(crate) fn peek_second(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at + 1).copied()
    }

    /// Any value, containers `depth` levels deep at most. Always inlined (`#[inline]` alone
    /// was not taken), so that a string or a number, most values skipped (a payload's
    /// fields, a marker line's `type`), costs no call; only a container calls
    /// [`Self::skip_container`].
    #[inline(always)]
    pub(crate) fn skip_value(&mut self, depth: usize, numbers: Numbers) -> Option<()> {
        match self.peek()? {
            b'{' | b'[' => self.skip_container(depth, numbers),
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.skip_number(numbers),
        }
    }

    /// An array, each item read by `item`.
    pub(crate) fn array(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.items(b']', item)
    }

    /// An object or an array, `depth` levels deep at most.
    fn skip_container(&mut self, depth: usize, numbers: Numbers) -> Option<()> {
        match self.peek()? {
            b'{' => {
                let inner = depth.checked_sub(1)?;
                self.object(|cursor, _| cursor.skip_value(inner, numbers))
            }
            b'[' => {
                let inner = depth.checked_sub(1)?;
                self.array(|cursor| cursor.skip_value(inner, numbers))
            }
            _ => None,
        }
    }

    /// The items of a container whose opening byte was read, up to its `close`.
    fn items(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.peek()? == close {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.next()? {
                b',' => {}
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A string without escapes or control bytes, quotes left out. Always inlined: most
    /// tokens of a marker line are strings, and the call cost a tenth of decoding one.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let bytes = self.text.as_bytes();
        // Keys and names are short: one pass beats a vectorized search's set-up (and eight
        // bytes a step, their tests on a word, which took more than it saved), and a table
        // one comparison a byte. An index rather than `position`, whose count and option
        // took 8 instructions a byte where this takes 6.
        let mut end = start;
        while end < bytes.len() && !ENDS_A_SCAN[usize::from(bytes[end])] {
            end += 1;
        }
        (bytes.get(end) == Some(&b'"')).then_some(())?;
        self.at = end + 1;
        Some(&self.text[start..end])
    }

    pub(crate) fn literal(&mut self, word: &str) -> Option<()> {
        self.space();
        self.text.as_bytes()[self.at..]
            .starts_with(word.as_bytes())
            .then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// An unsigned integer that fits `T`, read in one pass; None for any other value, which
    /// serde_json may still read (`-0`) or refuse (`2.5`, `01`).
    pub(crate) fn unsigned<T: TryFrom<u64>>(&mut self) -> Option<T> {
        self.space();
        let start = self.at;
        let mut value = 0;
        let digits = self.digits(usize::MAX, &mut value)?;
        let leading_zero = digits > 1 && self.text.as_bytes()[start] == b'0';
        let fraction_or_exponent = matches!(self.byte(), Some(b'.' | b'e' | b'E'));
        (!leading_zero && !fraction_or_exponent).then_some(())?;
        let value = match digits {
            ..=19 => value,
            // `digits` wrapped.
            _ => self.text[start..self.at].parse().ok()?,
        };
        T::try_from(value).ok()
    }

    /// A number of JSON's grammar, read as serde_json reads one into an f64 (with
    /// `float_roundtrip`): correctly rounded, an integer too (through its 64-bit integer,
    /// which rounds the same); None if it is not finite. Read in one pass where the fast
    /// path is exact, else parsed again from its text.
    pub(crate) fn f64(&mut self) -> Option<f64> {
        self.space();
        let start = self.at;
        let decimal = self.decimal(Numbers::Any)?;
        let value = match decimal.fast_f64() {
            Some(value) => value,
            None => self.text[start..self.at].parse::<f64>().ok()?,
        };
        value.is_finite().then_some(value)
    }

    /// A number of JSON's grammar (of `numbers`), passed over: what [`Self::decimal`]
    /// reads, found without adding up its digits (a machine log's payloads are mostly
    /// numbers; adding up the skipped ones was a tenth of reading an hour of them).
    fn skip_number(&mut self, numbers: Numbers) -> Option<()> {
        let most = match numbers {
            Numbers::Any => usize::MAX,
            Numbers::InRange => DIGITS_MAX,
        };
        let bytes = &self.text.as_bytes()[self.at..];
        let mut at = usize::from(bytes.first() == Some(&b'-'));
        let integer = digit_run(&bytes[at..], most)?;
        if integer > 1 && bytes[at] == b'0' {
            return None;
        }
        at += integer;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            at += digit_run(&bytes[at..], most)?;
        }
        if matches!(numbers, Numbers::Any) && matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            at += digit_run(&bytes[at..], most)?;
        }
        self.at += at;
        Some(())
    }

    fn decimal(&mut self, numbers: Numbers) -> Option<Decimal> {
        let most = match numbers {
            Numbers::Any => usize::MAX,
            Numbers::InRange => DIGITS_MAX,
        };
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let first = self.byte();
        let mut mantissa = 0;
        let mut digits = self.digits(most, &mut mantissa)?;
        if digits > 1 && first == Some(b'0') {
            return None;
        }
        let mut fraction_digits = 0;
        if self.byte() == Some(b'.') {
            self.at += 1;
            fraction_digits = self.digits(most, &mut mantissa)?;
            digits += fraction_digits;
        }
        let mut exponent = 0;
        if matches!(numbers, Numbers::Any) && matches!(self.byte(), Some(b'e' | b'E')) {
            self.at += 1;
            let negative_exponent = self.byte() == Some(b'-');
            if matches!(self.byte(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let mut magnitude = 0;
            // Past 18 digits the exponent may have overflowed: the text is parsed instead.
            exponent = match self.digits(most, &mut magnitude)? {
                ..=18 if negative_exponent => -(magnitude as i64),
                ..=18 => magnitude as i64,
                _ => i64::MAX,
            };
        }
        Some(Decimal {
            negative,
            mantissa,
            digits,
            exponent: exponent.saturating_sub(fraction_digits as i64),
        })
    }

    /// One digit or more, `most` at most, appended to `value` (which wraps past 19
    /// digits); how many.
    fn digits(&mut self, most: usize, value: &mut u64) -> Option<usize> {
        let rest = &self.text.as_bytes()[self.at..];
        // Found and added up in one pass: two took a fifth of reading a marker line.
        let mut count = 0;
        let mut sum = *value;
        while let Some(digit) = rest.get(count).map(|byte| byte.wrapping_sub(b'0')) {
            if digit > 9 {
                break;
            }
            sum = sum.wrapping_mul(10).wrapping_add(u64::from(digit));
            count += 1;
        }
        (1..=most).contains(&count).then_some(())?;
        *value = sum;
        self.at += count;
        Some(count)
    }
}

/// The digits `bytes` starts with: one at least and `most` at most, else None.
fn digit_run(bytes: &[u8], most: usize) -> Option<usize> {
    let count = bytes
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    (1..=most).contains(&count).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A number value that is all of `text`, as [`Cursor::f64`] reads it.
    fn number(text: &str) -> Option<f64> {
        let mut cursor = Cursor::new(text);
        let value = cursor.f64()?;
        cursor.at_end().then_some(value)
    }

    fn fields(text: &str) -> Option<Vec<(String, String)>> {
        let mut found = Vec::new();
        each_field(text, |cursor| {
            let key = cursor.key()?;
            let value =
                cursor.with_text(|value| value.skip_value(FIELD_DEPTH_MAX, Numbers::Any))?;
            found.push((key.to_owned(), value.to_owned()));
            Some(())
        })?;
        Some(found)
    }

    #[test]
    fn compact_objects_are_split_into_their_fields() {
        let text = r#"{"a":1,"b":{"c":[1,-2.5e3,"x",true,null,{}],"d":[]},"e":"caf\u00e9"}"#;
        let got = fields(&text.replace("\\u00e9", "\u{e9}")).unwrap();
        let keys: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "e"]);
        assert_eq!(got[1].1, r#"{"c":[1,-2.5e3,"x",true,null,{}],"d":[]}"#);
        assert_eq!(fields("{}").unwrap(), []);
    }

    #[test]
    fn what_serde_json_might_read_otherwise_is_refused() {
        for text in [
            r#"{"a": 1}"#,
            r#"{"a":"x\"y"}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":1e}"#,
            r#"{"a":+1}"#,
            r#"{"a":tru}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} "#,
            r#"{"a":[1,]}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":1"#,
        ] {
            assert_eq!(fields(text), None, "{text}");
        }
        let nested =
            |levels: usize| format!("{{\"a\":{}1{}}}", "[".repeat(levels), "]".repeat(levels));
        assert!(fields(&nested(32)).is_some());
        assert_eq!(fields(&nested(33)), None);
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for text in [
            "0",
            "-0",
            "-0.0",
            "1",
            "-17",
            "18446744073709551615",
            "1e400",
            "2.5e-3",
            "123456789012345678901234567890",
            "0.1",
            "850.163",
            "1.7976931348623157e308",
        ] {
            let expected: Option<f64> = serde_json::from_str(text).ok();
            let got = number(text);
            assert_eq!(got.map(f64::to_bits), expected.map(f64::to_bits), "{text}");
        }
        assert_eq!(number("1.5,"), None);
    }

    #[test]
    fn unsigned_integers_are_read_where_serde_json_reads_them_the_same() {
        let unsigned = |text: &str| {
            let mut cursor = Cursor::new(text);
            let value = cursor.unsigned::<u32>()?;
            cursor.at_end().then_some(value)
        };
        assert_eq!(unsigned("0"), Some(0));
        assert_eq!(unsigned("4294967295"), Some(u32::MAX));
        assert_eq!(unsigned("00000000000000000000004"), None);
        for refused in ["4294967296", "-1", "-0", "01", "2.0", "2e0", "2E0", "", "x"] {
            assert_eq!(unsigned(refused), None, "{refused}");
        }
        let mut cursor = Cursor::new("18446744073709551615");
        assert_eq!(cursor.unsigned::<u64>(), Some(u64::MAX));
        let mut cursor = Cursor::new("18446744073709551616");
        assert_eq!(cursor.unsigned::<u64>(), None);
        let mut cursor = Cursor::new("99999999999999999999");
        assert_eq!(cursor.unsigned::<u64>(), None);
    }

    /// A number's text from its parts: JSON's grammar, with digits enough to leave the fast
    /// path and exponents enough to leave an f64's range.
    fn number_text(
        negative: bool,
        integer: &[u8],
        fraction: &[u8],
        exponent: Option<(&str, i32)>,
    ) -> String {
        let digits = |ds: &[u8]| ds.iter().map(|d| char::from(b'0' + d)).collect::<String>();
        let mut text = String::from(if negative { "-" } else { "" });
        match integer.iter().position(|&d| d != 0) {
            Some(first) => text += &digits(&integer[first..]),
            None => text.push('0'),
        }
        if !fraction.is_empty() {
            text = text + "." + &digits(fraction);
        }
        if let Some((mark, power)) = exponent {
            text = format!("{text}{mark}{power}");
        }
        text
    }

    fn assert_read_as_serde_json_reads(
        text: &str,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let expected: Option<f64> = serde_json::from_str(text).ok();
        proptest::prop_assert_eq!(
            number(text).map(f64::to_bits),
            expected.map(f64::to_bits),
            "{}",
            text
        );
        Ok(())
    }

    /// Where [`Cursor::skip_number`] and [`Cursor::decimal`] leave a cursor on `text`, or
    /// None where they refuse it.
    fn skipped_and_read(text: &str, numbers: Numbers) -> (Option<usize>, Option<usize>) {
        let mut skipping = Cursor::new(text);
        let mut reading = Cursor::new(text);
        (
            skipping.skip_number(numbers).map(|()| skipping.at),
            reading.decimal(numbers).map(|_| reading.at),
        )
    }

    #[test]
    fn a_number_is_skipped_where_it_is_read() {
        let long = format!("1{}", "0".repeat(DIGITS_MAX));
        for text in [
            "0",
            "-0",
            "01",
            "-",
            "",
            "1.",
            "1.5",
            "1.5e",
            "1e+",
            "2E-7,",
            "-12.50e3]",
            "1.e5",
            "00",
            "-01",
            "0.0001",
            "1x",
            "e5",
            ".5",
            "18446744073709551616",
            &long,
        ] {
            for numbers in [Numbers::Any, Numbers::InRange] {
                let (skipped, read) = skipped_and_read(text, numbers);
                assert_eq!(skipped, read, "{text}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_skipped_as_far_as_it_is_read(text in "[-+0-9.eE,x]{0,12}") {
            for numbers in [Numbers::Any, Numbers::InRange] {
                let (skipped, read) = skipped_and_read(&text, numbers);
                proptest::prop_assert_eq!(skipped, read, "{}", text);
            }
        }

        #[test]
        fn any_number_reads_bit_for_bit_as_serde_json_reads_it(
            negative: bool,
            integer in proptest::collection::vec(0..10u8, 1..24),
            fraction in proptest::collection::vec(0..10u8, 0..30),
            exponent in proptest::option::of((proptest::sample::select(vec!["e", "E", "e+", "e-", "E-"]), 0..400i32)),
        ) {
            assert_read_as_serde_json_reads(&number_text(negative, &integer, &fraction, exponent))?;
        }

        #[test]
        fn every_f64_as_written_reads_back_bit_for_bit(bits: u64) {
            let value = f64::from_bits(bits);
            proptest::prop_assume!(value.is_finite());
            assert_read_as_serde_json_reads(&serde_json::to_string(&value).unwrap())?;
        }

        #[test]
        fn times_as_the_recorder_writes_them_read_bit_for_bit(
            millis in 0..u64::MAX >> 10,
            places in 0..23u32,
            power in -30..30i32,
        ) {
            let value = millis as f64 / 10f64.powi(places as i32);
            assert_read_as_serde_json_reads(&serde_json::to_string(&value).unwrap())?;
            assert_read_as_serde_json_reads(&format!("{millis}e{power}"))?;
            let text = millis.to_string();
            let split = text.len().saturating_sub(places as usize);
            assert_read_as_serde_json_reads(&format!("{}.{}", &text[..split.max(1)], &text[split.max(1)..]))?;
        }
    }

    #[test]
    fn a_string_scan_ends_at_a_quote_a_backslash_or_a_control_byte() {
        for byte in 0..=255u8 {
            let ends = byte == b'"' || byte == b'\\' || byte < 0x20;
            assert_eq!(ENDS_A_SCAN[usize::from(byte)], ends, "{byte:#x}");
        }
    }

    #[test]
    fn fast_path_edges_read_as_serde_json_reads_them() {
        for text in [
            "9007199254740992",
            "9007199254740993",
            "9007199254740993.0",
            "900719925474099.3",
            "1e22",
            "1e23",
            "1.0e-22",
            "1e-23",
            "0.0000000000000000000001",
            "1234567890123456789",
            "12345678901234567890",
            "0e999999999999999999999",
            "1e-999999999999999999999",
            "4.9e-324",
            "2.2250738585072014e-308",
            "-0.0e0",
        ] {
            assert_read_as_serde_json_reads(text).unwrap();
        }
    }
}
