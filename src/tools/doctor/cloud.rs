//! Cloud checks for one configured cloud: Keystone auth, the catalog, microversions (OpenStack
//! adapter), then through the cloud port: quota headroom, the node's Nova server and whether
//! its zone is one Cinder has. Judgements are functions of the answers, tested with fixed
//! answers and the fake cloud.

use std::future::Future;
use std::time::Duration;

use super::report::Check;
use crate::cloud::openstack::diagnose::{ApiLevel, SessionReport};
use crate::cloud::openstack::OpenStack;
use crate::cloud::{Capacity, Cloud, CloudError, CloudResult, Server, GIB};
use crate::driver::types::topology_value;

/// Below this much quota headroom a new volume may not fit.
pub const LOW_QUOTA_GIB: u64 = 10;

/// `[Global]` or `[Global "name"]`.
pub fn label(name: &str) -> String {
    if name.is_empty() {
        "[Global]".to_string()
    } else {
        format!("[Global \"{name}\"]")
    }
}

/// One call bounded by `timeout`; a timeout is an Unavailable error.
pub async fn bounded<T>(
    timeout: Duration,
    what: &str,
    fut: impl Future<Output = CloudResult<T>>,
) -> CloudResult<T> {
    tokio::time::timeout(timeout, fut)
        .await
        .unwrap_or_else(|_| {
            Err(CloudError::Unavailable {
                message: format!("{what}: no answer within {}s", timeout.as_secs()),
                request_id: Default::default(),
            })
        })
}

/// What to do about a cloud error, by kind.
fn fix_for(e: &CloudError) -> &'static str {
    match e {
        CloudError::Unauthorized { .. } => {
            "check the credentials in cloud.conf: username or user-id with password, or \
             application-credential-id/-name with its secret, and the user's and project's \
             domain"
        }
        CloudError::Forbidden { .. } => {
            "the user needs a role (member) on the project named in cloud.conf"
        }
        CloudError::BadRequest { .. } => "auth-url must be the Keystone URL (https://host:5000/v3)",
        CloudError::Unavailable { .. } => {
            "is auth-url reachable from the pod? check DNS, HTTP(S)_PROXY/NO_PROXY, firewalls \
             and, for https, ca-file"
        }
        CloudError::Unsupported(_) => "check region and os-endpoint-type in cloud.conf",
        _ => "see the message",
    }
}

/// Keystone: a token for the configured credentials.
pub fn keystone(cloud: &str, answer: &CloudResult<SessionReport>) -> Check {
    let name = format!("keystone {}", label(cloud));
    match answer {
        Ok(s) => Check::ok(
            name,
            format!(
                "token for {} (project id {})",
                s.auth,
                s.project_id
                    .as_deref()
                    .unwrap_or("none: the token is unscoped")
            ),
        ),
        Err(e) => Check::fail(name, e.to_string(), fix_for(e)),
    }
}

/// The catalog: a Cinder v3 and a Nova endpoint for the configured region and interface.
pub fn catalog(cloud: &str, s: &SessionReport) -> Vec<Check> {
    let one = |service: &str, url: &Result<String, String>| {
        let name = format!("catalog {service} {}", label(cloud));
        match url {
            Ok(u) => Check::ok(name, u.clone()),
            Err(e) => Check::fail(
                name,
                e.clone(),
                "set region / os-endpoint-type in cloud.conf to ones the catalog offers, or ask \
                 the cloud's operator to register the endpoint",
            ),
        }
    };
    vec![one("cinder v3", &s.cinder_url), one("nova", &s.nova_url)]
}

/// A service's microversion against what the driver's features need.
pub fn microversion(service: &str, cloud: &str, answer: &CloudResult<ApiLevel>) -> Check {
    let name = format!("{service} microversion {}", label(cloud));
    match answer {
        Ok(l) if l.missing.is_empty() => Check::ok(
            name,
            format!(
                "sending {} (cloud offers up to {}; every feature needs at most {})",
                l.using, l.cloud_max, l.needed_for_all
            ),
        ),
        Ok(l) => Check::warn(
            name,
            format!(
                "sending {} (cloud offers up to {}): {}",
                l.using,
                l.cloud_max,
                l.missing.join("; ")
            ),
            format!(
                "those features fail with a message naming the version; everything else works. \
                 A cloud offering {} or more has them all",
                l.needed_for_all
            ),
        ),
        Err(e) => Check::fail(
            name,
            e.to_string(),
            "the service's version document must be reachable at the catalog URL",
        ),
    }
}

/// Quota headroom (`gigabytes`, the project's Cinder quota).
pub fn quota(cloud: &str, answer: &CloudResult<Capacity>) -> Check {
    let name = format!("quota {}", label(cloud));
    let fix = "raise the project's volume gigabytes quota (openstack quota set --gigabytes N \
               PROJECT) or delete unused volumes";
    match answer {
        Ok(Capacity {
            available_bytes: None,
            ..
        }) => Check::ok(name, "no gigabytes limit"),
        Ok(Capacity {
            available_bytes: Some(b),
            maximum_volume_bytes,
        }) => {
            let gib = b / GIB;
            let max = maximum_volume_bytes
                .map(|m| format!(", at most {} GiB per volume", m / GIB))
                .unwrap_or_default();
            let detail = format!("{gib} GiB left of the gigabytes quota{max}");
            if gib == 0 {
                Check::fail(name, format!("{detail}: every CreateVolume fails"), fix)
            } else if gib < LOW_QUOTA_GIB {
                Check::warn(name, detail, fix)
            } else {
                Check::ok(name, detail)
            }
        }
        Err(e) => Check::fail(name, e.to_string(), fix_for(e)),
    }
}

/// The node's Nova server: it exists in the project and is running.
pub fn server(cloud: &str, id: &str, answer: &CloudResult<Server>) -> Check {
    let name = format!("nova server {}", label(cloud));
    match answer {
        Ok(s) => {
            let detail = format!(
                "{id} ({}), status {}, availability zone {}",
                s.name,
                s.status,
                s.availability_zone.as_deref().unwrap_or("(none)")
            );
            if s.status.eq_ignore_ascii_case("ACTIVE") {
                Check::ok(name, detail)
            } else {
                Check::warn(
                    name,
                    detail,
                    "attaching to a server that is not ACTIVE fails",
                )
            }
        }
        Err(e) if e.is_not_found() => Check::fail(
            name,
            format!("no Nova server {id} in the project the credentials are scoped to"),
            "the node id must be this node's Nova instance UUID, and the controller's project \
             must own the nodes' servers",
        ),
        Err(e) => Check::fail(name, e.to_string(), fix_for(e)),
    }
}

/// The node's topology zone value against Cinder's zones (as the controller maps them: the
/// name itself or its label form).
pub fn zones(
    cloud: &str,
    answer: &CloudResult<Vec<String>>,
    node_zone: Option<&str>,
    ignore_volume_az: bool,
) -> Check {
    let name = format!("availability zones {}", label(cloud));
    let zones = match answer {
        Ok(z) => z,
        Err(e) => return Check::fail(name, e.to_string(), fix_for(e)),
    };
    let listed = if zones.is_empty() {
        "none".to_string()
    } else {
        zones.join(", ")
    };
    let Some(value) = node_zone else {
        return Check::ok(
            name,
            format!("Cinder has {listed} (no node zone to compare: run the doctor on a node, or give --server UUID)"),
        );
    };
    let matching: Vec<&String> = zones
        .iter()
        .filter(|z| z.as_str() == value || topology_value(z) == value)
        .collect();
    match matching.as_slice() {
        [one] => Check::ok(
            name,
            format!("node zone {value} is Cinder's {one:?} (Cinder has {listed})"),
        ),
        [] if ignore_volume_az => Check::warn(
            name,
            format!("node zone {value} is not a Cinder zone (Cinder has {listed})"),
            "ignore-volume-az = true: volumes are created in Cinder's default zone; fine when \
             every node can attach from it",
        ),
        [] => Check::fail(
            name,
            format!(
                "node zone {value} is not a Cinder zone (Cinder has {listed}): volumes for pods \
                 on this node are asked for in a zone Cinder does not have"
            ),
            "make the Nova and Cinder zone names match, or set [BlockStorage] \
             ignore-volume-az = true when Cinder has one zone for all",
        ),
        several => Check::fail(
            name,
            format!(
                "node zone {value} is the label form of several Cinder zones ({})",
                several
                    .iter()
                    .map(|z| format!("{z:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "rename the Cinder zones so their label forms differ",
        ),
    }
}

/// Everything the OpenStack adapter alone can say. `false` when Keystone refused: nothing
/// after it can work.
pub async fn openstack(cloud: &str, os: &OpenStack, timeout: Duration) -> (Vec<Check>, bool) {
    let session = bounded(timeout, "Keystone", os.session_report()).await;
    let mut out = vec![keystone(cloud, &session)];
    let Ok(s) = session else {
        return (out, false);
    };
    out.extend(catalog(cloud, &s));
    if s.cinder_url.is_ok() {
        let l = bounded(timeout, "Cinder versions", os.cinder_level()).await;
        out.push(microversion("cinder", cloud, &l));
    }
    if s.nova_url.is_ok() {
        let l = bounded(timeout, "Nova versions", os.nova_level()).await;
        out.push(microversion("nova", cloud, &l));
    }
    (out, s.cinder_url.is_ok())
}

/// What the cloud port answers: quota, the node's server, zones. `server_id` is the node to
/// check (its zone is compared when `node_zone` is not known).
pub async fn port(
    cloud: &Cloud,
    server_id: Option<&str>,
    node_zone: Option<&str>,
    ignore_volume_az: bool,
    timeout: Duration,
) -> Vec<Check> {
    let mut out = Vec::new();
    let cap = bounded(timeout, "quota", cloud.placement.capacity(None, None)).await;
    out.push(quota(&cloud.name, &cap));
    let mut zone = node_zone.map(str::to_string);
    if let Some(id) = server_id {
        let s = bounded(timeout, "Nova", cloud.servers.get_server(id)).await;
        out.push(server(&cloud.name, id, &s));
        if zone.is_none() {
            zone = s
                .ok()
                .and_then(|s| s.availability_zone)
                .map(|z| topology_value(&z));
        }
    }
    let z = bounded(
        timeout,
        "Cinder zones",
        cloud.placement.availability_zones(),
    )
    .await;
    out.push(zones(&cloud.name, &z, zone.as_deref(), ignore_volume_az));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::fake::FakeCloud;
    use crate::tools::doctor::report::Status;

    fn session(cinder: Result<&str, &str>) -> SessionReport {
        SessionReport {
            auth: "password of user demo for project demo".into(),
            project_id: Some("p1".into()),
            cinder_url: cinder.map(String::from).map_err(String::from),
            nova_url: Ok("http://nova/v2.1".into()),
        }
    }

    #[test]
    fn keystone_and_catalog() {
        let c = keystone("", &Ok(session(Ok("http://c/v3"))));
        assert_eq!(c.status, Status::Ok);
        assert_eq!(c.name, "keystone [Global]");
        let refused = CloudError::Unauthorized {
            message: "Keystone refused the password of user demo".into(),
            request_id: Default::default(),
        };
        let c = keystone("east", &Err(refused));
        assert_eq!(c.status, Status::Fail);
        assert_eq!(c.name, "keystone [Global \"east\"]");
        assert!(c.fix.unwrap().contains("credentials"));
        let checks = catalog(
            "",
            &session(Err("the catalog has no block-storage endpoint")),
        );
        assert_eq!(checks[0].status, Status::Fail);
        assert!(checks[0].fix.as_deref().unwrap().contains("region"));
        assert_eq!(checks[1].status, Status::Ok);
    }

    #[test]
    fn quota_headroom() {
        let cap = |b: Option<u64>| {
            Ok(Capacity {
                available_bytes: b,
                maximum_volume_bytes: None,
            })
        };
        assert_eq!(quota("", &cap(None)).status, Status::Ok);
        assert_eq!(quota("", &cap(Some(100 * GIB))).status, Status::Ok);
        assert_eq!(quota("", &cap(Some(3 * GIB))).status, Status::Warn);
        let c = quota("", &cap(Some(0)));
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("every CreateVolume fails"), "{c:?}");
    }

    #[test]
    fn zone_names_as_the_controller_maps_them() {
        let z = Ok(vec!["nova".to_string(), "zone 1".to_string()]);
        assert_eq!(zones("", &z, Some("nova"), false).status, Status::Ok);
        // A node reports "zone 1" as its label form.
        let c = zones("", &z, Some("zone-1"), false);
        assert_eq!(c.status, Status::Ok, "{c:?}");
        let c = zones("", &z, Some("az9"), false);
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("Cinder has nova, zone 1"), "{c:?}");
        assert_eq!(zones("", &z, Some("az9"), true).status, Status::Warn);
        assert_eq!(zones("", &z, None, false).status, Status::Ok);
        let twins = Ok(vec!["zone 1".to_string(), "zone:1".to_string()]);
        assert_eq!(
            zones("", &twins, Some("zone-1"), false).status,
            Status::Fail
        );
    }

    #[tokio::test]
    async fn port_checks_against_the_fake_cloud() {
        let fake = FakeCloud::new();
        fake.add_server("s1", "nova");
        let cloud = fake.cloud("");
        let t = Duration::from_secs(5);
        let checks = port(&cloud, Some("s1"), None, false, t).await;
        assert!(checks.iter().all(|c| c.status == Status::Ok), "{checks:?}");
        assert_eq!(checks.len(), 3);
        // The node's zone from its server when the node did not say.
        assert!(checks[2].detail.contains("node zone nova"), "{checks:?}");

        let checks = port(&cloud, Some("gone"), Some("az9"), false, t).await;
        assert_eq!(checks[1].status, Status::Fail, "{checks:?}");
        assert!(checks[1].detail.contains("no Nova server gone"));
        assert_eq!(checks[2].status, Status::Fail, "{checks:?}");

        fake.set_quota_gib(Some(0));
        let checks = port(&cloud, None, None, false, t).await;
        assert_eq!(checks.len(), 2);
        assert_eq!(checks[0].status, Status::Fail, "{checks:?}");
    }
}
