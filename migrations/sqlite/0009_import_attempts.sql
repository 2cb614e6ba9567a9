-- 0009_import_attempts (SQLite): refused imports, kept for the console's
-- imports page, and a count of every import by kind and outcome for
-- /metrics (docs/console.md "Imports", docs/operations.md "Metrics").
--
-- Same conventions as 0001_dealers.sql (strict tables, RFC 3339 UTC text
-- timestamps with microseconds, json documents as json_valid() text). The
-- PostgreSQL twin is migrations/postgres/0009_import_attempts.sql.

-- One refused import (an invalid file, a store refusal, or the removal
-- guard), written by the CLI after the refusal, when nothing else was. A
-- successful import is a snapshot (or a program revision) and is not kept
-- here. Bounded: the gateway keeps the newest 100 per organization (and 100
-- that name no organization), and every text within the bounds below. No
-- foreign key: a refusal may name an organization that is not stored.
create table import_attempts (
    -- UUID v7 text, made by the gateway (sorts as attempted_at does).
    attempt_id      text not null primary key,
    attempted_at    text not null,
    kind            text not null check (kind in ('inventory', 'programs', 'dealers')),
    outcome         text not null check (outcome in ('invalid', 'refused', 'removal_guard')),
    -- The organization whose file it was; null when the file names none
    -- that is stored (then no manager sees it).
    organization_id text check (length(organization_id) <= 256),
    -- JSON array of the rooftop ids it would have changed; [] = the
    -- organization as a whole (its rooftops are not known, or it is a
    -- programs or dealers file).
    rooftop_ids     text not null check (json_valid(rooftop_ids)),
    -- The file as the operator named it.
    file            text not null check (length(file) <= 300),
    -- Why, in one line of the gateway's own words.
    reason          text not null check (length(reason) <= 500),
    -- Problems found (0 when the refusal is not about the file's content).
    problems        integer not null check (problems >= 0)
) strict;

create index import_attempts_organization on import_attempts (organization_id, attempt_id);

-- Every import the CLI ran (dry runs excluded), by kind and outcome
-- (`imported` included): /metrics reports these totals as
-- dealer_gateway_imports_total. Never decremented or pruned.
create table import_counts (
    kind    text not null check (kind in ('inventory', 'programs', 'dealers')),
    outcome text not null
        check (outcome in ('imported', 'invalid', 'refused', 'removal_guard')),
    count   integer not null check (count >= 1),
    primary key (kind, outcome)
) strict;
