-- 0004_availability (SQLite): observations of live availability checks.
--
-- Same conventions as 0001_dealers.sql (strict tables, RFC 3339 UTC text
-- timestamps with microseconds, json documents as json_valid() text). The
-- PostgreSQL twin is migrations/postgres/0004_availability.sql.

-- One availability observation made by dealeragent.inventory.verify_availability
-- from a rooftop's live (http) source (docs/availability.md). Append-only;
-- later reads (verify on another replica, get_vehicle) show the newest one,
-- labelled by its age. No foreign keys: an observation names what was
-- checked even after the rooftop is re-imported.
create table availability_observations (
    -- UUID v7 text, made by the gateway.
    observation_id  text not null primary key,
    organization_id text not null,
    rooftop_id      text not null,
    vehicle_id      text not null,
    -- DAP availability status: available|in_transit|on_hold|pending_sale|sold|unavailable|unknown.
    status          text not null,
    -- DAP source authority of the answering system.
    authority       text not null,
    -- When the dealer system observed the status.
    observed_at     text not null,
    -- {"kind": "http", "source_name": "..."}: which source answered.
    source          text not null check (json_valid(source)),
    -- When the gateway made the check.
    checked_at      text not null
) strict;

create index availability_observations_latest
    on availability_observations (rooftop_id, vehicle_id, observed_at desc, checked_at desc);
