//! Talking to HTTP APIs, for the adapters: the pooled HTTP client, the TLS provider, and the
//! Kubernetes API port with its one-request adapter. This file only declares them.

pub mod http_client;
pub mod kube;
pub mod tls;
