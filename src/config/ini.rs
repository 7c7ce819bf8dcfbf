//! A small gcfg-compatible INI parser that keeps line numbers.
//!
//! Syntax (the subset of git-config that gcfg, and so upstream, accepts):
//!
//! * `[Section]` and `[Section "subsection"]`. Section names are letters,
//!   digits and `-`, starting with a letter, and are case-insensitive.
//!   Subsection names are quoted, case-sensitive and must not be empty.
//!   Whitespace is allowed inside the brackets.
//! * `key = value`, `key=value`, and a bare `key` (a boolean `true`). Key
//!   names follow the section-name rules and are case-insensitive.
//! * `;` and `#` start a comment, on their own line or after a header or a
//!   value, unless inside double quotes.
//! * Values are trimmed. Double quotes may enclose any part of a value and
//!   keep whitespace, `;` and `#`; inside them `\"`, `\\`, `\n` and `\t` are
//!   escapes. Outside quotes a `\` must end the line: it continues the value
//!   on the next line.
//! * A leading UTF-8 BOM and `\r` line endings are accepted.
//!
//! Stricter than gcfg: a key repeated within one section of one file is an
//! error (gcfg silently keeps the last one), because a repeated key in a
//! hand-edited cloud.conf is almost always a mistake.

use std::collections::HashMap;
use std::path::Path;

use super::error::{quote, ConfigError, Location};
use super::quoted::{unescape, unquote_to_close, QuoteError};

/// One `[Section]` or `[Section "sub"]` header and the keys under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IniSection {
    /// Lower-cased section name (`global`).
    pub name: String,
    /// The name as written, for messages about sections cinder-csi ignores.
    pub raw_name: String,
    /// The subsection name, exactly as written (unescaped).
    pub subsection: Option<String>,
    /// Line of the header.
    pub line: usize,
    pub entries: Vec<IniEntry>,
}

impl IniSection {
    /// Label for messages, e.g. `[Global "east"]`.
    pub fn label(&self) -> String {
        let name = canonical_section(&self.name).unwrap_or(&self.raw_name);
        section_label(name, self.subsection.as_deref())
    }
}

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IniEntry {
    /// Lower-cased key name.
    pub key: String,
    /// `None` for a bare `key` (no `=`), otherwise the unquoted value.
    pub value: Option<String>,
    /// Line of the key.
    pub line: usize,
}

/// Canonical spelling of the sections cinder-csi reads, for messages.
fn canonical_section(lower: &str) -> Option<&'static str> {
    match lower {
        "global" => Some("Global"),
        "blockstorage" => Some("BlockStorage"),
        "metadata" => Some("Metadata"),
        _ => None,
    }
}

/// `[Global]`, `[Global "east"]`, or `[Name]` as given for unknown sections.
pub(crate) fn section_label(name: &str, subsection: Option<&str>) -> String {
    let name = canonical_section(&name.to_lowercase()).unwrap_or(name);
    match subsection {
        Some(sub) => format!("[{name} {}]", quote(sub)),
        None => format!("[{name}]"),
    }
}

/// Parses one file's text. `file` is used only in error locations.
pub(crate) fn parse(file: &Path, text: &str) -> Result<Vec<IniSection>, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut parser = Parser {
        file,
        lines,
        next: 0,
        sections: Vec::new(),
        seen: HashMap::new(),
    };
    parser.run()?;
    Ok(parser.sections)
}

struct Parser<'a> {
    file: &'a Path,
    lines: Vec<&'a str>,
    /// Index of the next physical line to read.
    next: usize,
    sections: Vec<IniSection>,
    /// (section, subsection, key) → first line, for duplicate detection.
    seen: HashMap<(String, Option<String>, String), usize>,
}

fn is_ws(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\r'
}

fn is_comment(c: char) -> bool {
    c == ';' || c == '#'
}

/// Splits a leading gcfg identifier off `s`: a letter, then letters, digits, `-`.
fn split_ident(s: &str) -> (&str, &str) {
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let ok = if i == 0 {
            c.is_alphabetic()
        } else {
            c.is_alphanumeric() || c == '-'
        };
        if !ok {
            break;
        }
        end = i + c.len_utf8();
    }
    s.split_at(end)
}

/// True when the rest of a line is empty, whitespace or a comment.
fn only_trailer(s: &str) -> bool {
    let s = s.trim_start_matches(is_ws);
    s.is_empty() || s.starts_with(is_comment)
}

impl<'a> Parser<'a> {
    fn syntax(&self, line: usize, message: String) -> ConfigError {
        ConfigError::Syntax {
            at: Location::at(self.file, line),
            message,
        }
    }

    fn run(&mut self) -> Result<(), ConfigError> {
        while self.next < self.lines.len() {
            let line_no = self.next + 1;
            let raw = self.lines[self.next];
            self.next += 1;
            let s = raw.trim_start_matches(is_ws);
            match s.chars().next() {
                None => {}
                Some(c) if is_comment(c) => {}
                Some('[') => self.header(line_no, s)?,
                Some(c) if c.is_alphabetic() => self.entry(line_no, s)?,
                Some(c) => {
                    return Err(self.syntax(
                        line_no,
                        format!(
                            "unexpected {} at the start of a line \
                             (expected a [Section] header, key = value, or a comment)",
                            quote(&c.to_string())
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    fn header(&mut self, line: usize, s: &str) -> Result<(), ConfigError> {
        let shown = s.trim_end_matches(is_ws);
        let bad = |why: &str| {
            self.syntax(
                line,
                format!("invalid section header {}: {why}", quote(shown)),
            )
        };
        let rest = s[1..].trim_start_matches(is_ws);
        let (name, rest) = split_ident(rest);
        if name.is_empty() {
            return Err(bad(
                "expected a section name (letters, digits and '-') after '['",
            ));
        }
        let mut rest = rest.trim_start_matches(is_ws);
        let mut subsection = None;
        if let Some(after) = rest.strip_prefix('"') {
            let (sub, after) = match unquote_to_close(after) {
                Ok(v) => v,
                Err(QuoteError::Unterminated) => {
                    return Err(bad("unterminated subsection name (missing closing '\"')"))
                }
                Err(QuoteError::Escape(e)) => {
                    return Err(bad(&format!(
                        "unknown escape sequence \\{e} in subsection name"
                    )))
                }
            };
            if sub.is_empty() {
                return Err(bad(
                    "empty subsection name (use [Global] for the default cloud)",
                ));
            }
            subsection = Some(sub);
            rest = after.trim_start_matches(is_ws);
        }
        let Some(after) = rest.strip_prefix(']') else {
            return Err(if rest.is_empty() || rest.starts_with(is_comment) {
                bad("missing ']'")
            } else if subsection.is_none() {
                bad(&format!(
                    "expected ']' or a quoted subsection name after {} \
                     (write [Section \"name\"])",
                    quote(name)
                ))
            } else {
                bad("expected ']' after the subsection name")
            });
        };
        if !only_trailer(after) {
            return Err(bad("unexpected text after ']'"));
        }
        self.sections.push(IniSection {
            name: name.to_lowercase(),
            raw_name: name.to_string(),
            subsection,
            line,
            entries: Vec::new(),
        });
        Ok(())
    }

    fn entry(&mut self, line: usize, s: &str) -> Result<(), ConfigError> {
        let (name, rest) = split_ident(s);
        // The whole run of key-like characters, to name a bad key in messages.
        let word_end = s
            .find(|c: char| is_ws(c) || c == '=' || is_comment(c))
            .unwrap_or(s.len());
        let word = &s[..word_end];
        let Some(section) = self.sections.last() else {
            return Err(self.syntax(
                line,
                format!(
                    "{word}: key outside any section (add a section header such as [Global] above it)"
                ),
            ));
        };
        let label = section.label();
        if word.len() != name.len() {
            let hint = if word.contains('_') {
                format!(" (did you mean {}?)", quote(&word.replace('_', "-")))
            } else {
                String::new()
            };
            return Err(self.syntax(
                line,
                format!(
                    "{label} {}: invalid key name: only letters, digits and '-' are allowed{hint}",
                    quote(word)
                ),
            ));
        }
        let key = name.to_lowercase();
        let rest = rest.trim_start_matches(is_ws);
        let value = if only_trailer(rest) {
            None
        } else if let Some(v) = rest.strip_prefix('=') {
            Some(self.value(line, &label, &key, v)?)
        } else {
            return Err(self.syntax(
                line,
                format!("{label} {key}: expected '=' after the key name"),
            ));
        };

        let section = self.sections.last_mut().expect("checked above");
        let id = (
            section.name.clone(),
            section.subsection.clone(),
            key.clone(),
        );
        if let Some(first) = self.seen.get(&id) {
            return Err(ConfigError::Key {
                at: Location::at(self.file, line),
                section: label,
                key,
                message: format!("duplicate key (already set on line {first})"),
            });
        }
        self.seen.insert(id, line);
        section.entries.push(IniEntry { key, value, line });
        Ok(())
    }

    /// Scans a value starting after `=`, following `\` line continuations.
    fn value(
        &mut self,
        line: usize,
        label: &str,
        key: &str,
        first: &str,
    ) -> Result<String, ConfigError> {
        let file = self.file;
        let err = |message: &str| ConfigError::Syntax {
            at: Location::at(file, line),
            message: format!("{label} {key}: {message}"),
        };
        let mut out = String::new();
        let mut pending_ws = String::new();
        let mut started = false;
        let mut in_quote = false;
        let mut segment = first;
        'segments: loop {
            let mut chars = segment.chars().peekable();
            while let Some(c) = chars.next() {
                if in_quote {
                    match c {
                        '"' => in_quote = false,
                        '\\' => match chars.next().map(|e| (e, unescape(e))) {
                            Some((_, Some(u))) => out.push(u),
                            Some((e, None)) => {
                                return Err(err(&format!(
                                    "unknown escape sequence \\{e} in quoted value \
                                     (use \\\", \\\\, \\n or \\t)"
                                )))
                            }
                            None => break,
                        },
                        _ => out.push(c),
                    }
                    continue;
                }
                match c {
                    ';' | '#' => break 'segments,
                    '"' => {
                        out.push_str(&pending_ws);
                        pending_ws.clear();
                        started = true;
                        in_quote = true;
                    }
                    '\\' => {
                        if chars.peek().is_some() {
                            return Err(err(
                                "a '\\' outside quotes must end the line (line continuation); \
                                 put the value in double quotes to use escapes",
                            ));
                        }
                        if self.next >= self.lines.len() {
                            return Err(err("line continuation '\\' at the end of the file"));
                        }
                        segment = self.lines[self.next];
                        self.next += 1;
                        continue 'segments;
                    }
                    c if is_ws(c) => {
                        if started {
                            pending_ws.push(c);
                        }
                    }
                    c => {
                        out.push_str(&pending_ws);
                        pending_ws.clear();
                        started = true;
                        out.push(c);
                    }
                }
            }
            if in_quote {
                return Err(err("unterminated quoted value (missing closing '\"')"));
            }
            break;
        }
        Ok(out)
    }
}
