//! Line and column of a JSON pointer in an operator file as written.
//!
//! Problems are found on the parsed JSON data model, which has no
//! positions. To tell an operator where to look, the file is read once more
//! per problem by a serde seed that walks the pointer; on reaching the
//! target it fails on purpose, and the parser stamps that failure with the
//! position of the node it is on (yaml_serde: the node's start mark;
//! serde_json: its reader position). Only public parser APIs are used, so
//! this keeps working across parser versions; a pointer that cannot be
//! walked simply has no position. Columns count characters, as editors do.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// What to locate: the value at a pointer, or the member name (key) that
/// the pointer's last segment names (an unexpected key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Value,
    Key,
}

/// The failure the seed raises on reaching its target; anything else the
/// parser reports means "not found".
const FOUND: &str = "dealer-gateway locate: target reached";

/// How an operator file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Yaml,
    Json,
}

impl Syntax {
    /// By file name: `.json` is JSON, anything else YAML (which also reads
    /// JSON).
    pub fn of(file_name: &str) -> Self {
        if file_name.to_ascii_lowercase().ends_with(".json") {
            Self::Json
        } else {
            Self::Yaml
        }
    }
}

/// The position of `pointer` in `text` written in `syntax`.
pub fn find(text: &str, syntax: Syntax, pointer: &str, target: Target) -> Option<Position> {
    match syntax {
        Syntax::Yaml => in_yaml(text, pointer, target),
        Syntax::Json => in_json(text, pointer, target),
    }
}

/// The position of byte `offset` of `text` (clamped to its end).
pub fn at_offset(text: &str, offset: usize) -> Position {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

impl Position {
    /// This position, found in a text that itself starts at `origin` of
    /// the file (a JSON feed record inside its array).
    pub fn within(self, origin: Position) -> Position {
        if self.line == 1 {
            Position {
                line: origin.line,
                column: origin.column + self.column - 1,
            }
        } else {
            Position {
                line: origin.line + self.line - 1,
                column: self.column,
            }
        }
    }
}

/// Split an RFC 6901 pointer into unescaped segments (`""` = the root).
pub fn segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The position of `pointer` in a YAML text.
pub fn in_yaml(text: &str, pointer: &str, target: Target) -> Option<Position> {
    let path = segments(pointer);
    let seed = Locate {
        path: &path,
        target,
    };
    match seed.deserialize(yaml_serde::Deserializer::from_str(text)) {
        Ok(()) => None,
        Err(e) if e.to_string().contains(FOUND) => e.location().map(|l| Position {
            line: l.line(),
            column: l.column(),
        }),
        Err(_) => None,
    }
}

/// The position of `pointer` in a JSON text. YAML's flow syntax is a
/// superset of almost all JSON and its marks point at the start of a
/// node, so it is tried first; serde_json (whose position is where its
/// reader stopped, the end of a scalar or key) answers when it cannot.
pub fn in_json(text: &str, pointer: &str, target: Target) -> Option<Position> {
    if let Some(p) = in_yaml(text, pointer, target) {
        return Some(p);
    }
    let path = segments(pointer);
    let seed = Locate {
        path: &path,
        target,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    match seed.deserialize(&mut de) {
        Ok(()) => None,
        Err(e) if e.to_string().contains(FOUND) => Some(Position {
            line: e.line(),
            column: e.column(),
        }),
        Err(_) => None,
    }
}

/// Walks `path`; raises [`FOUND`] at the target.
#[derive(Clone, Copy)]
struct Locate<'a> {
    path: &'a [String],
    target: Target,
}

impl<'de> DeserializeSeed<'de> for Locate<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Locate<'_> {
    /// A scalar: the target when the path ends here.
    fn leaf<E: de::Error>(self) -> Result<(), E> {
        if self.path.is_empty() {
            Err(E::custom(FOUND))
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Locate<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.leaf()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.leaf()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.leaf()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.leaf()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.leaf()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.leaf()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.path.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        if let Ok(index) = first.parse::<usize>() {
            for _ in 0..index {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(());
                }
            }
            seq.next_element_seed(Locate {
                path: rest,
                target: self.target,
            })?;
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((first, rest)) = self.path.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        let key_is_target = rest.is_empty() && self.target == Target::Key;
        while let Some(matched) = map.next_key_seed(Key {
            name: first,
            is_target: key_is_target,
        })? {
            if matched {
                map.next_value_seed(Locate {
                    path: rest,
                    target: self.target,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// A mapping key: does it equal `name`? Raises [`FOUND`] on the key itself
/// when the key is the target. Non-string keys (YAML allows them) match
/// nothing.
struct Key<'a> {
    name: &'a str,
    is_target: bool,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        let matched = key == self.name;
        if matched && self.is_target {
            Err(E::custom(FOUND))
        } else {
            Ok(matched)
        }
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "organizations:\n  - organization_id: org.a\n    rooftops:\n      - rooftop_id: roof.a\n        timezone: America/Chicagoo\n        contacts:\n          - {department: sales, channel: phone, value: \"+13125550142\"}\n";

    #[test]
    fn yaml_values_and_keys_have_their_start_position() {
        let at = |p: &str, t: Target| in_yaml(YAML, p, t);
        assert_eq!(
            at("/organizations/0/rooftops/0/timezone", Target::Value),
            Some(Position {
                line: 5,
                column: 19
            })
        );
        assert_eq!(
            at("/organizations/0/rooftops/0/timezone", Target::Key),
            Some(Position { line: 5, column: 9 })
        );
        assert_eq!(
            at("/organizations/0/rooftops/0/contacts/0", Target::Value),
            Some(Position {
                line: 7,
                column: 13
            })
        );
        assert_eq!(
            at(
                "/organizations/0/rooftops/0/contacts/0/value",
                Target::Value
            ),
            Some(Position {
                line: 7,
                column: 56
            })
        );
        // Missing members and indexes have no position.
        assert_eq!(at("/organizations/1", Target::Value), None);
        assert_eq!(at("/organizations/0/nope", Target::Key), None);
    }

    #[test]
    fn json_positions_and_escaped_pointers() {
        let json = "{\n  \"organizations\": [\n    {\"a/b\": 1,\n     \"name\": \"x\"}\n  ]\n}\n";
        assert_eq!(
            in_json(json, "/organizations/0/a~1b", Target::Key),
            Some(Position { line: 3, column: 6 })
        );
        assert_eq!(
            in_json(json, "/organizations/0/name", Target::Value),
            Some(Position {
                line: 4,
                column: 14
            })
        );
        // A tab-indented JSON file: whatever parser answers, the line is right.
        let tabs = "{\n\t\"organizations\": [\n\t\t{\"name\": \"x\"}\n\t]\n}\n";
        assert_eq!(
            in_json(tabs, "/organizations/0/name", Target::Value).map(|p| p.line),
            Some(3)
        );
    }
}
