//! The chunked transfer coding, decoded (RFC 9112 §7.1), sans-IO.
//!
//! [`ChunkedDecoder`] is a state machine: feed it whatever bytes have arrived, in pieces of any
//! size, and it appends the chunk data to a body, tells how many input bytes it consumed and
//! whether the body is complete. It stops at the exact end of the chunked body, so bytes after
//! it (the next pipelined request) are left for the caller. It never reads past its body and
//! never holds more than the body it appends.
//!
//! The grammar is taken strictly, because two parsers that disagree on where a chunked body
//! ends are what request smuggling is made of:
//!
//! ```text
//! chunked-body   = *chunk last-chunk trailer-section CRLF
//! chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! chunk-size     = 1*HEXDIG
//! last-chunk     = 1*("0") [ chunk-ext ] CRLF
//! chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//! trailer-section = *( field-line CRLF )
//! ```
//!
//! - every line ends in CRLF: a bare LF or a CR not followed by LF is an error (RFC 9112 §2.2
//!   lets a recipient accept a bare LF; accepting one where a proxy in front does not is how
//!   bodies get split two ways);
//! - a chunk size is one or more hex digits and nothing else (no sign, no `0x`, no spaces
//!   unless a `;` extension follows), and one that does not fit in 64 bits is an error;
//! - extensions are skipped (§7.1.1 lets a recipient ignore them), but may hold no control
//!   characters other than HTAB, and a size line is at most [`MAX_LINE`] bytes;
//! - trailer fields are checked as `name ":" value` lines and discarded (§7.1.2), within
//!   [`MAX_TRAILER`] bytes;
//! - the data may not exceed the limit given to [`ChunkedDecoder::new`]: the error comes as
//!   soon as a chunk size would cross it, before its data is read.

/// The longest chunk-size line accepted, extensions included, without its CRLF.
pub(crate) const MAX_LINE: usize = 1024;
/// The most trailer bytes accepted after the last chunk.
pub(crate) const MAX_TRAILER: usize = 8 * 1024;

/// Why a chunked body was refused. Every variant answers HTTP 400, except
/// [`ChunkedError::TooLarge`] (413).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChunkedError {
    /// A chunk-size line did not start with a hex digit.
    NoSize {
        /// The byte found instead.
        found: u8,
    },
    /// A byte after the chunk size that is neither a hex digit, `;` (or the spaces before it)
    /// nor CRLF.
    BadSize {
        /// The byte found.
        found: u8,
    },
    /// The chunk size does not fit in 64 bits.
    SizeOverflow,
    /// A control character inside a chunk extension.
    BadExtension {
        /// The byte found.
        found: u8,
    },
    /// A chunk-size line longer than [`MAX_LINE`].
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// A line ended with something other than CRLF (`expected` is `\r` or `\n`).
    BadLineEnd {
        /// The byte expected.
        expected: u8,
        /// The byte found.
        found: u8,
    },
    /// Chunk data was not followed by CRLF.
    DataNotTerminated {
        /// The byte found instead of CR.
        found: u8,
    },
    /// A trailer line that is not a field line.
    BadTrailer {
        /// The byte found.
        found: u8,
    },
    /// More than [`MAX_TRAILER`] bytes of trailer fields.
    TrailerTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The data would exceed the body limit.
    TooLarge {
        /// The body limit in bytes.
        limit: u64,
    },
}

impl ChunkedError {
    /// The HTTP status that answers this error.
    pub(crate) fn status(&self) -> u16 {
        match self {
            ChunkedError::TooLarge { .. } => 413,
            _ => 400,
        }
    }
}

impl std::fmt::Display for ChunkedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChunkedError::NoSize { found } => write!(
                f,
                "a chunk-size line starts with byte 0x{found:02x}, not a hex digit"
            ),
            ChunkedError::BadSize { found } => write!(
                f,
                "byte 0x{found:02x} after a chunk size is neither a hex digit, an extension nor CRLF"
            ),
            ChunkedError::SizeOverflow => f.write_str("a chunk size does not fit in 64 bits"),
            ChunkedError::BadExtension { found } => {
                write!(f, "control byte 0x{found:02x} inside a chunk extension")
            }
            ChunkedError::LineTooLong { limit } => {
                write!(f, "a chunk-size line is longer than {limit} bytes")
            }
            ChunkedError::BadLineEnd { expected, found } => write!(
                f,
                "a chunk line ends without CRLF (expected 0x{expected:02x}, found 0x{found:02x}); bare LF is refused"
            ),
            ChunkedError::DataNotTerminated { found } => write!(
                f,
                "chunk data is followed by byte 0x{found:02x}, not CRLF: the chunk is longer than its size"
            ),
            ChunkedError::BadTrailer { found } => write!(
                f,
                "byte 0x{found:02x} in a trailer field line is not allowed"
            ),
            ChunkedError::TrailerTooLarge { limit } => {
                write!(f, "the trailer fields exceed {limit} bytes")
            }
            ChunkedError::TooLarge { limit } => {
                write!(f, "request body exceeds the limit of {limit} bytes")
            }
        }
    }
}

impl std::error::Error for ChunkedError {}

/// What one call to [`ChunkedDecoder::decode`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// Input bytes consumed. Less than the input only when `done`: the rest follows the body.
    pub(crate) consumed: usize,
    /// The last chunk and the trailer section have been read.
    pub(crate) done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// At the start of a chunk-size line.
    SizeStart,
    /// Reading hex digits.
    Size,
    /// After the size: spaces that may only come before `;`.
    SizeSpace,
    /// Inside extensions, up to CR.
    Extension,
    /// Saw CR ending the size line; LF must follow.
    SizeLf,
    /// Reading chunk data.
    Data,
    /// After the data: CR, then LF.
    DataCr,
    DataLf,
    /// At the start of a trailer line (or the final CRLF).
    TrailerStart,
    /// Inside a trailer field name.
    TrailerName,
    /// Inside a trailer field value.
    TrailerValue,
    /// Saw CR ending a trailer line; `last` says whether the line was empty.
    TrailerLf {
        last: bool,
    },
    Done,
}

/// A chunked body decoder; see the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
    /// The size being read, then the data left in the current chunk.
    size: u64,
    /// Bytes of body data so far.
    total: u64,
    limit: u64,
    /// Length of the current size line.
    line: usize,
    /// Trailer bytes so far.
    trailer: usize,
}

impl ChunkedDecoder {
    /// A decoder that refuses more than `limit` bytes of data.
    pub(crate) fn new(limit: u64) -> ChunkedDecoder {
        ChunkedDecoder {
            state: State::SizeStart,
            size: 0,
            total: 0,
            limit,
            line: 0,
            trailer: 0,
        }
    }

    /// Whether the whole body has been read.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decode what `input` holds, appending chunk data to `out`. After an error the decoder
    /// must not be used again (the framing is lost; the connection must close).
    pub(crate) fn decode(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Decoded, ChunkedError> {
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            match self.state {
                State::Done => {
                    return Ok(Decoded {
                        consumed: i,
                        done: true,
                    });
                }
                State::Data => {
                    // Whole slices at a time: this is where the bytes are.
                    let left = (input.len() - i) as u64;
                    let take = self.size.min(left) as usize;
                    out.extend_from_slice(&input[i..i + take]);
                    i += take;
                    self.size -= take as u64;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                    continue;
                }
                // Once per body: its own loop.
                State::TrailerStart
                | State::TrailerName
                | State::TrailerValue
                | State::TrailerLf { .. } => {
                    i += self.trailer_section(&input[i..])?;
                    continue;
                }
                State::DataCr => {
                    if b != b'\r' {
                        return Err(ChunkedError::DataNotTerminated { found: b });
                    }
                    self.state = State::DataLf;
                }
                State::DataLf => {
                    expect_lf(b)?;
                    self.state = State::SizeStart;
                }
                State::SizeStart => {
                    let Some(d) = hex(b) else {
                        return Err(ChunkedError::NoSize { found: b });
                    };
                    self.size = d;
                    self.line = 1;
                    self.state = State::Size;
                }
                State::Size => {
                    self.line += 1;
                    if let Some(d) = hex(b) {
                        self.size = self
                            .size
                            .checked_mul(16)
                            .and_then(|s| s.checked_add(d))
                            .ok_or(ChunkedError::SizeOverflow)?;
                    } else {
                        match b {
                            b'\r' => self.state = State::SizeLf,
                            b';' => self.state = State::Extension,
                            b' ' | b'\t' => self.state = State::SizeSpace,
                            _ => return Err(ChunkedError::BadSize { found: b }),
                        }
                    }
                }
                State::SizeSpace => {
                    self.line += 1;
                    match b {
                        b' ' | b'\t' => {}
                        b';' => self.state = State::Extension,
                        _ => return Err(ChunkedError::BadSize { found: b }),
                    }
                }
                State::Extension => {
                    self.line += 1;
                    match b {
                        b'\r' => self.state = State::SizeLf,
                        b'\t' => {}
                        0x00..=0x1f | 0x7f => return Err(ChunkedError::BadExtension { found: b }),
                        _ => {}
                    }
                }
                State::SizeLf => {
                    expect_lf(b)?;
                    self.start_chunk()?;
                }
            }
            if self.line > MAX_LINE {
                return Err(ChunkedError::LineTooLong { limit: MAX_LINE });
            }
            i += 1;
        }
        Ok(Decoded {
            consumed: i,
            done: self.state == State::Done,
        })
    }

    /// A size line has ended: its chunk's data follows, within the body limit, or the trailer
    /// section after the last chunk.
    fn start_chunk(&mut self) -> Result<(), ChunkedError> {
        if self.size == 0 {
            self.state = State::TrailerStart;
        } else {
            self.total = match self.total.checked_add(self.size) {
                Some(total) if total <= self.limit => total,
                _ => return Err(ChunkedError::TooLarge { limit: self.limit }),
            };
            self.state = State::Data;
        }
        Ok(())
    }

    /// Read the trailer section (§7.1.2: field lines, checked and discarded, then CRLF) from
    /// the start of `input`, until the body is done or `input` ends: how many bytes that took.
    fn trailer_section(&mut self, input: &[u8]) -> Result<usize, ChunkedError> {
        for (n, &b) in input.iter().enumerate() {
            match self.state {
                State::TrailerStart => match b {
                    b'\r' => self.state = State::TrailerLf { last: true },
                    _ if is_tchar(b) => self.state = State::TrailerName,
                    _ => return Err(ChunkedError::BadTrailer { found: b }),
                },
                State::TrailerName => match b {
                    b':' => self.state = State::TrailerValue,
                    _ if is_tchar(b) => {}
                    _ => return Err(ChunkedError::BadTrailer { found: b }),
                },
                State::TrailerValue => match b {
                    b'\r' => self.state = State::TrailerLf { last: false },
                    b'\t' => {}
                    0x00..=0x1f | 0x7f => return Err(ChunkedError::BadTrailer { found: b }),
                    _ => {}
                },
                State::TrailerLf { last } => {
                    expect_lf(b)?;
                    self.state = if last {
                        State::Done
                    } else {
                        State::TrailerStart
                    };
                }
                // The final CRLF has been read.
                _ => return Ok(n),
            }
            self.trailer += 1;
            if self.trailer > MAX_TRAILER {
                return Err(ChunkedError::TrailerTooLarge { limit: MAX_TRAILER });
            }
        }
        Ok(input.len())
    }
}

/// The LF after a line's CR: a CR followed by anything else is refused (see the module
/// documentation).
fn expect_lf(b: u8) -> Result<(), ChunkedError> {
    if b != b'\n' {
        return Err(ChunkedError::BadLineEnd {
            expected: b'\n',
            found: b,
        });
    }
    Ok(())
}

fn hex(b: u8) -> Option<u64> {
    char::from(b).to_digit(16).map(u64::from)
}

/// `tchar` of RFC 9110 §5.6.2.
pub(crate) fn is_tchar(b: u8) -> bool {
    matches!(b,
        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9'
        | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+'
        | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
}

/// Decode `input` one byte at a time: (body, consumed, done) or the error. The oracle the
/// unit tests and the fuzz target hold a whole-input decode to.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn decode_bytewise(
    input: &[u8],
    limit: u64,
) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode all of `input` in one piece: (body, consumed) or the error.
    fn whole(input: &[u8], limit: u64) -> Result<(Vec<u8>, usize, bool), ChunkedError> {
        let mut d = ChunkedDecoder::new(limit);
        let mut out = Vec::new();
        let r = d.decode(input, &mut out)?;
        Ok((out, r.consumed, r.done))
    }

    fn ok(input: &[u8]) -> (Vec<u8>, usize) {
        let a = whole(input, 1 << 20).unwrap();
        assert_eq!(a, decode_bytewise(input, 1 << 20).unwrap(), "{input:?}");
        assert!(a.2, "not done: {input:?}");
        (a.0, a.1)
    }

    fn err(input: &[u8]) -> ChunkedError {
        let a = whole(input, 1 << 20).unwrap_err();
        assert_eq!(a, decode_bytewise(input, 1 << 20).unwrap_err(), "{input:?}");
        a
    }

    fn partial(input: &[u8]) {
        let a = whole(input, 1 << 20).unwrap();
        assert_eq!(a, decode_bytewise(input, 1 << 20).unwrap(), "{input:?}");
        assert!(!a.2, "done early: {input:?}");
        assert_eq!(a.1, input.len());
    }

    #[test]
    fn chunks_decode_and_stop_at_the_end_of_the_body() {
        let (body, n) = ok(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET / HTTP/1.1\r\n");
        assert_eq!(body, b"abcde");
        assert_eq!(n, "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".len());
    }

    #[test]
    fn an_empty_body_is_the_last_chunk_alone() {
        assert_eq!(ok(b"0\r\n\r\n"), (Vec::new(), 5));
        assert_eq!(ok(b"000\r\n\r\n"), (Vec::new(), 7));
    }

    #[test]
    fn hex_sizes_in_either_case_and_with_leading_zeros() {
        let data = vec![b'x'; 26];
        for size in ["1a", "1A", "001a", "0000000000000001a"] {
            let mut input = format!("{size}\r\n").into_bytes();
            input.extend_from_slice(&data);
            input.extend_from_slice(b"\r\n0\r\n\r\n");
            assert_eq!(ok(&input).0, data, "{size}");
        }
    }

    #[test]
    fn extensions_are_skipped() {
        assert_eq!(ok(b"3;name=value\r\nabc\r\n0\r\n\r\n").0, b"abc");
        assert_eq!(ok(b"3 ;a\r\nabc\r\n0;last\r\n\r\n").0, b"abc");
        assert_eq!(ok(b"3\t; q=\"x y\"\r\nabc\r\n0\r\n\r\n").0, b"abc");
    }

    #[test]
    fn trailers_are_read_and_discarded() {
        assert_eq!(ok(b"3\r\nabc\r\n0\r\nX-Sum: 1\r\nY:\r\n\r\nnext").0, b"abc");
    }

    #[test]
    fn a_body_cut_short_is_never_complete() {
        for cut in [
            &b"3\r\nab"[..],
            b"3\r\nabc",
            b"3\r\nabc\r",
            b"3\r\nabc\r\n",
            b"3\r\nabc\r\n0",
            b"3\r\nabc\r\n0\r\n",
            b"3\r\nabc\r\n0\r\n\r",
            b"3\r\nabc\r\n0\r\nX: 1\r\n",
            b"",
            b"3",
            b"3;ext",
        ] {
            partial(cut);
        }
    }

    #[test]
    fn a_size_that_is_not_plain_hex_is_refused() {
        assert_eq!(err(b"-1\r\n"), ChunkedError::NoSize { found: b'-' });
        assert_eq!(err(b"+2\r\n"), ChunkedError::NoSize { found: b'+' });
        assert_eq!(err(b" 2\r\n"), ChunkedError::NoSize { found: b' ' });
        assert_eq!(err(b"\r\n"), ChunkedError::NoSize { found: b'\r' });
        assert_eq!(err(b"0x10\r\n"), ChunkedError::BadSize { found: b'x' });
        assert_eq!(err(b"2 \r\n"), ChunkedError::BadSize { found: b'\r' });
        assert_eq!(err(b"g\r\n"), ChunkedError::NoSize { found: b'g' });
        assert_eq!(err(b"1g\r\n"), ChunkedError::BadSize { found: b'g' });
    }

    #[test]
    fn a_size_beyond_64_bits_is_refused() {
        assert_eq!(err(b"10000000000000000\r\n"), ChunkedError::SizeOverflow);
        // Sixteen f's fit, but cross any body limit at once.
        assert_eq!(
            err(b"ffffffffffffffff\r\n"),
            ChunkedError::TooLarge { limit: 1 << 20 }
        );
    }

    #[test]
    fn bare_lf_and_lone_cr_are_refused_everywhere() {
        assert_eq!(
            err(b"3\nabc\r\n0\r\n\r\n"),
            ChunkedError::BadSize { found: b'\n' }
        );
        assert_eq!(
            err(b"3\r\nabc\n0\r\n\r\n"),
            ChunkedError::DataNotTerminated { found: b'\n' }
        );
        assert_eq!(
            err(b"3\r\nabc\r0\r\n\r\n"),
            ChunkedError::BadLineEnd {
                expected: b'\n',
                found: b'0'
            }
        );
        assert_eq!(err(b"0\r\n\n"), ChunkedError::BadTrailer { found: b'\n' });
        assert_eq!(
            err(b"0\r\nX: 1\n\r\n"),
            ChunkedError::BadTrailer { found: b'\n' }
        );
        assert_eq!(
            err(b"3;a\nb\r\n"),
            ChunkedError::BadExtension { found: b'\n' }
        );
        assert_eq!(
            err(b"3\r\r\n"),
            ChunkedError::BadLineEnd {
                expected: b'\n',
                found: b'\r'
            }
        );
    }

    #[test]
    fn data_longer_than_its_size_is_refused() {
        assert_eq!(
            err(b"2\r\nabc\r\n0\r\n\r\n"),
            ChunkedError::DataNotTerminated { found: b'c' }
        );
    }

    #[test]
    fn control_bytes_in_extensions_and_trailers_are_refused() {
        assert_eq!(err(b"1;\x00\r\n"), ChunkedError::BadExtension { found: 0 });
        assert_eq!(
            err(b"0\r\nX: \x7f\r\n\r\n"),
            ChunkedError::BadTrailer { found: 0x7f }
        );
        assert_eq!(
            err(b"0\r\nBad Name: 1\r\n\r\n"),
            ChunkedError::BadTrailer { found: b' ' }
        );
        assert_eq!(
            err(b"0\r\n: 1\r\n\r\n"),
            ChunkedError::BadTrailer { found: b':' }
        );
    }

    #[test]
    fn the_body_limit_is_enforced_before_the_data_arrives() {
        let mut d = ChunkedDecoder::new(4);
        let mut out = Vec::new();
        assert!(d.decode(b"4\r\nabcd\r\n", &mut out).is_ok());
        assert_eq!(
            d.decode(b"1\r\n", &mut out),
            Err(ChunkedError::TooLarge { limit: 4 })
        );
        assert_eq!(out, b"abcd");
        assert_eq!(ChunkedError::TooLarge { limit: 4 }.status(), 413);
    }

    #[test]
    fn long_size_lines_and_trailers_are_refused() {
        let mut line = b"1;".to_vec();
        line.extend(std::iter::repeat_n(b'a', MAX_LINE));
        assert_eq!(err(&line), ChunkedError::LineTooLong { limit: MAX_LINE });
        let mut trailer = b"0\r\n".to_vec();
        for _ in 0..MAX_TRAILER / 8 + 1 {
            trailer.extend_from_slice(b"X: 1234\r\n");
        }
        assert_eq!(
            err(&trailer),
            ChunkedError::TrailerTooLarge { limit: MAX_TRAILER }
        );
    }

    #[test]
    fn a_done_decoder_consumes_nothing_more() {
        let mut d = ChunkedDecoder::new(10);
        let mut out = Vec::new();
        assert!(d.decode(b"0\r\n\r\n", &mut out).unwrap().done);
        assert_eq!(
            d.decode(b"more", &mut out).unwrap(),
            Decoded {
                consumed: 0,
                done: true
            }
        );
    }
}
