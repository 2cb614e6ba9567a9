//! Integration tests: aap (issue 16). Filled in by its area.

/// The tools whose isolation cases this module checks with the matrix's
/// credentials (`security::Who`, `security::Fixture`); the catalog
/// coverage test in `security` accepts them.
pub(crate) const ISOLATION_TOOLS: &[&str] = &[];
