//! Controller validation: cloud selection, auth-url, credential sets.

use super::super::{AuthMethod, AuthOptions, FixedEnv, GlobalConfig, Secret};
use super::parse;

const URL: &str = "auth-url = https://keystone.example/v3\n";

/// Resolves `[Global]` of `body` (prefixed with auth-url) and returns the method.
fn method(body: &str) -> Result<AuthMethod, String> {
    let cfg = parse(&format!("[Global]\n{URL}{body}"));
    cfg.resolve_clouds(&[], &FixedEnv::default())
        .map(|clouds| clouds[""].validate("").unwrap())
        .map_err(|e| e.to_string())
}

#[test]
fn usable_credential_sets() {
    let cases: &[(&str, AuthMethod)] = &[
        ("user-id = u\npassword = p\ntenant-id = t\n", AuthMethod::Password),
        ("username = u\nuser-domain-name = D\npassword = p\ntenant-id = t\n", AuthMethod::Password),
        ("username = u\ndomain-id = default\npassword = p\ntenant-name = t\n", AuthMethod::Password),
        ("user-id = u\npassword = p\ntenant-name = t\ntenant-domain-id = d\n", AuthMethod::Password),
        ("application-credential-id = a\napplication-credential-secret = s\n", AuthMethod::ApplicationCredential),
        ("application-credential-name = a\napplication-credential-secret = s\nuser-id = u\n", AuthMethod::ApplicationCredential),
        ("application-credential-name = a\napplication-credential-secret = s\nusername = u\nuser-domain-id = d\n", AuthMethod::ApplicationCredential),
        ("token = tok\n", AuthMethod::Token),
        ("trust-id = t\ntrustee-id = te\ntrustee-password = tp\n", AuthMethod::Trust),
        ("trust-id = t\nuser-id = u\npassword = p\n", AuthMethod::Trust),
        // Precedence when several are set: trust, token, app credential, password.
        ("token = tok\nuser-id = u\npassword = p\ntenant-id = t\n", AuthMethod::Token),
        ("application-credential-id = a\napplication-credential-secret = s\nuser-id = u\npassword = p\ntenant-id = t\n", AuthMethod::ApplicationCredential),
    ];
    for (body, want) in cases {
        assert_eq!(method(body), Ok(*want), "{body:?}");
    }
}

#[test]
fn unusable_configs_name_the_line_and_key() {
    let c = super::CONF;
    let cases: &[(&str, String)] = &[
        ("", format!("{c}:1: [Global] credentials: none set: use username or user-id with password, application-credential-id with application-credential-secret, token, or trust-id")),
        ("user-id = u\n", format!("{c}:3: [Global] user-id: set, but password is not")),
        ("password = p\n", format!("{c}:3: [Global] password: set, but neither username nor user-id is set")),
        ("username = u\npassword = p\ntenant-id = t\n", format!("{c}:3: [Global] username: needs a domain: set user-domain-name or user-domain-id (or domain-name/domain-id), or use user-id")),
        ("user-id = u\npassword = p\n", format!("{c}:4: [Global] password: set, but no project: set tenant-id or tenant-name")),
        ("user-id = u\npassword = p\ntenant-name = t\n", format!("{c}:5: [Global] tenant-name: needs a domain: set tenant-domain-name or tenant-domain-id (or domain-name/domain-id), or use tenant-id")),
        ("application-credential-id = a\n", format!("{c}:3: [Global] application-credential-id: set, but application-credential-secret is not")),
        ("application-credential-secret = s\n", format!("{c}:3: [Global] application-credential-secret: set, but neither application-credential-id nor application-credential-name is set")),
        ("application-credential-name = a\napplication-credential-secret = s\n", format!("{c}:3: [Global] application-credential-name: needs user-id, or username with user-domain-name/user-domain-id (or domain-name/domain-id)")),
        ("trust-id = t\ntrustee-password = tp\n", format!("{c}:3: [Global] trust-id: set, but no trustee: set trustee-id (or user-id)")),
        ("trust-id = t\ntrustee-id = te\n", format!("{c}:3: [Global] trust-id: set, but neither trustee-password nor password is set")),
        ("token = t\ncert-file = /c.pem\n", format!("{c}:4: [Global] cert-file: set without key-file (TLS client authentication needs both)")),
        ("token = t\nkey-file = /k.pem\n", format!("{c}:4: [Global] key-file: set without cert-file (TLS client authentication needs both)")),
    ];
    for (body, want) in cases {
        assert_eq!(method(body).unwrap_err(), *want, "{body:?}");
    }
}

#[test]
fn auth_url_is_required_and_must_be_http() {
    let cfg = parse(
        "[Global]\nregion = R\ntoken = t\n[Global \"east\"]\nauth-url = keystone:5000\ntoken = t\n",
    );
    let env = FixedEnv::default();
    assert_eq!(
        cfg.resolve_clouds(&[String::new()], &env).unwrap_err().to_string(),
        "/etc/config/cloud.conf:1: [Global] auth-url: not set (the controller needs the Keystone URL; set it here or use-clouds = true with clouds.yaml)"
    );
    assert_eq!(
        cfg.resolve_clouds(&["east".to_string()], &env)
            .unwrap_err()
            .to_string(),
        r#"/etc/config/cloud.conf:5: [Global "east"] auth-url: "keystone:5000" is not an http:// or https:// URL"#
    );
}

#[test]
fn cloud_names_select_sections() {
    let cfg = parse(&format!(
        "[Global]\n{URL}token = a\n[Global \"east\"]\n{URL}token = e\n[Global \"west\"]\n{URL}token = w\n"
    ));
    let env = FixedEnv::default();
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    let all = cfg
        .resolve_clouds(&names(&["east", "", "east"]), &env)
        .unwrap();
    assert_eq!(all.keys().collect::<Vec<_>>(), ["", "east"]);
    assert_eq!(
        all["east"].auth.token.as_ref().map(Secret::expose),
        Some("e")
    );

    let default = cfg.resolve_clouds(&[], &env).unwrap();
    assert_eq!(default.keys().collect::<Vec<_>>(), [""]);
}

#[test]
fn unknown_cloud_names_are_errors() {
    let env = FixedEnv::default();
    let cfg = parse(&format!(
        "[Global]\n{URL}token = a\n[Global \"west\"]\n{URL}token = w\n"
    ));
    assert_eq!(
        cfg.resolve_clouds(&["east".to_string()], &env)
            .unwrap_err()
            .to_string(),
        r#"cloud "east" (--cloud-name) is not defined: no [Global "east"] section in /etc/config/cloud.conf (defined: [Global], [Global "west"])"#
    );
    let cfg = parse("[Global \"west\"]\n[BlockStorage]\n");
    assert_eq!(
        cfg.resolve_clouds(&[], &env).unwrap_err().to_string(),
        r#"the default cloud (--cloud-name "") is not defined: no [Global] section in /etc/config/cloud.conf (defined: [Global "west"])"#
    );
    let cfg = parse("[BlockStorage]\n");
    assert_eq!(
        cfg.resolve_clouds(&[], &env).unwrap_err().to_string(),
        r#"the default cloud (--cloud-name "") is not defined: no [Global] section in /etc/config/cloud.conf (defined: none)"#
    );
}

#[test]
fn validate_works_on_configs_built_in_code() {
    let g = GlobalConfig {
        auth_url: Some("https://k/v3".into()),
        auth: AuthOptions {
            user_id: Some("u".into()),
            ..AuthOptions::default()
        },
        ..GlobalConfig::default()
    };
    assert_eq!(
        g.validate("x").unwrap_err().to_string(),
        r#"<cloud-config>: [Global "x"] user-id: set, but password is not"#
    );
}
