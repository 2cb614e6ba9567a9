//! The deliberate deviations of our claim (`conformance/claim.schema.json`,
//! what [`super::issue`] emits) from the public DAP 0.1 claim schema
//! (`conformance/claim.schema.json` of the public DAP repository, not
//! vendored here). DAP 14 keeps a claim honest by listing deviations rather
//! than hiding them, so `issue` puts every one of these in the claim's
//! `exceptions`, ahead of the issuer's own; a verifier using the public
//! schema learns from the claim itself why a member is there.
//!
//! The facts about the public schema that these rest on are in
//! [`PUBLIC_MEMBERS`]; a test walks our schema against them, so a member
//! added to our schema without a deviation here fails the build's tests.

/// Each deviation: the member it concerns, then what differs and why. The
/// text starts with the member path so a reader (and the test) can find it.
pub const SCHEMA_DEVIATIONS: &[&str] = &[
    "implementation.scopes: a member the public DAP 0.1 claim schema does not define (its implementation object admits no other members, so a validator of the public schema rejects the claim for it): the exact authorization scopes the gateway serves, which DAP 0.1 section 14 requires a claim to pin.",
    "implementation.extensions: always present (an empty array when no extension is served), where the public schema makes it optional; stricter only, so it changes nothing for a validator of the public schema.",
    "signer.signature: the JWS header typ is \"dap-claim+jws\" (the payload is a DAP claim, not a JWT claims set; RFC 8725 3.11), where the public example claim's header says \"JWT\"; the schema constrains neither.",
];

/// Facts about the public DAP 0.1 claim schema: every object's member
/// names (dotted path of the object, then its members) and which are
/// required. Not its text: only what the deviation test compares.
#[cfg(test)]
pub const PUBLIC_MEMBERS: &[(&str, &[&str], &[&str])] = &[
    (
        "",
        &[
            "claim_version",
            "claim_id",
            "status",
            "specification",
            "implementation",
            "profiles",
            "mcp_revisions",
            "test_run",
            "exceptions",
            "issued_at",
            "expires_at",
            "signer",
        ],
        &[
            "claim_version",
            "claim_id",
            "status",
            "specification",
            "implementation",
            "profiles",
            "mcp_revisions",
            "test_run",
            "issued_at",
            "expires_at",
            "signer",
        ],
    ),
    (
        "specification",
        &["version", "uri", "digest"],
        &["version", "uri", "digest"],
    ),
    (
        "implementation",
        &[
            "name",
            "version",
            "endpoint",
            "source_revision",
            "operator",
            "organization_ids",
            "rooftop_ids",
            "tools",
            "resources",
            "auth_modes",
            "extensions",
        ],
        &[
            "name",
            "version",
            "endpoint",
            "source_revision",
            "operator",
            "organization_ids",
            "rooftop_ids",
            "tools",
            "resources",
            "auth_modes",
        ],
    ),
    (
        "test_run",
        &[
            "suite_version",
            "result",
            "completed_at",
            "report_digest",
            "report_uri",
        ],
        &[
            "suite_version",
            "result",
            "completed_at",
            "report_digest",
            "report_uri",
        ],
    ),
    (
        "signer",
        &["organization", "key_id", "algorithm", "signature"],
        &["organization", "key_id", "algorithm", "signature"],
    ),
];
