//! The demo's data tables: models, makes, lenders, colours, features,
//! exchange rates and fees, the bundled demo's rooftops, cities, streets and
//! group names. No logic lives here (data apart from code);
//! the generator in the sibling modules draws from these tables, so changing
//! one changes every generated bundle.
//!
//! Every name of a dealer, street or group is fictional; the makers' real
//! WMIs (VIN positions 1-3) only make the made-up VINs well formed.

pub(super) struct Model {
    pub(super) make: &'static str,
    pub(super) model: &'static str,
    pub(super) vehicle_type: &'static str,
    pub(super) body_style: &'static str,
    /// MSRP of the first trim for the current model year, whole US dollars.
    pub(super) msrp: i64,
    pub(super) first_year: i32,
    /// Last model year built; 9999 while in production.
    pub(super) last_year: i32,
    pub(super) electric: bool,
    pub(super) trims: &'static [&'static str],
    /// World manufacturer identifier (VIN positions 1–3).
    pub(super) wmi: &'static str,
}

macro_rules! model {
    ($make:literal, $model:literal, $vt:literal, $body:literal, $msrp:literal,
     $first:literal ..= $last:literal, $ev:literal, [$($trim:literal),+], $wmi:literal) => {
        Model {
            make: $make,
            model: $model,
            vehicle_type: $vt,
            body_style: $body,
            msrp: $msrp,
            first_year: $first,
            last_year: $last,
            electric: $ev,
            trims: &[$($trim),+],
            wmi: $wmi,
        }
    };
}

#[rustfmt::skip]
pub(super) static MODELS: &[Model] = &[
    model!("Honda", "Civic", "car", "Sedan", 24_950, 2015..=9999, false, ["LX", "Sport", "EX", "Sport Touring"], "2HG"),
    model!("Honda", "Accord", "car", "Sedan", 28_895, 2015..=9999, false, ["LX", "SE", "Sport Hybrid", "Touring Hybrid"], "1HG"),
    model!("Honda", "CR-V", "suv", "SUV", 30_850, 2015..=9999, false, ["LX", "EX", "EX-L", "Sport Touring Hybrid"], "5J6"),
    model!("Honda", "HR-V", "suv", "SUV", 25_400, 2016..=9999, false, ["LX", "Sport", "EX-L"], "3CZ"),
    model!("Honda", "Pilot", "suv", "SUV", 40_200, 2015..=9999, false, ["Sport", "EX-L", "TrailSport", "Elite"], "5FN"),
    model!("Honda", "Odyssey", "van", "Minivan", 38_000, 2015..=9999, false, ["EX-L", "Touring", "Elite"], "5FN"),
    model!("Toyota", "Corolla", "car", "Sedan", 22_050, 2015..=9999, false, ["LE", "SE", "XSE"], "2T1"),
    model!("Toyota", "Camry", "car", "Sedan", 28_400, 2015..=9999, false, ["LE", "SE", "XLE", "XSE"], "4T1"),
    model!("Toyota", "RAV4", "suv", "SUV", 29_800, 2015..=9999, false, ["LE", "XLE", "XLE Premium", "Limited"], "2T3"),
    model!("Toyota", "Highlander", "suv", "SUV", 39_520, 2015..=9999, false, ["LE", "XLE", "Limited", "Platinum"], "5TD"),
    model!("Toyota", "Tacoma", "truck", "Double Cab Pickup", 31_500, 2015..=9999, false, ["SR", "SR5", "TRD Sport", "TRD Off-Road", "Limited"], "3TM"),
    model!("Toyota", "Tundra", "truck", "CrewMax Pickup", 40_000, 2015..=9999, false, ["SR5", "Limited", "Platinum", "1794 Edition"], "5TF"),
    model!("Ford", "F-150", "truck", "SuperCrew Pickup", 38_810, 2015..=9999, false, ["XL", "XLT", "Lariat", "King Ranch", "Platinum"], "1FT"),
    model!("Ford", "Escape", "suv", "SUV", 29_495, 2015..=9999, false, ["Active", "ST-Line", "Platinum"], "1FM"),
    model!("Ford", "Explorer", "suv", "SUV", 39_865, 2015..=9999, false, ["XLT", "ST-Line", "Platinum"], "1FM"),
    model!("Ford", "Bronco", "suv", "SUV", 39_995, 2021..=9999, false, ["Big Bend", "Outer Banks", "Badlands", "Wildtrak"], "1FM"),
    model!("Ford", "Maverick", "truck", "SuperCrew Pickup", 23_920, 2022..=9999, false, ["XL", "XLT", "Lariat"], "3FT"),
    model!("Ford", "Mustang Mach-E", "suv", "SUV", 39_995, 2021..=9999, true, ["Select", "Premium", "GT"], "3FM"),
    model!("Chevrolet", "Malibu", "car", "Sedan", 25_100, 2015..=2025, false, ["LS", "RS", "LT"], "1G1"),
    model!("Chevrolet", "Equinox", "suv", "SUV", 28_600, 2015..=9999, false, ["LS", "LT", "RS", "Premier"], "3GN"),
    model!("Chevrolet", "Tahoe", "suv", "SUV", 58_195, 2015..=9999, false, ["LS", "LT", "Z71", "Premier", "High Country"], "1GN"),
    model!("Chevrolet", "Silverado 1500", "truck", "Crew Cab Pickup", 37_645, 2015..=9999, false, ["WT", "Custom", "LT", "RST", "LTZ", "High Country"], "1GC"),
    model!("Chevrolet", "Bolt EUV", "suv", "SUV", 27_495, 2022..=2023, true, ["LT", "Premier"], "1G1"),
    model!("Hyundai", "Elantra", "car", "Sedan", 22_125, 2015..=9999, false, ["SE", "SEL", "N Line", "Limited"], "5NP"),
    model!("Hyundai", "Tucson", "suv", "SUV", 28_705, 2015..=9999, false, ["SE", "SEL", "XRT", "Limited"], "5NM"),
    model!("Hyundai", "Santa Fe", "suv", "SUV", 33_950, 2015..=9999, false, ["SE", "SEL", "XRT", "Calligraphy"], "5NM"),
    model!("Hyundai", "Palisade", "suv", "SUV", 37_200, 2020..=9999, false, ["SE", "SEL", "Limited", "Calligraphy"], "KM8"),
    model!("Hyundai", "Ioniq 5", "suv", "SUV", 42_600, 2022..=9999, true, ["SE", "SEL", "Limited"], "KM8"),
    model!("Kia", "Forte", "car", "Sedan", 20_815, 2015..=2024, false, ["LX", "LXS", "GT-Line"], "3KP"),
    model!("Kia", "K5", "car", "Sedan", 27_190, 2021..=9999, false, ["LXS", "GT-Line", "EX"], "5XX"),
    model!("Kia", "Sportage", "suv", "SUV", 27_990, 2015..=9999, false, ["LX", "EX", "X-Line", "SX"], "KND"),
    model!("Kia", "Sorento", "suv", "SUV", 31_990, 2015..=9999, false, ["LX", "S", "EX", "SX"], "5XY"),
    model!("Kia", "Telluride", "suv", "SUV", 36_990, 2020..=9999, false, ["LX", "S", "EX", "SX"], "5XY"),
    model!("Kia", "EV6", "suv", "SUV", 42_900, 2022..=9999, true, ["Light", "Wind", "GT-Line"], "KND"),
    model!("Subaru", "Crosstrek", "suv", "SUV", 25_195, 2015..=9999, false, ["Base", "Premium", "Sport", "Limited"], "JF2"),
    model!("Subaru", "Forester", "suv", "SUV", 27_895, 2015..=9999, false, ["Base", "Premium", "Sport", "Limited", "Touring"], "JF2"),
    model!("Subaru", "Outback", "suv", "Wagon", 29_060, 2015..=9999, false, ["Base", "Premium", "Limited", "Touring", "Wilderness"], "4S4"),
    model!("Subaru", "Ascent", "suv", "SUV", 35_795, 2019..=9999, false, ["Premium", "Limited", "Touring"], "4S4"),
    model!("Subaru", "WRX", "car", "Sedan", 33_855, 2015..=9999, false, ["Base", "Premium", "Limited", "GT"], "JF1"),
    model!("BMW", "3 Series", "car", "Sedan", 45_500, 2015..=9999, false, ["330i", "330i xDrive", "M340i xDrive"], "WBA"),
    model!("BMW", "X3", "suv", "SUV", 49_500, 2015..=9999, false, ["sDrive30i", "xDrive30i", "M40i"], "5UX"),
    model!("BMW", "X5", "suv", "SUV", 66_200, 2015..=9999, false, ["xDrive40i", "xDrive50e", "M60i"], "5UX"),
    model!("BMW", "i4", "car", "Gran Coupe", 52_200, 2022..=9999, true, ["eDrive35", "eDrive40", "M50"], "WBY"),
    model!("Tesla", "Model 3", "car", "Sedan", 40_240, 2017..=9999, true, ["Rear-Wheel Drive", "Long Range", "Performance"], "5YJ"),
    model!("Tesla", "Model Y", "suv", "SUV", 44_990, 2020..=9999, true, ["Rear-Wheel Drive", "Long Range", "Performance"], "7SA"),
    model!("Ram", "1500", "truck", "Crew Cab Pickup", 40_275, 2015..=9999, false, ["Tradesman", "Big Horn", "Laramie", "Rebel", "Limited"], "1C6"),
    model!("Ram", "ProMaster 2500", "van", "Cargo Van", 47_000, 2015..=9999, false, ["Base", "High Roof"], "3C6"),
    model!("Mazda", "CX-5", "suv", "SUV", 29_300, 2015..=9999, false, ["S", "Select", "Preferred", "Turbo Signature"], "JM3"),
    model!("Mazda", "Mazda3", "car", "Hatchback", 24_170, 2015..=9999, false, ["2.5 S", "Select", "Preferred", "Turbo"], "JM1"),
    model!("Nissan", "Rogue", "suv", "SUV", 29_230, 2015..=9999, false, ["S", "SV", "SL", "Platinum"], "5N1"),
];

/// Makes a generated rooftop can hold the new-car franchise for.
pub(super) const FRANCHISE_MAKES: &[&str] = &[
    "Honda",
    "Toyota",
    "Ford",
    "Chevrolet",
    "Hyundai",
    "Kia",
    "Subaru",
    "BMW",
    "Ram",
    "Mazda",
    "Nissan",
];

/// The captive lender of each franchise make (the finance-bonus offers
/// name it).
pub(super) const CAPTIVE_LENDERS: &[(&str, &str)] = &[
    ("Honda", "Honda Financial Services"),
    ("Toyota", "Toyota Financial Services"),
    ("Ford", "Ford Credit"),
    ("Chevrolet", "GM Financial"),
    ("Hyundai", "Hyundai Motor Finance"),
    ("Kia", "Kia Finance"),
    ("Subaru", "Subaru Motors Finance"),
    ("BMW", "BMW Financial Services"),
    ("Ram", "Stellantis Financial Services"),
    ("Mazda", "Mazda Financial Services"),
    ("Nissan", "Nissan Motor Acceptance Company"),
];

/// The lender named for a make without a row in [`CAPTIVE_LENDERS`].
pub(super) const OTHER_CAPTIVE_LENDER: &str = "the manufacturer's captive lender";

/// Local currency units per 1000 US dollars (prices, fees and offer amounts
/// are set in dollars and converted); a currency without a row is treated
/// as 1:1.
pub(super) const USD_RATES_PER_MILLE: &[(&str, i64)] = &[
    ("USD", 1000),
    ("CAD", 1380),
    ("EUR", 930),
    ("GBP", 790),
    ("CHF", 880),
    ("AUD", 1530),
    ("NZD", 1680),
    ("MXN", 18_000),
    ("JPY", 152_000),
];

/// Documentation fees (US), in whole dollars.
pub(super) const US_DOC_FEES: &[i64] = &[149, 199, 299, 349, 399, 499, 599, 699];
/// Administration fees (Canada), in whole dollars.
pub(super) const CA_DOC_FEES: &[i64] = &[399, 499, 599, 699, 799, 899];
/// Documentation fees elsewhere, in US dollars before conversion.
pub(super) const OTHER_DOC_FEES_USD: &[i64] = &[199, 299, 399];

pub(super) const EXTERIOR_COLORS: &[&str] = &[
    "Black",
    "White",
    "Silver",
    "Gray",
    "Blue",
    "Red",
    "Pearl White",
    "Midnight Black Metallic",
    "Lunar Silver Metallic",
    "Magnetic Gray Metallic",
    "Deep Blue Pearl",
    "Ruby Red Metallic",
    "Cement Gray",
    "Forest Green",
    "Oxford White",
    "Agate Black",
    "Sonic Gray Pearl",
    "Bronze Metallic",
];

pub(super) const INTERIOR_COLORS: &[&str] = &[
    "Black Cloth",
    "Gray Cloth",
    "Beige Cloth",
    "Black Leatherette",
    "Black Leather",
    "Gray Leather",
    "Ivory Leather",
    "Saddle Brown Leather",
];

pub(super) const FEATURES_COMMON: &[&str] = &[
    "Backup camera",
    "Bluetooth",
    "Apple CarPlay",
    "Android Auto",
    "Keyless entry",
    "Push-button start",
    "Automatic emergency braking",
    "Lane keeping assist",
    "Blind-spot monitoring",
    "Adaptive cruise control",
    "Heated front seats",
    "Remote start",
    "Dual-zone climate control",
    "Wireless phone charging",
    "Power moonroof",
    "Leather-trimmed seats",
    "Navigation system",
    "Premium audio",
    "LED headlights",
    "Rear cross-traffic alert",
    "Heated steering wheel",
    "Ventilated front seats",
    "Head-up display",
    "360-degree camera",
];
pub(super) const FEATURES_SUV: &[&str] = &[
    "Power liftgate",
    "Roof rails",
    "All-wheel drive",
    "Third-row seating",
];
pub(super) const FEATURES_TRUCK: &[&str] = &[
    "Tow package",
    "Trailer brake controller",
    "Spray-in bed liner",
    "4x4",
];
pub(super) const FEATURES_VAN: &[&str] = &[
    "Power sliding doors",
    "Rear-seat entertainment",
    "Tow package",
];
pub(super) const FEATURES_EV: &[&str] = &[
    "DC fast charging",
    "Heat pump",
    "Level 2 charging cable",
    "One-pedal driving",
];

/// The bundled demo rooftops, matched by id so the demo's Honda store sells
/// new Hondas at its own web address.
pub(super) struct KnownRooftop {
    pub(super) rooftop_id: &'static str,
    pub(super) make: &'static str,
    pub(super) host: &'static str,
    pub(super) subdivision: &'static str,
    /// Its rows list no charges of their own (the dealers file's apply).
    pub(super) charges_in_settings: bool,
}

pub(super) const KNOWN_DEMO_ROOFTOPS: &[KnownRooftop] = &[
    KnownRooftop {
        rooftop_id: "roof.lakeshore-chicago",
        make: "Honda",
        host: "chicago.lakeshoreauto.example",
        subdivision: "US-IL",
        charges_in_settings: false,
    },
    KnownRooftop {
        rooftop_id: "roof.lakeshore-grand-rapids",
        make: "Ford",
        host: "grandrapids.lakeshoreauto.example",
        subdivision: "US-MI",
        charges_in_settings: false,
    },
    KnownRooftop {
        rooftop_id: "roof.lakeshore-lakewood",
        make: "Subaru",
        host: "lakewood.lakeshoreauto.example",
        subdivision: "US-CO",
        charges_in_settings: false,
    },
    KnownRooftop {
        rooftop_id: "roof.lakeshore-fleet-wholesale",
        make: "Chevrolet",
        host: "fleet.lakeshoreauto.example",
        subdivision: "US-IL",
        charges_in_settings: false,
    },
    KnownRooftop {
        rooftop_id: "roof.maplecrest-toronto",
        make: "Toyota",
        host: "toronto.maplecrestmotors.example",
        subdivision: "CA-ON",
        charges_in_settings: false,
    },
    KnownRooftop {
        rooftop_id: "roof.maplecrest-burnaby",
        make: "Hyundai",
        host: "burnaby.maplecrestmotors.example",
        subdivision: "CA-BC",
        charges_in_settings: false,
    },
    // Added with the disclosure lint (docs/lint.md "The demo"): one rooftop
    // per country the catalogue covers, each with a failure its manager can
    // fix in the dealers file. Listed after the first six so their
    // inventory is drawn after theirs and leaves it as it was.
    KnownRooftop {
        rooftop_id: "roof.lakeshore-sacramento",
        make: "Toyota",
        host: "sacramento.lakeshoreauto.example",
        subdivision: "US-CA",
        charges_in_settings: true,
    },
    KnownRooftop {
        rooftop_id: "roof.maplecrest-montreal",
        make: "Honda",
        host: "montreal.maplecrestmotors.example",
        subdivision: "CA-QC",
        charges_in_settings: true,
    },
    KnownRooftop {
        rooftop_id: "roof.northsea-hamburg",
        make: "BMW",
        host: "hamburg.northseamotors.example",
        subdivision: "DE-HH",
        charges_in_settings: true,
    },
    KnownRooftop {
        rooftop_id: "roof.northsea-manchester",
        make: "Ford",
        host: "manchester.northseamotors.example",
        subdivision: "GB-MAN",
        charges_in_settings: true,
    },
];

pub(super) struct City {
    pub(super) locality: &'static str,
    pub(super) region: &'static str,
    pub(super) postal_code: &'static str,
    pub(super) timezone: &'static str,
    pub(super) area_code: &'static str,
}

macro_rules! city {
    ($l:literal, $r:literal, $p:literal, $tz:literal, $a:literal) => {
        City {
            locality: $l,
            region: $r,
            postal_code: $p,
            timezone: $tz,
            area_code: $a,
        }
    };
}

#[rustfmt::skip]
pub(super) const US_CITIES: &[City] = &[
    city!("Springfield", "IL", "62704", "America/Chicago", "217"),
    city!("Columbus", "OH", "43215", "America/New_York", "614"),
    city!("Austin", "TX", "78745", "America/Chicago", "512"),
    city!("Aurora", "CO", "80012", "America/Denver", "303"),
    city!("Phoenix", "AZ", "85016", "America/Phoenix", "602"),
    city!("Portland", "OR", "97214", "America/Los_Angeles", "503"),
    city!("Nashville", "TN", "37211", "America/Chicago", "615"),
    city!("Raleigh", "NC", "27604", "America/New_York", "919"),
    city!("Madison", "WI", "53713", "America/Chicago", "608"),
    city!("Boise", "ID", "83704", "America/Boise", "208"),
    city!("Sacramento", "CA", "95815", "America/Los_Angeles", "916"),
    city!("Omaha", "NE", "68144", "America/Chicago", "402"),
    city!("Albany", "NY", "12205", "America/New_York", "518"),
    city!("Tampa", "FL", "33612", "America/New_York", "813"),
    city!("Salt Lake City", "UT", "84115", "America/Denver", "801"),
    city!("Indianapolis", "IN", "46240", "America/Indiana/Indianapolis", "317"),
    city!("Anchorage", "AK", "99503", "America/Anchorage", "907"),
    city!("Honolulu", "HI", "96814", "Pacific/Honolulu", "808"),
];

#[rustfmt::skip]
pub(super) const CA_CITIES: &[City] = &[
    city!("Ottawa", "ON", "K2C 3H2", "America/Toronto", "613"),
    city!("Mississauga", "ON", "L5B 2C9", "America/Toronto", "905"),
    city!("Calgary", "AB", "T2H 0K8", "America/Edmonton", "403"),
    city!("Edmonton", "AB", "T6E 5A1", "America/Edmonton", "780"),
    city!("Winnipeg", "MB", "R3T 2E4", "America/Winnipeg", "204"),
    city!("Halifax", "NS", "B3L 4P1", "America/Halifax", "902"),
    city!("Laval", "QC", "H7T 2P4", "America/Toronto", "450"),
    city!("Regina", "SK", "S4P 3Y2", "America/Regina", "306"),
    city!("Victoria", "BC", "V8Z 3B3", "America/Vancouver", "250"),
    city!("St. John's", "NL", "A1B 3N9", "America/St_Johns", "709"),
];

pub(super) const STREETS: &[&str] = &[
    "Auto Mall Pkwy",
    "Commerce Dr",
    "N Main St",
    "W Broadway",
    "Motor Pkwy",
    "Dealer Row",
    "Oak Ridge Blvd",
    "S Lincoln Ave",
    "Highway 7 W",
    "Industrial Rd",
];

pub(super) const GROUPS: &[&str] = &[
    "Northfield",
    "Riverbend",
    "Summit Ridge",
    "Prairie Wind",
    "Harborview",
    "Cedar Valley",
    "Bluewater",
    "Granite Peak",
    "Silver Lake",
    "Oak Hollow",
    "Red Rock",
    "Pine Crest",
    "Great Plains",
    "Tidewater",
    "Ironwood",
    "Golden Mile",
];
