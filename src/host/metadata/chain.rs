//! The search order: each source in turn, first success wins, every failure kept for one
//! message. The answer is cached for the life of the process (an instance's UUID and AZ never
//! change); failures are not, so the next NodeGetInfo tries again.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::OnceCell;

use super::options::Source;
use super::port::{InstanceMetadata, Metadata, MetadataError};

pub struct Chain {
    sources: Vec<(Source, Arc<dyn Metadata>)>,
    cache: OnceCell<InstanceMetadata>,
}

impl Chain {
    pub fn new(sources: Vec<(Source, Arc<dyn Metadata>)>) -> Self {
        Self {
            sources,
            cache: OnceCell::new(),
        }
    }

    async fn lookup(&self) -> Result<InstanceMetadata, MetadataError> {
        let mut errors: Vec<(Source, MetadataError)> = Vec::new();
        for (source, adapter) in &self.sources {
            match adapter.instance().await {
                Ok(found) => {
                    tracing::info!(
                        source = %source,
                        uuid = %found.uuid,
                        availability_zone = found.availability_zone.as_deref().unwrap_or(""),
                        skipped = errors.len(),
                        "instance metadata found"
                    );
                    return Ok(found);
                }
                Err(e) => errors.push((*source, e)),
            }
        }
        Err(aggregate(errors))
    }
}

#[async_trait]
impl Metadata for Chain {
    async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
        // Concurrent callers wait for one lookup; an error leaves the cell empty.
        self.cache.get_or_try_init(|| self.lookup()).await.cloned()
    }
}

/// One error for all sources. Unavailable if any source was (retrying may help), else Invalid.
fn aggregate(errors: Vec<(Source, MetadataError)>) -> MetadataError {
    if errors.is_empty() {
        return MetadataError::Invalid("no metadata source configured".into());
    }
    let retry_may_help = errors
        .iter()
        .any(|(_, e)| matches!(e, MetadataError::Unavailable(_)));
    let tried: Vec<&str> = errors.iter().map(|(s, _)| s.as_str()).collect();
    let details: Vec<String> = errors
        .iter()
        .map(|(s, e)| format!("{s}: {}", e.detail()))
        .collect();
    let message = format!(
        "no source gave the instance id (tried {}): {}",
        tried.join(", "),
        details.join("; ")
    );
    if retry_may_help {
        MetadataError::Unavailable(message)
    } else {
        MetadataError::Invalid(message)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use super::*;

    /// Answers from a script, one entry per call (the last repeats), and counts calls.
    struct Scripted {
        answers: Mutex<Vec<Result<InstanceMetadata, MetadataError>>>,
        calls: AtomicUsize,
    }

    impl Scripted {
        fn new(answers: Vec<Result<InstanceMetadata, MetadataError>>) -> Arc<Self> {
            Arc::new(Self {
                answers: Mutex::new(answers),
                calls: AtomicUsize::new(0),
            })
        }
        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    #[async_trait]
    impl Metadata for Scripted {
        async fn instance(&self) -> Result<InstanceMetadata, MetadataError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let mut answers = self.answers.lock().unwrap();
            if answers.len() > 1 {
                answers.remove(0)
            } else {
                answers[0].clone()
            }
        }
    }

    fn found(uuid: &str) -> Result<InstanceMetadata, MetadataError> {
        Ok(InstanceMetadata {
            uuid: uuid.into(),
            availability_zone: Some("az".into()),
        })
    }

    fn down(m: &str) -> Result<InstanceMetadata, MetadataError> {
        Err(MetadataError::Unavailable(m.into()))
    }

    fn bad(m: &str) -> Result<InstanceMetadata, MetadataError> {
        Err(MetadataError::Invalid(m.into()))
    }

    fn chain(a: &Arc<Scripted>, b: &Arc<Scripted>) -> Chain {
        Chain::new(vec![
            (Source::ConfigDrive, a.clone() as Arc<dyn Metadata>),
            (Source::MetadataService, b.clone() as Arc<dyn Metadata>),
        ])
    }

    #[tokio::test]
    async fn first_success_wins_and_later_sources_are_not_asked() {
        let (a, b) = (
            Scripted::new(vec![found("a")]),
            Scripted::new(vec![found("b")]),
        );
        assert_eq!(chain(&a, &b).instance().await.unwrap().uuid, "a");
        assert_eq!((a.calls(), b.calls()), (1, 0));
        // Either order: the service first.
        let c = Chain::new(vec![
            (Source::MetadataService, b.clone() as Arc<dyn Metadata>),
            (Source::ConfigDrive, a.clone() as Arc<dyn Metadata>),
        ]);
        assert_eq!(c.instance().await.unwrap().uuid, "b");
        assert_eq!((a.calls(), b.calls()), (1, 1));
    }

    #[tokio::test]
    async fn falls_through_to_the_next_source() {
        let (a, b) = (
            Scripted::new(vec![down("no drive")]),
            Scripted::new(vec![found("b")]),
        );
        assert_eq!(chain(&a, &b).instance().await.unwrap().uuid, "b");
        assert_eq!((a.calls(), b.calls()), (1, 1));
    }

    #[tokio::test]
    async fn success_is_cached_failure_is_not() {
        let a = Scripted::new(vec![down("no drive")]);
        let b = Scripted::new(vec![down("HTTP 500"), found("b")]);
        let c = chain(&a, &b);
        assert!(c.instance().await.is_err());
        assert_eq!((a.calls(), b.calls()), (1, 1));
        assert_eq!(c.instance().await.unwrap().uuid, "b");
        assert_eq!((a.calls(), b.calls()), (2, 2));
        for _ in 0..3 {
            assert_eq!(c.instance().await.unwrap().uuid, "b");
        }
        assert_eq!(
            (a.calls(), b.calls()),
            (2, 2),
            "cached after the first success"
        );
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_lookup() {
        let (a, b) = (
            Scripted::new(vec![found("a")]),
            Scripted::new(vec![found("b")]),
        );
        let c = chain(&a, &b);
        let all = futures::future::join_all((0..8).map(|_| c.instance())).await;
        assert!(all.iter().all(|r| r.as_ref().unwrap().uuid == "a"));
        assert_eq!(a.calls(), 1);
    }

    #[tokio::test]
    async fn errors_are_aggregated_in_order_with_the_right_kind() {
        let (a, b) = (
            Scripted::new(vec![bad("label is \"cidata\"")]),
            Scripted::new(vec![down("connection refused")]),
        );
        let err = chain(&a, &b).instance().await.unwrap_err();
        assert!(matches!(err, MetadataError::Unavailable(_)), "{err}");
        assert_eq!(
            err.detail(),
            "no source gave the instance id (tried configDrive, metadataService): \
             configDrive: label is \"cidata\"; metadataService: connection refused"
        );
        let (a, b) = (Scripted::new(vec![bad("x")]), Scripted::new(vec![bad("y")]));
        let err = chain(&a, &b).instance().await.unwrap_err();
        assert!(matches!(err, MetadataError::Invalid(_)), "{err}");
    }
}
