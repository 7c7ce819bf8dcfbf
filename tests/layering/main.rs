//! The architecture as a test: dependencies point down only.
//! - src/ is the rooms of layering/rooms.rs, each using only rooms on lower floors.
//! - No gRPC/protobuf types below `server/csi/` (driver, cloud, host, net, config).
//! - The driver core uses no HTTP client or syscall crates (those live in adapters).
//! - Adapters never see proto types.
//! - config/ uses nothing else of the crate: adapters and the core take its section structs.
//! - One module convention (`x/mod.rs`) and one unit-test placement (a `tests` module).
//! - No two files under src/ import each other (A uses an item B defines and B one of A's).
//! - No file under src/ has more than 400 lines of non-test code (DESIGN rule 13).
//! - tests/ holds the Rust test binaries, their support, bench, fuzz, ci; other harnesses live in tests/harness/.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// The import check: module tree, name resolution, uses per file, pairs.
mod conventions;
mod cycles;
mod items;
mod modules;
mod resolve;
mod rooms;
mod size;
mod tests_tree;
mod uses;

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Lines of code outside comments that mention a forbidden path.
fn violations(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let mut found = Vec::new();
    for file in rust_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for f in forbidden {
                if code.contains(f) {
                    found.push(format!(
                        "{}:{}: uses `{f}`: {}",
                        file.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    found
}

const GRPC: &[&str] = &[
    "tonic::",
    "prost::",
    "prost_types::",
    "crate::server",
    "csi::pb",
    "super::pb",
];

#[test]
fn no_grpc_below_server_csi() {
    let mut all = Vec::new();
    for dir in ["driver", "cloud", "host", "net", "config"] {
        all.extend(violations(dir, GRPC));
    }
    assert!(all.is_empty(), "layering violations:\n{}", all.join("\n"));
}

#[test]
fn driver_core_has_no_io_crates() {
    let v = violations(
        "driver",
        &[
            "reqwest",
            "nix::",
            "sys_mount",
            "libc::",
            "hyper::",
            "http_client",
        ],
    );
    assert!(
        v.is_empty(),
        "driver/ must go through ports:\n{}",
        v.join("\n")
    );
}

#[test]
fn ports_do_not_depend_on_the_core() {
    let mut all = Vec::new();
    for dir in ["cloud", "host", "net", "config"] {
        all.extend(violations(
            dir,
            &[
                "crate::driver",
                "crate::app",
                "crate::server",
                "crate::tools",
            ],
        ));
    }
    assert!(
        all.is_empty(),
        "ports/adapters must not use the core:\n{}",
        all.join("\n")
    );
}

#[test]
fn config_is_the_lowest_layer() {
    // Adapters and the core take config's typed sections as their options (one home per
    // cloud.conf key), so config/ must not use them back.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config");
    let mut found = Vec::new();
    for file in rust_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code
                .split("crate::")
                .skip(1)
                .any(|rest| !rest.starts_with("config"))
            {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "config/ must use nothing else of the crate:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_itself_sees_the_tree() {
    // Guards against the scan silently finding no files (a test that cannot fail).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(rust_files(&root.join("driver")).len() >= 3);
    // Every file is reached from a crate root, so the import check resolves them all.
    let sources = src_sources();
    let tree = modules::Tree::parse(&sources, "cinder_csi").unwrap();
    assert!(tree.unreached.is_empty(), "unreached: {:?}", tree.unreached);
    assert_eq!(tree.files.len(), sources.len());
    assert!(
        !violations("server/csi", &["tonic::"]).is_empty(),
        "server/csi/ uses tonic, so the scan must see it"
    );
}

/// Every .rs file under src/, by its path there (`driver/node/mod.rs`), with its text.
fn src_sources() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rel = |p: &Path| {
        let parts = p.strip_prefix(&root).unwrap().iter();
        parts
            .map(|c| c.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    };
    rust_files(&root)
        .into_iter()
        .map(|p| (rel(&p), std::fs::read_to_string(&p).unwrap()))
        .collect()
}

#[test]
fn no_two_files_import_each_other() {
    let tree = modules::Tree::parse(&src_sources(), "cinder_csi").unwrap();
    let pairs = cycles::pairs(&uses::file_uses(&tree));
    assert!(
        pairs.is_empty(),
        "{} pairs of files under src/ import each other:\n{}",
        pairs.len(),
        pairs.join("\n")
    );
}

/// A small crate with known pairs and known non-pairs, so the check above can fail.
#[test]
fn import_pairs_of_a_known_tree() {
    let files = [
        ("lib.rs", "mod app; mod plain; mod reexp; mod net; mod glob; mod x; mod y; mod odd;\n#[path = \"elsewhere/place.rs\"] mod place;"),
        // Child uses the parent's type via super::, the parent uses the child's: a pair.
        ("app/mod.rs", "mod child; pub struct Config; pub fn start() -> child::Worker { child::Worker(Config) }"),
        ("app/child.rs", "pub struct Worker(pub super::Config);"),
        // `mod child;` alone is no use of the child: no pair.
        ("plain/mod.rs", "mod child; pub struct Base;"),
        ("plain/child.rs", "pub fn make() -> super::Base { super::Base }"),
        // Re-exporting the child's item is a use of it: a pair.
        ("reexp/mod.rs", "mod child; pub use child::Thing; pub struct Base;"),
        ("reexp/child.rs", "pub struct Thing(pub super::Base);"),
        // client's `super::NetError` is error.rs's (re-exported by mod.rs): no pair.
        ("net/mod.rs", "mod client; mod error; pub use error::NetError; pub fn connect() -> client::Client { client::Client }"),
        ("net/client.rs", "use super::NetError; pub struct Client; impl Client { pub fn fail(&self) -> NetError { NetError } }"),
        ("net/error.rs", "pub struct NetError;"),
        // A glob import uses what the file then mentions: a pair.
        ("glob/mod.rs", "mod kids; pub const LIMIT: u32 = 3; pub fn unused() {} pub fn total() -> u32 { kids::count() }"),
        ("glob/kids.rs", "use super::*; pub fn count() -> u32 { let n = 1; assert!(n <= LIMIT); n }"),
        // An inline module's items are its file's; a macro body's paths count: a pair.
        ("x.rs", "mod inner { pub fn f() -> u8 { 1 } } pub fn g() { assert_eq!(crate::y::G, 0); }"),
        ("y.rs", "pub const G: u8 = 0; pub fn h() -> u8 { crate::place::p(); crate::x::inner::f() }"),
        // odd.rs's `mod sub;` is odd/sub.rs; a variant resolves to its enum: a pair.
        ("odd.rs", "mod sub; pub enum Kind { A, B } pub fn k() -> sub::S { sub::S }"),
        ("odd/sub.rs", "pub struct S; pub fn is_a(k: &super::Kind) -> bool { matches!(k, super::Kind::A) }"),
        ("elsewhere/place.rs", "pub fn p() {}"),
        ("stray.rs", "pub fn s() {}"),
        // The binary names the library by the crate's name.
        ("main.rs", "fn main() { demo::x::g() }"),
    ];
    let sources = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    let tree = modules::Tree::parse(&sources, "demo").unwrap();
    assert_eq!(tree.unreached, ["stray.rs"]);
    let uses = uses::file_uses(&tree);
    let edge = |a: &str, b: &str| uses[&(a.to_string(), b.to_string())].clone();
    assert_eq!(edge("y.rs", "elsewhere/place.rs"), ["p".to_string()].into());
    assert_eq!(edge("main.rs", "x.rs"), ["g".to_string()].into());
    assert_eq!(
        cycles::pairs(&uses),
        [
            "app/child.rs <-> app/mod.rs: child.rs uses Config; mod.rs uses Worker",
            "glob/kids.rs <-> glob/mod.rs: kids.rs uses LIMIT; mod.rs uses count",
            "odd.rs <-> odd/sub.rs: odd.rs uses S; sub.rs uses Kind",
            "reexp/child.rs <-> reexp/mod.rs: child.rs uses Base; mod.rs uses Thing",
            "x.rs <-> y.rs: x.rs uses G; y.rs uses f",
        ]
    );
}

#[test]
fn src_is_a_few_rooms() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut top: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    top.sort();
    let problems = rooms::entries(&top);
    assert!(
        problems.is_empty(),
        "src/ holds {} entries, not the rooms of tests/layering/rooms.rs:\n{}",
        top.len(),
        problems.join("\n")
    );
}

#[test]
fn rooms_point_down() {
    let tree = modules::Tree::parse(&src_sources(), "cinder_csi").unwrap();
    let uses = uses::file_uses(&tree);
    // The check sees uses across rooms (the core uses the cloud port), so it can fail.
    assert!(uses
        .keys()
        .any(|(a, b)| a.starts_with("driver/") && b.starts_with("cloud/")));
    let arrows = rooms::arrows(&uses);
    assert!(
        arrows.is_empty(),
        "{} uses under src/ do not point to a lower floor:\n{}",
        arrows.len(),
        arrows.join("\n")
    );
}

/// A small crate with known arrows, so the two checks above can fail.
#[test]
fn rooms_of_a_known_tree() {
    let files = [
        ("lib.rs", "pub mod config; pub mod cloud; pub mod host; pub mod driver; pub mod tools; mod stray;"),
        ("config/mod.rs", "mod up; pub struct C;"),
        // Up: config/ is the lowest floor.
        ("config/up.rs", "pub fn u() { crate::driver::d(); }"),
        // The same floor: cloud/ and host/ do not use each other.
        ("cloud/mod.rs", "pub struct V(pub crate::config::C); pub fn h() { crate::host::f() }"),
        ("host/mod.rs", "pub fn f() {}"),
        // Down: fine.
        ("driver/mod.rs", "pub fn d() -> crate::cloud::V { crate::cloud::V(crate::config::C) }"),
        ("tools/mod.rs", "pub fn t() { crate::driver::d() }"),
        ("stray.rs", "pub fn s() -> crate::config::C { crate::config::C }"),
        // The binary may use any room.
        ("main.rs", "fn main() { demo::tools::t() }"),
    ];
    let sources = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    let tree = modules::Tree::parse(&sources, "demo").unwrap();
    assert_eq!(
        rooms::arrows(&uses::file_uses(&tree)),
        [
            "cloud/mod.rs -> host/mod.rs: cloud/ uses host/, the same floor (f)",
            "config/up.rs -> driver/mod.rs: config/ uses driver/, up (d)",
            "stray.rs -> config/mod.rs: a file in no room (C)",
        ]
    );
    let top = ["cloud/", "config/", "lib.rs", "misc.rs"].map(String::from);
    let problems = rooms::entries(&top);
    assert_eq!(
        problems[0],
        "misc.rs: not a room of src/ (move it into one)"
    );
    assert!(problems.contains(&"tools/: a room that does not exist".to_string()));
}

#[test]
fn one_module_convention_and_one_test_placement() {
    let sources = src_sources();
    let mut problems = conventions::module_files(&sources);
    problems.extend(conventions::misplaced(&sources));
    assert!(
        problems.is_empty(),
        "{} files under src/ break the module or test convention:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Known breaches of both conventions, so the check above can fail.
#[test]
fn conventions_of_a_known_tree() {
    let files = [
        ("lib.rs", "mod a; mod b; mod c;"),
        ("a.rs", "mod x;"),
        ("a/x.rs", "#[test] fn stray() {}"),
        ("b/mod.rs", "#[cfg(test)] #[path = \"b_tests.rs\"] mod tests; #[cfg(test)] mod more_tests { #[tokio::test] async fn t() {} }"),
        ("b/b_tests.rs", "#[test] fn t() {}"),
        ("c/mod.rs", "#[cfg(test)] mod tests;"),
        ("c/tests/mod.rs", "mod deep; #[test] fn t() {}"),
        ("c/tests/deep.rs", "#[test] fn t() {}"),
        ("d.rs", "fn f() {} #[cfg(test)] mod tests { mod inner { #[test] fn t() {} } }"),
    ];
    let sources = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    assert_eq!(
        conventions::module_files(&sources),
        ["a.rs beside a/: move it to a/mod.rs"]
    );
    assert_eq!(
        conventions::misplaced(&sources),
        [
            "a/x.rs: fn stray: a test outside a `tests` module",
            "b/b_tests.rs: fn t: a test outside a `tests` module",
            "b/mod.rs: mod tests: #[path] (put the file where `mod` finds it)",
            "b/mod.rs: fn t: a test outside a `tests` module",
        ]
    );
}

/// `mod.rs` files that hold logic on purpose, each with its reason (a file that only declares and
/// re-exports fails the check while it is listed, so the list cannot go stale):
/// - host/fs/mod.rs: the filesystem registry (`FsKind`) sits beside the `mod` lines it mirrors,
///   so a new filesystem touches two files (its own and this one), not three.
const MOD_RS_REGISTRIES: &[&str] = &["host/fs/mod.rs"];

#[test]
fn mod_rs_only_declares_and_re_exports() {
    let found = conventions::logic_in_mod_rs(&src_sources());
    let problems = conventions::judge_mod_rs(&found, MOD_RS_REGISTRIES);
    assert!(
        problems.is_empty(),
        "mod.rs files hold more than `mod` and `use`:\n{}",
        problems.join("\n")
    );
}

/// Known breaches, so the check above can fail; a tests directory's mod.rs is not judged.
#[test]
fn mod_rs_of_a_known_tree() {
    let files = [
        ("lib.rs", "mod a; mod b; fn root() {}"),
        (
            "a/mod.rs",
            "//! A.\nmod x;\npub use x::X;\n#[cfg(test)]\nmod tests;",
        ),
        (
            "b/mod.rs",
            "mod y; pub struct B; impl B { fn f() {} } const C: u8 = 1;",
        ),
        ("b/tests/mod.rs", "mod deep; fn helper() {}"),
        ("c/mod.rs", "mod z;"),
    ];
    let sources = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect();
    let found = conventions::logic_in_mod_rs(&sources);
    assert_eq!(
        conventions::judge_mod_rs(&found, &["c/mod.rs"]),
        [
            "b/mod.rs: holds struct B, impl B, const C: move them into files of their own beside it",
            "c/mod.rs: in MOD_RS_REGISTRIES but only declares and re-exports: remove it",
        ]
    );
    assert!(conventions::judge_mod_rs(&found, &["b/mod.rs"]).is_empty());
}

/// Lines of non-test code a file under src/ may have (DESIGN rule 13; see layering/size.rs).
const MAX_LINES: usize = 400;

/// Over the limit on this branch while other branches of issue 15 split them. This list must
/// shrink to empty: the lead empties it after merging those branches, and the test fails as
/// soon as a file here is within the limit, so it cannot go stale.
const PENDING: &[&str] = &[];

/// Over the limit for good, each with why. None: the only generated code, the CSI protobuf
/// and gRPC types, is written to OUT_DIR by build.rs and included by `csi/mod.rs`.
const EXEMPT: &[(&str, &str)] = &[];

#[test]
fn no_source_file_over_400_lines() {
    let sources = src_sources();
    let tree = modules::Tree::parse(&sources, "cinder_csi").unwrap();
    let sizes = size::non_test_lines(&tree, &sources);
    // The rule's tests-only files include those the names say are tests (and no others
    // slip through: a file named so but built outside tests is counted).
    let test_only = size::test_only(&tree);
    let named = |f: &str| {
        let name = f.rsplit('/').next().unwrap();
        name == "tests.rs"
            || name.ends_with("_tests.rs")
            || name.starts_with("tests_")
            || f.split('/').any(|d| d == "tests")
    };
    let stray: Vec<_> = sizes.keys().filter(|f| named(f)).collect();
    assert!(
        stray.is_empty(),
        "test files built outside tests: {stray:?}"
    );
    assert!(test_only.len() >= 20, "tests-only files: {test_only:?}");
    assert!(sizes.len() >= 150, "only {} files measured", sizes.len());
    let problems = size::judge(&sizes, MAX_LINES, PENDING, EXEMPT);
    assert!(
        problems.is_empty(),
        "files under src/ over {MAX_LINES} lines of non-test code:\n{}",
        problems.join("\n")
    );
}

/// The counting rule and the lists on a small known tree, so the check above can fail.
#[test]
fn sizes_of_a_known_tree() {
    let code = |n: usize| "pub fn f() {}\n".repeat(n);
    let inline_tests = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
    let files = [
        ("lib.rs", "mod a; mod b; mod c; mod gone; #[cfg(test)] mod tests;\n#[cfg(any(test, feature = \"fake\"))]\nmod fake;\n".to_string()),
        // An inline test module at the end does not count: 3.
        ("a.rs", code(3) + inline_tests),
        // A test module declared at the top does not hide what follows: 2 (+ the lines
        // before it), and its file is not counted.
        ("b.rs", format!("#[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n{}", code(2))),
        ("b_tests.rs", code(50)),
        // An indented test-only inline module inside a module.
        ("c.rs", format!("mod inner {{\n    #[cfg(test)]\n    mod tests {{\n        fn t() {{}}\n    }}\n}}\n{}", code(1))),
        ("gone.rs", code(1)),
        // Test files, below a #[cfg(test)] module, are not counted.
        ("tests/mod.rs", "mod deep;\n".to_string()),
        ("tests/deep.rs", code(90)),
        // Built with a feature outside tests: counted.
        ("fake.rs", code(9)),
    ];
    let sources: BTreeMap<String, String> = files
        .iter()
        .map(|(f, t)| (f.to_string(), t.clone()))
        .collect();
    let tree = modules::Tree::parse(&sources, "demo").unwrap();
    let sizes = size::non_test_lines(&tree, &sources);
    let want: BTreeMap<String, usize> = [
        ("lib.rs", 3),
        ("a.rs", 3),
        ("b.rs", 2),
        ("c.rs", 3),
        ("gone.rs", 1),
        ("fake.rs", 9),
    ]
    .iter()
    .map(|(f, n)| (f.to_string(), *n))
    .collect();
    assert_eq!(sizes, want);
    assert_eq!(
        size::test_only(&tree),
        ["b_tests.rs", "tests/deep.rs", "tests/mod.rs"]
    );
    // Over 2: a.rs, lib.rs and fake.rs; fake.rs is exempt, lib.rs pending. b.rs is pending
    // but within the limit, and the file a list names must exist.
    let problems = size::judge(
        &sizes,
        2,
        &["lib.rs", "b.rs", "none.rs"],
        &[("fake.rs", "test")],
    );
    assert_eq!(
        problems,
        [
            "a.rs: 3 lines of non-test code, over 2: split it by job",
            "c.rs: 3 lines of non-test code, over 2: split it by job",
            "b.rs: 2 lines, within 2 now: remove it from PENDING",
            "none.rs: in PENDING but not a non-test file under src/: remove it from PENDING",
        ]
    );
    assert!(size::judge(&sizes, 9, &[], &[]).is_empty());
}
