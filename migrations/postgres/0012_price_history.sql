-- 0012_price_history (PostgreSQL): the advertised-price history of every
-- vehicle, for the disclosure lint's price-reduction rules (docs/lint.md;
-- retention: docs/operations.md "Price history"). The SQLite twin is
-- migrations/sqlite/0012_price_history.sql.
--
-- One point per (vehicle, snapshot that changed its price): the snapshot
-- writer records a point when a vehicle first appears in a rooftop's
-- snapshots (or reappears) and when its advertised price differs from the
-- previous snapshot's; an unchanged price writes nothing. A point is in
-- force from `valid_from` (its snapshot's created_at) until the next point
-- of the same vehicle. Pruning deletes a point 90 days or more after it was
-- superseded; the newest point of a vehicle is never pruned. Dropping the
-- rooftop from the dealers file drops its history.
create table price_history (
    organization_id text not null,
    rooftop_id      text not null,
    vehicle_id      text collate "C" not null,
    valid_from      timestamptz not null,
    amount_minor    bigint not null,
    currency        text not null,
    -- Serves a vehicle's history (in force at a time, then every later
    -- point) and pruning's "next point" lookup.
    primary key (organization_id, rooftop_id, vehicle_id, valid_from),
    foreign key (organization_id, rooftop_id)
        references rooftops (organization_id, rooftop_id) on delete cascade
);
