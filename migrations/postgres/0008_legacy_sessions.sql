-- 0008_legacy_sessions (PostgreSQL): legacy (2025-11-25) MCP transport
-- sessions kept in the store, so any replica serves any session (issue 15
-- item 4).
--
-- The SQLite twin is migrations/sqlite/0008_legacy_sessions.sql; see it for
-- the meaning of the columns.
create table legacy_sessions (
    session_key      text not null primary key,
    protocol_version text not null,
    initialized      boolean not null default false,
    created_at       timestamptz not null,
    last_seen        timestamptz not null
);

create index legacy_sessions_last_seen on legacy_sessions (last_seen);
