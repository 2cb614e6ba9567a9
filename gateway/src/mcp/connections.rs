//! The HTTP/1.1 connection layer: the accept loop, slow-client limits and
//! refusals that carry a body (docs/security.md, "Slow clients").
//!
//! `axum::serve` has no header-read or idle timeout, no connection cap and
//! no shutdown deadline, and hyper answers a request head it cannot parse
//! itself, with an empty body. So the gateway runs its own accept loop over
//! hyper's HTTP/1 connection, and every connection reads through a
//! [`head::HeadGuard`], which checks each request head before hyper sees it
//! and times the head and the wait between requests (its contract is in
//! `connections/head.rs`). Hyper's own responses, order and keep-alive
//! rules are kept.
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
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tower::ServiceExt as _;

use super::error::RpcError;

mod head;

use head::HeadGuard;
pub use head::{HeadRefusal, MAX_HEAD_BYTES, MAX_HEADER_FIELDS};

/// `Retry-After` on a 503 refusal of a connection, in seconds.
const BUSY_RETRY_AFTER_SECONDS: u64 = 1;

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

    /// The guard refused a head: the request at `index` is its stand-in.
    fn refuse_at(&self, index: u64, why: HeadRefusal) {
        *self
            .refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((index, why));
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
