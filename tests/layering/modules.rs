//! The module tree of the crate's sources: which file holds each module (`mod x;`,
//! `x.rs` or `x/mod.rs`, `#[path]`, inline `mod x { }`). Sources come in as text (path
//! under src/ → contents) so a test can build a tree in memory.

use std::collections::BTreeMap;

use syn::ItemMod;

use crate::items::name;

pub type ModId = usize;

/// A type and a fn (or a module and a fn) may share a name; macros have their own.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ns {
    Type,
    Value,
    Macro,
}

/// A named item and the file that defines it.
#[derive(Clone, Debug)]
pub struct Def {
    pub name: String,
    pub file: String,
    pub ns: Ns,
    /// fn, struct, enum, const, ...: a pattern can only name a few kinds.
    pub kind: &'static str,
    /// An enum's variants, for `use Enum::*`.
    pub variants: Vec<String>,
}

/// One `use` leaf; `alias` is None for a glob.
#[derive(Clone, Debug)]
pub struct Import {
    pub path: Vec<String>,
    pub alias: Option<String>,
    /// Written in a fn body: in scope there, but no re-export that paths can reach.
    pub block: bool,
}

#[derive(Default, Debug)]
pub struct Module {
    pub file: String,
    pub parent: Option<ModId>,
    pub root: ModId,
    pub children: BTreeMap<String, ModId>,
    pub defs: BTreeMap<String, Vec<Def>>,
    pub imports: Vec<Import>,
    /// Has item macros we cannot expand (`include_proto!`): a name looked up in it by
    /// path and not found is taken to be defined here (the code compiles, so it is).
    pub opaque: bool,
    /// Item-position macro calls, by macro name, expanded once every file is read.
    pub item_macros: Vec<String>,
    /// macro_rules name → the items its body defines (`ops!` defines `enum Op`).
    pub macro_made: BTreeMap<String, Vec<(String, Ns, &'static str)>>,
    /// Declared `#[cfg(test)]`, or inside such a module: never in a release build.
    pub test_only: bool,
}

pub struct Tree {
    pub mods: Vec<Module>,
    /// Every file read, with the module it is.
    pub files: Vec<(String, ModId, syn::File)>,
    /// The library's root, which the binary names by the crate's name.
    pub lib: Option<ModId>,
    pub lib_name: String,
    /// Source files that no crate root reaches by `mod` declarations.
    pub unreached: Vec<String>,
}

/// Where `mod x;` looks: `child` for plain declarations, `path_base` for `#[path]` ones.
pub struct Dirs {
    pub child: String,
    pub path_base: String,
}

impl Tree {
    pub fn parse(sources: &BTreeMap<String, String>, lib_name: &str) -> Result<Tree, String> {
        let mut t = Tree {
            mods: Vec::new(),
            files: Vec::new(),
            lib: None,
            lib_name: lib_name.to_string(),
            unreached: Vec::new(),
        };
        for root in ["lib.rs", "main.rs"] {
            if sources.contains_key(root) {
                let id = t.new_module(root, None);
                if root == "lib.rs" {
                    t.lib = Some(id);
                }
                t.load(sources, root, id, "")?;
            }
        }
        t.expand_item_macros();
        let read: Vec<&String> = t.files.iter().map(|(f, _, _)| f).collect();
        t.unreached = sources
            .keys()
            .filter(|f| !read.contains(f))
            .cloned()
            .collect();
        Ok(t)
    }

    fn new_module(&mut self, file: &str, parent: Option<ModId>) -> ModId {
        let id = self.mods.len();
        let root = parent.map_or(id, |p| self.mods[p].root);
        self.mods.push(Module {
            file: file.to_string(),
            parent,
            root,
            ..Module::default()
        });
        id
    }

    pub fn load(
        &mut self,
        sources: &BTreeMap<String, String>,
        file: &str,
        id: ModId,
        child_dir: &str,
    ) -> Result<(), String> {
        let text = sources
            .get(file)
            .ok_or_else(|| format!("{file}: no such file"))?;
        let ast = syn::parse_file(text).map_err(|e| format!("{file}: {e}"))?;
        let dirs = Dirs {
            child: child_dir.to_string(),
            path_base: parent_dir(file),
        };
        self.items(sources, id, &ast.items, &dirs)?;
        self.files.push((file.to_string(), id, ast));
        Ok(())
    }

    pub fn module(
        &mut self,
        sources: &BTreeMap<String, String>,
        parent: ModId,
        m: &ItemMod,
        dirs: &Dirs,
    ) -> Result<(), String> {
        let n = name(&m.ident);
        let file = self.mods[parent].file.clone();
        let child = self.new_module(&file, Some(parent));
        self.mods[parent].children.insert(n.clone(), child);
        self.mods[child].test_only = self.mods[parent].test_only || cfg_test(m);
        let path_attr = path_attr(m);
        if let Some((_, items)) = &m.content {
            // Items of an inline module belong to this file; its `mod`s look one level down.
            let sub = match path_attr {
                Some(p) => join(&dirs.path_base, &p),
                None => join(&dirs.child, &n),
            };
            let d = Dirs {
                child: sub.clone(),
                path_base: sub,
            };
            return self.items(sources, child, items, &d);
        }
        let (target, child_dir) = match path_attr {
            // A `#[path]` file keeps its own `mod`s beside it, like a mod.rs.
            Some(p) => {
                let f = join(&dirs.path_base, &p);
                let d = parent_dir(&f);
                (f, d)
            }
            None => {
                let flat = join(&dirs.child, &format!("{n}.rs"));
                let nested = join(&dirs.child, &format!("{n}/mod.rs"));
                let f = match (sources.contains_key(&flat), sources.contains_key(&nested)) {
                    (true, false) => flat,
                    (false, true) => nested,
                    (true, true) => return Err(format!("both {flat} and {nested} exist")),
                    (false, false) => return Err(format!("{file}: no file for `mod {n};`")),
                };
                (f, join(&dirs.child, &n))
            }
        };
        self.mods[child].file = target.clone();
        self.load(sources, &target, child, &child_dir)
    }
}

/// `#[cfg(test)]` exactly: `cfg(any(test, feature = ..))` builds outside tests too.
fn cfg_test(m: &ItemMod) -> bool {
    m.attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

fn path_attr(m: &ItemMod) -> Option<String> {
    m.attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn parent_dir(file: &str) -> String {
    file.rsplit_once('/')
        .map_or(String::new(), |(d, _)| d.to_string())
}

/// `base/rel` with `.` and `..` folded, paths relative to src/.
fn join(base: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in rel.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(p),
        }
    }
    parts.join("/")
}
