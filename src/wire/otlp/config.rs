//! Where and how to export: the OTLP exporter's configuration, from flags and the standard
//! `OTEL_*` variables.
//!
//! Follows the OpenTelemetry specification's "OpenTelemetry Protocol Exporter"
//! (`specification/protocol/exporter.md`) and "Environment Variable Specification" for the
//! variables below; a flag beats a variable, a traces-specific variable beats a generic one.
//!
//! | setting | flags | variables | default |
//! |---|---|---|---|
//! | endpoint | `--otlp-traces-endpoint URL` (as is), `--otlp-endpoint URL` (base: `/v1/traces` appended) | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is), `OTEL_EXPORTER_OTLP_ENDPOINT` (base) | none: no export |
//! | protocol | `--otlp-protocol http/json\|http/protobuf` | `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` |
//! | headers | `--otlp-header K=V` (repeatable, taken literally) | `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_HEADERS` (`k=v,k2=v2`, values percent-decoded) | none |
//! | timeout | | `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds) | 10 s |
//! | resource | | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`, values percent-decoded) | |
//! | off | | `OTEL_TRACES_EXPORTER=none` turns off export configured by variables | |
//!
//! An `https` endpoint is called over TLS with the process's trust (`--ca-file`, see
//! `wire::tls`), and refused in a build without the `tls` feature.
//!
//! Left out, and said so when set: gRPC (`grpc` is refused: OTLP/HTTP only), and compression
//! (`OTEL_EXPORTER_OTLP_COMPRESSION=gzip` is noted, and the body sent uncompressed, which every
//! receiver accepts).

use super::OtlpError;
use crate::trace::otlp::{Encoding, ExportResource, Scope};
use crate::trace::record::Attributes;
use std::time::Duration;

/// What the command line said about export; every field may be absent.
#[derive(Clone, Debug, Default)]
pub(crate) struct OtlpFlags {
    /// `--otlp-endpoint`: a base URL, `/v1/traces` is appended.
    pub(crate) endpoint: Option<String>,
    /// `--otlp-traces-endpoint`: the full URL, used as it is.
    pub(crate) traces_endpoint: Option<String>,
    /// `--otlp-protocol`.
    pub(crate) protocol: Option<String>,
    /// `--otlp-header K=V`, each as given.
    pub(crate) headers: Vec<String>,
}

/// Everything the exporter needs: a resolved, checked configuration.
#[derive(Clone, Debug)]
pub struct OtlpConfig {
    /// The full URL requests are POSTed to.
    pub(crate) endpoint: String,
    /// `http/protobuf` or `http/json`.
    pub(crate) encoding: Encoding,
    /// Extra request headers, in order (`Content-Type` is the encoding's own).
    pub(crate) headers: Vec<(String, String)>,
    /// Each request must finish within this.
    pub(crate) timeout: Duration,
    /// What the exporter adds to the stored resources.
    pub(crate) resource: ExportResource,
    /// The instrumentation scope spans are listed under.
    pub(crate) scope: Scope,
    /// Settings that were given but are not honoured, one sentence each, for the log.
    pub(crate) notes: Vec<String>,
}

/// The default request timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`'s default, 10 s).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The path a generic endpoint gets for traces (specification.md §"OTLP/HTTP Request").
pub(crate) const TRACES_PATH: &str = "v1/traces";

impl OtlpConfig {
    /// A configuration that sends `encoding` to `endpoint` (a full URL, used as it is), with
    /// the stored resources as they are and ddwire's scope.
    pub fn new(endpoint: &str, encoding: Encoding) -> Result<OtlpConfig, OtlpError> {
        Ok(OtlpConfig {
            endpoint: checked_url(endpoint, "endpoint")?,
            encoding,
            headers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            resource: ExportResource::default(),
            scope: Scope::ddwire(),
            notes: Vec::new(),
        })
    }

    /// Resolve the flags and the `OTEL_*` variables `env` returns (empty values count as
    /// unset). `None` when no endpoint is configured, or variables configure one and
    /// `OTEL_TRACES_EXPORTER=none` turns it off.
    ///
    /// `local` names the exporting program's own spans and identity (see [`ExportResource`]):
    /// the `service.name` they were stored under, and the `service.instance.id` of this
    /// process, if it is the one that made them.
    pub(crate) fn resolve(
        flags: &OtlpFlags,
        env: &dyn Fn(&str) -> Option<String>,
        local: Local<'_>,
    ) -> Result<Option<OtlpConfig>, OtlpError> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let Some(endpoint) = endpoint(flags, &env)? else {
            return Ok(None);
        };
        let encoding = encoding(flags, &env)?;
        let headers = headers(flags, &env)?;
        let timeout = match [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]
        .into_iter()
        .find_map(|name| env(name).map(|v| (name, v)))
        {
            None => DEFAULT_TIMEOUT,
            Some((name, value)) => match value.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => {
                    return Err(OtlpError::Config {
                        setting: name.into(),
                        value,
                        reason: "expected a positive number of milliseconds".into(),
                    });
                }
            },
        };

        let mut notes = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ] {
            if let Some(value) = env(name).filter(|v| v.trim() != "none") {
                notes.push(format!(
                    "{name}={value} is not supported: OTLP requests are sent uncompressed"
                ));
                break;
            }
        }

        let resource = resource_from_env(&env, local)?;
        Ok(Some(OtlpConfig {
            endpoint,
            encoding,
            headers,
            timeout,
            resource,
            scope: Scope::ddwire(),
            notes,
        }))
    }
}

/// The traces URL: `--otlp-traces-endpoint` as is, else `--otlp-endpoint` with `/v1/traces`,
/// else the same from the `OTEL_*` variables. `None` when none is set, or
/// `OTEL_TRACES_EXPORTER=none` turns the variables' off.
fn endpoint(
    flags: &OtlpFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, OtlpError> {
    Ok(Some(if let Some(url) = &flags.traces_endpoint {
        checked_url(url, "--otlp-traces-endpoint")?
    } else if let Some(url) = &flags.endpoint {
        traces_url(url, "--otlp-endpoint")?
    } else {
        let off = env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none");
        match (
            env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            env("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            _ if off => return Ok(None),
            (Some(url), _) => checked_url(url.trim(), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?,
            (None, Some(url)) => traces_url(url.trim(), "OTEL_EXPORTER_OTLP_ENDPOINT")?,
            (None, None) => return Ok(None),
        }
    }))
}

/// The encoding `--otlp-protocol` or the `OTEL_*` protocol variables ask for: protobuf by
/// default, as the OTLP exporter specification's default is.
fn encoding(
    flags: &OtlpFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Encoding, OtlpError> {
    Ok(
        match flags
            .protocol
            .clone()
            .map(|p| ("--otlp-protocol", p))
            .or_else(|| {
                [
                    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                    "OTEL_EXPORTER_OTLP_PROTOCOL",
                ]
                .into_iter()
                .find_map(|name| env(name).map(|v| (name, v)))
            }) {
            None => Encoding::Protobuf,
            Some((setting, value)) => {
                Encoding::from_protocol(value.trim()).ok_or_else(|| OtlpError::Config {
                    setting: setting.into(),
                    value: value.clone(),
                    reason: if value.trim() == "grpc" {
                        "ddwire exports over OTLP/HTTP only; use http/protobuf or http/json".into()
                    } else {
                        "expected http/protobuf or http/json".into()
                    },
                })?
            }
        },
    )
}

/// The headers every export request carries: the generic `OTEL_*` headers, then the
/// traces-specific ones, then `--otlp-header`; a later one replaces a header of the same name
/// (compared without case).
fn headers(
    flags: &OtlpFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, OtlpError> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        if let Some(value) = env(name) {
            for (k, v) in parse_key_values(&value, name)? {
                set_header(&mut headers, checked_header(k, v, name)?);
            }
        }
    }
    for given in &flags.headers {
        let (k, v) = given.split_once('=').ok_or_else(|| OtlpError::Config {
            setting: "--otlp-header".into(),
            value: given.clone(),
            reason: "expected NAME=VALUE".into(),
        })?;
        set_header(
            &mut headers,
            checked_header(k.trim().to_string(), v.trim().to_string(), "--otlp-header")?,
        );
    }
    Ok(headers)
}

/// Who the exporting program is, for [`OtlpConfig::resolve`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Local<'a> {
    /// The `service.name` its own spans were stored under (`ddwire-harness`).
    pub(crate) service: Option<&'a str>,
    /// This process's `service.instance.id`, when it is the process that made those spans.
    pub(crate) instance_id: Option<&'a str>,
}

/// The exporter's additions to the stored resources (see [`ExportResource`]), from
/// `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` as `env` returns them: `service.*` keys
/// name the exporting program (`OTEL_SERVICE_NAME` first, then `OTEL_RESOURCE_ATTRIBUTES`,
/// then ddwire's version and `local`'s instance id), every other `OTEL_RESOURCE_ATTRIBUTES`
/// key goes to every resource that lacks it.
pub(crate) fn resource_from_env(
    env: &dyn Fn(&str) -> Option<String>,
    local: Local<'_>,
) -> Result<ExportResource, OtlpError> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let mut own = Attributes::default();
    let mut common = Attributes::default();
    if let Some(value) = env("OTEL_RESOURCE_ATTRIBUTES") {
        for (k, v) in parse_key_values(&value, "OTEL_RESOURCE_ATTRIBUTES")? {
            if k.starts_with("service.") {
                own.set(k, v);
            } else {
                common.set(k, v);
            }
        }
    }
    if let Some(name) = env("OTEL_SERVICE_NAME") {
        own.set("service.name", name.trim());
    }
    if own.get("service.version").is_none() {
        own.set("service.version", env!("CARGO_PKG_VERSION"));
    }
    if let Some(id) = local.instance_id
        && own.get("service.instance.id").is_none()
    {
        own.set("service.instance.id", id);
    }
    Ok(ExportResource {
        local_service: local.service.map(str::to_string),
        local: own,
        common,
    })
}

/// A random UUID (version 4, RFC 9562 §5.4): a fresh `service.instance.id` for this process.
pub(crate) fn new_instance_id() -> String {
    let mut b = [0u8; 16];
    crate::ids::random_bytes(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::ids::hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Check an endpoint URL: `http(s)://host[:port][/path]` (`https` only in a build with TLS),
/// refusing anything that is not an absolute URL with a host.
fn checked_url(url: &str, setting: &str) -> Result<String, OtlpError> {
    let bad = |reason: &str| OtlpError::Config {
        setting: setting.into(),
        value: url.into(),
        reason: reason.into(),
    };
    let https = crate::wire::tls::is_https(url);
    if https && !cfg!(feature = "tls") {
        return Err(bad(crate::wire::tls::NOT_BUILT));
    }
    let rest = if https {
        &url[8..]
    } else {
        url.get(..7)
            .filter(|s| s.eq_ignore_ascii_case("http://"))
            .map(|_| &url[7..])
            .ok_or_else(|| bad("expected an http:// or https:// URL"))?
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err(bad("the URL has no host"));
    }
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad("the URL contains spaces or control characters"));
    }
    Ok(url.to_string())
}

/// A generic endpoint's traces URL: `v1/traces` appended to its path, with one `/` between
/// (exporter.md §"Endpoint URLs for OTLP/HTTP": `http://c:4318` and `http://c:4318/` give
/// `http://c:4318/v1/traces`, `http://c:4318/base` gives `http://c:4318/base/v1/traces`).
fn traces_url(base: &str, setting: &str) -> Result<String, OtlpError> {
    let base = checked_url(base, setting)?;
    if base.contains(['?', '#']) {
        return Err(OtlpError::Config {
            setting: setting.into(),
            value: base,
            reason: "a base endpoint takes no query or fragment; give the full URL as the traces endpoint".into(),
        });
    }
    let sep = if base.ends_with('/') { "" } else { "/" };
    Ok(format!("{base}{sep}{TRACES_PATH}"))
}

/// Parse `k=v,k2=v2` as the OTLP exporter reads `OTEL_EXPORTER_OTLP_HEADERS` and the SDK
/// `OTEL_RESOURCE_ATTRIBUTES` (the W3C Baggage format without properties): members split on
/// `,`, blank ones skipped, key and value trimmed, the value percent-decoded. A member
/// without `=` or with an empty key, or a bad `%` escape, refuses the whole value.
fn parse_key_values(value: &str, setting: &str) -> Result<Vec<(String, String)>, OtlpError> {
    let bad = |reason: String| OtlpError::Config {
        setting: setting.into(),
        value: value.into(),
        reason,
    };
    let mut out = Vec::new();
    for member in value.split(',') {
        if member.trim().is_empty() {
            continue;
        }
        let (k, v) = member
            .split_once('=')
            .ok_or_else(|| bad(format!("{:?} is not KEY=VALUE", member.trim())))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(bad(format!("{:?} has an empty key", member.trim())));
        }
        let v = crate::text::percent_decode(v.trim(), false)
            .ok_or_else(|| bad(format!("the value of {k:?} has a bad % escape")))?;
        out.push((k.to_string(), v));
    }
    Ok(out)
}

/// A header a user gave: a token name (RFC 9110 §5.1) and a value of visible characters,
/// spaces and tabs (§5.5), so nothing can smuggle a line break into the request.
fn checked_header(
    name: String,
    value: String,
    setting: &str,
) -> Result<(String, String), OtlpError> {
    let tchar = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c);
    let reason = if name.is_empty() || !name.bytes().all(tchar) {
        "a header name must be an HTTP token (letters, digits, !#$%&'*+-.^_`|~)"
    } else if value.bytes().any(|c| (c < b' ' && c != b'\t') || c == 0x7f) {
        "a header value may not contain control characters or line breaks"
    } else if name.eq_ignore_ascii_case("content-type")
        || name.eq_ignore_ascii_case("content-length")
    {
        "Content-Type and Content-Length follow from the protocol and the body"
    } else {
        return Ok((name, value));
    };
    Err(OtlpError::Config {
        setting: setting.into(),
        value: format!("{name}=…"),
        reason: reason.into(),
    })
}

fn set_header(headers: &mut Vec<(String, String)>, (name, value): (String, String)) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
    headers.push((name, value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::record::AttrValue;

    fn resolve(flags: &OtlpFlags, vars: &[(&str, &str)]) -> Result<Option<OtlpConfig>, OtlpError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        OtlpConfig::resolve(flags, &env, Local::default())
    }

    fn endpoint(flags: &OtlpFlags, vars: &[(&str, &str)]) -> String {
        resolve(flags, vars).unwrap().unwrap().endpoint
    }

    #[test]
    fn a_generic_endpoint_gets_v1_traces_and_a_traces_endpoint_is_used_as_it_is() {
        let none = OtlpFlags::default();
        for (base, url) in [
            ("http://c:4318", "http://c:4318/v1/traces"),
            ("http://c:4318/", "http://c:4318/v1/traces"),
            ("http://c:4318/base", "http://c:4318/base/v1/traces"),
            ("http://c:4318/base/", "http://c:4318/base/v1/traces"),
        ] {
            assert_eq!(
                endpoint(&none, &[("OTEL_EXPORTER_OTLP_ENDPOINT", base)]),
                url
            );
            let flags = OtlpFlags {
                endpoint: Some(base.into()),
                ..OtlpFlags::default()
            };
            assert_eq!(endpoint(&flags, &[]), url);
        }
        assert_eq!(
            endpoint(
                &none,
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
                    (
                        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                        "http://t:6006/custom/path"
                    ),
                ]
            ),
            "http://t:6006/custom/path"
        );
    }

    #[test]
    fn flags_beat_variables_and_no_endpoint_means_no_export() {
        assert!(resolve(&OtlpFlags::default(), &[]).unwrap().is_none());
        let vars = [
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://env:1/v1/traces",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ];
        let flags = OtlpFlags {
            endpoint: Some("http://flag:2".into()),
            protocol: Some("http/protobuf".into()),
            ..OtlpFlags::default()
        };
        let config = resolve(&flags, &vars).unwrap().unwrap();
        assert_eq!(config.endpoint, "http://flag:2/v1/traces");
        assert_eq!(config.encoding, Encoding::Protobuf);
        let config = resolve(&OtlpFlags::default(), &vars).unwrap().unwrap();
        assert_eq!(config.endpoint, "http://env:1/v1/traces");
        assert_eq!(config.encoding, Encoding::Json);
        // The default protocol is http/protobuf, as the exporter spec recommends.
        let config = resolve(&OtlpFlags::default(), &vars[..1]).unwrap().unwrap();
        assert_eq!(config.encoding, Encoding::Protobuf);
        // OTEL_TRACES_EXPORTER=none turns off what variables configure, not what flags do.
        let off = [vars[0], ("OTEL_TRACES_EXPORTER", "none")];
        assert!(resolve(&OtlpFlags::default(), &off).unwrap().is_none());
        assert!(resolve(&flags, &off).unwrap().is_some());
    }

    #[test]
    fn headers_merge_generic_then_traces_then_flags_and_values_from_variables_are_percent_decoded()
    {
        let flags = OtlpFlags {
            endpoint: Some("http://c:4318".into()),
            headers: vec![
                "X-Flag = literal%20kept".into(),
                "authorization=Bearer flag".into(),
            ],
            ..OtlpFlags::default()
        };
        let config = resolve(
            &flags,
            &[
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "Authorization=Bearer%20env, x-tenant = a%2Cb ,",
                ),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=traces"),
            ],
        )
        .unwrap()
        .unwrap();
        let headers: Vec<(&str, &str)> = config
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("x-tenant", "traces"),
                ("X-Flag", "literal%20kept"),
                ("authorization", "Bearer flag"),
            ]
        );
    }

    #[test]
    fn settings_that_cannot_work_are_refused_with_the_setting_and_the_reason() {
        let with = |vars: &[(&str, &str)]| {
            resolve(&OtlpFlags::default(), vars)
                .unwrap_err()
                .to_string()
        };
        let url = |u: &str| {
            let flags = OtlpFlags {
                traces_endpoint: Some(u.into()),
                ..OtlpFlags::default()
            };
            resolve(&flags, &[]).unwrap_err().to_string()
        };
        if !cfg!(feature = "tls") {
            assert!(url("https://c/v1/traces").contains("no TLS"));
        }
        assert!(url("c:4318").contains("http://"));
        assert!(url("http:///v1/traces").contains("no host"));
        assert!(url("http://c/a b").contains("spaces"));
        let e = with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c?x=1")]);
        assert!(e.contains("query"), "{e}");
        let e = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(
            e.contains("OTLP/HTTP only") && e.contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
            "{e}"
        );
        let e = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
        ]);
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x=a%0d%0aEvil: 1"),
        ]);
        assert!(e.contains("line breaks"), "{e}");
        let e = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x=%zz"),
        ]);
        assert!(e.contains("% escape"), "{e}");
        let e = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ]);
        assert!(e.contains("milliseconds"), "{e}");
        let e = with(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
            ("OTEL_RESOURCE_ATTRIBUTES", "=x"),
        ]);
        assert!(e.contains("empty key"), "{e}");
        let flags = OtlpFlags {
            endpoint: Some("http://c".into()),
            headers: vec!["Content-Type=text/plain".into()],
            ..OtlpFlags::default()
        };
        assert!(
            resolve(&flags, &[])
                .unwrap_err()
                .to_string()
                .contains("Content-Type")
        );
        // Compression is noted, not refused: every receiver takes an uncompressed body.
        let config = resolve(
            &OtlpFlags::default(),
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(config.notes.len(), 1);
        assert_eq!(config.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn the_service_name_variable_beats_the_resource_attributes_and_service_keys_name_only_the_local_program()
     {
        let env = |name: &str| match name {
            "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://c".to_string()),
            "OTEL_SERVICE_NAME" => Some("prod-harness".to_string()),
            "OTEL_RESOURCE_ATTRIBUTES" => Some(
                "service.name=ignored, deployment.environment=prod,team=data%20director"
                    .to_string(),
            ),
            _ => None,
        };
        let local = Local {
            service: Some("ddwire-harness"),
            instance_id: Some("i-1"),
        };
        let config = OtlpConfig::resolve(&OtlpFlags::default(), &env, local)
            .unwrap()
            .unwrap();
        let r = &config.resource;
        assert_eq!(r.local_service.as_deref(), Some("ddwire-harness"));
        let s = |v: &str| Some(AttrValue::from(v));
        assert_eq!(r.local.get("service.name").cloned(), s("prod-harness"));
        assert_eq!(
            r.local.get("service.version").cloned(),
            s(env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(r.local.get("service.instance.id").cloned(), s("i-1"));
        assert_eq!(r.common.get("deployment.environment").cloned(), s("prod"));
        assert_eq!(r.common.get("team").cloned(), s("data director"));
        assert_eq!(r.common.get("service.name"), None);
    }

    #[test]
    fn an_instance_id_is_a_version_4_uuid() {
        let id = new_instance_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
        assert_ne!(id, new_instance_id());
    }
}
