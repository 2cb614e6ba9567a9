-- 0001_dealers (SQLite): dealer organizations, their rooftops, gateway secrets.
--
-- Conventions for this backend (the PostgreSQL twin is migrations/postgres/0001_dealers.sql):
-- * strict tables, so a wrongly typed bind fails instead of being coerced;
-- * timestamps are text in RFC 3339 UTC with microseconds, written by the
--   gateway ("2026-11-29T10:00:00.000000Z"): fixed width, so they sort as text;
-- * json documents are text checked with json_valid(); the gateway never
--   queries inside them, it decodes them into domain types (store/mod.rs).

-- One dealer organization, as imported from the dealers file.
create table organizations (
    organization_id text not null primary key,
    name            text not null,
    legal_name      text,
    -- DAP `extensions` bag of the organization, verbatim.
    extensions      text check (extensions is null or json_valid(extensions)),
    -- Provenance of the last import that named this organization (SourceRecord).
    source          text not null check (json_valid(source)),
    created_at      text not null,
    -- Last time the organization's content (not just its provenance) changed.
    updated_at      text not null
) strict;

-- One rooftop (store location) of an organization.
create table rooftops (
    organization_id text not null
        references organizations (organization_id) on delete cascade,
    rooftop_id      text not null,
    -- 0-based order of the rooftop in the imported file.
    position        integer not null,
    -- The DAP `rooftop` wire object, verbatim (key order preserved).
    dap             text not null check (json_valid(dap)),
    -- The gateway's own per-rooftop settings (RooftopSettings).
    settings        text not null check (json_valid(settings)),
    primary key (organization_id, rooftop_id)
) strict;

-- A rooftop id names one rooftop gateway-wide: the DAP manifest keys
-- freshness SLAs by rooftop id, so two organizations may not share one.
create unique index rooftops_rooftop_id_unique on rooftops (rooftop_id);

-- Named secrets shared by every replica (e.g. the cursor sealing key).
create table gateway_secrets (
    name       text not null primary key,
    value      blob not null,
    created_at text not null
) strict;
