-- 0003_security (PostgreSQL): gateway API tokens and the audit log.
--
-- Same conventions as 0001_dealers.sql (timestamptz; json, not jsonb, bound
-- as text and cast with `::json`). The SQLite twin is
-- migrations/sqlite/0003_security.sql. Ids sort in byte order ("C"), as on
-- SQLite, whatever the database's collation.

-- One gateway API token (docs/tokens-and-audit.md). The token's secret is
-- never stored: only `sha256:<hex>` of it.
create table api_tokens (
    -- Public identifier: 16 lowercase hex characters.
    token_id        text collate "C" not null primary key,
    secret_hash     text not null,
    subject         text not null,
    organization_id text not null
        references organizations (organization_id) on delete cascade,
    -- The RooftopScope: {"rooftops": [...]} or "group".
    rooftops        json not null,
    -- JSON array of scope strings.
    scopes          json not null,
    purpose         text not null,
    created_at      timestamptz not null,
    expires_at      timestamptz not null,
    -- Set by the first revocation, never changed afterwards.
    revoked_at      timestamptz
);

create index api_tokens_created_at on api_tokens (created_at, token_id);
create index api_tokens_organization_id on api_tokens (organization_id);

-- One audit event (DAP-CORE-039/040). Append-only. Never holds a token, a
-- secret or raw tool arguments. No foreign keys: events outlive the
-- organizations and tokens they name.
create table audit_events (
    -- UUID v7 text, made by the gateway.
    event_id        text collate "C" not null primary key,
    occurred_at     timestamptz not null,
    trace_id        text not null,
    subject         text not null,
    -- The Credential (token id or issuer); null for an anonymous caller.
    credential      json,
    organization_id text,
    rooftop_ids     json not null,
    tool            text not null,
    profile         text not null,
    policy_decision text not null,
    resource_ids    json not null,
    outcome         text not null,
    delegation      json not null
);

-- `audit export --since T` pages through (occurred_at, event_id).
create index audit_events_occurred_at on audit_events (occurred_at, event_id);
