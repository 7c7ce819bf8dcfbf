//! The optional `--http-endpoint`: `/metrics` (Prometheus text 0.0.4, or OpenMetrics when the
//! `Accept` header asks for it), `/healthz` (the plugin's own
//! health, the same checks as the Probe RPC) and `/readyz` (health plus what the plugin needs
//! from outside: every cloud answering its last background check, the node's identity known).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use crate::driver::probe::{check_all, NotReady, Readiness};
use crate::server::metrics::{Format, Metrics};

/// `:8080` means every address; `host:port` is taken as is.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|_| format!("--http-endpoint {s:?}: expected :PORT or HOST:PORT"))
}

pub struct HttpState {
    pub metrics: Arc<Metrics>,
    /// `/healthz`: local and fast, as Probe.
    pub health: Vec<Arc<dyn Readiness>>,
    /// `/readyz`, after `health`: reads the cloud monitor's last results (no request) and the
    /// node's metadata (cached once resolved).
    pub readiness: Vec<Arc<dyn Readiness>>,
}

/// Bind now (so a taken port fails startup), serve in the background.
pub async fn spawn(addr: SocketAddr, state: Arc<HttpState>) -> Result<SocketAddr, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on --http-endpoint {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| handle(state.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok(local)
}

fn checked(result: Result<(), NotReady>) -> (StatusCode, &'static str, String) {
    match result {
        Ok(()) => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            format!("{}\n", e.reason),
        ),
    }
}

async fn handle(
    state: Arc<HttpState>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, content_type, body) = match req.uri().path() {
        "/metrics" => {
            let accept = req
                .headers()
                .get(hyper::header::ACCEPT)
                .and_then(|v| v.to_str().ok());
            let format = Format::negotiate(accept);
            (
                StatusCode::OK,
                format.content_type(),
                state.metrics.encode(format),
            )
        }
        "/healthz" => checked(check_all(&state.health).await),
        "/readyz" => {
            let mut result = check_all(&state.health).await;
            if result.is_ok() {
                result = check_all(&state.readiness).await;
            }
            checked(result)
        }
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found\n".to_string(),
        ),
    };
    let resp = Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts are valid");
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_addr(":8080").unwrap().port(), 8080);
        assert_eq!(
            parse_addr("127.0.0.1:9").unwrap(),
            "127.0.0.1:9".parse().unwrap()
        );
        assert!(parse_addr("8080").is_err());
        assert!(parse_addr("localhost").is_err());
    }
}
