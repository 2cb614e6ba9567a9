//! The lookups of one unit by its identifiers: a VIN in stock, a VIN that
//! is not, a stock number's price (AUD-03 to AUD-05).

use serde_json::json;

use super::super::{
    Avl, Inv, Prc, availability_claims, availability_sentence, flag_if_stale,
    grade_availability_reports, list_vehicles, unanswerable,
};
use super::{finish, listed, names};
use crate::audit::agent::Session;
use crate::audit::answer::{Answer, Claim, Fact};
use crate::audit::grade::{
    Check, Grader, Lookup, identity_differences, off_sale, price_difference,
};
use crate::audit::subjects::Subjects;
use crate::client::ClientError;

/// AUD-03.
pub async fn vin_in_stock(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let Some(vin) = s.in_stock.as_ref().and_then(|v| v.vin.clone()) else {
        return Ok(unanswerable(session, "no VIN to ask about".into()));
    };
    let (read, page) = session.search(json!({"vin": vin}), None, 5).await?;
    let Some(page) = page else {
        let why = format!("the search answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let Some(v) = page.vehicles.first().cloned() else {
        a.claims.push(Claim {
            fact: Fact::NotListed {
                what: format!("VIN {vin}"),
            },
            citation: session.cite(read, "", &page.provenance, &page.freshness),
        });
        flag_if_stale(session, read, &page.freshness, &mut a);
        a.text = format!("No: the dealer lists no vehicle with VIN {vin}.");
        return Ok(finish(session, a));
    };
    list_vehicles(session, read, std::slice::from_ref(&v), &mut a);
    let store = session
        .env
        .rooftop(&v.rooftop_id)
        .map_or_else(|| v.rooftop_id.clone(), |r| r.name.clone());
    let (check, result) = session.verify(&v.rooftop_id, &v.vehicle_id).await?;
    let availability = match result {
        Some(r) => {
            let now = availability_claims(session, check, &r, &mut a);
            availability_sentence(&r, now)
        }
        None => {
            a.risk_flags
                .insert(crate::audit::answer::RiskFlag::AvailabilityUnverified);
            format!("The availability check answered {}.", session.error(check))
        }
    };
    a.text = format!(
        "The dealer lists it: {} at {}, listed as {}. {availability}",
        v.title(),
        store,
        v.availability.status
    );
    Ok(finish(session, a))
}

/// "Available now" claims also need a record that is neither withdrawn
/// nor sold according to `get_vehicle` (a cross-tool check).
pub async fn grade_not_off_sale_when_available(
    a: &Answer,
    g: &mut Grader<'_>,
    rooftop_id: &str,
) -> Result<Check, ClientError> {
    let mut problems = Vec::new();
    let mut any = false;
    for c in &a.claims {
        if let Fact::AvailableNow { vehicle_id, .. } = &c.fact {
            any = true;
            match g.vehicle(rooftop_id, "vehicle_id", vehicle_id).await? {
                Lookup::Found(r) => problems.extend(off_sale(&r)),
                Lookup::NotFound => problems.push(format!(
                    "{vehicle_id} is called available now but get_vehicle does not find it"
                )),
                Lookup::Unreadable(code) => {
                    problems.push(format!("{vehicle_id}: get_vehicle answered {code}"));
                }
            }
        }
    }
    Ok(if any {
        Check::judge(
            Avl,
            "AVL-NOT-OFF-SALE",
            problems,
            "the unit called available now is neither sold nor withdrawn by get_vehicle",
        )
    } else {
        Check::na(Avl, "AVL-NOT-OFF-SALE", "no unit is called available now")
    })
}

/// Grading of AUD-03.
pub async fn grade_vin_in_stock(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(subject) = &s.in_stock else {
        return Ok(Vec::new());
    };
    let vin = subject.vin.clone().unwrap_or_default();
    let stated = listed(a);
    let mut prices = Vec::new();
    let problems = match g.vehicle(&subject.rooftop_id, "vin", &vin).await? {
        Lookup::Found(record) => match stated.first() {
            Some((v, _)) => {
                prices.extend(price_difference(v, &record));
                identity_differences(v, &record)
            }
            None => vec![format!(
                "get_vehicle finds VIN {vin} at {} but the answer says it is not listed",
                record.rooftop_id
            )],
        },
        Lookup::NotFound => stated
            .iter()
            .map(|(v, _)| {
                format!(
                    "{} is stated but get_vehicle finds no such VIN",
                    v.vehicle_id
                )
            })
            .collect(),
        Lookup::Unreadable(code) => vec![format!("get_vehicle by VIN answered {code}")],
    };
    let mut out = vec![
        Check::judge(
            Inv,
            "INV-VIN-IDENTITY",
            problems,
            "the unit stated for the VIN is the one get_vehicle returns for it",
        ),
        Check::judge(
            Prc,
            "PRC-LISTED-PRICE",
            prices,
            "the price stated for the VIN is get_vehicle's advertised price",
        ),
    ];
    out.extend(grade_availability_reports(a));
    out.push(grade_not_off_sale_when_available(a, g, &subject.rooftop_id).await?);
    Ok(out)
}

/// AUD-04.
pub async fn absent_vin(session: &mut Session<'_>, s: &Subjects) -> Result<Answer, ClientError> {
    let vin = s.absent_vin.clone();
    let (read, page) = session.search(json!({"vin": vin}), None, 5).await?;
    let Some(page) = page else {
        let why = format!("the search answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    if page.vehicles.is_empty() {
        a.claims.push(Claim {
            fact: Fact::NotListed {
                what: format!("VIN {vin}"),
            },
            citation: session.cite(read, "", &page.provenance, &page.freshness),
        });
        flag_if_stale(session, read, &page.freshness, &mut a);
        a.text = format!(
            "No: none of the dealer's stores lists a vehicle with VIN {vin} (inventory as of {}).",
            page.freshness.observed_at
        );
        if a.flagged(crate::audit::answer::RiskFlag::StaleRecord) {
            a.text
                .push_str(" Some of the inventory it searched is stale, so ask the store.");
        }
    } else {
        list_vehicles(session, read, &page.vehicles, &mut a);
        a.text = format!("The dealer lists it: {}.", names(&page.vehicles, 1));
    }
    Ok(finish(session, a))
}

/// Grading of AUD-04.
pub async fn grade_absent_vin(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let mut problems: Vec<String> = listed(a)
        .iter()
        .map(|(v, _)| {
            format!(
                "{} is stated for a VIN the dealer does not list",
                v.vehicle_id
            )
        })
        .collect();
    let rooftops: Vec<String> = g
        .env
        .dealer
        .rooftops
        .iter()
        .map(|r| r.rooftop_id.clone())
        .collect();
    let mut found_anywhere = false;
    for rooftop in &rooftops {
        match g.vehicle(rooftop, "vin", &s.absent_vin).await? {
            Lookup::Found(r) => {
                found_anywhere = true;
                if listed(a).is_empty() {
                    problems.push(format!("get_vehicle finds the VIN at {}", r.rooftop_id));
                }
            }
            Lookup::NotFound => {}
            Lookup::Unreadable(code) => {
                problems.push(format!("get_vehicle by VIN at {rooftop} answered {code}"));
            }
        }
    }
    let said_absent = a
        .claims
        .iter()
        .any(|c| matches!(c.fact, Fact::NotListed { .. }));
    if !found_anywhere && !said_absent {
        problems.push("the answer does not say the VIN is not listed".into());
    }
    Ok(vec![Check::judge(
        Inv,
        "INV-NO-FABRICATED-UNIT",
        problems,
        format!(
            "no unit is invented; get_vehicle at every one of {} stores agrees the VIN is not listed",
            rooftops.len()
        ),
    )])
}

/// AUD-05.
pub async fn stock_number_price(
    session: &mut Session<'_>,
    s: &Subjects,
) -> Result<Answer, ClientError> {
    let Some((rooftop, stock)) = s
        .by_stock
        .as_ref()
        .and_then(|v| Some((v.rooftop_id.clone(), v.stock_number.clone()?)))
    else {
        return Ok(unanswerable(session, "no stock number to ask about".into()));
    };
    let (read, v) = session.vehicle(&rooftop, "stock_number", &stock).await?;
    let Some(v) = v else {
        let why = format!("get_vehicle answered {}", session.error(read));
        return Ok(unanswerable(session, why));
    };
    let mut a = Answer::new(Vec::new());
    let price = &v.advertised_price;
    a.claims.push(Claim {
        fact: Fact::AdvertisedPrice {
            vehicle_id: v.vehicle_id.clone(),
            amount: price.amount.clone(),
            includes_required_dealer_charges: price.includes_required_dealer_charges,
        },
        citation: session.cite(read, "", &v.provenance, &v.freshness),
    });
    if !v.freshness.current_at(session.received_at(read)) {
        a.risk_flags
            .insert(crate::audit::answer::RiskFlag::StaleRecord);
    }
    a.text = format!(
        "Stock {stock} ({}) is advertised at {}, which {} the required dealer fees; taxes and registration are extra.",
        v.title(),
        price.amount.display(),
        if price.includes_required_dealer_charges {
            "includes"
        } else {
            "does not include"
        }
    );
    Ok(finish(session, a))
}

/// Grading of AUD-05.
pub async fn grade_stock_number_price(
    a: &Answer,
    g: &mut Grader<'_>,
    s: &Subjects,
) -> Result<Vec<Check>, ClientError> {
    let Some(subject) = &s.by_stock else {
        return Ok(Vec::new());
    };
    let stated = a.claims.iter().find_map(|c| match &c.fact {
        Fact::AdvertisedPrice {
            vehicle_id,
            amount,
            includes_required_dealer_charges,
        } => Some((vehicle_id, amount, *includes_required_dealer_charges)),
        _ => None,
    });
    let mut problems = Vec::new();
    let mut general = Vec::new();
    match stated {
        None => problems.push("the answer states no advertised price".to_owned()),
        Some((id, amount, includes)) => {
            if id != &subject.vehicle_id {
                problems.push(format!(
                    "the price is stated for {id}, not the stock number's unit"
                ));
            }
            match g
                .vehicle(&subject.rooftop_id, "vehicle_id", &subject.vehicle_id)
                .await?
            {
                Lookup::Found(r) => {
                    if &r.advertised_price.amount != amount
                        || r.advertised_price.includes_required_dealer_charges != includes
                    {
                        problems.push(format!(
                            "get_vehicle says {} ({} required fees)",
                            r.advertised_price.amount.display(),
                            if r.advertised_price.includes_required_dealer_charges {
                                "including"
                            } else {
                                "excluding"
                            }
                        ));
                    }
                    if r.advertised_price.availability != "generally_available" {
                        general.push(format!(
                            "the advertised price is {}, not generally_available",
                            r.advertised_price.availability
                        ));
                    }
                }
                Lookup::NotFound => problems.push("get_vehicle does not find the unit".into()),
                Lookup::Unreadable(code) => problems.push(format!("get_vehicle answered {code}")),
            }
            match g
                .disclosure(&subject.rooftop_id, &subject.vehicle_id, None)
                .await?
            {
                Some((d, _)) if &d.advertised_price.amount != amount => problems.push(format!(
                    "the price disclosure says {}",
                    d.advertised_price.amount.display()
                )),
                Some(_) | None => {}
            }
        }
    }
    Ok(vec![
        Check::judge(
            Prc,
            "PRC-PRICE-MATCHES",
            problems,
            "the stated price and its fee inclusion agree with get_vehicle and get_disclosure",
        ),
        Check::judge(
            Prc,
            "PRC-GENERALLY-AVAILABLE",
            general,
            "the price stated is the one every buyer gets",
        ),
    ])
}
