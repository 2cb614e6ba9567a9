//! Integration tests: wellknown (issue 16). Filled in by its area.
