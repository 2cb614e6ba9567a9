//! Property: making any fact a rule needs unknown never yields `pass`
//! (docs/lint.md "Why unknown never passes").
