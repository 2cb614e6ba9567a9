-- 0006_audit_bounds (SQLite): counted audit entries for refused anonymous calls
-- (issue 11 item 1, docs/security.md "Audit retention").
--
-- Same conventions as 0001_dealers.sql (strict tables, RFC 3339 UTC text
-- timestamps with microseconds). The PostgreSQL twin is
-- migrations/postgres/0006_audit_bounds.sql.

-- A refused, invalid or rate-limited ANONYMOUS call is not stored one by
-- one: it increments the counter of its (minute, client network, tool,
-- outcome). The key holds no identifier from the request, so an attacker
-- cannot make one row per request by varying arguments; the network is the
-- /24 (IPv4) or /48 (IPv6) prefix, never the full address. The number of
-- networks per minute is capped by the gateway (beyond it: `overflow`).
create table audit_counters (
    -- Start of the one-minute window (RFC 3339, seconds are :00).
    window_start    text not null,
    -- e.g. 203.0.113.0/24, 2001:db8:1::/48, or overflow.
    client_network  text not null check (length(client_network) <= 64),
    tool            text not null check (length(tool) <= 256),
    -- The DAP error code of the calls counted.
    outcome         text not null check (length(outcome) <= 256),
    profile         text not null check (length(profile) <= 256),
    policy_decision text not null check (length(policy_decision) <= 16),
    count           integer not null check (count >= 1),
    -- The trace id of the first call counted, to find it in the logs.
    first_trace_id  text not null check (length(first_trace_id) <= 256),
    -- When the last call counted was made.
    last_at         text not null,
    primary key (window_start, client_network, tool, outcome)
) strict;
