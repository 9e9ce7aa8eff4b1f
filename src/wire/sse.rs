//! Server-Sent Events (WHATWG HTML §9.2), the framing AG-UI runs over.
//!
//! Each event is one `data:` line holding single-line JSON, ended by a blank line, with LF
//! line ends only: `@ag-ui/client` splits events on `\n\n` and fails on CRLF, and this is
//! exactly what ag-ui-protocol's Python `EventEncoder` writes. Comment lines (`: …`) keep a
//! connection alive through proxies and are ignored by every client.

/// The content type of an event stream.
pub(crate) const CONTENT_TYPE: &str = "text/event-stream";

/// One event: `data: <json>\n\n`. The JSON must be a single line (serde_json's compact output
/// always is).
pub(crate) fn event(json: &str) -> Vec<u8> {
    debug_assert!(
        !json.contains('\n'),
        "an SSE data line must not contain a newline"
    );
    let mut out = Vec::with_capacity(json.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(b"\n\n");
    out
}

/// A comment line, ignored by clients: `: <text>\n\n`.
pub(crate) fn comment(text: &str) -> Vec<u8> {
    format!(": {}\n\n", text.replace('\n', " ")).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_lf_framed_data_lines_and_comments_are_ignored() {
        let mut stream = event(r#"{"type":"RUN_STARTED"}"#);
        stream.extend(comment("keep-alive"));
        stream.extend(event(r#"{"type":"RUN_FINISHED"}"#));
        let text = String::from_utf8(stream).unwrap();
        assert_eq!(
            text,
            "data: {\"type\":\"RUN_STARTED\"}\n\n: keep-alive\n\ndata: {\"type\":\"RUN_FINISHED\"}\n\n"
        );
        assert!(!text.contains('\r'));
    }
}
