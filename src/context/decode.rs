//! Reading one file as text for the bundle (docs/design/context.md#context-collection): a streaming,
//! lossy UTF-8 decoder that sniffs for binary files, keeps the excerpt and counts characters,
//! and stops reading once the excerpt is full, so a 100 MB log costs its excerpt in memory,
//! not its size.

use std::io::{self, Read};

/// Bytes looked at for a NUL to call a file binary.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;
const READ_CHUNK: usize = 64 * 1024;

/// A decoded text file: its first characters and its full length in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub excerpt: String,
    pub char_count: usize,
}

/// Read `r` as UTF-8 (invalid sequences become U+FFFD exactly as `String::from_utf8_lossy`
/// does), keeping the first `max_chars` characters and counting them. `Ok(None)` when the
/// first 8 KiB hold a NUL byte (binary).
///
/// With `len` (the file's size in bytes), reading stops once the excerpt is full: files can be
/// huge and the excerpt is all the meeting uses. `char_count` then counts the unread rest as
/// one character per byte — exact for ASCII, an upper bound otherwise; files read to the end
/// (up to the excerpt plus one 64 KiB chunk, or any file without `len`) are counted exactly.
pub fn read_text(mut r: impl Read, max_chars: usize, len: Option<u64>) -> io::Result<Option<Text>> {
    let mut sink = Sink {
        excerpt: String::new(),
        max: max_chars,
        taken: 0,
        count: 0,
    };
    let mut buf = vec![0u8; READ_CHUNK];
    let mut pending: Vec<u8> = Vec::with_capacity(READ_CHUNK + 4);
    let mut sniffed = false;
    let mut read_bytes: u64 = 0;
    loop {
        let n = match r.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        read_bytes += n as u64;
        let eof = n == 0;
        pending.extend_from_slice(&buf[..n]);
        if !sniffed {
            if pending.len() < BINARY_SNIFF_BYTES && !eof {
                continue;
            }
            let head = &pending[..pending.len().min(BINARY_SNIFF_BYTES)];
            if head.contains(&0) {
                return Ok(None);
            }
            sniffed = true;
        }
        let used = decode_lossy(&pending, eof, &mut sink);
        pending.drain(..used);
        if eof {
            break;
        }
        if let Some(len) = len.filter(|_| sniffed && sink.taken >= sink.max) {
            let unread = len.saturating_sub(read_bytes) + pending.len() as u64;
            sink.count += usize::try_from(unread).unwrap_or(usize::MAX);
            break;
        }
    }
    // A document is foreign text: sanitised where it enters the meeting, before redaction
    // sees it (an invisible character cannot split a secret apart), and counted as sanitised
    // (docs/design/context.md#context-collection).
    let clean = match crate::text::sanitise(&sink.excerpt) {
        std::borrow::Cow::Owned(clean) => Some(clean),
        std::borrow::Cow::Borrowed(_) => None,
    };
    let excerpt = clean.unwrap_or(sink.excerpt);
    let removed = sink.taken - excerpt.chars().count();
    Ok(Some(Text {
        excerpt,
        char_count: sink.count - removed,
    }))
}

struct Sink {
    excerpt: String,
    max: usize,
    taken: usize,
    count: usize,
}

impl Sink {
    fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let chars = s.chars().count();
        self.count += chars;
        if self.taken < self.max {
            let want = self.max - self.taken;
            if chars <= want {
                self.excerpt.push_str(s);
                self.taken += chars;
            } else {
                let end = s.char_indices().nth(want).map_or(s.len(), |(i, _)| i);
                self.excerpt.push_str(&s[..end]);
                self.taken += want;
            }
        }
    }
}

/// Decode as much of `bytes` as possible into `sink`; returns the bytes consumed. An
/// incomplete sequence at the end waits for the next chunk unless this is the end of file.
fn decode_lossy(bytes: &[u8], eof: bool, sink: &mut Sink) -> usize {
    let mut i = 0;
    loop {
        match std::str::from_utf8(&bytes[i..]) {
            Ok(s) => {
                sink.push(s);
                return bytes.len();
            }
            Err(e) => {
                let valid = e.valid_up_to();
                if let Ok(s) = std::str::from_utf8(&bytes[i..i + valid]) {
                    sink.push(s);
                }
                i += valid;
                match e.error_len() {
                    Some(len) => {
                        sink.push("\u{FFFD}");
                        i += len;
                    }
                    None if eof => {
                        sink.push("\u{FFFD}");
                        return bytes.len();
                    }
                    None => return i,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossy_decoding_matches_std_at_every_chunk_boundary() {
        let mut bytes = "héllo 中文 😀 ".as_bytes().to_vec();
        bytes.extend_from_slice(&[0xff, b'a', 0xe4, 0xb8, b'b', 0xf0, 0x9f, 0x98]);
        let expected = String::from_utf8_lossy(&bytes).into_owned();
        for split in 0..=bytes.len() {
            let mut sink = Sink {
                excerpt: String::new(),
                max: usize::MAX,
                taken: 0,
                count: 0,
            };
            let used = decode_lossy(&bytes[..split], false, &mut sink);
            let mut rest = bytes[used..split].to_vec();
            rest.extend_from_slice(&bytes[split..]);
            decode_lossy(&rest, true, &mut sink);
            assert_eq!(sink.excerpt, expected, "split at {split}");
            assert_eq!(sink.count, expected.chars().count());
        }
    }

    #[test]
    fn the_excerpt_is_sanitised_and_counted_so() {
        let doc = "Title\r\n\x1b]52;c;ZXZpbA==\x07ok\u{202E}x\u{200B}y\x1b[2K\nend";
        let t = read_text(doc.as_bytes(), 1000, None).unwrap().unwrap();
        assert_eq!(t.excerpt, "Title\nokxy\nend");
        assert_eq!(t.char_count, t.excerpt.chars().count());
    }

    #[test]
    fn read_text_short_reads_still_sniff_8k() {
        // A reader returning one byte at a time must still find a NUL at byte 8000.
        struct Trickle(Vec<u8>, usize);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.1 >= self.0.len() || buf.is_empty() {
                    return Ok(0);
                }
                buf[0] = self.0[self.1];
                self.1 += 1;
                Ok(1)
            }
        }
        let mut data = vec![b'a'; 9000];
        data[8000] = 0;
        assert_eq!(read_text(Trickle(data.clone(), 0), 10, None).unwrap(), None);
        data[8000] = b'a';
        data[8500] = 0;
        let t = read_text(Trickle(data, 0), 10, None).unwrap().unwrap();
        assert_eq!(t.char_count, 9000);
        assert_eq!(t.excerpt, "aaaaaaaaaa");
    }
}
