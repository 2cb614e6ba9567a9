-- 0011_legacy_subscriptions (PostgreSQL): the resource subscriptions of a legacy
-- (2025-11-25) MCP session (resources/subscribe, resources/unsubscribe),
-- kept with the session in the store so the replica that serves the
-- session's GET stream follows the set wherever it was changed
-- (docs/mcp.md "Subscriptions", docs/operations.md "Replicas"). The SQLite
-- twin is migrations/sqlite/0011_legacy_subscriptions.sql.
--
-- A JSON array of the subscribed URIs, at most the per-stream cap of the
-- gateway (each authorized like a read when subscribed and again when a GET
-- stream follows it). Deleting the session deletes its subscriptions.
alter table legacy_sessions add column subscriptions text not null default '[]';

-- The random token of the session's GET stream: a new GET stream writes its
-- own, and the stream that finds another token on its next read (about a
-- second later, on any replica) ends, so a session has one stream.
alter table legacy_sessions add column stream text;
