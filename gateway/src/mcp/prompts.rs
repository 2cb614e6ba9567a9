//! MCP prompts: the shopping tasks agents run against this gateway, each a
//! short, typed recipe that names the tools to call, in which order, and
//! how to present the answer so it never misleads a buyer (docs/agents.md,
//! docs/mcp.md "Prompts and completions").
//!
//! A prompt reads nothing: `prompts/get` only checks its arguments and
//! writes them into the recipe, so it needs no grant and reveals no record
//! (the tools the recipe calls apply the caller's grant as always). Every
//! argument is checked against the rule its tool input would apply
//! (identifiers, VINs, ISO 3166-2 codes); an error names the argument and
//! the rule in words and never repeats the value (DAP-ERR-002).

use serde_json::{Value, json};

use super::error::RpcError;

/// One argument of a prompt (MCP `PromptArgument`).
pub struct Argument {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    /// What a value must be.
    pub rule: Rule,
}

/// The check a prompt argument's value must pass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rule {
    /// A DAP identifier (common.schema.json `identifier`).
    Identifier,
    /// An ISO 3166-1 country (`US`) or 3166-2 subdivision (`US-IL`).
    Jurisdiction,
    /// 2 to 5 VINs separated by commas.
    Vins,
    /// Free text of 1 to 500 characters without control characters.
    Text,
}

impl Rule {
    /// The rule in words, for errors and argument descriptions.
    pub fn words(self) -> &'static str {
        match self {
            Rule::Identifier => {
                "an identifier: 1 to 128 characters, letters, digits and . _ : - starting with a letter or digit (e.g. org.lakeshore-auto-group)"
            }
            Rule::Jurisdiction => {
                "an ISO 3166-1 country such as US or an ISO 3166-2 subdivision such as US-IL (capital letters)"
            }
            Rule::Vins => {
                "2 to 5 VINs separated by commas; a VIN is 17 capital letters and digits without I, O or Q"
            }
            Rule::Text => "text of 1 to 500 characters without control characters",
        }
    }

    fn accepts(self, value: &str) -> bool {
        match self {
            Rule::Identifier => is_identifier(value),
            Rule::Jurisdiction => is_jurisdiction(value),
            Rule::Vins => {
                let vins: Vec<&str> = value.split(',').map(str::trim).collect();
                (2..=5).contains(&vins.len()) && vins.iter().all(|v| is_vin(v))
            }
            Rule::Text => {
                let n = value.chars().count();
                (1..=500).contains(&n) && !value.chars().any(char::is_control)
            }
        }
    }
}

fn is_identifier(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

fn is_jurisdiction(s: &str) -> bool {
    let b = s.as_bytes();
    match b.len() {
        2 => b.iter().all(u8::is_ascii_uppercase),
        4..=6 => {
            b[..2].iter().all(u8::is_ascii_uppercase)
                && b[2] == b'-'
                && b[3..]
                    .iter()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        }
        _ => false,
    }
}

fn is_vin(s: &str) -> bool {
    s.len() == 17
        && s.bytes().all(|b| {
            (b.is_ascii_uppercase() || b.is_ascii_digit()) && !matches!(b, b'I' | b'O' | b'Q')
        })
}

/// One prompt.
pub struct Prompt {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub arguments: &'static [Argument],
    /// The recipe, from the checked arguments.
    render: fn(&Args<'_>) -> Vec<Value>,
}

/// Checked arguments of one `prompts/get`.
pub struct Args<'a> {
    values: &'a serde_json::Map<String, Value>,
}

impl Args<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(Value::as_str)
    }

    fn req(&self, name: &str) -> &str {
        self.get(name).unwrap_or_default()
    }
}

const ORGANIZATION: Argument = Argument {
    name: "organization_id",
    description: "The dealer organization (from dealeragent.discovery.get_manifest; completion/complete lists the ones you may see).",
    required: true,
    rule: Rule::Identifier,
};
const ROOFTOP: Argument = Argument {
    name: "rooftop_id",
    description: "The rooftop (dealership) that lists the vehicle.",
    required: true,
    rule: Rule::Identifier,
};
const VEHICLE: Argument = Argument {
    name: "vehicle_id",
    description: "The vehicle, as inventory.search returned it.",
    required: true,
    rule: Rule::Identifier,
};
const JURISDICTION: Argument = Argument {
    name: "jurisdiction",
    description: "Where the buyer registers the vehicle: an ISO 3166-2 subdivision such as US-IL (optional; without it government charges stay unknown).",
    required: false,
    rule: Rule::Jurisdiction,
};

/// How every recipe ends: the rules an agent must keep whatever it was
/// asked (docs/agents.md "Presenting answers").
const HONESTY: &str = "Rules for every answer: cite each figure with the source_name and observed_at of its provenance and freshness; treat a freshness state of stale, withdrawn or unknown as not current; never describe an unknown amount as zero and never add unknown amounts into a total; a conditional offer is only for buyers who meet its eligibility and is never part of the advertised price; do not call a vehicle available now unless dealeragent.inventory.verify_availability returned the band verified_current in this conversation; an out-the-door price cannot be computed while government charges are unknown — say so instead of estimating it.";

/// The prompts, in `prompts/list` order.
pub static PROMPTS: &[Prompt] = &[
    Prompt {
        name: "find_vehicles",
        title: "Find vehicles for a buyer",
        description: "Search one dealer organization's published inventory for what a buyer asks for, and present the matches with price, charges and freshness, without calling any of them available before a verification.",
        arguments: &[
            ORGANIZATION,
            Argument {
                name: "request",
                description: "What the buyer wants, in their words (e.g. a used SUV under 30,000 USD with under 40,000 miles).",
                required: true,
                rule: Rule::Text,
            },
            Argument {
                name: "make",
                description: "A make to narrow the search to (optional; completion/complete lists the makes in stock).",
                required: false,
                rule: Rule::Text,
            },
            JURISDICTION,
        ],
        render: find_vehicles,
    },
    Prompt {
        name: "compare_vehicles",
        title: "Compare vehicles without applying conditional incentives",
        description: "Compare 2 to 5 vehicles by VIN on advertised price and required dealer charges, listing conditional incentives separately and never subtracting them.",
        arguments: &[
            ORGANIZATION,
            Argument {
                name: "vins",
                description: "2 to 5 VINs separated by commas.",
                required: true,
                rule: Rule::Vins,
            },
            JURISDICTION,
        ],
        render: compare_vehicles,
    },
    Prompt {
        name: "explain_disclosure",
        title: "Explain a price disclosure to a buyer",
        description: "Read one vehicle's pricing disclosure and explain its four parts (advertised price, required dealer charges, conditional offers, government charges) in plain words, with what is unknown said to be unknown.",
        arguments: &[ORGANIZATION, ROOFTOP, VEHICLE, JURISDICTION],
        render: explain_disclosure,
    },
    Prompt {
        name: "check_availability",
        title: "Check a unit before calling it available",
        description: "Verify one vehicle's availability with the dealer's system of record and say exactly what the result supports: available now, or what is known and as of when.",
        arguments: &[ORGANIZATION, ROOFTOP, VEHICLE],
        render: check_availability,
    },
];

/// The vehicle resource of a recipe, for clients that fetch it on demand.
fn vehicle_link(a: &Args<'_>) -> Value {
    json!({
        "type": "resource_link",
        "uri": format!(
            "dealeragent://organization/{}/rooftop/{}/vehicle/{}",
            a.req("organization_id"),
            a.req("rooftop_id"),
            a.req("vehicle_id")
        ),
        "name": "vehicle",
        "mimeType": "application/json",
        "description": "The vehicle record (DAP vehicle) with its provenance and freshness."
    })
}

fn text(message: String) -> Value {
    json!({"role": "user", "content": {"type": "text", "text": message}})
}

/// The `jurisdiction` argument as a DAP jurisdiction object, in words.
fn jurisdiction_words(a: &Args<'_>) -> String {
    match a.get("jurisdiction") {
        Some(j) if j.len() > 2 => format!(
            "Pass \"jurisdiction\": {{\"country\": \"{}\", \"subdivision\": \"{j}\"}}",
            &j[..2]
        ),
        Some(j) => format!("Pass \"jurisdiction\": {{\"country\": \"{j}\"}}"),
        None => "No buyer jurisdiction was given: leave jurisdiction out and say that government charges stay unknown until the buyer says where they register the vehicle".to_owned(),
    }
}

fn find_vehicles(a: &Args<'_>) -> Vec<Value> {
    let org = a.req("organization_id");
    let make = a
        .get("make")
        .map(|m| {
            let m = Value::from(m);
            format!(" Narrow to that make with \"filters\": {{\"make\": [{m}]}}.")
        })
        .unwrap_or_default();
    vec![text(format!(
        "A buyer asks: {request}\n\n\
         1. Call dealeragent.inventory.search with {{\"organization_id\": \"{org}\"}}, turning the request into filters (price_max and price_min take money as {{\"amount_minor\": integer, \"currency\": code}}, e.g. 30,000.00 USD is {{\"amount_minor\": 3000000, \"currency\": \"USD\"}}; odometer_max takes {{\"value\", \"unit\"}}; condition, make, model and vehicle_type take lists) and a sort when the buyer cares about an order (e.g. {{\"field\": \"advertised_price\", \"order\": \"asc\"}}).{make} Use \"page\": {{\"limit\": 10}} and follow page.next_cursor only if the buyer wants more.\n\
         2. For the two or three best matches call dealeragent.pricing.get_disclosure (organization_id, rooftop_id and vehicle_id from the search result). {jurisdiction}.\n\
         3. Present each match with its year, make, model, trim, advertised price, the required dealer charges not included in it, and the freshness of the record. Say that availability is the dealer's assertion until verified.\n\n{HONESTY}",
        request = Value::from(a.req("request")),
        jurisdiction = jurisdiction_words(a),
    ))]
}

fn compare_vehicles(a: &Args<'_>) -> Vec<Value> {
    let org = a.req("organization_id");
    let vins: Vec<&str> = a.req("vins").split(',').map(str::trim).collect();
    let vin_list = vins
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ");
    vec![text(format!(
        "Compare these vehicles for a buyer: {vin_list}.\n\n\
         1. For each VIN call dealeragent.inventory.search with {{\"organization_id\": \"{org}\", \"filters\": {{\"vin\": VIN}}}} to find its rooftop_id and vehicle_id. A VIN that is not found is not published: say so, do not guess.\n\
         2. For each vehicle found call dealeragent.pricing.get_disclosure. {jurisdiction}.\n\
         3. Compare on the advertised price plus the required dealer charges not included in it (the disclosure's text gives that sum when every charge is known). Put conditional incentives (conditional_adjustments) in a separate column marked \"only if eligible\": never subtract them to rank the vehicles, because the buyer may not qualify and offers may not combine.\n\
         4. Show each vehicle's government charges status; do not compare out-the-door prices while any is unknown.\n\n{HONESTY}",
        jurisdiction = jurisdiction_words(a),
    ))]
}

fn explain_disclosure(a: &Args<'_>) -> Vec<Value> {
    vec![
        text(format!(
            "Explain this vehicle's price to a buyer.\n\n\
             1. Call dealeragent.pricing.get_disclosure with {{\"organization_id\": \"{}\", \"rooftop_id\": \"{}\", \"vehicle_id\": \"{}\"}}. {}.\n\
             2. Explain its four parts separately and never merge them: the advertised price (available to every buyer); each required dealer charge, saying which are included in the advertised price and which are added; each conditional offer with who qualifies and the evidence it needs; the government charges, with their status (unknown, estimated with its basis, calculated by the dealer, or not applicable).\n\
             3. Quote disclosure_text when the buyer wants the dealer's own words, and say how current the disclosure is (freshness.valid_until).\n\n{HONESTY}",
            a.req("organization_id"),
            a.req("rooftop_id"),
            a.req("vehicle_id"),
            jurisdiction_words(a),
        )),
        json!({"role": "user", "content": vehicle_link(a)}),
    ]
}

fn check_availability(a: &Args<'_>) -> Vec<Value> {
    vec![
        text(format!(
            "Check whether this vehicle can be called available.\n\n\
             1. Call dealeragent.inventory.verify_availability with {{\"organization_id\": \"{}\", \"rooftop_id\": \"{}\", \"vehicle_id\": \"{}\"}}.\n\
             2. Only when its band is verified_current may you say the vehicle is available now, with the observed_at time. recent_authoritative: say it was available as of that time. asserted: say the dealer lists it as available but has not confirmed it. stale or unknown: say its availability is not known and offer to ask the dealer. sold, on_hold, pending_sale or in_transit: say exactly that.\n\
             3. If the tool answers dealeragent.resource.not_found, the vehicle is not published here: do not suggest it is in stock.\n\n{HONESTY}",
            a.req("organization_id"),
            a.req("rooftop_id"),
            a.req("vehicle_id"),
        )),
        json!({"role": "user", "content": vehicle_link(a)}),
    ]
}

/// The prompt named `name`.
pub fn find(name: &str) -> Option<&'static Prompt> {
    PROMPTS.iter().find(|p| p.name == name)
}

/// `prompts/list`: every prompt with its arguments.
pub fn list() -> Vec<Value> {
    PROMPTS
        .iter()
        .map(|p| {
            let arguments: Vec<Value> = p
                .arguments
                .iter()
                .map(|a| {
                    json!({
                        "name": a.name,
                        "description": format!("{} Must be {}.", a.description, a.rule.words()),
                        "required": a.required,
                    })
                })
                .collect();
            json!({
                "name": p.name,
                "title": p.title,
                "description": p.description,
                "arguments": arguments,
            })
        })
        .collect()
}

fn names() -> String {
    PROMPTS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `prompts/get`: the recipe, or -32602 naming what is wrong (every
/// problem at once) and never repeating a value.
pub fn get(params: &Value) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::InvalidParams("params.name must be a prompt name".into()))?;
    let prompt = find(name).ok_or_else(|| {
        RpcError::InvalidParams(format!(
            "unknown prompt (the name is not repeated); prompts/list names: {}",
            names()
        ))
    })?;
    let empty = serde_json::Map::new();
    let values = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(RpcError::InvalidParams(
                "params.arguments must be an object of strings".into(),
            ));
        }
    };
    let mut problems: Vec<String> = Vec::new();
    let allowed: Vec<&str> = prompt.arguments.iter().map(|a| a.name).collect();
    let unexpected = values
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .count();
    if unexpected > 0 {
        problems.push(format!(
            "{unexpected} unexpected argument(s) (names not repeated); {} takes: {}",
            prompt.name,
            allowed.join(", ")
        ));
    }
    for a in prompt.arguments {
        match values.get(a.name) {
            None | Some(Value::Null) if a.required => {
                problems.push(format!(
                    "argument {} is required: {}",
                    a.name,
                    a.rule.words()
                ));
            }
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if a.rule.accepts(s) => {}
            Some(Value::String(_)) => {
                problems.push(format!("argument {} must be {}", a.name, a.rule.words()));
            }
            Some(_) => problems.push(format!(
                "argument {} must be a string: {}",
                a.name,
                a.rule.words()
            )),
        }
    }
    if !problems.is_empty() {
        return Err(RpcError::InvalidParams(format!(
            "prompt {}: {}",
            prompt.name,
            problems.join("; ")
        )));
    }
    let messages = (prompt.render)(&Args { values });
    Ok(json!({"description": prompt.description, "messages": messages}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get_ok(name: &str, args: Value) -> Value {
        get(&json!({"name": name, "arguments": args})).unwrap_or_else(|e| panic!("{e:?}"))
    }

    fn get_err(name: &str, args: Value) -> String {
        match get(&json!({"name": name, "arguments": args})) {
            Err(RpcError::InvalidParams(m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_prompt_renders_its_arguments_and_the_rules() {
        let org = "org.lakeshore-auto-group";
        let cases = [
            (
                "find_vehicles",
                json!({"organization_id": org, "request": "a used SUV", "make": "Hyundai", "jurisdiction": "US-IL"}),
            ),
            (
                "compare_vehicles",
                json!({"organization_id": org, "vins": "KM855JRX6SG174710, 1HGCM82633A004352"}),
            ),
            (
                "explain_disclosure",
                json!({"organization_id": org, "rooftop_id": "roof.x", "vehicle_id": "veh.y", "jurisdiction": "US"}),
            ),
            (
                "check_availability",
                json!({"organization_id": org, "rooftop_id": "roof.x", "vehicle_id": "veh.y"}),
            ),
        ];
        assert_eq!(cases.len(), PROMPTS.len());
        for (name, args) in cases {
            let out = get_ok(name, args.clone()).to_string();
            for v in args.as_object().unwrap().values() {
                for part in v.as_str().unwrap().split(", ") {
                    assert!(out.contains(part), "{name}: {part} missing: {out}");
                }
            }
            assert!(
                out.contains("never describe an unknown amount as zero"),
                "{out}"
            );
        }
        let e = get_ok(
            "explain_disclosure",
            json!({"organization_id": org, "rooftop_id": "roof.x", "vehicle_id": "veh.y", "jurisdiction": "US-IL"}),
        );
        assert!(
            e.to_string()
                .contains(r#"{\"country\": \"US\", \"subdivision\": \"US-IL\"}"#),
            "{e}"
        );
        assert_eq!(
            e["messages"][1]["content"]["uri"],
            "dealeragent://organization/org.lakeshore-auto-group/rooftop/roof.x/vehicle/veh.y"
        );
    }

    #[test]
    fn bad_arguments_are_named_with_their_rule_and_never_echoed() {
        let secret = "sk live/0123456789abcdef";
        let m = get_err(
            "check_availability",
            json!({"organization_id": secret, "rooftop_id": "roof.x", secret: "1"}),
        );
        assert!(!m.contains(secret), "{m}");
        assert!(
            m.contains("argument organization_id must be an identifier"),
            "{m}"
        );
        assert!(m.contains("argument vehicle_id is required"), "{m}");
        assert!(
            m.contains("takes: organization_id, rooftop_id, vehicle_id"),
            "{m}"
        );
        let m = get_err(
            "compare_vehicles",
            json!({"organization_id": "org.a", "vins": "KM855JRX6SG174710"}),
        );
        assert!(m.contains("2 to 5 VINs"), "{m}");
        let m = get_err(
            "explain_disclosure",
            json!({"organization_id": "org.a", "rooftop_id": "r", "vehicle_id": "v", "jurisdiction": "wa"}),
        );
        assert!(m.contains("ISO 3166-2 subdivision such as US-IL"), "{m}");
        let m = get_err(secret, json!({}));
        assert!(
            !m.contains(secret) && m.contains("find_vehicles, compare_vehicles"),
            "{m}"
        );
        let m = get_err(
            "find_vehicles",
            json!({"organization_id": "org.a", "request": "x\u{7}"}),
        );
        assert!(m.contains("without control characters"), "{m}");
    }

    #[test]
    fn rules_accept_what_the_tool_schemas_accept() {
        assert!(is_identifier("org.lakeshore-auto-group") && is_identifier("a:b_c"));
        assert!(!is_identifier("-a") && !is_identifier("") && !is_identifier("a b"));
        assert!(
            is_jurisdiction("US")
                && is_jurisdiction("US-IL")
                && is_jurisdiction("CA-ON")
                && is_jurisdiction("FR-75C")
        );
        assert!(
            !is_jurisdiction("us-il")
                && !is_jurisdiction("USA")
                && !is_jurisdiction("US-")
                && !is_jurisdiction("US-ABCD")
        );
        assert!(is_vin("KM855JRX6SG174710") && !is_vin("KM855JRX6SG17471O"));
    }
}
