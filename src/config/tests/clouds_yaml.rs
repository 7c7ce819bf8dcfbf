//! clouds.yaml: mapping, precedence, search path, secure.yaml, errors.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::super::{
    parse_str, search_paths, AuthOptions, ClientEnv, EndpointType, FixedEnv, GlobalConfig,
    Location, Secret, TlsOptions,
};

const FULL: &str = r#"
clouds:
  openstack:
    auth:
      auth_url: https://keystone.example:5000/v3
      username: alice
      password: "yaml-pw"
      user_id: u-1
      project_id: p-1
      project_name: project
      project_domain_id: pd-1
      project_domain_name: ProjectDomain
      user_domain_id: ud-1
      user_domain_name: UserDomain
      domain_id: d-1
      domain_name: Default
      application_credential_id: ac-1
      application_credential_name: appcred
      application_credential_secret: ac-secret
      token: tok-1
      trust_id: t-1
    region_name: RegionOne
    interface: internal
    cacert: /etc/ssl/ca.pem
    cert: /etc/ssl/client.crt
    key: /etc/ssl/client.key
    verify: false
    identity_api_version: 3
    auth_type: password
"#;

/// A sandbox: a temp dir with `cwd/`, `home/` and `site/`, and an env that
/// points at them (so the machine's own clouds.yaml never leaks in).
struct Sandbox {
    dir: TempDir,
    env: FixedEnv,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["cwd", "home/.config/openstack", "site", "etc"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let env = FixedEnv {
            current_dir: Some(dir.path().join("cwd")),
            home_dir: Some(dir.path().join("home")),
            site_config_dir: Some(dir.path().join("site")),
            ..FixedEnv::default()
        };
        Self { dir, env }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn set(&mut self, var: &str, value: &Path) {
        self.env
            .vars
            .insert(var.into(), value.display().to_string());
    }

    /// Resolves `[Global]` of `conf` with this sandbox's environment.
    fn resolve(&self, conf: &str) -> Result<GlobalConfig, String> {
        let cfg = parse_str(Path::new(super::CONF), conf).map_err(|e| e.to_string())?;
        cfg.resolve_clouds(&[], &self.env)
            .map(|mut clouds| clouds.remove("").unwrap())
            .map_err(|e| e.to_string())
    }
}

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[test]
fn every_clouds_yaml_key_maps_to_global_config() {
    let sb = Sandbox::new();
    let yaml = sb.write("etc/clouds.yaml", FULL);
    let g = sb
        .resolve(&format!(
            "[Global]\nuse-clouds = true\nclouds-file = {}\n",
            yaml.display()
        ))
        .unwrap();
    let from = Location::file(&yaml);
    let want = GlobalConfig {
        auth_url: some("https://keystone.example:5000/v3"),
        auth: AuthOptions {
            username: some("alice"),
            password: Some(Secret::new("yaml-pw")),
            user_id: some("u-1"),
            project_id: some("p-1"),
            project_name: some("project"),
            project_domain_id: some("pd-1"),
            project_domain_name: some("ProjectDomain"),
            user_domain_id: some("ud-1"),
            user_domain_name: some("UserDomain"),
            domain_id: some("d-1"),
            domain_name: some("Default"),
            application_credential_id: some("ac-1"),
            application_credential_name: some("appcred"),
            application_credential_secret: Some(Secret::new("ac-secret")),
            token: Some(Secret::new("tok-1")),
            trust_id: some("t-1"),
            ..AuthOptions::default()
        },
        region: some("RegionOne"),
        endpoint_type: Some(EndpointType::Internal),
        tls: TlsOptions {
            ca_file: Some("/etc/ssl/ca.pem".into()),
            cert_file: Some("/etc/ssl/client.crt".into()),
            key_file: Some("/etc/ssl/client.key".into()),
            insecure: Some(true),
        },
        use_clouds: true,
        clouds_file: Some(yaml.clone()),
        defined_at: g.defined_at.clone(),
        origins: g.origins.clone(),
        ..GlobalConfig::default()
    };
    assert_eq!(g, want);
    assert_eq!(g.origin("auth-url"), Some(&from));
    assert_eq!(g.origin("tls-insecure"), Some(&from));
    assert_eq!(g.origin("os-endpoint-type"), Some(&from));
    assert_eq!(
        g.origin("use-clouds"),
        Some(&Location::at(Path::new(super::CONF), 2))
    );
}

#[test]
fn explicit_cloud_conf_values_win() {
    let sb = Sandbox::new();
    let yaml = sb.write("etc/clouds.yaml", FULL);
    let g = sb
        .resolve(&format!(
            "[Global]\nuse-clouds = true\nclouds-file = {}\nauth-url = https://conf/v3\n\
             password = conf-pw\nregion = ConfRegion\nos-endpoint-type = admin\ntls-insecure = false\n",
            yaml.display()
        ))
        .unwrap();
    assert_eq!(g.auth_url.as_deref(), Some("https://conf/v3"));
    assert_eq!(
        g.auth.password.as_ref().map(Secret::expose),
        Some("conf-pw")
    );
    assert_eq!(g.region.as_deref(), Some("ConfRegion"));
    assert_eq!(g.endpoint_type, Some(EndpointType::Admin));
    assert_eq!(
        g.tls.insecure,
        Some(false),
        "verify: false must not override tls-insecure = false"
    );
    assert_eq!(
        g.auth.username.as_deref(),
        Some("alice"),
        "unset keys still come from clouds.yaml"
    );
    assert_eq!(
        g.origin("auth-url"),
        Some(&Location::at(Path::new(super::CONF), 4))
    );
}

#[test]
fn use_clouds_false_ignores_clouds_yaml() {
    let mut sb = Sandbox::new();
    let yaml = sb.write("etc/clouds.yaml", FULL);
    sb.set("OS_CLIENT_CONFIG_FILE", &yaml);
    let err = sb.resolve("[Global]\ncloud = openstack\n").unwrap_err();
    assert!(err.contains("auth-url: not set"), "{err}");
}

#[test]
fn search_path_order() {
    let mut sb = Sandbox::new();
    let yaml =
        |url: &str| format!("clouds:\n  c:\n    auth:\n      auth_url: {url}\n      token: t\n");
    let conf = "[Global]\nuse-clouds = true\n";
    let url = |sb: &Sandbox| sb.resolve(conf).unwrap().auth_url.unwrap();

    sb.write("site/clouds.yaml", &yaml("https://site/v3"));
    assert_eq!(url(&sb), "https://site/v3");
    sb.write(
        "home/.config/openstack/clouds.yaml",
        &yaml("https://home/v3"),
    );
    assert_eq!(url(&sb), "https://home/v3");
    sb.write("cwd/clouds.yaml", &yaml("https://cwd/v3"));
    assert_eq!(url(&sb), "https://cwd/v3");
    // $OS_CLIENT_CONFIG_FILE comes first, but a missing one is skipped (upstream).
    sb.set("OS_CLIENT_CONFIG_FILE", &sb.path("etc/absent.yaml"));
    assert_eq!(url(&sb), "https://cwd/v3");
    let env_file = sb.write("etc/env.yaml", &yaml("https://env/v3"));
    sb.set("OS_CLIENT_CONFIG_FILE", &env_file);
    assert_eq!(url(&sb), "https://env/v3");
    // clouds-file beats everything.
    let explicit = sb.write("etc/explicit.yaml", &yaml("https://explicit/v3"));
    let conf = format!("{conf}clouds-file = {}\n", explicit.display());
    assert_eq!(
        sb.resolve(&conf).unwrap().auth_url.unwrap(),
        "https://explicit/v3"
    );

    assert_eq!(
        search_paths(&sb.env, "OS_CLIENT_CONFIG_FILE", &[], "clouds.yaml"),
        [
            env_file,
            sb.path("cwd/clouds.yaml"),
            sb.path("home/.config/openstack/clouds.yaml"),
            sb.path("site/clouds.yaml"),
        ]
    );
}

#[test]
fn client_env_defaults_and_extra_dirs() {
    struct OnlyVars;
    impl ClientEnv for OnlyVars {
        fn var(&self, name: &str) -> Option<String> {
            (name == "HOME").then(|| "/home/u".to_string())
        }
        fn current_dir(&self) -> Option<PathBuf> {
            None
        }
    }
    assert_eq!(
        search_paths(
            &OnlyVars,
            "OS_CLIENT_CONFIG_FILE",
            &[Path::new("/x")],
            "secure.yaml"
        ),
        [
            PathBuf::from("/x/secure.yaml"),
            PathBuf::from("/home/u/.config/openstack/secure.yaml"),
            PathBuf::from("/etc/openstack/secure.yaml"),
        ]
    );
}

#[test]
fn cloud_selection_cloud_key_then_os_cloud_then_single_entry() {
    let mut sb = Sandbox::new();
    let two = "clouds:\n  a:\n    auth: {auth_url: 'https://a/v3', token: t}\n  b:\n    auth: {auth_url: 'https://b/v3', token: t}\n";
    let yaml = sb.write("cwd/clouds.yaml", two);
    let c = yaml.display().to_string();

    assert_eq!(
        sb.resolve("[Global]\nuse-clouds = true\n").unwrap_err(),
        format!(
            r#"{c}: cannot choose a cloud (clouds: "a", "b"): set cloud = <name> in [Global] or OS_CLOUD"#
        )
    );
    sb.env.vars.insert("OS_CLOUD".into(), "b".into());
    assert_eq!(
        sb.resolve("[Global]\nuse-clouds = true\n")
            .unwrap()
            .auth_url
            .unwrap(),
        "https://b/v3"
    );
    assert_eq!(
        sb.resolve("[Global]\nuse-clouds = true\ncloud = a\n")
            .unwrap()
            .auth_url
            .unwrap(),
        "https://a/v3"
    );
    assert_eq!(
        sb.resolve("[Global]\nuse-clouds = true\ncloud = prod\n")
            .unwrap_err(),
        format!(r#"{c}: cloud "prod" (from cloud in [Global]) is not defined (clouds: "a", "b")"#)
    );
    sb.env.vars.insert("OS_CLOUD".into(), "staging".into());
    assert_eq!(
        sb.resolve("[Global]\nuse-clouds = true\n").unwrap_err(),
        format!(r#"{c}: cloud "staging" (from OS_CLOUD) is not defined (clouds: "a", "b")"#)
    );
}

#[test]
fn secure_yaml_overrides_clouds_yaml_but_not_cloud_conf() {
    let sb = Sandbox::new();
    sb.write(
        "cwd/clouds.yaml",
        "clouds:\n  c:\n    auth:\n      auth_url: https://k/v3\n      user_id: u\n      password: from-clouds\n      project_id: p\n    region_name: R\n",
    );
    let secure = sb.write(
        "cwd/secure.yaml",
        "clouds:\n  c:\n    auth:\n      password: from-secure\n  other:\n    auth:\n      password: x\n",
    );
    let g = sb.resolve("[Global]\nuse-clouds = true\n").unwrap();
    assert_eq!(
        g.auth.password.as_ref().map(Secret::expose),
        Some("from-secure")
    );
    assert_eq!(g.origin("password"), Some(&Location::file(&secure)));
    assert_eq!(g.region.as_deref(), Some("R"));

    let g = sb
        .resolve("[Global]\nuse-clouds = true\npassword = from-conf\n")
        .unwrap();
    assert_eq!(
        g.auth.password.as_ref().map(Secret::expose),
        Some("from-conf")
    );

    // $OS_CLIENT_SECURE_FILE comes before the file beside clouds.yaml.
    let mut sb = sb;
    let env_secure = sb.write(
        "etc/s.yaml",
        "clouds:\n  c:\n    auth:\n      password: from-env\n",
    );
    sb.set("OS_CLIENT_SECURE_FILE", &env_secure);
    let g = sb.resolve("[Global]\nuse-clouds = true\n").unwrap();
    assert_eq!(
        g.auth.password.as_ref().map(Secret::expose),
        Some("from-env")
    );
}

#[test]
fn endpoint_type_spellings_and_precedence() {
    let sb = Sandbox::new();
    let cases: &[(&str, EndpointType)] = &[
        ("interface: internalURL", EndpointType::Internal),
        ("interface: admin", EndpointType::Admin),
        (
            "endpoint_type: admin\n    interface: internal",
            EndpointType::Admin,
        ),
        ("verify: true", EndpointType::Public),
    ];
    for (extra, want) in cases {
        sb.write(
            "cwd/clouds.yaml",
            &format!(
                "clouds:\n  c:\n    auth: {{auth_url: 'https://k/v3', token: t}}\n    {extra}\n"
            ),
        );
        let g = sb.resolve("[Global]\nuse-clouds = true\n").unwrap();
        assert_eq!(g.endpoint_type(), *want, "{extra}");
    }
}

#[test]
fn clouds_yaml_errors() {
    let sb = Sandbox::new();
    let conf = "[Global]\nuse-clouds = true\n";
    let site = sb.path("site/clouds.yaml");
    let cwd = sb.path("cwd/clouds.yaml");

    // No clouds.yaml anywhere.
    assert_eq!(
        sb.resolve(conf).unwrap_err(),
        format!(
            "/etc/config/cloud.conf:2: [Global] use-clouds: true, but no clouds.yaml was found (searched: {}, {}, {})",
            cwd.display(),
            sb.path("home/.config/openstack/clouds.yaml").display(),
            site.display()
        )
    );
    // Explicit clouds-file that does not exist.
    let absent = sb.path("etc/absent.yaml");
    assert_eq!(
        sb.resolve(&format!("{conf}\nclouds-file = {}\n", absent.display()))
            .unwrap_err(),
        format!(
            "/etc/config/cloud.conf:4: [Global] clouds-file: {}: file not found",
            absent.display()
        )
    );

    let c = site.display().to_string();
    let cases: &[(&str, &str, String)] = &[
        (
            "bad YAML",
            "clouds:\n  c:\n    auth:\n      auth_url: 'unterminated\n",
            format!("{c}:5: invalid YAML: found unexpected end of stream at line 5 column 1, while scanning a quoted scalar"),
        ),
        (
            "a list where a string is expected",
            "clouds:\n  c:\n    auth:\n      password: [a, b]\n",
            format!("{c}:4: invalid YAML: clouds.c.auth.password: invalid type: sequence, expected a string"),
        ),
        (
            "clouds is not a mapping",
            "clouds: [a, b]\n",
            format!("{c}:1: invalid YAML: clouds: invalid type: sequence, expected a map"),
        ),
        (
            "no clouds at all",
            "# empty\n",
            format!(r#"{c}: cannot choose a cloud (clouds: none): set cloud = <name> in [Global] or OS_CLOUD"#),
        ),
        (
            "bad interface",
            "clouds:\n  c:\n    auth: {auth_url: 'https://k/v3', token: t}\n    interface: private\n",
            format!(r#"{c}: clouds.c.interface: "private" is not an endpoint type (use public, internal or admin)"#),
        ),
        (
            "clouds.yaml without auth_url",
            "clouds:\n  c:\n    auth: {token: t}\n",
            "/etc/config/cloud.conf:1: [Global] auth-url: not set here nor in clouds.yaml (auth.auth_url)".to_string(),
        ),
    ];
    for (what, yaml, want) in cases {
        std::fs::write(&site, yaml).unwrap();
        assert_eq!(sb.resolve(conf).unwrap_err(), *want, "case: {what}");
    }
}

#[test]
fn named_cloud_with_its_own_clouds_yaml_entry() {
    let sb = Sandbox::new();
    let yaml = sb.write(
        "etc/clouds.yaml",
        "clouds:\n  east-prod:\n    auth: {auth_url: 'https://east/v3', application_credential_id: a, application_credential_secret: s}\n    region_name: East\n",
    );
    let cfg = parse_str(
        Path::new(super::CONF),
        &format!(
            "[Global \"east\"]\nuse-clouds = true\nclouds-file = {}\ncloud = east-prod\n",
            yaml.display()
        ),
    )
    .unwrap();
    let clouds = cfg.resolve_clouds(&["east".to_string()], &sb.env).unwrap();
    assert_eq!(clouds["east"].region.as_deref(), Some("East"));
    assert_eq!(
        clouds["east"].validate("east").unwrap(),
        super::super::AuthMethod::ApplicationCredential
    );
    // The parsed config itself is untouched: resolution works on a copy.
    assert_eq!(cfg.globals["east"].region, None);
}

#[test]
fn plain_scalars_keep_their_exact_text() {
    // Unquoted numbers must not lose leading zeros or precision.
    let sb = Sandbox::new();
    sb.write(
        "cwd/clouds.yaml",
        "clouds:\n  c:\n    auth:\n      auth_url: https://k/v3\n      user_id: 00123\n      password: 0123456789012345678901234567890\n      project_id: 1e3\n",
    );
    let g = sb.resolve("[Global]\nuse-clouds = true\n").unwrap();
    assert_eq!(g.auth.user_id.as_deref(), Some("00123"));
    assert_eq!(
        g.auth.password.as_ref().map(Secret::expose),
        Some("0123456789012345678901234567890")
    );
    assert_eq!(g.auth.project_id.as_deref(), Some("1e3"));
}
