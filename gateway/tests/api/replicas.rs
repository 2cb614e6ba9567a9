//! Integration tests: replicas (issue 15). Filled in by its area.
