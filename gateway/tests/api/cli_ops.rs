//! Operator-facing CLI: completions, the config file, progress, preview (issues 14 item 6 and 15).
