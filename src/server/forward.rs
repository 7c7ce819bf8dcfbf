//! A gRPC service served here or passed, untouched, to another process's socket: a request
//! for which `here(path)` is false goes over a Unix socket to whoever serves it there, and the
//! answer comes back as it is. What cannot be passed on (nothing listens there) is UNAVAILABLE
//! with `unreachable` and the cause, so the caller retries.

use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::{Channel, Endpoint};
use tower::{Service, ServiceExt};

/// `inner`, or for the requests `here(path)` refuses, the service at `socket`.
#[derive(Clone)]
pub struct Forward<S> {
    inner: S,
    here: Arc<dyn Fn(&str) -> bool + Send + Sync>,
    to: Channel,
    unreachable: Arc<str>,
}

impl<S> Forward<S> {
    /// Connects lazily (on the first request passed on, again after a failure).
    pub fn new(
        inner: S,
        here: Arc<dyn Fn(&str) -> bool + Send + Sync>,
        socket: PathBuf,
        unreachable: String,
    ) -> Self {
        // The URI is required by tonic but unused: the connector dials the socket.
        let to = Endpoint::from_static("http://localhost").connect_with_connector_lazy(
            tower::service_fn(move |_| {
                let socket = socket.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(socket).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }),
        );
        Self {
            inner,
            here,
            to,
            unreachable: unreachable.into(),
        }
    }
}

impl<S> Service<http::Request<Body>> for Forward<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Each call drives a clone of `inner` or of the channel to readiness itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if (self.here)(req.uri().path()) {
            return Box::pin(self.inner.clone().oneshot(req));
        }
        let (to, unreachable) = (self.to.clone(), self.unreachable.clone());
        Box::pin(async move {
            Ok(to.oneshot(req).await.unwrap_or_else(|e| {
                tonic::Status::unavailable(format!("{unreachable}: {}", chain(&e))).into_http()
            }))
        })
    }
}

impl<S: NamedService> NamedService for Forward<S> {
    const NAME: &'static str = S::NAME;
}

/// An error with its causes ("transport error: ... : No such file or directory").
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
