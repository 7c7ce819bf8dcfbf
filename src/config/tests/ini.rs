//! The gcfg-compatible INI layer: quoting, comments, case, continuation.

use super::super::ini::{parse as parse_ini, IniEntry};
use super::conf;

/// Parses `[S]\n<line>` and returns the single entry.
fn one(line: &str) -> IniEntry {
    let text = format!("[S]\n{line}\n");
    let sections = parse_ini(conf(), &text).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    assert_eq!(sections.len(), 1, "{line:?}");
    assert_eq!(sections[0].entries.len(), 1, "{line:?}");
    sections[0].entries[0].clone()
}

#[test]
fn values_are_unquoted_trimmed_and_unescaped() {
    let cases: &[(&str, Option<&str>)] = &[
        ("k = v", Some("v")),
        ("k=v", Some("v")),
        ("k   =    spaced out value   ", Some("spaced out value")),
        ("\tk\t=\tv\t", Some("v")),
        ("k =", Some("")),
        ("k = \"\"", Some("")),
        ("k", None),
        ("k   ", None),
        ("k ; comment", None),
        ("k = v ; trailing comment", Some("v")),
        ("k = v # trailing comment", Some("v")),
        ("k = v;no space needed", Some("v")),
        ("k = \" keep  spaces \"", Some(" keep  spaces ")),
        ("k = \"a;b#c\"", Some("a;b#c")),
        ("k = \"p@ss;w#rd\" ; comment", Some("p@ss;w#rd")),
        // What the chart renders for a password with every special character.
        ("k = \"p#a;s\\\\w\\\"o=d\\n\" # c", Some("p#a;s\\w\"o=d\n")),
        ("k = a\"b c\"d", Some("ab cd")),
        ("k = \"say \\\"hi\\\"\"", Some("say \"hi\"")),
        ("k = \"back\\\\slash\"", Some("back\\slash")),
        ("k = \"line\\nbreak\"", Some("line\nbreak")),
        ("k = \"tab\\there\"", Some("tab\there")),
        ("k = http://x:5000/v3", Some("http://x:5000/v3")),
        ("k = a=b=c", Some("a=b=c")),
        ("k = ünïcödé", Some("ünïcödé")),
        ("k = x \" y \"", Some("x  y ")),
    ];
    for (line, want) in cases {
        let entry = one(line);
        assert_eq!(entry.key, "k", "{line:?}");
        assert_eq!(entry.value.as_deref(), *want, "{line:?}");
        assert_eq!(entry.line, 2, "{line:?}");
    }
}

#[test]
fn line_continuation_joins_lines_and_keeps_the_key_line() {
    let text = "[S]\nk = first \\\n  second\nnext = 1\n";
    let sections = parse_ini(conf(), text).unwrap();
    let entries = &sections[0].entries;
    assert_eq!(entries[0].value.as_deref(), Some("first   second"));
    assert_eq!(entries[0].line, 2);
    assert_eq!(entries[1].key, "next");
    assert_eq!(entries[1].line, 4);
}

#[test]
fn comments_blank_lines_bom_and_crlf() {
    let text = "\u{feff}; leading comment\r\n# another\r\n\r\n   \r\n[S] ; header comment\r\nk = v\r\n  ; indented comment\r\n";
    let sections = parse_ini(conf(), text).unwrap();
    assert_eq!(sections.len(), 1);
    assert_eq!(sections[0].line, 5);
    assert_eq!(sections[0].entries[0].value.as_deref(), Some("v"));
    assert_eq!(sections[0].entries[0].line, 6);
}

#[test]
fn section_and_key_names_are_case_insensitive_subsections_are_not() {
    let text =
        "[GLOBAL]\nAuth-URL = a\n[global \"East\"]\nRegion = r\n[ Global  \"east\" ]\nregion = s\n";
    let sections = parse_ini(conf(), text).unwrap();
    let got: Vec<_> = sections
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.subsection.as_deref(),
                s.entries[0].key.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("global", None, "auth-url"),
            ("global", Some("East"), "region"),
            ("global", Some("east"), "region"),
        ]
    );
    assert_eq!(sections[1].label(), "[Global \"East\"]");
}

#[test]
fn subsection_names_take_escapes() {
    let sections = parse_ini(conf(), "[Global \"a \\\"b\\\" c\"]\n").unwrap();
    assert_eq!(sections[0].subsection.as_deref(), Some("a \"b\" c"));
}

#[test]
fn same_section_twice_in_one_file_is_one_section_for_duplicates() {
    // gcfg allows a section to reopen; a key set in both halves is a duplicate.
    let ok = parse_ini(conf(), "[S]\na = 1\n[T]\n[s]\nb = 2\n").unwrap();
    assert_eq!(ok.len(), 3);
    let err = parse_ini(conf(), "[S]\na = 1\n[T]\n[s]\nA = 2\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "/etc/config/cloud.conf:5: [s] a: duplicate key (already set on line 2)"
    );
}

#[test]
fn through_parse_str_case_insensitive_keys_land_in_fields() {
    let cfg = super::parse(
        "[gLoBaL]\nAUTH-URL = https://k/v3\n[blockstorage]\nRESCAN-ON-RESIZE\n[METADATA]\nSearch-Order = metadataService\n",
    );
    assert_eq!(cfg.globals[""].auth_url.as_deref(), Some("https://k/v3"));
    assert!(cfg.block_storage.rescan_on_resize);
    assert_eq!(
        cfg.metadata.search_order,
        [super::super::MetadataSource::MetadataService]
    );
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
}
