-- 0008_legacy_sessions (SQLite): legacy (2025-11-25) MCP transport sessions
-- kept in the store, so any replica serves any session (issue 15 item 4).
--
-- Same conventions as 0001_dealers.sql (strict tables, RFC 3339 UTC text
-- timestamps with microseconds, which sort as they compare). The PostgreSQL
-- twin is migrations/postgres/0008_legacy_sessions.sql.
--
-- A session is transport state only, never identity or authorization. The
-- key is the SHA-256 (lowercase hex) of the session id, so the table holds
-- no usable id. A terminated (DELETE) session's row is deleted; a session
-- idle past --legacy-session-idle-seconds is deleted when next seen or at
-- the next creation; at --max-legacy-sessions the least recently seen goes.
-- `last_seen` is refreshed at most every few seconds (not on every request).
create table legacy_sessions (
    session_key      text not null primary key,
    protocol_version text not null,
    -- 1 once notifications/initialized arrived.
    initialized      integer not null default 0 check (initialized in (0, 1)),
    created_at       text not null,
    last_seen        text not null
) strict;

create index legacy_sessions_last_seen on legacy_sessions (last_seen);
