//! What the driver asks of glibc's allocator so that its resident memory stays low under load.
//!
//! Under 200 RPCs in flight the live heap stays at 1–4.5 MiB (a heap profile of the soak,
//! docs/RELIABILITY.md), but glibc gives each thread that contends for the heap an arena of its
//! own (up to 8 per core, and tokio's blocking pool runs ~50 threads under that load), and an
//! arena keeps the pages it once used: freed chunks between live ones are neither reused by
//! the other arenas nor returned to the kernel. The resident set then follows the highest
//! demand seen per arena and kept creeping up for the whole soak. Two arenas and a trim after
//! activity lower it (peak 20.9 against 24–25 MiB in the 10-minute soak) at no cost in
//! throughput; a smaller rise remains (docs/RELIABILITY.md).
//!
//! On other C libraries (musl) both are no-ops.

use std::time::Duration;

/// Arenas allowed: one per core of the 2-core machine the soak ran on was enough to keep
/// throughput; more only multiply the pages each arena holds on to.
pub const ARENA_MAX: i32 = 2;

/// How often to return free pages while RPCs are being served.
pub const TRIM_PERIOD: Duration = Duration::from_secs(10);

/// Quiet periods after the last RPC that still trim: tokio's idle blocking threads exit 10 s
/// after their last task and hand their cached chunks back to the arenas only then.
const QUIET_TRIMS: u32 = 2;

/// Limit glibc to [`ARENA_MAX`] arenas, unless the operator chose (`MALLOC_ARENA_MAX` or
/// `glibc.malloc.arena_max` in `GLIBC_TUNABLES`). Call before any thread is started: arenas
/// already made stay.
pub fn limit_arenas() {
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    if operator_chose_arenas(
        std::env::var_os("MALLOC_ARENA_MAX").is_some(),
        tunables.as_deref(),
    ) {
        return;
    }
    glibc::set_arena_max(ARENA_MAX);
}

fn operator_chose_arenas(env_set: bool, tunables: Option<&str>) -> bool {
    env_set
        || tunables.is_some_and(|t| {
            t.split(':')
                .any(|kv| kv.trim().starts_with("glibc.malloc.arena_max="))
        })
}

/// Return the allocator's free pages to the kernel, also those between live chunks (which a
/// `free` never returns). Returns whether any memory was released. Takes each arena's lock
/// in turn for a walk of its free chunks: well under a millisecond for the driver's heap.
pub fn trim() -> bool {
    glibc::trim()
}

/// The two calls into glibc: FFI, hence the only unsafe code here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
mod glibc {
    pub fn set_arena_max(n: i32) {
        // SAFETY: mallopt only sets an allocator parameter; M_ARENA_MAX takes any count.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, n) };
    }

    pub fn trim() -> bool {
        // SAFETY: malloc_trim has no preconditions; it releases only pages no chunk uses.
        unsafe { libc::malloc_trim(0) == 1 }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod glibc {
    pub fn set_arena_max(_: i32) {}

    pub fn trim() -> bool {
        false
    }
}

/// When to trim: at each period in which RPCs were served and at the [`QUIET_TRIMS`] periods
/// after the last one; never while the driver idles (a node plugin mostly does), so an idle
/// driver is not woken up to walk its heap.
#[derive(Debug, Default)]
pub struct TrimPolicy {
    last_served: u64,
    quiet: u32,
}

impl TrimPolicy {
    /// `served`: RPCs served since start, read at the end of a period.
    pub fn due(&mut self, served: u64) -> bool {
        if served != self.last_served {
            self.last_served = served;
            self.quiet = 0;
            return true;
        }
        if self.quiet < QUIET_TRIMS {
            self.quiet += 1;
            return true;
        }
        false
    }
}

/// Trim every [`TRIM_PERIOD`] as [`TrimPolicy`] says; `served` counts RPCs since start.
pub fn spawn_trimmer(served: impl Fn() -> u64 + Send + 'static) {
    tokio::spawn(async move {
        let mut policy = TrimPolicy::default();
        let mut tick = tokio::time::interval(TRIM_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            if policy.due(served()) {
                let released = tokio::task::spawn_blocking(trim).await.unwrap_or(false);
                tracing::trace!(released, "malloc_trim");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_while_served_then_twice_more_then_not_while_idle() {
        let mut p = TrimPolicy::default();
        // Started, nothing served yet: the startup's own garbage is trimmed twice.
        assert!(p.due(0));
        assert!(p.due(0));
        assert!(!p.due(0));
        // A burst: every period with RPCs trims.
        assert!(p.due(5));
        assert!(p.due(900));
        // Then quiet: two more (the blocking threads' caches come back), then none.
        assert!(p.due(900));
        assert!(p.due(900));
        assert!(!p.due(900));
        assert!(!p.due(900));
        // The next RPC starts it again.
        assert!(p.due(901));
    }

    #[test]
    fn the_operators_arena_count_is_kept() {
        assert!(!operator_chose_arenas(false, None));
        assert!(operator_chose_arenas(true, None));
        assert!(operator_chose_arenas(
            false,
            Some("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=4")
        ));
        assert!(!operator_chose_arenas(
            false,
            Some("glibc.malloc.trim_threshold=0")
        ));
    }

    /// Free chunks below a live one are not returned by `free` (only the top of a heap is);
    /// `trim` returns them.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn trim_returns_free_pages_between_live_chunks() {
        // 16 KiB each: under glibc's mmap threshold, so they come from an arena.
        let mut blocks: Vec<Box<[u8]>> = (0..512).map(|_| vec![1u8; 16 << 10].into()).collect();
        let pin = blocks.pop();
        drop(blocks);
        assert!(
            trim(),
            "8 MiB freed below a live block, and nothing released"
        );
        drop(pin);
    }
}
