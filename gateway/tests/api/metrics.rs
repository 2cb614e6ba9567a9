//! Integration tests: metrics (issue 15). Filled in by its area.
