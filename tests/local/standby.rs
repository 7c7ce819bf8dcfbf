//! Two controller processes on one local-backend state directory, over real gRPC sockets (a
//! 2-replica install). The second is a standby: it passes its controller calls to the first
//! (the holder of the directory's lock) through DIR/controller.sock, so a CreateVolume through
//! it is the first's volume, made once; when the holder cannot be reached it answers
//! UNAVAILABLE, naming the lock and the directory, and changes nothing. After kill -9 of the
//! first it takes the directory over: a CreateVolume retried with the same name returns the
//! volume the first made, with no duplicate in the state, and a third replica is its standby.
//! A holder told to stop keeps serving its standby until its drain is over (it holds the lock
//! until then). Needs root (the rig's cleanup).

use crate::support::launch::{Launch, Running};
use crate::support::local_rig;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cinder_csi::server::csi::pb;
use cinder_csi::tools::ctl::Client;
use local_rig::*;
use tonic::Code;

/// One `cinder-csi serve --mode controller` on the rig's state directory; killed on drop.
struct Replica {
    child: Running,
    client: Client,
}

impl Replica {
    async fn start(rig: &Rig, name: &'static str) -> Replica {
        Self::start_with(rig, name, &[]).await
    }

    async fn start_with(rig: &Rig, name: &'static str, extra: &[&str]) -> Replica {
        let mut child = Launch::new()
            .args(["serve", "--mode", "controller", "--backend", "local"])
            .args(["--node-id", NODE])
            .endpoint(&rig.dir.join(format!("{name}.sock")))
            .arg("--local-dir")
            .arg(rig.dir.join("state"))
            .args(extra)
            .log(&rig.dir.join(format!("{name}.log")))
            .spawn();
        // Identity answers on a standby too (the livenessprobe and sidecars ask it).
        let client = child.wait_for_probe(Duration::from_secs(20)).await;
        Replica { child, client }
    }

    async fn create(&self, name: &str) -> Result<pb::Volume, tonic::Status> {
        let c = &self.client;
        let req = create_req(name, GIB, "ext4");
        let r = c.controller().create_volume(c.req(req)).await?;
        Ok(r.into_inner().volume.unwrap())
    }

    async fn list(&self) -> Result<Vec<String>, tonic::Status> {
        let c = &self.client;
        let req = pb::ListVolumesRequest::default();
        let r = c.controller().list_volumes(c.req(req)).await?.into_inner();
        Ok(r.entries
            .into_iter()
            .map(|e| e.volume.unwrap().volume_id)
            .collect())
    }

    fn log(&self) -> String {
        self.child.log()
    }

    fn kill9(&mut self) {
        self.child.kill9();
    }
}

/// Every regular file under the state directory but the lock, with its bytes.
fn state_files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                todo.push(p);
            } else if t.is_file() && p.file_name().is_some_and(|n| n != ".lock") {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn assert_waits(s: &tonic::Status, state: &Path, who: &str) {
    assert_eq!(s.code(), Code::Unavailable, "{who}: {s:?}");
    for says in [
        state.join(".lock").display().to_string(),
        state.display().to_string(),
    ] {
        assert!(s.message().contains(&says), "{who}: {}", s.message());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_waits_for_the_lock_then_takes_over_after_kill_9() {
    let rig = Rig::new();
    let state = rig.dir.join("state");
    let mut first = Replica::start(&rig, "first").await;
    let v = first.create("pvc-failover").await.unwrap();

    let second = Replica::start(&rig, "second").await;
    assert!(second.log().contains("standby"), "{}", second.log());
    // While the first lives, the second's calls are the first's: the same name is the same
    // volume, and nothing is made twice.
    let through = second.create("pvc-failover").await.unwrap();
    assert_eq!(through.volume_id, v.volume_id);
    assert_eq!(
        second.list().await.unwrap(),
        std::slice::from_ref(&v.volume_id)
    );

    // A standby that cannot reach the holder (its socket gone; the second keeps the connection
    // it has): what needs the backend is UNAVAILABLE, saying which lock and directory it
    // waits for, and changes nothing; what the sidecars ask at startup still answers.
    std::fs::remove_file(state.join("controller.sock")).unwrap();
    let blind = Replica::start(&rig, "blind").await;
    let before = state_files(&state);
    let c = &blind.client;
    let caps = c
        .controller()
        .controller_get_capabilities(c.req(pb::ControllerGetCapabilitiesRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(!caps.capabilities.is_empty());
    assert_waits(
        &blind.create("pvc-failover").await.unwrap_err(),
        &state,
        "create",
    );
    assert_waits(
        &blind.create("pvc-other").await.unwrap_err(),
        &state,
        "create",
    );
    assert_waits(&blind.list().await.unwrap_err(), &state, "list");
    let del = c
        .controller()
        .delete_volume(c.req(pb::DeleteVolumeRequest {
            volume_id: v.volume_id.clone(),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_waits(&del, &state, "delete");
    assert_eq!(state_files(&state), before, "the standby changed the state");
    assert_eq!(
        first.list().await.unwrap(),
        std::slice::from_ref(&v.volume_id)
    );

    first.kill9();
    // The kernel drops the dead process's lock; one standby takes the directory over, the
    // other passes its calls to it. The retry of the same CreateVolume (what the provisioner
    // does) gets the first's volume, through either.
    let again = retry(&second, "pvc-failover").await;
    assert_eq!(again.volume_id, v.volume_id);
    assert_eq!(again.capacity_bytes, v.capacity_bytes);
    assert_eq!(
        second.list().await.unwrap(),
        std::slice::from_ref(&v.volume_id)
    );
    let records: Vec<_> = std::fs::read_dir(state.join("volumes"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(records.len(), 1, "one volume record: {records:?}");
    let took = [&second, &blind]
        .into_iter()
        .filter(|r| r.log().contains("took the local backend's state dir over"))
        .count();
    assert_eq!(took, 1, "one takes over");

    let w = retry(&blind, "pvc-after").await;
    let mut ids = second.list().await.unwrap();
    ids.sort();
    let mut want = vec![v.volume_id, w.volume_id];
    want.sort();
    assert_eq!(ids, want);
}

/// SIGTERM to the holder while it has an RPC in flight: it drains that RPC (up to its grace)
/// still holding the directory's lock, and through that drain it still serves the standby's
/// calls on DIR/controller.sock (closed last, once the drain is over); then it exits and the
/// standby takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_serves_its_standbys_until_its_drain_ends() {
    let rig = Rig::new();
    let state = rig.dir.join("state");
    let mut first = Replica::start_with(&rig, "first", &["--shutdown-grace", "60"]).await;
    let slow = first.create("pvc-slow").await.unwrap();
    let second = Replica::start(&rig, "second").await;
    assert!(second.log().contains("standby"), "{}", second.log());

    // An attach the holder is still busy with when it is told to stop (attach-delay: the
    // local backend's slow-attach knob).
    std::fs::write(state.join("attach-delay"), "pvc-slow 15\n").unwrap();
    let c = first.client.clone();
    let slow_id = slow.volume_id.clone();
    let publish = tokio::spawn(async move {
        let req = pb::ControllerPublishVolumeRequest {
            volume_id: slow.volume_id.clone(),
            node_id: NODE.into(),
            volume_capability: Some(mount_cap("ext4")),
            volume_context: slow.volume_context.clone(),
            ..Default::default()
        };
        c.controller().controller_publish_volume(c.req(req)).await
    });
    wait_log(&first, "attach delayed").await;
    let pid = nix::unistd::Pid::from_raw(first.child.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    wait_log(&first, "draining in-flight RPCs").await;

    // Draining, the holder still holds the lock: the standby's call is still its.
    let during = second.create("pvc-during-drain").await;
    assert!(
        !publish.is_finished(),
        "the attach ended before the check (raise its delay): the test proved nothing"
    );
    let during = during.unwrap_or_else(|s| panic!("standby during the holder's drain: {s:?}"));
    assert!(
        first.child.try_wait().unwrap().is_none(),
        "the holder is gone"
    );

    // The attach finishes within the grace; the holder exits; the standby takes over and
    // has both volumes.
    let attached = publish.await.unwrap();
    assert!(attached.is_ok(), "{attached:?}\n{}", first.log());
    let until = Instant::now() + Duration::from_secs(30);
    while first.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < until,
            "the holder did not exit:\n{}",
            first.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = retry(&second, "pvc-during-drain").await;
    assert_eq!(again.volume_id, during.volume_id);
    let mut ids = second.list().await.unwrap();
    ids.sort();
    let mut want = vec![again.volume_id, slow_id];
    want.sort();
    assert_eq!(ids, want);
}

/// Waits (up to 30 s) for `what` in `r`'s log.
async fn wait_log(r: &Replica, what: &str) {
    let until = Instant::now() + Duration::from_secs(30);
    while !r.log().contains(what) {
        assert!(
            Instant::now() < until,
            "no '{what}' in the log:\n{}",
            r.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// CreateVolume through `r` until it is not UNAVAILABLE (a takeover in progress).
async fn retry(r: &Replica, name: &str) -> pb::Volume {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        match r.create(name).await {
            Ok(got) => return got,
            Err(s) if s.code() == Code::Unavailable => {
                assert!(Instant::now() < until, "no takeover: {s:?}\n{}", r.log());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(s) => panic!("{s:?}\n{}", r.log()),
        }
    }
}
