-- 0005_programs (SQLite): incentive programs per organization (issue 7).
--
-- Same conventions as 0001_dealers.sql (strict tables, RFC 3339 UTC text
-- timestamps with microseconds, json documents as json_valid() text). The
-- PostgreSQL twin is migrations/postgres/0005_programs.sql.

-- One revision of one incentive program (OFFERS.md section 2), as imported
-- by `dealer-gateway import programs`. Programs are versioned by
-- (program_id, revision): a revision is immutable once stored, and an older
-- revision never overwrites a newer one. Evaluations use the newest
-- revision of each program_id.
create table incentive_programs (
    organization_id text not null
        references organizations (organization_id) on delete cascade,
    program_id      text not null,
    revision        integer not null check (revision >= 0),
    -- The pricing::Program exactly as imported.
    doc             text not null check (json_valid(doc)),
    -- `sha256:<hex>` of the stacking rule source, for rule_defined programs.
    rule_hash       text,
    imported_at     text not null,
    -- Provenance of the import that stored this revision (SourceRecord).
    source          text not null check (json_valid(source)),
    primary key (organization_id, program_id, revision)
) strict;
