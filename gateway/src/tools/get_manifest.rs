//! `dealeragent.discovery.get_manifest` (profile `dealeragent.discovery/0.1`).
//!
//! DAP spec 4.2: the manifest tool and the `dealeragent://manifest`
//! resource come from one object (DAP-CORE-006); see [`crate::manifest`].

use serde_json::Value;

use super::{ToolContext, ToolError};
use crate::manifest;

pub const NAME: &str = "dealeragent.discovery.get_manifest";

pub async fn call(ctx: &ToolContext, args: &Value) -> Result<Value, ToolError> {
    let organization_id = args.get("organization_id").and_then(Value::as_str);
    let snapshot = ctx
        .state
        .directory
        .snapshot()
        .await
        .map_err(ToolError::internal)?;
    manifest::build(&ctx.state, &snapshot, &ctx.principal, organization_id)
}
