//! The chart's `secret.data` → cloud.conf rendering, read back by the driver's own parser.
//! Needs the Helm binary: `tests/ci/30-deploy.sh` runs it with `HELM=... -- --ignored`.

use std::path::Path;
use std::process::Command;

/// Every character that is special to cloud.conf (comments, quotes, escapes, continuation),
/// to YAML or to Go templates.
const PASSWORD: &str = "p#a;s s\\w\"o'r=d {{ x }}\ttab\nline\\";
const APP_SECRET: &str = " lead;ing#and trailing ";

fn render(helm: &str, values: &Path) -> String {
    let out = Command::new(helm)
        .args([
            "template",
            "r",
            "charts/cinder-csi",
            "-s",
            "templates/secret.yaml",
            "-f",
        ])
        .arg(values)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run helm");
    assert!(
        out.status.success(),
        "helm template: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[ignore = "needs helm: run by tests/ci/30-deploy.sh"]
fn secret_data_values_parse_back_unchanged() {
    let helm = std::env::var("HELM").expect("HELM=path/to/helm");
    let dir = tempfile::tempdir().unwrap();
    let values = serde_json::json!({"secret": {"create": true, "data": {
        "Global": {
            "auth-url": "https://keystone:5000/v3", "user-id": "u", "tenant-id": "t",
            "password": PASSWORD, "tls-insecure": true,
        },
        "Global \"east\"": {
            "auth-url": "http://k:5000/v3", "application-credential-id": "ac",
            "application-credential-secret": APP_SECRET,
        },
        "BlockStorage": {"node-volume-attach-limit": 25},
    }}});
    let values = serde_norway::to_string(&values).unwrap();
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).unwrap();

    let doc: serde_norway::Value = serde_norway::from_str(&render(&helm, &file)).unwrap();
    let text = doc["stringData"]["cloud.conf"]
        .as_str()
        .expect("stringData.cloud.conf");
    let conf = cinder_csi::config::parse_str(Path::new("cloud.conf"), text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let clouds = conf
        .resolve_clouds(
            &["".to_string(), "east".to_string()],
            &cinder_csi::config::FixedEnv::default(),
        )
        .unwrap();
    let global = &clouds[""];
    assert_eq!(
        global.auth.password.as_ref().map(|p| p.expose()),
        Some(PASSWORD),
        "{text}"
    );
    assert_eq!(global.auth_url.as_deref(), Some("https://keystone:5000/v3"));
    assert!(global.tls.is_insecure());
    assert_eq!(
        clouds["east"]
            .auth
            .application_credential_secret
            .as_ref()
            .map(|p| p.expose()),
        Some(APP_SECRET)
    );
    assert_eq!(conf.block_storage.node_volume_attach_limit, 25);
}
