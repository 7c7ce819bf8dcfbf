//! How a connection to an API is opened: TCP to the API or to the proxy that applies (a
//! CONNECT tunnel for https), then TLS for https, all within the connect timeout. How many are
//! open, and when a new one is opened, is the pool's (`pool.rs`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tower::ServiceExt;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Opens connections for the pool.
#[derive(Clone)]
pub struct Connector {
    pub tcp: HttpConnector,
    /// `None`: this client speaks plain http only (the metadata service's usual URL).
    pub tls: Option<tokio_rustls::TlsConnector>,
    /// Which destinations go through which proxy; `None`: all direct.
    pub proxies: Option<Arc<Matcher>>,
    /// TCP, proxy tunnel and TLS handshake together.
    pub connect_timeout: Duration,
}

impl Connector {
    pub async fn open(&self, dst: http::Uri) -> Result<Conn, BoxError> {
        let within = self.connect_timeout;
        let (stream, proxied) = tokio::time::timeout(within, self.open_stream(&dst))
            .await
            .map_err(|_| format!("connecting to {dst} took longer than {within:?}"))??;
        Ok(Conn { stream, proxied })
    }

    /// The stream to `dst` and whether requests on it go to a proxy in absolute form.
    async fn open_stream(&self, dst: &http::Uri) -> Result<(Stream, bool), BoxError> {
        let https = dst.scheme_str() == Some("https");
        let proxy = self.proxies.as_ref().and_then(|m| m.intercept(dst));
        let (tcp, proxied) = match proxy {
            None => (self.tcp.clone().oneshot(dst.clone()).await?, false),
            Some(p) if https => {
                let mut tunnel = Tunnel::new(p.uri().clone(), self.tcp.clone());
                if let Some(auth) = p.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                (tunnel.oneshot(dst.clone()).await?, false)
            }
            // Plain http through a proxy: requests go to the proxy in absolute form.
            Some(p) => (self.tcp.clone().oneshot(p.uri().clone()).await?, true),
        };
        let stream = if https {
            let tls = self
                .tls
                .as_ref()
                .ok_or_else(|| format!("{dst}: this client has no TLS settings"))?;
            let host = dst.host().unwrap_or_default();
            let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']'))
                .map_err(|e| format!("{host}: not a TLS server name: {e}"))?
                .to_owned();
            Stream::Tls(Box::new(TokioIo::new(
                tls.connect(name, tcp.into_inner()).await?,
            )))
        } else {
            Stream::Plain(tcp)
        };
        Ok((stream, proxied))
    }
}

enum Stream {
    Plain(TokioIo<TcpStream>),
    // Boxed: a TLS session is ~1 KiB, a plain stream 40 bytes.
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

/// One open connection.
pub struct Conn {
    stream: Stream,
    proxied: bool,
}

impl Conn {
    /// Requests on it go to a proxy, in absolute form.
    pub fn proxied(&self) -> bool {
        self.proxied
    }
}

impl Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.stream {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}
