//! What operators feed in is what agents are told: every money-bearing
//! field of every operator input format, written as a non-integer, a
//! float-looking integer (`299.00`, `1e3`), beyond `i64`, beyond the range
//! served exactly, negative or as a string, is either refused at import or
//! served exactly, never read back as an unknown amount
//! (docs/inventory-feeds.md and docs/dealers-file.md "Money",
//! docs/pricing.md "Amounts").
//!
//! The list of fields is checked against the schemas themselves: every
//! `amount_minor` a schema of an operator file reaches must be in the
//! table, and every CSV column carrying money too, so a new money field
//! cannot be added without being tested here.

use std::collections::BTreeSet;

use chrono::Utc;
use gateway::ingest::{FeedFormat, IngestContext, parse_feed};
use pricing::Money;
use serde_json::Value;

const ORG: &str = "org.lakeshore-auto-group";
const CHICAGO: &str = "roof.lakeshore-chicago";
const DEMO: &str = include_str!("../../../demo/dealers.yaml");

/// The largest amount feeds and the dealers file may carry: 2^53 - 1.
const MAX_SAFE: i128 = 9_007_199_254_740_991;

/// How a literal written in a file was taken.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// Refused at import: the report.
    Refused(String),
    /// Imported: the amount in minor units as it will be served, or `None`
    /// when the stored value cannot be read as money (an agent would be
    /// told "an unknown amount").
    Served(Option<i64>),
}

/// One money-bearing field of one format: where it is (a schema path with
/// `*` for array items, or a CSV column), how to import a file with
/// `literal` written there, and what it must become.
struct Field {
    format: &'static str,
    path: &'static str,
    import: fn(&str) -> Outcome,
    /// The minor units `literal` must be served as, or `None` if it must
    /// be refused.
    expect: fn(&str) -> Option<i64>,
    /// What a refusal must name so the operator finds the place.
    names: &'static str,
}

/// A JSON number literal as an amount in minor units: only digits (no
/// point, exponent, sign or quotes), within `max`.
fn integer_within(literal: &str, max: i128) -> Option<i64> {
    if literal.is_empty() || !literal.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = literal.parse().ok()?;
    (v <= max).then(|| i64::try_from(v).ok()).flatten()
}

fn safe(literal: &str) -> Option<i64> {
    integer_within(literal, MAX_SAFE)
}

fn any_i64(literal: &str) -> Option<i64> {
    integer_within(literal, i128::from(i64::MAX))
}

/// A Dealer.com price cell is a formatted amount in the rooftop currency
/// (`299.00` is 299.00 USD): digits, optionally a point and one or two
/// decimals, within the safe range once in cents; `-0.0` is zero.
fn dealer_com_cents(literal: &str) -> Option<i64> {
    let (whole, cents) = match literal.split_once('.') {
        Some((w, c)) if (1..=2).contains(&c.len()) => (w, format!("{c:0<2}")),
        Some(_) => return None,
        None => (literal, "00".to_owned()),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let whole = match whole.strip_prefix('-') {
        Some(rest) if digits(rest) && rest.bytes().chain(cents.bytes()).all(|b| b == b'0') => rest,
        _ => whole,
    };
    if !digits(whole) || !digits(&cents) {
        return None;
    }
    let minor = whole.parse::<i128>().ok()? * 100 + cents.parse::<i128>().ok()?;
    (minor <= MAX_SAFE)
        .then(|| i64::try_from(minor).ok())
        .flatten()
}

// --- Inventory feeds --------------------------------------------------------

/// The catalog, loaded once for the whole table.
fn catalog() -> &'static gateway::catalog::Catalog {
    static CATALOG: std::sync::LazyLock<gateway::catalog::Catalog> =
        std::sync::LazyLock::new(|| gateway::catalog::Catalog::load().expect("catalog"));
    &CATALOG
}

/// The demo's Lakeshore group (Chicago is a USD rooftop), read once.
fn context() -> IngestContext {
    static LAKESHORE: std::sync::LazyLock<gateway::store::OrganizationRecord> =
        std::sync::LazyLock::new(|| {
            gateway::dealers::parse(
                catalog(),
                "dealers.yaml",
                DEMO.as_bytes(),
                "test",
                Utc::now(),
            )
            .expect("demo dealers")
            .into_iter()
            .find(|o| o.organization_id == ORG)
            .expect("lakeshore")
        });
    IngestContext::for_organization(&LAKESHORE, None, Utc::now())
}

fn csv_quote(cell: &str) -> String {
    format!("\"{}\"", cell.replace('"', "\"\""))
}

/// A one-row DAP CSV with `price`, `charges` and `adjustments` cells: the
/// vehicle imported, or the report.
fn dap_row(
    price: &str,
    charges: &str,
    adjustments: &str,
) -> Result<gateway::inventory::model::VehicleRecord, String> {
    let text = format!(
        "organization_id,rooftop_id,vin,stock_number,year,make,model,condition,listing_url,observed_at,advertised_price_minor,currency,required_dealer_charges_json,conditional_adjustments_json\n\
         {ORG},{CHICAGO},1HGCY2F50RA000101,LC1001,2024,Honda,Accord,new,https://chicago.example/LC1001,2020-01-01T00:00:00Z,{},USD,{},{}\n",
        csv_quote(price),
        csv_quote(charges),
        csv_quote(adjustments),
    );
    parse_feed(FeedFormat::DapCsv, "feed.csv", text.as_bytes(), &context())
        .map(|mut feed| feed.rooftops.remove(0).vehicles.remove(0))
        .map_err(|e| e.to_string())
}

fn charge_cell(amount: &str) -> String {
    format!(
        r#"[{{"charge_id":"etch","name":"VIN etching","amount":{{"amount_minor":{amount},"currency":"USD"}},"payee":"dealer","included_in_advertised_price":false,"required":true}}]"#
    )
}

fn adjustment_cell(amount: &str) -> String {
    format!(
        r#"[{{"adjustment_id":"loyalty","name":"Loyalty","direction":"discount","amount_status":"known","amount":{{"amount_minor":{amount},"currency":"USD"}},"criteria":[{{"criterion":"loyalty","operator":"verified","value":true,"evidence_status":"required"}}],"stacking":{{"group":"oem","combinability":"stackable"}}}}]"#
    )
}

fn csv_price(literal: &str) -> Outcome {
    match dap_row(literal, "[]", "[]") {
        Err(e) => Outcome::Refused(e),
        Ok(v) => Outcome::Served(Some(v.advertised_price.amount_minor())),
    }
}

/// `reference_price_minor` (docs/inventory-feeds.md "Pricing claims") next
/// to an advertised price of 0: it must be above it, so 0 is refused too.
fn csv_reference(literal: &str) -> Outcome {
    let text = format!(
        "organization_id,rooftop_id,vin,stock_number,year,make,model,condition,listing_url,observed_at,advertised_price_minor,reference_price_minor\n\
         {ORG},{CHICAGO},1HGCY2F50RA000101,LC1001,2024,Honda,Accord,new,https://chicago.example/LC1001,2020-01-01T00:00:00Z,0,{}\n",
        csv_quote(literal),
    );
    match parse_feed(FeedFormat::DapCsv, "feed.csv", text.as_bytes(), &context()) {
        Err(e) => Outcome::Refused(e.to_string()),
        Ok(mut feed) => Outcome::Served(
            feed.rooftops
                .remove(0)
                .vehicles
                .remove(0)
                .claims
                .reference_price
                .map(|p| p.amount_minor()),
        ),
    }
}

fn safe_above_zero(literal: &str) -> Option<i64> {
    safe(literal).filter(|n| *n > 0)
}

fn csv_charge(literal: &str) -> Outcome {
    match dap_row("3429500", &charge_cell(literal), "[]") {
        Err(e) => Outcome::Refused(e),
        Ok(v) => Outcome::Served(
            v.required_dealer_charges
                .as_ref()
                .and_then(|c| c.first())
                .map(|c| c.amount.amount_minor()),
        ),
    }
}

fn csv_adjustment(literal: &str) -> Outcome {
    match dap_row("3429500", "[]", &adjustment_cell(literal)) {
        Err(e) => Outcome::Refused(e),
        Ok(v) => Outcome::Served(
            v.conditional_adjustments
                .as_ref()
                .and_then(|c| c.first())
                .and_then(|c| c.amount)
                .map(Money::amount_minor),
        ),
    }
}

fn dealer_com_price(literal: &str) -> Outcome {
    let text = format!(
        "VIN,Stock #,Year,Make,Model,NewUsed,VDPUrl,LastUpdated,InternetPrice,Status\n\
         1HGCY2F50RA000707,GR7001,2024,Honda,Accord,N,https://d.example/GR7001,2020-01-01T00:00:00Z,{},In Stock\n",
        csv_quote(literal)
    );
    let mut ctx = context();
    ctx.rooftop = Some(CHICAGO.to_owned());
    match parse_feed(
        FeedFormat::DealerComCsv,
        "export.csv",
        text.as_bytes(),
        &ctx,
    ) {
        Err(e) => Outcome::Refused(e.to_string()),
        Ok(feed) => Outcome::Served(Some(
            feed.rooftops[0].vehicles[0].advertised_price.amount_minor(),
        )),
    }
}

fn json_price(literal: &str) -> Outcome {
    let text = format!(
        r#"[{{"rooftop_id": "{CHICAGO}", "vin": "1HGCY2F50RA000101", "stock_number": "LC1001",
            "year": 2024, "make": "Honda", "model": "Accord", "condition": "new",
            "listing_url": "https://chicago.example/LC1001",
            "advertised_price": {{"amount": {{"amount_minor": {literal}, "currency": "USD"}},
                "availability": "generally_available", "includes_required_dealer_charges": false}},
            "availability": {{"status": "available", "authority_status": "asserted",
                "observed_at": "2020-01-01T00:00:00Z"}}}}]"#
    );
    match parse_feed(FeedFormat::Json, "feed.json", text.as_bytes(), &context()) {
        Err(e) => Outcome::Refused(e.to_string()),
        // A record that vanished would be served as nothing at all.
        Ok(feed) => Outcome::Served(
            feed.rooftops
                .first()
                .and_then(|r| r.vehicles.first())
                .map(|v| v.advertised_price.amount_minor()),
        ),
    }
}

// --- The dealers file -------------------------------------------------------

fn dealers_file(charge: &str, line: &str) -> String {
    format!(
        "organizations:
  - organization_id: org.a
    name: A
    rooftops:
      - rooftop_id: roof.a
        name: A
        timezone: America/Chicago
        address: {{lines: [1 Main], locality: Chicago, country: US}}
        departments: [sales]
        gateway_settings:
          currency: USD
          odometer_unit: mi
          publication: {{anonymous_reads: true}}
          pricing:
            required_dealer_charges:
              - {{charge_id: etch, name: VIN etching, amount: {{amount_minor: {charge}, currency: USD}}, payee: dealer, included_in_advertised_price: false, taxable_status: taxable, required: true}}
            government_charge_estimates:
              - jurisdiction: {{country: US, subdivision: US-IL}}
                lines:
                  - {{name: Title, amount: {{amount_minor: {line}, currency: USD}}, payee: government}}
"
    )
}

fn dealers(charge: &str, line: &str) -> Result<gateway::store::RooftopPricing, String> {
    gateway::dealers::parse(
        catalog(),
        "dealers.yaml",
        dealers_file(charge, line).as_bytes(),
        "test",
        Utc::now(),
    )
    .map(|orgs| orgs[0].rooftops[0].settings.pricing.clone())
    .map_err(|e| e.to_string())
}

fn dealers_charge(literal: &str) -> Outcome {
    match dealers(literal, "16500") {
        Err(e) => Outcome::Refused(e),
        Ok(p) => Outcome::Served(Some(p.required_dealer_charges[0].amount.amount_minor())),
    }
}

fn dealers_estimate_line(literal: &str) -> Outcome {
    match dealers("34900", literal) {
        Err(e) => Outcome::Refused(e),
        Ok(p) => Outcome::Served(Some(
            p.government_charge_estimates[0].lines[0]
                .amount
                .amount_minor(),
        )),
    }
}

// --- The programs file ------------------------------------------------------

fn programs_file(amount: &str, cap: &str, max_amount: &str) -> String {
    format!(
        "programs:
  - program_id: p-cash
    revision: 1
    name: Customer cash
    kind: cash
    direction: discount
    amount: {{status: known, amount: {{amount_minor: {amount}, currency: USD}}}}
    cap: {{amount_minor: {cap}, currency: USD}}
    stacking:
      group: oem
      combinability: rule_defined
      limits: [{{max_amount: {{amount_minor: {max_amount}, currency: USD}}}}]
"
    )
}

fn programs(amount: &str, cap: &str, max_amount: &str) -> Result<pricing::Program, String> {
    gateway::offers::import::parse(
        catalog(),
        "programs.yaml",
        programs_file(amount, cap, max_amount).as_bytes(),
        "test",
        Utc::now(),
    )
    .map(|parsed| parsed.validated.programs()[0].program.clone())
    .map_err(|e| e.to_string())
}

fn program_amount(literal: &str) -> Outcome {
    use pricing::incentives::ProgramAmount;
    match programs(literal, "9223372036854775807", "100") {
        Err(e) => Outcome::Refused(e),
        Ok(p) => Outcome::Served(match p.amount {
            ProgramAmount::Known { amount } => Some(amount.amount_minor()),
            _ => None,
        }),
    }
}

fn program_cap(literal: &str) -> Outcome {
    match programs("100", literal, "100") {
        Err(e) => Outcome::Refused(e),
        Ok(p) => Outcome::Served(p.cap.map(Money::amount_minor)),
    }
}

fn program_limit(literal: &str) -> Outcome {
    match programs("100", "100", literal) {
        Err(e) => Outcome::Refused(e),
        Ok(p) => Outcome::Served(
            p.stacking
                .limits
                .first()
                .and_then(|l| l.max_amount)
                .map(Money::amount_minor),
        ),
    }
}

/// Every money-bearing field of every operator input format.
fn fields() -> Vec<Field> {
    vec![
        Field {
            format: "dap-csv",
            path: "advertised_price_minor",
            import: csv_price,
            expect: safe,
            names: "feed.csv:2: advertised_price_minor",
        },
        Field {
            format: "dap-csv",
            path: "reference_price_minor",
            import: csv_reference,
            expect: safe_above_zero,
            names: "feed.csv:2: reference_price_minor",
        },
        Field {
            format: "dap-csv cell csvRequiredDealerCharges",
            path: "/*/amount/amount_minor",
            import: csv_charge,
            expect: safe,
            names: "required_dealer_charges_json",
        },
        Field {
            format: "dap-csv cell csvConditionalAdjustments",
            path: "/*/amount/amount_minor",
            import: csv_adjustment,
            expect: safe,
            names: "conditional_adjustments_json",
        },
        Field {
            format: "dealer-com-csv",
            path: "InternetPrice",
            import: dealer_com_price,
            expect: dealer_com_cents,
            names: "export.csv:2: InternetPrice",
        },
        Field {
            format: "json vehicle",
            path: "/advertised_price/amount/amount_minor",
            import: json_price,
            expect: safe,
            names: "/0/advertised_price/amount/amount_minor",
        },
        Field {
            format: "dealers file",
            path: "/organizations/*/rooftops/*/gateway_settings/pricing/required_dealer_charges/*/amount/amount_minor",
            import: dealers_charge,
            expect: safe,
            names: "/organizations/0/rooftops/0/gateway_settings/pricing/required_dealer_charges/0/amount/amount_minor",
        },
        Field {
            format: "dealers file",
            path: "/organizations/*/rooftops/*/gateway_settings/pricing/government_charge_estimates/*/lines/*/amount/amount_minor",
            import: dealers_estimate_line,
            expect: safe,
            names: "/organizations/0/rooftops/0/gateway_settings/pricing/government_charge_estimates/0/lines/0/amount/amount_minor",
        },
        Field {
            format: "programs file",
            path: "/programs/*/amount/amount/amount_minor",
            import: program_amount,
            expect: program_sum_bound,
            names: "/programs/0/amount/amount/amount_minor",
        },
        Field {
            format: "programs file",
            path: "/programs/*/cap/amount_minor",
            import: program_cap,
            expect: any_i64,
            names: "/programs/0/cap/amount_minor",
        },
        Field {
            format: "programs file",
            path: "/programs/*/stacking/limits/*/max_amount/amount_minor",
            import: program_limit,
            expect: any_i64,
            names: "/programs/0/stacking/limits/0/max_amount/amount_minor",
        },
    ]
}

/// A program's known amount: any `i64` up to the file's sum bound
/// (`i64::MAX / 2`, docs/pricing.md "Amounts"); the cap of the amount
/// test is `i64::MAX`, so the amount counts whole.
fn program_sum_bound(literal: &str) -> Option<i64> {
    integer_within(literal, i128::from(i64::MAX / 2))
}

/// How the amounts are written in the table: the control, float-looking
/// integers, fractions, beyond `i64`, beyond the safe range, negative,
/// string-typed.
const LITERALS: &[&str] = &[
    "29900",
    "0",
    "9007199254740991",
    "299.00",
    "29900.0",
    "2.99e4",
    "1e3",
    "299.5",
    "9007199254740992",
    "4611686018427387904",
    "9223372036854775807",
    "9223372036854775808",
    "1e19",
    "-1",
    "-0.0",
    "\"29900\"",
];

#[test]
fn every_money_field_of_every_format_is_refused_or_served_exactly() {
    let mut failures = Vec::new();
    for field in fields() {
        for literal in LITERALS {
            // A Dealer.com cell is text: the string-typed case is the
            // quoted literal, the same as any other malformed cell.
            let outcome = (field.import)(literal);
            let expected = (field.expect)(literal);
            let ok = match (&outcome, expected) {
                (Outcome::Served(got), Some(want)) => *got == Some(want),
                (Outcome::Refused(report), None) => {
                    report.contains(field.names) && !report.contains("unknown amount")
                }
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{} {}: {literal}: expected {}, got {outcome:?}",
                    field.format,
                    field.path,
                    expected.map_or_else(
                        || "a refusal naming the field".to_owned(),
                        |v| format!("served as {v}")
                    ),
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_float_looking_amount_names_the_integer_and_the_minor_units() {
    // The defect: 299.00 in a charges cell was imported and agents were told
    // "VIN etching (an unknown amount)".
    let Outcome::Refused(report) = csv_charge("299.00") else {
        panic!("299.00 imported");
    };
    assert!(
        report.contains("at /0/amount/amount_minor: amount_minor must be a whole number of minor units written without a decimal point or exponent; the number written equals 299 (write 299 if that counts minor units); 299.00 USD would be 29900"),
        "{report}"
    );
    let Outcome::Refused(report) = program_amount("2.99e4") else {
        panic!("2.99e4 imported");
    };
    assert!(
        report.contains("the number written equals 29900"),
        "{report}"
    );
    assert!(report.contains("29900.00 USD would be 2990000"), "{report}");
    let Outcome::Refused(report) = dealers_charge("9007199254740992") else {
        panic!("beyond the safe range imported");
    };
    assert!(
        report.contains("at most 9007199254740991 minor units, 90,071,992,547,409.91 USD"),
        "{report}"
    );
}

#[test]
fn an_estimate_whose_lines_sum_beyond_the_safe_range_is_refused() {
    // Each line is within the range, their total is not: the disclosure
    // would otherwise drop the estimate as unknown.
    let half = MAX_SAFE / 2 + 1;
    let text = dealers_file("34900", &half.to_string()).replace(
        "                  - {name: Title,",
        &format!(
            "                  - {{name: Registration, amount: {{amount_minor: {half}, currency: USD}}, payee: government}}\n                  - {{name: Title,"
        ),
    );
    let err = gateway::dealers::parse(
        catalog(),
        "dealers.yaml",
        text.as_bytes(),
        "test",
        Utc::now(),
    )
    .expect_err("an estimate beyond the safe range imported");
    let report = err.to_string();
    assert!(
        report.contains(
            "/government_charge_estimates/0/lines: safe_range: the lines of this estimate sum to"
        ),
        "{report}"
    );
}

/// Every path to an `amount_minor` a bundled schema reaches (`*` for an
/// array item).
fn money_paths(reference: &str) -> BTreeSet<String> {
    fn walk(root: &Value, node: &Value, path: &str, depth: usize, out: &mut BTreeSet<String>) {
        if depth > 48 {
            return;
        }
        if let Some(target) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
        {
            walk(root, target, path, depth + 1, out);
        }
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            for (key, schema) in properties {
                let here = format!("{path}/{key}");
                if key == "amount_minor" {
                    out.insert(here.clone());
                }
                walk(root, schema, &here, depth + 1, out);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(schema) = node.get(key).filter(|s| s.is_object()) {
                walk(root, schema, &format!("{path}/*"), depth + 1, out);
            }
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            for branch in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                walk(root, branch, path, depth + 1, out);
            }
        }
        for key in ["if", "then", "else"] {
            if let Some(schema) = node.get(key) {
                walk(root, schema, path, depth + 1, out);
            }
        }
    }
    let mut documents = std::collections::BTreeMap::new();
    for (name, text) in gateway::catalog::SCHEMA_FILES {
        documents.insert(
            (*name).to_owned(),
            serde_json::from_str(text).expect("schema JSON"),
        );
    }
    let root = gateway::catalog::bundle_reference(&documents, reference).expect("bundled");
    let mut out = BTreeSet::new();
    walk(&root, &root, "", 0, &mut out);
    out
}

#[test]
fn the_table_holds_every_money_field_the_input_schemas_and_columns_have() {
    // The table's schema paths per format, and the schemas' own.
    let table = |format: &str| -> BTreeSet<String> {
        fields()
            .iter()
            .filter(|f| f.format == format && f.path.starts_with('/'))
            .map(|f| f.path.to_owned())
            .collect()
    };
    let mut inputs: Vec<(String, String)> = [
        (
            "dealers file",
            "dealers-file.schema.json#/$defs/dealersFile",
        ),
        ("programs file", "programs.schema.json#/$defs/programsFile"),
        ("json vehicle", "vehicle.schema.json#/$defs/vehicle"),
        ("buyer profile", "offers.schema.json#/$defs/offersProfile"),
    ]
    .map(|(f, r)| (f.to_owned(), r.to_owned()))
    .to_vec();
    for definition in [
        "csvRequiredDealerCharges",
        "csvConditionalAdjustments",
        "csvImageUrls",
        "csvFeatures",
        "csvHistoryReports",
        "csvTitle",
        "csvInspection",
        "csvReconditioning",
        "jsonUsedVehicleEvidence",
    ] {
        inputs.push((
            format!("dap-csv cell {definition}"),
            format!("inventory-cells.schema.json#/$defs/{definition}"),
        ));
    }
    let mut found = 0;
    for (format, reference) in &inputs {
        let in_schema = money_paths(reference);
        found += in_schema.len();
        assert_eq!(in_schema, table(format), "{format} ({reference})");
    }
    // Not vacuous: the schemas do reach money (2 + 3 + 1 + 1 + 1 paths).
    assert_eq!(found, 8);
    // The CSV columns that carry money (the JSON cells are above).
    let mut missing = Vec::new();
    for column in gateway::ingest::dap_csv::Column::ALL {
        let name = column.name();
        let covered = fields()
            .iter()
            .any(|f| f.format == "dap-csv" && f.path == name);
        if (name.contains("price") || name.ends_with("_minor")) && !covered {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "money columns not in the table: {missing:?}"
    );
}
