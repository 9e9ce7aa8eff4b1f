//! The write-ahead journal: how a run is made durable in one fsync, shared by every run
//! committed at the same moment.
//!
//! Each writer appends to its own segment files, `<runs>/.ddwire/writer-<id>.<seq>.wal`. A
//! segment starts with the 8 bytes [`MAGIC`]; then come records, each one run:
//!
//! ```text
//! u32 LE   body length
//! u8       state: b'C' committed, b'V' void (a run the writer could not publish)
//! [u8; 32] SHA-256 of the body
//! body     fields, each: u8 tag, u16 LE name length, name, u32 LE data length, data
//!          b'i' the run id (no data); b'f' a run file (name, content);
//!          b's' a class schema (digest, content); b'x' the index line (no name)
//! ```
//!
//! A record is valid only if its whole body is there and hashes to its checksum, so a write
//! torn by a crash ends the segment: that run was never acknowledged. The state byte is
//! outside the checksum so that voiding a record is one byte written in place.

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

/// The first bytes of every segment.
pub(crate) const MAGIC: &[u8; 8] = b"ddwirej1";
/// The record header: length, state, checksum.
const HEADER: usize = 4 + 1 + 32;
/// Where the state byte is, from the record's start.
const STATE_AT: u64 = 4;
/// A committed record.
const COMMITTED: u8 = b'C';
/// A record whose run was not published; replay skips it.
const VOID: u8 = b'V';
/// No record is larger: a run is at most a few request bodies and 10,000 spans.
const MAX_BODY: usize = 1 << 30;

/// One run, as a journal record holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Record {
    pub id: String,
    /// `(file name, content)` of every file in the run directory.
    pub files: Vec<(String, Vec<u8>)>,
    /// `(digest, content)` of every class schema the run was checked against.
    pub schemas: Vec<(String, Vec<u8>)>,
    /// The run's index line, without its newline.
    pub index_line: Vec<u8>,
}

/// The bytes of one committed record.
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
    out.extend_from_slice(&[0; 32]);
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
    let sum = Sha256::digest(&out[HEADER..]);
    out[5..HEADER].copy_from_slice(&sum);
    out
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
    /// Where the valid records end; anything after is a torn write.
    pub valid_len: u64,
    /// Whether bytes follow the last valid record.
    pub torn: bool,
}

/// Read every record of the segment at `path`, calling `each` with the committed ones (void
/// ones are skipped), one at a time so a large segment is never held whole.
pub(crate) fn read(
    path: &Path,
    mut each: impl FnMut(u64, Record) -> Result<()>,
) -> Result<Segment> {
    let context = |what: &str| format!("{what} the journal {}", path.display());
    let file = File::open(path).map_err(|e| Error::io(context("opening"), e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(context("reading"), e))?
        .len();
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut magic = [0u8; 8];
    let mut found = Segment::default();
    match reader.read_exact(&mut magic) {
        Ok(()) if &magic == MAGIC => {}
        // A segment created and never written (a crash right after creating it).
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
            found.torn = len > 0;
            return Ok(found);
        }
        Ok(()) => {
            return Err(Error::Store(format!(
                "{} is not a ddwire journal segment",
                path.display()
            )));
        }
        Err(e) => return Err(Error::io(context("reading"), e)),
    }
    let mut offset = MAGIC.len() as u64;
    loop {
        found.valid_len = offset;
        let mut header = [0u8; HEADER];
        match read_full(&mut reader, &mut header) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(Error::io(context("reading"), e)),
        }
        let body_len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let state = header[4];
        if body_len == 0 || body_len > MAX_BODY || !matches!(state, COMMITTED | VOID) {
            break;
        }
        let mut body = vec![0u8; body_len];
        match read_full(&mut reader, &mut body) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(Error::io(context("reading"), e)),
        }
        if Sha256::digest(&body).as_slice() != &header[5..HEADER] {
            break;
        }
        let Some(record) = decode(&body) else { break };
        if state == COMMITTED {
            each(offset, record)?;
        }
        offset += (HEADER + body_len) as u64;
    }
    found.torn = found.valid_len < len;
    Ok(found)
}

/// Fill `buf`; `false` if the file ended first (a torn or absent record).
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match reader.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

fn decode(body: &[u8]) -> Option<Record> {
    let mut record = Record::default();
    let mut rest = body;
    let take = |n: usize, rest: &mut &[u8]| -> Option<Vec<u8>> {
        let (head, tail) = rest.split_at_checked(n)?;
        *rest = tail;
        Some(head.to_vec())
    };
    while let Some((&tag, tail)) = rest.split_first() {
        rest = tail;
        let name_len = take(2, &mut rest)?;
        let name = String::from_utf8(take(
            u16::from_le_bytes([name_len[0], name_len[1]]) as usize,
            &mut rest,
        )?)
        .ok()?;
        let data_len = take(4, &mut rest)?;
        let data = take(
            u32::from_le_bytes([data_len[0], data_len[1], data_len[2], data_len[3]]) as usize,
            &mut rest,
        )?;
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
        std::env::temp_dir().join(format!(
            "ddwire-journal-{tag}-{}",
            crate::contract::new_uuid7()
        ))
    }

    fn sample(id: &str) -> Vec<u8> {
        encode(
            id,
            &[("envelope.json", b"{}"), ("spans.jsonl", b"")],
            &[(&"a".repeat(64), b"{\"type\": \"object\"}")],
            b"{\"invocation_id\":\"x\"}",
        )
    }

    #[test]
    fn records_read_back_and_a_void_or_torn_one_is_not_replayed() {
        let path = temp("roundtrip");
        let mut bytes = MAGIC.to_vec();
        let first = sample("one");
        let second = sample("two");
        let third = sample("three");
        bytes.extend_from_slice(&first);
        bytes.extend_from_slice(&second);
        bytes.extend_from_slice(&third[..third.len() - 1]);
        let mut file = File::create(&path).unwrap();
        file.write_all(&bytes).unwrap();
        void(&file, (MAGIC.len() + first.len()) as u64).unwrap();

        let mut seen = Vec::new();
        let segment = read(&path, |offset, record| {
            seen.push((offset, record));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen.len(), 1, "the void record is skipped");
        assert_eq!(seen[0].0, MAGIC.len() as u64);
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
        assert!(segment.torn);
        assert_eq!(
            segment.valid_len,
            (MAGIC.len() + first.len() + second.len()) as u64
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_record_whose_bytes_changed_ends_the_segment() {
        let path = temp("corrupt");
        let mut bytes = MAGIC.to_vec();
        let mut record = sample("one");
        let last = record.len() - 3;
        record[last] ^= 1;
        bytes.extend_from_slice(&record);
        bytes.extend_from_slice(&sample("two"));
        std::fs::write(&path, &bytes).unwrap();
        let mut count = 0;
        let segment = read(&path, |_, _| {
            count += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(count, 0);
        assert!(segment.torn);
        std::fs::write(&path, b"").unwrap();
        assert!(!read(&path, |_, _| Ok(())).unwrap().torn);
        std::fs::write(&path, b"not a journal").unwrap();
        assert!(read(&path, |_, _| Ok(())).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
