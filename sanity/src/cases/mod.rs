//! The cases. Each is an async fn over a [`Ctx`] with a group, a name that says what the spec
//! requires, and the capabilities it needs. Names are stable: `--filter`/`--skip` match them.

use futures::future::BoxFuture;

use crate::caps::Need;
use crate::check::CaseResult;
use crate::context::Ctx;

mod capabilities;
pub mod common;
mod create;
pub mod data;
mod get_expand_modify;
mod identity;
mod list_snapshots;
mod node_args;
mod node_data;
mod node_lifecycle;
mod node_paths;
mod publish;
mod snapshots;
mod volumes;

pub type CaseFn = for<'c, 'a> fn(&'c mut Ctx<'a>) -> BoxFuture<'c, CaseResult>;

pub struct Case {
    pub group: &'static str,
    pub name: &'static str,
    pub needs: &'static [Need],
    pub run: CaseFn,
}

impl Case {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.group, self.name)
    }
}

/// `case!(group, name, [needs...], async_fn)`.
macro_rules! case {
    ($group:expr, $name:expr, [$($need:expr),* $(,)?], $f:path) => {
        $crate::cases::Case {
            group: $group,
            name: $name,
            needs: &[$($need),*],
            run: |c| Box::pin($f(c)),
        }
    };
}
pub(crate) use case;

/// Every case, in the order they run.
pub fn all() -> Vec<Case> {
    let mut v = identity::cases();
    v.extend(capabilities::cases());
    v.extend(create::cases());
    v.extend(volumes::cases());
    v.extend(publish::cases());
    v.extend(get_expand_modify::cases());
    v.extend(snapshots::cases());
    v.extend(list_snapshots::cases());
    v.extend(node_args::cases());
    v.extend(node_paths::cases());
    v.extend(node_lifecycle::cases());
    v.extend(node_data::cases());
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_there_are_enough() {
        let all = super::all();
        let mut names: Vec<String> = all.iter().map(|c| c.full_name()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len(), "duplicate case names");
        assert!(n >= 80, "only {n} cases");
    }
}
