//! Prometheus metrics (issue 15 item 1).
