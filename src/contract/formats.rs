//! The string formats the contract pins (SHA-256 hex, policy bundle references, IRIs,
//! semantic versions, Python's whitespace), checked without a regex engine.
//!
//! Each format is written twice on purpose: as the JSON Schema `pattern` the contract's schemas
//! carry (what a Python reader checks), and as a plain function here (what ddwire's hot paths
//! call). A test runs both over one corpus, and checks the schemas carry exactly these
//! patterns, so they cannot drift. UUIDv7 lives in [`crate::ids`], beside the generator.

use crate::ids::is_lower_hex;

/// SHA-256 as 64 lowercase hex digits: `^[0-9a-f]{64}$`.
pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && is_lower_hex(s)
}

/// A `policy_bundle_ref`, `profile:<id>@v<version>`: `^profile:[a-z0-9][a-z0-9.-]*@v[0-9]+$`.
pub(crate) fn is_policy_bundle_ref(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("profile:") else {
        return false;
    };
    let Some((id, version)) = rest.rsplit_once("@v") else {
        return false;
    };
    let id_ok = id
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    id_ok && !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit())
}

/// A `Principal.principal_id`, an absolute IRI: `scheme:rest` with a lowercase scheme and no
/// whitespace in the rest (`^[a-z][a-z0-9+.-]*:\S+$`).
pub(crate) fn is_iri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase())
        && scheme.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'.' | b'-')
        })
        && !rest.is_empty()
        && !rest.chars().any(is_py_space)
}

/// A `contract_version` as numbers, if `s` is a strict semantic version `X.Y.Z` (no leading
/// zeros): `^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`.
pub(crate) fn parse_semver(s: &str) -> Option<(u64, u64, u64)> {
    let mut parts = s.split('.');
    let mut next = || -> Option<u64> {
        let p = parts.next()?;
        let ok = !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && (p == "0" || !p.starts_with('0'));
        if ok { p.parse().ok() } else { None }
    };
    let v = (next()?, next()?, next()?);
    parts.next().is_none().then_some(v)
}

/// Python's `str.isspace()`, which is what `\s` means in the reference's regexes: Unicode
/// White_Space plus the four ASCII separators U+001C..U+001F.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether `s` has a non-whitespace character (the pattern `\S` on `Principal.name`).
pub(crate) fn has_non_space(s: &str) -> bool {
    s.chars().any(|c| !is_py_space(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check here, as a function of the text.
    type Check = fn(&str) -> bool;

    /// The patterns the contract's schemas carry, one per function here.
    const PATTERNS: [(&str, Check); 5] = [
        (
            "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
            crate::ids::is_uuid7,
        ),
        ("^[0-9a-f]{64}$", is_sha256_hex),
        (
            "^profile:[a-z0-9][a-z0-9.-]*@v[0-9]+$",
            is_policy_bundle_ref,
        ),
        (r"^[a-z][a-z0-9+.-]*:\S+$", is_iri),
        (
            r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$",
            |s| parse_semver(s).is_some(),
        ),
    ];

    #[test]
    fn each_format_function_accepts_exactly_what_its_schema_pattern_accepts() {
        let corpus = [
            "",
            "0",
            "00",
            "1.2.3",
            "01.2.3",
            "1.2",
            "10.20.30",
            "1.2.3.4",
            "1.2.x",
            "0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5a",
            "0190b3c2-6a4e-4c3b-8a1d-6f0e2d3c4b5a",
            "0190b3c2-6a4e-7c3b-ca1d-6f0e2d3c4b5a",
            "0190B3C2-6A4E-7C3B-8A1D-6F0E2D3C4B5A",
            "0190b3c2-6a4e-7c3b-8a1d-6f0e2d3c4b5",
            "0190b3c2x6a4e-7c3b-8a1d-6f0e2d3c4b5a",
            &"a".repeat(64),
            &"a".repeat(63),
            &"A".repeat(64),
            &"g".repeat(64),
            "profile:default@v1",
            "profile:test-restrictive@v2",
            "profile:Default@v1",
            "profile:default@v",
            "profile:-x@v1",
            "profile:a.b@v10",
            "default@v1",
            "https://orcid.org/0000-0002-1825-0097",
            "urn:dd:role:data-steward",
            "https:",
            "Https://x",
            "https://a b",
            "https://a\u{a0}b",
            "a+b.c-d:x",
            "1a:x",
        ];
        for (pattern, function) in PATTERNS {
            let regex = crate::contract::pattern::Regex::new(pattern).unwrap();
            for text in corpus {
                assert_eq!(
                    function(text),
                    regex.is_match(text),
                    "{pattern} on {text:?}"
                );
            }
        }
    }

    #[test]
    fn the_contract_schemas_carry_exactly_these_patterns() {
        let mut carried = std::collections::BTreeSet::new();
        fn walk(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    if let Some(serde_json::Value::String(p)) = m.get("pattern") {
                        out.insert(p.clone());
                    }
                    m.values().for_each(|v| walk(v, out));
                }
                serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        for schema in [
            crate::contract::validate::request_schema(),
            crate::contract::validate::agent_result_schema(),
            crate::contract::validate::envelope_schema(),
        ] {
            walk(&schema, &mut carried);
        }
        carried.remove(r"\S"); // Principal.name: checked by has_non_space
        let ours: std::collections::BTreeSet<String> =
            PATTERNS.iter().map(|(p, _)| p.to_string()).collect();
        assert_eq!(carried, ours);
    }

    #[test]
    fn semver_is_strict_x_y_z() {
        assert_eq!(parse_semver("0.7.0"), Some((0, 7, 0)));
        assert_eq!(parse_semver("10.20.30"), Some((10, 20, 30)));
        for bad in ["0.6", "01.2.3", "1.2.3.4", "1.2.x", "", "1..2"] {
            assert_eq!(parse_semver(bad), None, "{bad}");
        }
    }

    #[test]
    fn principal_id_must_be_an_absolute_iri_without_spaces() {
        assert!(is_iri("https://orcid.org/0000-0002-1825-0097"));
        assert!(is_iri("urn:dd:role:data-steward"));
        assert!(!is_iri("0000-0002-1825-0097"));
        assert!(!is_iri("https://orcid.org/0000 0002"));
        assert!(!is_iri("Https://x"));
        assert!(!is_iri("https:"));
    }

    #[test]
    fn policy_bundle_ref_names_a_profile_and_its_version() {
        assert!(is_policy_bundle_ref("profile:test-restrictive@v2"));
        assert!(is_policy_bundle_ref("profile:default@v1"));
        assert!(!is_policy_bundle_ref("profile:Default@v1"));
        assert!(!is_policy_bundle_ref("profile:default@v"));
        assert!(!is_policy_bundle_ref("default@v1"));
    }
}
