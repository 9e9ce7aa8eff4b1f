//! Wall-clock time as the contract and the trace spell it.
//!
//! Two spellings matter on the wire:
//! - contract timestamps (`issued_at`, `completed_at`) are RFC 3339 in UTC as pydantic v2
//!   writes them: `2026-11-29T23:03:22.123456Z`, the fraction left out when it is zero;
//! - span JSON times are OpenTelemetry Python's `datetime.fromtimestamp(ns / 1e9, UTC)
//!   .strftime("%Y-%m-%dT%H:%M:%S.%fZ")`, always six fractional digits, computed through a
//!   double and rounded half-even exactly as CPython does (see [`otel_time`]).

use std::time::{SystemTime, UNIX_EPOCH};

const NS_PER_SEC: i128 = 1_000_000_000;

/// Nanoseconds since the Unix epoch, now.
pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// `completed_at`-style timestamp for now.
pub(crate) fn now_rfc3339() -> String {
    rfc3339(now_ns() as i128)
}

/// RFC 3339 UTC with microseconds, as pydantic v2 serialises an aware `datetime`.
pub(crate) fn rfc3339(ns: i128) -> String {
    let secs = ns.div_euclid(NS_PER_SEC);
    let micros = (ns.rem_euclid(NS_PER_SEC) / 1000) as u32;
    let mut out = civil_string(secs as i64);
    if micros != 0 {
        out.push('.');
        push_padded(&mut out, micros, 6);
    }
    out.push('Z');
    out
}

/// The span-JSON time OpenTelemetry Python writes for `ns` nanoseconds.
///
/// CPython's `datetime.fromtimestamp(t)` splits the double `t = ns / 1e9` with `modf`,
/// scales the fraction to microseconds and rounds half-to-even (`_PyTime_ROUND_HALF_EVEN`),
/// carrying into the seconds. Reproducing the double arithmetic is what makes
/// `…999999999` ns print as the next whole second, byte for byte as Python does.
pub(crate) fn otel_time(ns: u64) -> String {
    let (secs, micros) = otel_time_parts(ns);
    let mut out = civil_string(secs);
    out.push('.');
    push_padded(&mut out, micros, 6);
    out.push('Z');
    out
}

/// The whole seconds and microseconds [`otel_time`] writes for `ns`.
fn otel_time_parts(ns: u64) -> (i64, u32) {
    let t = ns as f64 / 1e9;
    let mut secs = t.trunc();
    let mut micros = ((t - secs) * 1e6).round_ties_even();
    if micros >= 1e6 {
        micros -= 1e6;
        secs += 1.0;
    }
    (secs as i64, micros as u32)
}

/// The nanoseconds a span JSON reader takes back from [`otel_time`]`(ns)`: its seconds and
/// microseconds, without writing and reading the text (`ns` since the epoch, before 9999).
pub(crate) fn otel_time_read_back(ns: u64) -> u64 {
    let (secs, micros) = otel_time_parts(ns);
    secs as u64 * 1_000_000_000 + u64::from(micros) * 1_000
}

/// An HTTP date, IMF-fixdate (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(secs: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// `YYYY-MM-DDTHH:MM:SS` for whole seconds since the epoch.
///
/// Written digit by digit rather than through `format!`: every A2A reply and span carries
/// several of these, and the formatting machinery was a tenth of an echo call's instructions.
fn civil_string(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    let mut out = String::with_capacity(32);
    match u32::try_from(y) {
        Ok(year) if year <= 9999 => {
            // The fixed-width text in one buffer, checked as UTF-8 once.
            let mut text = *b"0000-00-00T00:00:00";
            for (at, width, value) in [
                (0, 4, year),
                (5, 2, m),
                (8, 2, d),
                (11, 2, rem / 3600),
                (14, 2, rem % 3600 / 60),
                (17, 2, rem % 60),
            ] {
                put_digits(&mut text[at..at + width], value);
            }
            out.push_str(std::str::from_utf8(&text).unwrap_or_default());
        }
        // A year outside 0..=9999, never on a hot path.
        _ => out.push_str(&format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )),
    }
    out
}

/// Writes the last `digits.len()` decimal digits of `value` into `digits`, zero-padded.
fn put_digits(digits: &mut [u8], mut value: u32) {
    for b in digits.iter_mut().rev() {
        *b = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// Appends `value` in decimal, zero-padded to at least `width` digits (as `{:0width$}`).
fn push_padded(out: &mut String, value: u32, width: usize) {
    let mut digits = [b'0'; 10];
    let mut n = value;
    let mut len = 0;
    while n > 0 || len == 0 {
        digits[digits.len() - 1 - len] = b'0' + (n % 10) as u8;
        n /= 10;
        len += 1;
    }
    let len = len.max(width).min(digits.len());
    for &b in &digits[digits.len() - len..] {
        out.push(char::from(b));
    }
}

/// Howard Hinnant's `civil_from_days`: proleptic Gregorian date of a day count.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parse an RFC 3339 date-time (`T`, `t` or a space between date and time; `Z`, `z` or a
/// `±HH:MM` offset; up to nine fractional digits) into nanoseconds since the epoch.
///
/// Returns `None` for anything else, including impossible dates such as February 30.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let mut i = 19;
    let mut frac_ns: i128 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &s[start..i];
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        frac_ns = digits.parse::<i128>().ok()? * 10i128.pow(9 - digits.len() as u32);
    }
    let offset_secs: i64 = match &b[i..] {
        [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let hh = num(i + 1..i + 3)?;
            let mm = num(i + 4..i + 6)?;
            if hh > 23 || mm > 59 {
                return None;
            }
            let off = (hh * 3600 + mm * 60) as i64;
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let days = days_from_civil(year as i64, month, day);
    // A date that does not exist (a 13th month, a February 30th) comes back as another one.
    if civil_from_days(days) != (year as i64, month, day) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let secs = days * 86_400 + (hour * 3600 + minute * 60 + second) as i64 - offset_secs;
    Some(secs as i128 * NS_PER_SEC + frac_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_by_digit_times_agree_with_format_across_years_and_fractions() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Years from -9999 to +20000 or so, every second of the day, any fraction.
            let secs = (seed % 700_000_000_000) as i64 - 377_000_000_000;
            let days = secs.div_euclid(86_400);
            let rem = secs.rem_euclid(86_400);
            let (y, m, d) = civil_from_days(days);
            let expected = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60
            );
            assert_eq!(civil_string(secs), expected);
            let micros = (seed >> 40) as u32 % 1_000_000;
            let mut padded = String::new();
            push_padded(&mut padded, micros, 6);
            assert_eq!(padded, format!("{micros:06}"));
        }
        let mut wide = String::new();
        push_padded(&mut wide, u32::MAX, 4);
        assert_eq!(wide, u32::MAX.to_string());
    }

    #[test]
    fn rfc3339_writes_microseconds_and_drops_a_zero_fraction_like_pydantic() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(rfc3339(-1_000), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn otel_time_rounds_through_a_double_like_cpython() {
        assert_eq!(
            otel_time(1_700_000_000_999_999_999),
            "2023-11-14T22:13:21.000000Z"
        );
        assert_eq!(
            otel_time(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123457Z"
        );
        assert_eq!(otel_time(0), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn parse_accepts_rfc3339_and_refuses_impossible_dates() {
        assert_eq!(
            parse_rfc3339("2023-11-14T22:13:20.123456Z"),
            Some(1_700_000_000_123_456_000)
        );
        assert_eq!(
            parse_rfc3339("2023-11-14T23:13:20+01:00"),
            Some(1_700_000_000 * NS_PER_SEC)
        );
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z").map(|_| ()), Some(()));
        assert_eq!(parse_rfc3339("2023-02-29T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("2023-11-14"), None);
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20"), None);
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20.Z"), None);
    }

    #[test]
    fn http_dates_are_imf_fixdate() {
        // RFC 9110 §5.6.7's own example, and the epoch.
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(1_709_251_199), "Thu, 29 Feb 2024 23:59:59 GMT");
    }

    #[test]
    fn civil_dates_round_trip_across_four_centuries() {
        for days in (-200_000..200_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
