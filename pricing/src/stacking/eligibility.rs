//! Per program, before any stack is searched: applicability to the
//! vehicle and the buyer's residency, tri-state eligibility from the
//! profile's claims, and the amount resolved against the vehicle
//! (docs/pricing.md "Applicability", "Eligibility (tri-state)").

use super::*;

pub(super) fn ci_contains(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x.eq_ignore_ascii_case(value))
}

/// Applicability (docs/pricing.md "Applicability"), or a residency need when the profile
/// lacks the subdivision / postal code needed to decide.
pub(super) fn applicability(
    vp: &ValidatedProgram,
    vehicle: &Vehicle,
    profile: &Profile,
    mode: PaymentMode,
) -> Result<Option<Need>, String> {
    let p = &vp.program;
    let currency = vehicle.advertised_price.currency();
    if let ProgramAmount::Known { amount } = &p.amount
        && amount.currency() != currency
    {
        return Err(format!(
            "currency: fixed amount in {} but the vehicle is priced in {}",
            amount.currency(),
            currency
        ));
    }
    if let Some(cap) = p.cap
        && cap.currency() != currency
    {
        return Err(format!(
            "currency: cap in {} but the vehicle is priced in {}",
            cap.currency(),
            currency
        ));
    }
    // A declarative amount limit is bound to its currency like a cap.
    if let Some(m) = p
        .stacking
        .limits
        .iter()
        .filter_map(|l| l.max_amount)
        .find(|m| m.currency() != currency)
    {
        return Err(format!(
            "currency: stacking limit in {} but the vehicle is priced in {}",
            m.currency(),
            currency
        ));
    }
    let a = &p.applies_to;
    let scope_fail = |what: &str, v: &str| Err(format!("scope: {what} `{v}` not covered"));
    if let Some(l) = &a.makes
        && !ci_contains(l, &vehicle.make)
    {
        return scope_fail("make", &vehicle.make);
    }
    if let Some(l) = &a.models
        && !ci_contains(l, &vehicle.model)
    {
        return scope_fail("model", &vehicle.model);
    }
    if let Some(l) = &a.years
        && !l.contains(&vehicle.year)
    {
        return scope_fail("year", &vehicle.year.to_string());
    }
    if let Some(l) = &a.trims
        && !vehicle.trim.as_deref().is_some_and(|t| ci_contains(l, t))
    {
        return scope_fail("trim", vehicle.trim.as_deref().unwrap_or("(none)"));
    }
    if let Some(l) = &a.conditions
        && !ci_contains(l, &vehicle.condition)
    {
        return scope_fail("condition", &vehicle.condition);
    }
    if let Some(l) = &a.vins
        && !vehicle.vin.as_deref().is_some_and(|v| ci_contains(l, v))
    {
        return scope_fail("vin", vehicle.vin.as_deref().unwrap_or("(none)"));
    }
    if let Some(l) = &a.rooftop_ids
        && !l.contains(&vehicle.rooftop_id)
    {
        return scope_fail("rooftop", &vehicle.rooftop_id);
    }
    if let Some(from) = p.valid_from
        && profile.as_of < from
    {
        return Err(format!("validity: starts {}", from.to_rfc3339()));
    }
    if let Some(until) = p.valid_until
        && profile.as_of >= until
    {
        return Err(format!("validity: ended {}", until.to_rfc3339()));
    }
    if let Some(modes) = &p.payment_modes
        && !modes.contains(&mode)
    {
        return Err(format!("payment mode: not offered for {}", mode.name()));
    }
    let mut need = None;
    let j = &profile.jurisdiction;
    if let Some(codes) = &p.jurisdictions {
        let country_ok = codes.iter().any(|c| c.eq_ignore_ascii_case(&j.country));
        let sub_ok = j
            .subdivision
            .as_deref()
            .is_some_and(|s| codes.iter().any(|c| c.eq_ignore_ascii_case(s)));
        let wants_sub_of_country = codes.iter().any(|c| {
            c.len() > 2
                && c.get(..2)
                    .is_some_and(|cc| cc.eq_ignore_ascii_case(&j.country))
        });
        if !country_ok && !sub_ok {
            if j.subdivision.is_none() && wants_sub_of_country {
                need = Some(Need {
                    criterion: Criterion::Residency.name().into(),
                    evidence: format!("residency in one of {}", codes.join(", ")),
                });
            } else {
                return Err(format!(
                    "jurisdiction: {} not in {}",
                    j.subdivision.as_deref().unwrap_or(&j.country),
                    codes.join(", ")
                ));
            }
        }
    }
    if !p.excluded_postal_prefixes.is_empty() {
        match &j.postal_code {
            Some(code) => {
                let norm: String = code
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect::<String>()
                    .to_ascii_uppercase();
                if let Some(px) = p.excluded_postal_prefixes.iter().find(|px| {
                    let pn: String = px
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect::<String>()
                        .to_ascii_uppercase();
                    norm.starts_with(&pn)
                }) {
                    return Err(format!("postal code: excluded prefix {px}"));
                }
            }
            None if need.is_none() => {
                need = Some(Need {
                    criterion: Criterion::Residency.name().into(),
                    evidence: format!(
                        "postal code outside prefixes {}",
                        p.excluded_postal_prefixes.join(", ")
                    ),
                });
            }
            None => {}
        }
    }
    Ok(need)
}

pub(super) enum Test {
    True,
    False,
    Unknown,
}

pub(super) fn test_criterion(
    c: &EligibilityCriterion,
    profile: &Profile,
    mode: PaymentMode,
) -> Test {
    if c.criterion == Criterion::PaymentMode {
        let m = mode.name();
        let hit = match (&c.operator, &c.value) {
            (Operator::Present, _) => true,
            (_, serde_json::Value::String(s)) => s == m,
            (_, serde_json::Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(m)),
            _ => false,
        };
        return if hit { Test::True } else { Test::False };
    }
    match profile.claims.get(&c.criterion) {
        Some(ClaimValue::True) => Test::True,
        Some(ClaimValue::False) => Test::False,
        Some(ClaimValue::Unknown) | None => Test::Unknown,
    }
}

pub(super) fn needs_evidence(c: &EligibilityCriterion) -> bool {
    c.evidence_status == EvidenceStatus::Required || c.operator == Operator::Verified
}

pub(super) fn need_of(c: &EligibilityCriterion) -> Need {
    let evidence = c.description.clone().unwrap_or_else(|| {
        let status = c.evidence_status.name();
        format!(
            "{} {} {} (evidence {status})",
            c.criterion.name(),
            c.operator.name(),
            c.value
        )
    });
    Need {
        criterion: c.criterion.name().into(),
        evidence,
    }
}

/// Tri-state eligibility (docs/pricing.md "Eligibility (tri-state)").
pub(super) fn eligibility(
    vp: &ValidatedProgram,
    profile: &Profile,
    mode: PaymentMode,
) -> Eligibility {
    let p = &vp.program;
    if p.criteria.is_empty() {
        return Eligibility::Eligible;
    }
    let results: Vec<(&EligibilityCriterion, Test)> = p
        .criteria
        .iter()
        .map(|c| (c, test_criterion(c, profile, mode)))
        .collect();
    let unknown_needs = || -> Vec<Need> {
        results
            .iter()
            .filter(|(_, t)| matches!(t, Test::Unknown))
            .map(|(c, _)| need_of(c))
            .collect()
    };
    match p.criteria_mode {
        CriteriaMode::All => {
            if let Some((c, _)) = results.iter().find(|(_, t)| matches!(t, Test::False)) {
                return Eligibility::Ineligible {
                    reason: format!("criterion {} not met", c.criterion.name()),
                };
            }
            let needs = unknown_needs();
            if !needs.is_empty() {
                return Eligibility::Unknown { needs };
            }
            let mut ev: Vec<String> = results
                .iter()
                .filter(|(c, _)| needs_evidence(c))
                .map(|(c, _)| c.criterion.name().to_owned())
                .collect();
            ev.dedup();
            if ev.is_empty() {
                Eligibility::Eligible
            } else {
                Eligibility::EligibleSubjectToEvidence { criteria: ev }
            }
        }
        CriteriaMode::Any => {
            let met: Vec<&EligibilityCriterion> = results
                .iter()
                .filter(|(_, t)| matches!(t, Test::True))
                .map(|(c, _)| *c)
                .collect();
            if met.iter().any(|c| !needs_evidence(c)) {
                return Eligibility::Eligible;
            }
            if !met.is_empty() {
                let mut ev: Vec<String> = met.iter().map(|c| c.criterion.name().into()).collect();
                ev.dedup();
                return Eligibility::EligibleSubjectToEvidence { criteria: ev };
            }
            let needs = unknown_needs();
            if needs.is_empty() {
                Eligibility::Ineligible {
                    reason: "no criterion met (criteria_mode any)".into(),
                }
            } else {
                Eligibility::Unknown { needs }
            }
        }
    }
}

pub(super) fn resolve_amount(
    vp: &ValidatedProgram,
    vehicle: &Vehicle,
) -> Result<ResolvedAmount, MoneyError> {
    let p = &vp.program;
    let cap = |m: Money| -> (Money, Option<Money>) {
        match p.cap {
            Some(c) if c.currency() == m.currency() && c.amount_minor() < m.amount_minor() => {
                (c, Some(m))
            }
            _ => (m, None),
        }
    };
    Ok(match &p.amount {
        ProgramAmount::Known { amount } => {
            let (amount, capped_from) = cap(*amount);
            ResolvedAmount::Known {
                amount,
                capped_from,
            }
        }
        ProgramAmount::Unknown { reason } => ResolvedAmount::Unknown {
            reason: reason.clone(),
        },
        ProgramAmount::PercentOff { percent, rounding } => {
            // Validation always sets `percent` for percent_off programs.
            let Some(pct) = vp.percent else {
                return Ok(ResolvedAmount::Unknown {
                    reason: format!("percent `{percent}` was not validated"),
                });
            };
            let r = vehicle.advertised_price.percent(pct, *rounding)?;
            let (amount, capped_from) = cap(r.money);
            ResolvedAmount::Percent {
                percent: percent.clone(),
                amount,
                capped_from,
                transformation: r.transformation,
                exact: r.exact,
            }
        }
    })
}
