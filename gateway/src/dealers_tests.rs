//! Tests of the dealers file: conversion, cross-record rules, problem
//! reports (docs/dealers-file.md).

use super::*;

fn parse_with_source(source: &str) -> Result<Vec<OrganizationRecord>, DealersFileError> {
    let doc = format!(
        r#"{{"organizations": [{{"organization_id": "org.a", "name": "A", "rooftops": [{{
            "rooftop_id": "roof.a", "name": "A", "timezone": "America/Chicago",
            "address": {{"lines": ["1 Main"], "locality": "Chicago", "region": "IL",
                         "postal_code": "60601", "country": "US"}},
            "departments": ["sales"],
            "gateway_settings": {{"currency": "USD", "odometer_unit": "mi",
                "publication": {{"anonymous_reads": true}}{source}}}}}]}}]}}"#
    );
    let catalog = Catalog::load().unwrap();
    parse(&catalog, "d.json", doc.as_bytes(), "test", Utc::now())
}

fn source_of(orgs: &[OrganizationRecord]) -> AvailabilitySource {
    orgs[0].rooftops[0].settings.availability_source.clone()
}

#[test]
fn pricing_config_converts_and_is_cross_checked() {
    let charge = |id: &str, currency: &str| {
        format!(
            r#"{{"charge_id": "{id}", "name": "Documentation fee", "amount": {{"amount_minor": 34900, "currency": "{currency}"}}, "payee": "dealer", "included_in_advertised_price": false, "taxable_status": "taxable", "required": true}}"#
        )
    };
    let ok = format!(
        r#", "pricing": {{"required_dealer_charges": [{}], "government_charge_estimates": [{{"jurisdiction": {{"country": "US", "subdivision": "US-IL"}}, "lines": [{{"name": "Title", "amount": {{"amount_minor": 16500, "currency": "USD"}}, "payee": "government"}}], "assumptions": ["Passenger vehicle"]}}]}}"#,
        charge("doc-fee", "USD")
    );
    let orgs = parse_with_source(&ok).unwrap();
    let pricing = &orgs[0].rooftops[0].settings.pricing;
    assert_eq!(pricing.required_dealer_charges.len(), 1);
    assert_eq!(
        pricing.government_charge_estimates[0].assumptions,
        ["Passenger vehicle"]
    );
    assert_eq!(
        parse_with_source("").unwrap()[0].rooftops[0]
            .settings
            .pricing,
        RooftopPricing::default()
    );
    let bad = format!(
        r#", "pricing": {{"required_dealer_charges": [{}, {}]}}"#,
        charge("doc-fee", "CAD"),
        charge("doc-fee", "USD")
    );
    let err = parse_with_source(&bad).unwrap_err();
    let base = "/organizations/0/rooftops/0/gateway_settings/pricing/required_dealer_charges";
    let pointers: Vec<&str> = err.problems.iter().map(|p| p.pointer.as_str()).collect();
    assert_eq!(
        pointers,
        [
            format!("{base}/0/amount/currency"),
            format!("{base}/1/charge_id")
        ],
        "{err}"
    );
}

/// A one-rooftop YAML file; `rooftop` is spliced into the rooftop
/// (indented 8 spaces), `settings` into gateway_settings.
fn yaml(rooftop: &str, settings: &str) -> String {
    format!(
        "organizations:\n  - organization_id: org.a\n    name: A\n    rooftops:\n      - rooftop_id: roof.a\n        name: A\n        address: {{lines: [1 Main], locality: Chicago, country: US}}\n        departments: [sales]\n{rooftop}        gateway_settings:\n          currency: USD\n          odometer_unit: mi\n{settings}"
    )
}

fn parse_yaml(text: &str) -> Result<ParsedDealers, DealersFileError> {
    let catalog = Catalog::load().unwrap();
    parse_with_warnings(&catalog, "d.yaml", text.as_bytes(), "test", Utc::now())
}

const PUBLICATION: &str = "          publication: {anonymous_reads: true}\n";

#[test]
fn timezone_must_be_an_iana_name() {
    let ok = yaml("        timezone: America/Toronto\n", PUBLICATION);
    assert!(parse_yaml(&ok).is_ok());
    let bad = yaml("        timezone: America/Chicagoo\n", PUBLICATION);
    let err = parse_yaml(&bad).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    let p = &err.problems[0];
    assert_eq!(p.pointer, "/organizations/0/rooftops/0/timezone");
    assert_eq!(p.rule, "iana_timezone");
    assert_eq!(
        p.position,
        Some(Position {
            line: 9,
            column: 19
        })
    );
    assert!(
        !err.to_string().contains("Chicagoo"),
        "no value echoed: {err}"
    );
    assert!(err.to_string().contains("d.yaml:9:19: /organizations/0/rooftops/0/timezone: iana_timezone: not an IANA time zone name"), "{err}");
}

#[test]
fn schema_problems_are_in_words_with_the_key_named_and_a_position() {
    let bad = yaml(
        "        timezone: America/Chicago\n        departmnets: [sales]\n",
        "          publicaton: {anonymous_reads: true}\n",
    )
    .replace("rooftop_id: roof.a", "rooftop_id: roof.A")
    .replace("country: US", "country: usa");
    let err = parse_yaml(&bad).unwrap_err();
    let report = err.to_string();
    assert!(
        !report.contains("failed validation for keyword"),
        "{report}"
    );
    let lines: Vec<&str> = report.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "d.yaml:5:21: /organizations/0/rooftops/0/rooftop_id: pattern: must be lower case, matching ^[a-z0-9][a-z0-9._-]{0,127}$ (did you mean 'roof.a'?)",
            "d.yaml:7:64: /organizations/0/rooftops/0/address/country: pattern: must be an ISO 3166-1 alpha-2 country code in capitals such as US, matching ^[A-Z]{2}$",
            "d.yaml:10:9: /organizations/0/rooftops/0/departmnets: additionalProperties: unexpected key 'departmnets' (did you mean 'departments'?): this object does not allow it; allowed keys here: rooftop_id, name, legal_name, website, address, timezone, departments, contacts, hours, supported_languages, supported_currencies, extensions, gateway_settings",
            "d.yaml:12:11: /organizations/0/rooftops/0/gateway_settings: required: missing required property 'publication'",
            "d.yaml:14:11: /organizations/0/rooftops/0/gateway_settings/publicaton: additionalProperties: unexpected key 'publicaton' (did you mean 'publication'?): this object does not allow it; allowed keys here: currency, odometer_unit, publication, freshness_sla_seconds, availability_source, pricing",
        ],
        "{report}"
    );
}

#[test]
fn unquoted_numbers_and_bad_availability_sources_are_explained() {
    let bad = yaml(
        "        timezone: America/Chicago\n        contacts: [{department: sales, channel: phone, value: +13125550142, public: true}]\n",
        "          publication: {anonymous_reads: true}\n          availability_source: {type: ftp}\n",
    );
    let err = parse_yaml(&bad).unwrap_err();
    let explanations: Vec<(&str, &str)> = err
        .problems
        .iter()
        .map(|p| (p.pointer.as_str(), p.explanation.as_str()))
        .collect();
    assert_eq!(
        explanations,
        [
            (
                "/organizations/0/rooftops/0/contacts/0/value",
                "must be a string, not a number; quote it in YAML"
            ),
            (
                "/organizations/0/rooftops/0/gateway_settings/availability_source/type",
                "must be one of: \"feed\", \"http\""
            ),
        ],
        "{err}"
    );
    // A selected branch reports its own problem, not the oneOf.
    let slow = yaml(
        "        timezone: America/Chicago\n",
        "          publication: {anonymous_reads: true}\n          availability_source: {type: http, url_template: \"https://dms.example/{vin}\", timeout_ms: 20}\n",
    );
    let err = parse_yaml(&slow).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(err.problems[0].rule, "minimum");
    assert_eq!(err.problems[0].explanation, "must be at least 50");
}

#[test]
fn contacts_without_a_public_flag_warn_and_only_public_ones_are_published() {
    let text = yaml(
        "        timezone: America/Chicago\n        contacts:\n          - {department: sales, channel: phone, value: \"+13125550142\", public: true}\n          - {department: sales, channel: email, value: a@b.example, public: false}\n          - {department: service, channel: phone, value: \"+13125550143\"}\n",
        PUBLICATION,
    );
    let parsed = parse_yaml(&text).unwrap();
    assert_eq!(
        parsed.warning_lines("d.yaml"),
        [
            "warning: d.yaml:13:13: /organizations/0/rooftops/0/contacts/2: public: the contact has no public flag, so it is not published; add public: true to publish it, or public: false to keep it private and silence this warning"
        ]
    );
    let dap = &parsed.records[0].rooftops[0].dap;
    assert_eq!(dap.contacts.as_ref().unwrap().len(), 3, "stored as written");
    let published = published_rooftop(dap);
    assert_eq!(
        serde_json::to_value(&published.contacts).unwrap(),
        serde_json::json!([{"department": "sales", "channel": "phone", "value": "+13125550142", "public": true}])
    );
    // No public contact at all: no contacts member.
    let mut private = dap.clone();
    private.contacts = Some(vec![crate::dap::ContactPoint {
        department: "sales".into(),
        channel: "phone".into(),
        value: "+1".into(),
        public: Some(false),
    }]);
    let text = serde_json::to_string(&published_rooftop(&private)).unwrap();
    assert!(!text.contains("contacts"), "{text}");
    assert_eq!(published_rooftop(&private).contacts, None);
}

/// Every rooftop member reads into its DAP type as written (the file
/// is schema-checked first); a rooftop that would not read (only if
/// the schema and `crate::dap` drift apart) is a problem at its
/// pointer naming the member, never a dropped value.
#[test]
fn the_rooftop_reads_as_its_dap_type_or_is_refused_precisely() {
    let text = yaml(
        "        timezone: America/Chicago\n        website: https://a.example/\n        hours: []\n        supported_currencies: [USD]\n        extensions: {x.b: 1, x.a: [2]}\n",
        PUBLICATION,
    );
    let parsed = parse_yaml(&text).unwrap();
    assert_eq!(
        serde_json::to_string(&parsed.records[0].rooftops[0].dap).unwrap(),
        r#"{"rooftop_id":"roof.a","name":"A","website":"https://a.example/","address":{"lines":["1 Main"],"locality":"Chicago","country":"US"},"timezone":"America/Chicago","departments":["sales"],"hours":[],"supported_currencies":["USD"],"extensions":{"x.b":1,"x.a":[2]}}"#
    );

    let mut drifted = serde_json::to_value(&parsed.records[0].rooftops[0].dap).unwrap();
    drifted["parking"] = serde_json::json!("free");
    let mut problems = Vec::new();
    let read: Option<Rooftop> = typed(
        &drifted,
        "/organizations/0/rooftops/0".into(),
        &mut problems,
    );
    assert_eq!(read, None);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].pointer, "/organizations/0/rooftops/0");
    assert_eq!(problems[0].rule, "schema");
    assert!(
        problems[0].explanation.contains("unknown field `parking`"),
        "{}",
        problems[0].explanation
    );
}

#[test]
fn availability_source_defaults_to_feed() {
    assert_eq!(
        source_of(&parse_with_source("").unwrap()),
        AvailabilitySource::Feed
    );
    assert_eq!(
        source_of(&parse_with_source(r#", "availability_source": {"type": "feed"}"#).unwrap()),
        AvailabilitySource::Feed
    );
}

#[test]
fn http_source_defaults_and_loopback_http() {
    let orgs = parse_with_source(
        r#", "availability_source": {"type": "http", "url_template": "https://dms.example/v1/{vin}"}"#,
    )
    .unwrap();
    assert_eq!(
        source_of(&orgs),
        AvailabilitySource::Http(HttpAvailabilitySource {
            url_template: "https://dms.example/v1/{vin}".into(),
            timeout_ms: DEFAULT_AVAILABILITY_TIMEOUT_MS,
            authority: "authoritative_dealer_system".into(),
        })
    );
    for loopback in ["127.0.0.1:9", "localhost", "[::1]:8080"] {
        let src = format!(
            r#", "availability_source": {{"type": "http", "url_template": "http://{loopback}/a/{{stock_number}}", "timeout_ms": 50, "authority": "dealer_asserted"}}"#
        );
        assert!(parse_with_source(&src).is_ok(), "{loopback}");
    }
}

#[test]
fn http_source_problems_are_precise() {
    let pointer = "/organizations/0/rooftops/0/gateway_settings/availability_source/url_template";
    for (template, rule) in [
        ("http://dms.example/v1/{vin}", "must use https"),
        ("https://dms.example/v1/all", "placeholder"),
        ("https://user:pw@dms.example/{vin}", "credentials"),
    ] {
        let src =
            format!(r#", "availability_source": {{"type": "http", "url_template": "{template}"}}"#);
        let err = parse_with_source(&src).unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert_eq!(err.problems[0].pointer, pointer);
        assert_eq!(err.problems[0].rule, "url_template", "{err}");
        assert!(err.problems[0].explanation.contains(rule), "{err}");
    }
    // Schema rules: timeout range, unknown authority, unknown type.
    for bad in [
        r#"{"type": "http", "url_template": "https://dms.example/{vin}", "timeout_ms": 20}"#,
        r#"{"type": "http", "url_template": "https://dms.example/{vin}", "authority": "oem"}"#,
        r#"{"type": "ftp"}"#,
    ] {
        let src = format!(r#", "availability_source": {bad}"#);
        assert!(parse_with_source(&src).is_err(), "{bad}");
    }
}

// --- Pricing claims for the disclosure lint (docs/lint.md) ---------------

const TZ: &str = "        timezone: America/Chicago\n";
const DOC_FEE: &str = r#"{"charge_id": "doc-fee", "name": "Documentation fee", "amount": {"amount_minor": 34900, "currency": "USD"}, "payee": "dealer", "included_in_advertised_price": false, "required": true}"#;

#[test]
fn charge_classes_and_the_vat_flag_are_read_into_the_rooftop_pricing() {
    let orgs = parse_with_source(&format!(
        r#", "pricing": {{"required_dealer_charges": [{DOC_FEE}], "charge_classes": {{"doc-fee": "documentation_fee"}}, "advertised_prices_include_vat": true}}"#
    ))
    .unwrap();
    let pricing = &orgs[0].rooftops[0].settings.pricing;
    assert_eq!(
        pricing.charge_classes,
        BTreeMap::from([(
            "doc-fee".to_owned(),
            pricing::lint::ChargeClass::DocumentationFee
        )])
    );
    assert_eq!(pricing.advertised_prices_include_vat, Some(true));
    // Absent: unclassified, not said.
    let orgs = parse_with_source(&format!(
        r#", "pricing": {{"required_dealer_charges": [{DOC_FEE}]}}"#
    ))
    .unwrap();
    let pricing = &orgs[0].rooftops[0].settings.pricing;
    assert!(pricing.charge_classes.is_empty());
    assert_eq!(pricing.advertised_prices_include_vat, None);
}

#[test]
fn a_class_names_a_charge_of_the_rooftop_with_its_position() {
    let text = yaml(
        TZ,
        &format!(
            "{PUBLICATION}          pricing:\n            required_dealer_charges: [{DOC_FEE}]\n            charge_classes:\n              doc-fees: documentation_fee\n"
        ),
    );
    let err = parse_yaml(&text).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(
        err.problems[0].pointer,
        "/organizations/0/rooftops/0/gateway_settings/pricing/charge_classes/doc-fees"
    );
    let line = err.to_string();
    assert!(line.contains("d.yaml:17:25: "), "{line}");
    assert!(
        line.contains("not a charge_id of this rooftop's required_dealer_charges"),
        "{line}"
    );
    // No charges at all: every key is refused.
    let text = yaml(
        TZ,
        &format!(
            "{PUBLICATION}          pricing:\n            charge_classes: {{doc-fee: other}}\n"
        ),
    );
    let err = parse_yaml(&text).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
}

#[test]
fn a_class_word_and_the_vat_flag_are_checked_by_the_schema() {
    let text = yaml(
        TZ,
        &format!(
            "{PUBLICATION}          pricing:\n            required_dealer_charges: [{DOC_FEE}]\n            charge_classes: {{doc-fee: doc}}\n            advertised_prices_include_vat: \"yes\"\n"
        ),
    );
    let err = parse_yaml(&text).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.problems.len(), 2, "{text}");
    assert!(text.contains("charge_classes/doc-fee"), "{text}");
    assert!(text.contains("documentation_fee"), "{text}");
    assert!(text.contains("advertised_prices_include_vat"), "{text}");
}
