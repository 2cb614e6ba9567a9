//! `dealeragent.discovery.get_manifest` (profile `dealeragent.discovery/0.1`).
//!
//! DAP spec 4.2: the manifest tool and the `dealeragent://manifest`
//! resource come from one object (DAP-CORE-006); see [`crate::manifest`].

use super::{Produced, ToolContext, ToolError};
use crate::manifest;

pub const NAME: &str = "dealeragent.discovery.get_manifest";

/// Served from [`crate::directory::ViewCache`]: built, checked against the
/// output schema and serialized once per directory snapshot and caller
/// view (docs/benchmarks.md "Where output is validated").
///
/// The tool (see [`super::Tool`]).
pub struct GetManifest;

impl super::Tool for GetManifest {
    const NAME: &'static str = NAME;
    type Args = super::args::ManifestArgs;
    type Output = Produced;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let organization_id = args.organization_id.as_deref();
        let snapshot = ctx.directory().snapshot().await?;
        let key = manifest::view_key(&snapshot, &ctx.principal, organization_id);
        let json = match ctx.manifests().get(&snapshot, &key) {
            Some(json) => json,
            None => {
                let doc = manifest::build(
                    ctx.manifest_state(),
                    &snapshot,
                    &ctx.principal,
                    organization_id,
                )?;
                super::check_part(ctx, NAME, "manifest", &doc)?;
                let json: std::sync::Arc<str> = serde_json::to_string(&doc)
                    .map_err(ToolError::internal)?
                    .into();
                ctx.manifests().put(&snapshot, key, json.clone());
                json
            }
        };
        Ok(Produced::Assembled {
            json: super::JsonText::trusted(json.to_string()),
            resource_ids: Vec::new(),
            links: String::new(),
        })
    }
}
