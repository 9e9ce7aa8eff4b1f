//! The write-ahead journal: how a run is made durable in one fsync, shared by every run
//! committed at the same moment.
//!
//! Each writer appends to its own segment files, `<runs>/.ddwire/writer-<id>.<seq>.wal`. A
//! segment starts with the 8 bytes `ddwirej2` and its sequence number (u64 LE); then come records, each one
//! run:
//!
//! ```text
//! u32 LE   body length
//! u8       state: b'C' committed, b'V' void (a run the writer could not publish)
//! u64 LE   the segment's sequence number
//! [u8; 32] SHA-256 of (the sequence number, LE, then SHA-256 of the body)
//! body     fields, each: u8 tag, u16 LE name length, name, u32 LE data length, data
//!          b'i' the run id (no data); b'f' a run file (name, content);
//!          b's' a class schema (digest, content); b'x' the index line (no name)
//! ```
//!
//! A record is valid only if its whole body is there, it names the segment's sequence number,
//! and the checksum matches, so a write torn by a crash ends the segment: that run was never
//! acknowledged. A segment file is reused once checkpointed (overwritten in place, so syncing
//! it needs no file-system metadata): records a previous use left behind name another sequence
//! number and end the segment too. The state byte is outside the checksum so that voiding a
//! record is one byte written in place. The body's hash is taken by the caller that encodes the
//! record, in parallel with other callers; the commit only seals it with the sequence
//! number.

use crate::harness::{HarnessError, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

/// The first bytes of every segment.
pub(crate) const MAGIC: &[u8; 8] = b"ddwirej2";
/// A segment's header: [`MAGIC`] and its sequence number.
pub(crate) const SEGMENT_HEADER: usize = 16;
/// The record header: length, state, sequence number, checksum.
const HEADER: usize = 4 + 1 + 8 + 32;
/// Where the state byte is, from the record's start.
const STATE_AT: u64 = 4;
/// A committed record.
const COMMITTED: u8 = b'C';
/// A record whose run was not published; replay skips it.
const VOID: u8 = b'V';
/// No record is larger: a run is at most a few request bodies and 10,000 spans.
const MAX_BODY: usize = 1 << 30;

/// The header of segment number `seq`.
pub(crate) fn segment_header(seq: u64) -> [u8; SEGMENT_HEADER] {
    let mut out = [0u8; SEGMENT_HEADER];
    out[..8].copy_from_slice(MAGIC);
    out[8..].copy_from_slice(&seq.to_le_bytes());
    out
}

/// The checksum of a record of segment `seq` whose body hashes to `body_hash`.
fn checksum(seq: u64, body_hash: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(seq.to_le_bytes());
    h.update(body_hash);
    h.finalize().into()
}

/// One run, as a journal record holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) id: String,
    /// `(file name, content)` of every file in the run directory.
    pub(crate) files: Vec<(String, Vec<u8>)>,
    /// `(digest, content)` of every class schema the run was checked against.
    pub(crate) schemas: Vec<(String, Vec<u8>)>,
    /// The run's index line, without its newline.
    pub(crate) index_line: Vec<u8>,
}

/// The bytes of one committed record, to be [`seal`]ed with its segment's number before it is
/// written.
pub(crate) fn encode(
    id: &str,
    files: &[(&str, &[u8])],
    schemas: &[(&str, &[u8])],
    index_line: &[u8],
) -> Vec<u8> {
    let field_len = |name: &str, data: &[u8]| 1 + 2 + name.len() + 4 + data.len();
    let body_len = field_len(id, b"")
        + files.iter().map(|(n, d)| field_len(n, d)).sum::<usize>()
        + schemas.iter().map(|(n, d)| field_len(n, d)).sum::<usize>()
        + field_len("", index_line);
    let mut out = Vec::with_capacity(HEADER + body_len);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.push(COMMITTED);
    out.extend_from_slice(&[0; 8 + 32]);
    let mut field = |tag: u8, name: &str, data: &[u8]| {
        out.push(tag);
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(data);
    };
    field(b'i', id, b"");
    for (name, data) in files {
        field(b'f', name, data);
    }
    for (digest, data) in schemas {
        field(b's', digest, data);
    }
    field(b'x', "", index_line);
    let body_hash = Sha256::digest(&out[HEADER..]);
    out[13..HEADER].copy_from_slice(&body_hash);
    out
}

/// Seal an [`encode`]d record for segment `seq`: its sequence number, and the checksum over it
/// and the body's hash (which `encode` left in the checksum's place).
pub(crate) fn seal(record: &mut [u8], seq: u64) {
    let sealed = checksum(seq, &record[13..HEADER]);
    record[5..13].copy_from_slice(&seq.to_le_bytes());
    record[13..HEADER].copy_from_slice(&sealed);
}

/// Mark the record at `offset` void, in place (no new space is needed, so this works on a
/// full disk). The caller syncs the file.
pub(crate) fn void(segment: &File, offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    segment.write_all_at(&[VOID], offset + STATE_AT)
}

/// What reading a segment found.
#[derive(Debug, Default)]
pub(crate) struct Segment {
    /// The segment's sequence number.
    pub(crate) seq: u64,
    /// Where the valid records end; anything after is a torn write or a previous use's.
    pub(crate) valid_len: u64,
}

/// Read every record of the segment at `path`, calling `each` with the committed ones (void
/// ones are skipped), one at a time so a large segment is never held whole.
pub(crate) fn read(path: &Path, each: impl FnMut(u64, Record) -> Result<()>) -> Result<Segment> {
    read_as(path, true, each)
}

/// [`read`], but each record's files and schemas come without their contents (empty): what a
/// checkpoint needs to know which files to sync, at no copy of the runs.
pub(crate) fn read_names(
    path: &Path,
    each: impl FnMut(u64, Record) -> Result<()>,
) -> Result<Segment> {
    read_as(path, false, each)
}

fn read_as(
    path: &Path,
    contents: bool,
    mut each: impl FnMut(u64, Record) -> Result<()>,
) -> Result<Segment> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let context = |what: &str| format!("{what} the journal {name} in the run store");
    let file = File::open(path).map_err(|e| HarnessError::io(context("opening"), e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    // Fill `buf`; `false` if the file ended first (a torn or absent record).
    let mut read_full = |buf: &mut [u8]| match reader.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(HarnessError::io(context("reading"), e)),
    };
    let mut head = [0u8; SEGMENT_HEADER];
    let mut found = Segment::default();
    // No header (a segment created and never written, a crash right after creating it) or
    // not a segment's (one whose making was cut short): it holds nothing.
    if !read_full(&mut head)? || &head[..8] != MAGIC {
        return Ok(found);
    }
    found.seq = u64::from_le_bytes(head[8..].try_into().unwrap_or_default());
    let mut offset = SEGMENT_HEADER as u64;
    let mut body = Vec::new();
    loop {
        found.valid_len = offset;
        let mut header = [0u8; HEADER];
        if !read_full(&mut header)? {
            break;
        }
        let body_len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let state = header[4];
        let seq = u64::from_le_bytes(header[5..13].try_into().unwrap_or_default());
        if body_len == 0
            || body_len > MAX_BODY
            || !matches!(state, COMMITTED | VOID)
            || seq != found.seq
        {
            break;
        }
        body.clear();
        body.resize(body_len, 0);
        if !read_full(&mut body)? {
            break;
        }
        if checksum(seq, &Sha256::digest(&body)) != header[13..HEADER] {
            break;
        }
        let Some(record) = decode(&body, contents) else {
            break;
        };
        if state == COMMITTED {
            each(offset, record)?;
        }
        offset += (HEADER + body_len) as u64;
    }
    Ok(found)
}

/// The first `n` bytes of `rest`, which moves past them; `None` if it is shorter.
fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, tail) = rest.split_at_checked(n)?;
    *rest = tail;
    Some(head)
}

fn decode(body: &[u8], contents: bool) -> Option<Record> {
    let mut record = Record::default();
    let mut rest = body;
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        let name_len = u16::from_le_bytes(take(&mut rest, 2)?.try_into().ok()?);
        let name = String::from_utf8(take(&mut rest, name_len as usize)?.to_vec()).ok()?;
        let data_len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().ok()?);
        let data = take(&mut rest, data_len as usize)?;
        // The index line is always kept: recovery needs it, and it is small.
        let data = if contents || tag == b'x' {
            data.to_vec()
        } else {
            Vec::new()
        };
        match tag {
            b'i' => record.id = name,
            b'f' => record.files.push((name, data)),
            b's' => record.schemas.push((name, data)),
            b'x' => record.index_line = data,
            _ => return None,
        }
    }
    (!record.id.is_empty()).then_some(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("ddwire-journal-{tag}-{}", crate::ids::new_uuid7()))
    }

    fn sample(id: &str, seq: u64) -> Vec<u8> {
        let mut record = encode(
            id,
            &[("envelope.json", b"{}"), ("spans.jsonl", b"")],
            &[(&"a".repeat(64), b"{\"type\": \"object\"}")],
            b"{\"invocation_id\":\"x\"}",
        );
        seal(&mut record, seq);
        record
    }

    fn ids(path: &Path) -> (Vec<(u64, String)>, Segment) {
        let mut seen = Vec::new();
        let segment = read(path, |offset, record| {
            seen.push((offset, record.id));
            Ok(())
        })
        .unwrap();
        (seen, segment)
    }

    #[test]
    fn records_read_back_and_a_void_or_torn_one_is_not_replayed() {
        let path = temp("roundtrip");
        let mut bytes = segment_header(7).to_vec();
        let first = sample("one", 7);
        let second = sample("two", 7);
        let third = sample("three", 7);
        bytes.extend_from_slice(&first);
        bytes.extend_from_slice(&second);
        bytes.extend_from_slice(&third[..third.len() - 1]);
        let mut file = File::create(&path).unwrap();
        file.write_all(&bytes).unwrap();
        void(&file, (SEGMENT_HEADER + first.len()) as u64).unwrap();

        let mut seen = Vec::new();
        let segment = read(&path, |offset, record| {
            seen.push((offset, record));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 1, "the void record is skipped");
        assert_eq!(seen[0].0, SEGMENT_HEADER as u64);
        let record = &seen[0].1;
        assert_eq!(record.id, "one");
        assert_eq!(
            record.files,
            vec![
                ("envelope.json".to_string(), b"{}".to_vec()),
                ("spans.jsonl".to_string(), Vec::new())
            ]
        );
        assert_eq!(record.schemas[0].1, b"{\"type\": \"object\"}");
        assert_eq!(record.index_line, b"{\"invocation_id\":\"x\"}");
        assert_eq!(segment.seq, 7);
        assert_eq!(
            segment.valid_len,
            (SEGMENT_HEADER + first.len() + second.len()) as u64
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_record_whose_bytes_changed_ends_the_segment() {
        let path = temp("corrupt");
        let mut bytes = segment_header(1).to_vec();
        let mut record = sample("one", 1);
        let last = record.len() - 3;
        record[last] ^= 1;
        bytes.extend_from_slice(&record);
        bytes.extend_from_slice(&sample("two", 1));
        std::fs::write(&path, &bytes).unwrap();
        assert!(ids(&path).0.is_empty());
        std::fs::write(&path, b"").unwrap();
        assert!(ids(&path).0.is_empty());
        // A file whose making was cut short (zeros, no header yet) holds nothing.
        std::fs::write(&path, [0u8; 64]).unwrap();
        assert!(ids(&path).0.is_empty());
        std::fs::remove_file(&path).unwrap();
    }

    /// A reused segment keeps its previous use's records past the new ones: they name another
    /// sequence number, so reading stops where the new records end.
    #[test]
    fn a_reused_segment_ends_where_its_own_records_end() {
        let path = temp("reused");
        let mut old = segment_header(3).to_vec();
        for id in ["a", "b", "c", "d"] {
            old.extend_from_slice(&sample(id, 3));
        }
        let mut file = File::create(&path).unwrap();
        file.write_all(&old).unwrap();
        // Reused as segment 9: a new header and one record, over the old bytes.
        use std::os::unix::fs::FileExt;
        file.write_all_at(&segment_header(9), 0).unwrap();
        file.write_all_at(&sample("e", 9), SEGMENT_HEADER as u64)
            .unwrap();
        let (seen, segment) = ids(&path);
        assert_eq!(seen, vec![(SEGMENT_HEADER as u64, "e".to_string())]);
        assert_eq!(segment.seq, 9);
        // A record sealed for another segment is not this one's.
        let mut stray = segment_header(9).to_vec();
        stray.extend_from_slice(&sample("f", 8));
        std::fs::write(&path, &stray).unwrap();
        assert!(ids(&path).0.is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
