-- 0004_availability (PostgreSQL): observations of live availability checks.
--
-- The SQLite twin is migrations/sqlite/0004_availability.sql; see it for
-- the meaning of each column.

create table availability_observations (
    observation_id  text collate "C" not null primary key,
    organization_id text not null,
    rooftop_id      text not null,
    vehicle_id      text not null,
    status          text not null,
    authority       text not null,
    observed_at     timestamptz not null,
    source          json not null,
    checked_at      timestamptz not null
);

create index availability_observations_latest
    on availability_observations (rooftop_id, vehicle_id, observed_at desc, checked_at desc);
