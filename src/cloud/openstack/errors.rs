//! Failed OpenStack requests and their typed mapping. A request fails as an [`ApiError`]
//! (status, message from the Cinder/Nova/Keystone error body, request id); the resource
//! operation that made it knows what the request was about and turns it into a
//! [`CloudError`] with [`ApiError::into_cloud`].

use http::HeaderMap;
use http::StatusCode;

use crate::cloud::{CloudError, RequestId, Resource};
use crate::net::http_client::SendError;

/// Longest error message kept from a response body that is not an OpenStack error document.
const MAX_RAW_MESSAGE: usize = 300;

/// One failed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// `None` when no HTTP answer arrived (connect error, timeout, reset).
    pub status: Option<StatusCode>,
    pub message: String,
    pub request_id: Option<String>,
}

impl ApiError {
    /// An HTTP error answer. `body` is the raw response body.
    pub fn from_response(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Self {
        Self {
            status: Some(status),
            message: message_from_body(body).unwrap_or_else(|| {
                status
                    .canonical_reason()
                    .unwrap_or("error without a message")
                    .to_string()
            }),
            request_id: request_id(headers),
        }
    }

    /// No answer. The message names the URL and the cause (timeout, refused, reset); URLs
    /// carry ids and filters, never credentials.
    pub fn transport(what: &str, err: &SendError) -> Self {
        let kind = if err.is_timeout() {
            "timed out"
        } else if err.is_connect() {
            "could not connect"
        } else {
            "failed"
        };
        Self {
            status: None,
            message: format!("{what} {kind}: {}", error_chain(err)),
            request_id: None,
        }
    }

    /// An answer the adapter could not parse.
    pub fn bad_answer(what: &str, detail: impl std::fmt::Display) -> Self {
        Self {
            status: None,
            message: format!("unexpected answer to {what}: {detail}"),
            request_id: None,
        }
    }

    pub fn is_status(&self, code: u16) -> bool {
        self.status.is_some_and(|s| s.as_u16() == code)
    }

    /// The typed error for a request about `resource` `id` (404 becomes NotFound of it).
    pub fn into_cloud(self, resource: Resource, id: &str) -> CloudError {
        let request_id = RequestId(self.request_id);
        let message = self.message;
        let Some(status) = self.status else {
            return if message.starts_with("unexpected answer") {
                CloudError::Internal(message)
            } else {
                CloudError::Unavailable {
                    message,
                    request_id,
                }
            };
        };
        let lower = message.to_ascii_lowercase();
        match status.as_u16() {
            404 => CloudError::not_found(resource, id),
            409 => CloudError::Conflict {
                message,
                request_id,
            },
            // Rate limiting: come back later.
            429 => CloudError::Unavailable {
                message,
                request_id,
            },
            413 => CloudError::OverLimit {
                message,
                request_id,
            },
            401 => CloudError::Unauthorized {
                message,
                request_id,
            },
            400 | 403 if is_quota(&lower) => CloudError::OverLimit {
                message,
                request_id,
            },
            403 => CloudError::Forbidden {
                message,
                request_id,
            },
            400 if is_state_conflict(&lower) => CloudError::Conflict {
                message,
                request_id,
            },
            406 | 501 => CloudError::Unsupported(format!("{message}{request_id}")),
            s if s >= 500 => CloudError::Unavailable {
                message: format!("HTTP {s}: {message}"),
                request_id,
            },
            _ => CloudError::BadRequest {
                message,
                request_id,
            },
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "HTTP {}: {}", s.as_u16(), self.message)?,
            None => f.write_str(&self.message)?,
        }
        write!(f, "{}", RequestId(self.request_id.clone()))
    }
}

/// Quota and limit refusals (Cinder 413 `VolumeLimitExceeded`, `VolumeSizeExceedsAvailableQuota`;
/// Nova 403 "Quota exceeded", and 403 `TooManyDiskDevices`: "The maximum allowed number of disk
/// devices (26) to attach to a single instance has been exceeded").
fn is_quota(lower: &str) -> bool {
    ["quota", "limitexceeded", "limit exceeded", "exceeded"]
        .iter()
        .any(|p| lower.contains(p))
}

/// 400s that mean "not in a state for this now" rather than "malformed": the volume is in use,
/// attached, has dependent snapshots, or is in a transitional status.
fn is_state_conflict(lower: &str) -> bool {
    const PATTERNS: &[&str] = &[
        "in use",
        "in-use",
        "already attached",
        "invalid volume",
        "invalid snapshot",
        "invalid backup",
        "status must be",
        "must be available",
        "invalid state",
        "invalid status",
        "current status",
        "currently in",
        "dependent snapshots",
        "has snapshots",
        "while it is in",
        "task_state",
    ];
    PATTERNS.iter().any(|p| lower.contains(p))
}

/// `x-openstack-request-id` (all services) or Nova's older `x-compute-request-id`.
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    ["x-openstack-request-id", "x-compute-request-id"]
        .iter()
        .find_map(|h| headers.get(*h)?.to_str().ok().map(str::to_string))
}

/// The message of an OpenStack error document: `{"itemNotFound": {"message": ..}}` (Cinder,
/// Nova), `{"error": {"message": ..}}` (Keystone), `{"message": ..}`; else the body text.
fn message_from_body(body: &[u8]) -> Option<String> {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        if let Some(m) = v.get("message").and_then(|m| m.as_str()) {
            return Some(m.to_string());
        }
        if let Some(obj) = v.as_object() {
            for inner in obj.values() {
                if let Some(m) = inner.get("message").and_then(|m| m.as_str()) {
                    return Some(m.to_string());
                }
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = strip_tags(&text);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return None;
    }
    Some(match text.char_indices().nth(MAX_RAW_MESSAGE) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    })
}

/// webob answers some errors with a small HTML page; keep its text only.
fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Transport errors keep the useful cause (refused, reset, certificate) in `source()`.
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn err(status: u16, body: &str) -> ApiError {
        let mut h = HeaderMap::new();
        h.insert(
            "x-openstack-request-id",
            HeaderValue::from_static("req-6b0e1b5a-0000-4000-8000-000000000001"),
        );
        ApiError::from_response(StatusCode::from_u16(status).unwrap(), &h, body.as_bytes())
    }

    fn cloud(status: u16, body: &str) -> CloudError {
        err(status, body).into_cloud(Resource::Volume, "vol-1")
    }

    #[test]
    fn messages_come_from_every_error_document_shape() {
        let e = err(
            404,
            r#"{"itemNotFound": {"message": "Volume vol-1 could not be found.", "code": 404}}"#,
        );
        assert_eq!(e.message, "Volume vol-1 could not be found.");
        assert_eq!(
            e.request_id.as_deref(),
            Some("req-6b0e1b5a-0000-4000-8000-000000000001")
        );
        let e = err(
            401,
            r#"{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}"#,
        );
        assert_eq!(
            e.message,
            "The request you have made requires authentication."
        );
        let e = err(
            404,
            "<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1>The resource could not be found.<br /><br /></body></html>",
        );
        assert_eq!(
            e.message,
            "404 Not Found 404 Not Found The resource could not be found."
        );
        assert_eq!(err(502, "").message, "Bad Gateway");
        let long = "x".repeat(1000);
        assert!(err(500, &long).message.chars().count() <= MAX_RAW_MESSAGE + 1);
    }

    #[test]
    fn status_codes_map_to_typed_errors() {
        assert_eq!(
            cloud(404, r#"{"itemNotFound": {"message": "gone"}}"#),
            CloudError::not_found(Resource::Volume, "vol-1")
        );
        assert!(matches!(cloud(409, "{}"), CloudError::Conflict { .. }));
        assert!(matches!(
            cloud(
                413,
                r#"{"overLimit": {"code": 413, "message": "VolumeLimitExceeded: Maximum number of volumes allowed (10) exceeded for quota 'volumes'.", "retryAfter": "0"}}"#
            ),
            CloudError::OverLimit { .. }
        ));
        assert!(matches!(cloud(401, "{}"), CloudError::Unauthorized { .. }));
        assert!(matches!(cloud(403, "{}"), CloudError::Forbidden { .. }));
        assert!(matches!(
            cloud(
                403,
                r#"{"forbidden": {"message": "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances", "code": 403}}"#
            ),
            CloudError::OverLimit { .. }
        ));
        for s in [500, 502, 503, 504] {
            assert!(
                matches!(cloud(s, ""), CloudError::Unavailable { .. }),
                "{s}"
            );
        }
        assert!(matches!(cloud(429, "{}"), CloudError::Unavailable { .. }));
        assert!(matches!(
            cloud(
                403,
                r#"{"forbidden": {"code": 403, "message": "The maximum allowed number of disk devices (26) to attach to a single instance has been exceeded."}}"#
            ),
            CloudError::OverLimit { .. }
        ));
        assert!(matches!(
            cloud(
                406,
                r#"{"computeFault": {"message": "Version 3.99 is not supported by the API. Minimum is 3.0 and maximum is 3.71."}}"#
            ),
            CloudError::Unsupported(_)
        ));
    }

    #[test]
    fn state_400s_are_conflicts_and_the_rest_bad_requests() {
        for msg in [
            "Invalid volume: Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached, belong to a group, have snapshots, awaiting a transfer, or be disassociated from snapshots after volume transfer.",
            "Invalid volume: Volume still has 1 dependent snapshots.",
            "Invalid volume: volume 'a07f71dc' status must be 'available'. Currently in 'in-use'",
            "Invalid volume: Volume 4f5c status must be available or in-use to extend, but current status is: extending.",
        ] {
            let body = serde_json::json!({"badRequest": {"code": 400, "message": msg}}).to_string();
            assert!(
                matches!(cloud(400, &body), CloudError::Conflict { .. }),
                "{msg}"
            );
        }
        let body = r#"{"badRequest": {"code": 400, "message": "Invalid input for field/attribute size. Value: -1. -1 is less than the minimum of 1"}}"#;
        match cloud(400, body) {
            CloudError::BadRequest {
                message,
                request_id,
            } => {
                assert!(message.contains("minimum of 1"));
                assert!(request_id.to_string().contains("req-6b0e1b5a"));
            }
            other => panic!("{other:?}"),
        }
        let body = r#"{"badRequest": {"code": 400, "message": "VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed gigabytes quota."}}"#;
        assert!(matches!(cloud(400, body), CloudError::OverLimit { .. }));
    }

    #[test]
    fn no_answer_is_unavailable_and_garbage_is_internal() {
        let e = ApiError {
            status: None,
            message: "GET http://127.0.0.1:1/v3 could not connect: refused".into(),
            request_id: None,
        };
        assert!(matches!(
            e.into_cloud(Resource::Volume, "x"),
            CloudError::Unavailable { .. }
        ));
        let e = ApiError::bad_answer("volume_get", "missing field `id`");
        assert!(matches!(
            e.into_cloud(Resource::Volume, "x"),
            CloudError::Internal(_)
        ));
    }
}
