//! Turning the `Authorization` header into a principal.
//!
//! Bearer tokens only, in the header only: a token in the query string is
//! refused, never ignored (SEC-001..005; tokens in URLs leak into logs). No
//! credential means anonymous. A credential that is present but invalid,
//! expired, revoked or for another audience is NEVER treated as anonymous:
//! the request is refused with HTTP 401 and a `WWW-Authenticate: Bearer`
//! challenge naming the protected-resource metadata, and nothing executes.
//! More than one `Authorization` header is refused the same way.

use std::sync::Arc;

use axum::http::{HeaderMap, header};
use chrono::Utc;

use super::{Grant, Principal, api_token};
use crate::state::AppState;

/// Why a request's credentials were refused. The reason is value-free.
/// `unavailable` marks a store outage while checking a token: the caller
/// gets 503 (retry), never a claim that the token is bad.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthRejection {
    pub unavailable: bool,
    /// OAuth error code for the challenge (`invalid_request`, `invalid_token`).
    pub error: &'static str,
    /// A short explanation that never echoes the credential.
    pub description: &'static str,
}

/// Query parameters that carry tokens in other APIs; seeing one means a
/// client put a credential in the URL.
const TOKEN_QUERY_PARAMS: [&str; 3] = ["access_token", "token", "api_key"];

/// Authenticate one request.
pub async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Principal, AuthRejection> {
    authenticate_at(state, headers, query, None).await
}

/// [`authenticate`] at an endpoint that is a protected resource of its own
/// (an AAP endpoint: `endpoint_resource` is its identifier): a JWT may name
/// either the gateway's resource or exactly that one
/// ([`crate::auth::jwt::JwtConfig::verify_at`]). Gateway API tokens are
/// issued for the gateway's resource and are good at every endpoint.
pub async fn authenticate_at(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
    endpoint_resource: Option<&str>,
) -> Result<Principal, AuthRejection> {
    if let Some(q) = query {
        let carries_token = q.split('&').any(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            TOKEN_QUERY_PARAMS
                .iter()
                .any(|p| name.eq_ignore_ascii_case(p))
        });
        if carries_token {
            return Err(AuthRejection {
                unavailable: false,
                error: "invalid_request",
                description: "credentials are accepted only in the Authorization header, never in the URL",
            });
        }
    }
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(Principal::Anonymous);
    };
    // Two credentials are ambiguous: which grant would apply depends on
    // which one a proxy or this server happens to read first. Refused
    // (401 invalid_request), never resolved by picking one.
    if values.next().is_some() {
        return Err(AuthRejection {
            unavailable: false,
            error: "invalid_request",
            description: "send exactly one Authorization header",
        });
    }
    let value = value.to_str().map_err(|_| AuthRejection {
        unavailable: false,
        error: "invalid_request",
        description: "the Authorization header is not valid ASCII",
    })?;
    let (scheme, token) = value.trim().split_once(' ').ok_or(AuthRejection {
        unavailable: false,
        error: "invalid_request",
        description: "the Authorization header must be: Bearer <token>",
    })?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(AuthRejection {
            unavailable: false,
            error: "invalid_request",
            description: "the Authorization header must be: Bearer <token>",
        });
    }
    let token = token.trim();
    let now = Utc::now();
    let grant: Grant = if api_token::parse(token).is_some() {
        api_token::verify(state.store.as_ref(), token, &state.resource_url, now)
            .await
            .map_err(|e| match e {
                api_token::VerifyError::Rejected(rejection) => {
                    tracing::info!(auth.rejection = ?rejection, "gateway API token refused");
                    AuthRejection {
                        unavailable: false,
                        error: "invalid_token",
                        description: "the access token is invalid, expired or revoked",
                    }
                }
                api_token::VerifyError::Store(store) => {
                    tracing::error!(error = %store, "token store unavailable");
                    AuthRejection {
                        unavailable: true,
                        error: "temporarily_unavailable",
                        description: "credentials cannot be checked right now; retry shortly",
                    }
                }
            })?
    } else {
        let Some(jwt) = state.jwt.as_ref() else {
            return Err(AuthRejection {
                unavailable: false,
                error: "invalid_token",
                description: "the access token is not a credential this gateway accepts",
            });
        };
        jwt.verify_at(token, now, endpoint_resource).map_err(|rejection| {
            tracing::info!(auth.rejection = rejection.code(), "JWT access token refused");
            AuthRejection {
                unavailable: false,
                error: "invalid_token",
                description: "the access token is invalid, expired, or not issued for this gateway",
            }
        })?
    };
    Ok(Principal::Authenticated(Arc::new(grant)))
}
