//! Request heads, read and checked before hyper sees them, so that a head
//! hyper would refuse gets a JSON-RPC body (docs/mcp.md row T26,
//! docs/security.md "Slow clients") instead of hyper's own body-less 400
//! or 431, and a head that does not arrive in time gets 408 with one.
//!
//! Hyper 1.x has no hook for the answer to a head it cannot parse
//! (`proto::h1::role::Server::on_error` builds a bare status line) and none
//! for a header-read timeout (it closes without an answer), so
//! [`HeadGuard`], the connection's reader, collects each head itself.
//!
//! The contract, which `head/tests.rs` holds against hyper itself:
//!
//! - **Bytes in, bytes out.** Hyper reads exactly the client's bytes, a
//!   head at a time once it is complete and admitted, then that head's
//!   `Content-Length` body; empty lines before a request line (RFC 9112
//!   section 2.2) are dropped. A refused head is replaced by
//!   [`STAND_IN_HEAD`], a fixed request with no client byte in it, and
//!   nothing after it is read; the service recognises the stand-in by its
//!   position on the connection (never by its content, which a client could
//!   imitate) and answers [`HeadRefusal::response`].
//! - **Never laxer than hyper.** A head the guard admits is one hyper,
//!   configured as `serve` configures it ([`MAX_HEADER_FIELDS`]), parses and
//!   hands to the service. The same parser decides (httparse), then hyper's
//!   own checks after it: the method and target as the `http` crate reads
//!   them, `Content-Length` (digits only, every field equal, at most
//!   `u64::MAX - 2`), `Transfer-Encoding` (HTTP/1.1 only, `chunked` last).
//! - **Stricter in one place, on purpose:** a head over [`MAX_HEAD_BYTES`]
//!   (64 KiB) is refused with 431 while hyper's read buffer would take
//!   about 400 KiB. The only other difference is the status of a refusal:
//!   the guard says 400 for a `Content-Length` too large to count, hyper
//!   431.
//! - **The verdict depends on the head only**, never on the bytes after
//!   its empty line.
//! - After a request with `Transfer-Encoding` (or `CONNECT`) the guard stops
//!   reading heads on that connection (hyper follows chunked framing);
//!   hyper's own limits, the same ones answered without a body, apply there
//!   and its header-read timeout is the backstop.
//! - Timers: a head must be complete within the header-read timeout from
//!   its first byte (408); a connection with no request in progress and no
//!   byte buffered waits at most the idle timeout for one (closed).
//!
//! What the re-parse costs per request is measured in docs/benchmarks.md
//! ("The connection layer's head check").

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::{ConnShared, Limits};
use crate::mcp::error::RpcError;

/// Most header fields in one request (hyper's default, which docs/mcp.md
/// row T26 assumes). Hyper is configured with the same number, so a head
/// the guard admits is never refused by hyper for it.
pub const MAX_HEADER_FIELDS: usize = 100;

/// Largest request head (request line and header fields, with line ends).
/// The /mcp handler's own, tighter limit on header names and values (16
/// KiB, 431) still applies below it.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The request put in place of a refused head: no client byte in it, and
/// `Connection: close` so hyper reads nothing after it.
pub(super) const STAND_IN_HEAD: &[u8] =
    b"GET / HTTP/1.1\r\nhost: refused.invalid\r\nconnection: close\r\n\r\n";

/// How much the guard reads from the socket at a time (hyper's own initial
/// read buffer is the same size).
const READ_CHUNK: usize = 8192;

/// The largest `Content-Length` hyper accepts (its `DecodedLength`).
const MAX_CONTENT_LENGTH: u64 = u64::MAX - 2;

/// Why the guard refused a request head. Closed set; each maps to one
/// status and one message (none echoes client bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadRefusal {
    /// More than [`MAX_HEADER_FIELDS`] header fields: 431.
    TooManyFields,
    /// The head exceeds [`MAX_HEAD_BYTES`]: 431.
    TooLarge,
    /// Not an HTTP/1.x request head hyper would serve: a control byte in a
    /// header value, a bad header name, method, request line or target, an
    /// invalid `Content-Length` or `Transfer-Encoding`: 400.
    Malformed,
    /// The head did not arrive within `--header-read-timeout-seconds`: 408.
    Timeout,
}

impl HeadRefusal {
    fn status(self) -> StatusCode {
        match self {
            Self::TooManyFields | Self::TooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::Malformed => StatusCode::BAD_REQUEST,
            Self::Timeout => StatusCode::REQUEST_TIMEOUT,
        }
    }

    fn message(self) -> String {
        match self {
            Self::TooManyFields => {
                format!("the request has more than {MAX_HEADER_FIELDS} header fields")
            }
            Self::TooLarge => format!("the request head exceeds {MAX_HEAD_BYTES} bytes"),
            Self::Malformed => "the request head is not valid HTTP/1.1 (request line, header name, header value or Content-Length)".to_owned(),
            Self::Timeout => "the request head did not arrive in time".to_owned(),
        }
    }

    /// The refusal: a JSON-RPC error without `id` (the request was never
    /// read), as every other transport refusal (docs/mcp.md).
    pub fn response(self) -> Response {
        let mut r =
            crate::mcp::transport_refusal(self.status(), RpcError::InvalidRequest(self.message()));
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        // As every answer of the router (docs/security.md "Hardening").
        r.headers_mut().insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        r
    }
}

/// Where the guard is in the inbound byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Collecting a request head (nothing of it passed to hyper yet).
    Head,
    /// Passing this many more body bytes of a `Content-Length` request.
    Body(u64),
    /// Heads are no longer checked on this connection (chunked, CONNECT).
    PassThrough,
    /// The stand-in request was passed; nothing more is read. Reads stay
    /// pending rather than end: hyper drops a connection that reaches EOF
    /// while a request is in progress, and the refusal must be written
    /// first (`Connection: close` then ends the connection).
    Refused,
    /// The client closed, or the idle timeout passed: EOF.
    Closed,
}

/// What the front of a connection's buffer holds (empty lines before a
/// request line already dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scan {
    /// Not a whole head yet, and not over [`MAX_HEAD_BYTES`].
    Partial,
    /// An admitted head of `len` bytes, and how what follows it is framed.
    Head { len: usize, next: Reading },
    /// A head hyper would refuse, or one the guard refuses by design.
    Refused(HeadRefusal),
}

/// Judge the head at the front of `pending`, resuming the search for its
/// end at `*scanned` (and leaving there where to resume).
pub(super) fn scan(pending: &[u8], scanned: &mut usize) -> Scan {
    let Some(end) = find_head_end(pending, scanned) else {
        return if pending.len() > MAX_HEAD_BYTES {
            Scan::Refused(HeadRefusal::TooLarge)
        } else {
            Scan::Partial
        };
    };
    if end > MAX_HEAD_BYTES {
        return Scan::Refused(HeadRefusal::TooLarge);
    }
    match inspect_head(&pending[..end]) {
        Ok(next) => Scan::Head { len: end, next },
        Err(why) => Scan::Refused(why),
    }
}

/// How many empty-line bytes (CR, LF) open `data`.
pub(super) fn leading_blank(data: &[u8]) -> usize {
    data.iter()
        .take_while(|b| matches!(b, b'\r' | b'\n'))
        .count()
}

/// Where the head in `data` ends (just after its empty line), resuming the
/// search at `*from` and leaving there where to resume next time.
pub(super) fn find_head_end(data: &[u8], from: &mut usize) -> Option<usize> {
    // Line ends found with a vectorized search: a byte-at-a-time loop was
    // most of what the check cost on a 2.6 KiB head (docs/benchmarks.md,
    // "Cost per request").
    let mut i = *from;
    while let Some(offset) = memchr::memchr(b'\n', data.get(i..).unwrap_or_default()) {
        let at = i + offset;
        match (data.get(at + 1), data.get(at + 2)) {
            (Some(b'\n'), _) => return Some(at + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(at + 3),
            // Not enough bytes to decide: look here again later.
            (None, _) | (Some(b'\r'), None) => {
                *from = at;
                return None;
            }
            _ => {}
        }
        i = at + 1;
    }
    *from = data.len();
    None
}

/// Check one complete head the way hyper will parse it, and say how its
/// body is framed.
pub(super) fn inspect_head(head: &[u8]) -> Result<Reading, HeadRefusal> {
    // One slot more than allowed: 101 fields parse, so "more than 100" is
    // told apart from other failures.
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADER_FIELDS + 1];
    let mut request = httparse::Request::new(&mut fields);
    match request.parse(head) {
        // The parser must end the head where the guard did, or hyper would
        // read part of it as a body or as the next request.
        Ok(httparse::Status::Complete(len)) if len == head.len() => {}
        Err(httparse::Error::TooManyHeaders) => return Err(HeadRefusal::TooManyFields),
        Ok(_) | Err(_) => return Err(HeadRefusal::Malformed),
    }
    if request.headers.len() > MAX_HEADER_FIELDS {
        return Err(HeadRefusal::TooManyFields);
    }
    let method = request.method.ok_or(HeadRefusal::Malformed)?;
    if axum::http::Method::from_bytes(method.as_bytes()).is_err() {
        return Err(HeadRefusal::Malformed);
    }
    let target = request.path.ok_or(HeadRefusal::Malformed)?;
    if axum::http::Uri::try_from(target).is_err() {
        return Err(HeadRefusal::Malformed);
    }
    let http_11 = request.version == Some(1);
    // Hyper's rules, field by field in order: `Content-Length` is digits
    // only (no list), every such field equal, unless a `Transfer-Encoding`
    // came before it; the last `Transfer-Encoding` field must end in
    // `chunked`, and HTTP/1.0 may not carry one.
    let mut length: Option<u64> = None;
    let mut chunked: Option<bool> = None;
    for field in request.headers.iter() {
        if field.name.eq_ignore_ascii_case("transfer-encoding") {
            if !http_11 {
                return Err(HeadRefusal::Malformed);
            }
            chunked = Some(ends_in_chunked(field.value));
        } else if field.name.eq_ignore_ascii_case("content-length") && chunked.is_none() {
            let n = digits(field.value).ok_or(HeadRefusal::Malformed)?;
            if n > MAX_CONTENT_LENGTH || length.is_some_and(|l| l != n) {
                return Err(HeadRefusal::Malformed);
            }
            length = Some(n);
        }
    }
    match chunked {
        Some(false) => return Err(HeadRefusal::Malformed),
        // Chunked framing is hyper's to follow.
        Some(true) => return Ok(Reading::PassThrough),
        None => {}
    }
    if method == "CONNECT" {
        return Ok(Reading::PassThrough);
    }
    Ok(match length {
        Some(n) if n > 0 => Reading::Body(n),
        _ => Reading::Head,
    })
}

/// A `Content-Length` value: ASCII digits only, no sign, no list.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0_u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Whether a `Transfer-Encoding` value's last coding is `chunked` (a value
/// that is not visible ASCII never is, as hyper reads it).
fn ends_in_chunked(value: &[u8]) -> bool {
    if !value
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return false;
    }
    std::str::from_utf8(value).is_ok_and(|text| {
        text.rsplit(',')
            .next()
            .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
    })
}

/// The connection's reader (and writer: writes go straight through).
pub(super) struct HeadGuard {
    stream: TcpStream,
    shared: Arc<ConnShared>,
    limits: Limits,
    state: Reading,
    /// Bytes read from the socket, not yet passed to hyper.
    pending: Vec<u8>,
    /// How many bytes at the front of `pending` may be passed now.
    cleared: usize,
    /// Where to resume looking for the end of the head in `pending`.
    scanned: usize,
    /// Heads passed to hyper so far (the stand-in included).
    heads: u64,
    last_bytes: Instant,
    header_timer: Option<Pin<Box<Sleep>>>,
    idle_timer: Option<Pin<Box<Sleep>>>,
}

impl HeadGuard {
    pub(super) fn new(stream: TcpStream, shared: Arc<ConnShared>, limits: Limits) -> Self {
        Self {
            stream,
            shared,
            limits,
            state: Reading::Head,
            pending: Vec::new(),
            cleared: 0,
            scanned: 0,
            heads: 0,
            last_bytes: Instant::now(),
            header_timer: None,
            idle_timer: None,
        }
    }

    /// Replace whatever was read with the stand-in request and remember
    /// its position for the service.
    fn refuse(&mut self, why: HeadRefusal) {
        self.shared.refuse_at(self.heads, why);
        self.heads += 1;
        self.pending.clear();
        self.pending.extend_from_slice(STAND_IN_HEAD);
        self.cleared = self.pending.len();
        self.state = Reading::Refused;
        self.header_timer = None;
    }

    /// Look for the end of the head in the new bytes; judge it once found.
    fn check_head(&mut self) {
        // Dropping empty lines before a request line here keeps the
        // end-of-head search linear.
        let blank = leading_blank(&self.pending);
        if blank > 0 {
            self.pending.drain(..blank);
            self.scanned = 0;
        }
        match scan(&self.pending, &mut self.scanned) {
            Scan::Partial => {}
            Scan::Head { len, next } => {
                self.heads += 1;
                self.cleared = len;
                self.scanned = 0;
                self.header_timer = None;
                self.state = next;
            }
            Scan::Refused(why) => self.refuse(why),
        }
    }

    /// Whether the idle timeout has passed (re-arming the timer when not).
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            let since = self.last_bytes.max(self.shared.last_done());
            let deadline = tokio::time::Instant::from_std(since + self.limits.idle);
            let timer = self
                .idle_timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if timer.deadline() != deadline {
                timer.as_mut().reset(deadline);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            if !self.shared.busy() {
                return true;
            }
            // A request is in progress: idle time starts when it ends.
            self.last_bytes = Instant::now();
        }
    }

    /// Whether the head has taken longer than the header-read timeout.
    fn head_expired(&mut self, cx: &mut Context<'_>) -> bool {
        let limit = self.limits.header_read;
        let timer = self
            .header_timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        timer.as_mut().poll(cx).is_ready()
    }

    /// Read what the socket has into `pending`: `Ready(Ok(0))` at EOF.
    ///
    /// The bytes land in `pending`'s spare capacity directly. Reading
    /// through a zeroed stack buffer first cost a memset of the whole
    /// buffer per read, about 35,000 instructions a request
    /// (docs/benchmarks.md, "The connection layer's head check").
    fn fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.pending.capacity() - self.pending.len() < READ_CHUNK / 2 {
            self.pending.reserve(READ_CHUNK);
        }
        loop {
            match self.stream.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.stream.try_read_buf(&mut self.pending) {
                Ok(n) => {
                    if n > 0 {
                        self.last_bytes = Instant::now();
                    }
                    return Poll::Ready(Ok(n));
                }
                // Readiness can be stale; `poll_read_ready` re-arms it.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Give back what a large head or a burst of pipelined requests made
    /// `pending` grow to, once it is drained: an idle connection keeps one
    /// read's worth, as hyper's own read buffer does.
    fn trim(&mut self) {
        if self.pending.is_empty() && self.pending.capacity() > 2 * READ_CHUNK {
            self.pending.shrink_to(READ_CHUNK);
        }
    }
}

impl hyper::rt::Read for HeadGuard {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.cleared > 0 {
                let n = this.cleared.min(buf.remaining());
                buf.put_slice(&this.pending[..n]);
                this.pending.drain(..n);
                this.cleared -= n;
                this.trim();
                return Poll::Ready(Ok(()));
            }
            match this.state {
                Reading::Refused => return Poll::Pending,
                Reading::Closed => return Poll::Ready(Ok(())),
                Reading::Body(left) if !this.pending.is_empty() => {
                    let n = u64::try_from(this.pending.len())
                        .unwrap_or(u64::MAX)
                        .min(left);
                    this.cleared = usize::try_from(n).unwrap_or(usize::MAX);
                    this.state = if n == left {
                        Reading::Head
                    } else {
                        Reading::Body(left - n)
                    };
                    continue;
                }
                Reading::PassThrough if !this.pending.is_empty() => {
                    this.cleared = this.pending.len();
                    continue;
                }
                Reading::Head if !this.pending.is_empty() => {
                    this.check_head();
                    if this.cleared > 0 || this.state != Reading::Head {
                        continue;
                    }
                    // Part of a head: it must be complete in time.
                    if this.head_expired(cx) {
                        this.refuse(HeadRefusal::Timeout);
                        continue;
                    }
                }
                Reading::Head | Reading::Body(_) | Reading::PassThrough => {
                    // Nothing buffered: a connection with no request in
                    // progress may wait only so long for one.
                    if this.pending.is_empty()
                        && matches!(this.state, Reading::Head | Reading::PassThrough)
                        && this.idle_expired(cx)
                    {
                        this.state = Reading::Closed;
                        return Poll::Ready(Ok(()));
                    }
                }
            }
            match this.fill(cx) {
                Poll::Ready(Ok(0)) => {
                    // EOF. An unfinished head is dropped: hyper sees a
                    // clean close, as it would for a client that left.
                    this.pending.clear();
                    this.state = Reading::Closed;
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Ok(_)) => {
                    this.idle_timer = None;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl hyper::rt::Write for HeadGuard {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests;
