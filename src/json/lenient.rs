//! Integers that may arrive spelled as floats.
//!
//! A protobuf `Struct` holds only doubles, so the a2a-sdk 1.x client turns `{"input_tokens": 3}`
//! into `{"input_tokens": 3.0}`. The reference coerces token counts with `int()`; these helpers
//! accept an integer, or a float with no fractional part, and refuse anything else.

use serde::{Deserialize, Deserializer, de};
use serde_json::{Number, Value};

/// The integer a JSON number denotes, if it denotes one exactly (`3`, `3.0`, `3e0`).
pub(crate) fn integer(n: &Number) -> Option<i64> {
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let x = n.as_f64()?;
    (x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15).then_some(x as i64)
}

/// serde `deserialize_with` for `Option<u64>` fields that accept `3.0` as 3.
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match integer(&n) {
            Some(i) if i >= 0 => Ok(Some(i as u64)),
            _ => Err(de::Error::custom(format!(
                "expected a non-negative integer, got {n}"
            ))),
        },
        Some(other) => Err(de::Error::custom(format!(
            "expected an integer, got {}",
            super::type_name(&other)
        ))),
    }
}

/// serde `deserialize_with` for `Option<i64>` fields that accept `3.0` as 3.
pub(crate) fn opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => integer(&n)
            .map(Some)
            .ok_or_else(|| de::Error::custom(format!("expected an integer, got {n}"))),
        Some(other) => Err(de::Error::custom(format!(
            "expected an integer, got {}",
            super::type_name(&other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_float_with_no_fraction_is_an_integer_and_one_with_a_fraction_is_not() {
        let n = |s: &str| serde_json::from_str::<Number>(s).unwrap();
        assert_eq!(integer(&n("3")), Some(3));
        assert_eq!(integer(&n("3.0")), Some(3));
        assert_eq!(integer(&n("3e0")), Some(3));
        assert_eq!(integer(&n("3.5")), None);
        assert_eq!(integer(&n("1e300")), None);
    }
}
