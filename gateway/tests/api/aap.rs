//! Integration tests: aap (issue 16). Filled in by its area.
