//! `token create|list|revoke`: gateway API tokens (docs/tokens-and-audit.md).

use std::collections::BTreeSet;

use chrono::Utc;

use super::{Failure, TokenCommand, rfc3339};
use crate::Error;
use crate::auth::RooftopScope;
use crate::auth::api_token::{self, CreateError, TokenRequest, TokenStatus};
use crate::catalog::Catalog;
use crate::store;

/// Run one `token` command.
pub(super) async fn run(database_url: &str, what: TokenCommand) -> Result<(), Failure> {
    match what {
        TokenCommand::Create {
            subject,
            organization,
            rooftops,
            group,
            scopes,
            purpose,
            expires_in,
            json,
        } => {
            let grant = if group {
                RooftopScope::Group
            } else {
                RooftopScope::Rooftops(rooftops.iter().map(|r| r.trim().to_owned()).collect())
            };
            let scopes = scopes.iter().map(|s| s.trim().to_owned()).collect();
            token_create(
                database_url,
                TokenArgs {
                    subject,
                    organization,
                    rooftops: grant,
                    scopes,
                    purpose,
                    expires_in,
                },
                json,
            )
            .await
        }
        TokenCommand::List { json } => token_list(database_url, json).await,
        TokenCommand::Revoke { token_id } => token_revoke(database_url, &token_id).await,
    }
}

/// `token create` arguments, after splitting the comma lists.
struct TokenArgs {
    subject: String,
    organization: String,
    rooftops: RooftopScope,
    scopes: BTreeSet<String>,
    purpose: String,
    expires_in: String,
}

/// `token create ...`: validate, store the hash, print the token once.
async fn token_create(database_url: &str, args: TokenArgs, json: bool) -> Result<(), Failure> {
    let not_created =
        |message: String| Failure::BadInput(format!("{message}; no token was created"));
    let lifetime = api_token::parse_lifetime(&args.expires_in).map_err(not_created)?;
    let known_scopes = api_token::known_scopes(&Catalog::load()?);
    let store = store::open(database_url).await?;
    let now = Utc::now();
    let request = TokenRequest {
        subject: args.subject,
        organization_id: args.organization,
        rooftops: args.rooftops,
        scopes: args.scopes,
        purpose: args.purpose,
        expires_at: now + lifetime,
    };
    let issued = api_token::create(store.as_ref(), &request, &known_scopes, now)
        .await
        .map_err(|e| match e {
            CreateError::Invalid(message) => not_created(message),
            CreateError::Store(e) => Failure::from(e),
        })?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&issued).map_err(|e| Error::Io(e.to_string()))?
        );
    } else {
        println!(
            "created token {id} for {subject} (organization {org}, {rooftops}; scopes {scopes}), \
             expires {expires}:\n\n    {token}\n\n\
             Store it now: it is shown only this once and cannot be recovered \
             (the gateway keeps only its hash).",
            id = issued.token_id,
            subject = request.subject.trim(),
            org = request.organization_id,
            rooftops = describe_rooftops(&request.rooftops),
            scopes = join(&request.scopes),
            expires = rfc3339(issued.expires_at),
            token = issued.token,
        );
    }
    Ok(())
}

/// `token list [--json]`: never a secret or a hash.
async fn token_list(database_url: &str, json: bool) -> Result<(), Failure> {
    let store = store::open(database_url).await?;
    let tokens = store.list_api_tokens().await?;
    let now = Utc::now();
    if json {
        let rows: Vec<serde_json::Value> = tokens
            .iter()
            .map(|t| {
                let (group, rooftops) = match &t.rooftops {
                    RooftopScope::Group => (true, Vec::new()),
                    RooftopScope::Rooftops(ids) => (false, ids.iter().cloned().collect()),
                };
                serde_json::json!({
                    "token_id": t.token_id,
                    "status": TokenStatus::of(t, now).as_str(),
                    "subject": t.subject,
                    "organization_id": t.organization_id,
                    "group": group,
                    "rooftops": rooftops,
                    "scopes": t.scopes,
                    "purpose": t.purpose,
                    "created_at": rfc3339(t.created_at),
                    "expires_at": rfc3339(t.expires_at),
                    "revoked_at": t.revoked_at.map(rfc3339),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| Error::Io(e.to_string()))?
        );
        return Ok(());
    }
    if tokens.is_empty() {
        println!("no tokens");
        return Ok(());
    }
    for t in &tokens {
        println!(
            "{id}  {status:<7}  subject={subject}  organization={org}  {rooftops}  scopes={scopes}  \
             purpose={purpose:?}  created={created}  expires={expires}  revoked={revoked}",
            id = t.token_id,
            status = TokenStatus::of(t, now).as_str(),
            subject = t.subject,
            org = t.organization_id,
            rooftops = match &t.rooftops {
                RooftopScope::Group => "rooftops=group".to_owned(),
                RooftopScope::Rooftops(ids) => format!("rooftops={}", join(ids)),
            },
            scopes = join(&t.scopes),
            purpose = t.purpose,
            created = rfc3339(t.created_at),
            expires = rfc3339(t.expires_at),
            revoked = t.revoked_at.map_or_else(|| "-".to_owned(), rfc3339),
        );
    }
    Ok(())
}

/// `token revoke ID`.
async fn token_revoke(database_url: &str, token_id: &str) -> Result<(), Failure> {
    let store = store::open(database_url).await?;
    let unknown = || {
        Failure::BadInput(format!(
            "no token has id {token_id:?} (see dealer-gateway token list); nothing was revoked"
        ))
    };
    let before = store.get_api_token(token_id).await?.ok_or_else(unknown)?;
    if !store.revoke_api_token(token_id, Utc::now()).await? {
        return Err(unknown());
    }
    match before.revoked_at {
        Some(at) => println!("token {token_id} was already revoked at {}", rfc3339(at)),
        None => {
            let at = store
                .get_api_token(token_id)
                .await?
                .and_then(|t| t.revoked_at)
                .map_or_else(|| "now".to_owned(), rfc3339);
            println!("revoked token {token_id} at {at}");
        }
    }
    Ok(())
}

fn describe_rooftops(scope: &RooftopScope) -> String {
    match scope {
        RooftopScope::Group => "group (every rooftop)".to_owned(),
        RooftopScope::Rooftops(ids) => format!("rooftops {}", join(ids)),
    }
}

fn join(items: &BTreeSet<String>) -> String {
    items
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",")
}
