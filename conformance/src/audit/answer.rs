//! What the scripted agent says: an [`Answer`] is a sentence for the
//! shopper plus the claims it makes, each with the source and as-of time it
//! cites, the risk flags it raises, and a ledger of every tool result it
//! read (the evidence the grader checks it against, and its token cost).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::wire::{Money, Odometer};

/// One tool result the agent read.
#[derive(Debug, Clone, Serialize)]
pub struct Read {
    pub tool: String,
    #[serde(skip)]
    pub arguments: Value,
    /// Bytes of the JSON-RPC response body: what a harness hands a model.
    pub bytes: usize,
    #[serde(skip)]
    pub received_at: DateTime<Utc>,
    /// `structuredContent` of a successful result.
    #[serde(skip)]
    pub ok: Option<Value>,
    /// The result's `_meta` (a gateway's own labels travel there).
    #[serde(skip)]
    pub meta: Option<Value>,
    /// The DAP error code of a tool error, or the JSON-RPC error.
    pub error: Option<String>,
}

/// What a claim cites: the tool result (by its index in the answer's
/// ledger) and the source and as-of time from its provenance and freshness.
#[derive(Debug, Clone, Serialize)]
pub struct Citation {
    /// Index of the cited read in [`Answer::reads`].
    pub read: usize,
    pub tool: String,
    pub source_name: String,
    pub authority: String,
    /// When the source observed what it says (the claim's as-of time).
    pub observed_at: String,
    /// The cited record's freshness: state and end of validity.
    pub freshness_state: String,
    pub valid_until: Option<String>,
    /// The JSON pointer of the record inside the read (`""` for the whole
    /// result, `/vehicles/3` for one search hit).
    pub pointer: String,
}

/// A vehicle as the agent names it to the shopper.
#[derive(Debug, Clone, Serialize)]
pub struct VehicleFact {
    pub vehicle_id: String,
    pub rooftop_id: String,
    pub year: i64,
    pub make: String,
    pub model: String,
    pub condition: String,
    pub vin: Option<String>,
    pub odometer: Option<Odometer>,
    pub advertised_price: Money,
    /// The status the dealer's listing states, and its authority.
    pub listed_status: String,
    pub listed_authority: String,
}

/// One eligibility condition of an offer, as the agent states it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Condition {
    pub criterion: String,
    pub evidence_status: String,
}

/// One statement the agent makes.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fact {
    /// The dealer lists this vehicle.
    Listed { vehicle: VehicleFact },
    /// The dealer lists no vehicle matching `what`.
    NotListed { what: String },
    /// The vehicle's advertised price, and whether it includes the required
    /// dealer charges.
    AdvertisedPrice {
        vehicle_id: String,
        amount: Money,
        includes_required_dealer_charges: bool,
    },
    /// A required dealer charge.
    RequiredCharge {
        vehicle_id: String,
        charge_id: String,
        name: String,
        amount: Money,
        included_in_advertised_price: bool,
    },
    /// The documentation fee: `None` when the disclosure lists none.
    DocumentationFee {
        vehicle_id: String,
        charge_id: Option<String>,
        included_in_advertised_price: Option<bool>,
    },
    /// The advertised price plus every required charge it excludes,
    /// before government charges.
    PriceWithRequiredCharges { vehicle_id: String, amount: Money },
    /// An out-the-door figure, or why there is none.
    OutTheDoor {
        vehicle_id: String,
        amount: Option<Money>,
        estimate: bool,
        missing: Vec<String>,
    },
    /// Government charges as classified, with a total only when known.
    GovernmentCharges {
        vehicle_id: String,
        status: String,
        total: Option<Money>,
    },
    /// A conditional offer with its conditions and stacking.
    ConditionalOffer {
        vehicle_id: String,
        adjustment_id: String,
        name: String,
        direction: String,
        amount: Option<Money>,
        conditions: Vec<Condition>,
        combinability: String,
        group: String,
        combinable_with: Vec<String>,
    },
    /// The best combination the gateway's offers evaluation found
    /// (extension `dealergateway.offers/0.1`).
    BestStack {
        vehicle_id: String,
        program_ids: Vec<String>,
        total_discount: Money,
        /// Surcharges the stack includes, when the evaluation states them.
        surcharges: Option<Money>,
        net_price: Money,
        subject_to_evidence: Vec<String>,
    },
    /// The price every buyer gets.
    GenerallyAvailablePrice { vehicle_id: String, amount: Money },
    /// The strong claim: the unit may be presented as available now.
    AvailableNow {
        vehicle_id: String,
        observed_at: String,
    },
    /// An availability status as the agent reports it, with whether an
    /// authoritative check stands behind it.
    AvailabilityStatus {
        vehicle_id: String,
        status: String,
        authority_status: String,
        observed_at: String,
        verified: bool,
    },
    /// When availability was last observed, by which source, and whether
    /// that observation was an authoritative check.
    LastVerified {
        vehicle_id: String,
        observed_at: String,
        source_name: String,
        authoritative: bool,
    },
    /// The source that supports a price.
    PriceSource {
        vehicle_id: String,
        amount: Money,
        source_name: String,
        authority: String,
        observed_at: String,
    },
    /// What the history reports of a used vehicle say.
    History {
        vehicle_id: String,
        reports: Vec<String>,
        discrepancies: Vec<String>,
        odometer: Odometer,
    },
    /// The rooftop that sells a vehicle, and how to reach its sales desk.
    Rooftop {
        vehicle_id: String,
        rooftop_id: String,
        name: String,
        sales_contacts: Vec<String>,
    },
}

/// A fact and what it cites.
#[derive(Debug, Clone, Serialize)]
pub struct Claim {
    #[serde(flatten)]
    pub fact: Fact,
    pub citation: Option<Citation>,
}

/// Something a careful agent tells the shopper to watch, for human review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskFlag {
    /// Availability is not verified by a recent authoritative check.
    AvailabilityUnverified,
    /// A cited record is stale, withdrawn or past its validity.
    StaleRecord,
    /// Government charges are unknown: no total can be given.
    GovernmentChargesUnknown,
    /// An offer needs eligibility the buyer must prove or claim.
    EligibilityRequired,
    /// An amount is unknown and was not counted.
    UnknownAmount,
    /// Sources disagree (e.g. history reports).
    ConflictingEvidence,
    /// The gateway's answer contradicts itself or another of its tools.
    InconsistentRecord,
}

/// How the question came out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "reason")]
pub enum Outcome {
    /// The agent answered.
    Answered,
    /// The agent answered that the figure cannot be computed.
    NotComputable,
    /// The agent could not answer from the gateway's tools (the reason says
    /// why); graded like a wrong answer.
    Unanswerable(String),
    /// The question does not apply to this gateway or inventory (no
    /// subject, or an optional DAP profile it does not offer); not graded.
    NotApplicable(String),
}

/// The agent's whole answer to one question.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub outcome: Outcome,
    /// What the agent would tell the shopper.
    pub text: String,
    pub claims: Vec<Claim>,
    pub risk_flags: BTreeSet<RiskFlag>,
    /// What was skipped and why (e.g. an absent extension tool).
    pub notes: Vec<String>,
    pub reads: Vec<Read>,
}

impl Answer {
    pub fn new(reads: Vec<Read>) -> Self {
        Self {
            outcome: Outcome::Answered,
            text: String::new(),
            claims: Vec::new(),
            risk_flags: BTreeSet::new(),
            notes: Vec::new(),
            reads,
        }
    }

    /// Bytes of every tool result read.
    pub fn bytes_read(&self) -> usize {
        self.reads.iter().map(|r| r.bytes).sum()
    }

    /// Whether the answer raises `flag`.
    pub fn flagged(&self, flag: RiskFlag) -> bool {
        self.risk_flags.contains(&flag)
    }
}

/// The token estimate of a number of bytes: bytes / 4, rounded up (a
/// common rule of thumb for JSON and English text; documented in
/// docs/conformance.md "Shopper's audit").
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}
