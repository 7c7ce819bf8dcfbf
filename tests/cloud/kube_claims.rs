//! The Kubernetes API adapter of `--pvc-annotations` against a REAL kube-apiserver with RBAC
//! and TLS (tests/harness/kube-api/apiserver): a PVC's annotations read with the chart's rule through
//! a service account token (kubeconfig tokenFile, and in-cluster from the pod's files), with a
//! client certificate; 403 for an account without the rule, 404, a CA that does not sign the
//! server, an API server that does not answer. Skipped unless CINDER_CSI_KUBE_API_ENV is set.

use crate::support::kube_api_support;

use std::path::Path;

use cinder_csi::net::kube::{ApiAccess, ApiClaims, ClaimReader, KubeError};
use kube_api_support::KubeApi;

fn claims(access: ApiAccess) -> ApiClaims {
    ApiClaims::new(access).expect("client")
}

#[tokio::test]
async fn pvc_annotations_through_the_real_api_server() {
    let Some(api) = KubeApi::from_env("pvc_annotations_through_the_real_api_server") else {
        return;
    };
    let ns = api.var("KUBE_API_NS").to_string();
    let name = format!("claims-{}", std::process::id());
    let _pvc = api.pvc(
        &name,
        &[
            ("cinder.csi.openstack.org/affinity", "pvc-a, pvc-b"),
            (
                "cinder.csi.openstack.org/anti-affinity",
                "0b7e3c1a-5d7f-4a3e-9a43-2f1f4e0f6c11",
            ),
        ],
    );
    let want = |a: &std::collections::BTreeMap<String, String>| {
        assert_eq!(
            a["cinder.csi.openstack.org/affinity"], "pvc-a, pvc-b",
            "{a:?}"
        );
        assert_eq!(
            a["cinder.csi.openstack.org/anti-affinity"],
            "0b7e3c1a-5d7f-4a3e-9a43-2f1f4e0f6c11"
        );
        assert_eq!(a["test.cinder-csi/owner"], "kube-api-tests");
    };

    // The chart's rule (get on persistentvolumeclaims) through a service account token file,
    // a client certificate of system:masters, and in-cluster as a pod sees its account.
    let sa = claims(ApiAccess::from_kubeconfig(Path::new(api.var("KUBE_API_SA"))).unwrap());
    want(&sa.annotations(&ns, &name).await.unwrap());
    let admin = claims(ApiAccess::from_kubeconfig(Path::new(api.var("KUBE_API_ADMIN"))).unwrap());
    want(&admin.annotations(&ns, &name).await.unwrap());
    let pod = claims(
        ApiAccess::in_cluster(
            Path::new(api.var("KUBE_API_SA_DIR")),
            Some(api.var("KUBE_API_HOST")),
            Some(api.var("KUBE_API_PORT")),
        )
        .unwrap(),
    );
    want(&pod.annotations(&ns, &name).await.unwrap());
    println!("read PVC {ns}/{name} with a token file, a client certificate and in-cluster");

    // Missing PVC: the API server's 404, as a refusal naming it.
    let e = sa.annotations(&ns, "no-such-claim").await.unwrap_err();
    assert!(
        matches!(&e, KubeError::Refused { claim, why } if claim.ends_with("/no-such-claim") && why.contains("404")),
        "{e:?}"
    );

    // An account without the rule: 403, and the message says which rule is missing.
    let denied = claims(ApiAccess::from_kubeconfig(Path::new(api.var("KUBE_API_DENIED"))).unwrap());
    let e = denied.annotations(&ns, &name).await.unwrap_err();
    assert!(
        matches!(&e, KubeError::Refused { why, .. } if why.contains("403") && why.contains("get` on persistentvolumeclaims")),
        "{e:?}"
    );
    let shown = format!("{e} {e:?}");
    let token =
        std::fs::read_to_string(Path::new(api.var("KUBE_API_SA_DIR")).join("token")).unwrap();
    assert!(!shown.contains(token.trim()), "token in an error: {shown}");

    // No token: the API server's anonymous user may not read PVCs.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(api.var("KUBE_API_SA_DIR")).join("ca.crt"),
        tmp.path().join("ca.crt"),
    )
    .unwrap();
    std::fs::write(tmp.path().join("token"), "not-a-token").unwrap();
    let bad_token = claims(
        ApiAccess::in_cluster(
            tmp.path(),
            Some(api.var("KUBE_API_HOST")),
            Some(api.var("KUBE_API_PORT")),
        )
        .unwrap(),
    );
    let e = bad_token.annotations(&ns, &name).await.unwrap_err();
    assert!(
        matches!(&e, KubeError::Refused { why, .. } if why.contains("401")),
        "{e:?}"
    );

    // A CA that did not sign the server's certificate: no answer is trusted (Unavailable,
    // with the TLS cause).
    let other_ca = rcgen::generate_simple_self_signed(vec!["other-ca".into()]).unwrap();
    std::fs::write(tmp.path().join("ca.crt"), other_ca.cert.pem()).unwrap();
    let untrusted = claims(
        ApiAccess::in_cluster(
            tmp.path(),
            Some(api.var("KUBE_API_HOST")),
            Some(api.var("KUBE_API_PORT")),
        )
        .unwrap(),
    );
    let e = untrusted.annotations(&ns, &name).await.unwrap_err();
    assert!(
        matches!(&e, KubeError::Unavailable(m) if m.to_lowercase().contains("certificate")),
        "{e:?}"
    );

    // Nothing listens: Unavailable, so the provisioner retries.
    let mut gone = ApiAccess::from_kubeconfig(Path::new(api.var("KUBE_API_SA"))).unwrap();
    gone.server = url::Url::parse("https://127.0.0.1:9").unwrap();
    let e = claims(gone).annotations(&ns, &name).await.unwrap_err();
    assert!(matches!(&e, KubeError::Unavailable(_)), "{e:?}");
}
