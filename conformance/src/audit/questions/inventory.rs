//! Inventory questions: what is listed, at which price, where (AUD-01 to
//! AUD-05, AUD-19, AUD-20); the lookups of one unit by VIN or stock number
//! (AUD-03 to AUD-05) are in `inventory/lookup.rs`.

use std::collections::BTreeSet;

use serde_json::json;

use super::{
    Avl, Inv, Prc, flag_if_stale, grade_availability_reports, list_vehicles, unanswerable,
};
use crate::audit::agent::Session;
use crate::audit::answer::{Answer, Citation, Claim, Fact, VehicleFact};
use crate::audit::grade::{
    Check, Grader, Lookup, identity_differences, off_sale, price_difference,
};
use crate::audit::subjects::Subjects;
use crate::audit::wire::{Money, Vehicle};
use crate::client::ClientError;

mod lookup;

pub use lookup::{
    absent_vin, grade_absent_vin, grade_not_off_sale_when_available, grade_stock_number_price,
    grade_vin_in_stock, stock_number_price, vin_in_stock,
};

/// Listings the list questions ask for.
const LIST_LIMIT: u64 = 10;
/// Listed vehicles the grader re-reads one by one.
const SAMPLE: usize = 5;
/// Statuses a dealer lists a unit for sale under (DAP search filter
/// `availability`).
const FOR_SALE: [&str; 4] = ["available", "in_transit", "on_hold", "pending_sale"];

fn finish(session: &Session<'_>, mut a: Answer) -> Answer {
    a.reads = session.reads.clone();
    a
}

/// The vehicles an answer lists, with their citations.
fn listed(a: &Answer) -> Vec<(&VehicleFact, Option<&Citation>)> {
    a.claims
        .iter()
        .filter_map(|c| match &c.fact {
            Fact::Listed { vehicle } => Some((vehicle, c.citation.as_ref())),
            _ => None,
        })
        .collect()
}

fn names(vehicles: &[Vehicle], limit: usize) -> String {
    let shown: Vec<String> = vehicles
        .iter()
        .take(limit)
        .map(|v| format!("{} at {}", v.title(), v.advertised_price.amount.display()))
        .collect();
    shown.join("; ")
}

/// AUD-01.
pub async fn under_price(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(ceiling) = &s.price_ceiling else {
        return Ok(unanswerable(session, "no price to ask about".into()));
    };
    let (read, page) = session
        .search(
            json!({"price_max": ceiling, "availability": ["available"]}),
            Some(json!({"field": "advertised_price", "order": "asc"})),
            LIST_LIMIT,
        )
        .await?;
    let Some(page) = page else {
        let why = format!("the search answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    list_vehicles(session, read, &page.vehicles, &mut a);
    a.text = if page.vehicles.is_empty() {
        a.claims.push(Claim {
            fact: Fact::NotListed {
                what: format!(
                    "a vehicle listed as available at {} or less",
                    ceiling.display()
                ),
            },
            citation: session.cite(read, "", &page.provenance, &page.freshness),
        });
        flag_if_stale(session, read, &page.freshness, &mut a);
        format!(
            "The dealer lists nothing as available at {} or less.",
            ceiling.display()
        )
    } else {
        format!(
            "Listed as available at {} or less, cheapest first{}: {}. These are the dealer's listings, not verified availability; prices exclude required dealer fees unless stated, and taxes and registration.",
            ceiling.display(),
            if page.page.has_more {
                " (more match)"
            } else {
                ""
            },
            names(&page.vehicles, page.vehicles.len())
        )
    };
    Ok(finish(session, a))
}

/// Identity and price of each listed vehicle (a sample) against
/// `get_vehicle`, and no unit on offer that its records call sold,
/// unavailable or withdrawn.
async fn grade_listed(a: &Answer, g: &mut Grader<'_>) -> Result<Vec<Check>, ClientError> {
    let listed = listed(a);
    if listed.is_empty() {
        return Ok(vec![
            Check::na(Inv, "INV-LISTED-EXISTS", "no vehicle listed"),
            Check::na(Prc, "PRC-LISTED-PRICE", "no vehicle listed"),
            Check::na(Avl, "AVL-NO-OFF-SALE-LISTED", "no vehicle listed"),
        ]);
    }
    let mut identity = Vec::new();
    let mut prices = Vec::new();
    let mut off = Vec::new();
    for (_, c) in &listed {
        let evidence: Option<Vehicle> = c
            .and_then(|c| crate::audit::grade::cited_record(a, c))
            .and_then(|r| serde_json::from_value(r.clone()).ok());
        if let Some(why) = evidence.as_ref().and_then(off_sale) {
            off.push(why);
        }
    }
    for (v, _) in listed.iter().take(SAMPLE) {
        match g
            .vehicle(&v.rooftop_id, "vehicle_id", &v.vehicle_id)
            .await?
        {
            Lookup::Found(record) => {
                identity.extend(identity_differences(v, &record));
                prices.extend(price_difference(v, &record));
                off.extend(off_sale(&record));
            }
            Lookup::NotFound => identity.push(format!(
                "{}: get_vehicle does not find the listed vehicle",
                v.vehicle_id
            )),
            Lookup::Unreadable(code) => {
                identity.push(format!("{}: get_vehicle answered {code}", v.vehicle_id))
            }
        }
    }
    let sampled = listed.len().min(SAMPLE);
    Ok(vec![
        Check::judge(
            Inv,
            "INV-LISTED-EXISTS",
            identity,
            format!("{sampled} listed vehicles re-read with get_vehicle are the vehicles stated"),
        ),
        Check::judge(
            Prc,
            "PRC-LISTED-PRICE",
            prices,
            format!("{sampled} listed prices are get_vehicle's advertised prices"),
        ),
        Check::judge(
            Avl,
            "AVL-NO-OFF-SALE-LISTED",
            off,
            "no listed unit is sold, unavailable or withdrawn by its records",
        ),
    ])
}

/// Every vehicle the grader's differently shaped search finds that is
/// strictly "better" (by `key`) than the answer's worst listed vehicle is
/// in the answer too.
fn none_missed(
    a: &Answer,
    candidates: &[Vehicle],
    key: impl Fn(&Vehicle) -> Option<i128>,
    stated_key: impl Fn(&VehicleFact) -> Option<i128>,
) -> Vec<String> {
    let listed = listed(a);
    let ids: BTreeSet<&str> = listed.iter().map(|(v, _)| v.vehicle_id.as_str()).collect();
    let worst = listed.iter().filter_map(|(v, _)| stated_key(v)).max();
    // The list is the whole result when the search page it came from says
    // nothing more matches.
    let complete = a
        .reads
        .iter()
        .rev()
        .find(|r| r.tool == crate::context::SEARCH)
        .and_then(|r| r.ok.as_ref())
        .and_then(|ok| ok.pointer("/page/has_more"))
        .and_then(serde_json::Value::as_bool)
        == Some(false);
    candidates
        .iter()
        .filter(|c| {
            key(c).is_some_and(|k| complete || worst.is_some_and(|w| k < w))
                && !ids.contains(c.vehicle_id.as_str())
        })
        .map(|c| format!("{} ({}) matches but is not listed", c.vehicle_id, c.title()))
        .collect()
}

/// Grading of AUD-01.
pub async fn grade_under_price(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(ceiling) = &s.price_ceiling else {
        return Ok(Vec::new());
    };
    let mut out = grade_listed(a, g).await?;
    let over: Vec<String> = listed(a)
        .iter()
        .filter(|(v, _)| {
            v.advertised_price.currency != ceiling.currency
                || v.advertised_price.amount_minor > ceiling.amount_minor
        })
        .map(|(v, _)| {
            format!(
                "{} is listed at {}, over {}",
                v.vehicle_id,
                v.advertised_price.display(),
                ceiling.display()
            )
        })
        .collect();
    out.push(Check::judge(
        Prc,
        "PRC-WITHIN-CEILING",
        over,
        format!("every listed price is {} or less", ceiling.display()),
    ));
    // The same question asked another way: every vehicle priced in the
    // currency, cheapest first, with no upper bound.
    let zero = Money {
        amount_minor: 0,
        currency: ceiling.currency.clone(),
    };
    let other_way = g
        .search(
            json!({"price_min": zero, "availability": ["available"]}),
            Some(json!({"field": "advertised_price", "order": "asc"})),
            25,
        )
        .await?;
    match other_way {
        Some(page) => {
            let within: Vec<Vehicle> = page
                .vehicles
                .into_iter()
                .filter(|v| v.advertised_price.amount.amount_minor <= ceiling.amount_minor)
                .collect();
            out.push(Check::judge(
                Inv,
                "INV-NONE-MISSED",
                none_missed(
                    a,
                    &within,
                    |v| Some(i128::from(v.advertised_price.amount.amount_minor)),
                    |v| Some(i128::from(v.advertised_price.amount_minor)),
                ),
                "no cheaper listed-available vehicle is left out",
            ));
        }
        None => out.push(Check::judge(
            Inv,
            "INV-NONE-MISSED",
            vec!["a search by price from zero did not answer".into()],
            "",
        )),
    }
    out.extend(grade_availability_reports(a));
    Ok(out)
}

/// AUD-02.
pub async fn used_under_mileage(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let Some(ceiling) = &s.mileage_ceiling else {
        return Ok(unanswerable(session, "no mileage to ask about".into()));
    };
    let below = json!({"value": ceiling.value.saturating_sub(1).max(0), "unit": ceiling.unit});
    let (read, page) = session
        .search(
            json!({"condition": ["used", "certified"], "odometer_max": below,
                "availability": FOR_SALE}),
            Some(json!({"field": "odometer", "order": "asc"})),
            LIST_LIMIT,
        )
        .await?;
    let Some(page) = page else {
        let why = format!("the search answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    list_vehicles(session, read, &page.vehicles, &mut a);
    let shown: Vec<String> = page
        .vehicles
        .iter()
        .map(|v| {
            let odo = v.odometer.as_ref().map_or_else(
                || "odometer unknown".to_owned(),
                |o| format!("{} {}", o.value, o.unit),
            );
            format!("{} ({odo}, listed {})", v.title(), v.availability.status)
        })
        .collect();
    a.text = format!(
        "Used vehicles under {} {}, lowest first{}: {}. Statuses are the dealer's listings, not verified.",
        ceiling.value,
        ceiling.unit,
        if page.page.has_more {
            " (more match)"
        } else {
            ""
        },
        shown.join("; ")
    );
    if page.vehicles.is_empty() {
        a.claims.push(Claim {
            fact: Fact::NotListed {
                what: format!("a used vehicle under {} {}", ceiling.value, ceiling.unit),
            },
            citation: session.cite(read, "", &page.provenance, &page.freshness),
        });
        flag_if_stale(session, read, &page.freshness, &mut a);
    }
    Ok(finish(session, a))
}

/// Grading of AUD-02.
pub async fn grade_used_under_mileage(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(ceiling) = &s.mileage_ceiling else {
        return Ok(Vec::new());
    };
    let limit_mm = ceiling.millimetres();
    let mut out = grade_listed(a, g).await?;
    let wrong: Vec<String> = listed(a)
        .iter()
        .filter_map(|(v, _)| {
            let used = matches!(v.condition.as_str(), "used" | "certified");
            let under = v
                .odometer
                .as_ref()
                .and_then(|o| o.millimetres())
                .zip(limit_mm)
                .is_some_and(|(mm, max)| mm < max);
            (!used || !under).then(|| {
                format!(
                    "{} is {} with {} on the odometer",
                    v.vehicle_id,
                    v.condition,
                    v.odometer.as_ref().map_or_else(
                        || "no reading".into(),
                        |o| format!("{} {}", o.value, o.unit)
                    )
                )
            })
        })
        .collect();
    out.push(Check::judge(
        Inv,
        "INV-MATCHES-ASK",
        wrong,
        format!(
            "every listed unit is used and under {} {}",
            ceiling.value, ceiling.unit
        ),
    ));
    // Asked another way: used units by odometer, no reading bound.
    let other_way = g
        .search(
            json!({"condition": ["used", "certified"], "availability": FOR_SALE}),
            Some(json!({"field": "odometer", "order": "asc"})),
            25,
        )
        .await?;
    match other_way {
        Some(page) => {
            let within: Vec<Vehicle> = page
                .vehicles
                .into_iter()
                .filter(|v| {
                    v.odometer
                        .as_ref()
                        .and_then(|o| o.millimetres())
                        .zip(limit_mm)
                        .is_some_and(|(mm, max)| mm < max)
                })
                .collect();
            out.push(Check::judge(
                Inv,
                "INV-NONE-MISSED",
                none_missed(
                    a,
                    &within,
                    |v| v.odometer.as_ref().and_then(|o| o.millimetres()),
                    |v| v.odometer.as_ref().and_then(|o| o.millimetres()),
                ),
                "no lower-mileage used unit is left out",
            ));
        }
        None => out.push(Check::judge(
            Inv,
            "INV-NONE-MISSED",
            vec!["a search of used units by odometer did not answer".into()],
            "",
        )),
    }
    out.extend(grade_availability_reports(a));
    Ok(out)
}

/// AUD-19.
pub async fn cheapest_make_model(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let (Some((make, model)), Some(currency)) = (&s.make_model, &s.currency) else {
        return Ok(unanswerable(
            session,
            "no make and model to ask about".into(),
        ));
    };
    let zero = Money {
        amount_minor: 0,
        currency: currency.clone(),
    };
    let (read, page) = session
        .search(
            json!({"make": [make], "model": [model], "availability": ["available"],
                "price_min": zero}),
            Some(json!({"field": "advertised_price", "order": "asc"})),
            3,
        )
        .await?;
    let Some(page) = page else {
        let why = format!("the search answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let Some(v) = page.vehicles.first().cloned() else {
        a.claims.push(Claim {
            fact: Fact::NotListed {
                what: format!("a {make} {model} listed as available in {currency}"),
            },
            citation: session.cite(read, "", &page.provenance, &page.freshness),
        });
        flag_if_stale(session, read, &page.freshness, &mut a);
        a.text = format!("The dealer lists no {make} {model} as available.");
        return Ok(finish(session, a));
    };
    list_vehicles(session, read, std::slice::from_ref(&v), &mut a);
    let store = session
        .env
        .rooftop(&v.rooftop_id)
        .map_or_else(|| v.rooftop_id.clone(), |r| r.name.clone());
    a.text = format!(
        "The cheapest {make} {model} listed as available is the {} at {store}, advertised at {} (listing not verified; fees and taxes extra unless stated).",
        v.title(),
        v.advertised_price.amount.display()
    );
    Ok(finish(session, a))
}

/// Grading of AUD-19.
pub async fn grade_cheapest_make_model(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let (Some((make, model)), Some(currency)) = (&s.make_model, &s.currency) else {
        return Ok(Vec::new());
    };
    let mut out = grade_listed(a, g).await?;
    let zero = Money {
        amount_minor: 0,
        currency: currency.clone(),
    };
    // Asked another way: the make alone, model checked here.
    let page = g
        .search(
            json!({"make": [make], "availability": ["available"], "price_min": zero}),
            Some(json!({"field": "advertised_price", "order": "asc"})),
            50,
        )
        .await?;
    let stated = listed(a).first().map(|(v, _)| (*v).clone());
    let mut problems = Vec::new();
    match (page, stated) {
        (Some(page), Some(v)) => {
            if !v.make.eq_ignore_ascii_case(make) || !v.model.eq_ignore_ascii_case(model) {
                problems.push(format!("the unit named is a {} {}", v.make, v.model));
            }
            for c in page
                .vehicles
                .iter()
                .filter(|c| c.model.eq_ignore_ascii_case(model))
            {
                if c.advertised_price.amount.amount_minor < v.advertised_price.amount_minor {
                    problems.push(format!(
                        "{} is cheaper ({})",
                        c.vehicle_id,
                        c.advertised_price.amount.display()
                    ));
                }
            }
        }
        (Some(page), None) => {
            if page
                .vehicles
                .iter()
                .any(|c| c.model.eq_ignore_ascii_case(model))
            {
                problems.push(format!("a {make} {model} is listed but none is named"));
            }
        }
        (None, _) => problems.push("a search by make did not answer".into()),
    }
    out.push(Check::judge(
        Prc,
        "PRC-IS-CHEAPEST",
        problems,
        format!("no listed-available {make} {model} is cheaper in {currency}"),
    ));
    out.extend(grade_availability_reports(a));
    Ok(out)
}

/// AUD-20.
pub async fn rooftop_contact(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let Some(vin) = s.in_stock.as_ref().and_then(|v| v.vin.clone()) else {
        return Ok(unanswerable(session, "no VIN to ask about".into()));
    };
    let (read, page) = session.search(json!({"vin": vin}), None, 1).await?;
    let Some(v) = page.and_then(|p| p.vehicles.into_iter().next()) else {
        let why = format!("the search by VIN answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    list_vehicles(session, read, std::slice::from_ref(&v), &mut a);
    let (dread, dealer) = session.dealer(&v.rooftop_id).await?;
    let Some(dealer) = dealer else {
        let why = format!("dealer.get answered {}", session.error(dread));
        return Ok(unanswerable(session, why));
    };
    let Some(rooftop) = dealer
        .rooftops
        .iter()
        .find(|r| r.rooftop_id == v.rooftop_id)
    else {
        return Ok(unanswerable(
            session,
            "dealer.get does not describe the vehicle's store".into(),
        ));
    };
    let contacts: Vec<String> = rooftop
        .sales_contacts()
        .iter()
        .map(|c| c.value.clone())
        .collect();
    a.claims.push(Claim {
        fact: Fact::Rooftop {
            vehicle_id: v.vehicle_id.clone(),
            rooftop_id: rooftop.rooftop_id.clone(),
            name: rooftop.name.clone(),
            sales_contacts: contacts.clone(),
        },
        citation: session.cite(dread, "", &dealer.provenance, &dealer.freshness),
    });
    if !dealer.freshness.current_at(session.received_at(dread)) {
        a.risk_flags
            .insert(crate::audit::answer::RiskFlag::StaleRecord);
    }
    a.text = format!(
        "{} ({}) sells it. Sales: {}.",
        rooftop.name,
        rooftop.address.locality,
        if contacts.is_empty() {
            "no public sales contact is published".to_owned()
        } else {
            contacts.join(", ")
        }
    );
    Ok(finish(session, a))
}

/// Grading of AUD-20.
pub async fn grade_rooftop_contact(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(subject) = &s.in_stock else {
        return Ok(Vec::new());
    };
    let vin = subject.vin.clone().unwrap_or_default();
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::Rooftop {
            rooftop_id,
            name,
            sales_contacts,
            ..
        } => Some((rooftop_id, name, sales_contacts)),
        _ => None,
    });
    let mut where_problems = Vec::new();
    let mut contact_problems = Vec::new();
    let Some((rooftop_id, name, contacts)) = stated else {
        return Ok(vec![Check::judge(
            Inv,
            "INV-ROOFTOP-CORRECT",
            vec!["the answer names no store".into()],
            "",
        )]);
    };
    match g.vehicle(&subject.rooftop_id, "vin", &vin).await? {
        Lookup::Found(r) if &r.rooftop_id != rooftop_id => where_problems.push(format!(
            "get_vehicle places the VIN at {}, not {rooftop_id}",
            r.rooftop_id
        )),
        Lookup::Found(_) => {}
        Lookup::NotFound => where_problems.push("get_vehicle does not find the VIN".into()),
        Lookup::Unreadable(code) => where_problems.push(format!("get_vehicle answered {code}")),
    }
    match g.dealer().await? {
        Some(d) => match d.rooftops.iter().find(|r| &r.rooftop_id == rooftop_id) {
            Some(r) => {
                if &r.name != name {
                    where_problems.push(format!("dealer.get names the store {}", r.name));
                }
                let published: Vec<&str> = r
                    .sales_contacts()
                    .iter()
                    .map(|c| c.value.as_str())
                    .collect();
                for c in contacts {
                    if !published.contains(&c.as_str()) {
                        contact_problems
                            .push(format!("{c} is not a public sales contact of the store"));
                    }
                }
                if contacts.is_empty() && !published.is_empty() {
                    contact_problems
                        .push("the store publishes sales contacts the answer leaves out".into());
                }
            }
            None => where_problems.push(format!("dealer.get has no store {rooftop_id}")),
        },
        None => where_problems.push("dealer.get of the organization did not answer".into()),
    }
    let mut out = vec![Check::judge(
        Inv,
        "INV-ROOFTOP-CORRECT",
        where_problems,
        "the store named is the one get_vehicle and dealer.get give for the VIN",
    )];
    out.push(Check::judge(
        Inv,
        "INV-CONTACTS-PUBLISHED",
        contact_problems,
        "the contacts given are the store's public sales contacts",
    ));
    Ok(out)
}
