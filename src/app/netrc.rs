//! `.netrc` files (the format of ftp, curl and wget): `machine HOST login USER password PASS`
//! entries, and a `default` entry for every other host. Tokens are separated by any white
//! space; a token may be quoted with `"` (with `\` escapes) when it holds spaces; `account`
//! is read and ignored, `macdef NAME` and the lines up to the next blank one are skipped; a
//! line whose first token starts with `#` is a comment (curl's). The crawl decides which
//! origins the entries go to (`crawl::auth`).

use std::collections::HashMap;

use crate::crawl::Credential;

/// The entries of one `.netrc` file.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Netrc {
    /// Host (lowercase) → its credential; the first entry of a host wins (as curl reads it).
    pub machines: HashMap<String, Credential>,
    pub default: Option<Credential>,
}

/// Reads `.netrc` text. A file it cannot make sense of is an error naming the line: a
/// keyword without its value, an unknown keyword, `login` or `password` outside an entry.
pub fn parse(text: &str) -> Result<Netrc, String> {
    let mut tokens = Tokens::new(text);
    let mut netrc = Netrc::default();
    // The entry being read: its host (None for `default`), login and password.
    let mut entry: Option<(Option<String>, Option<String>, Option<String>)> = None;
    let finish =
        |netrc: &mut Netrc, entry: Option<(Option<String>, Option<String>, Option<String>)>| {
            let Some((host, login, password)) = entry else {
                return;
            };
            let credential = Credential {
                user: login.unwrap_or_default(),
                password: password.unwrap_or_default(),
            };
            match host {
                Some(host) => {
                    netrc
                        .machines
                        .entry(host.to_ascii_lowercase())
                        .or_insert(credential);
                }
                None => {
                    netrc.default.get_or_insert(credential);
                }
            }
        };
    while let Some((line, token)) = tokens.next()? {
        let mut value = |what: &str| match tokens.next()? {
            Some((_, v)) => Ok(v),
            None => Err(format!("line {line}: `{what}` without its value")),
        };
        match token.as_str() {
            "machine" => {
                let host = value("machine")?;
                finish(&mut netrc, entry.take());
                entry = Some((Some(host), None, None));
            }
            "default" => {
                finish(&mut netrc, entry.take());
                entry = Some((None, None, None));
            }
            "login" | "password" | "account" => {
                let v = value(&token)?;
                let Some((_, login, password)) = &mut entry else {
                    return Err(format!(
                        "line {line}: `{token}` before any `machine` or `default`"
                    ));
                };
                match token.as_str() {
                    "login" => *login = Some(v),
                    "password" => *password = Some(v),
                    _ => {}
                }
            }
            "macdef" => {
                value("macdef")?;
                tokens.skip_macro();
            }
            other => {
                return Err(format!(
                    "line {line}: unknown keyword `{}` (expected machine, default, login, \
                     password, account or macdef)",
                    other.chars().take(40).collect::<String>()
                ))
            }
        }
    }
    finish(&mut netrc, entry);
    Ok(netrc)
}

struct Tokens<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Tokens<'a> {
        Tokens {
            text,
            pos: 0,
            line: 1,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    /// The next token and its line; comments skipped. An unterminated quote is an error.
    fn next(&mut self) -> Result<Option<(usize, String)>, String> {
        loop {
            while self.peek().is_some_and(char::is_whitespace) {
                self.bump();
            }
            let Some(c) = self.peek() else {
                return Ok(None);
            };
            let line = self.line;
            if c == '#' && self.line_so_far_blank() {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.bump();
                }
                continue;
            }
            let mut token = String::new();
            if c == '"' {
                self.bump();
                loop {
                    match self.bump() {
                        None => return Err(format!("line {line}: a quote left open")),
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(e) = self.bump() {
                                token.push(e);
                            }
                        }
                        Some(c) => token.push(c),
                    }
                }
            } else {
                while let Some(c) = self.peek().filter(|c| !c.is_whitespace()) {
                    token.push(c);
                    self.bump();
                }
            }
            return Ok(Some((line, token)));
        }
    }

    /// Whether only white space precedes the position on its line.
    fn line_so_far_blank(&self) -> bool {
        let before = &self.text[..self.pos];
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        before[start..].trim().is_empty()
    }

    /// Skips a macro's body: up to and including the next empty line.
    fn skip_macro(&mut self) {
        // The rest of the `macdef` line, then lines until an empty one.
        while self.peek().is_some_and(|c| c != '\n') {
            self.bump();
        }
        self.bump();
        loop {
            let rest = &self.text[self.pos..];
            let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let blank = rest[..end].trim().is_empty();
            for _ in 0..rest[..end].chars().count() {
                self.bump();
            }
            if blank {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(user: &str, password: &str) -> Credential {
        Credential {
            user: user.into(),
            password: password.into(),
        }
    }

    #[test]
    fn machines_default_quotes_comments_and_macros() {
        let text = "# my logins\n\
                    machine Example.COM login alice password \"s3cret pass\"\n\
                    machine example.com login ignored password x\n\
                    machine other.test\n  login bob\n  password b\\\"ob\n  account acct\n\
                    macdef init\ncd /pub\nls\n\n\
                    default login anon password guest@\n";
        let netrc = parse(text).unwrap();
        assert_eq!(netrc.machines.len(), 2);
        assert_eq!(netrc.machines["example.com"], cred("alice", "s3cret pass"));
        assert_eq!(netrc.machines["other.test"], cred("bob", "b\\\"ob"));
        assert_eq!(netrc.default, Some(cred("anon", "guest@")));
        // One line, as older tools write it.
        let one = parse("machine h login u password p machine g login v password q").unwrap();
        assert_eq!(one.machines["g"], cred("v", "q"));
        assert_eq!(parse("").unwrap(), Netrc::default());
    }

    #[test]
    fn a_file_it_cannot_read_is_an_error_naming_the_line() {
        for (text, want) in [
            ("machine h login", "line 1: `login` without its value"),
            ("login u", "line 1: `login` before any"),
            (
                "machine h\nlogin u\npasword p",
                "line 3: unknown keyword `pasword`",
            ),
            ("machine h password \"open", "line 1: a quote left open"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }
}
