//! The standalone Kubernetes API server of `tests/harness/kube-api/apiserver up` for the
//! `--pvc-annotations` tests: its env file, kubectl as its admin, PVCs made and deleted.
//! The tests run only when `CINDER_CSI_KUBE_API_ENV` names that env file; otherwise they print
//! "skipped: ..." and pass, so `cargo test` needs no API server (tests/ci/50-openstack.sh and
//! 20-cargo-test bring one up and set it).
#![allow(dead_code)] // each test file uses a different part

use std::collections::BTreeMap;
use std::process::Command;

pub const ENV_VAR: &str = "CINDER_CSI_KUBE_API_ENV";

pub struct KubeApi {
    pub vars: BTreeMap<String, String>,
}

impl KubeApi {
    pub fn from_env(test: &str) -> Option<KubeApi> {
        let Some(path) = std::env::var_os(ENV_VAR) else {
            println!(
                "skipped: {test} needs the real Kubernetes API server; run \
                 `tests/harness/kube-api/apiserver up` and set {ENV_VAR}=<state>/env.sh"
            );
            return None;
        };
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{ENV_VAR}={}: {e}", path.to_string_lossy()));
        let vars = text
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Some(KubeApi { vars })
    }

    pub fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("{key} missing from the kube-api env file"))
    }

    /// kubectl as system:masters in the test namespace; panics with its stderr on failure.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        use std::io::Write;
        let mut child = Command::new(self.var("KUBECTL"))
            .args([
                "--kubeconfig",
                self.var("KUBE_API_ADMIN"),
                "-n",
                self.var("KUBE_API_NS"),
            ])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A PVC with these annotations (no StorageClass: nothing provisions it, the test plays
    /// the provisioner); deleted when the guard drops.
    pub fn pvc(&self, name: &str, annotations: &[(&str, &str)]) -> PvcGuard<'_> {
        let mut yaml = format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\n  annotations:\n"
        );
        yaml.push_str("    test.cinder-csi/owner: kube-api-tests\n");
        for (k, v) in annotations {
            yaml.push_str(&format!("    {k}: {}\n", serde_json::to_string(v).unwrap()));
        }
        yaml.push_str(
            "spec:\n  accessModes: [ReadWriteOnce]\n  storageClassName: none\n  resources: {requests: {storage: 1Gi}}\n",
        );
        self.kubectl(&["apply", "-f", "-"], Some(&yaml));
        PvcGuard {
            api: self,
            name: name.to_string(),
        }
    }
}

pub struct PvcGuard<'a> {
    api: &'a KubeApi,
    pub name: String,
}

impl Drop for PvcGuard<'_> {
    fn drop(&mut self) {
        let _ = Command::new(self.api.var("KUBECTL"))
            .args([
                "--kubeconfig",
                self.api.var("KUBE_API_ADMIN"),
                "-n",
                self.api.var("KUBE_API_NS"),
            ])
            .args([
                "delete",
                "pvc",
                &self.name,
                "--ignore-not-found",
                "--wait=false",
            ])
            .output();
    }
}
