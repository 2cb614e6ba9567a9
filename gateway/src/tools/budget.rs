//! The result budget: how large one tool result may be, and how a result
//! that leaves something out says so (docs/benchmarks.md "Result sizes and
//! the token budget", docs/mcp.md "Content blocks").
//!
//! Agent harnesses cap what one tool result may put in a model's context:
//! one widely used client refuses more than 25,000 tokens, others cut at
//! 25 KiB or 25,000 characters. Which part they hand the model differs
//! (some the text blocks, one `JSON.stringify(structuredContent)` alone),
//! so both must fit, and each must say on its own what was left out: the
//! structured content carries the note wherever its schema has room (an
//! extension member, a `transformations` entry), and the text block is its
//! serialization, so it carries the same note.
//!
//! Every tool's default answer is built to [`RESULT_BYTES`], below both
//! limits: the structured content plus the other content blocks of the
//! result (the `resource_link`s). A caller who asks for more (`detail:
//! "full"`, a larger `limit`) gets a page ended early with a cursor, or
//! the concise form with a note naming the rest and how to fetch it. A
//! result that is larger anyway (a manifest of several hundred rooftops)
//! is never cut: [`over_budget_meta`] marks it in the result's `_meta`,
//! and the gateway logs it.

use serde_json::{Value, json};

pub use crate::inventory::render::Detail;

/// The most characters of text content one result should carry.
pub const TEXT_CHARS: usize = 25_000;
/// The most bytes of serialized `structuredContent` one result should
/// carry (25 KiB).
pub const STRUCTURED_BYTES: usize = 25_600;
/// What a tool fills its default answer to: the structured content plus
/// the serialized `resource_link` blocks, at most this many bytes. It is
/// below both limits above, and the text block (the structured content's
/// serialization: a character is at least one byte) therefore fits too.
pub const RESULT_BYTES: usize = 24_000;

/// A note for the structured content of a result that leaves something
/// out: what, and how to get it. `left_out` and `how_to_get` are this
/// gateway's own sentences (identifiers of the caller's records at most),
/// never an echo of the caller's input.
pub fn omitted(left_out: &[String], how_to_get: &str) -> Value {
    json!({
        "detail": Detail::Concise.as_str(),
        "left_out": left_out,
        "how_to_get": how_to_get,
    })
}

/// The `_meta` member of a result larger than [`STRUCTURED_BYTES`] that no
/// rule of its tool could shorten (it has none that would keep it a
/// correct answer), so a client can tell before handing it on.
pub fn over_budget_meta(structured_bytes: usize) -> Value {
    json!({
        "structured_bytes": structured_bytes,
        "budget_bytes": STRUCTURED_BYTES,
        "note": "This result is larger than the gateway's result budget and was not shortened; narrow the request (organization_id, rooftop_ids, filters) for a smaller answer.",
    })
}

/// The `_meta` key of [`over_budget_meta`].
pub const OVER_BUDGET_META: &str = "dealergateway.budget";

/// A `resource_link` content block (MCP `ResourceLink`) for the vehicle
/// resource `dealeragent://organization/{o}/rooftop/{r}/vehicle/{v}`
/// (`resources::templates`), written with its leading comma so blocks can
/// be appended after the text block. The ids are DAP identifiers (letters,
/// digits and `._:-`), which need no escaping in a URI; they are still
/// written as JSON strings.
pub fn push_vehicle_link(
    out: &mut String,
    organization_id: &str,
    rooftop_id: &str,
    vehicle_id: &str,
) {
    use crate::inventory::render::json_string;
    let plain = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    };
    out.push_str(",{\"type\":\"resource_link\",\"uri\":");
    if plain(organization_id) && plain(rooftop_id) && plain(vehicle_id) {
        // Identifiers need no escaping: written in place, no allocation.
        out.push_str("\"dealeragent://organization/");
        out.push_str(organization_id);
        out.push_str("/rooftop/");
        out.push_str(rooftop_id);
        out.push_str("/vehicle/");
        out.push_str(vehicle_id);
        out.push_str("\",\"name\":\"");
        out.push_str(vehicle_id);
        out.push('"');
    } else {
        out.push_str(&json_string(&format!(
            "dealeragent://organization/{organization_id}/rooftop/{rooftop_id}/vehicle/{vehicle_id}"
        )));
        out.push_str(",\"name\":");
        out.push_str(&json_string(vehicle_id));
    }
    out.push_str(",\"mimeType\":\"application/json\"}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link block is a JSON object of MCP's `ResourceLink` shape, and the
    /// budget constants keep their order (the working budget under both
    /// limits).
    #[test]
    fn a_vehicle_link_is_a_resource_link_block() {
        let mut out = String::new();
        push_vehicle_link(&mut out, "org.a", "roof.b", "veh.c");
        let block: Value = serde_json::from_str(&out[1..]).unwrap();
        assert_eq!(
            block,
            json!({"type": "resource_link", "uri": "dealeragent://organization/org.a/rooftop/roof.b/vehicle/veh.c",
                   "name": "veh.c", "mimeType": "application/json"})
        );
        assert!(out.starts_with(','));
        // An identifier that would need escaping is escaped.
        let mut odd = String::new();
        push_vehicle_link(&mut odd, "org.a", "roof\"b", "veh.c");
        let block: Value = serde_json::from_str(&odd[1..]).unwrap();
        assert_eq!(
            block["uri"],
            "dealeragent://organization/org.a/rooftop/roof\"b/vehicle/veh.c"
        );
        const { assert!(RESULT_BYTES < TEXT_CHARS && TEXT_CHARS < STRUCTURED_BYTES) };
    }
}
