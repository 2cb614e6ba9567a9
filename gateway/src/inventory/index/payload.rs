//! The large per-vehicle byte strings of a snapshot index (each record's
//! LZ4 JSON and its LZ4 pre-rendered pieces), addressed by offsets, kept
//! either on the heap (an in-memory store, tests, the withdrawn set) or in
//! the snapshot's index image file ([`super::image`]), read back with a
//! positional read for the few vehicles a request renders.
//!
//! Why a positional read and not a memory map: the workspace forbids
//! `unsafe` code (Cargo.toml `[workspace.lints]`) and mapping a file is
//! unsafe, because a mapped file truncated or rewritten by anyone is a
//! SIGBUS or undefined behaviour in safe code that reads it. A `pread`
//! keeps the same memory effect (the bytes live in the kernel's page cache,
//! shared and evictable, not in this process's heap: docs/benchmarks.md
//! "Index images") and turns a short or damaged file into an error. The
//! image files are still immutable once named (written under a temporary
//! name, then renamed), so what a read returns never changes.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// How much of a read buffer a thread keeps between reads.
const KEPT_BUFFER: usize = 64 << 10;

thread_local! {
    /// The buffer [`Payloads::read`] reads file payloads into.
    static READ_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Where the bytes are.
#[derive(Debug)]
enum Bytes {
    Heap(Vec<u8>),
    /// The payload section of an image file, starting at `base`.
    File {
        file: File,
        base: u64,
        len: u64,
    },
}

/// A sequence of byte strings: entry `i` is `ends[i - 1]..ends[i]`.
#[derive(Debug)]
pub(crate) struct Payloads {
    bytes: Bytes,
    ends: Vec<u64>,
}

impl Default for Payloads {
    fn default() -> Self {
        Payloads {
            bytes: Bytes::Heap(Vec::new()),
            ends: Vec::new(),
        }
    }
}

impl Payloads {
    /// Payloads in `file` from `base`, `ends` relative to `base`. Refused
    /// when the ends are not ascending or the file is shorter than they
    /// say (a truncated image).
    pub(super) fn in_file(file: File, base: u64, ends: Vec<u64>) -> io::Result<Payloads> {
        let len = ends.last().copied().unwrap_or(0);
        if ends.windows(2).any(|w| w[0] > w[1]) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "payload offsets are not ascending",
            ));
        }
        if file.metadata()?.len() < base.saturating_add(len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the image is shorter than its payloads",
            ));
        }
        Ok(Payloads {
            bytes: Bytes::File { file, base, len },
            ends,
        })
    }

    pub(super) fn ends(&self) -> &[u64] {
        &self.ends
    }

    /// The file holding the bytes and where they start, when in a file.
    pub(super) fn file(&self) -> Option<(&File, u64, u64)> {
        match &self.bytes {
            Bytes::File { file, base, len } => Some((file, *base, *len)),
            Bytes::Heap(_) => None,
        }
    }

    /// Entry `i`: borrowed from the heap, or read from the file (an error
    /// when the file became shorter or unreadable).
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn get(&self, i: usize) -> io::Result<Cow<'_, [u8]>> {
        let a = if i == 0 { 0 } else { self.ends[i - 1] };
        let b = self.ends[i];
        match &self.bytes {
            Bytes::Heap(v) => {
                let (a, b) = (usize::try_from(a), usize::try_from(b));
                match (a, b) {
                    (Ok(a), Ok(b)) if a <= b && b <= v.len() => Ok(Cow::Borrowed(&v[a..b])),
                    _ => Err(io::Error::new(io::ErrorKind::InvalidData, "bad offsets")),
                }
            }
            Bytes::File { file, base, len } => {
                if a > b || b > *len {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "bad offsets"));
                }
                let size = usize::try_from(b - a)
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad offsets"))?;
                let mut out = vec![0u8; size];
                read_at(file, &mut out, base + a)?;
                Ok(Cow::Owned(out))
            }
        }
    }

    /// `f` of entry `i`: borrowed from the heap, or read from the file into
    /// a buffer this thread reuses (a page reads twenty payloads of about a
    /// kilobyte: one allocation and zeroing each cost more than the read;
    /// docs/benchmarks.md "Page reads from an index image"). An error when
    /// the file became shorter or unreadable.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn read<R>(&self, i: usize, f: impl FnOnce(&[u8]) -> R) -> io::Result<R> {
        let Bytes::File { file, base, len } = &self.bytes else {
            return self.get(i).map(|bytes| f(&bytes));
        };
        let a = if i == 0 { 0 } else { self.ends[i - 1] };
        let b = self.ends[i];
        if a > b || b > *len {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "bad offsets"));
        }
        let size = usize::try_from(b - a)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad offsets"))?;
        READ_BUFFER.with(|buffer| {
            // Taken, not borrowed: `f` may read another payload itself.
            let mut out = buffer.take();
            if out.len() < size {
                out.resize(size, 0);
            }
            let result = read_at(file, &mut out[..size], base + a).map(|()| f(&out[..size]));
            // Keep a page's worth, not the largest record ever read.
            if out.len() <= KEPT_BUFFER {
                buffer.replace(out);
            }
            result
        })
    }

    /// Heap bytes (the offsets, and the bytes themselves when on the heap).
    pub fn heap_bytes(&self) -> usize {
        self.ends.len() * 8
            + match &self.bytes {
                Bytes::Heap(v) => v.len(),
                Bytes::File { .. } => 0,
            }
    }
}

#[cfg(unix)]
pub(super) fn read_at(file: &File, out: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, out, at)
}

#[cfg(windows)]
pub(super) fn read_at(file: &File, mut out: &mut [u8], mut at: u64) -> io::Result<()> {
    while !out.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(file, out, at)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        out = &mut out[n..];
        at += n as u64;
    }
    Ok(())
}

#[cfg(unix)]
pub(super) fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(windows)]
pub(super) fn write_at(file: &File, mut bytes: &[u8], mut at: u64) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, bytes, at)?;
        bytes = &bytes[n..];
        at += n as u64;
    }
    Ok(())
}

/// Collects payloads while an index is built.
#[derive(Debug)]
pub(crate) struct PayloadWriter {
    sink: Sink,
    ends: Vec<u64>,
    len: u64,
    /// The first write error; the build goes on and `finish` reports it.
    error: Option<io::Error>,
}

#[derive(Debug)]
enum Sink {
    Heap(Vec<u8>),
    File {
        out: BufWriter<File>,
        path: PathBuf,
        base: u64,
    },
}

impl PayloadWriter {
    /// Payloads kept on the heap.
    pub fn heap(expected: usize) -> PayloadWriter {
        PayloadWriter {
            sink: Sink::Heap(Vec::new()),
            ends: Vec::with_capacity(expected),
            len: 0,
            error: None,
        }
    }

    /// Payloads written to a new file at `path` (a temporary name: the
    /// image is renamed into place only once complete), after `base` bytes
    /// left for the header.
    pub(super) fn file(path: PathBuf, base: u64, expected: usize) -> io::Result<PayloadWriter> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let header = usize::try_from(base).unwrap_or(0);
        out.write_all(&vec![0u8; header])?;
        Ok(PayloadWriter {
            sink: Sink::File { out, path, base },
            ends: Vec::with_capacity(expected),
            len: 0,
            error: None,
        })
    }

    pub fn push(&mut self, bytes: &[u8]) {
        match &mut self.sink {
            Sink::Heap(v) => v.extend_from_slice(bytes),
            Sink::File { out, .. } => {
                if self.error.is_none()
                    && let Err(e) = out.write_all(bytes)
                {
                    self.error = Some(e);
                }
            }
        }
        self.len += bytes.len() as u64;
        self.ends.push(self.len);
    }

    /// The payloads, and the temporary file's path when they went to one.
    /// A write error removes that file and is returned.
    pub fn finish(mut self) -> io::Result<(Payloads, Option<PathBuf>)> {
        self.ends.shrink_to_fit();
        match self.sink {
            Sink::Heap(mut v) => {
                v.shrink_to_fit();
                Ok((
                    Payloads {
                        bytes: Bytes::Heap(v),
                        ends: self.ends,
                    },
                    None,
                ))
            }
            Sink::File { out, path, base } => {
                let done = match self.error.take() {
                    Some(e) => Err(e),
                    None => out.into_inner().map_err(io::IntoInnerError::into_error),
                };
                match done.and_then(|file| Payloads::in_file(file, base, self.ends)) {
                    Ok(p) => Ok((p, Some(path))),
                    Err(e) => {
                        let _ = std::fs::remove_file(&path);
                        Err(e)
                    }
                }
            }
        }
    }
}
