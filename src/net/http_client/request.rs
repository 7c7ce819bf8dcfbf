//! A request as the adapters build it: method, URL (query included), headers, a whole body
//! and an optional timeout of its own. Cloned for the one resend of a safe request.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Method};

#[derive(Clone)]
pub struct Outgoing {
    pub method: Method,
    pub url: url::Url,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Overrides the transport's request timeout; counts from when the request is sent.
    pub timeout: Option<Duration>,
}

/// Bodies carry passwords (Keystone's token request) and token headers are marked sensitive:
/// Debug shows the body's length only.
impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing")
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .field("headers", &self.headers)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Outgoing {
    pub fn new(method: Method, url: url::Url) -> Self {
        Self {
            method,
            url,
            headers: HeaderMap::new(),
            body: Bytes::new(),
            timeout: None,
        }
    }

    /// `url` parsed; the error names it.
    pub fn to(method: Method, url: &str) -> Result<Self, String> {
        url::Url::parse(url)
            .map(|u| Self::new(method, u))
            .map_err(|e| format!("{url:?} is not a URL: {e}"))
    }

    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Query pairs appended, form-encoded. No pairs leave the URL as it is: `query_pairs_mut`
    /// would add an empty `?` to every request.
    pub fn query<'a>(mut self, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut pairs = pairs.into_iter().peekable();
        if pairs.peek().is_some() {
            self.url.query_pairs_mut().extend_pairs(pairs);
        }
        self
    }

    /// `body` as JSON, with its Content-Type.
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = Bytes::from(body.to_string());
        self.headers
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    pub fn is_safe(&self) -> bool {
        matches!(self.method, Method::GET | Method::HEAD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_and_json_are_encoded_as_forms_and_json_are() {
        let r = Outgoing::to(Method::GET, "http://h:8776/v3/p/volumes/detail")
            .unwrap()
            .query([("name", "a b&c"), ("limit", "10")]);
        assert_eq!(
            r.url.as_str(),
            "http://h:8776/v3/p/volumes/detail?name=a+b%26c&limit=10"
        );
        let bare = Outgoing::to(Method::GET, "http://h:8776/v3/p/volumes/abc")
            .unwrap()
            .query([]);
        assert_eq!(
            bare.url.as_str(),
            "http://h:8776/v3/p/volumes/abc",
            "no empty `?`"
        );
        let r = r.json(&serde_json::json!({"volume": {"size": 1}}));
        assert_eq!(&r.body[..], br#"{"volume":{"size":1}}"#);
        assert_eq!(r.headers[CONTENT_TYPE], "application/json");
        assert!(r.is_safe());
        assert!(Outgoing::to(Method::GET, "no url").is_err());
        let mut token = HeaderValue::from_static("gAAAA-secret");
        token.set_sensitive(true);
        let shown = format!(
            "{:?}",
            r.header(HeaderName::from_static("x-auth-token"), token)
                .json(&serde_json::json!({"password": "s3cr3t"}))
        );
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("gAAAA"),
            "{shown}"
        );
    }
}
