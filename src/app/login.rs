//! Logging in: the flags (`--http-user`, `--http-password`, `--netrc-file`, `--no-netrc`,
//! `--auth-no-challenge`, credential `--header`s) turned into the crawl's [`AuthConfig`]
//! (`crawl::auth` decides which origin gets what), and what the warcinfo record shows of them
//! (no secrets).

use std::path::PathBuf;
use std::sync::Arc;

use crate::app::cli::CommonArgs;
use crate::app::exit::UsageError;
use crate::crawl::{AuthConfig, Credential};

impl CommonArgs {
    /// Logging in, as these flags ask: `--http-user`/`--http-password`, the `.netrc` file
    /// (`--netrc-file`, else `~/.netrc` when there is one, none with `--no-netrc`), read now.
    /// A named file that cannot be read or parsed is a usage error; so is a `~/.netrc` that
    /// exists but cannot be.
    pub fn auth(&self) -> Result<AuthConfig, UsageError> {
        let mut config = AuthConfig {
            user: self.http_user.as_ref().map(|user| Credential {
                user: user.clone(),
                password: self.http_password.clone().unwrap_or_default(),
            }),
            no_challenge: self.auth_no_challenge,
            origin_headers: self.headers.iter().any(|h| {
                h.split_once(':')
                    .is_some_and(|(name, _)| is_credential_header(name))
            }),
            ..AuthConfig::default()
        };
        let (path, flag) = match (&self.netrc_file, self.no_netrc) {
            (_, true) => return Ok(config),
            (Some(path), false) => (path.clone(), "--netrc-file"),
            (None, false) => match std::env::var_os("HOME") {
                Some(home) if !home.is_empty() => {
                    let path = PathBuf::from(home).join(".netrc");
                    if !path.exists() {
                        return Ok(config);
                    }
                    (path, "~/.netrc")
                }
                _ => return Ok(config),
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            UsageError(format!(
                "{flag} {}: {e} (--no-netrc reads none)",
                path.display()
            ))
        })?;
        let netrc = crate::app::netrc::parse(&text)
            .map_err(|e| UsageError(format!("{flag} {}: {e}", path.display())))?;
        config.machines = Arc::new(netrc.machines);
        config.netrc_default = netrc.default;
        Ok(config)
    }
}

/// `--header` names whose values are credentials: sent to the seeds' origins only (a
/// redirect to another host must not carry them: curl's CVE-2018-1000007).
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

pub fn is_credential_header(name: &str) -> bool {
    CREDENTIAL_HEADERS
        .iter()
        .any(|c| c.eq_ignore_ascii_case(name.trim()))
}

/// A `--header` argument as the warcinfo record shows it: a credential's value replaced.
pub fn redact_header_arg(h: &str) -> String {
    match h.split_once(':') {
        Some((name, _)) if is_credential_header(name) => format!("{name}: [redacted]"),
        _ => h.to_string(),
    }
}

/// A command line, arguments quoted where a shell would need it, with the password and
/// credential headers replaced by `[redacted]`: the warcinfo record travels with the
/// archive, and the secret is not part of how it was made.
pub fn redact_command_line(args: impl IntoIterator<Item = String>) -> String {
    let mut redacted = Vec::new();
    let mut next_is = None;
    for arg in args {
        let arg = match next_is.take() {
            Some("--http-password") => "[redacted]".to_string(),
            Some("--proxy") => redact_proxy_url(&arg),
            Some(_) => redact_header_arg(&arg),
            None => {
                if arg == "--http-password" || arg == "--header" || arg == "--proxy" {
                    next_is = Some(match arg.as_str() {
                        "--header" => "--header",
                        "--proxy" => "--proxy",
                        _ => "--http-password",
                    });
                    arg
                } else if arg.starts_with("--http-password=") {
                    "--http-password=[redacted]".to_string()
                } else if let Some(h) = arg.strip_prefix("--header=") {
                    format!("--header={}", redact_header_arg(h))
                } else if let Some(url) = arg.strip_prefix("--proxy=") {
                    format!("--proxy={}", redact_proxy_url(url))
                } else {
                    arg
                }
            }
        };
        redacted.push(arg);
    }
    command_line(redacted)
}

/// A `--proxy` URL with its password masked (`http://u:***@p:1`).
fn redact_proxy_url(url: &str) -> String {
    match crate::proxy::Proxy::parse(url) {
        Ok(p) if p.credentials.is_some() => p.redacted(),
        _ => url.to_string(),
    }
}

/// A command line, arguments quoted where a shell would need it.
fn command_line(args: Vec<String>) -> String {
    let mut out = String::new();
    for (i, arg) in args.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let plain = !arg.is_empty()
            && arg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
        if plain {
            out.push_str(&arg);
        } else {
            out.push('\'');
            out.push_str(&arg.replace('\'', "'\\''"));
            out.push('\'');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_passwords_stay_out_of_the_command_line() {
        let args = [
            "spinneret",
            "fetch",
            "--proxy",
            "http://u:secret@p:1",
            "--proxy=socks5h://v:pw@q",
        ];
        let line = redact_command_line(args.into_iter().map(String::from));
        assert_eq!(
            line,
            "spinneret fetch --proxy 'http://u:***@p:1' '--proxy=socks5h://v:***@q:1080'"
        );
    }

    #[test]
    fn the_recorded_command_line_holds_no_secret() {
        let args = [
            "spinneret",
            "crawl",
            "--http-user",
            "u",
            "--http-password",
            "s3cret",
            "--header",
            "Authorization: Bearer tok",
            "--header=cookie: a=b",
            "--http-password=other",
            "--header",
            "Accept: x/y",
        ]
        .map(String::from);
        let line = redact_command_line(args);
        assert!(!line.contains("s3cret") && !line.contains("tok") && !line.contains("a=b"));
        assert!(!line.contains("other"), "{line}");
        assert!(
            line.contains("--http-user u --http-password '[redacted]'"),
            "{line}"
        );
        assert!(line.contains("'Authorization: [redacted]'"), "{line}");
        assert!(line.contains("'Accept: x/y'"), "{line}");
    }
}
