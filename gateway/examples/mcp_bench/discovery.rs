//! What the benchmark learns from the gateway before it measures: the
//! vehicles it can verify, the rooftops' countries, the workload's ids.

use super::*;

pub(crate) fn str_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

/// Vehicles for the `verify_*` scenarios: `total` distinct ones, paging
/// every organization's default search (limit 100) in turn.
pub(crate) async fn verify_vehicles(
    mcp: &Mcp,
    organizations: &[String],
    total: usize,
) -> Result<Vec<(String, String, String)>, String> {
    let mut out = Vec::with_capacity(total);
    for org in organizations {
        let mut args = json!({"organization_id": org, "page": {"limit": 100}});
        while out.len() < total {
            let sc = mcp.structured(SEARCH, &args).await?;
            for v in sc["vehicles"].as_array().into_iter().flatten() {
                if out.len() < total {
                    out.push((
                        str_of(v, "organization_id"),
                        str_of(v, "rooftop_id"),
                        str_of(v, "vehicle_id"),
                    ));
                }
            }
            match sc["page"]["next_cursor"].as_str() {
                Some(c) => args["page"]["cursor"] = json!(c),
                None => break,
            }
        }
        if out.len() >= total {
            break;
        }
    }
    Ok(out)
}

/// rooftop_id -> country of every rooftop of `organizations` the caller sees.
pub(crate) async fn rooftop_countries(
    mcp: &Mcp,
    organizations: &[String],
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for org in organizations {
        let sc = mcp
            .structured(DEALER_GET, &json!({"organization_id": org}))
            .await?;
        for r in sc["rooftops"].as_array().into_iter().flatten() {
            let country = str_of(&r["address"], "country");
            if !country.is_empty() {
                out.insert(str_of(r, "rooftop_id"), country);
            }
        }
    }
    Ok(out)
}

pub(crate) async fn discover(
    mcp: &Mcp,
    deep_pages: usize,
    verify: Option<(usize, usize)>,
    pricing: bool,
) -> Result<Workload, String> {
    let manifest = mcp.structured(MANIFEST, &json!({})).await?;
    let organizations: Vec<String> = manifest["organization_ids"]
        .as_array()
        .ok_or("manifest without organization_ids")?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let rooftops = manifest["rooftop_ids"].as_array().map_or(0, Vec::len);
    if organizations.is_empty() {
        return Err("the manifest lists no organization".into());
    }
    let mut samples = Vec::new();
    for org in &organizations {
        let mut args = json!({"organization_id": org, "page": {"limit": 100}});
        for _ in 0..2 {
            let sc = mcp.structured(SEARCH, &args).await?;
            for v in sc["vehicles"].as_array().into_iter().flatten() {
                let amount = &v["advertised_price"]["amount"];
                let price = amount["amount_minor"]
                    .as_i64()
                    .map(|a| (a, str_of(amount, "currency")));
                samples.push(Sample {
                    organization_id: str_of(v, "organization_id"),
                    rooftop_id: str_of(v, "rooftop_id"),
                    vehicle_id: str_of(v, "vehicle_id"),
                    make: str_of(v, "make"),
                    model: str_of(v, "model"),
                    year: v["year"].as_i64().unwrap_or(2020),
                    price,
                });
            }
            match sc["page"]["next_cursor"].as_str() {
                Some(c) => args["page"]["cursor"] = json!(c),
                None => break,
            }
        }
    }
    if samples.is_empty() {
        return Err("no vehicle found: is the inventory imported?".into());
    }
    let (mut verify_hot, mut verify_fresh) = (Vec::new(), Vec::new());
    if let Some((total, hot)) = verify {
        let mut all = verify_vehicles(mcp, &organizations, total).await?;
        if all.len() <= hot {
            return Err(format!(
                "only {} vehicles for the verify scenarios (need more than --verify-hot {hot})",
                all.len()
            ));
        }
        verify_fresh = all.split_off(hot);
        verify_hot = all;
    }
    let countries = if pricing {
        let c = rooftop_countries(mcp, &organizations).await?;
        if let Some(s) = samples.iter().find(|s| !c.contains_key(&s.rooftop_id)) {
            return Err(format!(
                "dealeragent.dealer.get gives no address.country for rooftop {}",
                s.rooftop_id
            ));
        }
        c
    } else {
        BTreeMap::new()
    };
    Ok(Workload {
        countries,
        organizations,
        rooftops,
        samples,
        deep_pages,
        verify_hot,
        verify_fresh,
        fresh_next: AtomicUsize::new(0),
    })
}

/// Mean size of the filtered set (sum of the `make` facet) over a few
/// requests of a search scenario, to show how selective it is.
pub(crate) async fn mean_hits(
    mcp: &Mcp,
    work: &Workload,
    scenario: &str,
    rng: &mut Rng,
) -> Option<f64> {
    let mut sum = 0u64;
    let mut n = 0u64;
    for _ in 0..40 {
        let args = match work.op(scenario, rng) {
            Op::One { tool, args } if tool == SEARCH => args,
            Op::Deep { args, .. } => args,
            Op::One { .. } => return None,
        };
        let sc = mcp.structured(SEARCH, &args).await.ok()?;
        let total: u64 = sc["facets"]["make"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["count"].as_u64())
            .sum();
        sum += total;
        n += 1;
    }
    Some(sum as f64 / n as f64)
}
