-- 0009_import_attempts (PostgreSQL): refused imports, kept for the
-- console's imports page, and a count of every import by kind and outcome
-- for /metrics (docs/console.md "Imports", docs/operations.md "Metrics").
--
-- Same conventions as 0001_dealers.sql (timestamptz; json, not jsonb, bound
-- as text and cast with `::json`). The SQLite twin is
-- migrations/sqlite/0009_import_attempts.sql; see it for the meaning of
-- each column.

create table import_attempts (
    attempt_id      text collate "C" not null primary key,
    attempted_at    timestamptz not null,
    kind            text not null check (kind in ('inventory', 'programs', 'dealers')),
    outcome         text not null check (outcome in ('invalid', 'refused', 'removal_guard')),
    organization_id text collate "C" check (length(organization_id) <= 256),
    rooftop_ids     json not null,
    file            text not null check (length(file) <= 300),
    reason          text not null check (length(reason) <= 500),
    problems        bigint not null check (problems >= 0)
);

create index import_attempts_organization on import_attempts (organization_id, attempt_id);

create table import_counts (
    kind    text not null check (kind in ('inventory', 'programs', 'dealers')),
    outcome text not null
        check (outcome in ('imported', 'invalid', 'refused', 'removal_guard')),
    count   bigint not null check (count >= 1),
    primary key (kind, outcome)
);
