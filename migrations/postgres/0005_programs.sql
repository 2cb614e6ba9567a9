-- 0005_programs (PostgreSQL): incentive programs per organization (issue 7).
--
-- The SQLite twin is migrations/sqlite/0005_programs.sql; see it for the
-- meaning of each column.

create table incentive_programs (
    organization_id text not null
        references organizations (organization_id) on delete cascade,
    program_id      text collate "C" not null,
    revision        bigint not null check (revision >= 0),
    doc             json not null,
    rule_hash       text,
    imported_at     timestamptz not null,
    source          json not null,
    primary key (organization_id, program_id, revision)
);
