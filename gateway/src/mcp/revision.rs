//! The MCP revisions this gateway serves. A leaf: the manifest and the
//! transport both name them, and neither may import the other for it.

/// The stateless revision this gateway implements (DAP-CORE-001).
pub const MODERN_REVISION: &str = "2026-07-28";
/// The handshake revision served for older clients.
pub const LEGACY_REVISION: &str = "2025-11-25";
/// Every revision served, newest first (`server/discover`'s
/// `supportedVersions`).
pub const SUPPORTED_REVISIONS: [&str; 2] = [MODERN_REVISION, LEGACY_REVISION];
/// Revisions a request may name in its per-request `_meta` (the stateless
/// path). -32022 lists only these as `supported`: a client that retries
/// with a listed version must succeed, never loop.
pub const PER_REQUEST_REVISIONS: [&str; 1] = [MODERN_REVISION];
/// Revisions served only through the `initialize` handshake; -32022 names
/// them separately (`requires_initialize`).
pub const INITIALIZE_REVISIONS: [&str; 1] = [LEGACY_REVISION];
