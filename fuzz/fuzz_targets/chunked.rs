//! The chunked decoder alone: whatever the bytes, it never panics, never consumes more than
//! it is given, never exceeds its limit, and decodes the same at once as byte by byte.
#![no_main]

use ddwire::wire::http::chunked::{ChunkedDecoder, ChunkedError};
use libfuzzer_sys::fuzz_target;

fn whole(input: &[u8], limit: u64) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
    let mut d = ChunkedDecoder::new(limit);
    let mut out = Vec::new();
    let r = d.decode(input, &mut out)?;
    assert!(r.consumed <= input.len());
    assert_eq!(r.done, d.is_done());
    if !r.done {
        assert_eq!(r.consumed, input.len());
    }
    Ok((out, r.consumed, r.done))
}

fn bytewise(input: &[u8], limit: u64) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
    let mut d = ChunkedDecoder::new(limit);
    let mut out = Vec::new();
    let mut consumed = 0;
    for b in input {
        let r = d.decode(std::slice::from_ref(b), &mut out)?;
        consumed += r.consumed;
        if r.done {
            return Ok((out, consumed, true));
        }
    }
    Ok((out, consumed, false))
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limit = [0u64, 1, 7, 4096][usize::from(selector & 3)];
    let a = whole(input, limit);
    assert_eq!(a, bytewise(input, limit));
    if let Ok((body, _, _)) = a {
        assert!(body.len() as u64 <= limit);
    }
});
