-- 0010_audit_shares (PostgreSQL): audit events that cannot be crowded out
-- (docs/tokens-and-audit.md "Retention and size"). The SQLite twin is
-- migrations/sqlite/0010_audit_shares.sql.

-- How many rooftop ids a call named that name no rooftop of the directory:
-- counted instead of stored, so an event holds only what identifies the
-- decision.
alter table audit_events add column unresolved_rooftops bigint not null default 0
    check (unresolved_rooftops >= 0);

-- The size bound prunes each principal's own oldest events past its share
-- first (`subject` is the principal); this index finds them.
create index audit_events_subject on audit_events (subject, occurred_at, event_id);
