-- 0001_dealers (PostgreSQL): dealer organizations, their rooftops, gateway secrets.
--
-- Conventions for this backend (the SQLite twin is migrations/sqlite/0001_dealers.sql):
-- * timestamps are timestamptz;
-- * json documents are `json`, not `jsonb`: json keeps the document text as
--   written, so object key order (and hence every response built from a
--   stored wire object) is identical to the SQLite backend. The gateway never
--   queries inside these documents, so jsonb's operators and indexes buy nothing.

-- One dealer organization, as imported from the dealers file.
create table organizations (
    organization_id text not null primary key,
    name            text not null,
    legal_name      text,
    -- DAP `extensions` bag of the organization, verbatim.
    extensions      json,
    -- Provenance of the last import that named this organization (SourceRecord).
    source          json not null,
    created_at      timestamptz not null,
    -- Last time the organization's content (not just its provenance) changed.
    updated_at      timestamptz not null
);

-- One rooftop (store location) of an organization.
create table rooftops (
    organization_id text not null
        references organizations (organization_id) on delete cascade,
    rooftop_id      text not null,
    -- 0-based order of the rooftop in the imported file.
    position        integer not null,
    -- The DAP `rooftop` wire object, verbatim (key order preserved).
    dap             json not null,
    -- The gateway's own per-rooftop settings (RooftopSettings).
    settings        json not null,
    primary key (organization_id, rooftop_id)
);

-- A rooftop id names one rooftop gateway-wide: the DAP manifest keys
-- freshness SLAs by rooftop id, so two organizations may not share one.
create unique index rooftops_rooftop_id_unique on rooftops (rooftop_id);

-- Named secrets shared by every replica (e.g. the cursor sealing key).
create table gateway_secrets (
    name       text not null primary key,
    value      bytea not null,
    created_at timestamptz not null
);
