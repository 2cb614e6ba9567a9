//! Organization-sharded replicas (docs/operations.md "Shards"): when one
//! process cannot hold every organization's inventory, each replica is told
//! which shard it is, and every replica derives the same organization ->
//! shard assignment from the same settings:
//!
//! - `--shards a,b` names the shards;
//! - `--shard-pins org.x=b` pins an organization to a shard explicitly;
//! - every other organization goes to the shard with the highest
//!   rendezvous score (SHA-256 of shard name and organization id), so adding
//!   or removing a shard moves only the organizations it gains or loses.
//!
//! `--shard a` makes a replica serve only shard `a`'s organizations: it
//! loads only their inventory, and a tool call or AAP endpoint of another
//! organization is refused with a precise, retryable error before anything
//! of that organization is looked up (never a foreign answer). Without
//! `--shard` a replica serves every organization, exactly as before.
//! `dealer-gateway shards` prints the assignment and an nginx `map`.

use std::collections::BTreeMap;

use clap::Args;
use sha2::{Digest, Sha256};

/// The sharding settings of `serve` (and of `dealer-gateway shards`, which
/// prints the assignment they make).
#[derive(Debug, Clone, Default, Args)]
pub struct ShardSettings {
    /// Serve only this shard's organizations (one of --shards). Without it
    /// the replica serves every organization. Its inventory is loaded for
    /// those organizations only; a call for another organization is
    /// refused (retryable) so the load balancer's routing can be fixed.
    #[arg(long, env = "DEALER_GATEWAY_SHARD", value_name = "NAME")]
    pub shard: Option<String>,

    /// The named shards, comma separated (e.g. `east,west`). Every replica
    /// and `dealer-gateway shards` must be given the same list and pins.
    #[arg(
        long,
        env = "DEALER_GATEWAY_SHARDS",
        value_delimiter = ',',
        value_name = "NAMES"
    )]
    pub shards: Vec<String>,

    /// Explicit assignments, comma separated `ORGANIZATION_ID=SHARD`; the
    /// other organizations are spread by a rendezvous hash of their id.
    #[arg(
        long,
        env = "DEALER_GATEWAY_SHARD_PINS",
        value_delimiter = ',',
        value_name = "ORGANIZATION_ID=SHARD"
    )]
    pub shard_pins: Vec<String>,
}

/// The organization -> shard assignment every replica computes alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardMap {
    shards: Vec<String>,
    pins: BTreeMap<String, String>,
}

/// What one replica serves: `None` in [`ShardSettings::filter`] means
/// every organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardFilter {
    pub shard: String,
    pub map: ShardMap,
}

impl ShardSettings {
    /// The assignment these settings make (`None` without `--shards`).
    ///
    /// # Errors
    /// A shard name that is not a token, a repeated shard, or a pin that is
    /// not `ORGANIZATION_ID=SHARD` with a named shard.
    pub fn map(&self) -> Result<Option<ShardMap>, String> {
        if self.shards.is_empty() {
            return if self.shard_pins.is_empty() {
                Ok(None)
            } else {
                Err("--shard-pins needs --shards (the shard names)".into())
            };
        }
        let mut shards: Vec<String> = Vec::with_capacity(self.shards.len());
        for name in &self.shards {
            let name = name.trim();
            if !is_shard_name(name) {
                return Err(format!(
                    "--shards: `{name}` is not a shard name (letters, digits, `-`, `_`, `.`)"
                ));
            }
            if shards.iter().any(|s| s == name) {
                return Err(format!("--shards: `{name}` is named twice"));
            }
            shards.push(name.to_owned());
        }
        let mut pins = BTreeMap::new();
        for pin in &self.shard_pins {
            let Some((org, shard)) = pin.split_once('=') else {
                return Err(format!(
                    "--shard-pins: `{pin}` is not ORGANIZATION_ID=SHARD"
                ));
            };
            let (org, shard) = (org.trim(), shard.trim());
            if org.is_empty() || !shards.iter().any(|s| s == shard) {
                return Err(format!(
                    "--shard-pins: `{pin}` must name an organization and one of --shards"
                ));
            }
            if pins.insert(org.to_owned(), shard.to_owned()).is_some() {
                return Err(format!("--shard-pins: `{org}` is pinned twice"));
            }
        }
        Ok(Some(ShardMap { shards, pins }))
    }

    /// What this replica serves (`None`: every organization).
    ///
    /// # Errors
    /// See [`ShardSettings::map`]; also `--shard` without `--shards`, or
    /// naming a shard not in them.
    pub fn filter(&self) -> Result<Option<ShardFilter>, String> {
        let map = self.map()?;
        match (&self.shard, map) {
            (None, _) => Ok(None),
            (Some(shard), None) => Err(format!(
                "--shard {shard} needs --shards (the names of every shard)"
            )),
            (Some(shard), Some(map)) => {
                let shard = shard.trim();
                if map.shards.iter().any(|s| s == shard) {
                    Ok(Some(ShardFilter {
                        shard: shard.to_owned(),
                        map,
                    }))
                } else {
                    Err(format!(
                        "--shard {shard} is not one of --shards ({})",
                        map.shards.join(", ")
                    ))
                }
            }
        }
    }
}

/// Letters, digits, `-`, `_`, `.`: safe in a log line, a shell and an
/// nginx upstream name.
fn is_shard_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl ShardMap {
    pub fn shards(&self) -> &[String] {
        &self.shards
    }

    /// The shard serving `organization_id`: its pin, else the shard with the
    /// highest rendezvous score (ties, which SHA-256 makes vanishingly
    /// rare, go to the earlier-named shard).
    pub fn shard_of(&self, organization_id: &str) -> &str {
        if let Some(shard) = self.pins.get(organization_id) {
            return shard;
        }
        let mut best: Option<(&str, [u8; 32])> = None;
        for shard in &self.shards {
            let score = score(shard, organization_id);
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((shard, score));
            }
        }
        best.map_or("", |(shard, _)| shard)
    }

    /// Whether `organization_id` is pinned (for the operator's listing).
    pub fn is_pinned(&self, organization_id: &str) -> bool {
        self.pins.contains_key(organization_id)
    }

    /// An nginx `map` from `Mcp-Param-Organization` (and, for the AAP
    /// endpoints, the path's organization) to an upstream named after the
    /// shard (`shard_NAME`), for `organizations`. Unknown organizations go
    /// to the first shard, which answers them itself (a not-found or the
    /// retryable refusal), never a foreign answer.
    pub fn nginx_map(&self, organizations: &[String]) -> String {
        let default = self.shards.first().map_or("", String::as_str);
        let mut out = String::new();
        out.push_str(
            "# dealer-gateway shards: route /mcp by Mcp-Param-Organization and /aap/{organization_id}/ by path.\n",
        );
        out.push_str("map $http_mcp_param_organization $dgw_header_shard {\n");
        out.push_str(&format!("    default shard_{default};\n"));
        for org in organizations {
            out.push_str(&format!(
                "    {} shard_{};\n",
                nginx_string(org),
                self.shard_of(org)
            ));
        }
        out.push_str("}\n");
        out.push_str("map $uri $dgw_shard {\n");
        out.push_str("    default $dgw_header_shard;\n");
        for org in organizations {
            out.push_str(&format!(
                "    {} shard_{};\n",
                nginx_string(&format!("~^/aap/{}/", regex_escape(org))),
                self.shard_of(org)
            ));
        }
        out.push_str("}\n");
        out
    }
}

impl ShardFilter {
    /// Whether this replica serves `organization_id`.
    pub fn serves(&self, organization_id: &str) -> bool {
        self.map.shard_of(organization_id) == self.shard
    }
}

/// The rendezvous score of (shard, organization): the shard name and the id
/// hashed with a separator no name holds.
fn score(shard: &str, organization_id: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(shard.as_bytes());
    h.update([0]);
    h.update(organization_id.as_bytes());
    h.finalize().into()
}

/// A quoted nginx string (organization ids are DAP ids; quoting keeps any
/// `;`, `{` or space inert).
fn nginx_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `s` as a literal inside a PCRE, with no backslash (which an nginx
/// string would need escaped again): each other character in a class.
/// DAP identifiers hold only letters, digits, `.`, `_`, `:` and `-`.
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':') {
            out.push(c);
        } else {
            out.push('[');
            out.push(c);
            out.push(']');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(shard: Option<&str>, shards: &[&str], pins: &[&str]) -> ShardSettings {
        ShardSettings {
            shard: shard.map(str::to_owned),
            shards: shards.iter().map(|s| (*s).to_owned()).collect(),
            shard_pins: pins.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn no_shard_serves_everything() {
        assert_eq!(settings(None, &[], &[]).filter(), Ok(None));
        assert_eq!(settings(None, &["a", "b"], &[]).filter(), Ok(None));
    }

    #[test]
    fn every_organization_has_exactly_one_shard_and_pins_win() {
        let s = settings(Some("a"), &["a", "b"], &["org.pinned=b"]);
        let a = s.filter().unwrap().unwrap();
        let b = ShardFilter {
            shard: "b".into(),
            map: a.map.clone(),
        };
        let orgs: Vec<String> = (0..200).map(|i| format!("org.{i}")).collect();
        let on_a = orgs.iter().filter(|o| a.serves(o)).count();
        for o in &orgs {
            assert!(a.serves(o) ^ b.serves(o), "{o}");
        }
        // Spread, not all on one shard.
        assert!((60..140).contains(&on_a), "{on_a}");
        assert!(b.serves("org.pinned") && !a.serves("org.pinned"));
    }

    #[test]
    fn adding_a_shard_moves_only_organizations_to_it() {
        let two = settings(None, &["a", "b"], &[]).map().unwrap().unwrap();
        let three = settings(None, &["a", "b", "c"], &[])
            .map()
            .unwrap()
            .unwrap();
        for i in 0..200 {
            let o = format!("org.{i}");
            let after = three.shard_of(&o);
            assert!(after == "c" || after == two.shard_of(&o), "{o}");
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(settings(Some("a"), &[], &[]).filter().is_err());
        assert!(settings(Some("z"), &["a", "b"], &[]).filter().is_err());
        assert!(settings(None, &["a", "a"], &[]).map().is_err());
        assert!(settings(None, &["a b"], &[]).map().is_err());
        assert!(settings(None, &["a"], &["org.x"]).map().is_err());
        assert!(settings(None, &["a"], &["org.x=b"]).map().is_err());
        assert!(settings(None, &[], &["org.x=a"]).map().is_err());
    }

    /// A replica of shard `east` on the bundled demo holds only the
    /// inventory of the organization assigned to `east`.
    #[tokio::test]
    async fn a_sharded_replica_loads_only_its_organizations_inventory() {
        let dir = std::env::temp_dir().join(format!("dealer-gw-shards-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("gateway.sqlite").display());
        let mut settings =
            crate::config::ServeSettings::with_listen("127.0.0.1:0".parse().unwrap());
        settings.sharding = settings_pinned();
        let state = crate::mcp::stdio::prepare(settings, &url).await.unwrap();
        let directory = state.directory.snapshot().await.unwrap();
        assert_eq!(directory.organizations.len(), 3, "the directory is whole");
        let view = state.inventory.view(&directory).await.unwrap();
        assert!(!view.rooftops.is_empty());
        for rooftop in view.rooftops.values() {
            assert_eq!(
                rooftop.latest.organization_id(),
                "org.maplecrest-motor-group"
            );
        }
        assert!(state.serves_organization("org.maplecrest-motor-group"));
        assert!(!state.serves_organization("org.lakeshore-auto-group"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn settings_pinned() -> ShardSettings {
        settings(
            Some("east"),
            &["east", "west"],
            &[
                "org.lakeshore-auto-group=west",
                "org.maplecrest-motor-group=east",
            ],
        )
    }

    #[test]
    fn the_nginx_map_routes_the_header_and_the_aap_path() {
        let map = settings(None, &["a", "b"], &["org.x=b"])
            .map()
            .unwrap()
            .unwrap();
        let text = map.nginx_map(&["org.x".into()]);
        assert!(text.contains("map $http_mcp_param_organization $dgw_header_shard {"));
        assert!(text.contains("    \"org.x\" shard_b;"), "{text}");
        assert!(text.contains("    \"~^/aap/org[.]x/\" shard_b;"), "{text}");
        assert!(text.contains("default shard_a;"), "{text}");
    }
}
