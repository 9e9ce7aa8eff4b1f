//! A message body, read sans-IO within a limit, by the framing its head gave (RFC 9112 §6).
//!
//! [`BodyReader`] is fed bytes as they arrive, appends the body to a `Vec`, and stops at the
//! body's exact end, so what follows (a pipelined request) stays with the caller. A body the
//! peer stopped sending before its end is [`BodyError::Truncated`] at end of input, never a
//! complete body.

use super::BodyError;
use super::chunked::{ChunkedDecoder, Decoded};
use super::head::Framing;

/// Reads one body; see the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct BodyReader {
    state: State,
    limit: u64,
}

#[derive(Clone, Debug)]
enum State {
    Length { remaining: u64 },
    Chunked(Box<ChunkedDecoder>),
    UntilClose,
    Done,
}

impl BodyReader {
    /// A reader for `framing` that refuses more than `limit` bytes. A declared length over the
    /// limit is refused at once, before any of the body is read.
    pub(crate) fn new(framing: Framing, limit: usize) -> Result<BodyReader, BodyError> {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(n) if n > limit as u64 => {
                return Err(BodyError::TooLarge { limit });
            }
            Framing::Length(n) => State::Length { remaining: n },
            Framing::Chunked => State::Chunked(Box::new(ChunkedDecoder::new(limit as u64))),
            Framing::UntilClose => State::UntilClose,
        };
        Ok(BodyReader {
            state,
            limit: limit as u64,
        })
    }

    /// Whether the whole body has been read.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// The bytes still expected, when the framing says (for reserving memory).
    pub(crate) fn remaining(&self) -> Option<u64> {
        match &self.state {
            State::Length { remaining } => Some(*remaining),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// Take what `input` holds of the body, appending it to `out`.
    pub(crate) fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Decoded, BodyError> {
        match &mut self.state {
            State::Done => Ok(Decoded {
                consumed: 0,
                done: true,
            }),
            State::Length { remaining } => {
                let take = (*remaining).min(input.len() as u64) as usize;
                out.extend_from_slice(&input[..take]);
                *remaining -= take as u64;
                let done = *remaining == 0;
                if done {
                    self.state = State::Done;
                }
                Ok(Decoded {
                    consumed: take,
                    done,
                })
            }
            State::Chunked(decoder) => {
                let d = decoder.decode(input, out).map_err(BodyError::Chunked)?;
                if d.done {
                    self.state = State::Done;
                }
                Ok(d)
            }
            State::UntilClose => {
                if out.len() as u64 + input.len() as u64 > self.limit {
                    return Err(BodyError::TooLarge {
                        limit: self.limit as usize,
                    });
                }
                out.extend_from_slice(input);
                Ok(Decoded {
                    consumed: input.len(),
                    done: false,
                })
            }
        }
    }

    /// The peer closed: fine for a body delimited by closing, [`BodyError::Truncated`] for any
    /// other body not yet complete.
    pub(crate) fn end_of_input(&mut self) -> Result<(), BodyError> {
        if !matches!(self.state, State::Done | State::UntilClose) {
            return Err(BodyError::Truncated);
        }
        self.state = State::Done;
        Ok(())
    }
}

/// Read a whole body out of `bytes` (a message already in memory): the body and the bytes it
/// took, or why not.
pub(crate) fn read_all(
    framing: Framing,
    limit: usize,
    bytes: &[u8],
) -> Result<(Vec<u8>, usize), BodyError> {
    let mut reader = BodyReader::new(framing, limit)?;
    let mut body = Vec::with_capacity(reader.remaining().unwrap_or(0).min(limit as u64) as usize);
    let fed = reader.feed(bytes, &mut body)?;
    if !fed.done {
        reader.end_of_input()?;
    }
    Ok((body, fed.consumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_body_stops_at_its_length() {
        let (body, n) = read_all(Framing::Length(3), 10, b"abcGET").unwrap();
        assert_eq!((body.as_slice(), n), (&b"abc"[..], 3));
    }

    #[test]
    fn a_length_over_the_limit_is_refused_before_reading() {
        assert_eq!(
            BodyReader::new(Framing::Length(11), 10).unwrap_err(),
            BodyError::TooLarge { limit: 10 }
        );
        assert!(BodyReader::new(Framing::Length(10), 10).is_ok());
        assert_eq!(
            BodyReader::new(Framing::Length(u64::MAX), usize::MAX).map(|r| r.remaining()),
            Ok(Some(u64::MAX))
        );
    }

    #[test]
    fn a_short_body_is_truncated_never_complete() {
        assert_eq!(
            read_all(Framing::Length(5), 10, b"abc"),
            Err(BodyError::Truncated)
        );
        assert_eq!(
            read_all(Framing::Chunked, 10, b"5\r\nabcde\r\n"),
            Err(BodyError::Truncated)
        );
    }

    #[test]
    fn a_body_until_close_ends_at_end_of_input_within_the_limit() {
        assert_eq!(
            read_all(Framing::UntilClose, 10, b"abc"),
            Ok((b"abc".to_vec(), 3))
        );
        assert_eq!(
            read_all(Framing::UntilClose, 2, b"abc"),
            Err(BodyError::TooLarge { limit: 2 })
        );
    }

    #[test]
    fn an_empty_body_takes_nothing() {
        assert_eq!(read_all(Framing::Empty, 0, b"GET"), Ok((Vec::new(), 0)));
        assert_eq!(read_all(Framing::Length(0), 0, b"GET"), Ok((Vec::new(), 0)));
    }
}
