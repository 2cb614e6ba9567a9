//! Wire limits every DAP record shares, defined once (common.schema.json).

/// Longest `freshness.max_age_seconds` the schema allows (30 days).
pub const MAX_AGE_LIMIT: u32 = 2_592_000;

/// `provenance.transformations` `maxItems`.
pub const MAX_TRANSFORMATIONS: usize = 32;

/// `provenance.transformations[]` `maxLength` (characters).
pub const MAX_TRANSFORMATION_CHARS: usize = 160;

/// The first `max_chars` characters of `s` (never cut inside a character):
/// how a member is held to its schema `maxLength`.
pub fn truncate(s: &str, max_chars: usize) -> &str {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abc", 2), "ab");
        assert_eq!(truncate("éèê", 2), "éè");
        assert_eq!(truncate("", 0), "");
    }

    #[test]
    fn the_limits_are_the_published_ones() {
        let catalog = crate::catalog::Catalog::load().expect("catalog");
        let common = &catalog.schema_documents["common.schema.json"];
        let defs = &common["$defs"];
        assert_eq!(
            defs["freshness"]["properties"]["max_age_seconds"]["maximum"],
            serde_json::json!(MAX_AGE_LIMIT)
        );
        let t = &defs["provenance"]["properties"]["transformations"];
        assert_eq!(t["maxItems"], serde_json::json!(MAX_TRANSFORMATIONS));
        assert_eq!(
            t["items"]["maxLength"],
            serde_json::json!(MAX_TRANSFORMATION_CHARS)
        );
    }
}
