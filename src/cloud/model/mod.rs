//! Cinder's rules, written once: which status allows which operation on a volume, a snapshot,
//! a backup or a group snapshot, judged on the port's own types. Pure: no storage, no clock,
//! no I/O. The fake (memory) and the local backend (files + loop devices) look their objects
//! up, gather the facts a rule asks for, ask the rule, and store what follows. Each rule's file
//! holds its refusals beside it (what was wrong, with the ids, worded once on each variant);
//! the adapters take them as one [`Refusal`] and turn it into their `CloudError` with
//! [`Refusal::into_error`]. What differs between the clouds the
//! adapters stand for (the fake keeps Cinder's codes) is a named knob of their [`Profile`],
//! never a rule written twice.

mod copies;
mod groups;
mod profile;
mod refusal;
mod uses;
mod volumes;

#[cfg(test)]
mod tests;

pub use copies::{
    backup_from_snapshot, backup_volume, clone_from, delete_copy, restore_from, snapshot, CopyUse,
};
pub use groups::{delete_group_snapshot, group_member};
pub use profile::Profile;
pub use refusal::Refusal;
pub use uses::{copy_uses, copying, restoring};
pub use volumes::{
    attach, delete_volume, detach, extend, new_volume_size, retype, zone, VolumeUse,
};
