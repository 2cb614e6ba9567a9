//! The reserved `dealeragent://` URIs a stream may hold (DAP section 1
//! "Resources"), parsed without any lookup. The same shapes as
//! `resources.rs` reads; kept here so the hub stays below the transport.

pub const MANIFEST_URI: &str = "dealeragent://manifest";
const ORG_PREFIX: &str = "dealeragent://organization/";
/// The longest identifier segment accepted (as `resources.rs`).
const MAX_SEGMENT: usize = 128;

/// What a subscribed URI names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Manifest,
    Organization(String),
    Rooftop(String, String),
    Vehicle(String, String, String),
}

impl Target {
    /// The URI of this target (the inverse of [`parse`]).
    pub fn uri(&self) -> String {
        match self {
            Target::Manifest => MANIFEST_URI.to_owned(),
            Target::Organization(o) => format!("{ORG_PREFIX}{o}"),
            Target::Rooftop(o, r) => format!("{ORG_PREFIX}{o}/rooftop/{r}"),
            Target::Vehicle(o, r, v) => format!("{ORG_PREFIX}{o}/rooftop/{r}/vehicle/{v}"),
        }
    }

    /// The organization it belongs to (`None`: the manifest).
    pub fn organization(&self) -> Option<&str> {
        match self {
            Target::Manifest => None,
            Target::Organization(o) | Target::Rooftop(o, _) | Target::Vehicle(o, _, _) => Some(o),
        }
    }
}

/// `None` for anything but the four reserved shapes.
pub fn parse(uri: &str) -> Option<Target> {
    if uri == MANIFEST_URI {
        return Some(Target::Manifest);
    }
    let rest = uri.strip_prefix(ORG_PREFIX)?;
    let segments: Vec<&str> = rest.split('/').collect();
    let ok = |s: &str| !s.is_empty() && s.len() <= MAX_SEGMENT;
    match segments.as_slice() {
        [org] if ok(org) => Some(Target::Organization((*org).to_owned())),
        [org, "rooftop", rooftop] if ok(org) && ok(rooftop) => {
            Some(Target::Rooftop((*org).to_owned(), (*rooftop).to_owned()))
        }
        [org, "rooftop", rooftop, "vehicle", vehicle] if ok(org) && ok(rooftop) && ok(vehicle) => {
            Some(Target::Vehicle(
                (*org).to_owned(),
                (*rooftop).to_owned(),
                (*vehicle).to_owned(),
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_shapes_parse_and_round_trip() {
        for uri in [
            "dealeragent://manifest",
            "dealeragent://organization/org.a",
            "dealeragent://organization/org.a/rooftop/roof.b",
            "dealeragent://organization/org.a/rooftop/roof.b/vehicle/veh.c",
        ] {
            assert_eq!(parse(uri).map(|t| t.uri()).as_deref(), Some(uri));
        }
        for bad in [
            "dealeragent://organization/",
            "dealeragent://organization/org.a/vehicle/x",
            "dealeragent://organization/org.a/rooftop/r/vehicle/",
            "file:///etc/passwd",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        let long = format!("dealeragent://organization/{}", "x".repeat(129));
        assert_eq!(parse(&long), None);
    }
}
