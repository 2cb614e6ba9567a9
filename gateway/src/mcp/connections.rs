//! The HTTP/1.1 connection layer: the accept loop, slow-client limits and
//! refusals that carry a body (issue 11 items 2 and 4; docs/security.md,
//! "Slow clients").
//!
//! `axum::serve` has no header-read or idle timeout, no connection cap and
//! no shutdown deadline, and hyper answers a request head it cannot parse
//! (more than 100 header fields, a control byte in a header value) itself,
//! with an empty body: hyper 1.x has no hook for that answer
//! (`proto::h1::role::Server::on_error` builds a bare status line). So the
//! gateway runs its own accept loop over hyper's HTTP/1 connection, and
//! every connection reads through a [`HeadGuard`]:
//!
//! - The guard collects each request head itself and checks it with the
//!   same parser hyper uses (httparse, the same limits) before hyper sees a
//!   byte of it. A head it refuses is replaced by a fixed, body-less request
//!   of ours; the per-connection service recognises that request by its
//!   position on the connection (never by its content, which a client could
//!   imitate) and answers with the JSON-RPC refusal, then the connection
//!   closes. Hyper's own responses, order and keep-alive rules are kept.
//! - It times the head from its first byte (`--header-read-timeout-seconds`:
//!   408) and the wait for a new request when none is in progress
//!   (`--idle-timeout-seconds`: the connection is closed).
//! - Body framing is followed for `Content-Length` bodies so the next head
//!   on a keep-alive connection is found. After a request with
//!   `Transfer-Encoding` (or `CONNECT`), the guard stops checking heads on
//!   that connection and hyper's own limits (the same ones, answered without
//!   a body) apply; hyper's header-read timeout is the backstop there.
//!
//! Connections are capped in total (`--max-connections`) and per client
//! address (`--max-connections-per-address`). A new connection over either
//! cap replaces the oldest connection (of that address, or of all) that has
//! no request in progress; only when every such connection is busy is the
//! new one refused with 503. All connections of one address (say 600
//! half-sent requests) therefore hold at most the per-address cap and can
//! never lock a newcomer out: the newest client always gets its turn, the
//! attacker's oldest stalled connection pays for it.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tower::ServiceExt as _;

use super::error::RpcError;

/// Most header fields in one request (hyper's default, which docs/mcp.md
/// row T26 and issue 11 item 4 assume). Hyper is configured with the same
/// number, so a head the guard admits is never refused by hyper for it.
pub const MAX_HEADER_FIELDS: usize = 100;

/// Largest request head (request line and header fields, with line ends).
/// The /mcp handler's own, tighter limit on header names and values (16
/// KiB, 431) still applies below it.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// `Retry-After` on a 503 refusal of a connection, in seconds.
const BUSY_RETRY_AFTER_SECONDS: u64 = 1;

/// The request put in place of a refused head: no client byte in it, and
/// `Connection: close` so hyper reads nothing after it.
const STAND_IN_HEAD: &[u8] =
    b"GET / HTTP/1.1\r\nhost: refused.invalid\r\nconnection: close\r\n\r\n";

/// The slow-client settings (`ServeSettings`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub header_read: Duration,
    pub idle: Duration,
    pub max_connections: usize,
    pub max_per_address: usize,
    pub shutdown_grace: Duration,
}

impl Limits {
    pub fn from_settings(s: &crate::config::ServeSettings) -> Self {
        Self {
            header_read: Duration::from_secs(s.header_read_timeout_seconds.max(1)),
            idle: Duration::from_secs(s.idle_timeout_seconds.max(1)),
            max_connections: usize::try_from(s.max_connections.max(1)).unwrap_or(usize::MAX),
            max_per_address: usize::try_from(s.max_connections_per_address.max(1))
                .unwrap_or(usize::MAX),
            shutdown_grace: Duration::from_secs(s.shutdown_grace_seconds),
        }
    }
}

/// Why the guard refused a request head. Closed set; each maps to one
/// status and one message (none echoes client bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadRefusal {
    /// More than [`MAX_HEADER_FIELDS`] header fields: 431.
    TooManyFields,
    /// The head exceeds [`MAX_HEAD_BYTES`]: 431.
    TooLarge,
    /// Not an HTTP/1.x request head: a control byte in a header value, a
    /// bad header name, request line or target, or an invalid
    /// `Content-Length`: 400.
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
            super::transport_refusal(self.status(), RpcError::InvalidRequest(self.message()));
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

/// State one connection shares between its reader (the guard), its
/// service and the registry.
struct ConnShared {
    /// Requests the service is handling now (not evictable while > 0).
    inflight: AtomicUsize,
    /// Requests hyper has handed to the service so far.
    requests: AtomicU64,
    /// The position of the stand-in request, when the guard refused a head.
    refused: Mutex<Option<(u64, HeadRefusal)>>,
    /// When the service last finished a request.
    last_done: Mutex<Instant>,
    /// Evicted or out of time: drop the connection now.
    kill: Notify,
}

impl ConnShared {
    fn new() -> Self {
        Self {
            inflight: AtomicUsize::new(0),
            requests: AtomicU64::new(0),
            refused: Mutex::new(None),
            last_done: Mutex::new(Instant::now()),
            kill: Notify::new(),
        }
    }

    fn busy(&self) -> bool {
        self.inflight.load(Ordering::Acquire) > 0
    }

    fn last_done(&self) -> Instant {
        *self
            .last_done
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn refusal_at(&self, index: u64) -> Option<HeadRefusal> {
        let refused = self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match *refused {
            Some((at, why)) if at == index => Some(why),
            _ => None,
        }
    }
}

/// Marks a request in progress for as long as it lives.
struct Busy(Arc<ConnShared>);

impl Busy {
    fn new(shared: &Arc<ConnShared>) -> Self {
        shared.inflight.fetch_add(1, Ordering::AcqRel);
        Self(shared.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self
            .0
            .last_done
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
        self.0.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its connection [`Busy`] until it is sent
/// (or dropped, when the client leaves).
struct Sending {
    body: axum::body::Body,
    _busy: Busy,
}

impl http_body::Body for Sending {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The address a per-address cap counts: IPv4 as is (an IPv4-mapped IPv6
/// address too), IPv6 by its /64, the block one subscriber gets.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Open connections, oldest first.
struct Registry {
    inner: Mutex<RegistryInner>,
    limits: Limits,
}

#[derive(Default)]
struct RegistryInner {
    next_id: u64,
    open: BTreeMap<u64, (IpAddr, Arc<ConnShared>)>,
    per_address: HashMap<IpAddr, usize>,
}

impl RegistryInner {
    fn remove(&mut self, id: u64) -> Option<Arc<ConnShared>> {
        let (key, shared) = self.open.remove(&id)?;
        if let Some(n) = self.per_address.get_mut(&key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_address.remove(&key);
            }
        }
        Some(shared)
    }

    /// Drop the oldest connection without a request in progress (of `key`
    /// when given); false when every candidate is busy.
    fn evict_oldest_idle(&mut self, key: Option<IpAddr>) -> bool {
        let victim = self
            .open
            .iter()
            .find(|(_, (k, shared))| key.is_none_or(|key| *k == key) && !shared.busy())
            .map(|(id, _)| *id);
        match victim.and_then(|id| self.remove(id)) {
            Some(shared) => {
                // `notify_one` keeps a permit, so a connection that is not
                // waiting yet still sees it.
                shared.kill.notify_one();
                true
            }
            None => false,
        }
    }
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Make room for a connection from `ip` and register it, or `None`
    /// (refuse: every connection in the way is busy).
    fn admit(&self, ip: IpAddr) -> Option<(u64, Arc<ConnShared>)> {
        let key = address_key(ip);
        let mut inner = self.lock();
        let from_address = inner.per_address.get(&key).copied().unwrap_or(0);
        if from_address >= self.limits.max_per_address && !inner.evict_oldest_idle(Some(key)) {
            return None;
        }
        if inner.open.len() >= self.limits.max_connections && !inner.evict_oldest_idle(None) {
            return None;
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let shared = Arc::new(ConnShared::new());
        inner.open.insert(id, (key, shared.clone()));
        *inner.per_address.entry(key).or_insert(0) += 1;
        Some((id, shared))
    }

    fn release(&self, id: u64) {
        self.lock().remove(id);
    }

    fn kill_all(&self) {
        let mut inner = self.lock();
        for (_, shared) in inner.open.values() {
            shared.kill.notify_one();
        }
        inner.open.clear();
        inner.per_address.clear();
    }
}

/// Serve `router` on `listener` until `shutdown` resolves; then stop
/// accepting, let requests in progress finish for at most
/// `limits.shutdown_grace`, and close whatever is left.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let registry = Arc::new(Registry {
        inner: Mutex::new(RegistryInner::default()),
        limits,
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.max_headers(MAX_HEADER_FIELDS)
        .timer(hyper_util::rt::TokioTimer::new())
        // A backstop only: the guard's own timers fire first while it checks
        // heads; after a chunked request (unchecked heads) this bounds a
        // head's wait and arrival together.
        .header_read_timeout(limits.idle + limits.header_read + Duration::from_secs(1));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        // Out of descriptors and the like: wait a little
                        // instead of spinning; connections close meanwhile.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Some((id, shared)) = registry.admit(peer.ip()) else {
                    tasks.spawn(refuse_busy(stream));
                    continue;
                };
                let conn = serve_connection(
                    http.clone(), stream, peer, router.clone(), shared, limits, stop_rx.clone(),
                );
                let registry = registry.clone();
                tasks.spawn(async move {
                    conn.await;
                    registry.release(id);
                });
            }
        }
    }
    drop(listener);
    // Idle connections close at once; busy ones after their response.
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(limits.shutdown_grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            open = tasks.len(),
            grace_seconds = limits.shutdown_grace.as_secs(),
            "shutdown grace period over; closing the remaining connections"
        );
        registry.kill_all();
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

/// 503 with a JSON-RPC body and `Retry-After`, written before any request
/// is read (every connection in the way is busy), then close.
async fn refuse_busy(mut stream: TcpStream) {
    let (_, body) = RpcError::Unavailable(
        "too many connections are busy; retry after the Retry-After delay".to_owned(),
    )
    .to_response_body(None);
    let body = serde_json::to_vec(&body).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         cache-control: no-store\r\nx-content-type-options: nosniff\r\n\
         retry-after: {BUSY_RETRY_AFTER_SECONDS}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&body);
    let write = async {
        stream.write_all(&bytes).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// One connection: hyper's HTTP/1 over the guard, with `ConnectInfo` for
/// the handlers, until it ends, is evicted, or the shutdown deadline.
async fn serve_connection(
    http: hyper::server::conn::http1::Builder,
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    shared: Arc<ConnShared>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = HeadGuard::new(stream, shared.clone(), limits);
    let service_shared = shared.clone();
    let service = hyper::service::service_fn(move |mut request: axum::http::Request<_>| {
        let router = router.clone();
        let shared = service_shared.clone();
        async move {
            let index = shared.requests.fetch_add(1, Ordering::AcqRel);
            if let Some(why) = shared.refusal_at(index) {
                return Ok::<_, Infallible>(why.response());
            }
            let busy = Busy::new(&shared);
            request.extensions_mut().insert(ConnectInfo(peer));
            let response = router.oneshot(request.map(axum::body::Body::new)).await?;
            // The request is in progress until its body's last byte is
            // sent, not when its head is: a streamed body (the published
            // feed) or a slow reader must not meet the idle timeout halfway
            // and be cut into a 200 with half a file.
            Ok(response.map(|body| axum::body::Body::new(Sending { body, _busy: busy })))
        }
    });
    let conn = http.serve_connection(io, service);
    tokio::pin!(conn);
    let stopping = async {
        if !*stop.borrow_and_update() {
            let _ = stop.changed().await;
        }
    };
    tokio::select! {
        _ = conn.as_mut() => return,
        () = shared.kill.notified() => return,
        () = stopping => {}
    }
    conn.as_mut().graceful_shutdown();
    tokio::select! {
        _ = conn.as_mut() => {}
        () = shared.kill.notified() => {}
    }
}

/// Where the guard is in the inbound byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
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

/// The connection's reader (and writer: writes go straight through).
struct HeadGuard {
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
    fn new(stream: TcpStream, shared: Arc<ConnShared>, limits: Limits) -> Self {
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
        *self
            .shared
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((self.heads, why));
        self.heads += 1;
        self.pending.clear();
        self.pending.extend_from_slice(STAND_IN_HEAD);
        self.cleared = self.pending.len();
        self.state = Reading::Refused;
        self.header_timer = None;
    }

    /// Look for the end of the head in the new bytes; parse once found.
    fn check_head(&mut self) {
        // Empty lines before a request line are ignored (RFC 9112 2.2);
        // dropping them here keeps the end-of-head search linear.
        let blank = self
            .pending
            .iter()
            .take_while(|b| matches!(b, b'\r' | b'\n'))
            .count();
        if blank > 0 {
            self.pending.drain(..blank);
            self.scanned = 0;
        }
        let Some(end) = find_head_end(&self.pending, &mut self.scanned) else {
            if self.pending.len() > MAX_HEAD_BYTES {
                self.refuse(HeadRefusal::TooLarge);
            }
            return;
        };
        if end > MAX_HEAD_BYTES {
            self.refuse(HeadRefusal::TooLarge);
            return;
        }
        match inspect_head(&self.pending[..end]) {
            Ok(next) => {
                self.heads += 1;
                self.cleared = end;
                self.scanned = 0;
                self.header_timer = None;
                self.state = next;
            }
            Err(why) => self.refuse(why),
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
    fn fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut chunk = [0_u8; 8192];
        let mut buf = ReadBuf::new(&mut chunk);
        match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                if n > 0 {
                    self.pending.extend_from_slice(buf.filled());
                    self.last_bytes = Instant::now();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Where the head in `data` ends (just after its empty line), resuming the
/// search at `*from` and leaving there where to resume next time.
fn find_head_end(data: &[u8], from: &mut usize) -> Option<usize> {
    let mut i = *from;
    while i < data.len() {
        if data[i] == b'\n' {
            match (data.get(i + 1), data.get(i + 2)) {
                (Some(b'\n'), _) => return Some(i + 2),
                (Some(b'\r'), Some(b'\n')) => return Some(i + 3),
                // Not enough bytes to decide: look here again later.
                (None, _) | (Some(b'\r'), None) => {
                    *from = i;
                    return None;
                }
                _ => {}
            }
        }
        i += 1;
    }
    *from = i;
    None
}

/// Check one complete head the way hyper will parse it, and say how its
/// body is framed.
fn inspect_head(head: &[u8]) -> Result<Reading, HeadRefusal> {
    // One slot more than allowed: 101 fields parse, so "more than 100" is
    // told apart from other failures.
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADER_FIELDS + 1];
    let mut request = httparse::Request::new(&mut fields);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Err(httparse::Error::TooManyHeaders) => return Err(HeadRefusal::TooManyFields),
        Ok(httparse::Status::Partial) | Err(_) => return Err(HeadRefusal::Malformed),
    }
    if request.headers.len() > MAX_HEADER_FIELDS {
        return Err(HeadRefusal::TooManyFields);
    }
    let target = request.path.ok_or(HeadRefusal::Malformed)?;
    if axum::http::Uri::try_from(target).is_err() {
        return Err(HeadRefusal::Malformed);
    }
    if request.method == Some("CONNECT") {
        return Ok(Reading::PassThrough);
    }
    let mut length: Option<u64> = None;
    for field in request.headers.iter() {
        if field.name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked framing is hyper's to follow.
            return Ok(Reading::PassThrough);
        }
        if field.name.eq_ignore_ascii_case("content-length") {
            // Hyper's rule: every value (comma-separated, repeated fields)
            // is digits and they are all equal.
            let text = std::str::from_utf8(field.value).map_err(|_| HeadRefusal::Malformed)?;
            for part in text.split(',') {
                let part = part.trim_matches([' ', '\t']);
                if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(HeadRefusal::Malformed);
                }
                let n: u64 = part.parse().map_err(|_| HeadRefusal::Malformed)?;
                if length.is_some_and(|l| l != n) {
                    return Err(HeadRefusal::Malformed);
                }
                length = Some(n);
            }
        }
    }
    Ok(match length {
        Some(n) if n > 0 => Reading::Body(n),
        _ => Reading::Head,
    })
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
mod tests {
    use super::*;

    /// A body still being sent keeps its connection busy: the idle timeout
    /// (1 s here) must not close a keep-alive connection between two chunks
    /// of one response (the published feed streams; a slow reader stalls
    /// any large answer), which once cut a 200 short of its end.
    #[tokio::test]
    async fn a_body_still_being_sent_outlives_the_idle_timeout() {
        use axum::body::Bytes;
        use tokio::io::AsyncReadExt as _;
        struct Slow(tokio::sync::mpsc::Receiver<Bytes>);
        impl http_body::Body for Slow {
            type Data = Bytes;
            type Error = Infallible;
            fn poll_frame(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
                self.0
                    .poll_recv(cx)
                    .map(|chunk| chunk.map(|b| Ok(http_body::Frame::data(b))))
            }
        }
        let router = Router::new().route(
            "/slow",
            axum::routing::get(|| async {
                let (tx, rx) = tokio::sync::mpsc::channel(1);
                tokio::spawn(async move {
                    let _ = tx.send(Bytes::from_static(b"first;")).await;
                    tokio::time::sleep(Duration::from_millis(2500)).await;
                    let _ = tx.send(Bytes::from_static(b"last")).await;
                });
                axum::body::Body::new(Slow(rx))
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limits = Limits {
            header_read: Duration::from_secs(5),
            idle: Duration::from_secs(1),
            max_connections: 8,
            max_per_address: 8,
            shutdown_grace: Duration::from_secs(1),
        };
        tokio::spawn(serve(listener, router, limits, std::future::pending()));
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let mut raw = Vec::new();
        let mut chunk = [0_u8; 1024];
        while !raw.ends_with(b"\r\n0\r\n\r\n") {
            match tokio::time::timeout(Duration::from_secs(10), client.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => raw.extend_from_slice(&chunk[..n]),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&raw);
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
        assert!(
            text.contains("last") && text.ends_with("\r\n0\r\n\r\n"),
            "the response was cut: {text}"
        );
    }

    fn framing(head: &str) -> Result<Reading, HeadRefusal> {
        inspect_head(head.as_bytes())
    }

    #[test]
    fn heads_are_checked_like_hyper_checks_them() {
        assert_eq!(
            framing("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n"),
            Ok(Reading::Body(12))
        );
        assert_eq!(
            framing("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(Reading::Head)
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\ncontent-length: 5\r\n\r\n"),
            Ok(Reading::Body(5))
        );
        assert_eq!(
            framing("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Ok(Reading::PassThrough)
        );
        for bad in [
            "POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n",
            "GET / HTTP/1.1\r\nX-A: a\x01b\r\n\r\n",
            "GET / HTTP/1.1\r\nX A: b\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ] {
            assert_eq!(framing(bad), Err(HeadRefusal::Malformed), "{bad:?}");
        }
        // Obs-text (bytes >= 0x80) is a legal header value byte.
        assert_eq!(
            inspect_head(b"GET / HTTP/1.1\r\nMcp-Name: caf\xc3\xa9\r\n\r\n"),
            Ok(Reading::Head)
        );
    }

    #[test]
    fn exactly_100_fields_pass_and_101_do_not() {
        let head = |n: usize| {
            let mut h = String::from("GET / HTTP/1.1\r\n");
            for i in 0..n {
                h.push_str(&format!("x-{i}: v\r\n"));
            }
            h.push_str("\r\n");
            h
        };
        assert_eq!(framing(&head(100)), Ok(Reading::Head));
        assert_eq!(framing(&head(101)), Err(HeadRefusal::TooManyFields));
        assert_eq!(framing(&head(500)), Err(HeadRefusal::TooManyFields));
    }

    #[test]
    fn the_end_of_a_head_is_found_incrementally() {
        let mut from = 0;
        let mut data = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        assert_eq!(find_head_end(&data, &mut from), None);
        data.extend_from_slice(b"\r");
        assert_eq!(find_head_end(&data, &mut from), None);
        data.extend_from_slice(b"\nbody");
        assert_eq!(find_head_end(&data, &mut from), Some(data.len() - 4));
        let mut from = 0;
        assert_eq!(
            find_head_end(b"GET / HTTP/1.1\nHost: a\n\n", &mut from),
            Some(24)
        );
    }

    #[test]
    fn over_its_cap_an_address_replaces_its_oldest_idle_connection() {
        let registry = Registry {
            inner: Mutex::new(RegistryInner::default()),
            limits: Limits {
                header_read: Duration::from_secs(1),
                idle: Duration::from_secs(1),
                max_connections: 4,
                max_per_address: 2,
                shutdown_grace: Duration::from_secs(1),
            },
        };
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let (first, first_shared) = registry.admit(a).unwrap();
        let (_, second_shared) = registry.admit(a).unwrap();
        // A third from `a` replaces `a`'s oldest idle connection.
        let (_, third_shared) = registry.admit(a).unwrap();
        assert!(!registry.lock().open.contains_key(&first));
        assert_eq!(registry.lock().per_address[&a], 2);
        drop(first_shared);
        // Both of `a`'s connections busy: the next one from `a` is refused,
        // while another address still gets in.
        let _busy = (Busy::new(&second_shared), Busy::new(&third_shared));
        assert!(registry.admit(a).is_none());
        let (_, b1) = registry.admit(b).unwrap();
        let (_, b2) = registry.admit(b).unwrap();
        // Total full (4) and every connection busy: refused.
        let _more = (Busy::new(&b1), Busy::new(&b2));
        let c: IpAddr = "2001:db8::1".parse().unwrap();
        assert!(registry.admit(c).is_none());
        drop(_more);
        // Idle again: the oldest idle one overall (b1) makes room.
        assert!(registry.admit(c).is_some());
        assert_eq!(registry.lock().per_address[&b], 1);
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let two: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        assert_eq!(address_key(one), address_key(two));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }
}
