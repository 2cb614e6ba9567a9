//! What changed for each subscribed URI, classified into the wire
//! contract's kinds (docs/mcp.md "Subscriptions").
