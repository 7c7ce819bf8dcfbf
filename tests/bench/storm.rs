//! Controller provisioning storm against the real OpenStack test cloud: N concurrent
//! CreateVolume, then N concurrent ControllerPublishVolume to one server, then teardown
//! (N unpublish, N delete). Reports wall time per phase and the Keystone, Cinder and Nova
//! requests the adapter made (its metrics hooks), as a Markdown table for docs/PERFORMANCE.md.
//!
//! Each RPC is played through the OpenStack adapter with the calls the controller makes for it
//! (the controller core is not on main yet): CreateVolume = name lookup + create + wait
//! available; Publish = volume get + server get + Nova attach + wait attached;
//! Unpublish = Nova detach + wait detached; Delete = volume get + delete.
//!
//! `CINDER_CSI_OSTACK_ENV=<state>/env.sh cargo bench --bench storm` (STORM_VOLUMES=50 by
//! default); without the env file it prints "skipped" and exits 0.

#[path = "../openstack_support/mod.rs"]
mod openstack_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cinder_csi::app::openstack_options;
use cinder_csi::cloud::openstack::{ApiMetrics, MetricsSnapshot, Op, OpenStack, Service};
use cinder_csi::cloud::{
    BlockStorage, CloudError, Compute, NewVolume, PageRequest, VolumeFilter, VolumeWait,
};
use cinder_csi::config;
use openstack_support::Cloud;
use tokio::time::Instant;

/// The sidecars' RPC timeout (upstream manifests: --timeout=3m).
const RPC_TIMEOUT: Duration = Duration::from_secs(180);

struct Phase {
    name: &'static str,
    wall: Duration,
    calls: MetricsSnapshot,
}

fn main() {
    let Some(cloud) = Cloud::from_env("the storm benchmark") else {
        return;
    };
    let n: usize = std::env::var("STORM_VOLUMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut created: Vec<String> = Vec::new();
    let result = rt.block_on(storm(&cloud, n, &mut created));
    // Whatever is left (a failed run) is removed as admin.
    for id in &created {
        cleanup(&cloud, id);
    }
    let (phases, total) = result.unwrap_or_else(|e| panic!("storm failed: {e}"));
    report(n, &phases, &total);
}

async fn storm(
    cloud: &Cloud,
    n: usize,
    created: &mut Vec<String>,
) -> Result<(Vec<Phase>, MetricsSnapshot), String> {
    let cfg = config::load(&[PathBuf::from(cloud.var("OSTACK_CLOUD_CONF"))])
        .map_err(|e| e.to_string())?;
    let clouds = cfg
        .resolve_clouds(&[], &config::ProcessEnv)
        .map_err(|e| e.to_string())?;
    let metrics = Arc::new(ApiMetrics::new());
    let os = Arc::new(
        OpenStack::new(
            "",
            &openstack_options(&clouds[""], &cfg.block_storage),
            metrics.clone(),
        )
        .await?,
    );
    let server = cloud.node(1, "ID").to_string();
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let start = metrics.snapshot();
    let mut phases = Vec::new();

    let ids = phase(&mut phases, "CreateVolume", &metrics, n, |i| {
        let os = os.clone();
        let name = format!("storm-{run}-{i}");
        async move {
            // Idempotency lookup by name, as CreateVolume does before creating.
            let found = os
                .list_volumes(
                    &VolumeFilter {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    &PageRequest::default(),
                )
                .await?;
            assert!(found.items.is_empty());
            let v = os
                .create_volume(&NewVolume {
                    name,
                    size_gib: 1,
                    ..Default::default()
                })
                .await?;
            let ready = os
                .wait_volume(&v.id, &VolumeWait::Available, Instant::now() + RPC_TIMEOUT)
                .await;
            Ok((v.id, ready.map(|_| ())))
        }
    })
    .await?;
    created.extend(ids.iter().map(|(id, _)| id.clone()));
    check("CreateVolume", &ids)?;

    let ids: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
    let published = phase(&mut phases, "ControllerPublishVolume", &metrics, n, |i| {
        let (os, id, server) = (os.clone(), ids[i].clone(), server.clone());
        async move {
            let v = os.get_volume(&id).await?;
            os.get_server(&server).await?;
            if v.attached_to(&server).is_none() {
                os.attach_volume(&server, &id, false).await?;
            }
            let r = os
                .wait_volume(
                    &id,
                    &VolumeWait::AttachedTo(server),
                    Instant::now() + RPC_TIMEOUT,
                )
                .await;
            Ok((id, r.map(|_| ())))
        }
    })
    .await?;
    check("ControllerPublishVolume", &published)?;

    let unpublished = phase(&mut phases, "ControllerUnpublishVolume", &metrics, n, |i| {
        let (os, id, server) = (os.clone(), ids[i].clone(), server.clone());
        async move {
            os.detach_volume(&server, &id).await?;
            let r = os
                .wait_volume(
                    &id,
                    &VolumeWait::DetachedFrom(server),
                    Instant::now() + RPC_TIMEOUT,
                )
                .await;
            Ok((id, r.map(|_| ())))
        }
    })
    .await?;
    check("ControllerUnpublishVolume", &unpublished)?;

    let deleted = phase(&mut phases, "DeleteVolume", &metrics, n, |i| {
        let (os, id) = (os.clone(), ids[i].clone());
        async move {
            let v = os.get_volume(&id).await?;
            assert!(v.attachments.is_empty());
            let r = os.delete_volume(&id, false).await;
            Ok((id, r))
        }
    })
    .await?;
    check("DeleteVolume", &deleted)?;
    let total = metrics.snapshot().since(&start);
    Ok((phases, total))
}

/// Run `n` copies of one RPC at once; record wall time and the requests they made.
async fn phase<F, Fut>(
    phases: &mut Vec<Phase>,
    name: &'static str,
    metrics: &ApiMetrics,
    n: usize,
    rpc: F,
) -> Result<Vec<(String, Result<(), CloudError>)>, String>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(String, Result<(), CloudError>), CloudError>>
        + Send
        + 'static,
{
    let before = metrics.snapshot();
    let started = Instant::now();
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(rpc(i))).collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(
            t.await
                .map_err(|e| format!("{name}: {e}"))?
                .map_err(|e| format!("{name}: {e}"))?,
        );
    }
    phases.push(Phase {
        name,
        wall: started.elapsed(),
        calls: metrics.snapshot().since(&before),
    });
    Ok(out)
}

fn check(name: &str, results: &[(String, Result<(), CloudError>)]) -> Result<(), String> {
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(id, r)| r.as_ref().err().map(|e| format!("{id}: {e}")))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{name}: {} failed: {}",
            failed.len(),
            failed.join("; ")
        ))
    }
}

fn cleanup(cloud: &Cloud, id: &str) {
    let Some(v) = cloud.api(true, "block-storage", "GET", &format!("/volumes/{id}")) else {
        return;
    };
    for a in v["volume"]["attachments"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let server = a["server_id"].as_str().unwrap_or_default();
        cloud.api(
            true,
            "compute",
            "DELETE",
            &format!("/servers/{server}/os-volume_attachments/{id}"),
        );
    }
    cloud.wait_for(&format!("volume {id} detached"), || {
        !matches!(
            cloud.volume_status(id).as_str(),
            "in-use" | "detaching" | "attaching" | "reserved" | "creating"
        )
    });
    cloud.api(true, "block-storage", "DELETE", &format!("/volumes/{id}"));
}

fn report(n: usize, phases: &[Phase], total: &MetricsSnapshot) {
    println!("\nController storm: {n} volumes, one server (through the OpenStack adapter)\n");
    println!("| phase | wall | Cinder | Nova | Keystone | errors |");
    println!("|---|---|---|---|---|---|");
    for p in phases {
        row(p.name, p.wall, &p.calls);
    }
    let wall: Duration = phases.iter().map(|p| p.wall).sum();
    row("total", wall, total);
    println!("\nper operation (total):");
    for op in Op::ALL {
        let o = total.get(*op);
        if o.requests > 0 {
            println!(
                "  {:<24} {:>5} requests, {:>3} errors, mean {:>7.1} ms",
                op.name(),
                o.requests,
                o.errors,
                o.latency_total.as_secs_f64() * 1000.0 / o.requests as f64
            );
        }
    }
    let all = total.requests(Service::Cinder)
        + total.requests(Service::Nova)
        + total.requests(Service::Keystone);
    println!(
        "\n{all} requests = {:.1} per volume (upstream: 309-338 for 20 volumes = 15.5-16.9 per volume)",
        all as f64 / n as f64
    );
    assert_eq!(
        total.requests(Service::Keystone),
        1,
        "the whole storm must cost one Keystone token request"
    );
}

fn row(name: &str, wall: Duration, c: &MetricsSnapshot) {
    println!(
        "| {name} | {:.1} s | {} | {} | {} | {} |",
        wall.as_secs_f64(),
        c.requests(Service::Cinder),
        c.requests(Service::Nova),
        c.requests(Service::Keystone),
        c.errors(Service::Cinder) + c.errors(Service::Nova) + c.errors(Service::Keystone)
    );
}
