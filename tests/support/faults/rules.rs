//! What the fault proxy injects, where and when: a [`Rule`] is a route pattern (method + path
//! template, optionally one service), a [`When`] over the rule's own count of matching calls,
//! and a [`Fault`].

use std::time::{Duration, Instant};

/// One injected misbehaviour.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Answer this status with an OpenStack-style JSON error body; the backend is not called.
    /// 401 is what a revoked token gets, 413 comes with `Retry-After: 1`.
    Status(u16),
    /// Answer this status with an HTML page, as a load balancer in front of the API does.
    Html(u16),
    /// Wait, then forward.
    Delay(Duration),
    /// Reset the connection (RST) without calling the backend.
    Reset,
    /// Never answer, until the client gives up (or [`super::proxy::HANG_CAP`], or
    /// [`super::FaultProxy::release_hangs`]); then reset. The backend is not called.
    Hang,
    /// Forward (the backend acts), then reset instead of answering: the response is lost.
    Lost,
    /// Forward (the backend acts), then never answer (as [`Fault::Hang`]).
    LostHang,
    /// Forward, then send the headers and half the body, then reset.
    Truncate,
    /// Forward, then replace the body by bytes that are not JSON (status and headers kept).
    Garbage,
    /// Forward; in a Keystone token response set `expires_at` to now + this many seconds
    /// (negative: already expired by the client's clock: clock skew).
    TokenExpiresIn(i64),
    /// Forward; in a Keystone token response move `issued_at` and `expires_at` by this many
    /// seconds: Keystone's clock is that far ahead of ours (behind, if negative).
    TokenSkew(i64),
}

impl Fault {
    /// Whether the backend sees the request.
    pub fn forwards(&self) -> bool {
        matches!(
            self,
            Fault::Delay(_)
                | Fault::Lost
                | Fault::LostHang
                | Fault::Truncate
                | Fault::Garbage
                | Fault::TokenExpiresIn(_)
                | Fault::TokenSkew(_)
        )
    }

    /// Short name for logs and reports.
    pub fn label(&self) -> String {
        match self {
            Fault::Status(c) => format!("status {c}"),
            Fault::Html(c) => format!("html {c}"),
            Fault::Delay(d) => format!("delay {d:?}"),
            Fault::Reset => "reset".into(),
            Fault::Hang => "hang".into(),
            Fault::Lost => "lost response".into(),
            Fault::LostHang => "lost (hang) response".into(),
            Fault::Truncate => "truncated body".into(),
            Fault::Garbage => "non-JSON body".into(),
            Fault::TokenExpiresIn(s) => format!("token expires in {s} s"),
            Fault::TokenSkew(s) => format!("Keystone clock {s:+} s"),
        }
    }
}

/// Which of a rule's matching calls it applies to (counted from 1, per rule).
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    Nth(u64),
    Every,
    /// Calls `n..=m`.
    Calls(u64, u64),
    /// Every matching call until this long after the rule was added.
    For(Duration),
}

/// A route pattern and a fault. Patterns: `"POST /v3/volumes"`, `"GET /v3/volumes/{id}"`,
/// `"* /v2.1/servers/{id}/**"` (`*` method: any; `*` segment: any one; `**`: the rest;
/// `{..}`: an id segment). Only the path is matched, never the query.
#[derive(Debug, Clone)]
pub struct Rule {
    pub service: Option<String>,
    pub method: String,
    pub path: Vec<String>,
    pub when: When,
    pub fault: Fault,
}

impl Rule {
    pub fn new(route: &str, when: When, fault: Fault) -> Rule {
        let (method, path) = route
            .split_once(' ')
            .unwrap_or_else(|| panic!("route {route:?}: want \"METHOD /path\""));
        Rule {
            service: None,
            method: method.to_string(),
            path: segments(path).map(str::to_string).collect(),
            when,
            fault,
        }
    }

    /// Only requests to this service ("keystone", "cinder", "nova").
    pub fn on(mut self, service: &str) -> Rule {
        self.service = Some(service.to_string());
        self
    }

    pub fn matches(&self, service: &str, method: &str, path: &str) -> bool {
        if self.service.as_deref().is_some_and(|s| s != service) {
            return false;
        }
        if self.method != "*" && !self.method.eq_ignore_ascii_case(method) {
            return false;
        }
        let mut want = self.path.iter();
        let mut got = segments(path);
        loop {
            match (want.next(), got.next()) {
                (Some(w), _) if w == "**" => return true,
                (None, None) => return true,
                (Some(w), Some(g)) => {
                    let ok = if w.starts_with('{') {
                        is_id(g)
                    } else {
                        w == "*" || w == g
                    };
                    if !ok {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }

    /// Whether the `n`th match (from 1) of a rule added at `added` is injected.
    pub fn applies(&self, n: u64, added: Instant) -> bool {
        match self.when {
            When::Nth(k) => n == k,
            When::Every => true,
            When::Calls(a, b) => (a..=b).contains(&n),
            When::For(d) => added.elapsed() < d,
        }
    }
}

/// Handle of an added rule, to read its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(pub usize);

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('?')
        .next()
        .unwrap_or_default()
        .split('/')
        .filter(|s| !s.is_empty())
}

/// An OpenStack id in a path: a UUID, or 32 hex digits (Keystone), or a number.
fn is_id(seg: &str) -> bool {
    (seg.len() >= 16 && seg.chars().all(|c| c.is_ascii_hexdigit() || c == '-'))
        || (!seg.is_empty() && seg.chars().all(|c| c.is_ascii_digit()))
}

/// The route template of a request: `GET /v3/volumes/{id}` for
/// `GET /v3/volumes/6f1c...?x=y` (ids replaced, query dropped).
pub fn route_of(method: &str, path: &str) -> String {
    let mut out = method.to_string();
    out.push(' ');
    let segs: Vec<&str> = segments(path).collect();
    if segs.is_empty() {
        out.push('/');
    }
    for s in segs {
        out.push('/');
        out.push_str(if is_id(s) { "{id}" } else { s });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_matching() {
        let id = "6f1c2a34-1b2c-4d5e-8f90-0123456789ab";
        assert_eq!(
            route_of("POST", &format!("/v2.1/servers/{id}/os-volume_attachments")),
            "POST /v2.1/servers/{id}/os-volume_attachments"
        );
        assert_eq!(
            route_of("GET", "/v3/volumes/detail?name=x"),
            "GET /v3/volumes/detail"
        );
        let r = Rule::new("GET /v3/volumes/{id}", When::Every, Fault::Reset);
        assert!(r.matches("cinder", "GET", &format!("/v3/volumes/{id}")));
        assert!(!r.matches("cinder", "GET", "/v3/volumes/detail"));
        assert!(!r.matches("cinder", "DELETE", &format!("/v3/volumes/{id}")));
        let any = Rule::new("* /**", When::Every, Fault::Reset).on("keystone");
        assert!(any.matches("keystone", "POST", "/v3/auth/tokens"));
        assert!(!any.matches("cinder", "POST", "/v3/volumes"));
        let t = Instant::now();
        let r = Rule::new("* /**", When::Calls(2, 3), Fault::Reset);
        assert_eq!(
            (1..=4).map(|n| r.applies(n, t)).collect::<Vec<_>>(),
            [false, true, true, false]
        );
    }
}
