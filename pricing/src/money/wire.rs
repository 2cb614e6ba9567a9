//! Serde for the DAP wire shape (`common.schema.json` `money`):
//! `{"amount_minor": 2499500, "currency": "USD"}`, exact field names, no
//! other fields, `amount_minor` a JSON integer within `i64`.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

use super::{Currency, Money};

impl Serialize for Currency {
    /// Writes the ISO code, e.g. `"USD"`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for Currency {
    /// Reads an ISO code and applies every rule of [`Currency::from_code`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Currency, D::Error> {
        deserializer.deserialize_str(CurrencyVisitor)
    }
}

struct CurrencyVisitor;

impl Visitor<'_> for CurrencyVisitor {
    type Value = Currency;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an ISO 4217 currency code string such as \"USD\"")
    }

    fn visit_str<E: de::Error>(self, code: &str) -> Result<Currency, E> {
        Currency::from_code(code).map_err(E::custom)
    }
}

impl Serialize for Money {
    /// Writes `{"amount_minor": <i64>, "currency": "<code>"}`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Money", 2)?;
        s.serialize_field("amount_minor", &self.amount_minor())?;
        s.serialize_field("currency", &self.currency())?;
        s.end()
    }
}

const FIELDS: &[&str] = &["amount_minor", "currency"];

impl<'de> Deserialize<'de> for Money {
    /// Reads the DAP `money` object. Refused: a missing, duplicate or unknown
    /// field; an `amount_minor` that is a float (even `2499500.0`), a string
    /// or outside `i64`; any currency refused by [`Currency::from_code`].
    ///
    /// ```
    /// use pricing::{Currency, Money};
    ///
    /// let m: Money = serde_json::from_str(r#"{"amount_minor": 2499500, "currency": "USD"}"#)?;
    /// assert_eq!(m, Money::from_minor(2_499_500, Currency::USD));
    /// assert!(serde_json::from_str::<Money>(r#"{"amount_minor": "2499500", "currency": "USD"}"#).is_err());
    /// assert!(serde_json::from_str::<Money>(r#"{"amount_minor": 1, "currency": "HRK"}"#).is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Money, D::Error> {
        deserializer.deserialize_struct("Money", FIELDS, MoneyVisitor)
    }
}

struct MoneyVisitor;

impl<'de> Visitor<'de> for MoneyVisitor {
    type Value = Money;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a DAP money object {\"amount_minor\": <integer>, \"currency\": \"<ISO 4217 code>\"}",
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Money, A::Error> {
        let mut amount_minor: Option<i64> = None;
        let mut currency: Option<Currency> = None;
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::AmountMinor if amount_minor.is_some() => {
                    return Err(de::Error::duplicate_field("amount_minor"));
                }
                Field::AmountMinor => amount_minor = Some(map.next_value::<AmountMinor>()?.0),
                Field::Currency if currency.is_some() => {
                    return Err(de::Error::duplicate_field("currency"));
                }
                Field::Currency => currency = Some(map.next_value()?),
            }
        }
        let amount_minor = amount_minor.ok_or_else(|| de::Error::missing_field("amount_minor"))?;
        let currency = currency.ok_or_else(|| de::Error::missing_field("currency"))?;
        Ok(Money::from_minor(amount_minor, currency))
    }
}

/// The two field names; anything else is `unknown field`.
enum Field {
    AmountMinor,
    Currency,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Field, D::Error> {
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`amount_minor` or `currency`")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        match name {
            "amount_minor" => Ok(Field::AmountMinor),
            "currency" => Ok(Field::Currency),
            _ => Err(E::unknown_field(name, FIELDS)),
        }
    }
}

/// `amount_minor`: only a JSON integer within `i64`. Floats fall through to
/// serde's default `invalid type: floating point` error with the
/// `expecting` text below (this crate names no float type).
struct AmountMinor(i64);

impl<'de> Deserialize<'de> for AmountMinor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<AmountMinor, D::Error> {
        deserializer.deserialize_any(AmountMinorVisitor)
    }
}

struct AmountMinorVisitor;

impl Visitor<'_> for AmountMinorVisitor {
    type Value = AmountMinor;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "amount_minor as a JSON integer count of minor units within the signed 64-bit range (floats such as 2499500.0 and strings are refused)",
        )
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<AmountMinor, E> {
        Ok(AmountMinor(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<AmountMinor, E> {
        i64::try_from(v)
            .map(AmountMinor)
            .map_err(|_| out_of_range(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<AmountMinor, E> {
        i64::try_from(v)
            .map(AmountMinor)
            .map_err(|_| out_of_range(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<AmountMinor, E> {
        i64::try_from(v)
            .map(AmountMinor)
            .map_err(|_| out_of_range(v))
    }
}

fn out_of_range<E: de::Error>(v: impl fmt::Display) -> E {
    E::custom(format_args!(
        "amount_minor {v} is outside the signed 64-bit range (-9223372036854775808..=9223372036854775807)"
    ))
}
