//! Integration tests: used_vehicle (issue 16). Filled in by its area.
