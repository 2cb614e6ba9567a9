//! Property tests: the index against a reference scan.

use super::*;

fn arb_record(n: usize) -> impl Strategy<Value = VehicleRecord> {
    (
        2015i32..2019,
        (0usize..3, 0i64..5),
        prop::option::of((0i64..4, any::<bool>())),
        prop::option::of(0i64..40),
        0i64..4,
        0usize..3,
    )
        .prop_map(move |(year, (cur, price), odo, age, obs, make)| {
            let rooftop = ["roof.a", "roof.b", "roof.c"][n % 3];
            let mut r = car(rooftop, n);
            // Ids are unique per snapshot but collide across rooftops, so the
            // rooftop_id tie-break is exercised.
            r.vehicle_id = format!("veh.{:03}", n / 3);
            r.year = year;
            r.make = ["Ford", "Toyota", "Kia"][make].into();
            r.advertised_price = Money::try_new(price * 1000, ["USD", "CAD", "EUR"][cur]).unwrap();
            r.odometer = odo.map(|(v, km)| Odometer {
                value: v * 1000,
                unit: if km {
                    DistanceUnit::Km
                } else {
                    DistanceUnit::Mi
                },
                status: None,
            });
            r.stocked_at = age.map(|d| now() - Duration::hours(d * 12));
            r.source.observed_at = now() - Duration::minutes(obs);
            r
        })
}

fn arb_fleet() -> impl Strategy<Value = Vec<VehicleRecord>> {
    (0usize..40).prop_flat_map(|len| (0..len).map(arb_record).collect::<Vec<_>>())
}

fn build_fleet(records: &[VehicleRecord]) -> Vec<Arc<SnapshotIndex>> {
    ["roof.a", "roof.b", "roof.c"]
        .iter()
        .map(|r| {
            index(
                r,
                records
                    .iter()
                    .filter(|v| v.rooftop_id == *r)
                    .cloned()
                    .collect(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn pages_concatenate_to_the_sorted_filtered_list(
        fleet in arb_fleet(),
        limit in 1usize..7,
        sort in 0usize..SORTS.len(),
        filter in 0usize..5,
    ) {
        let sort = SORTS[sort];
        let indexes = build_fleet(&fleet);
        let mut args = sort_args(sort, limit);
        let keep: Box<dyn Fn(&VehicleRecord) -> bool> = match filter {
            0 => Box::new(|_| true),
            1 => {
                args["filters"] = json!({"price_max": {"amount_minor": 2000, "currency": "USD"}});
                Box::new(|r| r.advertised_price.currency() == Currency::USD
                    && r.advertised_price.amount_minor() <= 2000)
            }
            2 => {
                args["filters"] = json!({"odometer_max": {"value": 2000, "unit": "km"}});
                Box::new(|r| r.odometer.is_some_and(|o| o.millimetres() <= 2_000_000_000))
            }
            3 => {
                args["filters"] = json!({"inventory_age_min_days": 5});
                Box::new(|r| r.stocked_at.is_some_and(|b| now() - b >= Duration::days(5)))
            }
            _ => {
                args["query"] = json!("toy");
                Box::new(|r| r.make == "Toyota")
            }
        };
        let expected: Vec<(String, String)> = {
            let mut v: Vec<&VehicleRecord> = fleet.iter().filter(|r| keep(r)).collect();
            v.sort_by(|a, b| reference_cmp(sort, a, b, now()));
            v.iter().map(|r| (r.vehicle_id.clone(), r.rooftop_id.clone())).collect()
        };
        let q = query(args);
        let mut got = Vec::new();
        let mut after: Option<PageKey> = None;
        let mut pages = 0;
        loop {
            let page = search::search(&indexes, &q, after.as_ref(), now());
            prop_assert_eq!(page.total, expected.len());
            prop_assert!(page.vehicles.len() <= limit);
            got.extend(page.vehicles.iter().map(|(ix, row)| {
                let r = ix.record(*row);
                (r.vehicle_id.clone(), r.rooftop_id.clone())
            }));
            pages += 1;
            prop_assert!(pages <= expected.len() + 1);
            match page.next {
                Some(k) => {
                    prop_assert_eq!(page.vehicles.len(), limit);
                    after = Some(k);
                }
                None => break,
            }
        }
        prop_assert_eq!(got, expected);
    }
}

/// What a page says, in comparable form.
type PageSummary = (
    Vec<(String, usize)>,
    usize,
    BTreeMap<&'static str, Vec<search::FacetValue>>,
    Option<PageKey>,
    Vec<SortKey>,
    Vec<(usize, i64)>,
);

fn summary(page: search::SearchPage) -> PageSummary {
    (
        page.vehicles
            .iter()
            .map(|(ix, row)| (ix.rooftop_id().to_owned(), *row))
            .collect(),
        page.total,
        page.facets,
        page.next,
        page.sort_keys,
        page.oldest_match_us,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The indexed plan (sort orders, posting lists, totals with the
    /// overlay applied) answers every page exactly as a visit of every
    /// row does: same vehicles, total, facets, cursor keys and freshness.
    #[test]
    fn the_indexed_plan_answers_exactly_as_a_full_scan(
        mut fleet in arb_fleet(),
        limit in 1usize..7,
        sort in 0usize..SORTS.len(),
        filter in 0usize..8,
        overlaid in any::<bool>(),
        future in any::<bool>(),
    ) {
        for (i, r) in fleet.iter_mut().enumerate() {
            // Two spellings of one model: grouped case-insensitively.
            r.model = ["F-150", "f-150", "Camry", "Soul"][i % 4].into();
            if future && i % 7 == 0 {
                r.stocked_at = Some(now() + Duration::days(2));
            }
        }
        let indexes = build_fleet(&fleet);
        let mut args = sort_args(SORTS[sort], limit);
        match filter {
            0 => {}
            1 => args["filters"] = json!({"make": ["toyota"]}),
            2 => args["filters"] = json!({"make": ["Ford", "kia"]}),
            3 => args["filters"] = json!({"model": ["F-150"]}),
            4 => {
                args["filters"] = json!({
                    "make": ["Toyota"],
                    "price_max": {"amount_minor": 2000, "currency": "USD"}
                });
            }
            5 => args["filters"] = json!({"availability": ["sold"]}),
            6 => args["filters"] = json!({"make": ["kia"], "model": ["soul", "camry"]}),
            _ => args["query"] = json!("toy"),
        }
        let mut overlay = search::AvailabilityOverlay::new();
        if overlaid {
            for (i, r) in fleet.iter().enumerate() {
                let entry = match i % 6 {
                    // Newer than the feed: replaces its status.
                    0 => ("sold", now()),
                    // Older than the feed: ignored.
                    3 => ("on_hold", now() - Duration::days(1)),
                    _ => continue,
                };
                overlay.entry(r.rooftop_id.clone()).or_default().push((
                    r.vehicle_id.clone(),
                    entry.0.to_owned(),
                    entry.1,
                ));
            }
        }
        let q = query(args);
        if future {
            // A search days later, when no basis lies in the future any
            // more, may build the snapshot's orders; they must not leak
            // into a search at an earlier instant (a cursor's).
            search::search_with_overlay(&indexes, &q, None, now() + Duration::days(3), &overlay);
        }
        let mut after: Option<PageKey> = None;
        for _ in 0..=fleet.len() {
            let fast = search::search_with_overlay(&indexes, &q, after.as_ref(), now(), &overlay);
            let slow = search::search_by_scan(&indexes, &q, after.as_ref(), now(), &overlay);
            let fast = summary(fast);
            prop_assert_eq!(&fast, &summary(slow));
            match fast.3 {
                Some(k) => after = Some(k),
                None => break,
            }
        }
    }
}

/// A bigger fleet with one dominant make (as a franchise rooftop's is),
/// so that make and price ranges span several checkpoints of the make and
/// price order and the default order is both walked and ranked.
fn arb_big_fleet() -> impl Strategy<Value = Vec<VehicleRecord>> {
    (0usize..120).prop_flat_map(|len| {
        (0..len)
            .map(|n| {
                (arb_record(n), 0usize..10).prop_map(move |(mut r, make)| {
                    r.make = [
                        "Ram", "Ram", "Ram", "Ram", "RAM", "Ford", "Kia", "Toyota", "Ram", "ram",
                    ][make]
                        .into();
                    r.model = ["1500", "ProMaster", "F-150", "Soul"][n % 4].into();
                    r.year = 2014 + i32::try_from(n % 7).unwrap_or(0);
                    r
                })
            })
            .collect::<Vec<_>>()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// A search filtered only by make and a price range (the make and
    /// price order with its facet checkpoints, `index::ranges`) answers
    /// every page exactly as a visit of every row does.
    #[test]
    fn make_and_price_ranges_answer_exactly_as_a_full_scan(
        fleet in arb_big_fleet(),
        limit in 1usize..25,
        sort in 0usize..SORTS.len(),
        makes in prop::sample::subsequence(vec!["ram", "Ford", "KIA", "toyota", "Honda"], 0..3),
        currency in 0usize..3,
        min in prop::option::of(0i64..5),
        max in prop::option::of(0i64..5),
        overlaid in any::<bool>(),
    ) {
        let indexes = build_fleet(&fleet);
        let mut args = sort_args(SORTS[sort], limit);
        let mut filters = serde_json::Map::new();
        if !makes.is_empty() {
            filters.insert("make".into(), json!(makes));
        }
        let cur = ["USD", "CAD", "EUR"][currency];
        let (min, max) = match (min, max) {
            (Some(a), Some(b)) if a > b => (Some(b), Some(a)),
            other => other,
        };
        if let Some(m) = min {
            filters.insert("price_min".into(), json!({"amount_minor": m * 1000, "currency": cur}));
        }
        if let Some(m) = max {
            filters.insert("price_max".into(), json!({"amount_minor": m * 1000, "currency": cur}));
        }
        args["filters"] = Value::Object(filters);
        let mut overlay = search::AvailabilityOverlay::new();
        if overlaid {
            for (i, r) in fleet.iter().enumerate().filter(|(i, _)| i % 5 == 0) {
                let at = if i % 10 == 0 { now() } else { now() - Duration::days(1) };
                overlay.entry(r.rooftop_id.clone()).or_default().push((
                    r.vehicle_id.clone(),
                    "pending_sale".to_owned(),
                    at,
                ));
            }
        }
        let q = query(args);
        let mut after: Option<PageKey> = None;
        for _ in 0..=fleet.len() {
            let fast = search::search_with_overlay(&indexes, &q, after.as_ref(), now(), &overlay);
            let slow = search::search_by_scan(&indexes, &q, after.as_ref(), now(), &overlay);
            let fast = summary(fast);
            prop_assert_eq!(&fast, &summary(slow));
            match fast.3 {
                Some(k) => after = Some(k),
                None => break,
            }
        }
    }
}

/// A fleet where one make and model dominate, with trims, colors, VINs
/// and stock numbers that share substrings with the make and model words,
/// so a token matches several words (runs, covers and single rows of the
/// facet order, `index::text::runs`).
fn arb_text_fleet() -> impl Strategy<Value = Vec<VehicleRecord>> {
    (0usize..120).prop_flat_map(|len| {
        (0..len)
            .map(|n| {
                (
                    arb_record(n),
                    0usize..10,
                    0usize..6,
                    0usize..4,
                    0usize..5,
                    0i64..90,
                )
                    .prop_map(move |(mut r, make, model, trim, color, seen)| {
                        // Many distinct observations: the oldest of a run
                        // may lie in a whole block or at either end.
                        r.source.observed_at = now() - Duration::minutes(seen);
                        r.make = [
                            "Ram",
                            "Ram",
                            "Ram",
                            "Ram",
                            "RAM",
                            "Chevrolet",
                            "Kia",
                            "Toyota",
                            "Ram",
                            "ram",
                        ][make]
                            .into();
                        r.model = [
                            "1500",
                            "1500",
                            "ProMaster 2500",
                            "Silverado 1500",
                            "Soul",
                            "1500",
                        ][model]
                            .into();
                        r.trim = Some(["Laramie", "Big Horn", "Tradesman", "LT"][trim].into());
                        r.exterior_color = Some(
                            ["Bright White", "Granite", "Black", "Ramble Red", "White"][color]
                                .into(),
                        );
                        r.vin = Some(format!("1C6RR{:012}", n * 7 % 1500));
                        r.stock_number = Some(format!("R{}", 1490 + n));
                        r.year = 2014 + i32::try_from(n % 7).unwrap_or(0);
                        r
                    })
            })
            .collect::<Vec<_>>()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A text query (answered as runs of the facet order when it has no
    /// filter, else by its rows' bitmap; in every order) answers every page
    /// exactly as a visit of every row does: vehicles, total, facets,
    /// cursor keys and freshness.
    #[test]
    fn text_queries_answer_exactly_as_a_full_scan(
        mut fleet in arb_text_fleet(),
        future in any::<bool>(),
        limit in 1usize..25,
        text in 0usize..16,
        sort in 0usize..SORTS.len() * 2,
        filtered in 0usize..4,
        overlaid in any::<bool>(),
    ) {
        if future {
            // No age order while a basis lies in the future: the matches
            // are visited.
            for r in fleet.iter_mut().step_by(7) {
                r.stocked_at = Some(now() + Duration::days(2));
            }
        }
        let indexes = build_fleet(&fleet);
        // Half the cases in the default order, the others in every sort.
        let mut args = sort_args(SORTS.get(sort).copied().flatten(), limit);
        args["query"] = json!([
            "Ram 1500", "ram", "1500", "RAM laramie", "lar", "ra", "white", "whi ram",
            "150", "r149", "1c6rr", "granite 1500", "15", "soul", "xyz", "ram 1500 big",
        ][text]);
        if filtered == 0 {
            args["filters"] = json!({"make": ["ram"]});
        }
        let mut overlay = search::AvailabilityOverlay::new();
        if overlaid {
            for (i, r) in fleet.iter().enumerate().filter(|(i, _)| i % 4 == 0) {
                let at = if i % 8 == 0 { now() } else { now() - Duration::days(1) };
                overlay.entry(r.rooftop_id.clone()).or_default().push((
                    r.vehicle_id.clone(),
                    "sold".to_owned(),
                    at,
                ));
            }
        }
        let q = query(args);
        let mut after: Option<PageKey> = None;
        for _ in 0..=fleet.len() {
            let fast = search::search_with_overlay(&indexes, &q, after.as_ref(), now(), &overlay);
            let slow = search::search_by_scan(&indexes, &q, after.as_ref(), now(), &overlay);
            let fast = summary(fast);
            prop_assert_eq!(&fast, &summary(slow));
            match fast.3 {
                Some(k) => after = Some(k),
                None => break,
            }
        }
    }
}

/// Rows whose VINs and stock numbers hold digit tokens (`1500`, `150`,
/// `500`) at any place, with makes and models that share them: the digit
/// token's single positions are cut to the make's run before they are
/// sorted, and its trigram lists hold deltas of more than one byte
/// (docs/benchmarks.md "Text search at a million: the digit token").
fn arb_digit_fleet() -> impl Strategy<Value = Vec<VehicleRecord>> {
    (0usize..120).prop_flat_map(|len| {
        (0..len)
            .map(|n| {
                (
                    arb_record(n),
                    (0usize..6, 0usize..5, 0usize..3),
                    ("[0-9]{11}", 0usize..24, 0usize..9),
                    ("[0-9]{2,4}", 0usize..6),
                )
                    .prop_map(
                        move |(mut r, (make, model, trim), (vin, embed, at), (stock, tail))| {
                            r.make = ["Ram", "Ram", "RAM", "Chevrolet", "Kia", "ram"][make].into();
                            r.model = ["1500", "1500", "Silverado 1500", "Soul", "ProMaster 2500"]
                                [model]
                                .into();
                            r.trim = Some(["Laramie", "Big Horn", "LT"][trim].into());
                            // One VIN in eight holds `1500` (or `150`,
                            // `500`) somewhere, the rest random digits.
                            let mut digits = vin;
                            if let Some(piece) = ["1500", "150", "500"].get(embed) {
                                digits.insert_str(at.min(digits.len()), piece);
                            }
                            r.vin = Some(format!("1C6SR{digits}"));
                            r.stock_number = Some(format!(
                                "S{stock}{}",
                                ["", "1500", "15", "00", "5001", "1"][tail]
                            ));
                            r
                        },
                    )
            })
            .collect::<Vec<_>>()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A digit token inside VINs and stock numbers, beside make, model and
    /// trim tokens in either order, answers every page exactly as a visit
    /// of every row does.
    #[test]
    fn digit_tokens_beside_make_and_model_answer_exactly_as_a_full_scan(
        fleet in arb_digit_fleet(),
        limit in 1usize..25,
        text in 0usize..16,
        sort in 0usize..SORTS.len() * 2,
    ) {
        let indexes = build_fleet(&fleet);
        let mut args = sort_args(SORTS.get(sort).copied().flatten(), limit);
        args["query"] = json!([
            "Ram 1500", "1500 ram", "ram 150", "500 ram", "laramie 1500", "1500 laramie",
            "silverado 1500", "chevrolet 150", "1500 1500", "ram 15001", "kia 500",
            "s15 ram", "ram 1500 laramie", "0015 ram", "1c6sr1500 ram", "lt 00",
        ][text]);
        let q = query(args);
        let overlay = search::AvailabilityOverlay::new();
        let mut after: Option<PageKey> = None;
        for _ in 0..=fleet.len() {
            let fast = search::search_with_overlay(&indexes, &q, after.as_ref(), now(), &overlay);
            let slow = search::search_by_scan(&indexes, &q, after.as_ref(), now(), &overlay);
            let fast = summary(fast);
            prop_assert_eq!(&fast, &summary(slow));
            match fast.3 {
                Some(k) => after = Some(k),
                None => break,
            }
        }
    }
}
