//! `dealer-gateway shards`: the organization -> shard assignment the
//! replicas make from the same settings, so an operator can see it and put
//! it in the load balancer (docs/operations.md "Shards"). Changing it is
//! editing `shards` / `shard_pins` and restarting the replicas (and
//! reloading nginx with the new map).

use std::collections::BTreeSet;

use super::{Failure, ShardsArgs};
use crate::shards::ShardSettings;

pub(super) async fn run(database_url: &str, args: ShardsArgs) -> Result<(), Failure> {
    let ShardsArgs {
        config,
        mut sharding,
        organizations,
        nginx,
    } = args;
    if let Some(path) = &config {
        from_config_file(path, &mut sharding)?;
    }
    let map = sharding.map().map_err(Failure::BadInput)?.ok_or_else(|| {
        Failure::BadInput("no shards: give --shards (or a --config file with `shards`)".to_owned())
    })?;
    let filter = sharding.filter().map_err(Failure::BadInput)?;
    let store = crate::store::open(database_url).await?;
    let stored = store.list_organizations().await;
    store.close().await;
    let mut all: BTreeSet<String> = stored?.into_iter().map(|o| o.organization_id).collect();
    all.extend(organizations.into_iter().map(|o| o.trim().to_owned()));
    let listed: Vec<String> = all
        .into_iter()
        .filter(|o| filter.as_ref().is_none_or(|f| f.serves(o)))
        .collect();
    if nginx {
        print!("{}", map.nginx_map(&listed));
        return Ok(());
    }
    println!("organization_id\tshard\tassigned_by");
    for org in &listed {
        let by = if map.is_pinned(org) { "pin" } else { "hash" };
        println!("{org}\t{}\t{by}", map.shard_of(org));
    }
    Ok(())
}

/// `shards` and `shard_pins` of a serve config file, where the command line
/// and the environment gave none (the precedence `serve` applies).
fn from_config_file(path: &std::path::Path, sharding: &mut ShardSettings) -> Result<(), Failure> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::BadInput(format!("{file}: cannot read the config file: {e}")))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| Failure::BadInput(format!("{file}: {e}")))?;
    let list = |key: &str| -> Result<Vec<String>, Failure> {
        match table.get(key) {
            None => Ok(Vec::new()),
            Some(toml::Value::String(s)) => Ok(s.split(',').map(str::to_owned).collect()),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        Failure::BadInput(format!("{file}: /{key}: expected strings"))
                    })
                })
                .collect(),
            Some(_) => Err(Failure::BadInput(format!(
                "{file}: /{key}: expected a string or a list of strings"
            ))),
        }
    };
    if sharding.shards.is_empty() {
        sharding.shards = list("shards")?;
    }
    if sharding.shard_pins.is_empty() {
        sharding.shard_pins = list("shard_pins")?;
    }
    Ok(())
}
