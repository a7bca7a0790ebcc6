//! What a process marker says about a command: argv0's basename, and a short summary of the
//! arguments with anything that looks like a secret masked. Only /proc/<pid>/cmdline is
//! read; the environment never is.

use super::tokens::{mask_tokens, MASK};

/// The longest summary kept; the rest is cut with an ellipsis.
const SUMMARY_MAX: usize = 120;
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
    let mut masking = Masking {
        tool: PasswordTool::of(&summary),
        ..Masking::default()
    };
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
    /// The tool whose options the words are, when its `-p` takes a password.
    tool: PasswordTool,
}

/// Tools whose `-p` takes a password. Only for these is `-p` read so: elsewhere `-pthread`,
/// `-pipe` and `-pedantic` are ordinary options.
#[derive(Default, Clone, Copy, PartialEq)]
enum PasswordTool {
    #[default]
    None,
    /// mysql and its kin: `-pPASSWORD` glued; `-p` alone asks at a prompt, so the word after
    /// it (the database) is kept.
    Mysql,
    /// sshpass: `-p PASSWORD` or `-pPASSWORD`, before the command it runs.
    Sshpass {
        /// The next word is the value of `-f`, `-d` or `-P`, not yet the command.
        value_next: bool,
    },
}

const MYSQL_TOOLS: [&str; 18] = [
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mysqlimport",
    "mysqlshow",
    "mysqlcheck",
    "mysqlslap",
    "mysqlpump",
    "mysqlbinlog",
    "mysqlsh",
    "mariadb",
    "mariadb-dump",
    "mariadb-admin",
    "mariadb-import",
    "mariadb-show",
    "mariadb-check",
    "mariadb-slap",
    "mariadb-binlog",
];
/// sshpass's other options that take a value as the next word.
const SSHPASS_VALUE_OPTIONS: [&str; 3] = ["-f", "-d", "-P"];
/// Words that end a shell command: the next word names a new tool.
const COMMAND_SEPARATORS: [&str; 5] = [";", "&&", "||", "|", "&"];

impl PasswordTool {
    fn of(word: &str) -> Self {
        match word.rsplit('/').next().unwrap_or(word) {
            "sshpass" => Self::Sshpass { value_next: false },
            name if MYSQL_TOOLS.contains(&name) => Self::Mysql,
            _ => Self::None,
        }
    }
}

impl Masking {
    fn mask(&mut self, word: &str) -> String {
        if std::mem::take(&mut self.next) {
            // `Authorization: Bearer x`: the scheme, then the credentials.
            self.next = AUTH_SCHEMES.iter().any(|s| s.eq_ignore_ascii_case(word));
            return MASK.to_owned();
        }
        if COMMAND_SEPARATORS.contains(&word) || word.ends_with(';') {
            self.tool = PasswordTool::None;
        } else if let Some(masked) = self.mask_password_option(word) {
            return masked;
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
        mask_tokens(&mask_pairs(&mask_userinfo(word)))
    }

    /// `-pPASSWORD` (or sshpass's `-p PASSWORD`) of the tool the words belong to; None for any
    /// other word, after noting which tool it names.
    fn mask_password_option(&mut self, word: &str) -> Option<String> {
        let glued = word.strip_prefix("-p").is_some_and(|rest| !rest.is_empty());
        match self.tool {
            PasswordTool::Mysql if glued => return Some(format!("-p{MASK}")),
            PasswordTool::Sshpass { .. } if glued || word == "-p" => {
                self.tool = PasswordTool::None;
                self.next = !glued;
                return Some(if glued {
                    format!("-p{MASK}")
                } else {
                    word.to_owned()
                });
            }
            PasswordTool::Sshpass { value_next } if !word.starts_with('-') && !value_next => {
                // The command sshpass runs: its own `-p` (ssh's port) is not a password.
                self.tool = PasswordTool::None;
            }
            PasswordTool::Sshpass { .. } => {
                self.tool = PasswordTool::Sshpass {
                    value_next: SSHPASS_VALUE_OPTIONS.contains(&word),
                };
            }
            _ => {}
        }
        if !word.starts_with('-') {
            let named = PasswordTool::of(word);
            if named != PasswordTool::None {
                self.tool = named;
            }
        }
        None
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

    #[test]
    fn passwords_after_the_p_of_tools_that_take_one_are_masked() {
        let cases: [&[&str]; 6] = [
            &["mysql", "-u", "root", "-pabc123", "db"],
            &["/usr/bin/mysqldump", "-h", "h", "-pabc123", "db"],
            &["mariadb", "-pabc123"],
            &["sh", "-c", "cd x && mysql -u root -pabc123 -e 'select 1'"],
            &["sshpass", "-p", "abc123", "ssh", "-p", "22", "host"],
            &["sshpass", "-pabc123", "ssh", "host"],
        ];
        for args in cases {
            let (_, command) = summary(args);
            assert!(!command.contains("abc123"), "{args:?}: {command}");
        }
        assert_eq!(
            summary(&["mysql", "-u", "root", "-pabc123", "db"]).1,
            "mysql -u root -p*** db"
        );
        assert_eq!(
            summary(&["sshpass", "-p", "abc123", "ssh", "-p", "22", "host"]).1,
            "sshpass -p *** ssh -p 22 host",
            "the port of the command sshpass runs is kept"
        );
    }

    #[test]
    fn options_starting_with_p_of_other_tools_are_kept() {
        let cases: [&[&str]; 5] = [
            &["cc", "-pthread", "-pipe", "-pedantic", "-O2", "x.c"],
            &["mysql", "-p", "db"],
            &["sshpass", "-f", "pw.txt", "ssh", "-p", "22", "host"],
            &["sshpass", "-P", "assword", "-e", "ssh", "-p", "22", "host"],
            &["sh", "-c", "mysql -u root db ; cc -pthread x.c"],
        ];
        for args in cases {
            let (_, command) = summary(args);
            assert!(!command.contains(MASK), "{args:?}: {command}");
        }
    }

    #[test]
    fn tokens_known_by_their_prefix_are_masked_wherever_they_stand() {
        let github = format!("ghp_{}", "aB3".repeat(12));
        let fine_grained = format!("github_pat_{}", "aB3_".repeat(20));
        let oauth = format!("gho_{}", "x1".repeat(18));
        let slack = "xoxb-1234567890-0987654321-abcdEFGHijkl";
        let aws = "AKIAIOSFODNN7EXAMPLE";
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let secrets = [&*github, &fine_grained, &oauth, slack, aws, jwt];
        for secret in secrets {
            for word in [
                secret.to_owned(),
                format!("'{secret}'"),
                format!("--header=X-Api:{secret}"),
                format!("GH={secret}"),
            ] {
                let (_, command) = summary(&["sh", "-c", &format!("deploy {word} now")]);
                assert!(!command.contains(secret), "{word}: {command}");
                assert!(command.ends_with(" now"), "{word}: {command}");
            }
        }
        assert_eq!(summary(&["echo", &format!("'{aws}'")]).1, "echo '***'");
        assert_eq!(
            summary(&["echo", &format!("GH={github},x")]).1,
            "echo GH=***,x"
        );
    }
}
