//! Results serialized once and written as bytes on every request: the
//! `tools/list` of `/mcp` (docs/benchmarks.md "Scenarios added for a
//! million vehicles"). A leaf module: the state holds the cache, and the
//! dispatcher (which reads the state) fills it.

use std::sync::{Arc, OnceLock};

/// A result serialized once for each era, as the dispatcher writes its
/// `result` member.
pub struct RenderedResult {
    modern: Box<[u8]>,
    legacy: Box<[u8]>,
}

impl RenderedResult {
    pub fn new(modern: Box<[u8]>, legacy: Box<[u8]>) -> Self {
        Self { modern, legacy }
    }

    /// The 2026-07-28 text.
    pub fn modern(&self) -> &[u8] {
        &self.modern
    }

    /// The 2025-11-25 text.
    pub fn legacy(&self) -> &[u8] {
        &self.legacy
    }
}

/// The `tools/list` result of `/mcp`, serialized once per process.
///
/// It is the same for every caller (public, DAP-CORE-012: from the catalog
/// only), and what it holds depends on nothing a request carries: the
/// catalog, which is fixed once the state is built; the tool registry,
/// which is compiled in; and the era, whose decoration (`resultType`,
/// `ttlMs`, `cacheScope`, the server identity in `_meta`; none in
/// 2025-11-25) differs, so each era has its own text. Copying the
/// published schemas into a tree and serializing them again for each
/// request cost about 60 times the echo floor for a 36 KB reply
/// (docs/benchmarks.md "Scenarios added for a million vehicles"); writing
/// the cached text costs about a copy.
#[derive(Default)]
pub struct ToolListCache(OnceLock<Arc<RenderedResult>>);

impl ToolListCache {
    /// The rendered result, made by `render` on first use.
    pub fn get_or_render(&self, render: impl FnOnce() -> RenderedResult) -> Arc<RenderedResult> {
        self.0.get_or_init(|| Arc::new(render())).clone()
    }
}
