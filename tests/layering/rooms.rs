//! The rooms of src/ and their floors: which top-level entries exist, and that every use of an
//! item points from a room down to a lower floor (docs/ARCHITECTURE.md "Rooms").

use crate::uses::Uses;

/// The rooms from the bottom floor up. A file may use items of its own room and of rooms on
/// lower floors; rooms on one floor do not use each other.
pub const FLOORS: &[&[&str]] = &[
    &["config"],
    &["net"],
    &["cloud", "host"],
    &["driver"],
    &["server"],
    &["app"],
    &["tools"],
];

/// The crate roots beside the rooms: lib.rs declares them, main.rs (the binary) is above all.
pub const ROOTS: &[&str] = &["lib.rs", "main.rs"];

/// What src/'s top level holds that is neither a room nor a crate root, and each room missing.
pub fn entries(top: &[String]) -> Vec<String> {
    let rooms: Vec<&str> = FLOORS.iter().flat_map(|f| f.iter().copied()).collect();
    let mut out = Vec::new();
    for e in top {
        let room = e.trim_end_matches('/');
        if !rooms.contains(&room) && !ROOTS.contains(&e.as_str()) {
            out.push(format!("{e}: not a room of src/ (move it into one)"));
        }
    }
    for room in rooms {
        if !top.iter().any(|e| e.trim_end_matches('/') == room) {
            out.push(format!("{room}/: a room that does not exist"));
        }
    }
    out
}

/// The floor of the room a file (`driver/node/stage.rs`) is in; None for a crate root or a
/// file in no room.
fn floor(file: &str) -> Option<(usize, &str)> {
    let (room, _) = file.split_once('/')?;
    FLOORS
        .iter()
        .position(|f| f.contains(&room))
        .map(|n| (n, room))
}

/// Every use that does not point down, one line each, sorted: a file using a room on its own
/// floor or above, a file in no room, and lib.rs using anything but what it declares.
pub fn arrows(uses: &Uses) -> Vec<String> {
    let mut out = Vec::new();
    for ((a, b), items) in uses {
        if a == "main.rs" {
            continue;
        }
        let list = items.iter().cloned().collect::<Vec<_>>().join(", ");
        let (Some((fa, ra)), Some((fb, rb))) = (floor(a), floor(b)) else {
            out.push(format!("{a} -> {b}: a file in no room ({list})"));
            continue;
        };
        if ra != rb && fb >= fa {
            let how = if fb == fa { "the same floor" } else { "up" };
            out.push(format!("{a} -> {b}: {ra}/ uses {rb}/, {how} ({list})"));
        }
    }
    out.sort();
    out
}
