//! The DAP 0.1 wire vocabulary, on the ground floor: the typed records and
//! constants every layer shares, each defined once and held to the
//! published schemas (`schemas/`) by drift tests.

/// DAP `source`, `provenance` and `freshness`.
pub mod provenance;
