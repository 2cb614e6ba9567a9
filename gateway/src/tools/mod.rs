//! The tools: one module per MCP tool, and the only registry.
//!
//! `invoke` runs the fixed pipeline for every tool: input schema check
//! (`isError` + `field_errors`, values never echoed), the tool itself (which
//! applies policy before any lookup), then the output schema check (a
//! failure is logged with an error id and answered `dealeragent.internal`).

pub mod dealer_get;
mod error;
pub mod get_manifest;
pub mod get_vehicle;
pub mod inventory_search;
pub mod policy;

use std::sync::Arc;

use chrono::Utc;
use serde_json::Value;

use crate::app::AppState;
use crate::auth::Principal;

pub use error::{ErrorCode, ToolError};

/// Everything a tool may use for one call.
pub struct ToolContext {
    pub state: Arc<AppState>,
    pub principal: Principal,
    /// Correlates logs and error objects for this request.
    pub trace_id: String,
}

/// The names of every tool implemented in code. A test checks this equals
/// the catalog (`capabilities.yaml`) exactly.
pub const IMPLEMENTED: &[&str] = &[
    get_manifest::NAME,
    dealer_get::NAME,
    inventory_search::NAME,
    get_vehicle::NAME,
];

/// Outcome of one tool call: the structured content and whether it is an
/// error object (MCP `isError`).
pub struct ToolOutcome {
    pub structured: Value,
    pub is_error: bool,
}

async fn dispatch(name: &str, ctx: &ToolContext, args: &Value) -> Option<Result<Value, ToolError>> {
    Some(match name {
        get_manifest::NAME => get_manifest::call(ctx, args).await,
        dealer_get::NAME => dealer_get::call(ctx, args).await,
        inventory_search::NAME => inventory_search::call(ctx, args).await,
        get_vehicle::NAME => get_vehicle::call(ctx, args).await,
        _ => return None,
    })
}

/// Run tool `name`. `None` when no such tool exists (a protocol error for
/// the caller: MCP -32602).
pub async fn invoke(ctx: &ToolContext, name: &str, args: &Value) -> Option<ToolOutcome> {
    let tool = ctx.state.catalog.tool(name)?;
    let result = match tool.validate_input(args) {
        Err(field_errors) => Err(ToolError::Validation { field_errors }),
        Ok(()) => match dispatch(name, ctx, args).await {
            None => Err(ToolError::internal(format!(
                "tool {name} is in the catalog but not implemented"
            ))),
            Some(Ok(output)) => match tool.validate_output(&output) {
                Ok(()) => Ok(output),
                Err(errors) => Err(ToolError::internal(format!(
                    "output of {name} failed its schema: {}",
                    serde_json::to_string(&errors).unwrap_or_default()
                ))),
            },
            Some(Err(e)) => Err(e),
        },
    };
    Some(match result {
        Ok(structured) => ToolOutcome {
            structured,
            is_error: false,
        },
        Err(error) => {
            let error_id = format!("err.{}", uuid::Uuid::new_v4());
            if let ToolError::Internal { detail } = &error {
                tracing::error!(error.id = %error_id, trace.id = %ctx.trace_id, tool.name = name, %detail, "tool failed");
            } else {
                tracing::info!(error.id = %error_id, trace.id = %ctx.trace_id, tool.name = name, error.code = error.code().as_str(), "tool refused");
            }
            ToolOutcome {
                structured: error.to_dap(&error_id, &ctx.trace_id, Utc::now()),
                is_error: true,
            }
        }
    })
}
