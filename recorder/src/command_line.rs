//! What a process marker says about a command: argv0's basename, and a short summary of the
//! arguments with anything that looks like a secret masked. Only /proc/<pid>/cmdline is
//! read; the environment never is.

/// The longest summary kept; the rest is cut with an ellipsis.
const SUMMARY_MAX: usize = 120;
const MASK: &str = "***";
/// Parts of option, variable and header names whose values are masked.
const SECRET_WORDS: [&str; 10] = [
    "pass",
    "secret",
    "token",
    "key",
    "auth",
    "cred",
    "cookie",
    "session",
    "signature",
    "private",
];

/// The process's name and its command summary; None for an empty command line (a kernel
/// thread, or a process that has exited).
pub(crate) fn describe(cmdline: &[u8]) -> Option<(String, String)> {
    let mut args: Vec<String> = cmdline.split(|&b| b == 0).map(printable).collect();
    while args.last().is_some_and(String::is_empty) {
        args.pop();
    }
    // A process that rewrote its title ("postgres: writer") has one argument with spaces.
    if args.len() == 1 && args[0].contains(' ') {
        args = args[0].split(' ').map(str::to_owned).collect();
    }
    let program = args.first()?;
    let name = program.rsplit('/').next().unwrap_or(program).to_owned();
    let mut summary = name.clone();
    let mut mask_next = false;
    for arg in &args[1..] {
        let shown = if mask_next {
            MASK.to_owned()
        } else {
            mask(arg)
        };
        mask_next = is_secret_flag(arg);
        summary.push(' ');
        summary.push_str(&shown);
        if summary.len() > SUMMARY_MAX {
            break;
        }
    }
    Some((name, cut(summary)))
}

/// Lossy UTF-8 with control characters shown as `?`.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// `--token` alone: its value is the next argument.
fn is_secret_flag(arg: &str) -> bool {
    arg.starts_with('-') && !arg.contains('=') && names_a_secret(arg)
}

/// `--password=x`, `API_KEY=x`, `Authorization: Bearer x`, and in URLs
/// `https://user:x@host` and `?token=x`.
fn mask(arg: &str) -> String {
    if let Some((scheme, rest)) = arg.split_once("://") {
        return format!("{scheme}://{}", mask_url(rest));
    }
    for separator in ["=", ": "] {
        if let Some((name, _)) = arg.split_once(separator) {
            if names_a_secret(name) {
                return format!("{name}{separator}{MASK}");
            }
        }
    }
    arg.to_owned()
}

fn mask_url(rest: &str) -> String {
    let (address, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = address.split('/').next().unwrap_or(address);
    let mut masked = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{MASK}@{host}{}", &address[authority.len()..]),
        None => address.to_owned(),
    };
    if rest.contains('?') {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if names_a_secret(name) => format!("{name}={MASK}"),
                _ => pair.to_owned(),
            })
            .collect();
        masked.push('?');
        masked.push_str(&pairs.join("&"));
    }
    masked
}

fn cut(text: String) -> String {
    match text.char_indices().nth(SUMMARY_MAX) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(args: &[&str]) -> (String, String) {
        let mut cmdline = args.join("\0").into_bytes();
        cmdline.push(0);
        describe(&cmdline).unwrap()
    }

    #[test]
    fn the_name_is_argv0s_basename() {
        let (name, command) = summary(&["/usr/bin/sha1sum", "/dev/zero"]);
        assert_eq!(name, "sha1sum");
        assert_eq!(command, "sha1sum /dev/zero");
        assert_eq!(summary(&["postgres: writer process"]).0, "postgres:");
        assert_eq!(describe(b""), None);
    }

    #[test]
    fn secrets_in_arguments_are_masked() {
        let (_, command) = summary(&[
            "curl",
            "-H",
            "Authorization: Bearer abc123",
            "--token",
            "abc123",
            "--api-key=abc123",
            "https://user:abc123@example.com/path?a=1&sig_token=abc123",
            "GITHUB_TOKEN=abc123",
        ]);
        assert!(!command.contains("abc123"), "{command}");
        assert_eq!(
            command,
            "curl -H Authorization: *** --token *** --api-key=*** https://***@example.com/path?a=1&sig_token=*** GITHUB_TOKEN=***"
        );
    }

    #[test]
    fn control_characters_and_long_commands_are_tamed() {
        let long = "x".repeat(500);
        let (_, command) = summary(&["echo", "a\nb\x1b[31m", &long]);
        assert!(command.starts_with("echo a?b?[31m x"), "{command}");
        assert_eq!(command.chars().count(), SUMMARY_MAX + 1);
        assert!(command.ends_with('…'));
    }
}
