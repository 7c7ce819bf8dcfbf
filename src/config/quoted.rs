//! gcfg's double-quoted strings: the escapes allowed inside quotes, and a quoted
//! subsection name read up to its closing quote (values are scanned in `ini.rs`, since
//! they may continue over lines).

/// The character an escape `\c` inside quotes stands for (gcfg's set).
pub(crate) fn unescape(c: char) -> Option<char> {
    match c {
        '"' => Some('"'),
        '\\' => Some('\\'),
        'n' => Some('\n'),
        't' => Some('\t'),
        _ => None,
    }
}

/// Why a quoted string did not parse.
pub(crate) enum QuoteError {
    Unterminated,
    Escape(char),
}

/// Unescapes a quoted string whose opening `"` was consumed; returns the
/// text and the remainder after the closing `"`.
pub(crate) fn unquote_to_close(s: &str) -> Result<(String, &str), QuoteError> {
    let mut out = String::new();
    let mut iter = s.char_indices();
    while let Some((i, c)) = iter.next() {
        match c {
            '"' => return Ok((out, &s[i + 1..])),
            '\\' => match iter.next().map(|(_, e)| (e, unescape(e))) {
                Some((_, Some(u))) => out.push(u),
                Some((e, None)) => return Err(QuoteError::Escape(e)),
                None => return Err(QuoteError::Unterminated),
            },
            c => out.push(c),
        }
    }
    Err(QuoteError::Unterminated)
}
