-- 0002_inventory (SQLite): immutable inventory snapshots and their vehicles.
--
-- Same conventions as 0001_dealers.sql (strict tables, RFC 3339 UTC text
-- timestamps with microseconds, json documents as json_valid() text). The
-- PostgreSQL twin is migrations/postgres/0002_inventory.sql.
--
-- Each import of a rooftop's inventory writes one new snapshot and all of its
-- vehicles in one transaction; rows are never updated afterwards. Reads are
-- pinned to a snapshot id, so a reader never mixes two imports. Superseded
-- snapshots are deleted by pruning (the newest of a rooftop never is), and
-- every snapshot of a rooftop goes when the dealers file drops the rooftop.

-- One immutable inventory snapshot of one rooftop.
create table inventory_snapshots (
    -- UUID v7 text, made by the gateway.
    snapshot_id     text not null primary key,
    organization_id text not null,
    rooftop_id      text not null,
    -- 1, 2, 3, ... per rooftop; the highest is the rooftop's current snapshot.
    version         integer not null check (version >= 1),
    created_at      text not null,
    -- Provenance of the imported file (SourceRecord).
    source          text not null check (json_valid(source)),
    vehicle_count   integer not null check (vehicle_count >= 0),
    -- What the import changed against the previous snapshot (InventoryImportSummary).
    summary         text not null check (json_valid(summary)),
    -- Also the index behind "newest snapshot of a rooftop" and the foreign key.
    unique (organization_id, rooftop_id, version),
    foreign key (organization_id, rooftop_id)
        references rooftops (organization_id, rooftop_id) on delete cascade
) strict;

-- One vehicle of one snapshot.
create table vehicles (
    snapshot_id  text not null
        references inventory_snapshots (snapshot_id) on delete cascade,
    -- Gateway-scoped stable vehicle id (never the VIN).
    vehicle_id   text not null,
    -- Copies of the document's `vin` and `stock_number`, for lookups.
    vin          text,
    stock_number text,
    -- The VehicleRecord as serde JSON.
    doc          text not null check (json_valid(doc)),
    primary key (snapshot_id, vehicle_id)
) strict;

-- A VIN or a stock number names at most one vehicle of a snapshot (several
-- vehicles may lack one: nulls are distinct).
create unique index vehicles_snapshot_vin on vehicles (snapshot_id, vin);
create unique index vehicles_snapshot_stock_number on vehicles (snapshot_id, stock_number);
