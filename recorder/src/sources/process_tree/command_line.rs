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
    Some((name, summarize(&args)))
}

/// The command line as one line of text, secrets masked, cut after [`SUMMARY_MAX`]
/// characters: argv0's basename, then the arguments.
pub fn summarize<S: AsRef<str>>(args: &[S]) -> String {
    let Some((program, args)) = args.split_first() else {
        return String::new();
    };
    let program = program.as_ref();
    let mut summary = program.rsplit('/').next().unwrap_or(program).to_owned();
    let mut masking = Masking::default();
    // An argument may be a whole script (`sh -c "TOKEN=x curl ..."`): masked word by word.
    for word in args.iter().flat_map(|arg| arg.as_ref().split(' ')) {
        summary.push(' ');
        summary.push_str(&masking.mask(word));
        if summary.len() > SUMMARY_MAX {
            break;
        }
    }
    cut(summary)
}

/// What the words before asked of the next one.
#[derive(Default)]
struct Masking {
    /// Mask the next word whole (`--token x`, `Authorization: x`).
    next: bool,
    /// Mask what follows the colon of the next word (`-u user:password`).
    next_password: bool,
}

impl Masking {
    fn mask(&mut self, word: &str) -> String {
        if std::mem::take(&mut self.next) {
            // `Authorization: Bearer x`: the scheme, then the credentials.
            self.next = AUTH_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(word));
            return MASK.to_owned();
        }
        if std::mem::take(&mut self.next_password) {
            if let Some((user, _)) = word.split_once(':') {
                return format!("{user}:{MASK}");
            }
        }
        if word.starts_with('-') && !word.contains('=') {
            self.next = names_a_secret(word);
            self.next_password = USER_FLAGS.contains(&word);
            return word.to_owned();
        }
        if let Some((name, value)) = word.split_once(':') {
            if !value.starts_with("//") && names_a_secret(name) {
                // `Authorization:` alone, or `Authorization:Bearer`: the credentials follow.
                self.next =
                    value.is_empty() || AUTH_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(value));
                return format!("{name}:{MASK}");
            }
        }
        mask_pairs(&mask_userinfo(word))
    }
}

/// Lossy UTF-8 with control characters shown as `?`.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Authorization schemes: the credentials are the word after.
const AUTH_SCHEMES: [&str; 4] = ["Bearer", "Basic", "Token", "Digest"];
/// Options whose value is `user:password`.
const USER_FLAGS: [&str; 4] = ["-u", "--user", "--proxy-user", "-U"];

fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| name.contains(word))
}

/// `scheme://user:password@host` becomes `scheme://***@host`.
fn mask_userinfo(word: &str) -> String {
    let Some(at) = word.find("://") else {
        return word.to_owned();
    };
    let authority_start = at + 3;
    let rest = &word[authority_start..];
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    match authority.rfind('@') {
        Some(end) => format!("{}{MASK}{}", &word[..authority_start], &rest[end..]),
        None => word.to_owned(),
    }
}

/// Every `name=value` whose name names a secret, in a word of pairs separated by `&`, `;`
/// or `,` (`API_KEY=x`, `--password=x`, `?a=1&token=x`, `Server=h;Password=x`,
/// `opt=1,password=x`).
fn mask_pairs(word: &str) -> String {
    let mut masked = String::with_capacity(word.len());
    let mut rest = word;
    while !rest.is_empty() {
        let end = rest.find(['&', ';', ',']).unwrap_or(rest.len());
        let (pair, after) = rest.split_at(end);
        match pair.split_once('=') {
            Some((name, _)) if names_a_secret(name.rsplit('?').next().unwrap_or(name)) => {
                masked.push_str(name);
                masked.push('=');
                masked.push_str(MASK);
            }
            _ => masked.push_str(pair),
        }
        let separator = after.chars().next();
        masked.extend(separator);
        rest = &after[separator.map_or(0, char::len_utf8)..];
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
        ]);
        assert!(!command.contains("abc123"), "{command}");
        assert_eq!(
            command,
            "curl -H Authorization:*** *** *** --token *** --api-key=*** https://***@example.com/path?a=1&sig_token=***"
        );
        assert_eq!(
            summary(&["env", "GITHUB_TOKEN=abc123"]).1,
            "env GITHUB_TOKEN=***"
        );
    }

    #[test]
    fn secrets_inside_scripts_lists_and_user_options_are_masked() {
        let cases: [&[&str]; 7] = [
            &[
                "sh",
                "-c",
                "GITHUB_TOKEN=abc123 git push https://x:abc123@github.com/a/b",
            ],
            &["sh", "-c", "A=1 TOKEN=abc123 deploy --token abc123"],
            &["odbc", "Server=h;Password=abc123"],
            &["mount", "-o", "opt=1,password=abc123"],
            &["curl", "-H", "Authorization:Bearer abc123"],
            &["curl", "-u", "user:abc123", "--user", "me:abc123"],
            &[
                "sh",
                "-c",
                "curl -H 'Authorization: token abc123' https://h",
            ],
        ];
        for args in cases {
            let (_, command) = summary(args);
            assert!(!command.contains("abc123"), "{args:?}: {command}");
        }
        let (_, command) = summary(&["curl", "-u", "user:abc123", "https://h/x?page=2"]);
        assert_eq!(command, "curl -u user:*** https://h/x?page=2");
        let (_, command) = summary(&["make", "-j8", "CC=clang", "all"]);
        assert_eq!(
            command, "make -j8 CC=clang all",
            "nothing secret, nothing masked"
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
