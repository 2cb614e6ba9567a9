//! The error guide: which error each layer has, what goes where, and how
//! each maps outward. This module holds no code; read it before adding a
//! variant or a `map_err`.
//!
//! # The rule
//!
//! A failure keeps its type until the layer that answers for it, and is
//! converted there once, by a `From` impl, so code in between uses `?`.
//! Transient outages (something we depend on is down, busy or slow) are
//! told apart from defects (our bug, or data we wrote that we cannot read):
//! an outage is retryable and carries a retry hint; a defect is logged under
//! an `error_id` and its detail is never sent.
//!
//! # The layers
//!
//! | layer | error | becomes |
//! |---|---|---|
//! | store | [`crate::store::StoreError`] | `From<sqlx::Error>` classifies the driver's failure |
//! | tools | [`crate::tools::ToolError`] | the DAP error object ([`crate::tools::error::DapError`]) or AAP's `aap.error` |
//! | MCP transport | `mcp::error::RpcError` | a JSON-RPC error and its HTTP status |
//! | console | [`crate::console::ConsoleError`] | one HTML page and its status |
//! | command line | [`crate::Error`] | an exit code |
//!
//! ## Store: `StoreError`
//!
//! Every statement ends in `?`; `From<sqlx::Error>` decides:
//! - `Unavailable`: the database cannot be reached or will not work now:
//!   pool timed out or closed, I/O and TLS failures, PostgreSQL SQLSTATE
//!   classes 08 and 53 and 57P01..57P03, SQLite BUSY, LOCKED, IOERR, FULL
//!   and CANTOPEN. Transient.
//! - `Corrupt`: a stored value cannot be decoded into its domain type.
//! - `Query`: everything else the database refused (a constraint, a rule of
//!   the store contract, with a message an operator can act on).
//! - `Migration`, `UnsupportedUrl`: only at open.
//!
//! ## Tools: `ToolError`
//!
//! `From<StoreError>`: `Unavailable` becomes `ToolError::StoreUnavailable`,
//! any other store failure `ToolError::Internal`. On the wire (DAP
//! error.schema.json; `retryable` follows from the code alone,
//! DAP-ERR-001):
//!
//! | variant | DAP code | retry hint |
//! |---|---|---|
//! | `Validation`, `Invalid` | `dealeragent.validation.invalid` | |
//! | `AuthRequired` | `dealeragent.auth.required` | |
//! | `ScopeInsufficient` | `dealeragent.scope.insufficient` | |
//! | `NotFound` (absent and foreign alike, DAP-CORE-031) | `dealeragent.resource.not_found` | |
//! | `RateLimited` | `dealeragent.rate_limited` | `retry_after_ms` |
//! | `UpstreamUnavailable` (the dealer's system) | `dealeragent.upstream.unavailable` | `retry_after_ms` |
//! | `EvaluationsBusy` (docs/pricing.md section 4) | `dealeragent.upstream.unavailable` | `retry_after_ms` |
//! | `AuditUnavailable` (docs/tokens-and-audit.md) | `dealeragent.upstream.unavailable` | `retry_after_ms` |
//! | `StoreUnavailable` | `dealeragent.upstream.unavailable` | `retry_after_ms` |
//! | `OrganizationNotServedHere` (docs/operations.md "Shards") | `dealeragent.upstream.unavailable` | `retry_after_ms` |
//! | `Internal` (a defect only) | `dealeragent.internal` | |
//!
//! A tool that ran and failed answers a `tools/call` with MCP `isError:
//! true` and the error object as `structuredContent`, over HTTP 200: the
//! retry hint travels in `retry_after_ms`, not in an HTTP header. The AAP
//! compatibility tools send the same failure as `aap.error`, the hint in
//! `details.retry_after_ms` (`tools::aap_map`).
//!
//! ## MCP transport: `RpcError`
//!
//! Only envelope, routing and infrastructure failures are JSON-RPC errors
//! (DAP spec section 11; MCP SEP-1303), each with one HTTP status
//! (`mcp::error`). What the gateway cannot do now (a request timeout, every
//! connection busy, the token store unreachable while verifying a bearer
//! token) is -32603 with HTTP 503 and `Retry-After` in seconds; a method
//! that cannot read the store (`resources/*`) is -32603 with HTTP 503 and
//! an `error_id`; throttling is 429 with `Retry-After`.
//!
//! ## Console: `ConsoleError`
//!
//! `NotFound` is 404 (one page for absent and foreign ids); a saturated
//! evaluation pool is 503 with `Retry-After`; a store or session failure is
//! the 503 "Temporarily unavailable" page, logged under an `error_id`.
//!
//! ## Command line: `crate::Error`
//!
//! An operator file refused whole (`Error::OperatorFile`, or a report of
//! bad input) exits 2 with the report on stderr; any other failure (store,
//! catalog, I/O) exits 1 with `error: <message>`; success exits 0.
