-- 0002_inventory (PostgreSQL): immutable inventory snapshots and their vehicles.
--
-- Same conventions as 0001_dealers.sql (timestamptz; json, not jsonb, bound
-- as text and cast with `::json`). The SQLite twin is
-- migrations/sqlite/0002_inventory.sql.
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
    version         bigint not null check (version >= 1),
    created_at      timestamptz not null,
    -- Provenance of the imported file (SourceRecord).
    source          json not null,
    vehicle_count   bigint not null check (vehicle_count >= 0),
    -- What the import changed against the previous snapshot (InventoryImportSummary).
    summary         json not null,
    -- Also the index behind "newest snapshot of a rooftop" and the foreign key.
    unique (organization_id, rooftop_id, version),
    foreign key (organization_id, rooftop_id)
        references rooftops (organization_id, rooftop_id) on delete cascade
);

-- One vehicle of one snapshot.
create table vehicles (
    snapshot_id  text not null
        references inventory_snapshots (snapshot_id) on delete cascade,
    -- Gateway-scoped stable vehicle id (never the VIN). Byte order ("C"), so
    -- vehicles list in the same order as on SQLite whatever the database's
    -- collation, straight from the primary key index.
    vehicle_id   text collate "C" not null,
    -- Copies of the document's `vin` and `stock_number`, for lookups.
    vin          text,
    stock_number text,
    -- The VehicleRecord as serde JSON.
    doc          json not null,
    primary key (snapshot_id, vehicle_id)
);

-- A VIN or a stock number names at most one vehicle of a snapshot (several
-- vehicles may lack one: nulls are distinct).
create unique index vehicles_snapshot_vin on vehicles (snapshot_id, vin);
create unique index vehicles_snapshot_stock_number on vehicles (snapshot_id, stock_number);
