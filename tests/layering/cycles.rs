//! Pairs of files that use each other's items, one report line per pair.

use crate::uses::Uses;

/// `a.rs <-> b.rs: a.rs uses X, Y; b.rs uses Z`, sorted, each pair once (a < b).
pub fn pairs(uses: &Uses) -> Vec<String> {
    let mut out = Vec::new();
    for ((a, b), a_uses) in uses {
        let Some(b_uses) = uses.get(&(b.clone(), a.clone())) else {
            continue;
        };
        if a < b {
            let list = |s: &std::collections::BTreeSet<String>| {
                s.iter().cloned().collect::<Vec<_>>().join(", ")
            };
            out.push(format!(
                "{a} <-> {b}: {} uses {}; {} uses {}",
                short(a, b),
                list(a_uses),
                short(b, a),
                list(b_uses)
            ));
        }
    }
    out.sort();
    out
}

/// The file's name, or its whole path when both files have the same name (two mod.rs).
fn short<'a>(file: &'a str, other: &str) -> &'a str {
    let base = |f: &'a str| f.rsplit('/').next().unwrap_or(f);
    if base(file) == other.rsplit('/').next().unwrap_or(other) {
        file
    } else {
        base(file)
    }
}
