//! RPCs in flight: counted from request to the end of the response body, so draining waits
//! for streamed answers too.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

/// Counts RPCs in flight so shutdown knows when the drain is over.
#[derive(Default)]
pub struct RpcTracker {
    count: AtomicUsize,
    /// RPCs started since the driver did: tells the allocator trim that there was activity.
    served: AtomicU64,
    idle: tokio::sync::Notify,
}

impl RpcTracker {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn in_flight(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// RPCs started since the driver did.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    pub(super) fn enter(self: &Arc<Self>) -> RpcGuard {
        self.served.fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::SeqCst);
        RpcGuard(self.clone())
    }

    /// Resolves once no RPC is in flight (at once if none is).
    pub(super) async fn drained(&self) {
        loop {
            let idle = self.idle.notified();
            if self.in_flight() == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// Dropped when an RPC's response body is done or dropped (also on cancellation).
pub(super) struct RpcGuard(Arc<RpcTracker>);

/// A response body that holds its RPC's guard until the body ends.
pub(super) struct GuardedBody {
    pub(super) body: tonic::body::Body,
    pub(super) _guard: RpcGuard,
}

impl http_body::Body for GuardedBody {
    type Data = hyper::body::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for RpcGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
