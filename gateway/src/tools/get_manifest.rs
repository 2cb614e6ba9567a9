//! `dealeragent.discovery.get_manifest` (profile `dealeragent.discovery/0.1`).
//!
//! DAP spec 4.2: the manifest tool and the `dealeragent://manifest`
//! resource come from one object (DAP-CORE-006); see [`crate::manifest`].

use super::output::ToolOutput;
use super::{JsonText, Produced, ToolContext, ToolError};
use crate::manifest::{self, Manifest};

pub const NAME: &str = "dealeragent.discovery.get_manifest";

/// Served from [`crate::directory::ViewCache`]: the typed [`Manifest`] is
/// built, checked against the output schema and serialized once per
/// directory snapshot and caller view (docs/benchmarks.md "Where output is
/// validated"); later calls send the cached text.
///
/// The tool (see [`super::Tool`]).
pub struct GetManifest;

impl super::Tool for GetManifest {
    const NAME: &'static str = NAME;
    type Args = super::args::ManifestArgs;
    type Output = ManifestJson;

    async fn call(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let organization_id = args.organization_id.as_deref();
        let snapshot = ctx.directory().snapshot().await?;
        let key = manifest::view_key(&snapshot, &ctx.principal, organization_id);
        let json = match ctx.manifests().get(&snapshot, &key) {
            Some(json) => json,
            None => {
                let doc = manifest::document(
                    ctx.manifest_state(),
                    &snapshot,
                    &ctx.principal,
                    organization_id,
                )?;
                let tree = super::output::tree(&doc)?;
                super::check_part(ctx, NAME, "manifest", &tree)?;
                let json: std::sync::Arc<str> = serde_json::to_string(&tree)
                    .map_err(ToolError::internal)?
                    .into();
                ctx.manifests().put(&snapshot, key, json.clone());
                json
            }
        };
        Ok(ManifestJson(JsonText::trusted(json.to_string())))
    }
}

/// A [`Manifest`] serialized (and checked) when it was built, sent as is:
/// the pipeline does not check it again, and the registry still knows the
/// definition it mirrors.
pub struct ManifestJson(JsonText);

impl super::IntoOutput for ManifestJson {
    const OUTPUT: Option<&'static str> = Some(<Manifest as ToolOutput>::OUTPUT);
    fn into_output(self) -> Result<super::Output, ToolError> {
        Ok((
            Produced::Assembled {
                json: self.0,
                resource_ids: Vec::new(),
                links: String::new(),
            },
            None,
        ))
    }
}
